/*
 * spank_plugin.h - what the parts of harmonics.so share: the per-process state
 * and each context's entry points. harmonics_spank.c holds the SPANK symbols
 * and switches on the context; spank_submit.c the options and the submission
 * side (local, allocator); spank_step.c the step side (remote). Nothing here is
 * exported (harmonics_spank.sym).
 */
#ifndef SPANK_PLUGIN_H
#define SPANK_PLUGIN_H

#include <stdbool.h>

#include <slurm/spank.h>

#include "hm_conf.h"
#include "hm_error.h"
#include "hm_spank_opts.h"

/* Set once per process; SPANK calls are single-threaded per process. */
typedef struct {
	hm_spank_args_t args; /* plugstack.conf arguments */
	bool args_ok;
	/* harmonics.conf could not be used (hm_sp_conf_load): why, "" = it could. */
	char conf_err[sizeof(((hm_err_t *)0)->msg)];
	char cli_mode[HM_SPANK_MODE_MAX]; /* --comm-sched / --no-comm-sched, as given */
	bool cli_mode_set;
	char cli_profile[HM_SPANK_PROFILE_MAX]; /* --comm-profile */
	bool cli_profile_set;
	/* --no-comm-preload */
	bool cli_no_preload;
	hm_spank_choice_t choice; /* after precedence (hm_sp_resolve) */
	/* Remote context: what user_init found, for the one-time notice in task_init. */
	char notice[1152]; /* an hm_err_t message and the words around it */
	bool fail_tasks; /* FailOpen=no and no coordinator: each task exits 1 */
	char job_dir[HM_CONF_PATH_MAX]; /* the local channel's job directory, "" = none */
} hm_sp_state_t;

extern hm_sp_state_t hm_sp;

/* spank_conf.c: harmonics.conf (plugstack conf= or the default path) into conf:
   1 read, 0 absent (defaults), -1 unreadable or wrong: defaults, the cause in
   hm_sp.conf_err, logged once per process (slurmd's log in the daemon and step
   contexts; -v in the clients, which show a notice, hm_spank_disabled_notice). */
int hm_sp_conf_load(hm_conf_t *conf);

/* spank_slurmd.c: the node agent in slurmd (S_CTX_SLURMD). Never fails slurmd. */
void hm_sp_slurmd_start(void);
void hm_sp_slurmd_stop(void);

/* spank_submit.c: register the options (-1 on failure, logged). */
int hm_sp_options_register(spank_t sp);
/* The choice after precedence into hm_sp.choice; the environment is the
   process's in the local context, the job's in the remote one. */
hm_rc_t hm_sp_resolve(spank_t sp, hm_err_t *err);
/* Local/allocator, after the options: check, then job-control environment. */
int hm_sp_submit_post_opt(spank_t sp);

/* spank_preload.c: remote context, in user_init of a scheduled (not off) step:
   append the NCCL runtime to the tasks' LD_PRELOAD unless the admin
   (preload=no) or the user (--no-comm-preload, HARMONICS_COMM_PRELOAD=no) said
   no. Never fails the step. */
void hm_sp_step_preload(spank_t sp);
/* Local/allocator: a bad HARMONICS_COMM_PRELOAD refuses the submission (-1, logged). */
int hm_sp_submit_preload_check(void);

/* spank_step.c: remote context. post_opt runs as root (the job directory). */
int hm_sp_step_post_opt(spank_t sp);
int hm_sp_step_user_init(spank_t sp);
int hm_sp_step_task_init(spank_t sp);

#endif
