/*
 * agent.h - the node agent as a library (internal; the tests and the two entry
 * points link it): its configuration, its slurmd helpers, and the agent
 * object whose thread runs agent_loop.c. It logs through a logger of hm_log.h
 * (cfg.log: the prefix names the node, the sink is the caller's).
 *
 * One agent serves one node name: it keeps one connection to the coordinator
 * (agent_conn.c, contract B) and the files of its node's steps
 * (agent_files.c, agent_jobs.c, contract A). No Slurm.
 */
#ifndef AGENT_H
#define AGENT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hm_agent.h"
#include "hm_agent_wire.h"
#include "hm_conf.h"
#include "hm_coord_addr.h"
#include "hm_error.h"
#include "hm_log.h"

#define AGENT_NODE_MAX       64    /* HM_AW_NODE_MAX */
#define AGENT_MAX_TRUSTED    2     /* root and SlurmUser */
#define AGENT_CLEAN_GRACE_MS 30000 /* an unlisted job dir quiet this long is removed */
/* A job dir the coordinator never listed goes after this long, quiet or not. */
#define AGENT_UNLISTED_MAX_MS 600000

/* ---- the node's role in its rack (agent_assign's rack members) ------------------- */

typedef struct {
	bool known; /* a coordinator told it */
	hm_aw_rack_t last;
} agent_role_t;

/*
 * Take the rack members of an agent_assign (nothing when it has none: a
 * coordinator without leaders). A change of rack, leader or role is logged
 * once at info; returns whether there was one. The rack channel (agent_rack.h) follows it.
 */
bool agent_role_note(agent_role_t *r, const hm_aw_msg_t *m, const hm_logger_t *lg);

/* ---- slurmd's command line and the node name ----------------------------------- */

/* Accepted node names: 1-63 of [A-Za-z0-9._-]. */
bool agent_node_valid(const char *name);

/*
 * Parse a command line as /proc/self/cmdline holds it (arguments separated and
 * ended by NUL; the first 8191 bytes, a cut last argument is fine) the way slurmd 22.05's
 * getopt_long does: the last -N NAME (or -NNAME, or inside a cluster like -DN NAME) into node (""
 * when none); *foreground set when -D is given. Returns whether argv[0] is slurmd.
 */
bool agent_slurmd_args(const char *buf, size_t len, char *node, size_t node_len, bool *foreground);

/*
 * The node name of this process (as hm_agent_node_name) and whether it is a
 * slurmd that will daemonize (no -D). HM_ERR_NOTFOUND when no valid name.
 */
hm_rc_t agent_node_name(char *out, size_t len, bool *daemonizes, hm_err_t *err);

/* ---- back-off of reconnects ----------------------------------------------------- */

#define AGENT_BACKOFF_MIN_MS 500
#define AGENT_BACKOFF_MAX_MS 30000

typedef struct {
	int step_ms; /* nominal delay of the next retry: 500, 1000, ... 30000 */
} agent_backoff_t;

/* Delay of the next retry: the nominal delay minus up to 20% (jitter, r in [0, 1)),
 * then the nominal delay doubles up to the maximum. */
int agent_backoff_next(agent_backoff_t *b, double r);
void agent_backoff_reset(agent_backoff_t *b);

/* ---- clock offset from the coordinator (docs/protocol.md "Clock offset") -------- */

#define AGENT_CLOCK_RTT_MAX_US 50000 /* a sample with a longer round trip is ignored */

typedef struct {
	bool has;          /* a sample was accepted */
	int64_t offset_us; /* the coordinator's clock minus this node's, last accepted sample */
	int64_t rtt_us;    /* that sample's round trip (CLOCK_MONOTONIC) */
	bool skewed;       /* |offset| - rtt/2 > the bound: this node's steps run free */
} agent_clock_t;

/*
 * One sample: a beat sent at sent_us (CLOCK_REALTIME) and sent_mono_us, its reply
 * stamped coord_us by the coordinator and received at recv_us and recv_mono_us.
 * offset = coord_us - (sent_us + recv_us) / 2, accepted when the round trip is at
 * most AGENT_CLOCK_RTT_MAX_US (its error is at most half the round trip). The node
 * is skewed while |offset| - rtt/2 exceeds bound_us (0: never). Returns 1 when it
 * became skewed, -1 when it came back within the bound, 0 otherwise.
 */
int agent_clock_sample(agent_clock_t *c, int64_t sent_us, int64_t sent_mono_us, int64_t coord_us,
		       int64_t recv_us, int64_t recv_mono_us, int64_t bound_us);

/* ---- the agent ---------------------------------------------------------------- */

typedef struct {
	char node[AGENT_NODE_MAX];
	hm_conf_t conf;                      /* harmonics.conf (or defaults) */
	hm_coord_addrs_t addrs;              /* the coordinator's, tried in turn */
	uint32_t trusted[AGENT_MAX_TRUSTED]; /* senders accepted for coordinator frames */
	int ntrusted;
	char topo_xml[4096]; /* "" = this machine */
	hm_logger_t log;
} agent_cfg_t;

typedef struct agent agent_t;

/*
 * Build a configuration: node (NULL/"": agent_node_name), conf_path (NULL: default
 * path; a missing file means defaults), slurm_uid (HM_AGENT_NO_UID: look up
 * "slurm"), topo_xml (NULL: the machine), log sink. HM_ERR_* with file:line.
 */
hm_rc_t agent_cfg_init(agent_cfg_t *cfg, const char *node, const char *conf_path,
		       uint32_t slurm_uid, const char *topo_xml, hm_agent_log_fn log,
		       hm_err_t *err);

/* Create the agent and start its thread (all signals blocked in it). */
hm_rc_t agent_start(const agent_cfg_t *cfg, agent_t **out, hm_err_t *err);

/*
 * Stop: wake the thread and join it within bound_ms. Returns HM_OK when joined
 * (the agent is freed), HM_ERR_TIMEOUT when not (the thread is detached and
 * frees the agent itself when it ends). NULL is fine.
 */
hm_rc_t agent_stop(agent_t *a, int bound_ms);

#endif
