/*
 * hm_agent_wire.h - contract B: the JSON messages between a node agent and the
 * coordinator (protocol version 1, docs/protocol.md is the reference). Both
 * sides link this codec: the agent (src/agent) and the coordinator's server.
 *
 * Each message is one JSON object sealed in a munge credential and framed by
 * hm_proto (4-byte big-endian length). This file only turns records into JSON
 * text and back: no I/O, no munge, no global state (thread-safe).
 *
 * Decoding is strict where it matters and tolerant where versions may grow:
 * the text must be one JSON object and nothing else; "v" must be
 * HM_AW_VERSION; every documented member is type- and range-checked (an
 * integer member must be a JSON integer); unknown members are ignored, so a
 * later version 1 may add members. Errors are HM_ERR_PROTO naming the member
 * path (e.g. "agent_assign: nodes[0].jobs[2].prio: 9 is not in [0, 7]").
 *
 * Units are in the names: _us microseconds (absolute times are CLOCK_REALTIME us
 * since the Unix epoch), _ms milliseconds, _bps bit/s.
 */
#ifndef HM_AGENT_WIRE_H
#define HM_AGENT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "hm_error.h"
#include "hm_hwnode.h"
#include "hm_rack_msg.h"

#define HM_AW_VERSION    1
#define HM_AW_NODE_MAX   64  /* node name, NUL included: 1..63 of [A-Za-z0-9._-] */
#define HM_AW_POLICY_MAX 32  /* policy name or "off": 1..31 of [a-z0-9_-] */
#define HM_AW_TEXT_MAX   256 /* reasons, errors, versions */
#define HM_AW_CODE_MAX   16
#define HM_AW_ROLE_MAX   8   /* "leader" or "member" */
#define HM_AW_ADDR_MAX   72  /* "host:port" or "[v6]:port" of a leader's rack channel */
#define HM_AW_MAX_JOBS   64  /* jobs of one node in one message */
#define HM_AW_MAX_NODES  256 /* nodes in one message (a rack leader's relay, issue 12) */
#define HM_AW_JOB_ID_MAX 2147483647L
#define HM_AW_EPOCH_MAX  2147483647L

typedef enum {
	HM_AW_HELLO,   /* agent -> coordinator, first frame of a connection */
	HM_AW_WELCOME, /* coordinator -> agent, the reply to hello */
	HM_AW_BEAT,    /* agent -> coordinator, every heartbeat */
	HM_AW_ASSIGN,  /* coordinator -> agent, reply to hello/beat (re = its seq) or push (re = 0)
			*/
	HM_AW_ERROR,   /* either way: the peer closes the connection after it */
	HM_AW_RACK_ROUND,  /* coordinator -> the rack's leader: its Local Scheduler's problem */
	HM_AW_RACK_RESULT, /* leader -> coordinator: the local decisions (re = the round's seq) */
	HM_AW_RACK_ASSIGN, /* leader -> the rack's agents, while cut off from the coordinator */
	HM_AW__COUNT
} hm_aw_op_t;

/* A window of measurements of one job on one node (pace_window_t over its tasks). */
typedef struct {
	uint64_t samples;     /* iteration period samples in the window, >= 1 */
	double iter_us;       /* mean iteration period */
	double iter_sd_us;    /* its population standard deviation */
	double compute_us;    /* mean compute time; -1 = not measured in the window */
	double compute_sd_us; /* its population standard deviation; -1 = not measured
			       * (or an older agent: absent in the JSON) */
	double burst_us;      /* mean burst length; -1 = not measured in the window */
	uint64_t slot_misses; /* skipped slots + late bursts in the window */
} hm_aw_meas_t;

/* What the agent sees of one job on its node (hello and beat). */
typedef struct {
	long job_id;
	int steps;          /* steps with a live report file */
	int ranks;          /* live report files (tasks) */
	long applied_epoch; /* oldest epoch a live task applied; -1 = none yet (JSON null) */
	/* The class its live tasks' NCCL communicators carry (the reports' NCCL_CLASS),
	   the lowest priority (highest number) where they differ: a collective ends
	   with its slowest flows. Absent (has_nccl_class false): none reported. */
	bool has_nccl_class;
	int nccl_class; /* [0, 7] */
	bool has_meas;  /* a window with samples since the last beat that carried one */
	hm_aw_meas_t meas;
	/* Decoding only: why this entry's meas was refused ("" = it was not). Its
	   values come from a user's report file, so a bad one costs only this entry. */
	char meas_refused[160];
} hm_aw_job_state_t;

typedef struct {
	char node[HM_AW_NODE_MAX];
	int njobs;
	hm_aw_job_state_t jobs[HM_AW_MAX_JOBS];
} hm_aw_node_state_t;

/* One schedule (the one in force, or the next one). */
typedef struct {
	char policy[HM_AW_POLICY_MAX]; /* policy that produced it, or "off" */
	long epoch;                    /* [0, 2^31) */
	int64_t period_us;             /* [0, 3.6e9]; 0 = free running */
	int64_t shift_us;              /* [0, 3.6e9]; < period, or a one-time delay with period 0 */
	int64_t origin_us;             /* [0, 2^62] */
	int64_t guard_us;              /* [0, 3.6e9] */
	int prio;                      /* [0, 7] */
} hm_aw_sched_t;

/* The coordinator's decision for one job on a node. */
typedef struct {
	long job_id;
	uint32_t uid;   /* the job's user: owner of its job directory and report files */
	bool scheduled; /* false: the steps run unscheduled (MODE=off) */
	char reason[HM_AW_TEXT_MAX]; /* why not scheduled ("" when scheduled) */
	hm_aw_sched_t cur;           /* meaningful when scheduled */
	bool has_next;
	int64_t next_effective_us; /* switch time of next, [0, 2^62] */
	hm_aw_sched_t next;
} hm_aw_job_assign_t;

typedef struct {
	char node[HM_AW_NODE_MAX];
	int njobs;
	hm_aw_job_assign_t jobs[HM_AW_MAX_JOBS];
} hm_aw_node_assign_t;

/* The recipient's rack in agent_assign: its leader and the recipient's role. */
typedef struct {
	char rack[HM_AW_NODE_MAX];   /* the node's rack (leaf switch name), 1..63 printable */
	char leader[HM_AW_NODE_MAX]; /* node name of the rack's leader; "" = none (JSON null) */
	char role[HM_AW_ROLE_MAX];   /* "leader" (the recipient leads) or "member" */
	long term;                   /* the rack's leader term: +1 at every new leader */
	char leader_addr[HM_AW_ADDR_MAX]; /* the leader's rack channel; "" = none (JSON null) */
	/* To a leader only ("members", absent from older coordinators): the IPv4 address
	   (network order) of each agent of its rack, one per node: who may join its rack
	   channel, and how many from one address. */
	bool has_members;
	int nmembers;
	uint32_t member_ip[HM_AW_MAX_NODES];
} hm_aw_rack_t;

/* One decoded or to-be-encoded message. Arrays are owned by the message. */
typedef struct {
	hm_aw_op_t op;
	int64_t seq; /* sender's counter on this connection, >= 1, strictly increasing */
	int64_t re;  /* the request answered: welcome, assign (0 = push), error (0 = none) */
	/* hello */
	char node[HM_AW_NODE_MAX];
	char agent_version[HM_AW_TEXT_MAX];
	bool has_topo;    /* false: hwloc failed, JSON "topo":null */
	bool rack_solver; /* it answers rack_round (absent in older agents: false) */
	int rack_port;    /* TCP port of its rack channel; 0 = none (absent in older agents) */
	hm_hwnode_t topo;
	/* hello (nnodes = 1, nodes[0].node = node) and beat */
	int nnodes;
	hm_aw_node_state_t *nodes;
	/* welcome and error */
	bool ok;
	char error[HM_AW_TEXT_MAX];
	char code[HM_AW_CODE_MAX];
	int heartbeat_ms, valid_ms, lead_ms;
	/* assign and rack_assign (whose "nodes" are the rack's decisions in chunks, each
	   named after the leader) */
	int nassign;
	hm_aw_node_assign_t *assign;
	bool has_rack; /* assign: the rack members are there (a coordinator without leaders sends
			  none) */
	hm_aw_rack_t rack;
	int64_t effective_us; /* rack_assign: when a changed schedule takes effect */
	bool reconnect;       /* rack_assign: the coordinator is back, connect now (no decisions) */
	/* Clocks (docs/protocol.md "Clock offset"). assign: the coordinator's CLOCK_REALTIME
	   as it encoded the message, 0 = absent (an older coordinator). beat (has_clock):
	   the agent's last accepted estimate of the coordinator's clock minus its own,
	   and that sample's round trip. */
	int64_t coord_us;
	bool has_clock;
	int64_t clock_offset_us, clock_rtt_us;
	/* rack_round and rack_result (hm_rack_wire.h) */
	hm_rack_req_t round;
	hm_rack_rep_t result;
} hm_aw_msg_t;

/* A node's hardware as members "gpus", "nics", "gpu_nic" of o (the hello's
   "topo", harmonicsctl's node view), and strictly back; path names o in errors. */
void hm_aw_topo_encode(json_object *o, const hm_hwnode_t *t);
hm_rc_t hm_aw_topo_decode(json_object *o, hm_hwnode_t *t, const char *path, hm_err_t *err);

/* Name of an op on the wire ("agent_hello", ...); NULL out of range. */
const char *hm_aw_op_name(hm_aw_op_t op);

/*
 * Encode m (op selects the members used) as JSON text: *json is malloc'd and
 * NUL-terminated (caller frees). HM_ERR_INVAL for counts out of range.
 */
hm_rc_t hm_aw_encode(const hm_aw_msg_t *m, char **json, hm_err_t *err);

/*
 * Decode len bytes of JSON text into *m (zeroed first; arrays allocated: free
 * with hm_aw_msg_free even on error). HM_ERR_PROTO with the member path.
 */
hm_rc_t hm_aw_decode(const char *json, size_t len, hm_aw_msg_t *m, hm_err_t *err);

/*
 * Whether m passes the decoder's checks of a beat's "meas" (the same field
 * table, encoded and decoded): the agent drops a window that fails rather than
 * send it. HM_ERR_PROTO naming the member and the bad value; HM_ERR_NOMEM.
 */
hm_rc_t hm_aw_meas_check(const hm_aw_meas_t *m, hm_err_t *err);

/* Allocate m->nodes (n entries) or m->assign (n entries), zeroed; HM_ERR_NOMEM. */
hm_rc_t hm_aw_alloc_nodes(hm_aw_msg_t *m, int n, hm_err_t *err);
hm_rc_t hm_aw_alloc_assign(hm_aw_msg_t *m, int n, hm_err_t *err);

/* Release the arrays of m (not m itself); NULL is fine. */
void hm_aw_msg_free(hm_aw_msg_t *m);

#endif
