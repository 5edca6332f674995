/*
 * bench_tiers: one epoch round of the harmonics policy end to end with every
 * rack's Local Scheduler on its leader (issue 12, "Scale, measured"; prints
 * numbers, no pass/fail; results in docs/eval/tiers-measured.md).
 *
 * Cluster: hm_topo_generate, R racks of 8 hosts x 8 GPUs, 100 Gbit/s NICs,
 * ToR uplinks oversubscribed 4:1, pods of 16 racks. Jobs: the workload
 * generator's sizes (8, 16 or 32 GPUs) and catalogue models with compute times
 * scaled by --compute-scale (GPUs faster than the catalogue's: more of the
 * iteration is communication), given to the coordinator as their exact compute
 * time and gradient (iter=,comm=0,bytes=), 4 GPUs per host,
 * in two layers (GPUs 0-3 and 4-7 of every host) packed in host order, the
 * second layer one host behind the first: every NIC carries two jobs, so every
 * rack has contending local jobs. A job that would cross a rack boundary does
 * so while cross-rack jobs are under --cross of the jobs placed so far (it
 * then spans two racks), else it is cut to the hosts left in its rack.
 *
 * Two coordinators get the same jobs (hm_coord_job_upsert, Policy=harmonics):
 * one with RackSolve=coordinator (the in-process decision) and one with
 * RackSolve=leaders behind a real hm_server on 127.0.0.1 (port 0). One fake
 * leader agent per rack speaks contract B over loopback with real munge: hello
 * as the rack's lowest-named host, a beat every HeartbeatInterval, and every
 * rack_round decoded, solved with hm_tier_rack_solve and answered with a
 * rack_result, as the node agent's on_rack_round does. A few threads share the
 * connections (poll). Once every rack has its leader (hm_coord_racks), each
 * round calls hm_coord_decide on both with now advanced by EpochLength; round
 * 0 is the jobs' arrival (DecisionBudget=1ms: one policy run for all of them,
 * as many in both modes), rounds 1..N are epochs: their medians are reported.
 *
 * CPU: coordinator = process CPU over the round minus the leader threads'
 * (thread CPU clocks); it includes the server's threads and any beats served
 * meanwhile (the idle rate is printed). Leaders = thread CPU from a
 * rack_round's first byte to its rack_result sent, sum and max over racks.
 * munged's CPU (both sides seal and unseal through it) is read from /proc.
 *
 * Usage: bench_tiers [--racks N[,N...]] [--rounds N] [--cross F] [--seed S]
 *        [--threads T] [--heartbeat-ms MS] [--rack-timeout-ms MS] [--idle-s S]
 *        [--compute-scale F]
 *        (default 16,128,1024 racks, 5 epoch rounds, cross 0.1, compute scale
 *        0.1, 4 threads,
 *        HeartbeatInterval 2000 ms, RackTimeout 1000 ms, 2 s of beats alone
 *        before the rounds; needs munged)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hm_agent_wire.h"
#include "hm_clock.h"
#include "hm_coord.h"
#include "hm_harmonics_tier.h"
#include "hm_hostlist.h"
#include "hm_job.h"
#include "hm_log.h"
#include "hm_proto.h"
#include "hm_server.h"

#define MAX_SIZES         8
#define MAX_ROUNDS        64
#define MAX_THREADS       64
#define HOSTS_PER_RACK    8
#define GPUS_PER_JOB_HOST 4
#define FRAME_MAX         (16 << 20) /* what a fake leader accepts */

typedef struct {
	int sizes[MAX_SIZES], nsizes, rounds, threads, heartbeat_ms, rack_timeout_ms, idle_s;
	double cross, compute_scale;
	unsigned long seed;
} opts_t;

/* ---- the cluster ---------------------------------------------------------------- */

typedef struct {
	hm_topo_t *topo;
	int *order; /* host indexes, rack by rack, by name */
	int njobs, ncross;
	char **nodes; /* per job: its hostlist */
	char **profile;
	char **leader; /* per rack: its lowest-named host */
} cluster_t;

static void cluster_free(cluster_t *c)
{
	for (int i = 0; i < c->njobs; i++) {
		free(c->nodes[i]);
		free(c->profile[i]);
	}
	for (int r = 0; c->leader && c->topo && r < c->topo->nracks; r++)
		free(c->leader[r]);
	free(c->nodes);
	free(c->profile);
	free(c->leader);
	free(c->order);
	hm_topo_free(c->topo);
	memset(c, 0, sizeof(*c));
}

static const hm_topo_t *sort_topo;

static int by_rack_name(const void *a, const void *b)
{
	const hm_host_t *x = &sort_topo->hosts[*(const int *)a],
			*y = &sort_topo->hosts[*(const int *)b];

	if (x->rack != y->rack)
		return x->rack < y->rack ? -1 : 1;
	return hm_hostname_cmp(x->name, y->name);
}

/* Hosts [p, p + k) of the order as one job; true when they span racks. */
static bool add_job(cluster_t *c, int p, int k, const hm_profile_t *prof)
{
	char spec[128];

	char **names = malloc(sizeof(char *) * (size_t)k);
	bool cross = false;

	for (int i = 0; i < k; i++) {
		names[i] = c->topo->hosts[c->order[p + i]].name;
		cross |= c->topo->hosts[c->order[p + i]].rack != c->topo->hosts[c->order[p]].rack;
	}
	c->nodes[c->njobs] = hm_hostlist_compress(names, k);
	/* The generator's compute time and gradient exactly (compute = iter x (1 - comm)). */
	snprintf(spec, sizeof(spec), "iter=%.6f,comm=0,bytes=%.0f,overlap=%.3f", prof->compute_s,
		 prof->phases[0].bytes, prof->phases[0].overlap);
	c->profile[c->njobs] = strdup(spec);
	c->njobs++;
	c->ncross += cross;
	free(names);
	return cross;
}

static int cluster_make(int nracks, const opts_t *o, cluster_t *c, hm_err_t *err)
{
	char spec[200];
	hm_topo_gen_t gen;
	hm_workload_t w = {0};
	int n, next = 0;

	memset(c, 0, sizeof(*c));
	snprintf(spec, sizeof(spec), "racks=%d,hosts=%d,gpus=8,nic=100G,oversub=4%s", nracks,
		 HOSTS_PER_RACK, nracks % 16 == 0 ? ",racks_per_pod=16,aggs=2,cores=2" : "");
	if (hm_topo_gen_parse(spec, &gen, err) != HM_OK ||
	    hm_topo_generate(&gen, &c->topo, err) != HM_OK)
		return -1;
	n = c->topo->nhosts;
	snprintf(spec, sizeof(spec),
		 "jobs=%d,arrival=burst,gpus=8/16/32,models=all,iters=1000,compute_scale=%g",
		 n + 16, o->compute_scale);
	if (hm_workload_generate(spec, c->topo, o->seed, &w, err) != HM_OK)
		return -1;
	c->order = malloc(sizeof(int) * (size_t)n);
	c->nodes = calloc((size_t)w.njobs, sizeof(char *));
	c->profile = calloc((size_t)w.njobs, sizeof(char *));
	c->leader = calloc((size_t)nracks, sizeof(char *));
	if (!c->order || !c->nodes || !c->profile || !c->leader) {
		hm_workload_free(&w);
		return -1;
	}
	for (int h = 0; h < n; h++)
		c->order[h] = h;
	sort_topo = c->topo;
	qsort(c->order, (size_t)n, sizeof(int), by_rack_name);
	for (int h = 0; h < n; h++) {
		int r = c->topo->hosts[c->order[h]].rack;
		if (!c->leader[r])
			c->leader[r] = strdup(c->topo->hosts[c->order[h]].name);
	}
	/* Layer 0 from host 0, layer 1 from host 1 (host 0's GPUs 4-7 stay idle). */
	for (int layer = 0; layer < 2; layer++) {
		int p = layer;

		while (p < n && next < w.njobs) {
			const hm_job_t *j = &w.jobs[next++];
			int k = j->gpus / GPUS_PER_JOB_HOST,
			    b = (p / HOSTS_PER_RACK + 1) * HOSTS_PER_RACK;

			if (p + k > n)
				k = n - p;
			if (p + k > b && c->ncross >= o->cross * (c->njobs + 1))
				k = b - p; /* cut at the rack's end: stays local */
			add_job(c, p, k, &j->profile);
			p += k;
		}
	}
	hm_workload_free(&w);
	return next < w.njobs || w.njobs == 0 ? 0 : -1;
}

/* ---- fake leaders --------------------------------------------------------------- */

typedef struct {
	int fd, rack;
	char node[HM_AW_NODE_MAX];
	int64_t seq, next_beat_ms;
	bool dead;
} lconn_t;

typedef struct {
	unsigned long rounds_in, results_out, other_in, beats_out, errors;
	uint64_t bytes_in, bytes_out;
	double cpu_s, cpu_max_s; /* rack_round handling */
} lstats_t;

typedef struct {
	pthread_t th;
	clockid_t cid;
	bool started;
	int n;
	lconn_t *c;
	int heartbeat_ms;
	pthread_mutex_t mu;
	lstats_t st; /* under mu */
	char last_err[256];
} lthread_t;

static atomic_int stop_leaders;

static double thread_cpu_s(clockid_t cid)
{
	struct timespec ts;

	clock_gettime(cid, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static hm_rc_t send_frame(lconn_t *c, const hm_aw_msg_t *m, size_t *wire, hm_err_t *err)
{
	char *json = NULL, *cred = NULL, tag[HM_PROTO_BIND_MAX];
	hm_rc_t rc = hm_aw_encode(m, &json, err);

	if (rc == HM_OK)
		rc = hm_proto_conn_tag(c->fd, "agent>coordinator", true, tag, sizeof(tag), err);
	if (rc == HM_OK)
		rc = hm_proto_seal_bound(json, HM_PROTO_UID_ANY, tag, &cred, err);
	if (rc == HM_OK)
		rc = hm_proto_send(c->fd, cred, strlen(cred), hm_mono_ms() + 5000, err);
	if (rc == HM_OK && wire)
		*wire = strlen(cred) + 4;
	free(json);
	free(cred);
	return rc;
}

static hm_rc_t recv_frame(lconn_t *c, hm_aw_msg_t *m, size_t *wire, hm_err_t *err)
{
	char *frame = NULL, *json = NULL;
	size_t len = 0;
	uint32_t uid, gid;
	hm_rc_t rc = hm_proto_recv(c->fd, FRAME_MAX, hm_mono_ms() + 5000, &frame, &len, err);

	memset(m, 0, sizeof(*m));
	*wire = len + 4;
	if (rc == HM_OK)
		rc = hm_proto_unseal(frame, &json, &uid, &gid, err);
	if (rc == HM_OK)
		rc = hm_aw_decode(json, strlen(json), m, err);
	free(frame);
	free(json);
	return rc;
}

static void lt_fail(lthread_t *t, lconn_t *c, const char *what, const char *msg)
{
	c->dead = true;
	pthread_mutex_lock(&t->mu);
	t->st.errors++;
	snprintf(t->last_err, sizeof(t->last_err), "leader %.63s: %s: %.160s", c->node, what, msg);
	pthread_mutex_unlock(&t->mu);
}

static void beat(lthread_t *t, lconn_t *c)
{
	hm_aw_msg_t m;
	hm_err_t err = {0};

	memset(&m, 0, sizeof(m));
	m.op = HM_AW_BEAT;
	m.seq = ++c->seq;
	if (hm_aw_alloc_nodes(&m, 1, &err) == HM_OK) {
		snprintf(m.nodes[0].node, sizeof(m.nodes[0].node), "%s", c->node);
		if (send_frame(c, &m, NULL, &err) != HM_OK)
			lt_fail(t, c, "beat", err.msg);
	}
	hm_aw_msg_free(&m);
	pthread_mutex_lock(&t->mu);
	t->st.beats_out++;
	pthread_mutex_unlock(&t->mu);
}

/* One frame from the coordinator: a rack_round is solved and answered here. */
static void on_frame(lthread_t *t, lconn_t *c)
{
	double cpu0 = thread_cpu_s(CLOCK_THREAD_CPUTIME_ID), cpu;
	hm_aw_msg_t m, r;
	hm_err_t err = {0};
	size_t in = 0, out = 0;

	if (recv_frame(c, &m, &in, &err) != HM_OK) {
		lt_fail(t, c, "receive", err.msg);
		hm_aw_msg_free(&m);
		return;
	}
	if (m.op == HM_AW_ERROR || (m.op == HM_AW_WELCOME && !m.ok)) {
		lt_fail(t, c, "coordinator", m.error);
	} else if (m.op == HM_AW_RACK_ROUND) {
		memset(&r, 0, sizeof(r));
		r.op = HM_AW_RACK_RESULT;
		r.re = m.seq;
		r.seq = ++c->seq;
		if (hm_tier_rack_solve(&m.round, &r.result, &err) != HM_OK) {
			r.result.rack = m.round.rack; /* answered with no decisions */
			r.result.round = m.round.round;
		}
		if (send_frame(c, &r, &out, &err) != HM_OK)
			lt_fail(t, c, "rack_result", err.msg);
		hm_aw_msg_free(&r);
		cpu = thread_cpu_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
		pthread_mutex_lock(&t->mu);
		t->st.rounds_in++;
		t->st.results_out += out > 0;
		t->st.bytes_in += in;
		t->st.bytes_out += out;
		t->st.cpu_s += cpu;
		if (cpu > t->st.cpu_max_s)
			t->st.cpu_max_s = cpu;
		pthread_mutex_unlock(&t->mu);
	} else {
		pthread_mutex_lock(&t->mu);
		t->st.other_in++;
		pthread_mutex_unlock(&t->mu);
	}
	hm_aw_msg_free(&m);
}

static void *leader_main(void *arg)
{
	lthread_t *t = arg;
	struct pollfd *pfd = calloc((size_t)t->n + 1, sizeof(*pfd));

	for (int i = 0; pfd && i < t->n; i++) /* beats spread over one interval */
		t->c[i].next_beat_ms =
		    hm_mono_ms() + (int64_t)t->heartbeat_ms * (i + 1) / (t->n + 1);
	while (pfd && !atomic_load(&stop_leaders)) {
		int64_t now = hm_mono_ms(), next = now + 50;

		for (int i = 0; i < t->n; i++) {
			pfd[i] =
			    (struct pollfd){.fd = t->c[i].dead ? -1 : t->c[i].fd, .events = POLLIN};
			if (!t->c[i].dead && t->c[i].next_beat_ms < next)
				next = t->c[i].next_beat_ms;
		}
		if (poll(pfd, (nfds_t)t->n, next > now ? (int)(next - now) : 0) < 0 &&
		    errno != EINTR)
			break;
		for (int i = 0; i < t->n; i++)
			if (!t->c[i].dead && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				on_frame(t, &t->c[i]);
		now = hm_mono_ms();
		for (int i = 0; i < t->n; i++)
			if (!t->c[i].dead && now >= t->c[i].next_beat_ms) {
				beat(t, &t->c[i]);
				t->c[i].next_beat_ms = now + t->heartbeat_ms;
			}
	}
	free(pfd);
	return NULL;
}

static int dial(int port, lconn_t *c, hm_err_t *err)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	hm_aw_msg_t m;
	int rc;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if ((c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		hm_err_set(err, HM_ERR_IO, "leader %s: connect: %s", c->node, strerror(errno));
		return -1;
	}
	memset(&m, 0, sizeof(m));
	m.op = HM_AW_HELLO;
	m.seq = ++c->seq;
	snprintf(m.node, sizeof(m.node), "%s", c->node);
	snprintf(m.agent_version, sizeof(m.agent_version), "bench_tiers");
	m.rack_solver = true; /* it answers rack_round, as the agent does */
	rc = hm_aw_alloc_nodes(&m, 1, err) == HM_OK ? 0 : -1;
	if (rc == 0) {
		snprintf(m.nodes[0].node, sizeof(m.nodes[0].node), "%s", c->node);
		rc = send_frame(c, &m, NULL, err) == HM_OK ? 0 : -1;
	}
	hm_aw_msg_free(&m);
	return rc;
}

/* Totals over the threads; reset: start a new round's max. */
static void leaders_totals(lthread_t *lt, int nt, lstats_t *s, double *cpu_s, bool reset)
{
	memset(s, 0, sizeof(*s));
	*cpu_s = 0;
	for (int i = 0; i < nt; i++) {
		if (!lt[i].started)
			continue;
		pthread_mutex_lock(&lt[i].mu);
		s->rounds_in += lt[i].st.rounds_in;
		s->results_out += lt[i].st.results_out;
		s->other_in += lt[i].st.other_in;
		s->beats_out += lt[i].st.beats_out;
		s->errors += lt[i].st.errors;
		s->bytes_in += lt[i].st.bytes_in;
		s->bytes_out += lt[i].st.bytes_out;
		s->cpu_s += lt[i].st.cpu_s;
		if (lt[i].st.cpu_max_s > s->cpu_max_s)
			s->cpu_max_s = lt[i].st.cpu_max_s;
		if (reset)
			lt[i].st.cpu_max_s = 0;
		pthread_mutex_unlock(&lt[i].mu);
		*cpu_s += thread_cpu_s(lt[i].cid);
	}
}

/* ---- measurements --------------------------------------------------------------- */

static double munged_cpu_s(void)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	long pid = 0;
	FILE *f = fopen("/run/munge/munged.pid", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (pid <= 0 || !(f = fopen(path, "r")))
		return -1;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* After "(comm)": state is field 3; utime and stime are fields 14 and 15. */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[MAX_ROUNDS];

	if (n <= 0)
		return NAN;
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_dbl);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

typedef struct {
	double wall_s, cpu_s, lead_cpu_s, lead_max_s, munge_s, msgs, bytes;
	double in_wall_s, in_cpu_s;
	double asked, answered, in_asked; /* racks */
} round_t;

/* Median over the epoch rounds of one member of round_t. */
static double med_of(const round_t *r, int n, size_t off)
{
	double v[MAX_ROUNDS];

	for (int k = 0; k < n; k++)
		v[k] = *(const double *)((const char *)&r[k] + off);
	return median(v, n);
}

#define MED(m) med_of(ep, o->rounds, offsetof(round_t, m))

typedef struct {
	int racks, hosts, jobs, cross, asked_med;
	double wall_ms, cpu_ms, lead_ms, lead_max_ms, munge_ms, msgs, kbytes;
	double in_wall_ms, in_cpu_ms, idle_cpu_ms_s, settle_s, view_ms;
	int silent, differ_rounds, rounds;
	unsigned long errors;
} result_t;

/* Sum of rack solves so far, and racks solved by leaders. */
static void rack_counts(hm_coord_t *c, unsigned long *solves, unsigned long *by_leader,
			unsigned long *silent, int *leaders)
{
	hm_coord_rack_view_t *v = NULL;
	int n = 0;

	*solves = *by_leader = *silent = 0;
	*leaders = 0;
	if (hm_coord_racks(c, &v, &n) != HM_OK)
		return;
	for (int r = 0; r < n; r++) {
		*solves += v[r].leader_solves + v[r].coord_solves;
		*by_leader += v[r].leader_solves;
		*silent += v[r].silent;
		*leaders += v[r].leader[0] != '\0';
	}
	free(v);
}

/* Jobs whose period, shift or class differ between the two coordinators. */
static int differing(hm_coord_t *a, hm_coord_t *b, int *scheduled, int *held, int prio[8])
{
	hm_coord_job_view_t *x = NULL, *y = NULL;
	int nx = 0, ny = 0, d = 0;

	*scheduled = *held = 0;
	memset(prio, 0, sizeof(int) * 8);
	if (hm_coord_jobs(a, &x, &nx) != HM_OK || hm_coord_jobs(b, &y, &ny) != HM_OK || nx != ny) {
		d = -1;
		goto out;
	}
	for (int i = 0; i < nx; i++) {
		*scheduled += x[i].a.scheduled;
		*held += x[i].a.period_us > 0;
		prio[x[i].a.prio & 7]++;
		d += x[i].job_id != y[i].job_id || x[i].a.scheduled != y[i].a.scheduled ||
		     x[i].a.period_us != y[i].a.period_us || x[i].a.shift_us != y[i].a.shift_us ||
		     x[i].a.prio != y[i].a.prio;
	}
out:
	free(x);
	free(y);
	return d;
}

/* ---- one cluster size ------------------------------------------------------------ */

static void base_conf(hm_conf_t *conf, const opts_t *o, bool leaders)
{
	hm_conf_defaults(conf);
	snprintf(conf->policy, sizeof(conf->policy), "harmonics");
	snprintf(conf->default_mode, sizeof(conf->default_mode), "auto");
	conf->decision_budget_s = 0.001; /* arrivals: one policy run in both modes */
	conf->listen_port = 0;
	conf->heartbeat_ms = o->heartbeat_ms;
	conf->agent_valid_ms = 3 * o->heartbeat_ms;
	conf->update_lead_ms = o->heartbeat_ms + 1000;
	conf->conn_timeout_ms = 5000;
	conf->rack_timeout_ms = o->rack_timeout_ms;
	conf->rack_solve_leaders = leaders;
}

static double proc_cpu_s(void)
{
	return thread_cpu_s(CLOCK_PROCESS_CPUTIME_ID);
}

static int run_size(const opts_t *o, int nracks, result_t *res)
{
	cluster_t cl;
	hm_conf_t conf_in, conf_ld;
	hm_coord_t *cin = NULL, *cld = NULL;
	hm_server_t *srv = NULL;
	hm_err_t err = {0};
	lthread_t lt[MAX_THREADS];
	lconn_t *conns = NULL;
	round_t rd[MAX_ROUNDS + 1], ep[MAX_ROUNDS];
	int nt = o->threads < nracks ? o->threads : nracks, ret = -1, port, leaders = 0;
	double t0, now0 = hm_real_s(), c0, lc0, lc1;
	unsigned long solves0, by0, silent0, solves1, by1, silent1;
	lstats_t ls0, ls1;

	memset(lt, 0, sizeof(lt));
	memset(res, 0, sizeof(*res));
	memset(rd, 0, sizeof(rd));
	atomic_store(&stop_leaders, 0);
	t0 = hm_mono_s();
	if (cluster_make(nracks, o, &cl, &err) != 0) {
		fprintf(stderr, "bench_tiers: cluster of %d racks: %s\n", nracks,
			err.msg[0] ? err.msg : "out of memory or too few generated jobs");
		cluster_free(&cl);
		return -1;
	}
	fprintf(stderr, "bench_tiers: %d racks: %d jobs placed (%.1f s)\n", nracks, cl.njobs,
		hm_mono_s() - t0);
	res->racks = nracks;
	res->hosts = cl.topo->nhosts;
	res->jobs = cl.njobs;
	res->cross = cl.ncross;
	base_conf(&conf_in, o, false);
	base_conf(&conf_ld, o, true);
	if (hm_coord_create(&conf_in, hm_topo_clone(cl.topo), &cin, &err) != HM_OK ||
	    hm_coord_create(&conf_ld, hm_topo_clone(cl.topo), &cld, &err) != HM_OK)
		goto out;
	for (int i = 0; i < cl.njobs; i++) {
		hm_coord_job_info_t j = {.job_id = (uint32_t)i + 1,
					 .uid = 1000,
					 .nodes = cl.nodes[i],
					 .gpus_per_node = GPUS_PER_JOB_HOST,
					 .mode = "auto",
					 .profile = cl.profile[i],
					 .start_s = now0};
		if (hm_coord_job_upsert(cin, &j, &err) != HM_OK ||
		    hm_coord_job_upsert(cld, &j, &err) != HM_OK)
			goto out;
	}
	fprintf(stderr, "bench_tiers: %d racks: jobs in both coordinators (%.1f s)\n", nracks,
		hm_mono_s() - t0);
	/* The racks view (harmonicsctl racks) holds the engine's mutex: its cost. */
	c0 = hm_mono_s();
	rack_counts(cld, &solves0, &by0, &silent0, &leaders);
	res->view_ms = (hm_mono_s() - c0) * 1e3;
	fprintf(stderr, "bench_tiers: %d racks: one racks view (hm_coord_racks) %.1f ms\n", nracks,
		res->view_ms);
	if (hm_server_start(cld, &conf_ld, 0, &srv, &err) != HM_OK)
		goto out;
	port = hm_server_port(srv);
	/* One leader per rack, dialled from here, then served by nt threads. */
	if (!(conns = calloc((size_t)nracks, sizeof(*conns))))
		goto out;
	t0 = hm_mono_s();
	for (int r = 0; r < nracks; r++) {
		conns[r].rack = r;
		snprintf(conns[r].node, sizeof(conns[r].node), "%s", cl.leader[r]);
		if (dial(port, &conns[r], &err) != 0)
			goto out;
	}
	fprintf(stderr, "bench_tiers: %d racks: leaders dialled (%.1f s)\n", nracks,
		hm_mono_s() - t0);
	for (int i = 0; i < nt; i++) {
		int per = (nracks + nt - 1) / nt;

		lt[i].c = conns + i * per;
		lt[i].n = i * per + per <= nracks ? per : nracks - i * per;
		lt[i].heartbeat_ms = o->heartbeat_ms;
		pthread_mutex_init(&lt[i].mu, NULL);
		if (lt[i].n <= 0 || pthread_create(&lt[i].th, NULL, leader_main, &lt[i]) != 0)
			continue;
		pthread_getcpuclockid(lt[i].th, &lt[i].cid);
		lt[i].started = true;
	}
	/* Every rack led: agents up for AgentValidity, then a beat elects. */
	for (int i = 0; i < 600 && leaders < nracks; i++) {
		usleep(100000);
		rack_counts(cld, &solves0, &by0, &silent0, &leaders);
		if (i % 20 == 19)
			fprintf(stderr, "bench_tiers: %d racks: %d leaders (%.1f s)\n", nracks,
				leaders, hm_mono_s() - t0);
	}
	res->settle_s = hm_mono_s() - t0;
	if (leaders < nracks) {
		fprintf(stderr, "bench_tiers: %d racks: only %d leaders after %.0f s\n", nracks,
			leaders, res->settle_s);
		goto out;
	}
	/* What the beats alone cost the coordinator's process, per second. */
	leaders_totals(lt, nt, &ls0, &lc0, true);
	c0 = proc_cpu_s();
	t0 = hm_mono_s();
	sleep((unsigned)o->idle_s);
	leaders_totals(lt, nt, &ls1, &lc1, false);
	res->idle_cpu_ms_s = ((proc_cpu_s() - c0) - (lc1 - lc0)) * 1e3 / (hm_mono_s() - t0);
	res->rounds = o->rounds;
	for (int k = 0; k <= o->rounds; k++) {
		double now = now0 + k * conf_ld.epoch_s, w0, m0;
		bool changed;
		int sched = 0, held = 0, d, prio[8];

		/* In process: everything runs in this thread. */
		rack_counts(cin, &solves0, &by0, &silent0, &leaders);
		w0 = hm_mono_s();
		c0 = thread_cpu_s(CLOCK_THREAD_CPUTIME_ID);
		if (hm_coord_decide(cin, now, &changed, &err) != HM_OK)
			goto out;
		rd[k].in_cpu_s = thread_cpu_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		rd[k].in_wall_s = hm_mono_s() - w0;
		rack_counts(cin, &solves1, &by1, &silent1, &leaders);
		rd[k].in_asked = (double)(solves1 - solves0);

		/* Through the leaders. */
		rack_counts(cld, &solves0, &by0, &silent0, &leaders);
		leaders_totals(lt, nt, &ls0, &lc0, true);
		m0 = munged_cpu_s();
		c0 = proc_cpu_s();
		w0 = hm_mono_s();
		if (hm_coord_decide(cld, now, &changed, &err) != HM_OK)
			goto out;
		rd[k].wall_s = hm_mono_s() - w0;
		rack_counts(cld, &solves1, &by1, &silent1, &leaders);
		/* The leaders count a reply once it is sent: wait for the last counts. */
		for (int i = 0; i < 200; i++) {
			leaders_totals(lt, nt, &ls1, &lc1, false);
			if (ls1.results_out - ls0.results_out >= by1 - by0)
				break;
			usleep(1000);
		}
		leaders_totals(lt, nt, &ls1, &lc1, false);
		rd[k].cpu_s = (proc_cpu_s() - c0) - (lc1 - lc0);
		rd[k].munge_s = munged_cpu_s() - m0;
		rd[k].lead_cpu_s = ls1.cpu_s - ls0.cpu_s;
		rd[k].lead_max_s = ls1.cpu_max_s;
		rd[k].msgs =
		    (double)(ls1.rounds_in - ls0.rounds_in + ls1.results_out - ls0.results_out);
		rd[k].bytes = (double)(ls1.bytes_in - ls0.bytes_in + ls1.bytes_out - ls0.bytes_out);
		rd[k].asked = (double)(solves1 - solves0 + silent1 - silent0);
		rd[k].answered = (double)(by1 - by0);
		res->silent += (int)(silent1 - silent0);
		d = differing(cin, cld, &sched, &held, prio);
		res->differ_rounds += d != 0;
		printf("  %4d racks round %d%s: wall %8.2f ms (in process %8.2f ms), asked %.0f, "
		       "by leaders %.0f, silent %lu, msgs %.0f, %.1f KiB, coord CPU %.2f ms, "
		       "leaders CPU %.2f ms (max %.3f), munged %.0f ms; jobs differing: %d of %d "
		       "scheduled (in process: %d holding slots, classes 0-3: %d %d %d %d)\n",
		       nracks, k, k ? "" : " (arrivals)", rd[k].wall_s * 1e3, rd[k].in_wall_s * 1e3,
		       rd[k].asked, rd[k].answered, silent1 - silent0, rd[k].msgs,
		       rd[k].bytes / 1024, rd[k].cpu_s * 1e3, rd[k].lead_cpu_s * 1e3,
		       rd[k].lead_max_s * 1e3, rd[k].munge_s * 1e3, d, sched, held, prio[0],
		       prio[1], prio[2], prio[3]);
		fflush(stdout);
		usleep(300000); /* the pushes of changed decisions go out between rounds */
	}
	for (int i = 0; i < o->rounds; i++)
		ep[i] = rd[i + 1];
	res->wall_ms = MED(wall_s) * 1e3;
	res->cpu_ms = MED(cpu_s) * 1e3;
	res->lead_ms = MED(lead_cpu_s) * 1e3;
	res->lead_max_ms = MED(lead_max_s) * 1e3;
	res->munge_ms = MED(munge_s) * 1e3;
	res->msgs = MED(msgs);
	res->kbytes = MED(bytes) / 1024;
	res->in_wall_ms = MED(in_wall_s) * 1e3;
	res->in_cpu_ms = MED(in_cpu_s) * 1e3;
	res->asked_med = (int)MED(asked);
	ret = 0;
out:
	if (ret != 0 && err.msg[0])
		fprintf(stderr, "bench_tiers: %d racks: %s\n", nracks, err.msg);
	atomic_store(&stop_leaders, 1);
	for (int i = 0; i < nt; i++)
		if (lt[i].started) {
			pthread_join(lt[i].th, NULL);
			res->errors += lt[i].st.errors;
			if (lt[i].st.errors)
				fprintf(stderr, "bench_tiers: %lu leader errors, last: %s\n",
					lt[i].st.errors, lt[i].last_err);
			pthread_mutex_destroy(&lt[i].mu);
		}
	for (int r = 0; conns && r < nracks; r++)
		if (conns[r].fd > 0)
			close(conns[r].fd);
	free(conns);
	hm_server_stop(srv);
	hm_coord_destroy(cld);
	hm_coord_destroy(cin);
	cluster_free(&cl);
	return ret;
}

/* ---- main ---------------------------------------------------------------------- */

static int parse_int(const char *s, long lo, long hi, const char *what, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "bench_tiers: %s '%s' (accepted: an integer in %ld..%ld)\n", what,
			s, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
	*o = (opts_t){.sizes = {16, 128, 1024},
		      .nsizes = 3,
		      .rounds = 5,
		      .threads = 4,
		      .heartbeat_ms = 2000,
		      .rack_timeout_ms = 1000,
		      .cross = 0.1,
		      .compute_scale = 0.1,
		      .idle_s = 2,
		      .seed = 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int seed = 0;

		if (!v) {
			fprintf(stderr, "bench_tiers: %s needs a value\n", a);
			return -1;
		}
		i++;
		if (strcmp(a, "--racks") == 0) {
			char *list = strdup(v), *save = NULL;

			o->nsizes = 0;
			for (char *t = strtok_r(list, ",", &save); t;
			     t = strtok_r(NULL, ",", &save))
				if (o->nsizes >= MAX_SIZES ||
				    parse_int(t, 1, 4096, "--racks", &o->sizes[o->nsizes++]) != 0) {
					free(list);
					return -1;
				}
			free(list);
		} else if (strcmp(a, "--rounds") == 0) {
			if (parse_int(v, 1, MAX_ROUNDS, a, &o->rounds) != 0)
				return -1;
		} else if (strcmp(a, "--threads") == 0) {
			if (parse_int(v, 1, MAX_THREADS, a, &o->threads) != 0)
				return -1;
		} else if (strcmp(a, "--heartbeat-ms") == 0) {
			if (parse_int(v, 100, 60000, a, &o->heartbeat_ms) != 0)
				return -1;
		} else if (strcmp(a, "--rack-timeout-ms") == 0) {
			if (parse_int(v, 10, 60000, a, &o->rack_timeout_ms) != 0)
				return -1;
		} else if (strcmp(a, "--idle-s") == 0) {
			if (parse_int(v, 1, 600, a, &o->idle_s) != 0)
				return -1;
		} else if (strcmp(a, "--seed") == 0) {
			if (parse_int(v, 0, 2147483647L, a, &seed) != 0)
				return -1;
			o->seed = (unsigned long)seed;
		} else if (strcmp(a, "--compute-scale") == 0) {
			char *end;

			o->compute_scale = strtod(v, &end);
			if (end == v || *end ||
			    !(o->compute_scale >= 0.001 && o->compute_scale <= 1000)) {
				fprintf(
				    stderr,
				    "bench_tiers: --compute-scale '%s' (accepted: 0.001..1000)\n",
				    v);
				return -1;
			}
		} else if (strcmp(a, "--cross") == 0) {
			char *end;

			o->cross = strtod(v, &end);
			if (end == v || *end || !(o->cross >= 0 && o->cross <= 1)) {
				fprintf(stderr, "bench_tiers: --cross '%s' (accepted: 0..1)\n", v);
				return -1;
			}
		} else {
			fprintf(stderr,
				"usage: bench_tiers [--racks N[,N...]] [--rounds N] [--cross F] "
				"[--seed S] [--threads T] [--heartbeat-ms MS] [--rack-timeout-ms "
				"MS] [--idle-s S] [--compute-scale F]\n");
			return -1;
		}
	}
	return 0;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : NAN;
}

static void print_results(const result_t *r, int n)
{
	printf("\n| racks | hosts | jobs | cross-rack | racks asked | round wall ms | msgs | KiB "
	       "| coord CPU ms | leaders CPU ms sum / max | munged CPU ms | in-process wall ms | "
	       "in-process CPU ms | same decisions |\n|");
	for (int c = 0; c < 14; c++)
		printf("---|");
	printf("\n");
	for (int i = 0; i < n; i++)
		printf(
		    "| %d | %d | %d | %d (%.1f%%) | %d | %.1f | %.0f | %.1f | %.1f | %.1f / %.2f | "
		    "%.0f | %.1f | %.1f | %s |\n",
		    r[i].racks, r[i].hosts, r[i].jobs, r[i].cross, 100.0 * r[i].cross / r[i].jobs,
		    r[i].asked_med, r[i].wall_ms, r[i].msgs, r[i].kbytes, r[i].cpu_ms, r[i].lead_ms,
		    r[i].lead_max_ms, r[i].munge_ms, r[i].in_wall_ms, r[i].in_cpu_ms,
		    r[i].differ_rounds ? "no" : "yes");
	printf("\nOther: ");
	for (int i = 0; i < n; i++)
		printf("%s%d racks: leaders settled in %.1f s, silent racks %d, leader errors %lu, "
		       "coordinator CPU while idle (beats) %.1f ms/s, one racks view %.1f ms",
		       i ? "; " : "", r[i].racks, r[i].settle_s, r[i].silent, r[i].errors,
		       r[i].idle_cpu_ms_s, r[i].view_ms);
	printf("\n\nGrowth (ratio to the previous size):\n");
	for (int i = 1; i < n; i++)
		printf("  %d -> %d racks: racks x%.1f, jobs x%.1f, cross-rack x%.1f | round wall "
		       "x%.1f, msgs x%.1f, bytes x%.1f, coord CPU x%.1f, leaders CPU x%.1f | in "
		       "process: wall x%.1f, CPU x%.1f\n",
		       r[i - 1].racks, r[i].racks, ratio(r[i].racks, r[i - 1].racks),
		       ratio(r[i].jobs, r[i - 1].jobs), ratio(r[i].cross, r[i - 1].cross),
		       ratio(r[i].wall_ms, r[i - 1].wall_ms), ratio(r[i].msgs, r[i - 1].msgs),
		       ratio(r[i].kbytes, r[i - 1].kbytes), ratio(r[i].cpu_ms, r[i - 1].cpu_ms),
		       ratio(r[i].lead_ms, r[i - 1].lead_ms),
		       ratio(r[i].in_wall_ms, r[i - 1].in_wall_ms),
		       ratio(r[i].in_cpu_ms, r[i - 1].in_cpu_ms));
}

int main(int argc, char **argv)
{
	opts_t o;
	result_t res[MAX_SIZES];
	struct rlimit rl;
	char *cred = NULL, *json = NULL;
	uint32_t uid, gid;
	hm_err_t err = {0};
	int n = 0, ret = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (parse_opts(argc, argv, &o) != 0)
		return 2;
	if (hm_proto_seal("{}", HM_PROTO_UID_ANY, &cred, &err) != HM_OK ||
	    hm_proto_unseal(cred, &json, &uid, &gid, &err) != HM_OK) {
		fprintf(stderr, "bench_tiers: munge: %s (start munged: scripts/munge-up.sh)\n",
			err.msg);
		free(cred);
		return 1;
	}
	free(cred);
	free(json);
	/* Two descriptors per rack (both ends on loopback), plus munge's. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	hm_log_set_level(HM_LOG_ERROR);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("bench_tiers: %ld CPUs online, %d epoch rounds per size (medians), cross-rack "
	       "target %.0f%% of jobs, compute scale %g, seed %lu, %d leader threads, "
	       "HeartbeatInterval %d ms, RackTimeout %d ms, RLIMIT_NOFILE %lu\n",
	       ncpu, o.rounds, o.cross * 100, o.compute_scale, o.seed, o.threads, o.heartbeat_ms,
	       o.rack_timeout_ms,
	       getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (unsigned long)rl.rlim_cur : 0UL);
	for (int i = 0; i < o.nsizes; i++) {
		if (run_size(&o, o.sizes[i], &res[n]) != 0) {
			ret = 1;
			continue;
		}
		n++;
	}
	print_results(res, n);
	return ret;
}
