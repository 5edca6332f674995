/*
 * The coordinator's admission: who may connect and how much one address or uid
 * may ask at once (MaxConnectionsPerAddress, MaxRequestsPerUser, tasks in flight
 * per address), refusals logged at a bounded rate, registrations' wake-ups of
 * the sched thread rate-limited, PrivateData read from slurm.conf, the workers'
 * two queues (agents' sessions and the rest, shared). A hostile peer costs only
 * its own requests.
 */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hm_clock.h"
#include "hm_proto.h"
#include "hm_server_io.h"

void hm_srv_task_append(hm_srv_task_t **head, hm_srv_task_t **tail, hm_srv_task_t *t)
{
	t->next = NULL;
	if (*tail)
		(*tail)->next = t;
	else
		*head = t;
	*tail = t;
}

void hm_srv_task_put(hm_server_t *s, hm_srv_task_t *t, bool agent)
{
	if (agent)
		hm_srv_task_append(&s->todo_agent, &s->todo_agent_tail, t);
	else
		hm_srv_task_append(&s->todo, &s->todo_tail, t);
}

hm_srv_task_t *hm_srv_task_take(hm_server_t *s)
{
	hm_srv_task_t **head = &s->todo, **tail = &s->todo_tail, *t;

	if (!s->todo || (s->todo_agent && ++s->picks % SRV_AGENT_SHARE == 0)) {
		head = &s->todo_agent;
		tail = &s->todo_agent_tail;
	}
	if (!(t = *head))
		return NULL;
	*head = t->next;
	if (!*head)
		*tail = NULL;
	t->next = NULL;
	return t;
}

bool hm_server_slurm_private_jobs(const char *path)
{
	const char *env = getenv("SLURM_CONF");
	char line[4096];
	bool jobs = false;
	FILE *f;

	if (!path)
		path = env && *env ? env : "/etc/slurm/slurm.conf";
	if (!(f = fopen(path, "re")))
		return false; /* Slurm's default: no PrivateData */
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *save = NULL;

		if (hash)
			*hash = '\0';
		for (char *tok = strtok_r(line, " \t\r\n", &save); tok;
		     tok = strtok_r(NULL, " \t\r\n", &save)) {
			char *save2 = NULL;

			if (strncasecmp(tok, "PrivateData=", 12) != 0)
				continue;
			jobs = false; /* the last one counts, as in Slurm */
			for (char *v = strtok_r(tok + 12, ",", &save2); v;
			     v = strtok_r(NULL, ",", &save2))
				jobs |= strcasecmp(v, "jobs") == 0 || strcasecmp(v, "all") == 0;
		}
	}
	fclose(f);
	return jobs;
}

void hm_srv_log_refusal(hm_server_t *s, const char *fmt, ...)
{
	char msg[512];
	unsigned long dropped = 0;
	bool ok;
	va_list ap;

	pthread_mutex_lock(&s->log_mu);
	ok = hm_log_rate_ok(&s->log_rate, hm_mono_ms(), SRV_LOG_BURST, SRV_LOG_WINDOW_MS, &dropped);
	pthread_mutex_unlock(&s->log_mu);
	if (!ok)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (dropped)
		hm_log(HM_LOG_INFO, "%s (and %lu refusals not logged: at most %d per %d s)", msg,
		       dropped, SRV_LOG_BURST, SRV_LOG_WINDOW_MS / 1000);
	else
		hm_log(HM_LOG_INFO, "%s", msg);
}

bool hm_srv_uid_take(hm_server_t *s, uint32_t uid)
{
	bool ok = false;
	int i;

	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->nuids && s->uids[i].uid != uid; i++)
		;
	if (i == s->nuids && s->nuids == s->cap_uids) {
		int cap = s->cap_uids ? 2 * s->cap_uids : 16;
		uid_count_t *u = realloc(s->uids, (size_t)cap * sizeof(*u));

		if (!u)
			goto out; /* refused: out of memory */
		s->uids = u;
		s->cap_uids = cap;
	}
	if (i == s->nuids)
		s->uids[s->nuids++] = (uid_count_t){.uid = uid};
	ok = s->uids[i].n < s->conf.max_requests_per_user;
	if (ok)
		s->uids[i].n++;
	else
		atomic_fetch_add(&s->cnt.refused_user, 1);
out:
	pthread_mutex_unlock(&s->mu);
	return ok;
}

void hm_srv_uid_release(hm_server_t *s, uint32_t uid)
{
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->nuids; i++) {
		if (s->uids[i].uid == uid && --s->uids[i].n <= 0) {
			s->uids[i] = s->uids[--s->nuids];
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
}

/* Wake the sched thread now, or once SRV_WAKE_MIN_MS after the last wake-up. */
void hm_srv_wake_sched(hm_server_t *s)
{
	int64_t now = hm_mono_ms(), last = atomic_load(&s->last_wake_ms);

	if (now - last >= SRV_WAKE_MIN_MS &&
	    atomic_compare_exchange_strong(&s->last_wake_ms, &last, now)) {
		atomic_fetch_add(&s->cnt.sched_wakes, 1);
		hm_coord_wake(s->coord);
		return;
	}
	if (!atomic_exchange(&s->wake_pending, true))
		atomic_fetch_add(&s->cnt.wakes_deferred, 1);
	/* The I/O thread wakes when this task's result comes back and sees it. */
}

/* A deferred wake-up that is due (I/O thread): the time of the next one, or -1. */
int64_t hm_srv_wake_due(hm_server_t *s, int64_t now)
{
	int64_t due;

	if (!atomic_load(&s->wake_pending))
		return -1;
	due = atomic_load(&s->last_wake_ms) + SRV_WAKE_MIN_MS;
	if (now < due)
		return due;
	atomic_store(&s->wake_pending, false);
	atomic_store(&s->last_wake_ms, now);
	atomic_fetch_add(&s->cnt.sched_wakes, 1);
	hm_coord_wake(s->coord);
	return -1;
}

void hm_server_counters(hm_server_t *s, hm_server_counters_t *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	out->refused_addr = atomic_load(&s->cnt.refused_addr);
	out->refused_user = atomic_load(&s->cnt.refused_user);
	out->closed_no_fd = atomic_load(&s->cnt.closed_no_fd);
	out->sched_wakes = atomic_load(&s->cnt.sched_wakes);
	out->wakes_deferred = atomic_load(&s->cnt.wakes_deferred);
}

/* Tasks in flight of ip, changed by delta (I/O thread). */
int hm_srv_addr_load(hm_server_t *s, uint32_t ip, int delta)
{
	int i;

	for (i = 0; i < s->nloads && s->loads[i].ip != ip; i++)
		;
	if (i == s->nloads) {
		if (delta <= 0)
			return 0;
		if (s->nloads == s->cap_loads) {
			int cap = s->cap_loads ? 2 * s->cap_loads : 64;
			addr_load_t *l = realloc(s->loads, (size_t)cap * sizeof(*l));

			if (!l)
				return 0; /* unaccounted: served without the fairness */
			s->loads = l;
			s->cap_loads = cap;
		}
		s->loads[s->nloads++] = (addr_load_t){.ip = ip};
	}
	s->loads[i].n += delta;
	if (s->loads[i].n > 0)
		return s->loads[i].n;
	s->loads[i] = s->loads[--s->nloads];
	return 0;
}

/* Connections open from ip now (the listener is armed below SRV_MAX_CONNS only). */
static int conns_from(const hm_server_t *s, uint32_t ip)
{
	int n = 0;

	for (int i = 0; i < s->nconns; i++)
		n += s->conns[i]->ip == ip;
	return n;
}

/* Out of descriptors: spend the reserve one to take a connection off the queue and
   close it, so the listener stops reporting it and the thread never sleeps. */
static void accept_close_one(hm_server_t *s, int err_no)
{
	int fd;

	if (s->reserve_fd >= 0) {
		close(s->reserve_fd);
		s->reserve_fd = -1;
	}
	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		atomic_fetch_add(&s->cnt.closed_no_fd, 1);
		hm_srv_log_refusal(s, "refused a connection: out of file descriptors (%s, %d open)",
				   strerror(err_no), s->nconns);
	}
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void hm_srv_accept_all(hm_server_t *s)
{
	/* Bounded: a peer refused here reconnects at once, and an accept loop until
	   EAGAIN then spun against it while every frame waited (the listener is
	   level-triggered: the rest are taken after the next round of events). */
	for (int n = 0; n < SRV_ACCEPT_BURST && s->nconns < SRV_MAX_CONNS; n++) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(s->lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		conn_t *c;

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				int e = errno;

				accept_close_one(s, e);
				if (s->reserve_fd < 0)
					return; /* not even that: the next wake-up tries again */
				continue;
			}
			if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != ECONNABORTED)
				hm_log(HM_LOG_ERROR, "server accept: %s", strerror(errno));
			return;
		}
		if (conns_from(s, sa.sin_addr.s_addr) >= s->conf.max_conns_per_addr) {
			atomic_fetch_add(&s->cnt.refused_addr, 1);
			hm_srv_log_refusal(
			    s,
			    "refused a connection from %s: %d open from that address "
			    "(MaxConnectionsPerAddress=%d)",
			    inet_ntoa(sa.sin_addr), s->conf.max_conns_per_addr,
			    s->conf.max_conns_per_addr);
			close(fd);
			continue;
		}
		if (!(c = calloc(1, sizeof(*c)))) {
			close(fd);
			return;
		}
		c->id = ++s->next_id;
		c->fd = fd;
		c->ip = sa.sin_addr.s_addr;
		c->rack_idx = -1;
		c->deadline_ms = hm_mono_ms() + s->conf.conn_timeout_ms;
		c->ev_mask = EPOLLIN;
		snprintf(c->peer, sizeof(c->peer), "%s:%u", inet_ntoa(sa.sin_addr),
			 ntohs(sa.sin_port));
		if (hm_proto_sock_addr(fd, false, c->local, sizeof(c->local), NULL) != HM_OK)
			c->local[0] = '\0'; /* agents' frames are then refused: cannot be bound */
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd,
			      &(struct epoll_event){.events = EPOLLIN, .data.ptr = c}) != 0) {
			hm_log(HM_LOG_ERROR, "server epoll %s: %s", c->peer, strerror(errno));
			close(fd);
			free(c);
			return;
		}
		s->conns[s->nconns++] = c;
	}
}
