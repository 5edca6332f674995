/* A FAKE coordinator speaking contract B over real TCP and munge (see fake_coord.h). */
#define _GNU_SOURCE /* accept4 */
#include "fake_coord.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hm_proto.h"

struct fake_coord {
	pthread_t thread;
	pthread_mutex_t mu;
	bool run, listening;
	int lfd, cfd, port;
	fake_mode_t mode;
	int heartbeat_ms, valid_ms, lead_ms;
	int64_t seq; /* our seq on the current connection */
	char *jobs;
	fake_seen_t seen;
};

static int64_t real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static bool listen_on(fake_coord_t *f)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->port)};
	socklen_t sl = sizeof(sa);
	int one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return false;
	setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(f->lfd, 4) != 0 ||
	    getsockname(f->lfd, (struct sockaddr *)&sa, &sl) != 0) {
		close(f->lfd);
		f->lfd = -1;
		return false;
	}
	f->port = ntohs(sa.sin_port);
	f->listening = true;
	return true;
}

static void close_conn(fake_coord_t *f)
{
	if (f->cfd >= 0)
		close(f->cfd);
	f->cfd = -1;
	f->seq = 0;
}

/* The same frame, bound to port + 1 of this host: sealed for another coordinator. */
static bool bind_elsewhere(fake_coord_t *f, char *tag, size_t len)
{
	char self[HM_PROTO_ADDR_MAX], peer[HM_PROTO_ADDR_MAX];

	snprintf(self, sizeof(self), "127.0.0.1:%d", f->port + 1);
	return hm_proto_sock_addr(f->cfd, true, peer, sizeof(peer), NULL) == HM_OK &&
	       hm_proto_bind_tag(tag, len, "coordinator>agent", peer, self, NULL) == HM_OK;
}

/* Seal and send one JSON object on the connection (mutex held). */
static void send_obj(fake_coord_t *f, json_object *o)
{
	char *cred = NULL, tag[HM_PROTO_BIND_MAX];
	hm_err_t err = {0};

	json_object_object_add(o, "seq", json_object_new_int64(++f->seq));
	if (hm_proto_conn_tag(f->cfd, "coordinator>agent", true, tag, sizeof(tag), &err) == HM_OK &&
	    (f->mode != FAKE_ELSEWHERE || bind_elsewhere(f, tag, sizeof(tag))) &&
	    hm_proto_seal_bound(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), 0, tag,
				&cred, &err) == HM_OK) {
		f->seen.last_sent_us = real_us();
		if (hm_proto_send(f->cfd, cred, strlen(cred), hm_proto_now_ms() + 1000, &err) !=
		    HM_OK)
			close_conn(f);
	}
	free(cred);
	json_object_put(o);
}

static json_object *head(const char *op, int64_t re)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "v", json_object_new_int(1));
	json_object_object_add(o, "op", json_object_new_string(op));
	json_object_object_add(o, "re", json_object_new_int64(re));
	return o;
}

static void send_assign(fake_coord_t *f, int64_t re)
{
	json_object *o = head("agent_assign", re), *nodes = json_object_new_array();
	json_object *n = json_object_new_object();

	json_object_object_add(n, "node", json_object_new_string("n1"));
	json_object_object_add(n, "jobs", json_tokener_parse(f->jobs ? f->jobs : "[]"));
	json_object_array_add(nodes, n);
	json_object_object_add(o, "nodes", nodes);
	send_obj(f, o);
}

static void on_hello(fake_coord_t *f, json_object *m, int64_t seq)
{
	json_object *o;

	f->seen.hellos++;
	f->seen.last_hello_us = real_us();
	json_object_put(f->seen.hello);
	f->seen.hello = json_object_get(m);
	if (f->mode == FAKE_SILENT)
		return;
	o = head("agent_welcome", seq);
	if (f->mode == FAKE_REFUSE) {
		json_object_object_add(o, "ok", json_object_new_boolean(0));
		json_object_object_add(o, "error",
				       json_object_new_string("node n1 is not in the topology"));
		json_object_object_add(o, "code", json_object_new_string("node"));
		f->seen.refusals++;
		send_obj(f, o);
		close_conn(f);
		return;
	}
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "heartbeat_ms", json_object_new_int(f->heartbeat_ms));
	json_object_object_add(o, "valid_ms", json_object_new_int(f->valid_ms));
	json_object_object_add(o, "lead_ms", json_object_new_int(f->lead_ms));
	f->seen.welcomes++;
	send_obj(f, o);
	if (f->cfd >= 0)
		send_assign(f, seq);
}

static void on_beat(fake_coord_t *f, json_object *m, int64_t seq)
{
	json_object *nodes, *jobs, *meas, *v;

	f->seen.beats++;
	if (getenv("FAKE_COORD_TRACE"))
		fprintf(stderr, "  [fake] %.3f %s\n", real_us() / 1e6,
			json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
	json_object_put(f->seen.beat);
	f->seen.beat = json_object_get(m);
	if (json_object_object_get_ex(m, "nodes", &nodes) && json_object_array_length(nodes) == 1 &&
	    json_object_object_get_ex(json_object_array_get_idx(nodes, 0), "jobs", &jobs)) {
		for (size_t i = 0; i < json_object_array_length(jobs); i++) {
			json_object *j = json_object_array_get_idx(jobs, i);

			if (!json_object_object_get_ex(j, "job_id", &v) ||
			    json_object_get_int64(v) != 42)
				continue;
			if (json_object_object_get_ex(j, "ranks", &v) &&
			    json_object_get_int(v) > f->seen.max_ranks)
				f->seen.max_ranks = json_object_get_int(v);
			if (json_object_object_get_ex(j, "steps", &v) &&
			    json_object_get_int(v) > f->seen.max_steps)
				f->seen.max_steps = json_object_get_int(v);
			f->seen.applied_epoch =
			    json_object_object_get_ex(j, "applied_epoch", &v) && v
				? (long)json_object_get_int64(v)
				: -1;
			if (json_object_object_get_ex(j, "meas", &meas) && meas) {
				json_object *s, *it;

				if (json_object_object_get_ex(meas, "samples", &s) &&
				    json_object_object_get_ex(meas, "iter_us", &it)) {
					f->seen.meas_samples += json_object_get_double(s);
					f->seen.meas_iter_weighted +=
					    json_object_get_double(s) * json_object_get_double(it);
				}
			}
		}
	} else {
		f->seen.bad_frames++;
	}
	if (f->mode == FAKE_ANSWER || f->mode == FAKE_ELSEWHERE)
		send_assign(f, seq);
}

/* One frame from the agent (mutex held). */
static void on_frame(fake_coord_t *f)
{
	char *frame = NULL, *json = NULL, tag[HM_PROTO_BIND_MAX];
	size_t len;
	uint32_t uid, gid;
	json_object *m = NULL, *op, *seq, *v;
	hm_err_t err = {0};
	bool bound = false;

	if (hm_proto_recv(f->cfd, 65536, hm_proto_now_ms() + 1000, &frame, &len, &err) != HM_OK) {
		close_conn(f);
		goto out;
	}
	/* The agent's frames must be bound to this connection (docs/protocol.md). */
	if (hm_proto_unseal(frame, &json, &uid, &gid, &err) != HM_OK || uid != 0 ||
	    hm_proto_conn_tag(f->cfd, "agent>coordinator", false, tag, sizeof(tag), &err) !=
		HM_OK ||
	    hm_proto_unbind(json, tag, &bound, &err) != HM_OK || !bound ||
	    !(m = json_tokener_parse(json)) || !json_object_object_get_ex(m, "op", &op) ||
	    !json_object_object_get_ex(m, "seq", &seq) || !json_object_object_get_ex(m, "v", &v) ||
	    json_object_get_int(v) != 1) {
		f->seen.bad_frames++;
		goto out;
	}
	if (strcmp(json_object_get_string(op), "agent_hello") == 0)
		on_hello(f, m, json_object_get_int64(seq));
	else if (strcmp(json_object_get_string(op), "agent_beat") == 0)
		on_beat(f, m, json_object_get_int64(seq));
	else
		f->seen.bad_frames++;
out:
	json_object_put(m);
	free(frame);
	free(json);
}

static void *serve(void *arg)
{
	fake_coord_t *f = arg;

	pthread_mutex_lock(&f->mu);
	while (f->run) {
		struct pollfd p[2] = {{.fd = f->lfd, .events = POLLIN},
				      {.fd = f->cfd, .events = POLLIN}};

		pthread_mutex_unlock(&f->mu);
		poll(p, 2, 20);
		pthread_mutex_lock(&f->mu);
		if (p[0].revents & POLLIN && f->lfd == p[0].fd && f->lfd >= 0) {
			int c = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0) {
				close_conn(f); /* one agent at a time */
				f->cfd = c;
			}
		}
		if (p[1].revents && f->cfd == p[1].fd && f->cfd >= 0)
			on_frame(f);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

fake_coord_t *fake_start(fake_mode_t mode, int heartbeat_ms, int valid_ms, int lead_ms)
{
	fake_coord_t *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	pthread_mutex_init(&f->mu, NULL);
	f->lfd = f->cfd = -1;
	f->mode = mode;
	f->heartbeat_ms = heartbeat_ms;
	f->valid_ms = valid_ms;
	f->lead_ms = lead_ms;
	f->seen.applied_epoch = -1;
	f->run = true;
	if (!listen_on(f) || pthread_create(&f->thread, NULL, serve, f) != 0) {
		free(f);
		return NULL;
	}
	return f;
}

int fake_port(const fake_coord_t *f)
{
	return f->port;
}

void fake_set_mode(fake_coord_t *f, fake_mode_t mode)
{
	pthread_mutex_lock(&f->mu);
	f->mode = mode;
	pthread_mutex_unlock(&f->mu);
}

void fake_set_jobs(fake_coord_t *f, const char *jobs_json)
{
	pthread_mutex_lock(&f->mu);
	free(f->jobs);
	f->jobs = strdup(jobs_json);
	pthread_mutex_unlock(&f->mu);
}

int64_t fake_push(fake_coord_t *f)
{
	int64_t t = -1;

	pthread_mutex_lock(&f->mu);
	if (f->cfd >= 0) {
		t = real_us();
		send_assign(f, 0);
	}
	pthread_mutex_unlock(&f->mu);
	return t;
}

void fake_down(fake_coord_t *f)
{
	pthread_mutex_lock(&f->mu);
	close_conn(f);
	if (f->lfd >= 0)
		close(f->lfd);
	f->lfd = -1;
	f->listening = false;
	pthread_mutex_unlock(&f->mu);
}

bool fake_up(fake_coord_t *f)
{
	bool ok;

	pthread_mutex_lock(&f->mu);
	ok = f->listening || listen_on(f);
	pthread_mutex_unlock(&f->mu);
	return ok;
}

void fake_drop(fake_coord_t *f)
{
	pthread_mutex_lock(&f->mu);
	close_conn(f);
	pthread_mutex_unlock(&f->mu);
}

void fake_seen(fake_coord_t *f, fake_seen_t *out)
{
	pthread_mutex_lock(&f->mu);
	*out = f->seen;
	out->hello = json_object_get(f->seen.hello);
	out->beat = json_object_get(f->seen.beat);
	pthread_mutex_unlock(&f->mu);
}

void fake_stop(fake_coord_t *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->run = false;
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thread, NULL);
	close_conn(f);
	if (f->lfd >= 0)
		close(f->lfd);
	json_object_put(f->seen.hello);
	json_object_put(f->seen.beat);
	free(f->jobs);
	pthread_mutex_destroy(&f->mu);
	free(f);
}
