/* The rack channel: a leader bridges a cut from the coordinator (agent_rack.h). */
#define _GNU_SOURCE /* accept4 */
#include "agent_rack.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "hm_clock.h"
#include "hm_harmonics_tier.h"

#define CUT_REASON       "rack cut off from the coordinator: "
#define REFUSE_BURST     5 /* refused connections logged per window, then counted */
#define REFUSE_WINDOW_MS 60000

void agent_rack_init(agent_rack_t *r, const char *node, size_t max_frame, const hm_logger_t *lg)
{
	memset(r, 0, sizeof(*r));
	r->lg = lg;
	r->node = node;
	r->listen_fd = -1;
	r->max_frame = max_frame;
	for (int k = 0; k < AGENT_RACK_PEERS_MAX; k++) {
		agent_conn_init(&r->peers[k], max_frame, lg);
		r->peers[k].what = "rack member";
		r->peers[k].level_floor = HM_LOG_VERBOSE; /* members come and go */
	}
	agent_conn_init(&r->up, max_frame, lg);
	r->up.what = "rack leader";
	r->up.level_floor = HM_LOG_INFO;
}

void agent_rack_free(agent_rack_t *r)
{
	if (r->listen_fd >= 0)
		close(r->listen_fd);
	r->listen_fd = -1;
	for (int k = 0; k < AGENT_RACK_PEERS_MAX; k++)
		agent_conn_free(&r->peers[k]);
	agent_conn_free(&r->up);
	hm_rack_req_free(&r->last);
	hm_rack_rep_free(&r->last_rep);
	hm_aw_msg_free(&r->push);
	r->has_last = r->has_push = false;
}

hm_rc_t agent_rack_listen(agent_rack_t *r, const char *ip, int port, hm_err_t *err)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int fd, one = 1;

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return hm_err_set(err, HM_ERR_INVAL, "rack channel: '%s' is not an IPv4 address",
				  ip);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return hm_err_set(err, HM_ERR_IO, "rack channel: socket: %s", strerror(errno));
	sa.sin_port = htons((uint16_t)port);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
		hm_rc_t rc = hm_err_set(err, HM_ERR_IO, "rack channel: %s:%d: %s (RackPort=)", ip,
					port, strerror(errno));
		close(fd);
		return rc;
	}
	if (r->listen_fd >= 0)
		close(r->listen_fd);
	r->listen_fd = fd;
	r->listen_ip = sa.sin_addr.s_addr;
	r->port = ntohs(sa.sin_port);
	return HM_OK;
}

hm_rc_t agent_rack_follow(agent_rack_t *r, int fd, int port, hm_err_t *err)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char ip[INET_ADDRSTRLEN];

	if (getsockname(fd, (struct sockaddr *)&sa, &sl) != 0 || sa.sin_family != AF_INET)
		return hm_err_set(err, HM_ERR_IO,
				  "rack channel: the coordinator connection's "
				  "address: %s",
				  sl && sa.sin_family != AF_INET ? "not IPv4" : strerror(errno));
	if (r->listen_fd >= 0 && r->listen_ip == sa.sin_addr.s_addr)
		return HM_OK;
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
	if (port == 0 && r->port > 0 && agent_rack_listen(r, ip, r->port, err) == HM_OK)
		return HM_OK; /* the port it told the coordinator before */
	return agent_rack_listen(r, ip, port, err);
}

void agent_rack_keep(agent_rack_t *r, const hm_rack_req_t *q, const hm_rack_rep_t *rep,
		     int64_t now_ms)
{
	hm_rack_req_t c;
	hm_rack_dec_t *dec = NULL;
	hm_err_t err = {0};

	if (hm_rack_req_copy(&c, q, &err) != HM_OK ||
	    (rep->ndec && !(dec = malloc(sizeof(*dec) * (size_t)rep->ndec)))) {
		hm_rack_req_free(&c);
		hm_logf(r->lg, HM_LOG_ERROR, "rack round %lu: out of memory to keep it", q->round);
		return;
	}
	hm_rack_req_free(&r->last);
	hm_rack_rep_free(&r->last_rep);
	r->last = c;
	r->last_rep = *rep;
	r->last_rep.dec = dec;
	if (dec)
		memcpy(dec, rep->dec, sizeof(*dec) * (size_t)rep->ndec);
	r->has_last = true;
	r->last_ms = now_ms;
}

/* ---- what is pushed, and how a node takes it ------------------------------------ */

/* A rack_assign's rack members: the rack as told, sent by its leader node. */
static void leader_rack(hm_aw_msg_t *m, const hm_aw_rack_t *rack, const char *node)
{
	m->has_rack = true;
	m->rack = *rack;
	snprintf(m->rack.leader, sizeof(m->rack.leader), "%s", node);
	snprintf(m->rack.role, sizeof(m->rack.role), "leader");
	m->rack.leader_addr[0] = '\0';
	m->rack.has_members = false; /* the leader's to know */
	m->rack.nmembers = 0;
}

hm_rc_t agent_rack_push_build(const hm_rack_req_t *q, const hm_rack_rep_t *rep, const char *node,
			      const hm_aw_rack_t *rack, int64_t effective_us, hm_aw_msg_t *push,
			      hm_err_t *err)
{
	int n = 0, d = 0, chunks;
	hm_rc_t rc;

	for (int i = 0; i < q->njobs; i++)
		n += q->jobs[i].job_id > 0;
	chunks = (n + HM_AW_MAX_JOBS - 1) / HM_AW_MAX_JOBS;
	if (chunks > HM_AW_MAX_NODES)
		return hm_err_set(err, HM_ERR_RANGE, "rack_assign: %d jobs (at most %d)", n,
				  HM_AW_MAX_NODES * HM_AW_MAX_JOBS);
	memset(push, 0, sizeof(*push));
	push->op = HM_AW_RACK_ASSIGN;
	if ((rc = hm_aw_alloc_assign(push, chunks, err)) != HM_OK)
		return rc;
	for (int c = 0; c < chunks; c++)
		snprintf(push->assign[c].node, sizeof(push->assign[c].node), "%s", node);
	n = 0;
	for (int i = 0; i < q->njobs; i++) {
		const hm_rack_job_t *j = &q->jobs[i];
		const hm_rack_dec_t *dec = NULL;
		hm_aw_job_assign_t *e;
		hm_aw_sched_t *s;

		if (!j->cross && d < rep->ndec && rep->dec[d].idx == j->idx)
			dec = &rep->dec[d++];
		if (j->job_id <= 0)
			continue;
		e = &push->assign[n / HM_AW_MAX_JOBS].jobs[n % HM_AW_MAX_JOBS];
		push->assign[n / HM_AW_MAX_JOBS].njobs++;
		n++;
		e->job_id = j->job_id;
		if (!dec) {
			snprintf(e->reason, sizeof(e->reason), CUT_REASON "%s runs free",
				 j->cross ? "a cross-rack job" : "a job without a decision");
			continue;
		}
		e->scheduled = true;
		s = &e->cur;
		snprintf(s->policy, sizeof(s->policy), "harmonics");
		if (dec->hold && dec->P_s > 0) {
			s->period_us = llround(dec->P_s * 1e6);
			s->shift_us = llround(fmod(dec->s_s, dec->P_s) * 1e6);
			if (s->shift_us >= s->period_us)
				s->shift_us = 0;
			s->guard_us = llround((dec->guard_s > 0 ? dec->guard_s : q->guard_s) * 1e6);
		}
	}
	leader_rack(push, rack, node);
	push->effective_us = effective_us;
	return HM_OK;
}

static const hm_aw_job_assign_t *pushed(const hm_aw_msg_t *push, long job_id)
{
	for (int c = 0; c < push->nassign; c++)
		for (int k = 0; k < push->assign[c].njobs; k++)
			if (push->assign[c].jobs[k].job_id == job_id)
				return &push->assign[c].jobs[k];
	return NULL;
}

static bool same_slots(const hm_aw_sched_t *a, const hm_aw_sched_t *b)
{
	return a->period_us == b->period_us && a->shift_us == b->shift_us &&
	       a->origin_us == b->origin_us && a->guard_us == b->guard_us;
}

void agent_rack_merge(const agent_jobs_t *js, const hm_aw_msg_t *push, const char *node,
		      hm_aw_node_assign_t *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->node, sizeof(out->node), "%s", node);
	for (int i = 0; i < js->njobs && out->njobs < HM_AW_MAX_JOBS; i++) {
		const agent_job_t *j = js->jobs[i];
		const hm_aw_job_assign_t *p;
		hm_aw_job_assign_t *e;
		hm_aw_sched_t s, in_force;

		if (!j->listed)
			continue;
		p = pushed(push, j->job_id);
		e = &out->jobs[out->njobs++];
		*e = j->decision;
		if (!p || !p->scheduled) {
			e->scheduled = e->has_next = false;
			snprintf(e->reason, sizeof(e->reason), "%s",
				 p ? p->reason : CUT_REASON "not among its leader's jobs");
			continue;
		}
		s = p->cur;
		if (!e->scheduled) { /* from unscheduled: at once (contract C) */
			e->scheduled = true;
			e->reason[0] = '\0';
			e->has_next = false;
			e->cur = s;
			e->cur.epoch = 1;
			continue;
		}
		/* Keep the class and the policy of the decision in force. */
		in_force = e->has_next ? e->next : e->cur;
		s.prio = in_force.prio;
		snprintf(s.policy, sizeof(s.policy), "%s", in_force.policy);
		if (same_slots(&in_force, &s))
			continue;
		s.epoch = in_force.epoch < HM_AW_EPOCH_MAX ? in_force.epoch + 1 : in_force.epoch;
		e->cur = in_force;
		e->next = s;
		e->has_next = true;
		e->next_effective_us = push->effective_us;
	}
}

/* ---- the leader: solve and push during a cut ------------------------------------- */

/* The last request again with the cross-rack jobs free, from the last decisions. */
static bool cut_solve(agent_rack_t *r, const agent_rack_ctx_t *x, hm_err_t *err)
{
	hm_rack_req_t q;
	hm_rack_rep_t rep = {0};
	hm_aw_msg_t push;
	int d = 0, held = 0;
	bool ok = false;

	if (hm_rack_req_copy(&q, &r->last, err) != HM_OK)
		return false;
	for (int i = 0; i < q.njobs; i++) {
		hm_rack_job_t *j = &q.jobs[i];
		const hm_rack_dec_t *p = NULL;

		if (j->cross) {
			j->hold = false;
			j->P_s = j->s_s = 0;
			continue;
		}
		if (d < r->last_rep.ndec && r->last_rep.dec[d].idx == j->idx)
			p = &r->last_rep.dec[d++];
		j->prev_P_s = p && p->hold ? p->P_s : 0;
		j->prev_s_s = p && p->hold ? p->s_s : 0;
	}
	if (hm_tier_rack_solve(&q, &rep, err) != HM_OK)
		goto out;
	if (agent_rack_push_build(&q, &rep, r->node, &x->role->last,
				  hm_clock_us(CLOCK_REALTIME) + (int64_t)x->lead_ms * 1000, &push,
				  err) != HM_OK)
		goto out;
	hm_aw_msg_free(&r->push);
	r->push = push;
	r->has_push = true;
	hm_rack_rep_free(&r->last_rep);
	r->last_rep = rep;
	rep.dec = NULL;
	for (int i = 0; i < r->last_rep.ndec; i++)
		held += r->last_rep.dec[i].hold;
	r->cut_rounds++;
	hm_logf(r->lg, r->cut_rounds == 1 ? HM_LOG_INFO : HM_LOG_VERBOSE,
		"rack %s cut off from the coordinator: Local Scheduler solved here: %d jobs, "
		"%d local (%d holding slots), cross-rack jobs free (%lu cut rounds so far)",
		x->role->last.rack, q.njobs, r->last_rep.ndec, held, r->cut_rounds);
	ok = true;
out:
	hm_rack_req_free(&q);
	hm_rack_rep_free(&rep);
	return ok;
}

/* m to every welcomed member; returns how many took it without failing. */
static int send_members(agent_rack_t *r, hm_aw_msg_t *m, int64_t now_ms)
{
	int sent = 0;

	for (int k = 0; k < AGENT_RACK_PEERS_MAX; k++) {
		agent_conn_t *c = &r->peers[k];
		hm_err_t err = {0};

		if (c->fd < 0 || c->state != CONN_READY)
			continue;
		if (agent_conn_send(c, m, now_ms, &err) != HM_OK)
			agent_conn_fail(c, now_ms, false, HM_LOG_ERROR, "%s", err.msg);
		else
			sent += agent_conn_flush(c, now_ms);
	}
	return sent;
}

static int push_all(agent_rack_t *r, const agent_rack_ctx_t *x, int64_t now_ms)
{
	int sent = send_members(r, &r->push, now_ms);

	x->apply(x->arg, &r->push);
	return sent;
}

/* The cut is over: members back-off no longer, they connect to the coordinator now. */
static int tell_reconnect(agent_rack_t *r, const agent_rack_ctx_t *x, int64_t now_ms)
{
	hm_aw_msg_t m;

	memset(&m, 0, sizeof(m));
	m.op = HM_AW_RACK_ASSIGN;
	m.reconnect = true;
	leader_rack(&m, &x->role->last, r->node);
	return send_members(r, &m, now_ms);
}

static int64_t leader_tick(agent_rack_t *r, const agent_rack_ctx_t *x, int64_t now_ms)
{
	bool leads = x->role->known && strcmp(x->role->last.role, "leader") == 0;
	hm_err_t err = {0};

	if (!leads || x->coordinator_ready) {
		/* Roles come from the coordinator: a cut ends when it is back. */
		if (r->cut)
			hm_logf(r->lg, HM_LOG_INFO,
				"rack %s: the coordinator is back after %lu cut rounds%s; %d "
				"members told to reconnect now",
				x->role->last.rack, r->cut_rounds,
				leads ? "" : " (this node no longer leads)",
				tell_reconnect(r, x, now_ms));
		r->cut = r->has_push = false;
		r->cut_rounds = 0;
		return INT64_MAX;
	}
	if (!r->cut) {
		/* Without epochs (EpochLength=0) rounds follow job events: any request. */
		if (!r->has_last ||
		    (x->epoch_ms > 0 &&
		     now_ms - r->last_ms > AGENT_RACK_FRESH_EPOCHS * (int64_t)x->epoch_ms))
			return INT64_MAX; /* nothing recent to go on: its jobs run free */
		r->cut = true;
		r->cut_since_ms = r->next_solve_ms = now_ms;
		hm_logf(r->lg, HM_LOG_INFO,
			"rack %s: the coordinator is out of reach; this leader keeps the rack's "
			"local jobs scheduled for at most %lld s",
			x->role->last.rack, (long long)(x->hold_ms / 1000));
	}
	if (now_ms - r->cut_since_ms > x->hold_ms) {
		if (r->has_push)
			hm_logf(r->lg, HM_LOG_INFO,
				"rack %s: cut for AssignmentValidity: no more pushes, its jobs run "
				"free",
				x->role->last.rack);
		r->has_push = false;
		return INT64_MAX;
	}
	if (now_ms >= r->next_solve_ms) {
		if (cut_solve(r, x, &err))
			r->next_push_ms = now_ms;
		else
			hm_logf(r->lg, HM_LOG_ERROR, "rack %s cut round: %s", x->role->last.rack,
				err.msg);
		r->next_solve_ms = x->epoch_ms > 0 ? now_ms + x->epoch_ms : INT64_MAX;
	}
	if (r->has_push && now_ms >= r->next_push_ms) {
		int sent = push_all(r, x, now_ms);

		hm_logf(r->lg, HM_LOG_DEBUG, "rack %s: decisions pushed to %d members",
			x->role->last.rack, sent);
		r->next_push_ms = now_ms + x->heartbeat_ms;
	}
	return r->next_push_ms < r->next_solve_ms && r->has_push ? r->next_push_ms
								 : r->next_solve_ms;
}

/* ---- the member: its connection to the leader ------------------------------------ */

/* "host:port" or "[v6]:port" into host and port; false when malformed. */
static bool split_addr(const char *addr, char *host, size_t len, int *port)
{
	const char *colon = strrchr(addr, ':');
	char *end;
	long p;
	size_t hl;

	if (!colon || colon == addr)
		return false;
	p = strtol(colon + 1, &end, 10);
	if (*end || p < 1 || p > 65535)
		return false;
	hl = (size_t)(colon - addr);
	if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
		addr++;
		hl -= 2;
	}
	if (hl == 0 || hl >= len)
		return false;
	memcpy(host, addr, hl);
	host[hl] = '\0';
	*port = (int)p;
	return true;
}

static int64_t member_tick(agent_rack_t *r, const agent_rack_ctx_t *x, int64_t now_ms)
{
	const hm_aw_rack_t *k = &x->role->last;
	bool want = x->role->known && strcmp(k->role, "member") == 0 && k->leader_addr[0] &&
		    strcmp(k->leader, r->node) != 0;
	char host[HM_AW_ADDR_MAX];
	int port;

	if (!want || strcmp(r->up_addr, k->leader_addr) != 0) {
		if (r->up.fd >= 0)
			agent_conn_close(&r->up);
		agent_backoff_reset(&r->up.backoff);
		r->up.retry_at_ms = now_ms;
		snprintf(r->up_addr, sizeof(r->up_addr), "%s", want ? k->leader_addr : "");
		if (!want)
			return INT64_MAX;
	}
	switch (r->up.state) {
	case CONN_IDLE:
		if (now_ms < r->up.retry_at_ms)
			return r->up.retry_at_ms;
		if (!split_addr(r->up_addr, host, sizeof(host), &port)) {
			agent_conn_fail(&r->up, now_ms, false, HM_LOG_ERROR,
					"leader_addr '%s' is not host:port", r->up_addr);
			return r->up.retry_at_ms;
		}
		if (!agent_conn_start(&r->up, host, port, x->conn_timeout_ms, now_ms))
			return r->up.retry_at_ms;
		return r->up.deadline_ms;
	case CONN_CONNECTING:
	case CONN_HELLO:
		if (now_ms >= r->up.deadline_ms) {
			agent_conn_fail(&r->up, now_ms, false, HM_LOG_ERROR, "%s",
					r->up.state == CONN_CONNECTING ? "connect timed out"
								       : "no agent_welcome");
			return r->up.retry_at_ms;
		}
		return r->up.deadline_ms;
	case CONN_READY:
		break;
	}
	return INT64_MAX;
}

int64_t agent_rack_tick(agent_rack_t *r, const agent_rack_ctx_t *x, int64_t now_ms)
{
	int64_t next = member_tick(r, x, now_ms), t;

	/* Members that never said hello, or do not read, give their slot back. */
	for (int k = 0; k < AGENT_RACK_PEERS_MAX; k++) {
		agent_conn_t *c = &r->peers[k];
		int64_t stall_ms = c->out_since_ms + x->conn_timeout_ms;

		if (c->fd >= 0 && c->state == CONN_HELLO) {
			if (now_ms >= c->deadline_ms)
				agent_conn_close(c);
			else if (c->deadline_ms < next)
				next = c->deadline_ms;
		}
		if (c->fd >= 0 && c->out_off < c->out_len) {
			if (now_ms >= stall_ms)
				agent_conn_fail(c, now_ms, false, HM_LOG_ERROR,
						"not reading (a frame unsent for %d ms)",
						x->conn_timeout_ms);
			else if (stall_ms < next)
				next = stall_ms;
		}
	}
	t = leader_tick(r, x, now_ms);
	return t < next ? t : next;
}

/* ---- poll ------------------------------------------------------------------------ */

int agent_rack_pollfds(agent_rack_t *r, struct pollfd *pfd, int max)
{
	int n = 0;

	if (r->listen_fd >= 0 && n < max)
		pfd[n++] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
	if (r->up.fd >= 0 && n < max)
		pfd[n++] = (struct pollfd){.fd = r->up.fd, .events = agent_conn_events(&r->up)};
	for (int k = 0; k < AGENT_RACK_PEERS_MAX && n < max; k++)
		if (r->peers[k].fd >= 0)
			pfd[n++] = (struct pollfd){.fd = r->peers[k].fd,
						   .events = agent_conn_events(&r->peers[k])};
	return n;
}

const char *agent_rack_admit(const agent_rack_t *r, const agent_role_t *role, uint32_t ip,
			     char *why, size_t len)
{
	const hm_aw_rack_t *k = &role->last;
	int listed = 0, open = 0, cap = AGENT_RACK_PER_ADDR_MAX, free_slots = 0;

	if (!role->known || strcmp(k->role, "leader") != 0) {
		snprintf(why, len, "this node does not lead its rack");
		return why;
	}
	for (int i = 0; i < k->nmembers; i++)
		listed += k->member_ip[i] == ip;
	if (k->has_members && !listed) {
		snprintf(why, len, "not the address of an agent of rack %s", k->rack);
		return why;
	}
	if (k->has_members)
		cap = listed + 1;
	for (int i = 0; i < AGENT_RACK_PEERS_MAX; i++) {
		open += r->peers[i].fd >= 0 && r->peer_ip[i] == ip;
		free_slots += r->peers[i].fd < 0;
	}
	if (open >= cap) {
		snprintf(why, len, "%d connections from that address already (at most %d)", open,
			 cap);
		return why;
	}
	if (!free_slots) {
		snprintf(why, len, "%d members connected already", AGENT_RACK_PEERS_MAX);
		return why;
	}
	return NULL;
}

static void accept_members(agent_rack_t *r, const agent_rack_ctx_t *x, int64_t now_ms)
{
	for (;;) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(r->listen_fd, (struct sockaddr *)&sa, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC),
		    k = 0;
		char why[128];
		unsigned long dropped = 0;

		if (fd < 0)
			return; /* EAGAIN, or a connection that went away: nothing to do */
		if (agent_rack_admit(r, x->role, sa.sin_addr.s_addr, why, sizeof(why))) {
			r->refused++;
			if (hm_log_rate_ok(&r->refuse_rate, now_ms, REFUSE_BURST, REFUSE_WINDOW_MS,
					   &dropped))
				hm_logf(r->lg, HM_LOG_INFO,
					"rack channel: refused a connection from %s:%u: %s (%lu "
					"more refused since the last line)",
					inet_ntoa(sa.sin_addr), ntohs(sa.sin_port), why, dropped);
			close(fd);
			continue;
		}
		while (k < AGENT_RACK_PEERS_MAX && r->peers[k].fd >= 0)
			k++;
		agent_conn_close(&r->peers[k]);
		r->peers[k].fd = fd;
		r->peers[k].state = CONN_HELLO;
		r->peers[k].deadline_ms = now_ms + AGENT_RACK_HELLO_MS;
		r->peer_node[k][0] = '\0';
		r->peer_ip[k] = sa.sin_addr.s_addr;
		snprintf(r->peers[k].peer, sizeof(r->peers[k].peer), "%s:%u",
			 inet_ntoa(sa.sin_addr), ntohs(sa.sin_port));
	}
}

typedef struct {
	agent_rack_t *r;
	const agent_rack_ctx_t *x;
	agent_conn_t *c;
	int k;
	int64_t now_ms;
} rack_ev_t;

/* A member's frame at its leader: only its hello. */
static bool on_member_msg(void *arg, const hm_aw_msg_t *m)
{
	rack_ev_t *v = arg;
	hm_aw_msg_t w = {.op = HM_AW_WELCOME, .re = m->seq, .ok = true};
	hm_err_t err = {0};

	if (m->op != HM_AW_HELLO || v->c->state != CONN_HELLO) {
		agent_conn_fail(v->c, v->now_ms, false, HM_LOG_VERBOSE, "%s from %s",
				hm_aw_op_name(m->op), v->c->peer);
		return false;
	}
	snprintf(v->r->peer_node[v->k], sizeof(v->r->peer_node[v->k]), "%s", m->node);
	w.heartbeat_ms = v->x->heartbeat_ms;
	w.valid_ms = v->x->valid_ms;
	w.lead_ms = v->x->lead_ms;
	if (agent_conn_send(v->c, &w, v->now_ms, &err) != HM_OK) {
		agent_conn_fail(v->c, v->now_ms, false, HM_LOG_ERROR, "%s", err.msg);
		return false;
	}
	v->c->state = CONN_READY;
	hm_logf(v->r->lg, HM_LOG_VERBOSE, "rack channel: member %s connected from %s", m->node,
		v->c->peer);
	if (v->r->cut && v->r->has_push &&
	    agent_conn_send(v->c, &v->r->push, v->now_ms, &err) != HM_OK)
		hm_logf(v->r->lg, HM_LOG_ERROR, "rack channel: %s", err.msg);
	return agent_conn_flush(v->c, v->now_ms);
}

/* The leader's frame at a member: its welcome, then its pushes. */
static bool on_leader_msg(void *arg, const hm_aw_msg_t *m)
{
	rack_ev_t *v = arg;
	agent_conn_t *c = &v->r->up;

	if (m->op == HM_AW_WELCOME && c->state == CONN_HELLO && m->re == c->hello_seq && m->ok) {
		c->state = CONN_READY;
		agent_backoff_reset(&c->backoff);
		hm_log_once_clear(&c->once);
		hm_logf(v->r->lg, HM_LOG_VERBOSE, "rack %s: connected to its leader %s",
			v->x->role->last.rack, c->peer);
		return true;
	}
	if (m->op == HM_AW_RACK_ASSIGN && c->state == CONN_READY) {
		/* The coordinator's word wins while it is reachable. */
		if (v->x->coordinator_ready)
			return true;
		if (m->reconnect)
			v->x->reconnect(v->x->arg);
		else
			v->x->apply(v->x->arg, m);
		return true;
	}
	agent_conn_fail(c, v->now_ms, false, HM_LOG_ERROR, "%s out of turn", hm_aw_op_name(m->op));
	return false;
}

static void conn_events(agent_conn_t *c, short revents, rack_ev_t *v,
			bool (*on_msg)(void *, const hm_aw_msg_t *))
{
	if ((revents & POLLOUT) && !agent_conn_flush(c, v->now_ms))
		return;
	if (revents & (POLLIN | POLLHUP | POLLERR))
		agent_conn_read(c, v->x->trusted, v->x->ntrusted, v->now_ms, on_msg, v);
}

static void send_member_hello(agent_rack_t *r, const agent_rack_ctx_t *x, int64_t now_ms)
{
	hm_aw_msg_t m;
	hm_err_t err = {0};

	memset(&m, 0, sizeof(m));
	m.op = HM_AW_HELLO;
	snprintf(m.node, sizeof(m.node), "%s", r->node);
	snprintf(m.agent_version, sizeof(m.agent_version), "%s", PACKAGE_VERSION);
	if (agent_conn_send(&r->up, &m, now_ms, &err) != HM_OK) {
		agent_conn_fail(&r->up, now_ms, false, HM_LOG_ERROR, "%s", err.msg);
		return;
	}
	r->up.hello_seq = m.seq;
	r->up.state = CONN_HELLO;
	r->up.deadline_ms = now_ms + x->conn_timeout_ms;
	agent_conn_flush(&r->up, now_ms);
}

void agent_rack_events(agent_rack_t *r, const agent_rack_ctx_t *x, const struct pollfd *pfd, int n,
		       int64_t now_ms)
{
	rack_ev_t v = {.r = r, .x = x, .now_ms = now_ms};

	for (int i = 0; i < n; i++) {
		if (!pfd[i].revents || pfd[i].fd < 0)
			continue;
		if (pfd[i].fd == r->listen_fd) {
			accept_members(r, x, now_ms);
		} else if (pfd[i].fd == r->up.fd) {
			v.c = &r->up;
			if (r->up.state == CONN_CONNECTING) {
				if (agent_conn_connected(&r->up, now_ms))
					send_member_hello(r, x, now_ms);
			} else {
				conn_events(&r->up, pfd[i].revents, &v, on_leader_msg);
			}
		} else {
			for (int k = 0; k < AGENT_RACK_PEERS_MAX; k++)
				if (r->peers[k].fd == pfd[i].fd) {
					v.c = &r->peers[k];
					v.k = k;
					conn_events(&r->peers[k], pfd[i].revents, &v,
						    on_member_msg);
					break;
				}
		}
	}
}
