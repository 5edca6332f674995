/*
 * job_submit_harmonics.c - job_submit/harmonics: hosts the Harmonics Global
 * Coordinator in slurmctld (hm_ctld_host.h) while SchedulerType stays
 * sched/backfill, the only scheduler under which slurmctld accepts
 * heterogeneous jobs (proc_req.c, every release). JobSubmitPlugins=harmonics.
 *
 * slurmctld loads job_submit plugins early (before it reads its state) and,
 * at scontrol reconfigure, only when JobSubmitPlugins changed (then under its
 * write locks): init() and fini() therefore only start and stop the host's
 * thread, which waits for slurmctld's state and notices reconfigures itself.
 * The submit and modify hooks change nothing. With SchedulerType=
 * sched/harmonics the sched plugin hosts the coordinator and this one stays
 * idle. init() never fails (Harmonics never stops Slurm).
 */
#include "config.h" /* Slurm's (see m4/hm_slurm.m4) */

#include <stdbool.h>
#include <stdint.h>

#include "hm_ctld_host.h"
#include "hm_slurm_compat.h"

const char plugin_name[] = "Harmonics Global Coordinator host (SchedulerType unchanged)";
const char plugin_type[] = "job_submit/harmonics";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define LOG_PREFIX      "job_submit/harmonics: "
#define SCHED_HOST_TYPE "sched/harmonics"

static bool hosting;

extern int init(void)
{
	info(LOG_PREFIX "harmonics %s, built for Slurm %s (running %s); SchedulerType=%s",
	     HM_VERSION, HM_SLURM_VERSION_BUILT, SLURM_VERSION_STRING,
	     slurm_conf.schedtype ? slurm_conf.schedtype : "?");
	if (!xstrcmp(slurm_conf.schedtype, SCHED_HOST_TYPE)) {
		info(LOG_PREFIX "SchedulerType=" SCHED_HOST_TYPE " hosts the coordinator; "
				"nothing to do here");
		return SLURM_SUCCESS;
	}
	if (xstrcmp(slurm_conf.schedtype, "sched/backfill"))
		info(LOG_PREFIX "SchedulerType=%s: slurmctld refuses heterogeneous jobs unless "
				"it is sched/backfill",
		     slurm_conf.schedtype ? slurm_conf.schedtype : "?");
	hm_ctld_host_start(plugin_type);
	hosting = true;
	return SLURM_SUCCESS;
}

extern void fini(void)
{
	if (hosting)
		hm_ctld_host_stop();
	hosting = false;
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
	(void)job_desc;
	(void)submit_uid;
	(void)err_msg;
	return SLURM_SUCCESS;
}

/* 23.02 added char **err_msg (not read): the release's own signature. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr, uint32_t submit_uid,
		      char **err_msg)
#else
extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr, uint32_t submit_uid)
#endif
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
	(void)err_msg;
#endif
	(void)job_desc;
	(void)job_ptr;
	(void)submit_uid;
	return SLURM_SUCCESS;
}

/* The live view for select/harmonics_cons_tres (hm_live.h; exported, versioned). */
extern const hm_live_t *hm_sched_live_acquire_v1(double *fresh_s)
{
	return hosting ? hm_ctld_host_live_acquire(fresh_s) : NULL;
}

extern void hm_sched_live_release_v1(const hm_live_t *l)
{
	hm_ctld_host_live_release(l);
}
