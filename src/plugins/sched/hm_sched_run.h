/*
 * hm_sched_run.h - what sched/harmonics runs inside slurmctld: the Global
 * Coordinator with its socket server (enabled), or nothing (disabled) and why.
 *
 * Harmonics never stops Slurm: a failure to start (harmonics.conf unreadable,
 * an unknown key or a bad value, a topology the coordinator refuses, a busy
 * ListenPort) leaves Harmonics disabled with the cause, and slurmctld runs on
 * with backfill; jobs run unscheduled. A reconfigure re-reads harmonics.conf
 * and starts the coordinator when it can start now. A running coordinator
 * refuses a broken file at reconfigure and keeps its configuration.
 *
 * No Slurm here: the plugin gives the paths and a loader of slurmctld's
 * topology/tree switches; unit-tested. One thread at a time (the plugin's
 * init, then its thread); the coordinator itself is thread-safe (hm_coord.h).
 */
#ifndef HM_SCHED_RUN_H
#define HM_SCHED_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hm_conf.h"
#include "hm_coord.h"
#include "hm_error.h"
#include "hm_server.h"
#include "hm_topo.h"

/* slurmctld's topology/tree switches as a topology; HM_ERR_NOTFOUND when there
   are none (topology/none): the topology file is read instead. */
typedef hm_rc_t (*hm_sched_switches_fn)(void *arg, const hm_topo_opts_t *opts, hm_topo_t **topo,
					hm_err_t *err);

/* Where the configuration comes from (borrowed for the call). */
typedef struct {
	const char *conf_path;  /* harmonics.conf */
	const char *state_dir;  /* StateSaveLocation (default StateFile's folder); NULL = none */
	uint32_t slurm_user_id; /* SlurmUser: the server trusts it like root */
	hm_sched_switches_fn switches; /* NULL = the topology file only */
	void *switches_arg;
	const char *slurm_version; /* the running Slurm's, for the metrics; NULL = none */
	/* This slurmctld's SlurmctldHost address (name or IPv4): the coordinator
	   binds it when ListenAddress is unset; NULL or "" = 127.0.0.1. */
	const char *ctld_addr;
	/* slurmctld's operators and administrators, who see every job under
	   PrivateData=jobs, and account coordinators, who see their accounts'
	   (static: outlives the server); NULL = root and SlurmUser only. */
	const hm_server_operator_t *op;
} hm_sched_env_t;

/* The cause of a disabled Harmonics in one AdminComment token (no blanks, no ';'). */
#define HM_SCHED_TAG_MAX 96

typedef struct {
	bool enabled;
	hm_conf_t conf;    /* in force while enabled */
	hm_coord_t *coord; /* enabled: the engine (owned); NULL when disabled */
	hm_server_t *srv;  /* enabled: its socket server (owned) */
	struct hm_metrics_srv *mx; /* its /metrics listener when MetricsListen is set */
	/* Disabled: why, as logged ("/etc/slurm/harmonics.conf:3: unknown key ...",
	   "server: cannot listen on 127.0.0.1:6830: Address already in use"), and
	   the same as a token ("harmonics.conf:3", "listen-127.0.0.1:6830"). */
	char why[sizeof(((hm_err_t *)0)->msg)];
	char tag[HM_SCHED_TAG_MAX];
} hm_sched_run_t;

/* Disabled, "not started". */
void hm_sched_run_init(hm_sched_run_t *r);

/*
 * harmonics.conf at path into *conf: a missing file is the defaults (*missing
 * true), an unreadable or wrong one an error naming path[:line] and the value.
 * The default StateFile is state_dir/harmonics.state; conf->source is path.
 */
hm_rc_t hm_sched_conf_load(const char *path, const char *state_dir, hm_conf_t *conf, bool *missing,
			   hm_err_t *err);

/*
 * Start a disabled r: harmonics.conf, the topology, the coordinator, its state
 * file (a bad one is logged and the coordinator starts empty), the server.
 * HM_OK: enabled. Otherwise r stays disabled with why and tag set, and err says
 * the same. munged down is logged, not a failure: the coordinator decides
 * (AdminComment) and answers steps again once munged is back.
 */
hm_rc_t hm_sched_run_start(hm_sched_run_t *r, const hm_sched_env_t *env, hm_err_t *err);

/*
 * scontrol reconfigure. Disabled: a start (*started true when it is enabled
 * now). Enabled: the new harmonics.conf and topology go to the running
 * coordinator (decisions kept); a broken file or topology is refused with the
 * error, and the coordinator keeps the configuration it runs with.
 * ListenAddress/ListenPort changes wait for slurmctld's restart (logged).
 */
hm_rc_t hm_sched_run_reconfigure(hm_sched_run_t *r, const hm_sched_env_t *env, bool *started,
				 hm_err_t *err);

/* Publish the metrics of this round (MetricsListen set; else nothing). */
void hm_sched_run_metrics(hm_sched_run_t *r);

/* Save the state file, stop the server, free the coordinator: disabled
   ("stopped"). Safe on a disabled r. */
void hm_sched_run_stop(hm_sched_run_t *r);

/*
 * A job's AdminComment while Harmonics is disabled: current (NULL = none) with
 * "harmonics:e0@<UTC time> off=disabled(<tag>);" appended, unless its latest
 * Harmonics entry says that already. Returns true with the new comment in buf
 * (len bytes); false when nothing changes or it would exceed max_bytes (text an
 * admin wrote is never cut).
 */
bool hm_sched_disabled_comment(const char *current, const char *tag, double now_s, size_t max_bytes,
			       char *buf, size_t len);

#endif
