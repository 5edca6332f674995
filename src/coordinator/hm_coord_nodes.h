/*
 * hm_coord_nodes.h - the engine's side of the node agents (contract B,
 * docs/protocol.md): which nodes have an agent, what their steps applied and
 * measured, and each node's list of assignments with the pending switch.
 *
 * The records are the wire codec's (hm_agent_wire.h), so the server passes
 * them through without a second description. Same locking as hm_coord.h: every
 * function takes the engine's mutex; none blocks on I/O.
 */
#ifndef HM_COORD_NODES_H
#define HM_COORD_NODES_H

#include <stdbool.h>

#include "hm_agent_wire.h"
#include "hm_coord.h"
#include "hm_hwnode.h"
#include "hm_views.h"

/*
 * An agent said hello. topo: what it read with hwloc (NULL when it could not).
 * HM_ERR_NOTFOUND (naming the node) when the node is not in the topology. The
 * GPU -> NIC map is applied to the host when its GPU and NIC counts match the
 * topology's (else kept for display with the reason): jobs on it are re-derived.
 */
hm_rc_t hm_coord_node_hello(hm_coord_t *c, const char *node, const hm_hwnode_t *topo, double now_s,
			    hm_err_t *err);

/* A beat (one node's entry): steps, applied epochs, measurement windows. Jobs the
 * engine does not know are ignored. HM_ERR_NOTFOUND for an unknown node. */
hm_rc_t hm_coord_node_beat(hm_coord_t *c, const hm_aw_node_state_t *st, double now_s,
			   hm_err_t *err);

/*
 * The clock offset the node's agent reported in a beat (the coordinator's clock
 * minus the node's, and the round trip of that sample). A change of skew against
 * ClockSkewMax is logged once; the agent itself runs the node's steps free.
 */
void hm_coord_node_clock(hm_coord_t *c, const char *node, int64_t offset_us, int64_t rtt_us);

/* The agent's connection closed or went silent. During the grace after a stall
   (below) the node stays up until the grace ends, lost then unless it said hello. */
void hm_coord_node_lost(hm_coord_t *c, const char *node, double now_s);

/*
 * The server could not read for stall_s until now_s (slurmctld stopped, or
 * starved): what arrives now is stale (queued hellos, connections the agents
 * closed because we were silent). The agents' silence is counted without the
 * stall, and for AgentValidity + HeartbeatInterval closed connections do not
 * make a node lost (hm_coord_nodes_grace_check decides after). Logged.
 */
void hm_coord_nodes_stalled(hm_coord_t *c, double now_s, double stall_s);

/* Nodes whose connection closed during a stall's grace and that said no hello
   since are lost once the grace is over (called with the leaders' check). */
void hm_coord_nodes_grace_check(hm_coord_t *c, double now_s);

/*
 * The node's assignments: every job of the engine with a slot on that node,
 * with its uid and, while a changed decision is pending, the one in force plus
 * the next one and its switch time (contract C). *gen gets the node's change
 * counter (compare with hm_coord_node_gen to know whether to push again).
 * HM_ERR_NOTFOUND for an unknown node, HM_ERR_RANGE when more than
 * HM_AW_MAX_JOBS jobs share it (the first ones are listed).
 */
hm_rc_t hm_coord_node_assign(hm_coord_t *c, const char *node, double now_s,
			     hm_aw_node_assign_t *out, unsigned long *gen, hm_err_t *err);

/* The node's change counter (0 for an unknown node). */
unsigned long hm_coord_node_gen(hm_coord_t *c, const char *node);

/* Called with the engine's mutex held whenever assignments changed (so the
 * server can push): must not call back into the engine. NULL removes it. */
void hm_coord_set_notify(hm_coord_t *c, void (*fn)(void *arg), void *arg);

/*
 * Rack leaders (docs/architecture.md, "Rack leaders"): per rack, the agent of
 * the lowest-named node (hm_hostname_cmp) among the healthy ones leads; an agent
 * is healthy while its connection is open and it was heard within
 * AgentValidity. A leader keeps the lead while healthy (a returning
 * lower-named node does not take it back); when it is not, the next healthy
 * agent in name order leads at the next agent event of that rack (hello, beat,
 * lost) or hm_coord_leaders_check. A rack without a leader elects once one of
 * its agents has been up for AgentValidity (agents starting together). Every
 * change bumps the change counter of the rack's nodes, so their agents are
 * told at once (a push).
 */

/* The node's rack, its leader and the node's role: the rack members of
   agent_assign. false (out zeroed) when the node is unknown or in no rack. */
bool hm_coord_node_rack(hm_coord_t *c, const char *node, hm_aw_rack_t *out);

/* Re-elect every rack at now_s (leaders silent past AgentValidity give way). */
void hm_coord_leaders_check(hm_coord_t *c, double now_s);

/*
 * Rack rounds (hm_coord_tier.c, docs/protocol.md rack_round/rack_result):
 * the server carries the requests of racks with a leader to the leader's
 * connection and the replies back. None of these takes the engine's mutex
 * (the round waits for them with it released).
 *
 * set_rack_sender: send(arg) is called when requests are waiting (it must
 * only wake the server). tier_take: the next waiting request: its index, the
 * leader's node and the round (-1 when none). tier_fail: it could not be
 * sent. tier_node_gone: the node's connection closed (its requests fail).
 * tier_encode: the request as a rack_round message with seq (HM_ERR_NOTFOUND
 * when its round is over). tier_result: a leader's reply; taken (moved from
 * rep) when it answers an open request of that node, else false (late,
 * unasked: the caller drops it).
 */
/* What the node's agent said it can do in its hello: rack_solver, and the address
   of its rack channel (NULL or "": none), handed to its rack as leader_addr. */
void hm_coord_node_caps(hm_coord_t *c, const char *node, bool rack_solver, const char *rack_addr);
void hm_coord_set_rack_sender(hm_coord_t *c, void (*send)(void *arg), void *arg);
int hm_coord_tier_take(hm_coord_t *c, char *node, size_t len, unsigned long *round);
void hm_coord_tier_fail(hm_coord_t *c, int idx, unsigned long round);
void hm_coord_tier_node_gone(hm_coord_t *c, const char *node);
hm_rc_t hm_coord_tier_encode(hm_coord_t *c, int idx, unsigned long round, int64_t seq, char **json,
			     hm_err_t *err);
bool hm_coord_tier_result(hm_coord_t *c, const char *node, hm_rack_rep_t *rep);

/* Node agents table, sorted by name: malloc'd array of *n (caller frees). */
hm_rc_t hm_coord_nodes(hm_coord_t *c, hm_coord_node_view_t **out, int *n);

/*
 * The register reply's view of a job: the assignment in force now and, while a
 * change is pending, the next one (*has_next) and its switch time. HM_ERR_NOTFOUND
 * when unknown or not decided yet.
 */
hm_rc_t hm_coord_assignment_now(hm_coord_t *c, uint32_t job_id, double now_s, hm_assignment_t *cur,
				hm_assignment_t *next, bool *has_next, int64_t *effective_us);

#endif
