/*
 * spank_preload.c - harmonics.so puts the NCCL pacing runtime
 * (libharmonics-nccl.so) into the tasks of scheduled steps: appended to the
 * LD_PRELOAD they would have had, so that an unmodified NCCL program is paced
 * without any change to the job script. The value logic, without Slurm, is
 * hm_spank_preload.c.
 */
#include <stdint.h> /* spank.h needs it first */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "spank_plugin.h"

#ifndef HM_NCCL_PRELOAD_PATH
#define HM_NCCL_PRELOAD_PATH ""
#endif
#ifndef HM_NCCL_PROFILER_PATH
#define HM_NCCL_PROFILER_PATH ""
#endif
/* Read by libnccl-profiler-harmonics.so: the user's profiler plugin, chained to. */
#define HM_NCCL_PROFILER_CHAIN_ENV "HARMONICS_NCCL_PROFILER_CHAIN"
#define HM_NCCL_PROFILER_LIB       "libnccl-profiler-harmonics.so"

/*
 * NCCL loads one profiler plugin (NCCL_PROFILER_PLUGIN): ours, which measures
 * the bursts from NCCL's own events and forwards every call to the user's
 * plugin, recorded in HARMONICS_NCCL_PROFILER_CHAIN. The user's "none" (no
 * profiler at all) and ours already there (a nested step) are left alone.
 */
static void step_profiler(spank_t sp, const char *lib)
{
	const char *ours = HM_NCCL_PROFILER_PATH, *slash = strrchr(lib, '/');
	char cur[HM_SPANK_PRELOAD_PATH_MAX], near[HM_SPANK_PRELOAD_PATH_MAX];
	spank_err_t e;

	/* The plugin installed beside the interposer in use (plugstack preload=PATH)
	 * comes first: a site's or a build tree's pair stays together. */
	if (slash && snprintf(near, sizeof(near), "%.*s/" HM_NCCL_PROFILER_LIB,
			      (int)(slash - lib), lib) < (int)sizeof(near) &&
	    access(near, R_OK) == 0)
		ours = near;
	if (!ours[0] || access(ours, R_OK) != 0)
		return;
	e = spank_getenv(sp, "NCCL_PROFILER_PLUGIN", cur, sizeof(cur));
	if (e == ESPANK_SUCCESS && cur[0]) {
		if (strcasecmp(cur, "none") == 0 || strcmp(cur, ours) == 0 ||
		    strcmp(cur, "harmonics") == 0)
			return;
		if (spank_setenv(sp, HM_NCCL_PROFILER_CHAIN_ENV, cur, 0) != ESPANK_SUCCESS)
			return; /* the user's plugin stays NCCL's */
	} else if (e != ESPANK_SUCCESS && e != ESPANK_ENV_NOEXIST) {
		slurm_error("harmonics: the tasks' NCCL_PROFILER_PLUGIN cannot be read (%s): left "
			    "as it is",
			    spank_strerror(e));
		return;
	}
	if (spank_setenv(sp, "NCCL_PROFILER_PLUGIN", ours, 1) != ESPANK_SUCCESS)
		slurm_error("harmonics: cannot set the tasks' NCCL_PROFILER_PLUGIN");
}

/*
 * In user_init (remote, once per step and node, as the job's user: the access
 * check is the loader's), before the tasks exist: spank_setenv changes the
 * environment every task of this step on this node starts with.
 */
void hm_sp_step_preload(spank_t sp)
{
	static bool said_missing;
	hm_err_t err = {0};
	char env[64], cur[HM_SPANK_PRELOAD_MAX], val[HM_SPANK_PRELOAD_MAX];
	const char *lib = hm_spank_preload_lib(hm_sp.args.preload, HM_NCCL_PRELOAD_PATH);
	bool on = true;
	spank_err_t e;

	if (!lib)
		return; /* plugstack.conf preload=no */
	e = spank_getenv(sp, HM_SPANK_ENV_PRELOAD, env, sizeof(env));
	if (e == ESPANK_NOSPACE)
		snprintf(env, sizeof(env), "(more than %zu bytes)", sizeof(env) - 1);
	if (hm_spank_preload_wanted(hm_sp.cli_no_preload,
				    e == ESPANK_SUCCESS || e == ESPANK_NOSPACE ? env : NULL, &on,
				    &err) != HM_OK) {
		slurm_error("harmonics: %s; the NCCL runtime is not preloaded", err.msg);
		return;
	}
	if (!on) {
		/* sruns inside a batch script follow the batch step's opt-out. */
		spank_setenv(sp, HM_SPANK_ENV_PRELOAD, "no", 1);
		return;
	}
	step_profiler(sp, lib);
	if (!lib[0] || access(lib, R_OK) != 0) {
		if (!said_missing)
			slurm_debug("harmonics: %s%s: tasks run without the NCCL runtime",
				    lib[0] ? lib : HM_SPANK_PRELOAD_LIB,
				    lib[0] ? " is not installed" : " was not built (no NCCL)");
		said_missing = true;
		return;
	}
	e = spank_getenv(sp, "LD_PRELOAD", cur, sizeof(cur));
	if (e == ESPANK_ENV_NOEXIST) {
		cur[0] = '\0';
	} else if (e != ESPANK_SUCCESS) {
		slurm_error("harmonics: the tasks' LD_PRELOAD cannot be read (%s): the NCCL "
			    "runtime is not preloaded",
			    spank_strerror(e));
		return;
	}
	switch (hm_spank_preload_append(cur, lib, val, sizeof(val), &err)) {
	case 1:
		if (spank_setenv(sp, "LD_PRELOAD", val, 1) != ESPANK_SUCCESS)
			slurm_error("harmonics: cannot set the tasks' LD_PRELOAD");
		else
			slurm_debug("harmonics: tasks' LD_PRELOAD=%s", val);
		break;
	case 0:
		break; /* already there (a nested step, or the user's own copy) */
	default:
		slurm_error("harmonics: %s", err.msg);
		break;
	}
}

int hm_sp_submit_preload_check(void)
{
	hm_err_t err = {0};
	bool on;

	if (hm_spank_preload_wanted(hm_sp.cli_no_preload, getenv(HM_SPANK_ENV_PRELOAD), &on,
				    &err) != HM_OK) {
		slurm_error("harmonics: %s", err.msg);
		return -1;
	}
	return 0;
}
