/*
 * The node agent in slurmd (S_CTX_SLURMD): harmonics_agent.so is loaded only
 * here, so sbatch, srun and slurmstepd never map its code (hwloc, the agent).
 * Nothing here can fail slurmd: a missing or refusing agent is logged and
 * steps keep their launch-time assignments.
 */
#include <stdint.h> /* spank.h needs it first */

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <slurm/spank.h>

#include "hm_agent.h"
#include "spank_plugin.h"

#ifndef HM_AGENT_PATH
#define HM_AGENT_PATH "harmonics_agent.so"
#endif

static struct {
	void *handle; /* never dlclose'd: a detached agent thread may still run in it */
	int (*start)(const hm_agent_args_t *);
	int (*stop)(void);
	bool running;
} ag;

static void agent_log(int level, const char *msg)
{
	switch (level) {
	case HM_AGENT_LOG_ERROR:
		slurm_error("%s", msg);
		break;
	case HM_AGENT_LOG_INFO:
		slurm_info("%s", msg);
		break;
	case HM_AGENT_LOG_VERBOSE:
		slurm_verbose("%s", msg);
		break;
	default:
		slurm_debug("%s", msg);
		break;
	}
}

void hm_sp_slurmd_start(void)
{
	const char *path = hm_sp.args.agent[0] ? hm_sp.args.agent : HM_AGENT_PATH;
	hm_agent_args_t a;

	if (strcmp(path, "no") == 0) {
		slurm_info("harmonics: agent=no: no node agent; steps keep their launch-time "
			   "assignments");
		return;
	}
	if (!ag.handle && !(ag.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		slurm_error("harmonics: cannot load the node agent %s: %s; steps keep their "
			    "launch-time assignments",
			    path, dlerror());
		return;
	}
	ag.start = (int (*)(const hm_agent_args_t *))dlsym(ag.handle, "hm_agent_start");
	ag.stop = (int (*)(void))dlsym(ag.handle, "hm_agent_stop");
	if (!ag.start || !ag.stop) {
		slurm_error("harmonics: %s lacks hm_agent_start/hm_agent_stop: not a node agent",
			    path);
		ag.start = NULL;
		ag.stop = NULL;
		return;
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.version = HM_AGENT_ABI_VERSION;
	a.node = NULL; /* slurmd's -N, else the host name */
	a.conf_path = hm_sp.args.conf[0] ? hm_sp.args.conf : NULL;
	a.log = agent_log;
	a.slurm_user_uid = HM_AGENT_NO_UID;
	ag.running = ag.start(&a) == 0; /* on failure the agent logged why */
}

void hm_sp_slurmd_stop(void)
{
	if (ag.running && ag.stop() != 0)
		slurm_error("harmonics: the node agent did not stop within %d ms; left detached",
			    HM_AGENT_STOP_BOUND_MS);
	ag.running = false;
}
