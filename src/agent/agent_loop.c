/*
 * The agent's thread: one poll loop over a wake-up eventfd and the coordinator
 * connection, with timers for the reconnect back-off, the connect and welcome
 * deadlines, the heartbeat, the coordinator's silence, the promotion of next
 * assignments and the cleanup of finished jobs. Nothing here blocks except the
 * bounded calls to munged (libmunge) and, for a host name, the resolver.
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "hm_clock.h"
#include "agent.h"
#include "agent_conn.h"
#include "agent_files.h"
#include "agent_jobs.h"
#include "agent_metrics.h"
#include "agent_rack.h"
#include "config.h"
#include "hm_harmonics_tier.h"
#include "hm_hwnode.h"
#include "hm_proto.h"

#define CLEANUP_EVERY_MS 5000
#define CLEANUP_SLICE_MS 20 /* removal work per cleanup, then a beat's turn */

struct agent {
	agent_cfg_t cfg;
	pthread_t thread;
	int wake_fd;
	atomic_bool stop;
	atomic_int refs; /* the thread and the owner; the last one frees */
	/* Below: the thread's alone. */
	agent_conn_t conn;
	agent_jobs_t jobs;
	hm_hwnode_t topo;
	bool has_topo;
	int node_fd;
	hm_log_once_t node_once, beat_once, state_once, metrics_once;
	agent_role_t role;                   /* the node's role in its rack, as last told */
	agent_rack_t rack;                   /* the rack channel (leader and member sides) */
	bool cut_applied;                    /* a leader's push was applied since the cut */
	unsigned long rack_solves;           /* rack rounds solved here as its leader */
	int heartbeat_ms, valid_ms, lead_ms; /* the coordinator's, from the welcome */
	int64_t next_beat_ms, next_cleanup_ms;
	bool listed_here;    /* an agent_assign arrived on this connection */
	agent_clock_t clock; /* this node's clock against the coordinator's */
	int64_t beat_seq;    /* the last beat sent on this connection, and when */
	int64_t beat_sent_us, beat_sent_mono_us;
};

static void agent_release(agent_t *a)
{
	if (atomic_fetch_sub(&a->refs, 1) != 1)
		return;
	if (a->wake_fd >= 0)
		close(a->wake_fd);
	free(a);
}

/* The node directory, opened (and created) on first use; retried until it works. */
static bool node_dir(agent_t *a)
{
	hm_err_t err = {0};

	if (a->node_fd >= 0)
		return true;
	a->node_fd = agent_node_dir_open(a->cfg.conf.run_dir, a->cfg.node, &err);
	if (a->node_fd < 0) {
		hm_log_once(&a->cfg.log, &a->node_once, HM_LOG_ERROR,
			    "%s; the steps of this node run unscheduled until it works", err.msg);
		return false;
	}
	if (hm_log_once_clear(&a->node_once))
		hm_logf(&a->cfg.log, HM_LOG_INFO, "node directory %s/%s usable again",
			a->cfg.conf.run_dir, a->cfg.node);
	return true;
}

/* Renewal: every listed job's file is valid for valid_ms from now, and written. */
static void renew(agent_t *a)
{
	a->jobs.valid_until_us = hm_clock_us(CLOCK_REALTIME) + (int64_t)a->valid_ms * 1000;
	if (node_dir(a))
		agent_jobs_write_all(&a->jobs, a->node_fd, hm_clock_us(CLOCK_REALTIME),
				     &a->cfg.log);
}

static void send_msg(agent_t *a, hm_aw_msg_t *m, int64_t now_ms)
{
	hm_err_t err = {0};

	if (agent_conn_send(&a->conn, m, now_ms, &err) != HM_OK) {
		agent_conn_fail(&a->conn, now_ms, false, HM_LOG_ERROR, "%s", err.msg);
		return;
	}
	agent_conn_flush(&a->conn, now_ms);
}

/* This node's jobs as the coordinator should see them. */
static bool node_state(agent_t *a, hm_aw_msg_t *m)
{
	hm_err_t err = {0};

	if (hm_aw_alloc_nodes(m, 1, &err) != HM_OK)
		return false;
	snprintf(m->nodes[0].node, sizeof(m->nodes[0].node), "%s", a->cfg.node);
	if (node_dir(a))
		agent_jobs_scan(&a->jobs, a->node_fd, &a->cfg.log);
	agent_jobs_state(&a->jobs, hm_clock_us(CLOCK_REALTIME), &m->nodes[0], &a->cfg.log,
			 &a->state_once);
	if (a->cfg.conf.metrics_dir[0] &&
	    agent_metrics_write(&a->jobs, a->cfg.conf.metrics_dir, a->cfg.node, &err) != HM_OK)
		hm_log_once(&a->cfg.log, &a->metrics_once, HM_LOG_ERROR, "%s", err.msg);
	return true;
}

static void listen_rack(agent_t *a);

static void send_hello(agent_t *a, int64_t now_ms)
{
	hm_aw_msg_t m;

	memset(&m, 0, sizeof(m));
	m.op = HM_AW_HELLO;
	snprintf(m.node, sizeof(m.node), "%s", a->cfg.node);
	snprintf(m.agent_version, sizeof(m.agent_version), "%s", PACKAGE_VERSION);
	m.has_topo = a->has_topo;
	m.topo = a->topo;
	m.rack_solver = true;
	listen_rack(a); /* on the address the coordinator sees: it tells the members */
	m.rack_port = a->rack.listen_fd >= 0 ? a->rack.port : 0;
	if (!node_state(a, &m))
		agent_conn_fail(&a->conn, now_ms, false, HM_LOG_ERROR, "hello: out of memory");
	else
		send_msg(a, &m, now_ms);
	if (a->conn.fd >= 0) { /* sent (or queued), not failed */
		a->conn.hello_seq = m.seq;
		a->conn.state = CONN_HELLO;
		a->conn.deadline_ms = now_ms + a->cfg.conf.conn_timeout_ms;
	}
	hm_aw_msg_free(&m);
}

static void send_beat(agent_t *a, int64_t now_ms)
{
	hm_aw_msg_t m;

	memset(&m, 0, sizeof(m));
	m.op = HM_AW_BEAT;
	m.has_clock = a->clock.has;
	m.clock_offset_us = a->clock.offset_us;
	m.clock_rtt_us = a->clock.rtt_us;
	if (node_state(a, &m)) {
		a->beat_sent_us = hm_clock_us(CLOCK_REALTIME);
		a->beat_sent_mono_us = hm_clock_us(CLOCK_MONOTONIC);
		send_msg(a, &m, now_ms);
		a->beat_seq = m.seq;
		if (a->conn.state == CONN_READY)
			agent_jobs_windows_sent(&a->jobs);
	}
	hm_aw_msg_free(&m);
}

static bool on_welcome(agent_t *a, const hm_aw_msg_t *m, int64_t now_ms)
{
	if (a->conn.state != CONN_HELLO || m->re != a->conn.hello_seq) {
		agent_conn_fail(&a->conn, now_ms, false, HM_LOG_ERROR,
				"agent_welcome out of turn (re %lld)", (long long)m->re);
		return false;
	}
	if (!m->ok) {
		agent_conn_fail(&a->conn, now_ms, false, HM_LOG_ERROR, "refused node '%s': %s%s%s",
				a->cfg.node, m->error, m->code[0] ? " code " : "", m->code);
		return false;
	}
	a->heartbeat_ms = m->heartbeat_ms;
	a->valid_ms = m->valid_ms;
	a->lead_ms = m->lead_ms;
	a->conn.state = CONN_READY;
	a->listed_here = false;
	a->beat_seq = 0; /* sequence numbers start again on each connection */
	a->cut_applied = false;
	agent_backoff_reset(&a->conn.backoff);
	hm_log_once_clear(&a->conn.once);
	hm_logf(&a->cfg.log, HM_LOG_INFO,
		"connected to the coordinator %s (heartbeat %d ms, validity %d ms, lead %d ms)",
		a->conn.peer, a->heartbeat_ms, a->valid_ms, a->lead_ms);
	a->next_beat_ms = now_ms + a->heartbeat_ms;
	renew(a);
	return true;
}

/* The reply to the last beat: a clock sample; a change of skew is logged once. */
static void clock_sample(agent_t *a, const hm_aw_msg_t *m)
{
	int64_t bound_us = (int64_t)(a->cfg.conf.clock_skew_max_s * 1e6), recv_us, recv_mono_us;
	int change;

	if (m->re == 0 || m->re != a->beat_seq)
		return;
	recv_us = hm_clock_us(CLOCK_REALTIME);
	recv_mono_us = hm_clock_us(CLOCK_MONOTONIC);
	change = agent_clock_sample(&a->clock, a->beat_sent_us, a->beat_sent_mono_us, m->coord_us,
				    recv_us, recv_mono_us, bound_us);
	if (change > 0)
		hm_logf(
		    &a->cfg.log, HM_LOG_ERROR,
		    "this node's clock is %+lld us off the coordinator's (round trip %lld us), "
		    "beyond ClockSkewMax=%lld us: its steps run free until it is within (NTP or "
		    "PTP must keep the nodes' clocks together)",
		    (long long)-a->clock.offset_us, (long long)a->clock.rtt_us,
		    (long long)bound_us);
	else if (change < 0)
		hm_logf(
		    &a->cfg.log, HM_LOG_INFO,
		    "this node's clock is within ClockSkewMax=%lld us of the coordinator's again "
		    "(%+lld us): its steps are paced again",
		    (long long)bound_us, (long long)-a->clock.offset_us);
	a->jobs.clock_free = a->clock.skewed;
}

static bool on_assign(agent_t *a, const hm_aw_msg_t *m, int64_t now_ms)
{
	const hm_aw_node_assign_t *mine = NULL;

	if (a->conn.state != CONN_READY) {
		agent_conn_fail(&a->conn, now_ms, false, HM_LOG_ERROR,
				"agent_assign before agent_welcome");
		return false;
	}
	clock_sample(a, m);
	for (int i = 0; i < m->nassign && !mine; i++)
		if (strcmp(m->assign[i].node, a->cfg.node) == 0)
			mine = &m->assign[i];
	(void)agent_role_note(&a->role, m, &a->cfg.log);
	if (mine) {
		agent_jobs_apply(&a->jobs, mine, now_ms, &a->cfg.log);
		a->listed_here = true;
	} else {
		hm_logf(&a->cfg.log, HM_LOG_VERBOSE,
			"agent_assign seq %lld lists no entry for this node: nothing changes",
			(long long)m->seq);
	}
	renew(a);
	return true;
}

/*
 * The coordinator asks this node, its rack's leader, to run the rack's Local
 * Scheduler for one round: solve here, answer with the local jobs' decisions.
 * A request that fails its checks is answered with no decisions (the
 * coordinator then runs those jobs free at once rather than wait).
 */
static bool on_rack_round(agent_t *a, const hm_aw_msg_t *m, int64_t now_ms)
{
	hm_aw_msg_t r;
	hm_err_t err = {0};

	if (a->conn.state != CONN_READY) {
		agent_conn_fail(&a->conn, now_ms, false, HM_LOG_ERROR,
				"rack_round before agent_welcome");
		return false;
	}
	memset(&r, 0, sizeof(r));
	r.op = HM_AW_RACK_RESULT;
	r.re = m->seq;
	if (hm_tier_rack_solve(&m->round, &r.result, &err) != HM_OK) {
		hm_logf(&a->cfg.log, HM_LOG_ERROR, "rack round %lu: %s: answered with no decisions",
			m->round.round, err.msg);
		r.result.rack = m->round.rack;
		r.result.round = m->round.round;
	} else {
		agent_rack_keep(&a->rack, &m->round, &r.result, now_ms);
		a->rack_solves++;
		hm_logf(&a->cfg.log, a->rack_solves == 1 ? HM_LOG_INFO : HM_LOG_VERBOSE,
			"rack %s: Local Scheduler round %lu solved here: %d jobs, %d local, "
			"%.2f ms (%lu rounds so far)",
			a->role.known ? a->role.last.rack : "?", m->round.round, m->round.njobs,
			r.result.ndec, r.result.solve_ms, a->rack_solves);
	}
	send_msg(a, &r, now_ms);
	hm_aw_msg_free(&r);
	return a->conn.fd >= 0;
}

static bool on_msg(void *arg, const hm_aw_msg_t *m)
{
	agent_t *a = arg;
	int64_t now_ms = hm_proto_now_ms();

	switch (m->op) {
	case HM_AW_WELCOME:
		return on_welcome(a, m, now_ms);
	case HM_AW_ASSIGN:
		return on_assign(a, m, now_ms);
	case HM_AW_RACK_ROUND:
		return on_rack_round(a, m, now_ms);
	case HM_AW_ERROR:
		agent_conn_fail(&a->conn, now_ms, false, HM_LOG_ERROR, "error reply: %s%s%s",
				m->error, m->code[0] ? " code " : "", m->code);
		return false;
	default:
		agent_conn_fail(&a->conn, now_ms, false, HM_LOG_ERROR, "%s is not for an agent",
				hm_aw_op_name(m->op));
		return false;
	}
}

/* A rack leader's decisions while this node cannot reach the coordinator. */
static void on_rack_push(void *arg, const hm_aw_msg_t *push)
{
	agent_t *a = arg;
	hm_aw_node_assign_t *na = calloc(1, sizeof(*na));

	if (!na) {
		hm_logf(&a->cfg.log, HM_LOG_ERROR, "rack_assign: out of memory");
		return;
	}
	agent_rack_merge(&a->jobs, push, a->cfg.node, na);
	agent_jobs_apply(&a->jobs, na, hm_proto_now_ms(), &a->cfg.log);
	renew(a);
	hm_logf(&a->cfg.log, a->cut_applied ? HM_LOG_DEBUG : HM_LOG_INFO,
		"rack %s: the coordinator is out of reach: %d jobs follow the decisions of "
		"the rack's leader %s",
		push->rack.rack, na->njobs, push->rack.leader);
	a->cut_applied = true;
	free(na);
}

/* The rack's leader reached the coordinator again: so can this node, probably. */
static void on_rack_reconnect(void *arg)
{
	agent_t *a = arg;

	/* A connect begun during the cut waits on the kernel's SYN retries (its
	   packets were dropped) and, at its deadline, on a long back-off: start over. */
	if (a->conn.state == CONN_CONNECTING) {
		agent_conn_close(&a->conn);
		agent_backoff_reset(&a->conn.backoff);
		a->conn.retry_at_ms = hm_proto_now_ms() + 1;
	}
	if (a->conn.state == CONN_IDLE && a->conn.retry_at_ms > hm_proto_now_ms()) {
		a->conn.retry_at_ms = hm_proto_now_ms();
		hm_logf(&a->cfg.log, HM_LOG_VERBOSE,
			"the rack's leader reached the coordinator: connecting now");
	}
}

static agent_rack_ctx_t rack_ctx(agent_t *a)
{
	return (agent_rack_ctx_t){
	    .coordinator_ready = a->conn.state == CONN_READY,
	    .role = &a->role,
	    .epoch_ms = (int)(a->cfg.conf.epoch_s * 1000),
	    .heartbeat_ms = a->heartbeat_ms,
	    .valid_ms = a->valid_ms,
	    .lead_ms = a->lead_ms,
	    .conn_timeout_ms = a->cfg.conf.conn_timeout_ms,
	    .hold_ms = (int64_t)(a->cfg.conf.valid_s * 1000),
	    .trusted = a->cfg.trusted,
	    .ntrusted = a->cfg.ntrusted,
	    .apply = on_rack_push,
	    .reconnect = on_rack_reconnect,
	    .arg = a,
	};
}

/* Timers that fire without socket events; returns the poll timeout in ms. */
static int run_timers(agent_t *a, int64_t now_ms)
{
	agent_conn_t *c = &a->conn;
	int64_t next = now_ms + 1000, t_us, promo;

	/* A leader bridging a cut retries at least twice an epoch: its rack rejoins
	   within one epoch of the coordinator's return (then it tells its members). */
	{
		int64_t cap_ms = (int64_t)(a->cfg.conf.epoch_s * 500);

		if (cap_ms < AGENT_BACKOFF_MIN_MS)
			cap_ms = AGENT_BACKOFF_MIN_MS;
		if (c->state == CONN_IDLE && a->rack.cut && a->cfg.conf.epoch_s > 0 &&
		    c->retry_at_ms > now_ms + cap_ms)
			c->retry_at_ms = now_ms + cap_ms;
	}
	switch (c->state) {
	case CONN_IDLE:
		if (now_ms >= c->retry_at_ms)
			agent_conn_start_next(c, a->cfg.conf.listen_port,
					      a->cfg.conf.conn_timeout_ms, now_ms);
		if (c->state == CONN_IDLE && c->retry_at_ms < next)
			next = c->retry_at_ms;
		break;
	case CONN_CONNECTING:
	case CONN_HELLO:
		if (now_ms >= c->deadline_ms)
			agent_conn_fail(c, now_ms, false, HM_LOG_ERROR, "%s",
					c->state == CONN_CONNECTING
					    ? "connect timed out"
					    : "no agent_welcome within ConnectionTimeout");
		else if (c->deadline_ms < next)
			next = c->deadline_ms;
		break;
	case CONN_READY:
		if (now_ms - c->last_heard_ms >= a->valid_ms) {
			agent_conn_fail(c, now_ms, true, HM_LOG_ERROR,
					"silent for %d ms (AgentValidity): reconnecting",
					a->valid_ms);
			break;
		}
		if (now_ms >= a->next_beat_ms) {
			send_beat(a, now_ms);
			a->next_beat_ms = now_ms + a->heartbeat_ms;
		}
		if (a->listed_here && now_ms >= a->next_cleanup_ms && node_dir(a)) {
			/* Ended jobs' trees are their users' shape: removed in slices, so
			   that a beat waits CLEANUP_SLICE_MS at most; the rest goes on
			   every heartbeat until done. */
			agent_remove_deadline(hm_clock_us(CLOCK_MONOTONIC) +
					      CLEANUP_SLICE_MS * 1000);
			agent_jobs_cleanup(&a->jobs, a->node_fd, now_ms,
					   hm_clock_us(CLOCK_REALTIME), &a->cfg.log);
			a->next_cleanup_ms =
			    now_ms +
			    (agent_remove_deadline_hit() ? a->heartbeat_ms : CLEANUP_EVERY_MS);
			agent_remove_deadline(0);
		}
		if (a->next_beat_ms < next)
			next = a->next_beat_ms;
		if (c->last_heard_ms + a->valid_ms < next)
			next = c->last_heard_ms + a->valid_ms;
		break;
	}
	/* Unsent bytes older than ConnectionTimeout: the coordinator is not reading. */
	if (c->fd >= 0 && c->out_off < c->out_len) {
		if (now_ms - c->out_since_ms >= a->cfg.conf.conn_timeout_ms)
			agent_conn_fail(c, now_ms, c->state == CONN_READY, HM_LOG_ERROR,
					"not reading (a frame unsent for %d ms)",
					a->cfg.conf.conn_timeout_ms);
		else if (c->out_since_ms + a->cfg.conf.conn_timeout_ms < next)
			next = c->out_since_ms + a->cfg.conf.conn_timeout_ms;
	}
	{
		agent_rack_ctx_t x = rack_ctx(a);
		int64_t t = agent_rack_tick(&a->rack, &x, now_ms);

		if (t < next)
			next = t;
	}
	/* Promotions go on while disconnected: they follow the shared clock, not the link. */
	t_us = hm_clock_us(CLOCK_REALTIME);
	promo = agent_jobs_next_promotion_us(&a->jobs);
	if (promo <= t_us) {
		if (node_dir(a)) /* else retried within a second */
			agent_jobs_promote(&a->jobs, a->node_fd, t_us, &a->cfg.log);
	} else if (promo != INT64_MAX && now_ms + (promo - t_us) / 1000 + 1 < next) {
		next = now_ms + (promo - t_us) / 1000 + 1;
	}
	return next <= now_ms ? 0 : (int)(next - now_ms);
}

static void on_socket(agent_t *a, short revents, int64_t now_ms)
{
	agent_conn_t *c = &a->conn;

	if (c->state == CONN_CONNECTING) {
		if (agent_conn_connected(c, now_ms))
			send_hello(a, now_ms);
		return;
	}
	if ((revents & POLLOUT) && !agent_conn_flush(c, now_ms))
		return;
	if (revents & (POLLIN | POLLHUP | POLLERR))
		agent_conn_read(c, a->cfg.trusted, a->cfg.ntrusted, now_ms, on_msg, a);
}

static void read_topology(agent_t *a)
{
	hm_err_t err = {0};

	if (hm_hwnode_read(a->cfg.topo_xml[0] ? a->cfg.topo_xml : NULL, NULL, &a->topo, &err) !=
	    HM_OK) {
		hm_logf(&a->cfg.log, HM_LOG_ERROR,
			"node topology: %s; reported as unknown (every GPU on NIC 0)", err.msg);
		return;
	}
	a->has_topo = true;
	hm_logf(&a->cfg.log, HM_LOG_INFO, "node topology: %d GPUs, %d NICs%s%s%s", a->topo.ngpus,
		a->topo.nnics, a->topo.nnics ? " (first " : "",
		a->topo.nnics ? a->topo.nics[0].name : "", a->topo.nnics ? ")" : "");
	if (a->topo.nnics)
		hm_logf(&a->cfg.log, HM_LOG_VERBOSE, "NIC 0 is %s, NUMA %d, %lld bit/s",
			a->topo.nics[0].pci, a->topo.nics[0].numa,
			(long long)a->topo.nics[0].speed_bps);
}

static void listen_rack(agent_t *a)
{
	hm_err_t err = {0};

	if (agent_rack_follow(&a->rack, a->conn.fd, a->cfg.conf.rack_port, &err) != HM_OK)
		hm_logf(&a->cfg.log, HM_LOG_ERROR,
			"%s; this node cannot keep its rack scheduled through a cut from the "
			"coordinator as its leader",
			err.msg);
	else
		hm_logf(&a->cfg.log, HM_LOG_VERBOSE, "rack channel on %s:%d",
			inet_ntoa((struct in_addr){a->rack.listen_ip}), a->rack.port);
}

static void *agent_main(void *arg)
{
	agent_t *a = arg;

	char addrs[HM_COORD_ADDRS_MAX * HM_COORD_ADDR_MAX];

	hm_coord_addrs_format(&a->cfg.addrs, addrs, sizeof(addrs));
	hm_logf(&a->cfg.log, HM_LOG_INFO,
		"started (version %s): coordinator %s port %d, RunDir %s, heartbeat %d ms",
		PACKAGE_VERSION, addrs, a->cfg.conf.listen_port, a->cfg.conf.run_dir,
		a->heartbeat_ms);
	read_topology(a);
	node_dir(a);
	while (!atomic_load(&a->stop)) {
		int64_t now_ms = hm_proto_now_ms();
		int timeout = run_timers(a, now_ms);
		struct pollfd pfd[2 + 2 + AGENT_RACK_PEERS_MAX] = {
		    {.fd = a->wake_fd, .events = POLLIN},
		    {.fd = a->conn.fd, .events = agent_conn_events(&a->conn)}};
		int n, nr = agent_rack_pollfds(&a->rack, pfd + 2, 2 + AGENT_RACK_PEERS_MAX);

		if (atomic_load(&a->stop))
			break;
		n = poll(pfd, 2 + (nfds_t)nr, timeout);
		if (n < 0 && errno != EINTR) {
			hm_logf(&a->cfg.log, HM_LOG_ERROR, "poll: %s", strerror(errno));
			usleep(100000);
			continue;
		}
		if (n > 0 && pfd[0].revents) {
			uint64_t v;

			if (read(a->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				usleep(1000);
		}
		if (n > 0 && a->conn.fd >= 0 && pfd[1].fd == a->conn.fd && pfd[1].revents)
			on_socket(a, pfd[1].revents, hm_proto_now_ms());
		if (n > 0 && nr > 0) {
			agent_rack_ctx_t x = rack_ctx(a);

			agent_rack_events(&a->rack, &x, pfd + 2, nr, hm_proto_now_ms());
		}
	}
	agent_rack_free(&a->rack);
	agent_conn_free(&a->conn);
	agent_jobs_free(&a->jobs);
	agent_metrics_remove(a->cfg.conf.metrics_dir, a->cfg.node); /* its jobs' series go */
	if (a->node_fd >= 0)
		close(a->node_fd);
	hm_logf(&a->cfg.log, HM_LOG_INFO, "stopped");
	agent_release(a);
	return NULL;
}

hm_rc_t agent_start(const agent_cfg_t *cfg, agent_t **out, hm_err_t *err)
{
	agent_t *a = calloc(1, sizeof(*a));
	sigset_t all, old;
	int prc;

	*out = NULL;
	if (!a)
		return hm_err_set(err, HM_ERR_NOMEM, "out of memory");
	a->cfg = *cfg;
	a->node_fd = -1;
	a->heartbeat_ms = cfg->conf.heartbeat_ms;
	a->valid_ms = cfg->conf.agent_valid_ms;
	a->lead_ms = cfg->conf.update_lead_ms;
	atomic_init(&a->stop, false);
	atomic_init(&a->refs, 2);
	agent_conn_init(&a->conn, (size_t)cfg->conf.max_message_bytes, &a->cfg.log);
	a->conn.addrs = &a->cfg.addrs;
	agent_rack_init(&a->rack, a->cfg.node, (size_t)cfg->conf.max_message_bytes, &a->cfg.log);
	if ((a->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		hm_err_set(err, HM_ERR_IO, "eventfd: %s", strerror(errno));
		free(a);
		return HM_ERR_IO;
	}
	/* The host's signals (slurmd's SIGTERM, SIGHUP, ...) must never land in our thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	prc = pthread_create(&a->thread, NULL, agent_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (prc != 0) {
		hm_err_set(err, HM_ERR_IO, "pthread_create: %s", strerror(prc));
		agent_conn_free(&a->conn);
		close(a->wake_fd);
		free(a);
		return HM_ERR_IO;
	}
	*out = a;
	return HM_OK;
}

hm_rc_t agent_stop(agent_t *a, int bound_ms)
{
	struct timespec deadline;
	uint64_t one = 1;
	int prc;

	if (!a)
		return HM_OK;
	atomic_store(&a->stop, true);
	if (write(a->wake_fd, &one, sizeof(one)) < 0) {
		/* The counter is saturated: the thread has a wake-up pending anyway. */
	}
	deadline = hm_clock_deadline(CLOCK_REALTIME, bound_ms); /* the join's clock */
	prc = pthread_timedjoin_np(a->thread, NULL, &deadline);
	if (prc != 0) {
		pthread_detach(a->thread);
		agent_release(a);
		return HM_ERR_TIMEOUT;
	}
	agent_release(a);
	return HM_OK;
}
