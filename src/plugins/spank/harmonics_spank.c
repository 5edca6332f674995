/*
 * harmonics_spank.c - the harmonics.so SPANK plugin's entry points: each one
 * switches on the context and calls its part. Options and submission
 * (local, allocator) are spank_submit.c; the step side (remote: register with
 * the coordinator, export the assignment, fail-open) is spank_step.c. Option
 * logic without Slurm is hm_spank_opts.c; in slurmd it loads the node agent
 * (spank_slurmd.c, harmonics_agent.so).
 */
#include <stdint.h> /* spank.h needs it first */

#include <stdio.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "spank_plugin.h"

#define HM_SPANK_VERSION "0.1.0"

SPANK_PLUGIN(harmonics, 1);

hm_sp_state_t hm_sp;

static bool ctx_submit(spank_context_t ctx)
{
	return ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	hm_err_t err = {0};
	spank_context_t ctx = spank_context();

	hm_spank_args_defaults(&hm_sp.args);
	if (hm_spank_args_parse(ac, av, &hm_sp.args, &err) != HM_OK) {
		slurm_error("harmonics: %s", err.msg);
		snprintf(hm_sp.notice, sizeof(hm_sp.notice), "harmonics: %s; running unscheduled",
			 err.msg);
		/* Refuse submissions on an admin error; never break running steps. */
		return ctx_submit(ctx) ? -1 : 0;
	}
	hm_sp.args_ok = true;
	switch (ctx) {
	case S_CTX_SLURMD:
		hm_sp_slurmd_start();
		return 0;
	case S_CTX_JOB_SCRIPT:
		return 0;
	case S_CTX_REMOTE:
		/* Own and built-for versions: slurmd's log for steps, -v on the clients. */
		slurm_info("harmonics: SPANK plugin %s built for Slurm %d.%02d.%d",
			   HM_SPANK_VERSION, SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
			   SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
			   SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
		break;
	default:
		slurm_verbose("harmonics: SPANK plugin %s built for Slurm %d.%02d.%d",
			      HM_SPANK_VERSION, SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
			      SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
			      SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
		break;
	}
	if (hm_sp_options_register(sp) != 0)
		return ctx_submit(ctx) ? -1 : 0;
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (!hm_sp.args_ok)
		return 0;
	if (ctx == S_CTX_REMOTE)
		return hm_sp_step_post_opt(sp); /* as root: the job directory */
	return ctx_submit(ctx) ? hm_sp_submit_post_opt(sp) : 0;
}

/* slurmd stops (S_CTX_SLURMD only). */
int slurm_spank_slurmd_exit(spank_t sp, int ac, char **av)
{
	hm_sp_slurmd_stop();
	return 0;
}

/* Remote context, once per step and node, as the job's user. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	if (!hm_sp.args_ok || spank_remote(sp) != 1)
		return 0;
	return hm_sp_step_user_init(sp);
}

/* In each task (remote context). */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	return hm_sp_step_task_init(sp);
}
