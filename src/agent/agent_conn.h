/*
 * agent_conn.h - the agent's one connection to the coordinator: a non-blocking
 * TCP socket with its own read and write buffers, frames of hm_proto (4-byte
 * big-endian length + munge credential), sealing and unsealing, the peer's
 * sequence numbers, deadlines, and the back-off between attempts. The agent's
 * poll loop drives it; nothing here waits on the network.
 */
#ifndef AGENT_CONN_H
#define AGENT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "hm_agent_wire.h"
#include "hm_coord_addr.h"
#include "hm_proto.h"

typedef enum {
	CONN_IDLE,       /* closed; retry_at_ms says when to try again */
	CONN_CONNECTING, /* connect() in progress, deadline_ms */
	CONN_HELLO,      /* hello queued or sent, waiting for the welcome until deadline_ms */
	CONN_READY,      /* welcomed */
} agent_conn_state_t;

typedef struct {
	agent_conn_state_t state;
	int fd;
	char peer[300]; /* "host:port" for messages */
	int64_t deadline_ms;
	int64_t last_heard_ms; /* last good frame from the coordinator */
	int64_t seq_out;       /* our last seq on this connection */
	int64_t seq_in;        /* the coordinator's last seq on this connection */
	int64_t hello_seq;
	/* Write buffer: whole frames; out_since_ms is when its oldest byte was queued. */
	char *out;
	size_t out_len, out_off, out_cap;
	int64_t out_since_ms;
	/* Read buffer: one frame at a time. */
	char *in;
	size_t in_len, in_cap;
	size_t max_frame; /* MaxMessageSize */
	agent_backoff_t backoff;
	int64_t retry_at_ms;
	hm_log_once_t once; /* the last failure, logged once */
	unsigned rand_state;
	const hm_logger_t *lg;
	const char *what; /* the peer in log lines: "coordinator" (default), "rack leader", ... */
	int level_floor;  /* failures are logged at this level or a lower priority */
	/* The coordinator's addresses (NULL: the one peer of agent_conn_start). A
	   round tries each once, from the one that answered last; the back-off
	   comes between rounds. */
	const hm_coord_addrs_t *addrs;
	int addr_i; /* the next to try */
	int tried;  /* failed in this round */
	/* The bindings of this connection's frames (hm_proto.h), from its two ends once
	   connected: what we seal, what we accept ("" until the first frame). */
	char tag_out[HM_PROTO_BIND_MAX], tag_in[HM_PROTO_BIND_MAX];
} agent_conn_t;

void agent_conn_init(agent_conn_t *c, size_t max_frame, const hm_logger_t *lg);
void agent_conn_free(agent_conn_t *c);

/* Start connecting to host:port (non-blocking). False when it failed at once (closed
 * with back-off, logged). */
bool agent_conn_start(agent_conn_t *c, const char *host, int port, int timeout_ms, int64_t now_ms);

/* agent_conn_start with c->addrs' address of this turn. */
bool agent_conn_start_next(agent_conn_t *c, int port, int timeout_ms, int64_t now_ms);

/* The socket became writable while connecting: true when connected. */
bool agent_conn_connected(agent_conn_t *c, int64_t now_ms);

/* Encode, seal (to any uid) bound to this connection's destination and direction, and
 * queue m with the next seq (m->seq is set). */
hm_rc_t agent_conn_send(agent_conn_t *c, hm_aw_msg_t *m, int64_t now_ms, hm_err_t *err);

/* Write what the socket takes now. False when the connection failed (closed). */
bool agent_conn_flush(agent_conn_t *c, int64_t now_ms);

/*
 * Read what arrived; for each complete frame: unseal, check the sender is in
 * trusted[] and the frame is bound to this connection in the peer's direction
 * (a frame for another destination is refused before decoding), decode, check
 * seq; then on_msg(arg, &msg). A failure closes the
 * connection with back-off (logged once). on_msg returns false to close it too
 * (it logs why). Returns false when the connection was closed.
 */
bool agent_conn_read(agent_conn_t *c, const uint32_t *trusted, int ntrusted, int64_t now_ms,
		     bool (*on_msg)(void *arg, const hm_aw_msg_t *m), void *arg);

/*
 * Close and schedule the next attempt after the back-off (reset_backoff: the
 * connection had been welcomed, so start again from the shortest delay). why is
 * logged at level unless it repeats the last failure (once per state change).
 * With addrs, an address that failed before its welcome passes the turn to the
 * next at once (logged verbose) until the round has tried them all.
 */
void agent_conn_fail(agent_conn_t *c, int64_t now_ms, bool reset_backoff, int level,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Close without logging or back-off (the agent stops). */
void agent_conn_close(agent_conn_t *c);

/* Events to poll for (0 when there is no socket). */
short agent_conn_events(const agent_conn_t *c);

#endif
