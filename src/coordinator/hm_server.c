/*
 * The coordinator's socket service: one I/O thread (epoll over every connection,
 * non-blocking reads and writes, deadlines, parked registers, pushes to node
 * agents) and a pool of workers that unseal, answer and seal (hm_server_ops.c).
 * epoll, not poll: with an agent per node, poll's per-call cost over thousands
 * of sockets was most of the thread's time (perf, bench_tiers at 1,024 racks).
 * A slow or silent client holds only its own connection; munge and the engine
 * run on the workers, never on the I/O thread.
 */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "hm_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hm_clock.h"
#include "hm_coord_nodes.h"
#include "hm_log.h"
#include "hm_server_io.h"

hm_coord_t *hm_srv_coord(const hm_server_t *s)
{
	return s->coord;
}

const hm_conf_t *hm_srv_conf(const hm_server_t *s)
{
	return &s->conf;
}

uint32_t hm_srv_slurm_uid(const hm_server_t *s)
{
	return s->slurm_uid;
}

int hm_srv_port(const hm_server_t *s)
{
	return s->port;
}

bool hm_srv_private_jobs(const hm_server_t *s)
{
	return s->private_jobs;
}

void hm_server_set_operator(hm_server_t *srv, const hm_server_operator_t *op)
{
	atomic_store(&srv->op, op);
}

bool hm_srv_is_operator(hm_server_t *s, uint32_t uid)
{
	const hm_server_operator_t *op = atomic_load(&s->op);

	return op && op->is_operator && op->is_operator(uid, op->arg);
}

bool hm_srv_coordinates(hm_server_t *s, uint32_t uid, const char *account)
{
	const hm_server_operator_t *op = atomic_load(&s->op);

	return op && op->coordinates && account && *account &&
	       op->coordinates(uid, account, op->arg);
}

static void poke(hm_server_t *s, char what)
{
	/* The pipe is non-blocking: a full pipe already wakes the I/O thread. */
	if (write(s->wake[1], &what, 1) < 0 && errno != EAGAIN)
		hm_log(HM_LOG_ERROR, "server wake: %s", strerror(errno));
}

static void flag_and_poke(hm_server_t *s, bool *flag, char what)
{
	pthread_mutex_lock(&s->mu);
	*flag = true;
	pthread_mutex_unlock(&s->mu);
	poke(s, what);
}

/* The engine changed assignments (its mutex is held: only flag and wake). */
static void on_notify(void *arg)
{
	hm_server_t *s = arg;

	flag_and_poke(s, &s->notified, 'n');
}

/* A rack round has requests for leaders (the engine's mutex is released). */
static void on_rack_round(void *arg)
{
	hm_server_t *s = arg;

	flag_and_poke(s, &s->racks_wanted, 'k');
}

/* ---- workers ------------------------------------------------------------------- */

static void *worker_main(void *arg)
{
	hm_server_t *s = arg;

	for (;;) {
		hm_srv_task_t *t;

		pthread_mutex_lock(&s->mu);
		while (!s->todo && !s->todo_agent && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		t = hm_srv_task_take(s);
		pthread_mutex_unlock(&s->mu);

		hm_srv_run_task(s, t);

		pthread_mutex_lock(&s->mu);
		hm_srv_task_append(&s->done, &s->done_tail, t);
		pthread_mutex_unlock(&s->mu);
		poke(s, 'r');
	}
	return NULL;
}

static void task_free(hm_srv_task_t *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nout; i++)
		free(t->out[i]);
	free(t->data);
	free(t);
}

/* Hand a task to the workers; the connection is busy until it comes back. */
static void submit(hm_server_t *s, conn_t *c, hm_srv_task_kind_t kind, char *data)
{
	hm_srv_task_t *t = calloc(1, sizeof(*t));

	if (!t) {
		hm_log(HM_LOG_ERROR, "server: out of memory; closing %s", c->peer);
		free(data);
		c->closing = true;
		return;
	}
	t->conn_id = c->id;
	t->ip = c->ip;
	hm_srv_addr_load(s, c->ip, 1);
	t->kind = kind;
	t->data = data;
	t->ses = c->ses;
	snprintf(t->peer, sizeof(t->peer), "%s", c->peer);
	snprintf(t->local, sizeof(t->local), "%s", c->local);
	if (kind == HM_TASK_RACK) {
		t->rack_idx = c->rack_idx;
		t->rack_round = c->rack_round;
		c->rack_idx = -1;
	}
	if (kind == HM_TASK_DECODED) {
		t->uid = c->park_uid;
		t->gid = c->park_gid;
		t->final = hm_mono_ms() >= c->park_deadline_ms;
		t->uid_held = c->uid_held;
		c->uid_held = false;
	}
	c->busy = true;
	pthread_mutex_lock(&s->mu);
	hm_srv_task_put(s, t, c->ses.agent);
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* ---- connections (I/O thread) ---------------------------------------------------- */

static conn_t *conn_by_id(hm_server_t *s, uint64_t id, int *idx)
{
	for (int i = 0; i < s->nconns; i++) {
		if (s->conns[i]->id == id) {
			if (idx)
				*idx = i;
			return s->conns[i];
		}
	}
	return NULL;
}

static void conn_drop(hm_server_t *s, int i)
{
	conn_t *c = s->conns[i];

	bool other = false;

	/* An agent that reconnected before its old connection timed out is not lost. */
	for (int k = 0; c->ses.agent && k < s->nconns; k++)
		other |= k != i && s->conns[k]->ses.agent &&
			 strcmp(s->conns[k]->ses.node, c->ses.node) == 0;
	if (c->ses.agent && !other)
		hm_coord_node_lost(s->coord, c->ses.node, hm_real_s());
	if (c->ses.agent)
		hm_coord_tier_node_gone(s->coord, c->ses.node);
	if (c->rack_idx >= 0)
		hm_coord_tier_fail(s->coord, c->rack_idx, c->rack_round);
	if (c->uid_held)
		hm_srv_uid_release(s, c->park_uid);
	if (s->epfd >= 0)
		(void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->rbuf);
	free(c->park_text);
	free(c->held);
	while (c->wq) {
		out_frame_t *f = c->wq;

		c->wq = f->next;
		free(f->cred);
		free(f);
	}
	free(c);
	s->conns[i] = s->conns[--s->nconns];
}

static void queue_frame(conn_t *c, char *cred)
{
	out_frame_t *f = calloc(1, sizeof(*f));
	size_t n = strlen(cred);

	if (!f) {
		free(cred);
		c->closing = true;
		return;
	}
	f->cred = cred;
	f->len = n;
	f->hdr[0] = (unsigned char)(n >> 24);
	f->hdr[1] = (unsigned char)(n >> 16);
	f->hdr[2] = (unsigned char)(n >> 8);
	f->hdr[3] = (unsigned char)n;
	if (c->wq_tail)
		c->wq_tail->next = f;
	else
		c->wq = f;
	c->wq_tail = f;
	c->nqueued++;
}

/* Write what the socket takes. -1: the peer is gone. */
static int conn_write(conn_t *c)
{
	while (c->wq) {
		out_frame_t *f = c->wq;
		const char *p;
		size_t left;
		ssize_t w;

		if (f->off < 4) {
			p = (const char *)f->hdr + f->off;
			left = 4 - f->off;
		} else {
			p = f->cred + (f->off - 4);
			left = f->len + 4 - f->off;
		}
		w = send(c->fd, p, left, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
		f->off += (size_t)w;
		if (f->off == f->len + 4) {
			c->wq = f->next;
			if (!c->wq)
				c->wq_tail = NULL;
			c->nqueued--;
			free(f->cred);
			free(f);
		}
	}
	return 0;
}

/* The events a connection waits for now: a frame when it is idle, room to write. */
static uint32_t conn_want(const conn_t *c)
{
	return (!c->busy && !c->closing && !c->park_text && !c->held ? EPOLLIN : 0) |
	       (c->wq ? EPOLLOUT : 0);
}

/* Register what it waits for (level-triggered: what poll would have asked). */
static bool conn_sync(hm_server_t *s, conn_t *c)
{
	struct epoll_event ev = {.events = conn_want(c), .data.ptr = c};

	if (ev.events == c->ev_mask)
		return true;
	if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
		hm_log(HM_LOG_ERROR, "server epoll %s: %s", c->peer, strerror(errno));
		return false;
	}
	c->ev_mask = ev.events;
	return true;
}

/* The listener in the interest set while connections may be added. */
static void arm_listener(hm_server_t *s)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->lfd};
	bool want = s->nconns < SRV_MAX_CONNS;

	if (want == s->lfd_armed)
		return;
	if (epoll_ctl(s->epfd, want ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, s->lfd, &ev) == 0)
		s->lfd_armed = want;
	else
		hm_log(HM_LOG_ERROR, "server epoll listener: %s", strerror(errno));
}

/* Silence limit of an agent: it beats every HeartbeatInterval and its files
   lapse AgentValidity after our last frame, so it counts as lost one beat later. */
static int64_t agent_silence_ms(const hm_server_t *s)
{
	return (int64_t)s->conf.agent_valid_ms + s->conf.heartbeat_ms;
}

static int64_t agent_deadline(const hm_server_t *s)
{
	return hm_mono_ms() + agent_silence_ms(s);
}

/* Read what is there; a full frame goes to the workers. -1: drop the connection. */
static int conn_read(hm_server_t *s, conn_t *c)
{
	while (!c->busy && !c->closing && !c->held) {
		ssize_t r;

		if (c->hgot < sizeof(c->hdr))
			r = recv(c->fd, c->hdr + c->hgot, sizeof(c->hdr) - c->hgot, MSG_DONTWAIT);
		else
			r = recv(c->fd, c->rbuf + c->got, c->need - c->got, MSG_DONTWAIT);
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
		if (r == 0) {
			if (c->ses.agent)
				hm_log(HM_LOG_INFO, "agent %s (%s) closed its connection",
				       c->ses.node, c->peer);
			else if (c->hgot || c->got)
				hm_log(HM_LOG_VERBOSE, "connection from %s closed mid-request",
				       c->peer);
			return -1;
		}
		if (c->hgot < sizeof(c->hdr)) {
			c->hgot += (size_t)r;
			if (c->hgot < sizeof(c->hdr))
				continue;
			c->need = ((size_t)c->hdr[0] << 24) | ((size_t)c->hdr[1] << 16) |
				  ((size_t)c->hdr[2] << 8) | c->hdr[3];
			if (c->need == 0 || c->need > (size_t)s->conf.max_message_bytes) {
				char why[128];

				snprintf(why, sizeof(why),
					 "frame length %zu (accepted: 1..%d bytes)", c->need,
					 s->conf.max_message_bytes);
				hm_srv_log_refusal(s, "refused connection from %s: %s", c->peer,
						   why);
				/* Answered (sealed by a worker), then closed: nothing more is read.
				 */
				c->hgot = c->need = 0;
				c->closing = true;
				submit(s, c, HM_TASK_REFUSE, strdup(why));
				return 0;
			}
			if (!(c->rbuf = malloc(c->need + 1)))
				return -1;
			c->got = 0;
			continue;
		}
		c->got += (size_t)r;
		if (c->got == c->need) {
			char *frame = c->rbuf;

			frame[c->need] = '\0';
			c->rbuf = NULL;
			c->hgot = c->got = c->need = 0;
			if (c->ses.agent)
				c->deadline_ms = agent_deadline(s);
			if (hm_srv_addr_load(s, c->ip, 0) >= SRV_ADDR_INFLIGHT)
				c->held = frame; /* its address's turn comes (release_held) */
			else
				submit(s, c, HM_TASK_FRAME, frame);
		}
	}
	return 0;
}

/* Frames held for ip's turn go to the workers while it has room. */
static void release_held(hm_server_t *s, uint32_t ip)
{
	for (int i = 0; i < s->nconns && hm_srv_addr_load(s, ip, 0) < SRV_ADDR_INFLIGHT; i++) {
		conn_t *c = s->conns[i];

		if (c->held && c->ip == ip && !c->busy && !c->closing) {
			char *frame = c->held;

			c->held = NULL;
			submit(s, c, HM_TASK_FRAME, frame);
		}
	}
}

/* A worker's result: queue its frames, park, or close. */
static void take_result(hm_server_t *s, hm_srv_task_t *t)
{
	conn_t *c = conn_by_id(s, t->conn_id, NULL);

	hm_srv_addr_load(s, t->ip, -1);
	hm_coord_note_request(s->coord, t->refused);
	if (t->uid_held && (!c || !t->park)) {
		hm_srv_uid_release(s, t->uid); /* answered, or nobody left to answer */
		t->uid_held = false;
	}
	if (!c) {
		task_free(t);
		return; /* the connection went away meanwhile */
	}
	c->busy = false;
	if (!c->ses.agent && t->ses.agent)
		c->deadline_ms = agent_deadline(s); /* one-shot deadline no longer applies */
	c->ses = t->ses;
	for (int i = 0; i < t->nout; i++) {
		queue_frame(c, t->out[i]);
		t->out[i] = NULL;
	}
	t->nout = 0;
	if (t->park) {
		if (!c->park_deadline_ms) /* the first park: the wait starts */
			c->park_deadline_ms = hm_mono_ms() + s->conf.conn_timeout_ms / 2;
		c->park_text = t->data;
		c->park_uid = t->uid;
		c->park_gid = t->gid;
		c->uid_held = t->uid_held;
		t->data = NULL;
	}
	if (t->close_after)
		c->closing = true;
	task_free(t);
}

/* Retry parked registers (decisions changed, or their wait is over). */
static void run_parked(hm_server_t *s, bool all)
{
	int64_t now = hm_mono_ms();

	for (int i = 0; i < s->nconns; i++) {
		conn_t *c = s->conns[i];

		if (!c->park_text || c->busy || c->closing || (!all && now < c->park_deadline_ms))
			continue;
		char *text = c->park_text;

		c->park_text = NULL;
		submit(s, c, HM_TASK_DECODED, text);
	}
}

/* Hand each waiting rack_round to its leader's connection (sent when it is free). */
static void send_rack_rounds(hm_server_t *s)
{
	char node[HM_AW_NODE_MAX];
	unsigned long round;
	int idx;

	while ((idx = hm_coord_tier_take(s->coord, node, sizeof(node), &round)) >= 0) {
		conn_t *c = NULL;

		for (int i = 0; i < s->nconns && !c; i++)
			if (s->conns[i]->ses.agent && !s->conns[i]->closing &&
			    strcmp(s->conns[i]->ses.node, node) == 0)
				c = s->conns[i];
		/* One request per leader and round; one left from an earlier round is over. */
		if (!c || (c->rack_idx >= 0 && c->rack_round == round)) {
			hm_coord_tier_fail(s->coord, idx, round);
			continue;
		}
		c->rack_idx = idx;
		c->rack_round = round;
		if (!c->busy)
			submit(s, c, HM_TASK_RACK, NULL);
	}
}

/* Push to every agent whose node's assignments changed since it was last told. */
static void push_changed(hm_server_t *s)
{
	for (int i = 0; i < s->nconns; i++) {
		conn_t *c = s->conns[i];

		if (!c->ses.agent || c->closing)
			continue;
		if (hm_coord_node_gen(s->coord, c->ses.node) == c->ses.pushed_gen)
			continue;
		if (c->busy)
			c->push_wanted = true;
		else
			submit(s, c, HM_TASK_PUSH, NULL);
	}
}

/* A wake-up late_ms after it was due: past AgentValidity / 2 this thread was
   stopped or starved (SIGSTOP of slurmctld), so what arrives now is stale and
   the agents' silence meanwhile was ours: their deadlines move by the stall and
   the engine gives a grace before any node is lost (hm_coord_nodes_stalled). */
static void stall_check(hm_server_t *s, int64_t late_ms)
{
	if (late_ms <= s->conf.agent_valid_ms / 2)
		return;
	for (int i = 0; i < s->nconns; i++)
		if (s->conns[i]->ses.agent)
			s->conns[i]->deadline_ms += late_ms;
	hm_coord_nodes_stalled(s->coord, hm_real_s(), late_ms / 1000.0);
}

static void *io_main(void *arg)
{
	hm_server_t *s = arg;
	struct epoll_event *evs = calloc(SRV_EVENTS, sizeof(*evs));

	if (!evs) {
		hm_log(HM_LOG_ERROR, "server: out of memory; not serving");
		return NULL;
	}
	int64_t woke_ms = hm_mono_ms(); /* the last wake-up: a stall shows as a late one */

	for (;;) {
		int64_t now = hm_mono_ms(), next = -1;
		int timeout_ms = -1, rc;
		hm_srv_task_t *done;
		bool notified, racks, stop = false, accept_now = false;
		char buf[64];

		arm_listener(s);
		for (int i = s->nconns - 1; i >= 0; i--) {
			conn_t *c = s->conns[i];

			if (!conn_sync(s, c)) {
				c->revents |= EPOLLERR; /* dropped below, as poll's POLLNVAL was */
				next = now;
				continue;
			}
			if (next < 0 || c->deadline_ms < next)
				next = c->deadline_ms;
			if (c->park_text && c->park_deadline_ms < next)
				next = c->park_deadline_ms;
		}
		{
			int64_t due = hm_srv_wake_due(s, now);

			if (due >= 0 && (next < 0 || due < next))
				next = due;
		}
		if (next >= 0)
			timeout_ms = next > now ? (int)(next - now) : 0;
		rc = epoll_wait(s->epfd, evs, SRV_EVENTS, timeout_ms);
		if (rc < 0 && errno != EINTR) {
			hm_log(HM_LOG_ERROR, "server epoll_wait: %s", strerror(errno));
			break;
		}
		for (int k = 0; k < rc; k++) {
			if (evs[k].data.ptr == &s->wake) {
				ssize_t n = read(s->wake[0], buf, sizeof(buf));

				stop |= n > 0 && memchr(buf, 'x', (size_t)n);
			} else if (evs[k].data.ptr == &s->lfd) {
				accept_now = true;
			} else {
				((conn_t *)evs[k].data.ptr)->revents |= evs[k].events;
			}
		}
		if (stop)
			break;
		now = hm_mono_ms(); /* one clock read for every deadline of this wake-up */
		if (timeout_ms >= 0)
			stall_check(s, now - woke_ms - timeout_ms);
		woke_ms = now;
		pthread_mutex_lock(&s->mu);
		done = s->done;
		s->done = s->done_tail = NULL;
		notified = s->notified;
		s->notified = false;
		racks = s->racks_wanted;
		s->racks_wanted = false;
		pthread_mutex_unlock(&s->mu);
		while (done) {
			hm_srv_task_t *t = done;
			uint32_t ip = t->ip;

			done = t->next;
			take_result(s, t); /* frees t */
			release_held(s, ip);
		}
		/* Sockets: each connection's events of this wait (nothing was freed yet). */
		for (int i = s->nconns - 1; i >= 0; i--) {
			conn_t *c = s->conns[i];
			uint32_t re = c->revents;
			bool drop = false;

			c->revents = 0;
			if (re & EPOLLERR)
				drop = true;
			if (!drop && (re & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) &&
			    conn_read(s, c) < 0)
				drop = true;
			if (!drop && c->wq && conn_write(c) < 0)
				drop = true;
			if (!drop && c->nqueued > SRV_MAX_QUEUED) {
				hm_log(HM_LOG_INFO, "%s %s does not read its replies: closed",
				       c->ses.agent ? "agent" : "client",
				       c->ses.agent ? c->ses.node : c->peer);
				drop = true;
			}
			if (!drop && c->closing && !c->wq && !c->busy)
				drop = true;
			if (!drop && !c->busy && !c->park_text && !c->held &&
			    now >= c->deadline_ms) {
				if (c->ses.agent)
					hm_log(
					    HM_LOG_INFO, "agent %s (%s) silent for %lld ms: closed",
					    c->ses.node, c->peer, (long long)agent_silence_ms(s));
				else
					hm_srv_log_refusal(s,
							   "refused connection from %s: no full "
							   "request within %d ms",
							   c->peer, s->conf.conn_timeout_ms);
				drop = true;
			}
			if (drop && !c->busy)
				conn_drop(s, i);
			else if (drop)
				c->closing = true; /* its task returns to a closed connection */
			else if (!c->busy && c->rack_idx >= 0)
				submit(s, c, HM_TASK_RACK, NULL);
			else if (!c->busy && c->push_wanted) {
				c->push_wanted = false;
				/* Not when the frame it was busy with was answered with it. */
				if (hm_coord_node_gen(s->coord, c->ses.node) != c->ses.pushed_gen)
					submit(s, c, HM_TASK_PUSH, NULL);
			}
		}
		if (racks)
			send_rack_rounds(s);
		if (notified) {
			push_changed(s);
			run_parked(s, true);
		}
		run_parked(s, false);
		if (accept_now)
			hm_srv_accept_all(s);
	}
	free(evs);
	return NULL;
}

hm_rc_t hm_server_start(hm_coord_t *coord, const hm_conf_t *conf, uint32_t slurm_user_uid,
			hm_server_t **out, hm_err_t *err)
{
	hm_server_t *s = NULL;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int one = 1, prc;
	hm_rc_t rc = HM_OK;

	*out = NULL;
	if (!(s = calloc(1, sizeof(*s)))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		goto out;
	}
	s->coord = coord;
	s->conf = *conf;
	/* Unset outside slurmctld (its host fills in its SlurmctldHost address): loopback. */
	if (!s->conf.listen_addr[0])
		snprintf(s->conf.listen_addr, sizeof(s->conf.listen_addr), "127.0.0.1");
	conf = &s->conf;
	s->slurm_uid = slurm_user_uid;
	s->lfd = -1;
	s->epfd = -1;
	s->wake[0] = s->wake[1] = -1;
	s->private_jobs = hm_server_slurm_private_jobs(NULL);
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	atomic_store(&s->last_wake_ms, hm_mono_ms() - SRV_WAKE_MIN_MS);
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->log_mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (inet_pton(AF_INET, conf->listen_addr, &sa.sin_addr) != 1) {
		rc = hm_err_set(err, HM_ERR_INVAL, "ListenAddress=%s is not an IPv4 address",
				conf->listen_addr);
		goto out_free;
	}
	sa.sin_port = htons((uint16_t)conf->listen_port);
	if ((s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0 ||
	    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(s->lfd, 512) != 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &sl) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "cannot listen on %s:%d: %s", conf->listen_addr,
				conf->listen_port, strerror(errno));
		goto out_free;
	}
	s->port = ntohs(sa.sin_port);
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "pipe: %s", strerror(errno));
		goto out_free;
	}
	if ((s->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wake[0],
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = &s->wake}) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "epoll: %s", strerror(errno));
		goto out_free;
	}
	for (int i = 0; i < SRV_WORKERS; i++) {
		if ((prc = pthread_create(&s->workers[i], NULL, worker_main, s)) != 0) {
			rc = hm_err_set(err, HM_ERR_IO, "cannot start a server worker: %s",
					strerror(prc));
			goto out_free;
		}
		s->nworkers++;
	}
	if ((prc = pthread_create(&s->io, NULL, io_main, s)) != 0) {
		rc =
		    hm_err_set(err, HM_ERR_IO, "cannot start the server thread: %s", strerror(prc));
		goto out_free;
	}
	s->io_started = true;
	hm_coord_set_notify(coord, on_notify, s);
	hm_coord_set_rack_sender(coord, on_rack_round, s);
	hm_log(HM_LOG_INFO,
	       "listening on %s:%d (SlurmUser uid %u, %d workers; at most %d connections, %d "
	       "per address, %d requests per user%s)",
	       conf->listen_addr, s->port, slurm_user_uid, SRV_WORKERS, SRV_MAX_CONNS,
	       conf->max_conns_per_addr, conf->max_requests_per_user,
	       s->private_jobs ? "; PrivateData=jobs: users list their own jobs only" : "");
	*out = s;
	goto out;
out_free:
	hm_server_stop(s);
out:
	return rc;
}

int hm_server_port(const hm_server_t *srv)
{
	return srv ? srv->port : -1;
}

void hm_server_stop(hm_server_t *s)
{
	if (!s)
		return;
	if (s->io_started) {
		hm_coord_set_notify(s->coord, NULL, NULL);
		hm_coord_set_rack_sender(s->coord, NULL, NULL);
		poke(s, 'x');
		pthread_join(s->io, NULL);
	}
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL); /* a task in flight ends: munge is bounded */
	for (hm_srv_task_t *t; (t = hm_srv_task_take(s));)
		task_free(t);
	while (s->done) {
		hm_srv_task_t *t = s->done;

		s->done = t->next;
		task_free(t);
	}
	while (s->nconns > 0)
		conn_drop(s, s->nconns - 1);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	if (s->reserve_fd >= 0)
		close(s->reserve_fd);
	free(s->uids);
	free(s->loads);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->log_mu);
	free(s);
}
