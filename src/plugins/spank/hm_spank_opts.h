/*
 * hm_spank_opts.h - option values of the SPANK plugin, without Slurm: mode
 * and profile validation, plugstack.conf arguments, and the precedence
 * command line > environment > plugstack.conf defaults. Unit-tested alone.
 *
 * All strings are copied into fixed buffers owned by the structs.
 */
#ifndef HM_SPANK_OPTS_H
#define HM_SPANK_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "hm_error.h"
#include "hm_plugin.h" /* HM_SPANK_ENV_MODE, HM_SPANK_ENV_PROFILE */
#include "hm_spank_preload.h"

#define HM_SPANK_MODE_MAX    32
#define HM_SPANK_PROFILE_MAX 256
#define HM_SPANK_HOST_MAX    256

/* Admin-only knobs: plugstack.conf arguments (key=value). */
typedef struct {
	char host[HM_SPANK_HOST_MAX]; /* coordinator hosts, ',' between, tried in order;
					 "" = harmonics.conf's (hm_coord_addr.h) */
	int port;                     /* coordinator port; 0 = harmonics.conf listen_port */
	int timeout_ms;               /* register bound; 0 = harmonics.conf request_timeout_ms */
	char default_mode[HM_SPANK_MODE_MAX]; /* mode when the user says nothing; default "off" */
	char default_profile[HM_SPANK_PROFILE_MAX]; /* "" = none */
	char conf[HM_SPANK_HOST_MAX];  /* harmonics.conf path; "" = beside slurm.conf */
	char agent[HM_SPANK_HOST_MAX]; /* node agent object for slurmd; "" = the installed
					  one, "no" = none (steps get launch-time assignments) */
	/* NCCL runtime for --comm-sched tasks: "" = the installed one, "no" = none */
	char preload[HM_SPANK_PRELOAD_PATH_MAX];
} hm_spank_args_t;

/* Where a resolved value came from (for messages). */
typedef enum { HM_SRC_DEFAULT, HM_SRC_PLUGSTACK, HM_SRC_ENV, HM_SRC_CLI } hm_spank_src_t;

/* The user-visible choice after precedence. */
typedef struct {
	char mode[HM_SPANK_MODE_MAX]; /* canonical lower-case mode */
	hm_spank_src_t mode_src;
	char profile[HM_SPANK_PROFILE_MAX]; /* "" = none declared */
	hm_spank_src_t profile_src;
} hm_spank_choice_t;

/* "off,auto,<policies>,help" (static; hm_spec_mode_names() plus help). */
const char *hm_spank_modes(void);

/*
 * Validate a --comm-sched value (case-insensitive) and copy its lower-case form
 * to canon. `origin` names where it came from ("--comm-sched", "HARMONICS_COMM_SCHED",
 * "plugstack.conf default_mode") for the message.
 */
hm_rc_t hm_spank_mode_check(const char *val, const char *origin, char *canon, size_t canon_len,
			    hm_err_t *err);

/* Validate a --comm-profile value (hm_spec_profile_parse): a catalogue model or
   iter=..,comm=..%,bytes=..; the message starts with origin. */
hm_rc_t hm_spank_profile_check(const char *val, const char *origin, hm_err_t *err);

/* Defaults, then parse plugstack.conf arguments (argv from Slurm); unknown key => error. */
void hm_spank_args_defaults(hm_spank_args_t *a);
hm_rc_t hm_spank_args_parse(int argc, char **argv, hm_spank_args_t *a, hm_err_t *err);

/*
 * Precedence: command line (cli_mode / cli_off / cli_profile) over environment
 * (env_mode / env_profile, as given by getenv) over plugstack defaults.
 * NULL = not given. cli_off (--no-comm-sched) wins over cli_mode when both appear
 * in the order Slurm reports them (the caller keeps the last one).
 */
hm_rc_t hm_spank_resolve(const hm_spank_args_t *a, const char *cli_mode, const char *cli_profile,
			 const char *env_mode, const char *env_profile, hm_spank_choice_t *out,
			 hm_err_t *err);

/* The text printed for --comm-sched=help. */
const char *hm_spank_help_text(void);

/*
 * A resolved mode against the cluster's policy (harmonics.conf Policy=): off,
 * auto and that policy are accepted; another policy is refused at submission,
 * naming what this cluster accepts (all jobs that share links are scheduled by
 * one policy). origin names where the mode came from.
 */
hm_rc_t hm_spank_policy_check(const char *mode, const char *origin, const char *cluster_policy,
			      hm_err_t *err);

const char *hm_spank_src_name(hm_spank_src_t s);

/*
 * The one line a submission prints while harmonics.conf cannot be used
 * (conf_err: the parser's "path:line: ..." or the read error; "" or NULL = it
 * can): for a job that asks for scheduling (mode not "off"),
 * "harmonics: disabled (CONF_ERR); job runs unscheduled" into buf (len bytes)
 * and true; false otherwise (a plain job hears nothing, buf untouched). The
 * job is accepted either way: Harmonics runs disabled, Slurm schedules it.
 */
bool hm_spank_disabled_notice(const char *mode, const char *conf_err, char *buf, size_t len);

#endif
