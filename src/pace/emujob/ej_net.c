/*
 * harmonics-emujob networking: rendezvous at rank 0, a TCP ring between ranks,
 * a star barrier (ready time up, slot index down) and a ring all-reduce.
 * Every socket is non-blocking and every wait is bounded by the peer timeout.
 */
#define _GNU_SOURCE
#include "hm_clock.h"
#include "ej.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EJ_MAGIC 0x484d454aU /* "HMEJ" */

struct hello {
	uint32_t magic, rank, nranks, ring_port;
};
struct table {
	uint32_t magic, next_addr, next_port, pad;
};
struct up_msg {
	uint32_t magic, iter;
	int64_t ready_us;
};
struct down_msg {
	uint32_t magic, iter;
	int64_t slot;
	uint32_t stop, pad; /* stop: 1 when rank 0 ends the run at this barrier */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Move len bytes (write or read) within timeout_ms of no progress. */
static hm_rc_t io_full(int fd, void *buf, size_t len, bool wr, int timeout_ms, const char *who,
		       hm_err_t *err)
{
	char *p = buf;

	while (len > 0) {
		ssize_t k = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		struct pollfd pf = {.fd = fd, .events = wr ? POLLOUT : POLLIN};

		if (k > 0) {
			p += k;
			len -= (size_t)k;
			continue;
		}
		if (k == 0)
			return hm_err_set(err, HM_ERR_PROTO, "%s closed the connection", who);
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return hm_err_set(err, HM_ERR_IO, "%s: %s", who, strerror(errno));
		k = poll(&pf, 1, timeout_ms);
		if (k == 0)
			return hm_err_set(err, HM_ERR_TIMEOUT, "%s silent for %d ms", who,
					  timeout_ms);
		if (k < 0 && errno != EINTR)
			return hm_err_set(err, HM_ERR_IO, "poll on %s: %s", who, strerror(errno));
	}
	return HM_OK;
}

static hm_rc_t tune(int fd, const ej_opts_t *o, bool ring, hm_err_t *err)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (ring && o->tcp_cc[0] &&
	    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, o->tcp_cc, strlen(o->tcp_cc)) != 0)
		return hm_err_set(err, HM_ERR_INVAL,
				  "--tcp-cc %s: %s (see "
				  "/proc/sys/net/ipv4/tcp_available_congestion_control)",
				  o->tcp_cc, strerror(errno));
	return set_nonblock(fd) == 0 ? HM_OK
				     : hm_err_set(err, HM_ERR_IO, "fcntl: %s", strerror(errno));
}

hm_rc_t ej_net_listen_any(int port, int *fd_out, int *port_out, hm_err_t *err)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return hm_err_set(err, HM_ERR_IO, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 128) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) != 0 || set_nonblock(fd) != 0) {
		hm_err_set(err, HM_ERR_IO, "listen on port %d: %s", port, strerror(errno));
		close(fd);
		return err ? err->rc : HM_ERR_IO;
	}
	*fd_out = fd;
	*port_out = ntohs(a.sin_port);
	return HM_OK;
}

static hm_rc_t accept_one(int lfd, int timeout_ms, int *fd_out, hm_err_t *err)
{
	struct pollfd pf = {.fd = lfd, .events = POLLIN};
	int64_t deadline = hm_mono_ms() + timeout_ms;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		int left = (int)(deadline - hm_mono_ms());

		if (fd >= 0) {
			*fd_out = fd;
			return HM_OK;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return hm_err_set(err, HM_ERR_IO, "accept: %s", strerror(errno));
		if (left <= 0)
			return hm_err_set(err, HM_ERR_TIMEOUT,
					  "no peer connected within %d ms (are all ranks started "
					  "with the same --rendezvous?)",
					  timeout_ms);
		poll(&pf, 1, left);
	}
}

/* Connect to addr, retrying while the listener is not up yet. */
static hm_rc_t connect_retry(const struct sockaddr_in *addr, int timeout_ms, const char *who,
			     int *fd_out, hm_err_t *err)
{
	int64_t deadline = hm_mono_ms() + timeout_ms;

	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return hm_err_set(err, HM_ERR_IO, "socket: %s", strerror(errno));
		if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0) {
			*fd_out = fd;
			return HM_OK;
		}
		close(fd);
		if (hm_mono_ms() >= deadline)
			return hm_err_set(err, HM_ERR_TIMEOUT, "cannot connect to %s %s:%d: %s",
					  who, inet_ntoa(addr->sin_addr), ntohs(addr->sin_port),
					  strerror(errno));
		usleep(50000);
	}
}

static hm_rc_t resolve(const char *host, int port, struct sockaddr_in *out, hm_err_t *err)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int e = getaddrinfo(host, NULL, &hints, &res);

	if (e != 0 || !res)
		return hm_err_set(err, HM_ERR_INVAL, "--rendezvous host '%s': %s", host,
				  gai_strerror(e));
	memcpy(out, res->ai_addr, sizeof(*out));
	out->sin_port = htons((uint16_t)port);
	freeaddrinfo(res);
	return HM_OK;
}

/* Rank 0: collect hellos, send each rank the address of its ring successor. */
static hm_rc_t rendezvous_root(ej_net_t *n, const ej_opts_t *o, int ring_port,
			       struct sockaddr_in *next, hm_err_t *err)
{
	struct sockaddr_in *addrs = calloc((size_t)n->nranks, sizeof(*addrs));
	int lfd = o->listen_fd, port = o->rdv_port;
	hm_rc_t rc = HM_OK;

	if (!addrs)
		return hm_err_set(err, HM_ERR_NOMEM, "out of memory");
	if (lfd < 0 && (rc = ej_net_listen_any(port, &lfd, &port, err)))
		goto out;
	for (int i = 1; i < n->nranks; i++) {
		struct hello h;
		socklen_t alen = sizeof(addrs[0]);
		int fd = -1;

		if ((rc = accept_one(lfd, n->timeout_ms, &fd, err)))
			goto out;
		if ((rc = tune(fd, o, false, err)) ||
		    (rc =
			 io_full(fd, &h, sizeof(h), false, n->timeout_ms, "a joining rank", err))) {
			close(fd);
			goto out;
		}
		if (ntohl(h.magic) != EJ_MAGIC || ntohl(h.nranks) != (uint32_t)n->nranks ||
		    ntohl(h.rank) == 0 || ntohl(h.rank) >= (uint32_t)n->nranks ||
		    n->down_fds[ntohl(h.rank)] >= 0) {
			close(fd);
			rc = hm_err_set(err, HM_ERR_PROTO,
					"a peer announced rank %u of %u; expected a free rank in "
					"[1, %d) of %d (same --ranks everywhere?)",
					ntohl(h.rank), ntohl(h.nranks), n->nranks, n->nranks);
			goto out;
		}
		n->down_fds[ntohl(h.rank)] = fd;
		getpeername(fd, (struct sockaddr *)&addrs[ntohl(h.rank)], &alen);
		addrs[ntohl(h.rank)].sin_port = htons((uint16_t)ntohl(h.ring_port));
	}
	/* Rank 0's own ring address, as its predecessor (rank n-1) sees it. */
	{
		socklen_t alen = sizeof(addrs[0]);

		getsockname(n->down_fds[n->nranks - 1], (struct sockaddr *)&addrs[0], &alen);
		addrs[0].sin_port = htons((uint16_t)ring_port);
	}
	for (int r = 1; r < n->nranks; r++) {
		const struct sockaddr_in *s = &addrs[(r + 1) % n->nranks];
		struct table t = {htonl(EJ_MAGIC), s->sin_addr.s_addr, htonl(ntohs(s->sin_port)),
				  0};

		if ((rc = io_full(n->down_fds[r], &t, sizeof(t), true, n->timeout_ms, "a rank",
				  err)))
			goto out;
	}
	*next = addrs[1];
out:
	if (lfd >= 0)
		close(lfd);
	free(addrs);
	return rc;
}

static hm_rc_t rendezvous_peer(ej_net_t *n, const ej_opts_t *o, int ring_port,
			       struct sockaddr_in *next, hm_err_t *err)
{
	struct sockaddr_in rdv;
	struct hello h = {htonl(EJ_MAGIC), htonl((uint32_t)n->rank), htonl((uint32_t)n->nranks),
			  htonl((uint32_t)ring_port)};
	struct table t;
	hm_rc_t rc;

	if ((rc = resolve(o->rdv_host, o->rdv_port, &rdv, err)) ||
	    (rc = connect_retry(&rdv, n->timeout_ms, "rank 0 (rendezvous)", &n->up_fd, err)) ||
	    (rc = tune(n->up_fd, o, false, err)) ||
	    (rc = io_full(n->up_fd, &h, sizeof(h), true, n->timeout_ms, "rank 0", err)) ||
	    (rc = io_full(n->up_fd, &t, sizeof(t), false, n->timeout_ms, "rank 0", err)))
		return rc;
	if (ntohl(t.magic) != EJ_MAGIC)
		return hm_err_set(err, HM_ERR_PROTO, "rank 0 sent a bad ring table");
	memset(next, 0, sizeof(*next));
	next->sin_family = AF_INET;
	next->sin_addr.s_addr = t.next_addr;
	next->sin_port = htons((uint16_t)ntohl(t.next_port));
	return HM_OK;
}

hm_rc_t ej_net_open(ej_net_t *n, const ej_opts_t *o, hm_err_t *err)
{
	struct sockaddr_in next;
	int ring_lfd = -1, ring_port = 0;
	uint32_t me, them = 0;
	hm_rc_t rc = HM_OK;

	memset(n, 0, sizeof(*n));
	n->nranks = o->nranks;
	n->rank = o->rank;
	n->next_fd = n->prev_fd = n->up_fd = -1;
	n->timeout_ms = (int)(o->timeout_s * 1000);
	if (n->nranks == 1)
		return HM_OK;
	if (n->rank == 0) {
		n->down_fds = malloc(sizeof(int) * (size_t)n->nranks);
		if (!n->down_fds)
			return hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		for (int i = 0; i < n->nranks; i++)
			n->down_fds[i] = -1;
	}
	if ((rc = ej_net_listen_any(0, &ring_lfd, &ring_port, err)))
		goto out;
	rc = n->rank == 0 ? rendezvous_root(n, o, ring_port, &next, err)
			  : rendezvous_peer(n, o, ring_port, &next, err);
	if (rc)
		goto out;
	/* Every listener exists before the table went out: connect, then accept. */
	me = htonl((uint32_t)n->rank);
	if ((rc = connect_retry(&next, n->timeout_ms, "ring successor", &n->next_fd, err)) ||
	    (rc = tune(n->next_fd, o, true, err)) ||
	    (rc = io_full(n->next_fd, &me, sizeof(me), true, n->timeout_ms, "ring successor",
			  err)) ||
	    (rc = accept_one(ring_lfd, n->timeout_ms, &n->prev_fd, err)) ||
	    (rc = tune(n->prev_fd, o, true, err)) ||
	    (rc = io_full(n->prev_fd, &them, sizeof(them), false, n->timeout_ms, "ring predecessor",
			  err)))
		goto out;
	if (ntohl(them) != (uint32_t)((n->rank + n->nranks - 1) % n->nranks))
		rc =
		    hm_err_set(err, HM_ERR_PROTO, "ring predecessor announced rank %u, expected %d",
			       ntohl(them), (n->rank + n->nranks - 1) % n->nranks);
out:
	close_fd(&ring_lfd);
	if (rc != HM_OK) {
		hm_err_prefix(err, "rank %d", n->rank);
		ej_net_close(n);
	}
	return rc;
}

void ej_net_close(ej_net_t *n)
{
	if (!n)
		return;
	close_fd(&n->next_fd);
	close_fd(&n->prev_fd);
	close_fd(&n->up_fd);
	if (n->down_fds)
		for (int i = 0; i < n->nranks; i++)
			close_fd(&n->down_fds[i]);
	free(n->down_fds);
	n->down_fds = NULL;
}

hm_rc_t ej_net_barrier(ej_net_t *n, uint32_t iter, int64_t ready_us, ej_plan_fn plan, void *ctx,
		       int64_t *slot, bool *stop, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;

	if (n->rank == 0) {
		int64_t max_ready = ready_us;

		for (int r = 1; r < n->nranks; r++) {
			struct up_msg m;

			if ((rc = io_full(n->down_fds[r], &m, sizeof(m), false, n->timeout_ms,
					  "a rank (barrier)", err)))
				return rc;
			if (ntohl(m.magic) != EJ_MAGIC || ntohl(m.iter) != iter)
				return hm_err_set(err, HM_ERR_PROTO,
						  "rank %d is at iteration %u, expected %u", r,
						  ntohl(m.iter), iter);
			if ((int64_t)be64toh((uint64_t)m.ready_us) > max_ready)
				max_ready = (int64_t)be64toh((uint64_t)m.ready_us);
		}
		*slot = plan(ctx, max_ready);
		for (int r = 1; r < n->nranks; r++) {
			struct down_msg d = {htonl(EJ_MAGIC), htonl(iter),
					     (int64_t)htobe64((uint64_t)*slot), htonl(*stop ? 1 : 0),
					     0};

			if ((rc = io_full(n->down_fds[r], &d, sizeof(d), true, n->timeout_ms,
					  "a rank (barrier)", err)))
				return rc;
		}
	} else {
		struct up_msg m = {htonl(EJ_MAGIC), htonl(iter),
				   (int64_t)htobe64((uint64_t)ready_us)};
		struct down_msg d;

		if ((rc = io_full(n->up_fd, &m, sizeof(m), true, n->timeout_ms, "rank 0", err)) ||
		    (rc = io_full(n->up_fd, &d, sizeof(d), false, n->timeout_ms, "rank 0", err)))
			return rc;
		if (ntohl(d.magic) != EJ_MAGIC || ntohl(d.iter) != iter)
			return hm_err_set(err, HM_ERR_PROTO,
					  "rank 0 answered iteration %u, expected %u",
					  ntohl(d.iter), iter);
		*slot = (int64_t)be64toh((uint64_t)d.slot);
		*stop = ntohl(d.stop) != 0;
	}
	return HM_OK;
}

/* One ring step: send [sbuf, slen) to next while receiving rlen bytes into rbuf. */
static hm_rc_t exchange(ej_net_t *n, const char *sbuf, size_t slen, char *rbuf, size_t rlen,
			hm_err_t *err)
{
	while (slen > 0 || rlen > 0) {
		struct pollfd pf[2] = {{.fd = slen ? n->next_fd : -1, .events = POLLOUT},
				       {.fd = rlen ? n->prev_fd : -1, .events = POLLIN}};
		int k = poll(pf, 2, n->timeout_ms);

		if (k == 0)
			return hm_err_set(err, HM_ERR_TIMEOUT, "ring neighbour silent for %d ms",
					  n->timeout_ms);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return hm_err_set(err, HM_ERR_IO, "poll: %s", strerror(errno));
		}
		if (slen && (pf[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = send(n->next_fd, sbuf, slen, MSG_NOSIGNAL);

			if (w < 0 && errno != EAGAIN && errno != EINTR)
				return hm_err_set(err, HM_ERR_IO, "send to ring successor: %s",
						  strerror(errno));
			if (w > 0) {
				sbuf += w;
				slen -= (size_t)w;
			}
		}
		if (rlen && (pf[1].revents & (POLLIN | POLLERR | POLLHUP))) {
			ssize_t r = recv(n->prev_fd, rbuf, rlen, 0);

			if (r == 0)
				return hm_err_set(err, HM_ERR_PROTO,
						  "ring predecessor closed the connection");
			if (r < 0 && errno != EAGAIN && errno != EINTR)
				return hm_err_set(err, HM_ERR_IO, "recv from ring predecessor: %s",
						  strerror(errno));
			if (r > 0) {
				rbuf += r;
				rlen -= (size_t)r;
			}
		}
	}
	return HM_OK;
}

hm_rc_t ej_net_allreduce(ej_net_t *n, float *buf, size_t count, hm_err_t *err)
{
	int N = n->nranks, r = n->rank;
	size_t maxseg = count / (size_t)N + 1;
	float *tmp;
	hm_rc_t rc = HM_OK;

#define SEG_LO(i) ((size_t)(i)*count / (size_t)N)
#define SEG_N(i)  (SEG_LO((i) + 1) - SEG_LO(i))
	if (N == 1)
		return HM_OK;
	tmp = malloc(maxseg * sizeof(float));
	if (!tmp)
		return hm_err_set(err, HM_ERR_NOMEM, "out of memory for %zu floats", maxseg);
	/* Reduce-scatter: after N-1 steps rank r owns the full sum of segment (r+1)%N. */
	for (int s = 0; s < N - 1 && rc == HM_OK; s++) {
		int si = ((r - s) % N + N) % N, ri = ((r - s - 1) % N + N) % N;

		rc = exchange(n, (const char *)(buf + SEG_LO(si)), SEG_N(si) * sizeof(float),
			      (char *)tmp, SEG_N(ri) * sizeof(float), err);
		for (size_t i = 0; rc == HM_OK && i < SEG_N(ri); i++)
			buf[SEG_LO(ri) + i] += tmp[i];
	}
	/* All-gather: pass the finished segments around the ring. */
	for (int s = 0; s < N - 1 && rc == HM_OK; s++) {
		int si = ((r + 1 - s) % N + N) % N, ri = ((r - s) % N + N) % N;

		rc = exchange(n, (const char *)(buf + SEG_LO(si)), SEG_N(si) * sizeof(float),
			      (char *)(buf + SEG_LO(ri)), SEG_N(ri) * sizeof(float), err);
	}
#undef SEG_LO
#undef SEG_N
	free(tmp);
	if (rc != HM_OK)
		hm_err_prefix(err, "rank %d all-reduce", r);
	return rc;
}
