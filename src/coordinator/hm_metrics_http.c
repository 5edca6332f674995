/*
 * hm_metrics_http.c - GET /metrics on MetricsListen: one thread, poll(2) over
 * the listening socket and at most HM_MX_MAX_CONNS connections, non-blocking
 * sockets, a deadline per connection, HTTP/1.0 and one request per
 * connection. It serves the text hm_metrics_srv_refresh published last (a copy
 * taken under pub_mu) and nothing else: a scrape never reaches the engine.
 */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "hm_metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hm_clock.h"
#include "hm_conf.h"
#include "hm_coord.h"
#include "hm_log.h"

typedef struct {
	int fd; /* -1: free */
	bool writing;
	int64_t deadline_ms;
	char in[HM_MX_REQ_MAX_BYTES];
	size_t nin;
	char *out;
	size_t nout, sent;
} conn_t;

struct hm_metrics_srv {
	int lfd, port;
	int wake[2]; /* a byte on wake[1] stops the thread */
	pthread_t thread;
	bool started;
	char slurm_version[64];
	pthread_mutex_t pub_mu;
	char *text; /* the latest published text; NULL until the first */
	size_t len;
	conn_t conns[HM_MX_MAX_CONNS];
};

static void conn_close(conn_t *k)
{
	if (k->fd >= 0)
		close(k->fd);
	free(k->out);
	k->fd = -1;
	k->out = NULL;
	k->writing = false;
}

/* A reply with its headers; body NULL: none (HEAD, errors carry a line). */
static void conn_reply(conn_t *k, const char *status, const char *type, const char *body,
		       size_t blen, bool head)
{
	char hdr[256];
	int h = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n",
			 status, type, blen);

	k->writing = true;
	k->deadline_ms = hm_mono_ms() + HM_MX_TIMEOUT_MS;
	k->sent = 0;
	k->nout = (size_t)h + (head ? 0 : blen);
	if (!(k->out = malloc(k->nout + 1))) {
		conn_close(k);
		return;
	}
	memcpy(k->out, hdr, (size_t)h);
	if (!head && blen)
		memcpy(k->out + h, body, blen);
}

static void conn_error(conn_t *k, const char *status, const char *line)
{
	conn_reply(k, status, "text/plain; charset=utf-8", line, strlen(line), false);
}

/* A whole request head arrived: answer it. */
static void conn_answer(hm_metrics_srv_t *s, conn_t *k)
{
	char method[8], path[128];
	bool head;

	k->in[k->nin] = '\0';
	if (sscanf(k->in, "%7s %127s HTTP/%*d.%*d", method, path) != 2) {
		conn_error(k, "400 Bad Request", "bad request line\n");
		return;
	}
	head = strcmp(method, "HEAD") == 0;
	if (!head && strcmp(method, "GET") != 0) {
		conn_error(k, "405 Method Not Allowed", "GET /metrics only\n");
		return;
	}
	if (strcmp(path, "/metrics") != 0 && strncmp(path, "/metrics?", 9) != 0) {
		conn_error(k, "404 Not Found", "GET /metrics only\n");
		return;
	}
	pthread_mutex_lock(&s->pub_mu);
	if (s->text)
		conn_reply(k, "200 OK", "text/plain; version=0.0.4; charset=utf-8", s->text, s->len,
			   head);
	pthread_mutex_unlock(&s->pub_mu);
	if (!k->writing && k->fd >= 0)
		conn_error(k, "503 Service Unavailable", "no metrics published yet\n");
}

static void conn_read(hm_metrics_srv_t *s, conn_t *k)
{
	ssize_t r = recv(k->fd, k->in + k->nin, sizeof(k->in) - 1 - k->nin, 0);

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		conn_close(k); /* gone before its request was whole */
		return;
	}
	k->nin += (size_t)r;
	k->in[k->nin] = '\0';
	if (strstr(k->in, "\r\n\r\n") || strstr(k->in, "\n\n"))
		conn_answer(s, k);
	else if (k->nin >= sizeof(k->in) - 1)
		conn_error(k, "431 Request Header Fields Too Large", "request too large\n");
}

static void conn_write(conn_t *k)
{
	ssize_t w = send(k->fd, k->out + k->sent, k->nout - k->sent, MSG_NOSIGNAL);

	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (w < 0) {
		conn_close(k);
		return;
	}
	k->sent += (size_t)w;
	if (k->sent == k->nout) {
		shutdown(k->fd, SHUT_WR);
		conn_close(k);
	}
}

static void do_accept(hm_metrics_srv_t *s)
{
	int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	conn_t *k = NULL;

	if (fd < 0)
		return;
	for (int i = 0; i < HM_MX_MAX_CONNS && !k; i++)
		if (s->conns[i].fd < 0)
			k = &s->conns[i];
	if (!k) { /* full: the newcomer goes, those in progress finish */
		close(fd);
		return;
	}
	memset(k, 0, sizeof(*k));
	k->fd = fd;
	k->deadline_ms = hm_mono_ms() + HM_MX_TIMEOUT_MS;
}

static void *serve(void *arg)
{
	hm_metrics_srv_t *s = arg;
	struct pollfd pf[HM_MX_MAX_CONNS + 2];
	int who[HM_MX_MAX_CONNS + 2];

	for (;;) {
		int n = 0, timeout = 1000;
		int64_t now = hm_mono_ms();

		pf[n++] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		for (int i = 0; i < HM_MX_MAX_CONNS; i++) {
			conn_t *k = &s->conns[i];

			if (k->fd < 0)
				continue;
			if (now >= k->deadline_ms) { /* too slow either way */
				conn_close(k);
				continue;
			}
			if (k->deadline_ms - now < timeout)
				timeout = (int)(k->deadline_ms - now);
			who[n] = i;
			pf[n++] =
			    (struct pollfd){.fd = k->fd, .events = k->writing ? POLLOUT : POLLIN};
		}
		if (poll(pf, (nfds_t)n, timeout) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		if (pf[1].revents & POLLIN)
			do_accept(s);
		for (int p = 2; p < n; p++) {
			conn_t *k = &s->conns[who[p]];

			if (!pf[p].revents || k->fd != pf[p].fd)
				continue;
			if (k->writing)
				conn_write(k);
			else
				conn_read(s, k);
		}
	}
	return NULL;
}

hm_rc_t hm_metrics_srv_start(const char *listen_on, const char *slurm_version,
			     hm_metrics_srv_t **out, hm_err_t *err)
{
	hm_metrics_srv_t *s;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	char addr[HM_CONF_HOST_MAX];
	int port, one = 1;
	hm_rc_t rc = HM_OK;

	*out = NULL;
	if (!(s = calloc(1, sizeof(*s))))
		return hm_err_set(err, HM_ERR_NOMEM, "metrics: out of memory");
	s->lfd = s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->pub_mu, NULL);
	for (int i = 0; i < HM_MX_MAX_CONNS; i++)
		s->conns[i].fd = -1;
	snprintf(s->slurm_version, sizeof(s->slurm_version), "%s",
		 slurm_version ? slurm_version : "");
	if (!hm_conf_split_listen(listen_on, addr, sizeof(addr), &port) ||
	    inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		rc = hm_err_set(err, HM_ERR_INVAL,
				"MetricsListen='%s' is not an address (accepted: A.B.C.D:PORT)",
				listen_on);
		goto out;
	}
	sa.sin_port = htons((uint16_t)port);
	if ((s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(s->lfd, HM_MX_MAX_CONNS) != 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &sl) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "metrics: cannot listen on %s: %s", listen_on,
				strerror(errno));
		goto out;
	}
	s->port = ntohs(sa.sin_port);
	if (pipe2(s->wake, O_CLOEXEC) != 0 || pthread_create(&s->thread, NULL, serve, s) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "metrics: cannot start its thread: %s",
				strerror(errno));
		goto out;
	}
	s->started = true;
	*out = s;
	s = NULL;
out:
	hm_metrics_srv_stop(s);
	return rc;
}

int hm_metrics_srv_port(const hm_metrics_srv_t *s)
{
	return s ? s->port : -1;
}

void hm_metrics_srv_refresh(hm_metrics_srv_t *s, hm_coord_t *c)
{
	hm_err_t err = {0};
	char *text, *old;
	size_t len;

	if (!s)
		return;
	if (hm_metrics_render(c, s->slurm_version, &text, &len, &err) != HM_OK) {
		hm_log(HM_LOG_ERROR, "%s", err.msg);
		return;
	}
	pthread_mutex_lock(&s->pub_mu);
	old = s->text;
	s->text = text;
	s->len = len;
	pthread_mutex_unlock(&s->pub_mu);
	free(old);
}

void hm_metrics_srv_stop(hm_metrics_srv_t *s)
{
	if (!s)
		return;
	if (s->started) {
		char b = 1;

		if (write(s->wake[1], &b, 1) != 1)
			hm_log(HM_LOG_ERROR, "metrics: cannot wake its thread: %s",
			       strerror(errno));
		pthread_join(s->thread, NULL);
	}
	for (int i = 0; i < HM_MX_MAX_CONNS; i++)
		conn_close(&s->conns[i]);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	pthread_mutex_destroy(&s->pub_mu);
	free(s->text);
	free(s);
}
