/*
 * spank_submit.c - harmonics.so's options (registered in every context that
 * parses them) and the submission side (local and allocator contexts): the
 * choice after precedence, checked before anything is submitted, passed to
 * slurmctld as job-control environment. The option logic is hm_spank_opts.c.
 */
#include <stdint.h> /* spank.h needs it first */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "spank_plugin.h"

static int opt_mode_cb(int val, const char *optarg, int remote);
static int opt_off_cb(int val, const char *optarg, int remote);
static int opt_profile_cb(int val, const char *optarg, int remote);
static int opt_no_preload_cb(int val, const char *optarg, int remote);

static struct spank_option opt_mode = {
    "comm-sched",
    "MODE",
    "Schedule this job's communication bursts (Harmonics): off, auto, fair, optimal, "
    "cassini, crux, harmonics; 'help' explains",
    1,
    0,
    opt_mode_cb};
static struct spank_option opt_off = {
    "no-comm-sched", NULL, "Do not schedule communication (same as --comm-sched=off)", 0, 0,
    opt_off_cb};
static struct spank_option opt_profile = {
    "comm-profile",
    "SPEC",
    "Declare the iteration profile: a catalogue model, or iter=250ms,comm=40%,bytes=1.2GB",
    1,
    0,
    opt_profile_cb};
static struct spank_option opt_no_preload = {
    "no-comm-preload",
    NULL,
    "Do not add the NCCL pacing runtime (libharmonics-nccl.so) to the tasks' LD_PRELOAD",
    0,
    0,
    opt_no_preload_cb};

static int opt_mode_cb(int val, const char *optarg, int remote)
{
	hm_err_t err = {0};

	if (hm_spank_mode_check(optarg, "--comm-sched", hm_sp.cli_mode, sizeof(hm_sp.cli_mode),
				&err) != HM_OK) {
		/* In the allocator/local context -1 rejects the submission. */
		slurm_error("harmonics: %s", err.msg);
		return -1;
	}
	if (strcmp(hm_sp.cli_mode, "help") == 0) {
		if (!remote) {
			fputs(hm_spank_help_text(), stdout);
			exit(0);
		}
		return 0;
	}
	hm_sp.cli_mode_set = true;
	return 0;
}

static int opt_off_cb(int val, const char *optarg, int remote)
{
	snprintf(hm_sp.cli_mode, sizeof(hm_sp.cli_mode), "off");
	hm_sp.cli_mode_set = true;
	return 0;
}

static int opt_profile_cb(int val, const char *optarg, int remote)
{
	hm_err_t err = {0};

	if (hm_spank_profile_check(optarg, "--comm-profile", &err) != HM_OK) {
		slurm_error("harmonics: %s", err.msg);
		return -1;
	}
	snprintf(hm_sp.cli_profile, sizeof(hm_sp.cli_profile), "%s", optarg);
	hm_sp.cli_profile_set = true;
	return 0;
}

static int opt_no_preload_cb(int val, const char *optarg, int remote)
{
	hm_sp.cli_no_preload = true;
	return 0;
}

int hm_sp_options_register(spank_t sp)
{
	if (spank_option_register(sp, &opt_mode) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_off) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_profile) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_no_preload) != ESPANK_SUCCESS) {
		slurm_error("harmonics: cannot register the --comm-sched options");
		return -1;
	}
	return 0;
}

/* getenv in the local context, the job's environment in the remote one. */
static const char *job_getenv(spank_t sp, const char *name, char *buf, int len)
{
	if (spank_context() == S_CTX_REMOTE)
		return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS ? buf : NULL;
	return getenv(name);
}

hm_rc_t hm_sp_resolve(spank_t sp, hm_err_t *err)
{
	char env_mode[HM_SPANK_MODE_MAX], env_prof[HM_SPANK_PROFILE_MAX];

	return hm_spank_resolve(&hm_sp.args, hm_sp.cli_mode_set ? hm_sp.cli_mode : NULL,
				hm_sp.cli_profile_set ? hm_sp.cli_profile : NULL,
				job_getenv(sp, HM_SPANK_ENV_MODE, env_mode, sizeof(env_mode)),
				job_getenv(sp, HM_SPANK_ENV_PROFILE, env_prof, sizeof(env_prof)),
				&hm_sp.choice, err);
}

int hm_sp_submit_post_opt(spank_t sp)
{
	hm_err_t err = {0};
	char notice[sizeof(hm_sp.notice)];
	hm_conf_t conf;
	int conf_rc;

	if (hm_sp_resolve(sp, &err) != HM_OK) {
		slurm_error("harmonics: %s", err.msg);
		return -1; /* nothing is submitted */
	}
	/* A harmonics.conf that cannot be used: Harmonics runs disabled and the job is
	   accepted; one that asks for scheduling is told (once: not again by the sruns
	   of a job that already said it). */
	conf_rc = hm_sp_conf_load(&conf);
	if (conf_rc < 0 && !getenv("HARMONICS_NOTICE_SHOWN") &&
	    hm_spank_disabled_notice(hm_sp.choice.mode, hm_sp.conf_err, notice, sizeof(notice)))
		slurm_info("%s", notice);
	/* One policy schedules every job that shares links: another one is refused now,
	   not ignored later. Without a harmonics.conf here the coordinator decides. */
	if (conf_rc == 1 &&
	    hm_spank_policy_check(hm_sp.choice.mode,
				  hm_sp.choice.mode_src == HM_SRC_CLI   ? "--comm-sched"
				  : hm_sp.choice.mode_src == HM_SRC_ENV ? HM_SPANK_ENV_MODE
									: "default_mode",
				  conf.policy, &err) != HM_OK) {
		slurm_error("harmonics: %s", err.msg);
		return -1;
	}
	/* The preload switch is read in the step: a bad value is refused now. */
	if (strcmp(hm_sp.choice.mode, "off") != 0 && hm_sp_submit_preload_check() != 0)
		return -1;
	/* Job-control environment reaches slurmctld (job_ptr->spank_job_env). */
	if (strcmp(hm_sp.choice.mode, "off") != 0) {
		if (spank_job_control_setenv(sp, HM_SPANK_ENV_MODE, hm_sp.choice.mode, 1) !=
		    ESPANK_SUCCESS)
			slurm_error("harmonics: cannot pass %s to slurmctld", HM_SPANK_ENV_MODE);
		if (hm_sp.choice.profile[0] &&
		    spank_job_control_setenv(sp, HM_SPANK_ENV_PROFILE, hm_sp.choice.profile, 1) !=
			ESPANK_SUCCESS)
			slurm_error("harmonics: cannot pass %s to slurmctld", HM_SPANK_ENV_PROFILE);
	}
	return 0;
}
