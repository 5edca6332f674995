/* One sealed request/reply exchange with the coordinator, bounded in time. */
#include "hm_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hm_coord_addr.h"
#include "hm_proto.h"

#define HM_CLIENT_MAX_REPLY_BYTES (16 * 1024 * 1024)

/* Non-blocking connect to one address before the deadline; returns the fd or -1. */
static int connect_one(const struct addrinfo *ai, int64_t deadline_ms, hm_err_t *err)
{
	int fd =
	    socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (fd < 0) {
		hm_err_set(err, HM_ERR_IO, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		hm_err_set(err, HM_ERR_IO, "connect: %s", strerror(errno));
		goto fail;
	}
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		int64_t left = deadline_ms - hm_proto_now_ms();
		int n;

		if (left <= 0) {
			hm_err_set(err, HM_ERR_TIMEOUT, "connect timed out");
			goto fail;
		}
		n = poll(&pfd, 1, (int)left);
		if (n > 0)
			break;
		if (n < 0 && errno != EINTR) {
			hm_err_set(err, HM_ERR_IO, "poll: %s", strerror(errno));
			goto fail;
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
		hm_err_set(err, HM_ERR_IO, "connect: %s", strerror(soerr ? soerr : errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

hm_rc_t hm_client_call(const char *host, int port, const char *request_json, int timeout_ms,
		       char **reply_json, hm_err_t *err)
{
	return hm_client_call_trusted(host, port, request_json, timeout_ms, NULL, 0, reply_json,
				      err);
}

/*
 * One exchange with host:port. The connect must finish by connect_deadline_ms,
 * the whole exchange by deadline_ms; *connected says whether it got that far
 * (a list moves on to its next address only when not).
 */
static hm_rc_t call_one(const char *host, int port, const char *request_json,
			int64_t connect_deadline_ms, int64_t deadline_ms,
			const uint32_t *trusted_uids, int ntrusted, char **reply_json,
			bool *connected, hm_err_t *err)
{
	bool trusted = ntrusted <= 0;
	struct addrinfo hints = {
	    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char portstr[16];
	char *cred = NULL, *frame = NULL, *json = NULL;
	size_t flen;
	uint32_t uid, gid;
	int fd = -1, gai;
	hm_rc_t rc = HM_OK;

	*reply_json = NULL;
	*connected = false;
	if (!host || !*host || port <= 0 || port > 65535) {
		rc = hm_err_set(err, HM_ERR_INVAL, "coordinator address '%s:%d' is not valid",
				host ? host : "", port);
		goto out;
	}
	snprintf(portstr, sizeof(portstr), "%d", port);
	if ((gai = getaddrinfo(host, portstr, &hints, &res)) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "coordinator %s:%d: cannot resolve host: %s", host,
				port, gai_strerror(gai));
		goto out;
	}
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
		fd = connect_one(ai, connect_deadline_ms, err);
	if (fd < 0) {
		rc = err ? err->rc : HM_ERR_IO;
		hm_err_prefix(err, "coordinator %s:%d unreachable", host, port);
		goto out;
	}
	*connected = true;
	if ((rc = hm_proto_seal(request_json, HM_PROTO_UID_ANY, &cred, err)) != HM_OK ||
	    (rc = hm_proto_send(fd, cred, strlen(cred), deadline_ms, err)) != HM_OK ||
	    (rc = hm_proto_recv(fd, HM_CLIENT_MAX_REPLY_BYTES, deadline_ms, &frame, &flen, err)) !=
		HM_OK ||
	    (rc = hm_proto_unseal(frame, &json, &uid, &gid, err)) != HM_OK) {
		hm_err_prefix(err, "coordinator %s:%d", host, port);
		goto out;
	}
	for (int i = 0; i < ntrusted && !trusted; i++)
		trusted = uid == trusted_uids[i];
	if (!trusted) {
		rc = hm_err_set(err, HM_ERR_AUTH,
				"coordinator %s:%d: reply sealed by uid %u, not by a trusted uid "
				"(root or SlurmUser): not the coordinator",
				host, port, uid);
		goto out;
	}
	*reply_json = json;
	json = NULL;
out:
	if (fd >= 0)
		close(fd);
	if (res)
		freeaddrinfo(res);
	free(cred);
	free(frame);
	free(json);
	return rc;
}

hm_rc_t hm_client_call_trusted(const char *host, int port, const char *request_json, int timeout_ms,
			       const uint32_t *trusted_uids, int ntrusted, char **reply_json,
			       hm_err_t *err)
{
	int64_t deadline_ms = hm_proto_now_ms() + (timeout_ms > 0 ? timeout_ms : 1);
	bool connected;

	return call_one(host, port, request_json, deadline_ms, deadline_ms, trusted_uids, ntrusted,
			reply_json, &connected, err);
}

hm_rc_t hm_client_call_list(const hm_coord_addrs_t *addrs, int port, const char *request_json,
			    int timeout_ms, const uint32_t *trusted_uids, int ntrusted,
			    char **reply_json, int *answered, hm_err_t *err)
{
	int64_t deadline_ms = hm_proto_now_ms() + (timeout_ms > 0 ? timeout_ms : 1);
	char tried[sizeof(err->msg)] = "";
	hm_rc_t rc = HM_ERR_INVAL;
	bool connected = false;
	int i;

	*reply_json = NULL;
	if (answered)
		*answered = -1;
	if (addrs->n <= 0)
		return hm_err_set(err, HM_ERR_INVAL, "no coordinator address");
	for (i = 0; i < addrs->n && !connected; i++) {
		int64_t now_ms = hm_proto_now_ms(), left_ms = deadline_ms - now_ms;

		if (left_ms <= 0 && i > 0)
			break;
		/* Each address's connect gets its share of what is left: a silent
		   controller (host down, packets dropped) leaves time to the next. */
		rc = call_one(addrs->host[i], port, request_json, now_ms + left_ms / (addrs->n - i),
			      deadline_ms, trusted_uids, ntrusted, reply_json, &connected, err);
		if (rc == HM_OK) {
			if (answered)
				*answered = i;
			return HM_OK;
		}
		/* A reply sealed by another uid is not the coordinator: try the next. */
		connected &= rc != HM_ERR_AUTH;
		if (!connected && addrs->n > 1 && err)
			snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%.300s",
				 tried[0] ? "; " : "", err->msg);
	}
	if (!connected && addrs->n > 1) {
		if (i < addrs->n)
			snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried),
				 "; no time left for %d more", addrs->n - i);
		hm_err_set(err, rc, "%s", tried);
	}
	return rc;
}
