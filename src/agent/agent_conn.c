/* The agent's connection to the coordinator: non-blocking socket, frames, munge. */
#include "agent_conn.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hm_proto.h"

#define MAX_FRAMES_PER_READ 64 /* a flood of frames cannot keep the loop from its timers */

void agent_conn_init(agent_conn_t *c, size_t max_frame, const hm_logger_t *lg)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->state = CONN_IDLE;
	c->max_frame = max_frame;
	agent_backoff_reset(&c->backoff);
	c->rand_state = (unsigned)getpid() ^ (unsigned)time(NULL);
	c->lg = lg;
	c->what = "coordinator";
	c->level_floor = HM_LOG_ERROR;
}

void agent_conn_close(agent_conn_t *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = CONN_IDLE;
	c->out_len = c->out_off = 0;
	c->in_len = 0;
	c->seq_out = c->seq_in = c->hello_seq = 0;
	c->tag_out[0] = c->tag_in[0] = '\0';
}

/* The directions of a connection, by its peer (c->what): what we send, what we accept. */
static void conn_dirs(const agent_conn_t *c, const char **out, const char **in)
{
	if (strcmp(c->what, "rack leader") == 0) { /* we are its member */
		*out = "member>leader";
		*in = "leader>member";
	} else if (strcmp(c->what, "rack member") == 0) { /* we lead */
		*out = "leader>member";
		*in = "member>leader";
	} else {
		*out = "agent>coordinator";
		*in = "coordinator>agent";
	}
}

/* Both tags from the socket's two ends, once (the connection is established). */
static hm_rc_t conn_tags(agent_conn_t *c, hm_err_t *err)
{
	const char *out, *in;
	hm_rc_t rc;

	if (c->tag_out[0])
		return HM_OK;
	conn_dirs(c, &out, &in);
	if ((rc = hm_proto_conn_tag(c->fd, out, true, c->tag_out, sizeof(c->tag_out), err)) !=
		HM_OK ||
	    (rc = hm_proto_conn_tag(c->fd, in, false, c->tag_in, sizeof(c->tag_in), err)) != HM_OK)
		c->tag_out[0] = c->tag_in[0] = '\0';
	return rc;
}

void agent_conn_free(agent_conn_t *c)
{
	agent_conn_close(c);
	free(c->out);
	free(c->in);
	c->out = c->in = NULL;
	c->out_cap = c->in_cap = 0;
}

void agent_conn_fail(agent_conn_t *c, int64_t now_ms, bool reset_backoff, int level,
		     const char *fmt, ...)
{
	char why[200];
	va_list ap;
	int delay;
	bool answered = c->state == CONN_READY;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	agent_conn_close(c);
	if (reset_backoff)
		agent_backoff_reset(&c->backoff);
	if (c->addrs && c->addrs->n > 1) {
		if (answered) {
			c->tried = 0; /* the next round starts here again */
		} else {
			c->addr_i = (c->addr_i + 1) % c->addrs->n;
			if (++c->tried < c->addrs->n) {
				c->retry_at_ms = now_ms;
				hm_logf(c->lg, HM_LOG_VERBOSE, "%s %s: %s; trying %s next", c->what,
					c->peer, why, c->addrs->host[c->addr_i]);
				return;
			}
			c->tried = 0;
		}
	}
	delay = agent_backoff_next(&c->backoff, (double)rand_r(&c->rand_state) / RAND_MAX * 0.999);
	c->retry_at_ms = now_ms + delay;
	hm_log_once(c->lg, &c->once, level > c->level_floor ? level : c->level_floor, "%s %s: %s%s",
		    c->what, c->peer, why,
		    strcmp(c->what, "coordinator") == 0
			? "; runs unscheduled, retrying with back-off (0.5 s doubling to 30 s)"
			: "");
}

bool agent_conn_start(agent_conn_t *c, const char *host, int port, int timeout_ms, int64_t now_ms)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV | AI_NUMERICHOST};
	struct addrinfo *res = NULL;
	char portstr[16];
	int gai, err = 0;

	snprintf(c->peer, sizeof(c->peer), "%s:%d", host, port);
	snprintf(portstr, sizeof(portstr), "%d", port);
	/* A numeric address needs no resolver; a name may wait on DNS (the thread only). */
	if ((gai = getaddrinfo(host, portstr, &hints, &res)) == EAI_NONAME) {
		hints.ai_flags = AI_NUMERICSERV;
		gai = getaddrinfo(host, portstr, &hints, &res);
	}
	if (gai != 0) {
		agent_conn_fail(c, now_ms, false, HM_LOG_ERROR, "cannot resolve: %s",
				gai_strerror(gai));
		return false;
	}
	for (struct addrinfo *ai = res; ai && c->fd < 0; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);

		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) {
			c->fd = fd;
			break;
		}
		err = errno;
		close(fd);
	}
	freeaddrinfo(res);
	if (c->fd < 0) {
		agent_conn_fail(c, now_ms, false, HM_LOG_ERROR, "connect: %s",
				strerror(err ? err : EHOSTUNREACH));
		return false;
	}
	c->state = CONN_CONNECTING;
	c->deadline_ms = now_ms + timeout_ms;
	return true;
}

bool agent_conn_start_next(agent_conn_t *c, int port, int timeout_ms, int64_t now_ms)
{
	return agent_conn_start(c, c->addrs->host[c->addr_i % c->addrs->n], port, timeout_ms,
				now_ms);
}

bool agent_conn_connected(agent_conn_t *c, int64_t now_ms)
{
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
		soerr = errno;
	if (soerr == EINPROGRESS)
		return false;
	if (soerr != 0) {
		agent_conn_fail(c, now_ms, false, HM_LOG_ERROR, "connect: %s", strerror(soerr));
		return false;
	}
	return true;
}

hm_rc_t agent_conn_send(agent_conn_t *c, hm_aw_msg_t *m, int64_t now_ms, hm_err_t *err)
{
	char *json = NULL, *cred = NULL;
	size_t n, need;
	hm_rc_t rc;

	m->seq = c->seq_out + 1;
	if ((rc = hm_aw_encode(m, &json, err)) != HM_OK)
		goto out;
	if ((rc = conn_tags(c, err)) != HM_OK ||
	    (rc = hm_proto_seal_bound(json, HM_PROTO_UID_ANY, c->tag_out, &cred, err)) != HM_OK)
		goto out;
	n = strlen(cred);
	if (n > c->max_frame) {
		rc = hm_err_set(err, HM_ERR_RANGE,
				"%s frame of %zu bytes exceeds MaxMessageSize=%zu",
				hm_aw_op_name(m->op), n, c->max_frame);
		goto out;
	}
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	need = c->out_len + 4 + n;
	if (need > c->out_cap) {
		char *grown = realloc(c->out, need);

		if (!grown) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory for a %zu-byte frame", n);
			goto out;
		}
		c->out = grown;
		c->out_cap = need;
	}
	if (c->out_len == c->out_off)
		c->out_since_ms = now_ms;
	c->out[c->out_len++] = (char)(n >> 24);
	c->out[c->out_len++] = (char)(n >> 16);
	c->out[c->out_len++] = (char)(n >> 8);
	c->out[c->out_len++] = (char)n;
	memcpy(c->out + c->out_len, cred, n);
	c->out_len += n;
	c->seq_out = m->seq;
out:
	free(json);
	free(cred);
	return rc;
}

bool agent_conn_flush(agent_conn_t *c, int64_t now_ms)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n <= 0) {
			agent_conn_fail(c, now_ms, c->state == CONN_READY, HM_LOG_ERROR, "send: %s",
					n < 0 ? strerror(errno) : "no progress");
			return false;
		}
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	return true;
}

/* One complete frame in c->in: unseal, check, decode, hand over. */
static bool handle_frame(agent_conn_t *c, const uint32_t *trusted, int ntrusted, int64_t now_ms,
			 bool (*on_msg)(void *, const hm_aw_msg_t *), void *arg)
{
	char *json = NULL;
	uint32_t uid, gid;
	hm_aw_msg_t m;
	hm_err_t err = {0};
	bool ok = false, trust = false, bound = false;

	memset(&m, 0, sizeof(m));
	if (hm_proto_unseal(c->in + 4, &json, &uid, &gid, &err) != HM_OK) {
		agent_conn_fail(c, now_ms, false, HM_LOG_ERROR, "%s", err.msg);
		goto out;
	}
	for (int i = 0; i < ntrusted; i++)
		trust |= uid == trusted[i];
	if (!trust) {
		agent_conn_fail(c, now_ms, false, HM_LOG_ERROR,
				"frame sealed by uid %u, not root or SlurmUser: not a Harmonics "
				"daemon",
				uid);
		goto out;
	}
	/* Bound to this connection, in the peer's direction, before anything is decoded. */
	if (conn_tags(c, &err) != HM_OK ||
	    hm_proto_unbind(json, c->tag_in, &bound, &err) != HM_OK) {
		agent_conn_fail(c, now_ms, false, HM_LOG_ERROR, "%s", err.msg);
		goto out;
	}
	if (!bound) {
		agent_conn_fail(c, now_ms, false, HM_LOG_ERROR,
				"frame not bound to a destination (expected \"bind\": \"%s\"): "
				"sent by a Harmonics older than this agent, or not by Harmonics",
				c->tag_in);
		goto out;
	}
	if (hm_aw_decode(json, strlen(json), &m, &err) != HM_OK) {
		agent_conn_fail(c, now_ms, false, HM_LOG_ERROR, "%s", err.msg);
		goto out;
	}
	if (m.seq <= c->seq_in || (m.re > c->seq_out)) {
		agent_conn_fail(c, now_ms, false, HM_LOG_ERROR,
				"%s with seq %lld re %lld (accepted: seq > %lld, re <= %lld)",
				hm_aw_op_name(m.op), (long long)m.seq, (long long)m.re,
				(long long)c->seq_in, (long long)c->seq_out);
		goto out;
	}
	c->seq_in = m.seq;
	c->last_heard_ms = now_ms;
	ok = on_msg(arg, &m);
	if (!ok && c->fd >= 0)
		agent_conn_close(c); /* on_msg logged why and may have scheduled the retry */
out:
	hm_aw_msg_free(&m);
	free(json);
	return ok && c->fd >= 0;
}

/* Read into the frame buffer; returns 1 when a frame is complete, 0 when more is
 * needed later, -1 when the connection failed (closed). */
static int read_some(agent_conn_t *c, int64_t now_ms)
{
	for (;;) {
		size_t want = c->in_len < 4 ? 4
					    : 4 + (((size_t)(unsigned char)c->in[0] << 24) |
						   ((size_t)(unsigned char)c->in[1] << 16) |
						   ((size_t)(unsigned char)c->in[2] << 8) |
						   (unsigned char)c->in[3]);
		ssize_t n;

		if (c->in_len >= 4 && (want == 4 || want - 4 > c->max_frame)) {
			agent_conn_fail(c, now_ms, false, HM_LOG_ERROR,
					"frame length %zu (accepted: 1..%zu bytes)", want - 4,
					c->max_frame);
			return -1;
		}
		if (c->in_len == want && want > 4)
			return 1;
		if (want + 1 > c->in_cap) {
			char *grown = realloc(c->in, want + 1);

			if (!grown) {
				agent_conn_fail(c, now_ms, false, HM_LOG_ERROR,
						"out of memory for a %zu-byte frame", want);
				return -1;
			}
			c->in = grown;
			c->in_cap = want + 1;
		}
		n = recv(c->fd, c->in + c->in_len, want - c->in_len, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			agent_conn_fail(c, now_ms, c->state == CONN_READY, HM_LOG_ERROR, "%s",
					n == 0 ? "connection closed by the peer" : strerror(errno));
			return -1;
		}
		c->in_len += (size_t)n;
	}
}

bool agent_conn_read(agent_conn_t *c, const uint32_t *trusted, int ntrusted, int64_t now_ms,
		     bool (*on_msg)(void *arg, const hm_aw_msg_t *m), void *arg)
{
	for (int frames = 0; frames < MAX_FRAMES_PER_READ; frames++) {
		int r = read_some(c, now_ms);

		if (r <= 0)
			return r == 0;
		c->in[c->in_len] = '\0';
		if (strlen(c->in + 4) != c->in_len - 4) {
			agent_conn_fail(c, now_ms, false, HM_LOG_ERROR,
					"frame holds a NUL byte: not a munge credential");
			return false;
		}
		c->in_len = 0;
		if (!handle_frame(c, trusted, ntrusted, now_ms, on_msg, arg))
			return false;
	}
	return true;
}

short agent_conn_events(const agent_conn_t *c)
{
	if (c->fd < 0)
		return 0;
	if (c->state == CONN_CONNECTING)
		return POLLOUT;
	return (short)(POLLIN | (c->out_off < c->out_len ? POLLOUT : 0));
}
