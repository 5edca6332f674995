/*
 * hm_server_io.h - the server's own state, shared by its I/O thread
 * (hm_server.c) and its admission (hm_server_admit.c: who may connect and how
 * much each address and uid may ask at once). The request handlers
 * (hm_server_ops.c) never see it: they go through hm_server_int.h.
 */
#ifndef HM_SERVER_IO_H
#define HM_SERVER_IO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hm_log.h"
#include "hm_server_int.h"

#define SRV_WORKERS       4     /* unseal/answer/seal in parallel: munge calls block briefly */
#define SRV_MAX_CONNS     32768 /* one per node agent, plus one-shot requests */
#define SRV_EVENTS        1024  /* epoll events taken per wake-up (the rest come next) */
#define SRV_ACCEPT_BURST  64    /* connections accepted (or refused) per wake-up */
#define SRV_MAX_QUEUED    64    /* frames waiting for a peer that does not read: then drop it */
#define SRV_WAKE_MIN_MS   250   /* registrations wake the sched thread at most this often */
#define SRV_ADDR_INFLIGHT 2     /* tasks of one address with the workers: munge is the cost */
#define SRV_AGENT_SHARE   2     /* with both queues waiting, every 2nd task a worker takes is an agent's */
#define SRV_LOG_BURST     10    /* refusal lines per window, then a count of the others */
#define SRV_LOG_WINDOW_MS 10000

typedef struct out_frame {
	struct out_frame *next;
	char *cred;      /* owned */
	size_t len, off; /* bytes of header + cred already sent: off */
	unsigned char hdr[4];
} out_frame_t;

typedef struct {
	uint64_t id;
	int fd;
	uint32_t ip; /* the peer's IPv4 address, network order: MaxConnectionsPerAddress */
	char peer[64];
	char local[64];      /* our end of it: agents' frames are bound to both (hm_proto.h) */
	int64_t deadline_ms; /* one-shot: whole exchange; agent: silence limit */
	unsigned char hdr[4];
	size_t hgot, need, got;
	char *rbuf;
	out_frame_t *wq, *wq_tail;
	int nqueued;
	bool busy;        /* a task of it is with a worker */
	bool closing;     /* close once its frames are sent */
	bool push_wanted; /* the node's assignments changed while it was busy */
	uint32_t ev_mask; /* the epoll events it is registered for */
	uint32_t revents; /* what the last epoll_wait reported for it */
	int rack_idx;     /* a rack_round waiting for it to be free, -1 none */
	unsigned long rack_round;
	hm_srv_session_t ses;
	/* A parked register: authenticated text, retried on decisions until its deadline. */
	char *park_text;
	uint32_t park_uid, park_gid;
	int64_t park_deadline_ms;
	bool uid_held; /* park_uid's request counts against MaxRequestsPerUser */
	/* A whole frame read while its address had SRV_ADDR_INFLIGHT tasks with the
	   workers: it goes when one comes back, so one address cannot fill the queue. */
	char *held;
} conn_t;

/* Tasks of one address with the workers (I/O thread only). */
typedef struct {
	uint32_t ip;
	int n;
} addr_load_t;

/* Requests in progress of one uid (MaxRequestsPerUser). */
typedef struct {
	uint32_t uid;
	int n;
} uid_count_t;

struct hm_server {
	hm_coord_t *coord;
	hm_conf_t conf;
	uint32_t slurm_uid;
	int lfd;
	int wake[2]; /* pipe: 'x' stop, 'r' results, 'n' decisions changed, 'k' rack round */
	int epfd;
	bool lfd_armed; /* the listener is in epfd's interest (not at SRV_MAX_CONNS) */
	int port;
	pthread_t io, workers[SRV_WORKERS];
	int nworkers;
	bool io_started;

	pthread_mutex_t mu; /* guards the queues and stop */
	pthread_cond_t cv;
	/* Two queues: the agents' established sessions (beats, pushes, rack rounds)
	   and everything else (hellos, one-shot requests). A worker takes from the
	   second first but, with both waiting, every SRV_AGENT_SHARE-th task from the
	   agents': with 1,024 agents a FIFO put a status behind a second of beats,
	   and neither side starves the other. */
	hm_srv_task_t *todo, *todo_tail, *todo_agent, *todo_agent_tail, *done, *done_tail;
	unsigned long picks; /* tasks taken with both queues waiting */
	bool stop;
	bool notified;     /* set by the engine's notify, read by the I/O thread */
	bool racks_wanted; /* a rack round has requests to send */
	uid_count_t *uids; /* uids with requests in progress (guarded by mu) */
	int nuids, cap_uids;

	/* Registrations' wake-ups of the sched thread: at most one per SRV_WAKE_MIN_MS. */
	_Atomic int64_t last_wake_ms;
	atomic_bool wake_pending; /* one was asked for within the interval: the I/O thread */

	pthread_mutex_t log_mu; /* refusal lines: rate-limited over every thread */
	hm_log_rate_t log_rate;
	struct {
		atomic_ulong refused_addr, refused_user, closed_no_fd, sched_wakes, wakes_deferred;
	} cnt;

	/* I/O thread only. */
	conn_t *conns[SRV_MAX_CONNS];
	int nconns;
	uint64_t next_id;
	int reserve_fd;     /* spent to accept and close a connection when out of descriptors */
	addr_load_t *loads; /* addresses with tasks in flight */
	int nloads, cap_loads;
	bool private_jobs; /* slurm.conf PrivateData=jobs (or all): others' jobs hidden */
	_Atomic(const hm_server_operator_t *) op; /* who else sees them; NULL: nobody */
};

/* The workers' queues (hm_server_admit.c; the caller holds s->mu). */
void hm_srv_task_append(hm_srv_task_t **head, hm_srv_task_t **tail, hm_srv_task_t *t);
/* Queue t: the agents' queue when its connection is an agent's session. */
void hm_srv_task_put(hm_server_t *s, hm_srv_task_t *t, bool agent);
/* The next task for a worker (SRV_AGENT_SHARE); NULL when both queues are empty. */
hm_srv_task_t *hm_srv_task_take(hm_server_t *s);

/* Admission (hm_server_admit.c). I/O thread only, unless said. */
/* Accept waiting connections (SRV_ACCEPT_BURST at most) within MaxConnectionsPerAddress
   and SRV_MAX_CONNS. */
void hm_srv_accept_all(hm_server_t *s);
/* Tasks in flight of ip, changed by delta. */
int hm_srv_addr_load(hm_server_t *s, uint32_t ip, int delta);
/* A request of uid answered (any thread; hm_srv_uid_take counted it). */
void hm_srv_uid_release(hm_server_t *s, uint32_t uid);
/* A deferred wake-up of the sched thread that is due: the time of the next one, or -1. */
int64_t hm_srv_wake_due(hm_server_t *s, int64_t now);

#endif
