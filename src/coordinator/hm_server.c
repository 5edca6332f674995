/* The coordinator's socket service: one thread reading every pending request at once. */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "hm_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hm_coord_json.h"
#include "hm_log.h"
#include "hm_proto.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

struct hm_server {
	hm_coord_t *coord;
	hm_conf_t conf;
	uint32_t slurm_uid;
	int lfd;
	int wake[2]; /* pipe: stop request */
	int port;
	pthread_t thread;
	bool started;
};

/* One request being served. */
typedef struct {
	hm_server_t *srv;
	char peer[64];
	uint32_t uid, gid;
	bool authed;
} conn_t;

static json_object *error_reply(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static json_object *error_reply(const char *code, const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

static json_object *ok_reply(void)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}

/* Job id member: a positive integer below 2^32. */
static bool get_job_id(json_object *req, uint32_t *job_id)
{
	json_object *v;
	int64_t id;

	if (!json_object_object_get_ex(req, "job_id", &v) || !json_object_is_type(v, json_type_int))
		return false;
	id = json_object_get_int64(v);
	if (id <= 0 || id > UINT32_MAX)
		return false;
	*job_id = (uint32_t)id;
	return true;
}

/*
 * Owner, root or SlurmUser may act on a job. On refusal returns an error reply
 * and logs it; NULL when allowed.
 */
static json_object *authorise(conn_t *cn, const char *op, uint32_t job_id)
{
	uint32_t owner;

	if (hm_coord_job_uid(cn->srv->coord, job_id, &owner) != HM_OK)
		return error_reply("notfound", "job %u is not known to the coordinator", job_id);
	if (cn->uid == 0 || cn->uid == cn->srv->slurm_uid || cn->uid == owner)
		return NULL;
	hm_log(HM_LOG_INFO,
	       "refused %s for job %u from %s: uid %u is not the owner (uid %u), "
	       "root or SlurmUser",
	       op, job_id, cn->peer, cn->uid, owner);
	return error_reply("auth", "uid %u may not %s job %u (owner, root or SlurmUser only)",
			   cn->uid, op, job_id);
}

static json_object *op_register(conn_t *cn, json_object *req)
{
	hm_server_t *s = cn->srv;
	uint32_t job_id;
	hm_assignment_t a;
	json_object *r;

	if (!get_job_id(req, &job_id))
		return error_reply("proto", "register needs \"job_id\": a positive integer");
	/* The step may be faster than the sched thread: give it a bounded wait. */
	if (hm_coord_wait_job(s->coord, job_id, s->conf.conn_timeout_ms / 2) == HM_ERR_NOTFOUND)
		return error_reply("notfound", "job %u is not known to the coordinator", job_id);
	if ((r = authorise(cn, "register", job_id)))
		return r;
	if (hm_coord_assignment(s->coord, job_id, &a) != HM_OK) {
		r = ok_reply();
		json_object_object_add(r, "scheduled", json_object_new_boolean(0));
		json_object_object_add(r, "reason", json_object_new_string("awaiting decision"));
		return r;
	}
	hm_coord_note_register(s->coord, job_id);
	hm_log(HM_LOG_VERBOSE, "job %u step %lld on %s registered: %s", job_id,
	       (long long)hm_json_i64(req, "step_id"), hm_json_str(req, "node"),
	       a.scheduled ? "scheduled" : a.reason);
	return hm_assign_reply(job_id, &a);
}

static json_object *op_report(conn_t *cn, json_object *req)
{
	uint32_t job_id;
	hm_coord_measure_t m;
	hm_err_t e = {0};
	json_object *r;

	if (!get_job_id(req, &job_id))
		return error_reply("proto", "report needs \"job_id\": a positive integer");
	if ((r = authorise(cn, "report", job_id)))
		return r;
	m = (hm_coord_measure_t){
	    .iter_s = hm_json_dbl(req, "iter_s"),
	    .compute_s = hm_json_dbl(req, "compute_s"),
	    .comm_s = hm_json_dbl(req, "comm_s"),
	    .iter_sd_s = hm_json_dbl(req, "iter_sd_s"),
	    .bytes = hm_json_dbl(req, "bytes"),
	};
	if (hm_coord_job_measure(cn->srv->coord, job_id, &m, &e) != HM_OK)
		return error_reply(e.rc == HM_ERR_NOTFOUND ? "notfound" : "inval", "%s", e.msg);
	return ok_reply();
}

static json_object *op_status(conn_t *cn)
{
	hm_coord_stats_t st;
	json_object *r = ok_reply(), *c;

	hm_coord_stats(cn->srv->coord, &st);
	json_object_object_add(r, "status", hm_json_stats(&st));
	c = json_object_new_object();
	json_object_object_add(c, "source", json_object_new_string(cn->srv->conf.source));
	json_object_object_add(c, "listen", json_object_new_string(cn->srv->conf.listen_addr));
	json_object_object_add(c, "port", json_object_new_int(cn->srv->port));
	json_object_object_add(c, "default_mode",
			       json_object_new_string(cn->srv->conf.default_mode));
	json_object_object_add(c, "fail_open", json_object_new_boolean(cn->srv->conf.fail_open));
	json_object_object_add(r, "config", c);
	return r;
}

static json_object *op_jobs(conn_t *cn)
{
	hm_coord_job_view_t *v = NULL;
	int n = 0;
	json_object *r, *arr;

	if (hm_coord_jobs(cn->srv->coord, &v, &n) != HM_OK)
		return error_reply("nomem", "out of memory");
	r = ok_reply();
	arr = json_object_new_array();
	for (int i = 0; i < n; i++)
		json_object_array_add(arr, hm_json_job_view(&v[i]));
	json_object_object_add(r, "jobs", arr);
	free(v);
	return r;
}

static json_object *op_racks(conn_t *cn)
{
	hm_coord_rack_view_t *v = NULL;
	int n = 0;
	json_object *r, *arr;

	if (hm_coord_racks(cn->srv->coord, &v, &n) != HM_OK)
		return error_reply("nomem", "out of memory");
	r = ok_reply();
	arr = json_object_new_array();
	for (int i = 0; i < n; i++)
		json_object_array_add(arr, hm_json_rack_view(&v[i]));
	json_object_object_add(r, "racks", arr);
	free(v);
	return r;
}

static json_object *op_job(conn_t *cn, json_object *req)
{
	uint32_t job_id;
	hm_coord_job_view_t v;
	json_object *r;

	if (!get_job_id(req, &job_id))
		return error_reply("proto", "job needs \"job_id\": a positive integer");
	if ((r = authorise(cn, "query", job_id)))
		return r;
	if (hm_coord_job(cn->srv->coord, job_id, &v) != HM_OK)
		return error_reply("notfound", "job %u is not known to the coordinator", job_id);
	r = ok_reply();
	json_object_object_add(r, "job", hm_json_job_view(&v));
	return r;
}

static json_object *dispatch(conn_t *cn, const char *text)
{
	enum json_tokener_error jerr;
	json_object *req = json_tokener_parse_verbose(text, &jerr), *r;
	const char *op;

	if (!req || !json_object_is_type(req, json_type_object)) {
		json_object_put(req);
		hm_log(HM_LOG_INFO, "refused request from %s uid %u: not a JSON object (%s)",
		       cn->peer, cn->uid, req ? "wrong type" : json_tokener_error_desc(jerr));
		return error_reply("proto", "request is not a JSON object");
	}
	op = hm_json_str(req, "op");
	if (strcmp(op, "register") == 0)
		r = op_register(cn, req);
	else if (strcmp(op, "report") == 0)
		r = op_report(cn, req);
	else if (strcmp(op, "status") == 0)
		r = op_status(cn);
	else if (strcmp(op, "jobs") == 0)
		r = op_jobs(cn);
	else if (strcmp(op, "racks") == 0)
		r = op_racks(cn);
	else if (strcmp(op, "job") == 0)
		r = op_job(cn, req);
	else
		r = error_reply("proto",
				"unknown op '%.40s' (accepted: register, report, status, jobs, "
				"racks, job)",
				op);
	json_object_put(req);
	return r;
}

/*
 * Answer one request: frame is the received credential, or NULL when reading
 * failed with a protocol error (rerr), which is answered too.
 */
static void answer(hm_server_t *s, int fd, const char *peer, const char *frame,
		   const hm_err_t *rerr)
{
	int64_t deadline_ms = hm_proto_now_ms() + s->conf.conn_timeout_ms;
	conn_t cn = {.srv = s};
	char *text = NULL, *cred = NULL;
	json_object *reply = NULL, *ok;
	hm_err_t e = {0};
	const char *out;

	snprintf(cn.peer, sizeof(cn.peer), "%s", peer);
	if (!frame) {
		hm_log(HM_LOG_INFO, "refused connection from %s: %s", peer, rerr->msg);
		reply = error_reply("proto", "%s", rerr->msg);
	} else if (hm_proto_unseal(frame, &text, &cn.uid, &cn.gid, &e) != HM_OK) {
		hm_log(HM_LOG_INFO, "refused request from %s: %s", peer, e.msg);
		reply = error_reply(e.rc == HM_ERR_AUTH ? "auth" : "proto", "%s", e.msg);
	} else {
		cn.authed = true;
		reply = dispatch(&cn, text);
	}
	ok = NULL;
	json_object_object_get_ex(reply, "ok", &ok);
	hm_coord_note_request(s->coord, !json_object_get_boolean(ok));
	out = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN);
	/* Only the requester can read the reply; an unauthenticated one gets an open seal. */
	if (hm_proto_seal(out, cn.authed ? cn.uid : HM_PROTO_UID_ANY, &cred, &e) != HM_OK) {
		hm_log(HM_LOG_ERROR, "reply to %s: %s", peer, e.msg);
		goto out;
	}
	if (hm_proto_send(fd, cred, strlen(cred), deadline_ms, &e) != HM_OK)
		hm_log(HM_LOG_VERBOSE, "reply to %s: %s", peer, e.msg);
out:
	json_object_put(reply);
	free(text);
	free(cred);
}

/*
 * A connection whose request is still arriving. Requests are read from all
 * pending connections at once (poll), so a silent or slow client delays nobody;
 * each has its own ConnectionTimeout deadline.
 */
#define HM_SERVER_MAX_PENDING 64

typedef struct {
	int fd;
	char peer[64];
	int64_t deadline_ms;
	unsigned char hdr[4];
	size_t hgot;
	char *buf; /* body, once the length is known */
	size_t need, got;
} pend_t;

static void pend_drop(pend_t *p, int *n, int i)
{
	close(p[i].fd);
	free(p[i].buf);
	p[i] = p[--*n];
}

/* Read what is there. Returns 1 when the request is complete or answered, -1 when
   the peer is gone, 0 to keep waiting. */
static int pend_read(hm_server_t *s, pend_t *p)
{
	for (;;) {
		ssize_t r;

		if (p->hgot < sizeof(p->hdr))
			r = recv(p->fd, p->hdr + p->hgot, sizeof(p->hdr) - p->hgot, MSG_DONTWAIT);
		else
			r = recv(p->fd, p->buf + p->got, p->need - p->got, MSG_DONTWAIT);
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
		if (r == 0) {
			hm_log(HM_LOG_VERBOSE, "connection from %s closed before a full request",
			       p->peer);
			return -1;
		}
		if (p->hgot < sizeof(p->hdr)) {
			p->hgot += (size_t)r;
			if (p->hgot < sizeof(p->hdr))
				continue;
			p->need = ((size_t)p->hdr[0] << 24) | ((size_t)p->hdr[1] << 16) |
				  ((size_t)p->hdr[2] << 8) | p->hdr[3];
			if (p->need == 0 || p->need > (size_t)s->conf.max_message_bytes) {
				hm_err_t e = {0};

				hm_err_set(&e, HM_ERR_PROTO,
					   "frame length %zu (accepted: 1..%d bytes)", p->need,
					   s->conf.max_message_bytes);
				answer(s, p->fd, p->peer, NULL, &e);
				return 1;
			}
			if (!(p->buf = malloc(p->need + 1)))
				return -1;
			continue;
		}
		p->got += (size_t)r;
		if (p->got == p->need) {
			p->buf[p->need] = '\0';
			answer(s, p->fd, p->peer, p->buf, NULL);
			return 1;
		}
	}
}

static void accept_all(hm_server_t *s, pend_t *p, int *n)
{
	while (*n < HM_SERVER_MAX_PENDING) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(s->lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != ECONNABORTED)
				hm_log(HM_LOG_ERROR, "server accept: %s", strerror(errno));
			if (errno == EMFILE || errno == ENFILE)
				usleep(100000); /* let descriptors free up instead of spinning */
			return;
		}
		memset(&p[*n], 0, sizeof(p[*n]));
		p[*n].fd = fd;
		p[*n].deadline_ms = hm_proto_now_ms() + s->conf.conn_timeout_ms;
		snprintf(p[*n].peer, sizeof(p[*n].peer), "%s:%u", inet_ntoa(sa.sin_addr),
			 ntohs(sa.sin_port));
		(*n)++;
	}
}

static void *server_main(void *arg)
{
	hm_server_t *s = arg;
	pend_t pend[HM_SERVER_MAX_PENDING];
	struct pollfd pfd[HM_SERVER_MAX_PENDING + 2];
	int npend = 0;

	for (;;) {
		int64_t now = hm_proto_now_ms(), next = -1;
		int timeout_ms = -1, nfd = 2, rc;

		pfd[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
		/* A full table stops accepting; the kernel backlog holds the rest. */
		pfd[1] = (struct pollfd){.fd = npend < HM_SERVER_MAX_PENDING ? s->lfd : -1,
					 .events = POLLIN};
		for (int i = 0; i < npend; i++) {
			pfd[nfd++] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
			if (next < 0 || pend[i].deadline_ms < next)
				next = pend[i].deadline_ms;
		}
		if (next >= 0)
			timeout_ms = next > now ? (int)(next - now) : 0;
		rc = poll(pfd, (nfds_t)nfd, timeout_ms);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			hm_log(HM_LOG_ERROR, "server poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		/* Pending connections first (indexes shift as they are dropped: go backwards). */
		for (int i = npend - 1; i >= 0; i--) {
			short re = pfd[2 + i].revents;
			int st = 0;

			if (re & (POLLIN | POLLHUP | POLLERR))
				st = pend_read(s, &pend[i]);
			if (st == 0 && hm_proto_now_ms() >= pend[i].deadline_ms) {
				hm_log(HM_LOG_INFO,
				       "refused connection from %s: no full request within %d ms",
				       pend[i].peer, s->conf.conn_timeout_ms);
				st = -1;
			}
			if (st != 0)
				pend_drop(pend, &npend, i);
		}
		if (pfd[1].revents & POLLIN)
			accept_all(s, pend, &npend);
	}
	while (npend > 0)
		pend_drop(pend, &npend, npend - 1);
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
	s->slurm_uid = slurm_user_uid;
	s->lfd = -1;
	s->wake[0] = s->wake[1] = -1;
	if (inet_pton(AF_INET, conf->listen_addr, &sa.sin_addr) != 1) {
		rc = hm_err_set(err, HM_ERR_INVAL, "ListenAddress=%s is not an IPv4 address",
				conf->listen_addr);
		goto out_free;
	}
	sa.sin_port = htons((uint16_t)conf->listen_port);
	if ((s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0 ||
	    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(s->lfd, 64) != 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &sl) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "cannot listen on %s:%d: %s", conf->listen_addr,
				conf->listen_port, strerror(errno));
		goto out_free;
	}
	s->port = ntohs(sa.sin_port);
	if (pipe2(s->wake, O_CLOEXEC) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "pipe: %s", strerror(errno));
		goto out_free;
	}
	if ((prc = pthread_create(&s->thread, NULL, server_main, s)) != 0) {
		rc =
		    hm_err_set(err, HM_ERR_IO, "cannot start the server thread: %s", strerror(prc));
		goto out_free;
	}
	s->started = true;
	hm_log(HM_LOG_INFO, "listening on %s:%d (SlurmUser uid %u)", conf->listen_addr, s->port,
	       slurm_user_uid);
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
	if (s->started) {
		if (write(s->wake[1], "x", 1) != 1)
			hm_log(HM_LOG_ERROR, "server stop: %s", strerror(errno));
		pthread_join(s->thread, NULL);
	}
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	free(s);
}
