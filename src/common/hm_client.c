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

hm_rc_t hm_client_call_trusted(const char *host, int port, const char *request_json, int timeout_ms,
			       const uint32_t *trusted_uids, int ntrusted, char **reply_json,
			       hm_err_t *err)
{
	bool trusted = ntrusted <= 0;
	struct addrinfo hints = {
	    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char portstr[16];
	int64_t deadline_ms = hm_proto_now_ms() + (timeout_ms > 0 ? timeout_ms : 1);
	char *cred = NULL, *frame = NULL, *json = NULL;
	size_t flen;
	uint32_t uid, gid;
	int fd = -1, gai;
	hm_rc_t rc = HM_OK;

	*reply_json = NULL;
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
		fd = connect_one(ai, deadline_ms, err);
	if (fd < 0) {
		rc = err ? err->rc : HM_ERR_IO;
		hm_err_prefix(err, "coordinator %s:%d unreachable", host, port);
		goto out;
	}
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
