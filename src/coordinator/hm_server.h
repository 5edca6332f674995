/*
 * hm_server.h - the coordinator's socket service (a thread).
 *
 * TCP on conf listen_addr:listen_port. Every message, both ways, is a 4-byte
 * big-endian length followed by that many bytes of a munge credential (text)
 * whose payload is a JSON object. Requests (see harmonics(8) for every field):
 *   {"op":"register","job_id":N,"step_id":N,"node":"n1"}
 *       -> {"ok":true,"scheduled":true,"assignment":{period_us,shift_us,origin_us,
 *           guard_us,prio,path,epoch,policy,valid_until_us}}
 *       or {"ok":true,"scheduled":false,"reason":"..."}
 *   {"op":"report","job_id":N,"step_id":N,"iter_s":x,"compute_s":x,"comm_s":x,
 *    "iter_sd_s":x,"bytes":x}                       -> {"ok":true}
 *   {"op":"status"} {"op":"jobs"} {"op":"racks"} {"op":"job","job_id":N}
 *   Errors: {"ok":false,"error":"<message>","code":"auth|proto|notfound|..."}.
 * Authorisation: the requester is the credential's uid (never the payload). A
 * credential that fails to decode (garbage, expired, replayed, another realm) is
 * refused; job-scoped ops (register, report) need the job's owner, root or
 * SlurmUser, and job (explain) also admits the host's operators and the
 * coordinators of the job's account (hm_server_operator_t); status/jobs/racks
 * are open to any authenticated uid (jobs lists only the jobs the requester may
 * see, as squeue, with PrivateData=jobs in slurm.conf). Every refusal
 * is logged with peer address, uid and reason, and answered with an error reply.
 * Replies are sealed too: restricted to the requester's uid when it is known, open
 * when the request's credential could not be decoded.
 * Bounds (docs/protocol.md "Limits"): one I/O thread holds up to 32,768
 * connections (agents and one-shot requests; the kernel's backlog holds the
 * rest) and four workers unseal and answer; at most conf max_conns_per_addr of
 * them from one IPv4 address (more are closed at once); at most conf
 * max_requests_per_user requests of one uid in progress, parked registers
 * included (root and SlurmUser exempt; more are answered code "busy"); each
 * connection has conf conn_timeout_ms to deliver its request and again for its
 * reply; messages are at most conf max_message_bytes; a "register" for a job
 * the sched thread has not seen yet waits at most conn_timeout_ms / 2 and wakes
 * the sched thread at most once per 250 ms. Out of descriptors, a connection is
 * accepted and closed (a reserve descriptor) rather than left queued. At most
 * two frames of one address are with the workers at once (the rest wait). Refusals
 * are logged at most 10 per 10 s, the next line counting the others.
 */
#ifndef HM_SERVER_H
#define HM_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_conf.h"
#include "hm_coord.h"
#include "hm_error.h"

typedef struct hm_server hm_server_t;

/*
 * Bind, listen and start the thread. coord is borrowed (must outlive the
 * server); conf is copied. slurm_user_uid is trusted like root. Errors (address
 * in use, bad address) name addr:port and errno.
 */
hm_rc_t hm_server_start(hm_coord_t *coord, const hm_conf_t *conf, uint32_t slurm_user_uid,
			hm_server_t **out, hm_err_t *err);

/*
 * Whether slurm.conf (path; NULL: $SLURM_CONF, else /etc/slurm/slurm.conf) sets
 * PrivateData=jobs or all (the last PrivateData= counts). hm_server_start reads
 * it: then "jobs" lists only the requester's own jobs unless it is root or
 * SlurmUser, as squeue does. An unreadable file: false (Slurm's default).
 */
bool hm_server_slurm_private_jobs(const char *path);

/*
 * Who else sees other users' jobs, as squeue decides under PrivateData=jobs:
 * is_operator, every job (slurmctld's operators and administrators,
 * AdminLevel=Operator or Administrator); coordinates, the jobs of an account
 * uid coordinates (sacctmgr add coordinator account=A names=U; account is
 * never "" or NULL). "jobs" lists, and "job" and "explain" answer, what they
 * allow (without PrivateData "jobs" lists every job). Either may be NULL
 * (nobody). "explain" shows the other jobs on the job's links that the
 * requester may not see as "*". Called from the server's workers with no
 * server lock held: is_operator at most twice per request, coordinates once
 * per account a request meets (up to 64, then per job); thread-safe, quick.
 */
typedef struct {
	bool (*is_operator)(uint32_t uid, void *arg);
	bool (*coordinates)(uint32_t uid, const char *account, void *arg);
	void *arg;
} hm_server_operator_t;

/* Install op (borrowed: it must outlive the server; NULL: root and SlurmUser only,
   the default). Safe while the server runs. */
void hm_server_set_operator(hm_server_t *srv, const hm_server_operator_t *op);

/* What the admission limits did since the start (counts). */
typedef struct {
	unsigned long refused_addr;   /* connections closed: MaxConnectionsPerAddress */
	unsigned long refused_user;   /* requests answered "busy": MaxRequestsPerUser */
	unsigned long closed_no_fd;   /* connections accepted and closed: no descriptor */
	unsigned long sched_wakes;    /* sched thread wake-ups for registrations */
	unsigned long wakes_deferred; /* wake-ups asked for within the minimum interval */
} hm_server_counters_t;

void hm_server_counters(hm_server_t *srv, hm_server_counters_t *out);

/* Port actually bound (differs from conf when listen_port is 0). */
int hm_server_port(const hm_server_t *srv);

/* Stop accepting, finish the connection in progress (bounded), join the thread, free.
   NULL is fine. */
void hm_server_stop(hm_server_t *srv);

#endif
