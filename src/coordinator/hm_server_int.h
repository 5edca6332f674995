/*
 * hm_server_int.h - the server's halves: the I/O thread (hm_server.c: sockets,
 * frames, queues, timers; its admission in hm_server_admit.c, its state in
 * hm_server_io.h) and the request handlers the workers run (hm_server_ops.c:
 * authorise, answer, seal). A handler sees a snapshot of its
 * connection's protocol state and returns the new one with its frames; only
 * the I/O thread touches sockets.
 */
#ifndef HM_SERVER_INT_H
#define HM_SERVER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_agent_wire.h"
#include "hm_server.h"

#define HM_SRV_MAX_OUT 2 /* frames one task may produce (welcome + assign) */

/* Protocol state of a connection, owned by the I/O thread, lent to one task at a time. */
typedef struct {
	bool agent;                /* an agent said hello on it */
	char node[HM_AW_NODE_MAX]; /* the agent's node */
	uint32_t agent_uid;        /* who sealed its hello (root or SlurmUser) */
	int64_t in_seq, out_seq;   /* last seq received / sent (contract B) */
	unsigned long pushed_gen;  /* the node's change counter last sent */
} hm_srv_session_t;

typedef enum {
	HM_TASK_FRAME,   /* a credential as received: unseal first */
	HM_TASK_DECODED, /* a parked request, already authenticated: uid and text */
	HM_TASK_PUSH,    /* an unsolicited agent_assign to the session's node */
	HM_TASK_REFUSE,  /* a frame refused before reading it (data: why): answer, close */
	HM_TASK_RACK,    /* a rack_round to the session's node, a rack leader */
} hm_srv_task_kind_t;

typedef struct hm_srv_task {
	struct hm_srv_task *next;
	uint64_t conn_id;
	hm_srv_task_kind_t kind;
	char *data;        /* FRAME: credential; DECODED: JSON text (owned) */
	uint32_t uid, gid; /* DECODED */
	bool final;        /* DECODED: its wait is over, answer whatever the engine says */
	int rack_idx;      /* RACK: the request of the round (hm_coord_tier_take) */
	unsigned long rack_round;
	char peer[64];
	char local[64]; /* the coordinator's end of the connection (agents' bindings) */
	bool to_agent;  /* frames out are bound "coordinator>agent" (an agent's frame came) */
	hm_srv_session_t ses;
	/* Out. */
	char *out[HM_SRV_MAX_OUT]; /* sealed frames to send, in order (owned) */
	int nout;
	bool close_after; /* close once they are sent */
	bool park;        /* a register for a job not seen yet: keep data/uid, run it later */
	bool refused;     /* counted as a refused request */
	bool uid_held;    /* uid's request counts against MaxRequestsPerUser */
	uint32_t ip;      /* its connection's peer address: tasks in flight per address */
} hm_srv_task_t;

/* Run one task on a worker thread (fills its out members; never blocks on the
 * network; munge and the engine's mutex only). */
void hm_srv_run_task(hm_server_t *s, hm_srv_task_t *t);

/* What the handlers need of the server. */
hm_coord_t *hm_srv_coord(const hm_server_t *s);
const hm_conf_t *hm_srv_conf(const hm_server_t *s);
uint32_t hm_srv_slurm_uid(const hm_server_t *s);
int hm_srv_port(const hm_server_t *s);
bool hm_srv_private_jobs(const hm_server_t *s); /* PrivateData=jobs in slurm.conf */
/* The host's operators and administrators (hm_server_set_operator); root and SlurmUser
   are trusted apart from this. */
bool hm_srv_is_operator(hm_server_t *s, uint32_t uid);
/* Whether uid coordinates the Slurm account (the host's answer; false for "" and
   without a host hook). */
bool hm_srv_coordinates(hm_server_t *s, uint32_t uid, const char *account);

/* A refusal a peer can cause, logged at INFO at most SRV_LOG_BURST times per window
   over every thread; the next line logged counts the others. */
void hm_srv_log_refusal(hm_server_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Count a request of uid in progress: false (counted as refused) at MaxRequestsPerUser;
   the I/O thread releases it when the request is answered or its connection closes. */
bool hm_srv_uid_take(hm_server_t *s, uint32_t uid);

/* A registration waits for a job the sched thread has not seen: wake it, at most once
   per SRV_WAKE_MIN_MS (a later call is deferred to the end of the interval). */
void hm_srv_wake_sched(hm_server_t *s);

#endif
