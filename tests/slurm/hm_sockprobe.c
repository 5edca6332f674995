/*
 * hm_sockprobe.c - raw socket helper for the Slurm test tier (no Slurm).
 *
 *   hm_sockprobe send HOST PORT [--munge|--garbage|--tamper] < payload
 *       Frames stdin like the coordinator protocol (4-byte big-endian length +
 *       body) and prints the reply body, decoded when it is a munge credential.
 *       --munge seals stdin as the calling uid; --garbage sends stdin as is;
 *       --tamper seals it, then corrupts the credential. Exit 0 when a reply came.
 *   hm_sockprobe mute PORT SECONDS
 *       Accepts connections on 127.0.0.1:PORT and never answers (a coordinator
 *       that hangs), for SECONDS. Prints "ready" once listening.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <munge.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hm_parse.h"

#define MAX_BYTES (1 << 20)

static int usage(void)
{
	fprintf(stderr,
		"usage: hm_sockprobe send HOST PORT [--munge|--garbage|--tamper] < payload\n"
		"       hm_sockprobe mute PORT SECONDS\n");
	return 2;
}

static int io_all(int fd, void *buf, size_t n, bool wr)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = wr ? write(fd, (char *)buf + done, n - done)
			       : read(fd, (char *)buf + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static char *read_stdin(size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	size_t r;

	while (buf && (r = fread(buf + n, 1, cap - n, stdin)) > 0) {
		n += r;
		if (n == cap) {
			char *nb = cap < MAX_BYTES ? realloc(buf, cap * 2 + 1) : NULL;
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (buf)
		buf[n] = '\0';
	*len = n;
	return buf;
}

static int do_send(const char *host, const char *port_s, const char *how)
{
	hm_err_t err = {0};
	long port;
	size_t len = 0;
	char *payload = NULL, *cred = NULL, *reply = NULL;
	const char *body;
	uint32_t n_be;
	int fd = -1, rc = 1;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct timeval tv = {.tv_sec = 10};

	if (hm_parse_long(port_s, 1, 65535, &port, "port", &err) != HM_OK) {
		fprintf(stderr, "hm_sockprobe: %s\n", err.msg);
		return 2;
	}
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "hm_sockprobe: '%s' is not an IPv4 address\n", host);
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	payload = read_stdin(&len);
	if (!payload)
		goto out;
	body = payload;
	if (strcmp(how, "--munge") == 0 || strcmp(how, "--tamper") == 0) {
		munge_err_t e = munge_encode(&cred, NULL, payload, (int)len);
		if (e != EMUNGE_SUCCESS) {
			fprintf(stderr, "hm_sockprobe: munge_encode: %s\n", munge_strerror(e));
			goto out;
		}
		/* Flip characters in the middle of the base64 body: a forged credential. */
		if (strcmp(how, "--tamper") == 0) {
			size_t cl = strlen(cred);
			for (size_t i = cl / 2; i < cl / 2 + 8 && i + 1 < cl; i++)
				cred[i] = cred[i] == 'A' ? 'B' : 'A';
		}
		body = cred;
		len = strlen(cred);
	} else if (strcmp(how, "--garbage") != 0) {
		return usage();
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "hm_sockprobe: connect %s:%ld: %s\n", host, port, strerror(errno));
		goto out;
	}
	n_be = htonl((uint32_t)len);
	if (io_all(fd, &n_be, 4, true) || io_all(fd, (void *)body, len, true)) {
		fprintf(stderr, "hm_sockprobe: send: %s\n", strerror(errno));
		goto out;
	}
	if (io_all(fd, &n_be, 4, false)) {
		printf("(connection closed without a reply)\n");
		goto out;
	}
	len = ntohl(n_be);
	if (len > MAX_BYTES || !(reply = malloc(len + 1)) || io_all(fd, reply, len, false)) {
		printf("(bad reply frame)\n");
		goto out;
	}
	reply[len] = '\0';
	if (strncmp(reply, "MUNGE:", 6) == 0) {
		void *pl = NULL;
		int pl_len = 0;
		uid_t uid;
		gid_t gid;
		munge_err_t e = munge_decode(reply, NULL, &pl, &pl_len, &uid, &gid);
		if (e != EMUNGE_SUCCESS) {
			printf("(sealed reply that does not decode: %s)\n", munge_strerror(e));
			free(pl);
			goto out;
		}
		printf("%.*s\n", pl_len, (char *)pl);
		free(pl);
	} else {
		printf("%s\n", reply);
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(payload);
	free(cred);
	free(reply);
	return rc;
}

static int do_mute(const char *port_s, const char *secs_s)
{
	hm_err_t err = {0};
	long port, secs;
	int fd, one = 1, conns[64], nconn = 0;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	time_t end;

	if (hm_parse_long(port_s, 1, 65535, &port, "port", &err) != HM_OK ||
	    hm_parse_long(secs_s, 1, 3600, &secs, "seconds", &err) != HM_OK) {
		fprintf(stderr, "hm_sockprobe: %s\n", err.msg);
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16)) {
		fprintf(stderr, "hm_sockprobe: listen 127.0.0.1:%ld: %s\n", port, strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	end = time(NULL) + secs;
	while (time(NULL) < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 200) == 1 && nconn < 64) {
			int c = accept(fd, NULL, NULL);
			if (c >= 0)
				conns[nconn++] = c; /* kept open, never answered */
		}
	}
	for (int i = 0; i < nconn; i++)
		close(conns[i]);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 4 && strcmp(argv[1], "send") == 0)
		return do_send(argv[2], argv[3], argc >= 5 ? argv[4] : "--munge");
	if (argc == 4 && strcmp(argv[1], "mute") == 0)
		return do_mute(argv[2], argv[3]);
	return usage();
}
