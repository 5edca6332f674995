/*
 * sched_harmonics.c - sched/harmonics: hosts the Harmonics Global Coordinator
 * in slurmctld (hm_ctld_host.h) and keeps backfill.
 *
 * Backfill: the installed sched_backfill.so is loaded and forwarded to unless
 * SchedulerParameters contains harmonics_no_backfill. slurmctld accepts
 * heterogeneous jobs only when SchedulerType is sched/backfill: a cluster that
 * runs them hosts the coordinator in job_submit/harmonics instead
 * (docs/admin-guide.md). init() never fails (Harmonics never stops Slurm).
 */
#include "config.h" /* Slurm's (see m4/hm_slurm.m4) */

#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/log.h"
#include "src/common/read_config.h"

#include "hm_ctld_host.h"
#include "hm_plugin.h"

const char plugin_name[] = "Harmonics communication scheduler (keeps sched/backfill)";
const char plugin_type[] = "sched/harmonics";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define LOG_PREFIX        "sched/harmonics: "
#define NO_BACKFILL_PARAM "harmonics_no_backfill"

static struct {
	void *bf_handle;
	int (*bf_init)(void);
	void (*bf_fini)(void);
	int (*bf_reconfig)(void);
} g;

static bool backfill_wanted(void)
{
	return !(slurm_conf.sched_params && strstr(slurm_conf.sched_params, NO_BACKFILL_PARAM));
}

static void backfill_open_failed(const char *path, const char *why)
{
	error(LOG_PREFIX "%s: %s", path, why);
}

/* dlopen sched_backfill.so from PluginDir and start it. */
static int backfill_start(void)
{
	int rc = SLURM_ERROR;

	g.bf_handle =
	    hm_plugin_dlopen(slurm_conf.plugindir, "sched_backfill.so", backfill_open_failed);
	if (!g.bf_handle) {
		error(LOG_PREFIX
		      "sched_backfill.so not found in PluginDir %s (%s); running without "
		      "backfill",
		      slurm_conf.plugindir, dlerror());
		goto out;
	}
	g.bf_init = (int (*)(void))dlsym(g.bf_handle, "init");
	g.bf_fini = (void (*)(void))dlsym(g.bf_handle, "fini");
	g.bf_reconfig = (int (*)(void))dlsym(g.bf_handle, "sched_p_reconfig");
	if (!g.bf_init || !g.bf_fini || !g.bf_reconfig) {
		error(LOG_PREFIX "sched_backfill.so lacks init/fini/sched_p_reconfig; no backfill");
		g.bf_init = NULL;
		g.bf_fini = NULL;
		g.bf_reconfig = NULL;
		goto out;
	}
	rc = g.bf_init();
	if (rc == SLURM_SUCCESS)
		info(LOG_PREFIX "backfill kept (sched_backfill.so started)");
	else
		g.bf_fini = NULL;
out:
	return rc;
}

/* Never fails: Slurm stops slurmctld when a scheduler plugin's init fails. */
extern int init(void)
{
	info(LOG_PREFIX "harmonics %s, built for Slurm %s (running %s); heterogeneous jobs "
			"are refused by slurmctld under this SchedulerType (JobSubmitPlugins="
			"harmonics with sched/backfill accepts them)",
	     HM_VERSION, HM_SLURM_VERSION_BUILT, SLURM_VERSION_STRING);
	hm_ctld_host_start(plugin_type);
	if (backfill_wanted())
		backfill_start();
	else
		info(LOG_PREFIX "backfill off (SchedulerParameters=" NO_BACKFILL_PARAM ")");
	return SLURM_SUCCESS;
}

extern void fini(void)
{
	if (g.bf_fini)
		g.bf_fini(); /* never dlclose: its threads are joined, symbols may linger */
	g.bf_fini = NULL;
	g.bf_init = NULL;
	g.bf_reconfig = NULL;
	hm_ctld_host_stop();
}

extern int sched_p_reconfig(void)
{
	hm_ctld_host_reconfig();
	if (g.bf_reconfig)
		g.bf_reconfig();
	return SLURM_SUCCESS;
}

/* The live view for select/harmonics_cons_tres (hm_live.h; exported, versioned). */
extern const hm_live_t *hm_sched_live_acquire_v1(double *fresh_s)
{
	return hm_ctld_host_live_acquire(fresh_s);
}

extern void hm_sched_live_release_v1(const hm_live_t *l)
{
	hm_ctld_host_live_release(l);
}
