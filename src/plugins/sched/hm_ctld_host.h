/*
 * hm_ctld_host.h - the Global Coordinator hosted in slurmctld, shared by the
 * two plugins that can host it (docs/admin-guide.md "Where the coordinator
 * runs"):
 *
 *   job_submit/harmonics (JobSubmitPlugins=harmonics): SchedulerType stays
 *     sched/backfill, which slurmctld requires for heterogeneous jobs;
 *   sched/harmonics (SchedulerType=sched/harmonics): wraps sched/backfill;
 *     slurmctld then refuses heterogeneous jobs.
 *
 * The Slurm side of the coordinator: a thread that waits until slurmctld has
 * read its state (the primary controller's state-save thread runs: after
 * read_slurm_conf), starts the coordinator (hm_sched_run.h: never fails, a
 * broken harmonics.conf leaves Harmonics disabled), mirrors running jobs into
 * it, writes decisions into AdminComment, publishes the live view for
 * select/harmonics_cons_tres and re-reads harmonics.conf at each scontrol
 * reconfigure (slurm_conf.last_update changes). Start and stop never take a
 * slurmctld lock, so the plugins may call them with slurmctld's locks held.
 */
#ifndef HM_CTLD_HOST_H
#define HM_CTLD_HOST_H

#include "hm_live.h"

/* Start the thread; plugin_type names the host in every log line
   ("job_submit/harmonics"). Never fails: a thread that cannot start is
   logged and Harmonics stays off until slurmctld restarts. */
void hm_ctld_host_start(const char *plugin_type);

/* Stop the thread and the coordinator (state file saved). When the thread
   waits for a slurmctld lock the caller may hold (a plugin unloaded by
   scontrol reconfigure), it is left to stop by itself once it has the lock. */
void hm_ctld_host_stop(void);

/* scontrol reconfigure: re-read harmonics.conf now (the thread also notices
   by itself within a second). */
void hm_ctld_host_reconfig(void);

/* The live view, for the plugin's exported accessors (hm_live.h). */
const hm_live_t *hm_ctld_host_live_acquire(double *fresh_s);
void hm_ctld_host_live_release(const hm_live_t *l);

#endif
