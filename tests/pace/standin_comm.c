/*
 * STAND-IN communicators over local sockets (tests only; see standin.h): enough
 * of NCCL's behaviour for the interposer's tests to be real about timing. The
 * process that calls ncclGetUniqueId runs a root thread listening on 127.0.0.1;
 * the id carries its port. ncclCommInitRank connects and returns once all
 * nranks ranks have (as NCCL's bootstrap does); every collective's "kernel",
 * when its stream reaches it, is a barrier through the root (a collective
 * starts when its last rank arrives) followed by STANDIN_KERNEL_US of sleep.
 * Ids not made by ncclGetUniqueId keep the old record-only behaviour.
 */
#define _GNU_SOURCE
#include "standin_comm.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_RANKS    64
#define MAX_COMMS    32
#define ID_PREFIX    "STANDIN:"
#define IO_TIMEOUT_S 120 /* a dead peer ends the test, never hangs it */

struct ncclComm {
	int fd;
	int rank, nranks;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm *socket_comms[MAX_COMMS];

typedef struct {
	int lfd;
} root_t;

static int read_full(int fd, void *buf, size_t n)
{
	char *b = buf;

	while (n > 0) {
		ssize_t r = read(fd, b, n);

		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Accept nranks ranks, release the init barrier, then one barrier per round. */
static void *root_main(void *arg)
{
	root_t *r = arg;
	int fds[MAX_RANKS], n = 0, nranks = MAX_RANKS;
	long count[MAX_RANKS] = {0}, released = 0;
	char one = 1;

	while (n < nranks) {
		int32_t hello[2];
		int fd = accept(r->lfd, NULL, NULL);

		if (fd < 0 || read_full(fd, hello, sizeof(hello)) != 0) {
			if (fd >= 0)
				close(fd);
			goto out;
		}
		nranks = hello[1] > 0 && hello[1] <= MAX_RANKS ? hello[1] : 1;
		fds[n++] = fd;
	}
	for (int i = 0; i < n; i++)
		if (write(fds[i], &one, 1) != 1)
			goto out;
	for (;;) {
		struct pollfd p[MAX_RANKS];
		long min = -1;

		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
		if (poll(p, (nfds_t)n, -1) < 0)
			goto out;
		for (int i = 0; i < n; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (read(fds[i], &one, 1) != 1)
				goto out; /* a rank left: the communicator is over */
			count[i]++;
		}
		for (int i = 0; i < n; i++)
			min = min < 0 || count[i] < min ? count[i] : min;
		for (; released < min; released++)
			for (int i = 0; i < n; i++)
				if (write(fds[i], &one, 1) != 1)
					goto out;
	}
out:
	for (int i = 0; i < n; i++)
		close(fds[i]);
	close(r->lfd);
	free(r);
	return NULL;
}

int standin_unique_id(ncclUniqueId *id)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	root_t *r = calloc(1, sizeof(*r));
	pthread_t t;

	memset(id, 0, sizeof(*id));
	if (!r)
		return -1;
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->lfd < 0 || bind(r->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(r->lfd, MAX_RANKS) != 0 || getsockname(r->lfd, (struct sockaddr *)&a, &len) != 0 ||
	    pthread_create(&t, NULL, root_main, r) != 0) {
		if (r->lfd >= 0)
			close(r->lfd);
		free(r);
		return -1;
	}
	pthread_detach(t);
	snprintf(id->internal, sizeof(id->internal), ID_PREFIX "%u", (unsigned)ntohs(a.sin_port));
	return 0;
}

int standin_comm_init(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
	struct ncclComm *c;
	int32_t hello[2] = {rank, nranks};
	unsigned port;
	char one;

	if (strncmp(id->internal, ID_PREFIX, strlen(ID_PREFIX)) != 0 ||
	    sscanf(id->internal + strlen(ID_PREFIX), "%u", &port) != 1)
		return 0; /* not ours: record only */
	c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->rank = rank;
	c->nranks = nranks;
	a.sin_port = htons((uint16_t)port);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    write(c->fd, hello, sizeof(hello)) != (ssize_t)sizeof(hello) ||
	    read_full(c->fd, &one, 1) != 0) {
		if (c->fd >= 0)
			close(c->fd);
		free(c);
		return -1;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_COMMS; i++)
		if (!socket_comms[i]) {
			socket_comms[i] = c;
			break;
		}
	pthread_mutex_unlock(&mu);
	*comm = c;
	return 1;
}

static int find(ncclComm_t comm)
{
	int i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < MAX_COMMS && (!comm || socket_comms[i] != comm); i++)
		;
	pthread_mutex_unlock(&mu);
	return i < MAX_COMMS ? i : -1;
}

void standin_comm_barrier(ncclComm_t comm)
{
	char one = 1;

	if (find(comm) < 0)
		return;
	if (write(comm->fd, &one, 1) != 1 || read_full(comm->fd, &one, 1) != 0)
		fprintf(stderr, "standin: rank %d: communicator barrier broken\n", comm->rank);
}

int standin_comm_count(ncclComm_t comm, int *n)
{
	if (find(comm) < 0)
		return -1;
	*n = comm->nranks;
	return 0;
}

int standin_comm_rank(ncclComm_t comm, int *r)
{
	if (find(comm) < 0)
		return -1;
	*r = comm->rank;
	return 0;
}

void standin_comm_destroy(ncclComm_t comm)
{
	int i = find(comm);

	if (i < 0)
		return;
	pthread_mutex_lock(&mu);
	socket_comms[i] = NULL;
	pthread_mutex_unlock(&mu);
	close(comm->fd);
	free(comm);
}
