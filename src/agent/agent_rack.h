/*
 * agent_rack.h - the rack channel (issue 12, docs/protocol.md "Rack channel"):
 * how a rack keeps its local jobs scheduled while it is cut off from the
 * coordinator.
 *
 * Every agent listens on RackPort and says the port in its hello; the
 * coordinator hands the leader's address to the rack's agents in agent_assign
 * (leader_addr). Members keep a connection to their leader (agent_hello,
 * agent_welcome, as to the coordinator; munge-sealed, root or SlurmUser only).
 * The leader keeps its last rack_round request. Once its own connection to the
 * coordinator is down, it solves that request again every EpochLength with the
 * cross-rack jobs free (their partners in other racks are out of reach) and
 * pushes the result to its members every HeartbeatInterval (rack_assign); a
 * member whose own connection to the coordinator is down applies it to the
 * jobs it lists, which keeps their assign files valid. Bounded: the request
 * must be fresh when the coordinator went away (3 epochs) and is used for at
 * most AssignmentValidity. Jobs started during the cut run unscheduled.
 *
 * Single-threaded: the agent's thread drives it from its poll loop.
 */
#ifndef AGENT_RACK_H
#define AGENT_RACK_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent.h"
#include "agent_conn.h"
#include "agent_jobs.h"
#include "hm_agent_wire.h"

#define AGENT_RACK_PEERS_MAX    64 /* members connected to one leader */
#define AGENT_RACK_FRESH_EPOCHS 3
#define AGENT_RACK_HELLO_MS     1000 /* a connection must say hello within this */
#define AGENT_RACK_PER_ADDR_MAX 8    /* connections from one address, coordinator lists none */

typedef struct {
	const hm_logger_t *lg;
	const char *node;
	/* The listening side: every agent, used when it leads; bound to the address its
	   coordinator connection comes from, the one the coordinator gives its members. */
	int listen_fd;
	int port;
	uint32_t listen_ip;                       /* network order */
	agent_conn_t peers[AGENT_RACK_PEERS_MAX]; /* fd -1 = free */
	char peer_node[AGENT_RACK_PEERS_MAX][HM_AW_NODE_MAX];
	uint32_t peer_ip[AGENT_RACK_PEERS_MAX];
	hm_log_rate_t refuse_rate; /* refused connections: a few lines a minute */
	unsigned long refused;     /* connections refused before a slot, since the start */
	size_t max_frame;
	/* The member side: the connection to the leader at up_addr. */
	agent_conn_t up;
	char up_addr[HM_AW_ADDR_MAX];
	/* The leader's side of a cut: the last request and what answered it. */
	hm_rack_req_t last;
	hm_rack_rep_t last_rep;
	bool has_last;
	int64_t last_ms;
	bool cut; /* solving here because the coordinator is out of reach */
	int64_t cut_since_ms;
	int64_t next_solve_ms, next_push_ms;
	unsigned long cut_rounds; /* solves during cuts, for the log */
	hm_aw_msg_t push;         /* the decisions pushed (op rack_assign) */
	bool has_push;
} agent_rack_t;

/* What agent_rack_tick needs of the agent. */
typedef struct {
	bool coordinator_ready; /* the agent's connection to the coordinator is welcomed */
	const agent_role_t *role;
	int epoch_ms, heartbeat_ms, valid_ms, lead_ms, conn_timeout_ms;
	int64_t hold_ms; /* AssignmentValidity: the longest a cut is bridged */
	const uint32_t *trusted;
	int ntrusted;
	/* Apply a rack_assign to this node's jobs (the leader's own, and a member's). */
	void (*apply)(void *arg, const hm_aw_msg_t *push);
	/* The leader reached the coordinator again: try the coordinator now. */
	void (*reconnect)(void *arg);
	void *arg;
} agent_rack_ctx_t;

void agent_rack_init(agent_rack_t *r, const char *node, size_t max_frame, const hm_logger_t *lg);
void agent_rack_free(agent_rack_t *r);

/* Listen on ip:port (ip dotted IPv4; port 0: any free one); r->port is the port.
   A listener on another address is closed first. */
hm_rc_t agent_rack_listen(agent_rack_t *r, const char *ip, int port, hm_err_t *err);

/* Listen on the local address of the connected socket fd (the agent's connection to
   the coordinator), on port (0: the port it had, else any): nothing when already. */
hm_rc_t agent_rack_follow(agent_rack_t *r, int fd, int port, hm_err_t *err);

/*
 * Whether a connection from ip (network order) may take a member slot now: NULL
 * when it may, else why not. Only a leader takes members; where the coordinator
 * listed its rack's agents (role->last.members), only from their addresses and
 * at most one more connection than nodes listed at that address (a member
 * reconnecting); else at most AGENT_RACK_PER_ADDR_MAX per address.
 */
const char *agent_rack_admit(const agent_rack_t *r, const agent_role_t *role, uint32_t ip,
			     char *why, size_t len);

/* A rack_round this node solved as leader, and its answer: kept for a cut. */
void agent_rack_keep(agent_rack_t *r, const hm_rack_req_t *q, const hm_rack_rep_t *rep,
		     int64_t now_ms);

/*
 * Timers: the member's connection to its leader (open, hello, follow a new
 * leader), and the leader's solves and pushes during a cut. Returns the next
 * time it wants to run (ms, monotonic).
 */
int64_t agent_rack_tick(agent_rack_t *r, const agent_rack_ctx_t *x, int64_t now_ms);

/* Append the descriptors to poll; returns how many were added (at most max). */
int agent_rack_pollfds(agent_rack_t *r, struct pollfd *pfd, int max);

/* Handle the poll results of the descriptors agent_rack_pollfds added. */
void agent_rack_events(agent_rack_t *r, const agent_rack_ctx_t *x, const struct pollfd *pfd, int n,
		       int64_t now_ms);

/*
 * The decisions of a rack_assign merged into this node's table: every listed
 * job gets an entry in out (node = this node): the leader's schedule for its
 * jobs (the class and the policy of the decision in force kept; a change
 * becomes the next one, effective at the push's switch time), unscheduled with
 * a reason for the others. Pure: tests call it.
 */
void agent_rack_merge(const agent_jobs_t *js, const hm_aw_msg_t *push, const char *node,
		      hm_aw_node_assign_t *out);

/*
 * The push of a solved cut round: local jobs with their slot (or free running),
 * cross-rack jobs unscheduled. Pure: tests call it.
 */
hm_rc_t agent_rack_push_build(const hm_rack_req_t *q, const hm_rack_rep_t *rep, const char *node,
			      const hm_aw_rack_t *rack, int64_t effective_us, hm_aw_msg_t *push,
			      hm_err_t *err);

#endif
