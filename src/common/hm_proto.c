/* Framing over a socket and munge sealing of JSON payloads. */
#include "hm_proto.h"

#include <errno.h>
#include <munge.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

hm_rc_t hm_proto_seal(const char *json, uint32_t to_uid, char **cred, hm_err_t *err)
{
	munge_ctx_t ctx = NULL;
	munge_err_t me;
	hm_rc_t rc = HM_OK;

	*cred = NULL;
	if (to_uid != HM_PROTO_UID_ANY) {
		if (!(ctx = munge_ctx_create())) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "munge context: out of memory");
			goto out;
		}
		me = munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, (uid_t)to_uid);
		if (me != EMUNGE_SUCCESS) {
			rc = hm_err_set(err, HM_ERR_AUTH, "munge uid restriction: %s",
					munge_ctx_strerror(ctx));
			goto out;
		}
	}
	me = munge_encode(cred, ctx, json, (int)strlen(json));
	if (me != EMUNGE_SUCCESS) {
		rc = hm_err_set(err, HM_ERR_AUTH, "munge encode failed: %s (is munged running?)",
				munge_strerror(me));
		free(*cred);
		*cred = NULL;
	}
out:
	if (ctx)
		munge_ctx_destroy(ctx);
	return rc;
}

hm_rc_t hm_proto_unseal(const char *cred, char **json, uint32_t *uid, uint32_t *gid, hm_err_t *err)
{
	void *buf = NULL;
	int len = 0;
	uid_t u = (uid_t)-1;
	gid_t g = (gid_t)-1;
	munge_err_t me;
	hm_rc_t rc = HM_OK;

	*json = NULL;
	me = munge_decode(cred, NULL, &buf, &len, &u, &g);
	if (me != EMUNGE_SUCCESS) {
		rc = hm_err_set(err, HM_ERR_AUTH, "credential refused by munge: %s",
				munge_strerror(me));
		goto out;
	}
	if (len <= 0 || memchr(buf, '\0', (size_t)len)) {
		rc = hm_err_set(err, HM_ERR_PROTO, "credential payload is %s",
				len <= 0 ? "empty" : "not text");
		goto out;
	}
	if (!(*json = malloc((size_t)len + 1))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		goto out;
	}
	memcpy(*json, buf, (size_t)len);
	(*json)[len] = '\0';
	*uid = (uint32_t)u;
	*gid = (uint32_t)g;
out:
	free(buf);
	return rc;
}

#define BIND_HEAD "{\"bind\":\""

hm_rc_t hm_proto_sock_addr(int fd, bool peer, char *out, size_t len, hm_err_t *err)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[NI_MAXHOST], serv[NI_MAXSERV];
	int r, n;

	r = peer ? getpeername(fd, (struct sockaddr *)&ss, &sl)
		 : getsockname(fd, (struct sockaddr *)&ss, &sl);
	if (r != 0)
		return hm_err_set(err, HM_ERR_IO, "%s: %s", peer ? "getpeername" : "getsockname",
				  strerror(errno));
	if ((r = getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
			     NI_NUMERICHOST | NI_NUMERICSERV)) != 0)
		return hm_err_set(err, HM_ERR_IO, "socket address: %s", gai_strerror(r));
	if (ss.ss_family == AF_INET6)
		n = snprintf(out, len, "[%s]:%s", host, serv);
	else
		n = snprintf(out, len, "%s:%s", host, serv);
	if (n < 0 || (size_t)n >= len)
		return hm_err_set(err, HM_ERR_RANGE, "socket address %s too long", host);
	return HM_OK;
}

/* A part of a tag: the characters of directions, addresses and ports only. */
static bool tag_part_ok(const char *p)
{
	if (!*p)
		return false;
	for (; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr(".:>[]_-", *p)))
			return false;
	return true;
}

hm_rc_t hm_proto_bind_tag(char *out, size_t len, const char *dir, const char *dst, const char *src,
			  hm_err_t *err)
{
	int n;

	if (!tag_part_ok(dir) || !tag_part_ok(dst) || !tag_part_ok(src))
		return hm_err_set(err, HM_ERR_RANGE,
				  "binding '%s %s %s': a part is empty or holds a character "
				  "outside [A-Za-z0-9.:>[]_-]",
				  dir, dst, src);
	n = snprintf(out, len, "%s %s %s", dir, dst, src);
	if (n < 0 || (size_t)n >= len)
		return hm_err_set(err, HM_ERR_RANGE, "binding '%s %s %s' longer than %zu bytes",
				  dir, dst, src, len - 1);
	return HM_OK;
}

hm_rc_t hm_proto_conn_tag(int fd, const char *dir, bool sending, char *tag, size_t len,
			  hm_err_t *err)
{
	char self[HM_PROTO_ADDR_MAX], peer[HM_PROTO_ADDR_MAX];
	hm_rc_t rc;

	if ((rc = hm_proto_sock_addr(fd, false, self, sizeof(self), err)) != HM_OK ||
	    (rc = hm_proto_sock_addr(fd, true, peer, sizeof(peer), err)) != HM_OK)
		return rc;
	return sending ? hm_proto_bind_tag(tag, len, dir, peer, self, err)
		       : hm_proto_bind_tag(tag, len, dir, self, peer, err);
}

hm_rc_t hm_proto_seal_bound(const char *json, uint32_t to_uid, const char *tag, char **cred,
			    hm_err_t *err)
{
	size_t jl = strlen(json), tl = strlen(tag);
	char *text;
	hm_rc_t rc;

	*cred = NULL;
	if (jl < 2 || json[0] != '{')
		return hm_err_set(err, HM_ERR_INVAL, "only a JSON object can be bound");
	if (!(text = malloc(sizeof(BIND_HEAD) + tl + jl + 2)))
		return hm_err_set(err, HM_ERR_NOMEM, "out of memory");
	/* {"bind":"TAG", then the object's members ("{}" gives {"bind":"TAG"}). */
	snprintf(text, sizeof(BIND_HEAD) + tl + jl + 2, BIND_HEAD "%s\"%s%s", tag,
		 json[1] == '}' ? "" : ",", json + 1);
	rc = hm_proto_seal(text, to_uid, cred, err);
	free(text);
	return rc;
}

/* Name the first part of the tag that differs (direction, destination, source), so
 * that the same refusal reads the same on every connection (logged once). */
static hm_rc_t bind_mismatch(const char *tag, size_t len, const char *expect, hm_err_t *err)
{
	static const char *const part[] = {"direction", "destination", "source"};
	const char *g = tag, *e = expect, *gend = tag + len;

	for (int k = 0; k < 3; k++) {
		size_t gl = k < 2 && memchr(g, ' ', (size_t)(gend - g))
				? (size_t)((const char *)memchr(g, ' ', (size_t)(gend - g)) - g)
				: (size_t)(gend - g);
		size_t el = k < 2 && strchr(e, ' ') ? (size_t)(strchr(e, ' ') - e) : strlen(e);

		if (gl != el || strncmp(g, e, gl) != 0 || k == 2)
			return hm_err_set(err, HM_ERR_AUTH,
					  "frame bound to another %s ('%.*s', this connection's "
					  "is '%.*s'): sealed for another destination, connection "
					  "or direction (replayed?)",
					  part[k], (int)(gl < 80 ? gl : 80), g, (int)el, e);
		g += gl + (g + gl < gend);
		e += el + (e[el] == ' ');
	}
	return HM_ERR_AUTH; /* not reached */
}

hm_rc_t hm_proto_unbind(char *json, const char *expect, bool *bound, hm_err_t *err)
{
	size_t hl = sizeof(BIND_HEAD) - 1;
	char *tag, *end;

	*bound = false;
	if (strncmp(json, BIND_HEAD, hl) != 0)
		return HM_OK;
	tag = json + hl;
	end = strchr(tag, '"');
	if (!end || memchr(tag, '\\', (size_t)(end - tag)) || (end[1] != ',' && end[1] != '}'))
		return hm_err_set(err, HM_ERR_PROTO, "frame's \"bind\" member is malformed");
	if ((size_t)(end - tag) != strlen(expect) || strncmp(tag, expect, (size_t)(end - tag)) != 0)
		return bind_mismatch(tag, (size_t)(end - tag), expect, err);
	/* Keep '{' and drop "bind":"TAG" with its comma; "{"bind":"TAG"}" becomes "{}". */
	memmove(json + 1, end[1] == ',' ? end + 2 : end + 1,
		strlen(end[1] == ',' ? end + 2 : end + 1) + 1);
	*bound = true;
	return HM_OK;
}

/* Wait for fd to be ready for `events` before the deadline. */
static hm_rc_t wait_fd(int fd, short events, int64_t deadline_ms, hm_err_t *err)
{
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = events};
		int64_t left = deadline_ms - hm_proto_now_ms();
		int n;

		if (left <= 0)
			return hm_err_set(err, HM_ERR_TIMEOUT, "timed out");
		n = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
		if (n > 0)
			return HM_OK;
		if (n < 0 && errno != EINTR)
			return hm_err_set(err, HM_ERR_IO, "poll: %s", strerror(errno));
	}
}

static hm_rc_t send_all(int fd, const void *data, size_t len, int64_t deadline_ms, hm_err_t *err)
{
	const char *p = data;
	hm_rc_t rc;

	while (len > 0) {
		ssize_t n;

		if ((rc = wait_fd(fd, POLLOUT, deadline_ms, err)) != HM_OK)
			return rc;
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			return hm_err_set(err, HM_ERR_IO, "send: %s", strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
	return HM_OK;
}

static hm_rc_t recv_all(int fd, void *data, size_t len, int64_t deadline_ms, hm_err_t *err)
{
	char *p = data;
	hm_rc_t rc;

	while (len > 0) {
		ssize_t n;

		if ((rc = wait_fd(fd, POLLIN, deadline_ms, err)) != HM_OK)
			return rc;
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			return hm_err_set(err, HM_ERR_IO, "recv: %s", strerror(errno));
		}
		if (n == 0)
			return hm_err_set(err, HM_ERR_IO, "connection closed by peer");
		p += n;
		len -= (size_t)n;
	}
	return HM_OK;
}

hm_rc_t hm_proto_send(int fd, const char *data, size_t len, int64_t deadline_ms, hm_err_t *err)
{
	unsigned char hdr[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
				(unsigned char)(len >> 8), (unsigned char)len};
	hm_rc_t rc;

	if (len == 0 || len > 0x7fffffffu)
		return hm_err_set(err, HM_ERR_INVAL, "frame of %zu bytes", len);
	if ((rc = send_all(fd, hdr, sizeof(hdr), deadline_ms, err)) != HM_OK)
		return rc;
	return send_all(fd, data, len, deadline_ms, err);
}

hm_rc_t hm_proto_recv(int fd, size_t max_bytes, int64_t deadline_ms, char **data, size_t *len,
		      hm_err_t *err)
{
	unsigned char hdr[4];
	size_t n;
	char *buf = NULL;
	hm_rc_t rc;

	*data = NULL;
	*len = 0;
	if ((rc = recv_all(fd, hdr, sizeof(hdr), deadline_ms, err)) != HM_OK)
		goto out;
	n = ((size_t)hdr[0] << 24) | ((size_t)hdr[1] << 16) | ((size_t)hdr[2] << 8) | hdr[3];
	if (n == 0 || n > max_bytes) {
		rc = hm_err_set(err, HM_ERR_PROTO, "frame length %zu (accepted: 1..%zu bytes)", n,
				max_bytes);
		goto out;
	}
	if (!(buf = malloc(n + 1))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory for a %zu-byte frame", n);
		goto out;
	}
	if ((rc = recv_all(fd, buf, n, deadline_ms, err)) != HM_OK)
		goto out;
	buf[n] = '\0';
	*data = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	return rc;
}
