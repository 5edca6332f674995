/*
 * coord_load: the coordinator under load and attack (issue 28 item 6; prints
 * numbers, and fails only when a legitimate request failed).
 *
 * Four processes, forked before any thread starts:
 *   coordinator  hm_coord + hm_server on 127.0.0.1 (the code slurmctld's sched
 *                plugin runs, in a test host: no slurmctld, whose job list
 *                and locks this leaves out) with --jobs running jobs, and a
 *                stand-in for the sched thread: hm_coord_decide every
 *                --epoch-ms (the decision round, timed) and a count of the
 *                wake-ups registrations caused (hm_coord_wait_work).
 *   flooder      one user (uid 1001): --flood threads registering unknown job
 *                ids back to back.
 *   legit        another user (uid 1000), owner of jobs 1..100: every
 *                --legit-ms a `status` (what harmonicsctl status sends) and a
 *                step's `register` of one of its jobs, each timed; any
 *                failure counts.
 *   this one     --agents node agents (contract B: hello, a beat every
 *                --heartbeat-ms listing the node's jobs, agent_assign back;
 *                sealed by root), each from its own loopback address
 *                127.1.x.y, eight threads; and --hostile connections from
 *                127.3.0.1: a third silent, a third sending a header and then
 *                a byte now and then, a third garbage frames, each reopened
 *                when the server closes it.
 * Every message is munge-sealed by the real libmunge. As in a cluster, the
 * coordinator (4 threads) and the flooder's node (2) have a munged of their
 * own (a private mount namespace each); the agents and the legitimate user
 * share the one tests/load/coord_load.sh starts (HM_MUNGE_THREADS, 8).
 *
 * Measured over --duration-s once every agent is welcomed: p50/p99/max of the
 * legitimate status and register, of the agents' beat -> agent_assign round
 * trip, the decision rounds' times, the coordinator process's CPU (utime +
 * stime over the window / wall) and memory (VmRSS, VmHWM), the wake-ups, the
 * flood's and the hostile connections' outcomes, the server's counters.
 *
 * Usage: coord_load [--agents N] [--jobs N] [--hostile N] [--flood N]
 *        [--duration-s S] [--heartbeat-ms MS] [--epoch-ms MS] [--legit-ms MS]
 *        (default 1024 agents, 10000 jobs, 64 hostile, 128 flood threads, 20 s,
 *        heartbeat 1000 ms, epoch 10000 ms, legit every 100 ms; root, munged)
 *
 * With --port, the coordinator is slurmctld's (tests/load/ctld_load.sh): no
 * coordinator process, no made-up jobs. --nodes HOSTLIST are the agents' nodes,
 * --jobs-file the running jobs ("JOBID UID NODELIST" lines, squeue's), the
 * legitimate user --legit-uid (its jobs in the file), the flooder --flood-uid,
 * and the CPU and memory measured are --ctld-pid's. The heartbeat is the one
 * harmonics.conf gives (the agents beat at --heartbeat-ms: say the same).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hm_agent_wire.h"
#include "hm_client.h"
#include "hm_clock.h"
#include "hm_coord.h"
#include "hm_hostlist.h"
#include "hm_json.h"
#include "hm_log.h"
#include "hm_proto.h"
#include "hm_server.h"
#include "load_cluster.h"

#define HOSTS_PER_RACK 8
#define AGENT_THREADS  8
#define LEGIT_UID      1000
#define FLOOD_UID      1001
#define LEGIT_JOBS     100
#define MAX_SAMPLES    200000

typedef struct {
	int agents, jobs, hostile, flood, duration_s, heartbeat_ms, epoch_ms, legit_ms;
	int port, ctld_pid, legit_uid, flood_uid; /* port: slurmctld's coordinator */
	const char *nodes, *jobs_file;
} opts_t;

static opts_t o = {1024, 10000, 64, 128, 20, 1000, 10000, 100,
		   0, 0, LEGIT_UID, FLOOD_UID, NULL, NULL};
static hm_topo_t *topo;
static lc_t cl; /* the hosts and running jobs */

/* ---- samples ---------------------------------------------------------------------- */

typedef struct {
	double *v;
	int n, cap;
	pthread_mutex_t mu;
} samples_t;

static void sample_add(samples_t *s, double x)
{
	pthread_mutex_lock(&s->mu);
	if (s->n < s->cap)
		s->v[s->n++] = x;
	pthread_mutex_unlock(&s->mu);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	return n ? v[i < n ? i : n - 1] : 0;
}

static void sample_print(FILE *f, const char *what, samples_t *s)
{
	qsort(s->v, (size_t)s->n, sizeof(double), cmp_dbl);
	fprintf(f, "%-28s n=%-7d p50=%8.2f ms  p99=%8.2f ms  max=%8.2f ms\n", what, s->n,
		pct(s->v, s->n, 0.5), pct(s->v, s->n, 0.99), s->n ? s->v[s->n - 1] : 0);
}

static void samples_init(samples_t *s, int cap)
{
	s->v = calloc((size_t)cap, sizeof(double));
	s->cap = s->v ? cap : 0;
	s->n = 0;
	pthread_mutex_init(&s->mu, NULL);
}

/*
 * A munged of this process's own (root, before dropping privileges): a private
 * mount namespace with a tmpfs on /run/munge, where libmunge looks. The
 * controller and the flooder's node each have their own munged in a cluster;
 * sharing one would make a local flood of munged itself the bottleneck.
 */
static int own_munged(int threads)
{
	char cmd[512];

	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("tmpfs", "/run/munge", "tmpfs", 0, "mode=0755") != 0) {
		perror("coord_load: a munged of its own");
		return -1;
	}
	snprintf(cmd, sizeof(cmd),
		 "chown munge:munge /run/munge && runuser -u munge -- /usr/sbin/munged "
		 "--num-threads=%d --pid-file=/run/munge/munged.pid --log-file=/run/munge/log "
		 "--seed-file=/run/munge/seed && for i in $(seq 50); do munge -n 2>/dev/null | "
		 "unmunge >/dev/null 2>&1 && exit 0; sleep 0.1; done; exit 1",
		 threads);
	return system(cmd) == 0 ? 0 : -1;
}

static void own_munged_stop(void)
{
	(void)!system("kill $(cat /run/munge/munged.pid) 2>/dev/null");
}

/* ---- the coordinator process ------------------------------------------------------- */

static atomic_bool coord_stop;
static atomic_long coord_wakes;

typedef struct {
	hm_coord_t *c;
	samples_t rounds;
} sched_t;

static void *sched_main(void *arg)
{
	sched_t *s = arg;
	int64_t next = hm_mono_ms() + o.epoch_ms;

	while (!atomic_load(&coord_stop)) {
		int64_t now = hm_mono_ms();

		if (now >= next) {
			hm_err_t err = {0};
			bool changed;
			int64_t t0 = hm_clock_us(CLOCK_MONOTONIC);

			if (hm_coord_decide(s->c, hm_real_s(), &changed, &err) != HM_OK)
				fprintf(stderr, "coord_load: decide: %s\n", err.msg);
			sample_add(&s->rounds,
				   (double)(hm_clock_us(CLOCK_MONOTONIC) - t0) / 1000.0);
			next = hm_mono_ms() + o.epoch_ms;
			continue;
		}
		if (hm_coord_wait_work(s->c, (int)(next - now < 200 ? next - now : 200)))
			atomic_fetch_add(&coord_wakes, 1);
	}
	return NULL;
}

/* Serves until stdin closes; writes its port, then its report, to out. */
static int coord_main(int out)
{
	hm_conf_t conf;
	hm_err_t err = {0};
	hm_coord_t *c = NULL;
	hm_server_t *s = NULL;
	sched_t sch = {0};
	pthread_t th;
	bool changed;
	int port, ret = 1;
	int64_t t0;
	char nodes[512], ch;
	FILE *f = fdopen(out, "w");

	if (own_munged(4) != 0)
		return 1;
	hm_conf_defaults(&conf);
	conf.listen_port = 0;
	conf.heartbeat_ms = o.heartbeat_ms;
	conf.agent_valid_ms = 3 * o.heartbeat_ms;
	conf.epoch_s = o.epoch_ms / 1000.0;
	conf.rack_solve_leaders = false; /* the agents here do not answer rack rounds */
	snprintf(conf.default_mode, sizeof(conf.default_mode), "auto");
	if (hm_coord_create(&conf, topo, &c, &err) != HM_OK)
		goto done;
	for (int j = 0; j < cl.njobs; j++) {
		static const char *const prof[] = {"resnet50", "bert-large", "gpt2-xl", "vgg16"};
		hm_coord_job_info_t in = {
		    .job_id = cl.jobs[j].id,
		    .uid = cl.jobs[j].uid,
		    .nodes = nodes,
		    .gpus_per_node = 1,
		    .mode = "auto",
		    .profile = prof[j % 4],
		    .start_s = hm_real_s(),
		};

		lc_job_nodes(&cl, j, nodes, sizeof(nodes));
		if (hm_coord_job_upsert(c, &in, &err) != HM_OK)
			goto done;
	}
	t0 = hm_clock_us(CLOCK_MONOTONIC);
	if (hm_coord_decide(c, hm_real_s(), &changed, &err) != HM_OK)
		goto done;
	fprintf(f, "arrival round (all %d jobs at once): %.1f ms\n", o.jobs,
		(hm_clock_us(CLOCK_MONOTONIC) - t0) / 1000.0);
	if (hm_server_start(c, &conf, 64030, &s, &err) != HM_OK)
		goto done;
	port = hm_server_port(s);
	fprintf(f, "port %d\n", port);
	fflush(f);
	sch.c = c;
	samples_init(&sch.rounds, 10000);
	pthread_create(&th, NULL, sched_main, &sch);
	while (read(0, &ch, 1) > 0)
		;
	atomic_store(&coord_stop, true);
	hm_coord_wake(c);
	pthread_join(th, NULL);
	{
		hm_server_counters_t k;
		hm_coord_stats_t st;

		hm_server_counters(s, &k);
		hm_coord_stats(c, &st);
		sample_print(f, "decision round (epoch)", &sch.rounds);
		fprintf(f,
			"sched wake-ups from registrations: %lu (asked within the interval: %lu); "
			"sched thread woke %ld times\n",
			k.sched_wakes, k.wakes_deferred, atomic_load(&coord_wakes));
		fprintf(f,
			"server: refused per address %lu, per user (busy) %lu, closed for want of "
			"a descriptor %lu\n",
			k.refused_addr, k.refused_user, k.closed_no_fd);
	}
	ret = 0;
done:
	if (ret)
		fprintf(f, "coordinator: %s\n", err.msg);
	fflush(f);
	fflush(stdout);
	hm_server_stop(s);
	hm_coord_destroy(c);
	own_munged_stop();
	return ret;
}

/* ---- clients ------------------------------------------------------------------------ */

static int dial(const char *src, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET}, b = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, src, &a.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &b.sin_addr);
	b.sin_port = htons((uint16_t)port);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    connect(fd, (struct sockaddr *)&b, sizeof(b)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* One sealed request and its reply's "ok"/"code": 0 ok, 1 refused (code), -1 failed. */
static int request(const char *src, int port, const char *json, char *code, size_t len)
{
	char *cred = NULL, *data = NULL, *text = NULL;
	size_t n;
	uint32_t uid, gid;
	hm_err_t err = {0};
	int fd = dial(src, port), rc = -1;
	json_object *r = NULL;

	snprintf(code, len, "connect");
	if (fd < 0)
		return -1;
	if (hm_proto_seal(json, HM_PROTO_UID_ANY, &cred, &err) != HM_OK ||
	    hm_proto_send(fd, cred, strlen(cred), hm_proto_now_ms() + 5000, &err) != HM_OK ||
	    hm_proto_recv(fd, 1 << 20, hm_proto_now_ms() + 5000, &data, &n, &err) != HM_OK ||
	    hm_proto_unseal(data, &text, &uid, &gid, &err) != HM_OK ||
	    !(r = json_tokener_parse(text)))
		snprintf(code, len, "%.60s", err.msg);
	else if (hm_json_bool(r, "ok"))
		rc = 0;
	else {
		snprintf(code, len, "%s", hm_json_str(r, "code"));
		rc = 1;
	}
	json_object_put(r);
	free(cred);
	free(data);
	free(text);
	close(fd);
	return rc;
}

static atomic_bool go_stop;

/* The flooder: one user's threads registering unknown jobs back to back. */
static atomic_long flood_sent, flood_busy, flood_other, flood_fail;

static void *flood_main(void *arg)
{
	int port = (int)(intptr_t)arg;
	unsigned seed = (unsigned)(intptr_t)pthread_self();

	while (!atomic_load(&go_stop)) {
		char req[128], code[96];
		int rc;

		snprintf(req, sizeof(req),
			 "{\"op\":\"register\",\"job_id\":%u,\"step_id\":0,\"node\":\"%s\"}",
			 1000000u + (unsigned)rand_r(&seed) % 1000000u, cl.hosts[0]);
		rc = request("127.2.0.1", port, req, code, sizeof(code));
		atomic_fetch_add(&flood_sent, 1);
		if (rc == 1 && strcmp(code, "busy") == 0)
			atomic_fetch_add(&flood_busy, 1);
		else if (rc >= 0)
			atomic_fetch_add(&flood_other, 1);
		else
			atomic_fetch_add(&flood_fail, 1);
	}
	return NULL;
}

static int flood_proc(int port, int out)
{
	pthread_t *th = calloc((size_t)o.flood, sizeof(*th));
	FILE *f = fdopen(out, "w");
	char ch;

	for (int i = 0; i < o.flood; i++)
		pthread_create(&th[i], NULL, flood_main, (void *)(intptr_t)port);
	while (read(0, &ch, 1) > 0)
		;
	atomic_store(&go_stop, true);
	for (int i = 0; i < o.flood; i++)
		pthread_join(th[i], NULL);
	fprintf(f,
		"flood (uid %d, %d threads): %ld registrations of unknown jobs, %ld answered "
		"busy, %ld otherwise, %ld failed to connect or read\n",
		o.flood_uid, o.flood, atomic_load(&flood_sent), atomic_load(&flood_busy),
		atomic_load(&flood_other), atomic_load(&flood_fail));
	fclose(f);
	free(th);
	return 0;
}

/* The legitimate user: status and a step's register, timed. */
static int legit_proc(int port, int out)
{
	samples_t st, reg;
	FILE *f = fdopen(out, "w");
	int fails = 0, i = 0, *mine = calloc((size_t)cl.njobs + 1, sizeof(int)), nmine = 0;
	char failure[160] = "";
	struct pollfd p = {.fd = 0, .events = POLLIN};

	samples_init(&st, MAX_SAMPLES);
	samples_init(&reg, MAX_SAMPLES);
	for (int j = 0; mine && j < cl.njobs; j++)
		if (cl.jobs[j].uid == (uint32_t)o.legit_uid)
			mine[nmine++] = j;
	if (nmine == 0) {
		fprintf(f, "legit: uid %d has no running job\n", o.legit_uid);
		fclose(f);
		return 2;
	}
	if (read(0, failure, 1) != 1) /* the start */
		return 2;
	failure[0] = '\0';
	for (;;) {
		char req[640], code[96];
		int64_t t0;
		int job = mine[i % nmine];

		if (poll(&p, 1, o.legit_ms) != 0)
			break; /* stdin: the end */
		t0 = hm_clock_us(CLOCK_MONOTONIC);
		if (request("127.0.0.1", port, "{\"op\":\"status\"}", code, sizeof(code)) != 0) {
			fails++;
			snprintf(failure, sizeof(failure), "status: %s", code);
		}
		sample_add(&st, (hm_clock_us(CLOCK_MONOTONIC) - t0) / 1000.0);
		{
			char nodes[512];

			lc_job_nodes(&cl, job, nodes, sizeof(nodes));
			*strchrnul(nodes, ',') = '\0';
			snprintf(
			    req, sizeof(req),
			    "{\"op\":\"register\",\"job_id\":%u,\"step_id\":%d,\"node\":\"%s\"}",
			    cl.jobs[job].id, i / nmine, nodes);
		}
		t0 = hm_clock_us(CLOCK_MONOTONIC);
		if (request("127.0.0.1", port, req, code, sizeof(code)) != 0) {
			fails++;
			snprintf(failure, sizeof(failure), "register: %s", code);
		}
		sample_add(&reg, (hm_clock_us(CLOCK_MONOTONIC) - t0) / 1000.0);
		i++;
	}
	fprintf(f, "legit: uid %d, %d running jobs of its own\n", o.legit_uid, nmine);
	sample_print(f, "legit status", &st);
	sample_print(f, "legit register", &reg);
	fprintf(f, "legit failures: %d%s%s\n", fails, fails ? "; last: " : "", failure);
	fclose(f);
	free(mine);
	return fails ? 1 : 0;
}

/* ---- agents and hostile connections (this process) -------------------------------- */

typedef struct {
	int fd, host;
	int64_t seq, next_beat_ms, beat_sent_us, beat_seq;
	bool welcomed;
} agent_t;

static samples_t beat_rtt;
static atomic_long agent_fail, agents_welcomed;
static char agent_err[200];

static void agent_failed(agent_t *a, const char *why)
{
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	if (atomic_fetch_add(&agent_fail, 1) == 0) /* the first says most */
		snprintf(agent_err, sizeof(agent_err), "agent %s: %.150s", cl.hosts[a->host], why);
}

static bool agent_send(agent_t *a, hm_aw_msg_t *m)
{
	char *json = NULL, *cred = NULL, tag[HM_PROTO_BIND_MAX];
	hm_err_t err = {0};
	bool ok;

	m->seq = ++a->seq;
	ok = hm_aw_encode(m, &json, &err) == HM_OK &&
	     hm_proto_conn_tag(a->fd, "agent>coordinator", true, tag, sizeof(tag), &err) == HM_OK &&
	     hm_proto_seal_bound(json, HM_PROTO_UID_ANY, tag, &cred, &err) == HM_OK &&
	     hm_proto_send(a->fd, cred, strlen(cred), hm_mono_ms() + 5000, &err) == HM_OK;
	if (!ok)
		agent_failed(a, err.msg);
	free(json);
	free(cred);
	return ok;
}

/* The node's state: its jobs (at most 64), alive. */
static bool agent_state(agent_t *a, hm_aw_msg_t *m)
{
	hm_err_t err = {0};

	if (hm_aw_alloc_nodes(m, 1, &err) != HM_OK)
		return false;
	snprintf(m->nodes[0].node, sizeof(m->nodes[0].node), "%s", cl.hosts[a->host]);
	for (int k = 0; k < cl.non[a->host] && m->nodes[0].njobs < HM_AW_MAX_JOBS; k++) {
		hm_aw_job_state_t *s = &m->nodes[0].jobs[m->nodes[0].njobs++];

		s->job_id = cl.jobs[cl.on[a->host][k]].id;
		s->steps = s->ranks = 1;
		s->applied_epoch = -1;
	}
	return true;
}

static void agent_open(agent_t *a, int port)
{
	char src[32];
	hm_aw_msg_t m;

	snprintf(src, sizeof(src), "127.1.%d.%d", a->host / 250, a->host % 250 + 1);
	a->seq = 0;
	a->welcomed = false;
	if ((a->fd = dial(src, port)) < 0) {
		agent_failed(a, "connect");
		return;
	}
	memset(&m, 0, sizeof(m));
	m.op = HM_AW_HELLO;
	snprintf(m.node, sizeof(m.node), "%s", cl.hosts[a->host]);
	snprintf(m.agent_version, sizeof(m.agent_version), "coord_load");
	if (agent_state(a, &m))
		agent_send(a, &m);
	hm_aw_msg_free(&m);
}

static void agent_frame(agent_t *a)
{
	char *data = NULL, *json = NULL;
	size_t n;
	uint32_t uid, gid;
	hm_err_t err = {0};
	hm_aw_msg_t m;

	memset(&m, 0, sizeof(m));
	if (hm_proto_recv(a->fd, 1 << 24, hm_mono_ms() + 5000, &data, &n, &err) != HM_OK ||
	    hm_proto_unseal(data, &json, &uid, &gid, &err) != HM_OK ||
	    hm_aw_decode(json, strlen(json), &m, &err) != HM_OK) {
		agent_failed(a, err.msg);
	} else if (m.op == HM_AW_ERROR || (m.op == HM_AW_WELCOME && !m.ok)) {
		agent_failed(a, m.error);
	} else if (m.op == HM_AW_WELCOME) {
		a->welcomed = true;
		atomic_fetch_add(&agents_welcomed, 1);
	} else if (m.op == HM_AW_ASSIGN && a->beat_seq && m.re == a->beat_seq) {
		if (atomic_load(&go_stop) == false)
			sample_add(&beat_rtt,
				   (hm_clock_us(CLOCK_MONOTONIC) - a->beat_sent_us) / 1000.0);
		a->beat_seq = 0;
	}
	hm_aw_msg_free(&m);
	free(data);
	free(json);
}

typedef struct {
	agent_t *a;
	int n, port;
} athread_t;

static atomic_bool measuring;
static pid_t flood_munged;

static void *agents_main(void *arg)
{
	athread_t *t = arg;
	struct pollfd *p = calloc((size_t)t->n, sizeof(*p));

	for (int i = 0; i < t->n; i++) {
		agent_open(&t->a[i], t->port);
		t->a[i].next_beat_ms =
		    hm_mono_ms() + (int64_t)o.heartbeat_ms * (i + 1) / (t->n + 1);
	}
	while (!atomic_load(&go_stop)) {
		int64_t now = hm_mono_ms();

		for (int i = 0; i < t->n; i++)
			p[i] = (struct pollfd){.fd = t->a[i].fd, .events = POLLIN};
		poll(p, (nfds_t)t->n, 20);
		for (int i = 0; i < t->n; i++)
			if (t->a[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				agent_frame(&t->a[i]);
		now = hm_mono_ms();
		for (int i = 0; i < t->n; i++) {
			agent_t *a = &t->a[i];
			hm_aw_msg_t m;

			if (a->fd < 0 || !a->welcomed || now < a->next_beat_ms)
				continue;
			memset(&m, 0, sizeof(m));
			m.op = HM_AW_BEAT;
			if (agent_state(a, &m) && agent_send(a, &m) && atomic_load(&measuring)) {
				a->beat_seq = a->seq;
				a->beat_sent_us = hm_clock_us(CLOCK_MONOTONIC);
			}
			hm_aw_msg_free(&m);
			a->next_beat_ms = now + o.heartbeat_ms;
		}
	}
	for (int i = 0; i < t->n; i++)
		if (t->a[i].fd >= 0)
			close(t->a[i].fd);
	free(p);
	return NULL;
}

/* Hostile connections: silent, slow (a header, then a byte a second), garbage. */
static atomic_long hostile_opened;

static void *hostile_main(void *arg)
{
	int port = (int)(intptr_t)arg, *fd = calloc((size_t)o.hostile, sizeof(int));
	int64_t *next = calloc((size_t)o.hostile, sizeof(int64_t));

	for (int i = 0; i < o.hostile; i++)
		fd[i] = -1;
	while (!atomic_load(&go_stop)) {
		int64_t now = hm_mono_ms();

		for (int i = 0; i < o.hostile; i++) {
			char c;

			if (fd[i] >= 0 && recv(fd[i], &c, 1, MSG_DONTWAIT) == 0) {
				close(fd[i]); /* the server closed it: again */
				fd[i] = -1;
			}
			if (fd[i] < 0) {
				if ((fd[i] = dial("127.3.0.1", port)) < 0)
					continue;
				atomic_fetch_add(&hostile_opened, 1);
				if (i % 3 == 1)
					(void)!write(fd[i], "\0\0\x10\0", 4); /* 4 KiB to come */
				if (i % 3 == 2)
					(void)!write(fd[i],
						     "\0\0\0\x20MUNGE:garbage-garbage-garbage-xy",
						     36);
				next[i] = now + 1000;
			} else if (i % 3 == 1 && now >= next[i]) {
				(void)!write(fd[i], "x", 1);
				next[i] = now + 1000;
			}
		}
		usleep(20000);
	}
	for (int i = 0; i < o.hostile; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	free(fd);
	free(next);
	return NULL;
}

/* ---- main ----------------------------------------------------------------------------- */

static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
	fclose(f);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void proc_mem(pid_t pid, char *out, size_t len)
{
	char path[64], line[256];
	FILE *f;
	int p = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	out[0] = '\0';
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6) || !strncmp(line, "VmHWM:", 6) ||
		    !strncmp(line, "Threads:", 8)) {
			line[strcspn(line, "\n")] = '\0';
			p += snprintf(out + p, len - (size_t)p, "%s  ", line);
		}
	fclose(f);
}

/* Fork fn(port, out-pipe) as uid with stdin from a pipe: *in closes it to stop it. */
static pid_t spawn(int (*fn)(int, int), int port, uid_t uid, bool munged, int *in, int *out)
{
	int pi[2], po[2];
	pid_t pid;

	if (pipe2(pi, O_CLOEXEC) != 0 || pipe2(po, O_CLOEXEC) != 0)
		return -1; /* not inherited by a munged the child starts */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(pi[1]);
		close(po[0]);
		dup2(pi[0], 0);
		if (munged && own_munged(2) != 0)
			_exit(4);
		if (uid && (setgid(uid) != 0 || setuid(uid) != 0))
			_exit(3);
		_exit(fn(port, po[1]));
	}
	close(pi[0]);
	close(po[1]);
	*in = pi[1];
	*out = po[0];
	return pid;
}

static int coord_entry(int port, int out)
{
	(void)port;
	return coord_main(out);
}

static void drain(int fd)
{
	char buf[4096];
	ssize_t n;

	fflush(stdout);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	close(fd);
}

static bool opt(char **argv, int *i, int argc, const char *name, int *v, int min, int max)
{
	char *end;
	long x;

	if (strcmp(argv[*i], name) != 0)
		return false;
	if (*i + 1 >= argc || (x = strtol(argv[*i + 1], &end, 10), *end) || x < min || x > max) {
		fprintf(stderr, "coord_load: %s needs an integer in [%d, %d]\n", name, min, max);
		exit(2);
	}
	*v = (int)x;
	(*i)++;
	return true;
}

static bool opt_str(char **argv, int *i, int argc, const char *name, const char **v)
{
	if (strcmp(argv[*i], name) != 0)
		return false;
	if (*i + 1 >= argc || !argv[*i + 1][0]) {
		fprintf(stderr, "coord_load: %s needs a value\n", name);
		exit(2);
	}
	*v = argv[++(*i)];
	return true;
}

/* The hosts and jobs: made up on a generated topology, or slurmctld's (--port). */
static int cluster_setup(void)
{
	char spec[128], err[512];
	hm_topo_gen_t gen;
	hm_err_t e = {0};

	if (o.port) {
		if (!o.nodes || !o.jobs_file || !o.ctld_pid) {
			fprintf(stderr, "coord_load: --port needs --nodes, --jobs-file and --ctld-pid\n");
			return 2;
		}
		if (lc_from_file(&cl, o.nodes, o.jobs_file, err, sizeof(err)) != 0) {
			fprintf(stderr, "coord_load: %s\n", err);
			return 1;
		}
		o.agents = cl.nhosts;
		o.jobs = cl.njobs;
		printf("coord_load: slurmctld's coordinator (pid %d, port %d), %d agents (%s), "
		       "%d running jobs (%s), %d hostile connections, %d flood threads, %d s, "
		       "heartbeat %d ms\n",
		       o.ctld_pid, o.port, o.agents, o.nodes, o.jobs, o.jobs_file, o.hostile,
		       o.flood, o.duration_s, o.heartbeat_ms);
		return 0;
	}
	snprintf(spec, sizeof(spec), "racks=%d,hosts=%d,gpus=8,nic=100G,oversub=4",
		 (o.agents + HOSTS_PER_RACK - 1) / HOSTS_PER_RACK, HOSTS_PER_RACK);
	if (hm_topo_gen_parse(spec, &gen, &e) != HM_OK ||
	    hm_topo_generate(&gen, &topo, &e) != HM_OK) {
		fprintf(stderr, "coord_load: topology: %s\n", e.msg);
		return 1;
	}
	if (lc_synthetic(&cl, topo, o.jobs, LEGIT_UID, LEGIT_JOBS) != 0) {
		fprintf(stderr, "coord_load: out of memory\n");
		return 1;
	}
	printf("coord_load: %d agents (%d hosts, %s), %d running jobs, %d hostile connections, "
	       "%d flood threads, %d s, heartbeat %d ms, epoch %d ms\n",
	       o.agents, topo->nhosts, spec, o.jobs, o.hostile, o.flood, o.duration_s,
	       o.heartbeat_ms, o.epoch_ms);
	return 0;
}

int main(int argc, char **argv)
{
	char line[256], mem[256];
	int cin = -1, cout = -1, fin, fout, lin, lout, port = 0, st, ret, legit_rc;
	pid_t cpid, fpid, lpid;
	FILE *cf;
	athread_t at[AGENT_THREADS];
	agent_t *agents;
	pthread_t ath[AGENT_THREADS], hth;
	double cpu0, cpu1;
	int64_t t0, t1, wait_until;

	for (int i = 1; i < argc; i++)
		if (!opt(argv, &i, argc, "--agents", &o.agents, 8, 60000) &&
		    !opt(argv, &i, argc, "--jobs", &o.jobs, 1, 1000000) &&
		    !opt(argv, &i, argc, "--hostile", &o.hostile, 0, 4096) &&
		    !opt(argv, &i, argc, "--flood", &o.flood, 0, 1024) &&
		    !opt(argv, &i, argc, "--duration-s", &o.duration_s, 1, 3600) &&
		    !opt(argv, &i, argc, "--heartbeat-ms", &o.heartbeat_ms, 100, 60000) &&
		    !opt(argv, &i, argc, "--epoch-ms", &o.epoch_ms, 100, 600000) &&
		    !opt(argv, &i, argc, "--legit-ms", &o.legit_ms, 1, 60000) &&
		    !opt(argv, &i, argc, "--port", &o.port, 1, 65535) &&
		    !opt(argv, &i, argc, "--ctld-pid", &o.ctld_pid, 1, 1 << 30) &&
		    !opt(argv, &i, argc, "--legit-uid", &o.legit_uid, 1, 1 << 30) &&
		    !opt(argv, &i, argc, "--flood-uid", &o.flood_uid, 1, 1 << 30) &&
		    !opt_str(argv, &i, argc, "--nodes", &o.nodes) &&
		    !opt_str(argv, &i, argc, "--jobs-file", &o.jobs_file)) {
			fprintf(stderr, "coord_load: unknown option '%s' (see the file's head)\n",
				argv[i]);
			return 2;
		}
	hm_log_set_level(HM_LOG_ERROR);
	if ((ret = cluster_setup()) != 0)
		return ret;
	if (o.port) {
		cpid = o.ctld_pid;
		port = o.port;
	} else {
		cpid = spawn(coord_entry, 0, 0, false, &cin, &cout);
		cf = fdopen(cout, "r");
		while (cf && fgets(line, sizeof(line), cf)) {
			if (sscanf(line, "port %d", &port) == 1)
				break;
			fputs(line, stdout);
		}
		if (port <= 0) {
			fprintf(stderr, "coord_load: the coordinator did not start\n");
			return 1;
		}
	}
	fpid = spawn(flood_proc, port, (uid_t)o.flood_uid, true, &fin, &fout);
	lpid = spawn(legit_proc, port, (uid_t)o.legit_uid, false, &lin, &lout);
	/* Agents first: the measurement starts once they are all welcomed. */
	samples_init(&beat_rtt, MAX_SAMPLES);
	agents = calloc((size_t)o.agents, sizeof(*agents));
	for (int i = 0; i < o.agents; i++)
		agents[i] = (agent_t){.fd = -1, .host = i};
	for (int k = 0; k < AGENT_THREADS; k++) {
		int a = o.agents * k / AGENT_THREADS, b = o.agents * (k + 1) / AGENT_THREADS;

		at[k] = (athread_t){.a = agents + a, .n = b - a, .port = port};
		pthread_create(&ath[k], NULL, agents_main, &at[k]);
	}
	t0 = hm_mono_ms();
	wait_until = t0 + 120000;
	while (atomic_load(&agents_welcomed) < o.agents && hm_mono_ms() < wait_until)
		usleep(50000);
	printf("agents welcomed: %ld of %d in %.1f s\n", atomic_load(&agents_welcomed), o.agents,
	       (hm_mono_ms() - t0) / 1000.0);
	if (write(lin, "g", 1) != 1)
		return 1;
	pthread_create(&hth, NULL, hostile_main, (void *)(intptr_t)port);
	atomic_store(&measuring, true);
	cpu0 = proc_cpu_s(cpid);
	t0 = hm_mono_ms();
	sleep((unsigned)o.duration_s);
	t1 = hm_mono_ms();
	cpu1 = proc_cpu_s(cpid);
	proc_mem(cpid, mem, sizeof(mem));
	atomic_store(&measuring, false);
	{
		char path[64];
		FILE *pf;
		int mpid = 0;

		/* The flooder's munged (its namespace's /run/munge), stopped with it. */
		snprintf(path, sizeof(path), "/proc/%d/root/run/munge/munged.pid", (int)fpid);
		if ((pf = fopen(path, "r"))) {
			if (fscanf(pf, "%d", &mpid) != 1)
				mpid = 0;
			fclose(pf);
		}
		close(lin);
		close(fin);
		if (mpid > 0)
			flood_munged = mpid;
	}
	drain(lout);
	waitpid(lpid, &st, 0);
	legit_rc = WIFEXITED(st) ? WEXITSTATUS(st) : 99;
	drain(fout);
	waitpid(fpid, &st, 0);
	if (flood_munged > 0)
		kill(flood_munged, SIGTERM);
	atomic_store(&go_stop, true);
	pthread_join(hth, NULL);
	for (int k = 0; k < AGENT_THREADS; k++)
		pthread_join(ath[k], NULL);
	sample_print(stdout, "agent beat -> agent_assign", &beat_rtt);
	printf("agents: %ld failures (errors or closed connections)%s%s\n",
	       atomic_load(&agent_fail), agent_fail ? "; first: " : "", agent_fail ? agent_err : "");
	printf("hostile: %ld connections opened from 127.3.0.1 (reopened when closed)\n",
	       atomic_load(&hostile_opened));
	printf("%s process over %.1f s: CPU %.2f s (%.0f %% of one core); %s\n",
	       o.port ? "slurmctld" : "coordinator", (t1 - t0) / 1000.0, cpu1 - cpu0, 100.0 * (cpu1 - cpu0) * 1000.0 / (double)(t1 - t0),
	       mem);
	fflush(stdout);
	if (!o.port) {
		close(cin);
		drain(cout);
		waitpid(cpid, &st, 0);
	}
	if (legit_rc != 0 || atomic_load(&agent_fail) != 0) {
		printf("coord_load: FAIL: a legitimate request failed\n");
		ret = 1;
	} else {
		printf("coord_load: every legitimate request succeeded\n");
	}
	free(agents);
	lc_free(&cl);
	hm_topo_free(topo);
	return ret;
}
