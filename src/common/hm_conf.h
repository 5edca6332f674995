/*
 * hm_conf.h - harmonics.conf, the coordinator's configuration file.
 *
 * Lives beside slurm.conf (hm_conf_default_path()). Slurm's key=value style: one
 * or more Key=Value pairs per line separated by blanks, keys case-insensitive,
 * '#' starts a comment. An unknown key, a repeated key or a bad value is an
 * error naming file:line, the value and what is accepted; nothing is half-loaded
 * (the output is written only on success). See harmonics.conf(5).
 *
 * All strings are fixed-size arrays inside the struct, so an hm_conf_t can be
 * copied by assignment and needs no free. Units are in the field names.
 */
#ifndef HM_CONF_H
#define HM_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "hm_error.h"
#include "hm_log.h"

#define HM_CONF_FILE_NAME    "harmonics.conf"
#define HM_CONF_DEFAULT_PORT 6830 /* next to Slurm's 6817-6819 */
#define HM_CONF_PATH_MAX     4096
#define HM_CONF_NAME_MAX     64
#define HM_CONF_HOST_MAX     256
/* RunDir: short enough that RunDir/<node>/job.<id>/<file> stays far below PATH_MAX. */
#define HM_CONF_RUN_DIR_MAX 256
/* The pacing runtime's poll of the assignment file (docs/pacing.md). */
#define HM_CONF_RUNTIME_POLL_MS 100

typedef struct {
	/* Scheduling. */
	char policy[HM_CONF_NAME_MAX]; /* Policy=: one of HM_POLICY_NAMES; default "harmonics" */
	char default_mode[HM_CONF_NAME_MAX]; /* DefaultMode=: mode of jobs that did not ask:
						"off" (default), "auto" or a policy name */
	char default_profile[256];           /* DefaultProfile=: profile of jobs that declared none
						(catalogue model or "iter=..,comm=..,bytes=.."); "" = none:
						such jobs run unscheduled until a step reports one */
	double epoch_s;  /* EpochLength=: re-decision period (duration), default 10 s;
			    0 = only on job start/end */
	int prio_levels; /* PriorityLevels=: hardware classes, 1..HM_PRIO_LEVELS_MAX (8), default 8
			  */
	int reserved_levels;      /* ReservedLevels=: kept for other traffic, default 1 */
	double decision_budget_s; /* DecisionBudget=: wall clock per decision, default 1 s */
	double guard_s;           /* Guard=: late tolerance of slot holding; 0 = policy default */
	double valid_s;           /* AssignmentValidity=: how long a step may use an assignment
				     before asking again, default 10 min */
	double unpaced_after_s;   /* UnpacedAfter=: a scheduled job none of whose steps reported
				     an applied epoch for this long is modelled unpaced; 0 =
				     never; default 3 x epoch_s (30 s when 0), at least 3
				     heartbeats */

	/* Topology. */
	char topology[HM_CONF_PATH_MAX]; /* Topology=: topology.conf path; default "" =
					    topology.conf beside harmonics.conf */
	int gpus_per_node;               /* GpusPerNode=: default HM_DEFAULT_GPUS_PER_HOST */
	double nic_bps;                  /* NicSpeed=: bandwidth, default HM_DEFAULT_NIC_BPS */
	double uplink_bps;               /* UplinkSpeed=: default HM_DEFAULT_UPLINK_BPS */
	int nics_per_node;               /* NicsPerNode=: NICs of a node whose agent did not
					    report them, default HM_DEFAULT_NICS_PER_HOST (GPUs
					    spread round robin over them) */

	/* Service. */
	char listen_addr[HM_CONF_HOST_MAX]; /* ListenAddress=: IPv4 address the coordinator binds;
					       default "" = the address of the SlurmctldHost line
					       of the controller it runs in (127.0.0.1 outside
					       slurmctld); 0.0.0.0 = every interface */
	int listen_port;                    /* ListenPort=: 1..65535 (0 = any, tests only),
					       default HM_CONF_DEFAULT_PORT */
	char coordinator_host[HM_CONF_HOST_MAX]; /* CoordinatorHost=: where agents, steps and
						    harmonicsctl connect: names or addresses
						    separated by ',', tried in order; default
						    "" (hm_coord_addr.h) */
	int request_timeout_ms;                  /* RequestTimeout=: how long a step waits for its
						    assignment before running unscheduled, default 2000 */
	int conn_timeout_ms;      /* ConnectionTimeout=: server-side limit per connection,
				     default 1000 */
	int max_message_bytes;    /* MaxMessageSize=: bytes, default 65536 */
	bool fail_open;           /* FailOpen=: yes (default): an unreachable coordinator
				     means unscheduled; no: the step fails */
	hm_log_level_t log_level; /* LogLevel=: error|info|verbose|debug, default info */

	/* Node agent (docs/pacing.md contract A, docs/protocol.md contract B). */
	/* RunDir=: absolute path of the agents' files, default /run/harmonics */
	char run_dir[HM_CONF_RUN_DIR_MAX];
	/* HeartbeatInterval=: agent <-> coordinator beat, default 1000 */
	int heartbeat_ms;
	/* AgentValidity=: how long an assignment file stays valid after the agent last
	   heard from the coordinator; default 3 x heartbeat_ms, at least 2 x */
	int agent_valid_ms;
	/* UpdateLead=: a changed decision switches this long after it is sent; default
	   max(1000, heartbeat_ms + 200), at least heartbeat_ms + 2 runtime polls */
	int update_lead_ms;

	/* Records. */
	char state_file[HM_CONF_PATH_MAX]; /* StateFile=: default "" = harmonics.state in
					      slurm.conf's StateSaveLocation (set by the sched
					      plugin); tools leave it empty = no state file */
	size_t admin_comment_max_bytes;    /* AdminCommentMaxBytes=: 64..4096, default 512 */
	bool rack_solve_leaders; /* RackSolve=leaders (default): the racks' leaders solve them;
				    coordinator: slurmctld does (as racks without a leader) */
	int rack_timeout_ms;     /* RackTimeout=: how long a round waits for the leaders'
				    replies, 10 ms..60 s, default 1 s */
	int rack_port;           /* RackPort=: TCP port of each node agent's rack channel
				    (members reach their leader there), 0 (default) = any free */
	double clock_skew_max_s; /* ClockSkewMax=: a node whose clock is off the coordinator's
				    by more runs its steps free; default 1 ms, 0 = not checked */

	/* The coordinator's admission (harmonics.conf(5)). */
	int max_conns_per_addr;    /* MaxConnectionsPerAddress=: connections from one IPv4
				      address at once, default 256 */
	int max_requests_per_user; /* MaxRequestsPerUser=: one uid's requests in progress
				      (root and SlurmUser exempt), default 64 */

	/* Metrics (docs/metrics.md). */
	char metrics_listen[HM_CONF_HOST_MAX]; /* MetricsListen=: "A.B.C.D:PORT" of the
						  coordinator's /metrics; "" (default) = off */
	char metrics_dir[HM_CONF_PATH_MAX];    /* MetricsDir=: the node agents' node_exporter
						 textfile directory; "" (default) = off */

	/* The fabric's marks of the priority classes (hm_classes.h), as written. */
	char class_dscp[32]; /* ClassDscp=: 8 DSCPs, default HM_CLASS_DSCP_DEFAULT */
	char class_sl[24];   /* ClassSL=: 8 SLs, default HM_CLASS_SL_DEFAULT */

	/* Where it was loaded from ("" for defaults). */
	char source[HM_CONF_PATH_MAX];
} hm_conf_t;

/* Fill conf with the documented defaults. */
void hm_conf_defaults(hm_conf_t *conf);

/*
 * Load path into *conf (defaults for keys the file does not set).
 * HM_ERR_IO when the file cannot be read, HM_ERR_PARSE/HM_ERR_RANGE/HM_ERR_INVAL
 * with "path:line: ..." in err otherwise. *conf is untouched on error.
 */
hm_rc_t hm_conf_load(const char *path, hm_conf_t *conf, hm_err_t *err);

/* Same from a string (tests, harmonicsctl); fname is used in messages. */
hm_rc_t hm_conf_load_string(const char *text, const char *fname, hm_conf_t *conf, hm_err_t *err);

/*
 * Default harmonics.conf path: $HARMONICS_CONF if set, else beside $SLURM_CONF if
 * set, else beside /etc/slurm/slurm.conf. Writes into buf (len bytes).
 */
void hm_conf_default_path(char *buf, size_t len);

/* Topology path: conf->topology, or topology.yaml (when it exists, as Slurm
   25.05+) else topology.conf beside conf->source (or beside the default
   harmonics.conf path when source is ""). */
void hm_conf_topology_path(const hm_conf_t *conf, char *buf, size_t len);

/* "A.B.C.D:PORT" into addr (len bytes) and *port (0..65535); false when it is
   not that (MetricsListen). */
bool hm_conf_split_listen(const char *s, char *addr, size_t len, int *port);

/* Write the effective configuration as harmonics.conf text (harmonicsctl config). */
void hm_conf_format(const hm_conf_t *conf, char *buf, size_t len);

/* One accepted key, from the table that drives the parser. */
typedef struct {
	const char *name; /* as harmonics.conf(5) spells it ("EpochLength"); the file's
			     keys are case-insensitive */
	const char *arg;  /* the value as the man page names it ("DURATION") */
	const char *doc;  /* one line, without the bounds */
} hm_conf_key_info_t;

/* How many keys there are; key i (0 <= i < count) in the parser's order, NULL past
   the end. Static storage. */
size_t hm_conf_key_count(void);
const hm_conf_key_info_t *hm_conf_key_info(size_t i);

/*
 * "Policy, DefaultMode, ...": every key, as the error messages list them, into buf
 * (len bytes, cut to fit, NUL-terminated when len > 0). Returns the length the
 * whole list needs, as snprintf does.
 */
size_t hm_conf_accepted_keys(char *buf, size_t len);

/* Every key as a harmonics.conf(5) entry (".TP", ".BI Key= ARG", the line and
   its bounds) to out: the list to check the man page against. */
void hm_conf_keys_man(FILE *out);

#endif
