/* harmonics-emujob: the iteration loop, the results, and the --local launcher. */
#define _GNU_SOURCE
#include "ej.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hm_fields.h"
#include "hm_pace.h"
#include "hm_pace_env.h"
#include "hm_sort.h"

typedef struct {
	double iter_ms, comm_ms, wait_ms, compute_ms;
	double
	    ready_ms; /* rank 0: iteration start until every rank was ready (the job's compute) */
	int64_t start_us; /* CLOCK_REALTIME at the iteration's start */
	int64_t slot;     /* slot id = its start time (us), HM_PACE_NO_SLOT when free */
	int64_t epoch;    /* assignment epoch that governed the burst, -1 when none did */
} ej_iter_t;

/* Compute time of one iteration: uniform with the asked coefficient of variation
 * (half-width sqrt(3) * cv), per rank, as measured mini-batch times vary. */
static double compute_s(const ej_opts_t *o, unsigned *seed)
{
	double u = (double)rand_r(seed) / RAND_MAX * 2.0 - 1.0;

	return o->compute_s * (1.0 + u * 1.7320508 * o->jitter);
}

static void compute(const ej_opts_t *o, unsigned *seed)
{
	int64_t until = hm_pace_now_us() + (int64_t)(compute_s(o, seed) * 1e6);

	if (o->compute_mode == EJ_COMPUTE_SLEEP) {
		struct timespec ts = {.tv_sec = until / 1000000, .tv_nsec = until % 1000000 * 1000};

		while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		return;
	}
	while (hm_pace_now_us() < until)
		; /* busy: a GPU-less stand-in for a saturated device */
}

/* The barrier's planner (rank 0): remembers when the last rank was ready. */
typedef struct {
	hm_pace_t *p;
	int64_t max_ready_us;
} ej_plan_t;

static int64_t plan_cb(void *ctx, int64_t max_ready_us)
{
	ej_plan_t *pl = ctx;

	pl->max_ready_us = max_ready_us;
	return hm_pace_plan(pl->p, max_ready_us);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double pct(const double *v, int n, double q)
{
	int i = (int)ceil(q * n) - 1;

	return v[i < 0 ? 0 : (i >= n ? n - 1 : i)];
}

typedef struct {
	double mean, p50, p95, p99, max;
} ej_dist_t;

static ej_dist_t dist(const ej_iter_t *it, int n, size_t field)
{
	double *v = malloc(sizeof(double) * (size_t)n), sum = 0;
	ej_dist_t d = {0};

	if (!v || n == 0) {
		free(v);
		return d;
	}
	for (int i = 0; i < n; i++) {
		v[i] = *(const double *)((const char *)&it[i] + field);
		sum += v[i];
	}
	qsort(v, (size_t)n, sizeof(double), hm_cmp_double);
	d.mean = sum / n;
	d.p50 = pct(v, n, 0.50);
	d.p95 = pct(v, n, 0.95);
	d.p99 = pct(v, n, 0.99);
	d.max = v[n - 1];
	free(v);
	return d;
}

static const hm_field_t dist_fields[] = {
    HM_FIELD(ej_dist_t, mean, "mean", HM_F_DBL), HM_FIELD(ej_dist_t, p50, "p50", HM_F_DBL),
    HM_FIELD(ej_dist_t, p95, "p95", HM_F_DBL),   HM_FIELD(ej_dist_t, p99, "p99", HM_F_DBL),
    HM_FIELD(ej_dist_t, max, "max", HM_F_DBL),
};

static const hm_field_t iter_fields[] = {
    HM_FIELD(ej_iter_t, iter_ms, "iter_ms", HM_F_DBL),
    HM_FIELD(ej_iter_t, comm_ms, "comm_ms", HM_F_DBL),
    HM_FIELD(ej_iter_t, wait_ms, "wait_ms", HM_F_DBL),
    HM_FIELD(ej_iter_t, compute_ms, "compute_ms", HM_F_DBL),
    HM_FIELD(ej_iter_t, ready_ms, "ready_ms", HM_F_DBL),
    HM_FIELD(ej_iter_t, start_us, "start_us", HM_F_I64),
    HM_FIELD_FL(ej_iter_t, slot, "slot", HM_F_I64, HM_F_NULL), /* null: ran free */
    HM_FIELD(ej_iter_t, epoch, "epoch", HM_F_I64),
};

/* The pacing runtime's view of the run ("pace" in --json). */
typedef struct {
	int prio; /* class in force at the end, -1 = none */
	int dscp; /* DSCP the sockets carried last, -1 = unmarked */
	bool active;
	hm_pace_stats_t ps;
} ej_pace_out_t;

static const hm_field_t pace_fields[] = {
    HM_FIELD_FL(ej_pace_out_t, prio, "prio", HM_F_INT, HM_F_NULL),
    HM_FIELD_FL(ej_pace_out_t, dscp, "dscp", HM_F_INT, HM_F_NULL),
    HM_FIELD(ej_pace_out_t, active, "active", HM_F_BOOL),
    HM_FIELD(ej_pace_out_t, ps.paced, "paced", HM_F_I64),
    HM_FIELD(ej_pace_out_t, ps.late, "late", HM_F_I64),
    HM_FIELD(ej_pace_out_t, ps.skipped, "skipped", HM_F_I64),
    HM_FIELD(ej_pace_out_t, ps.unpaced, "unpaced", HM_F_I64),
    HM_FIELD(ej_pace_out_t, ps.period_us, "period_us", HM_F_DBL),
    HM_FIELD(ej_pace_out_t, ps.burst_us, "burst_us", HM_F_DBL),
    HM_FIELD(ej_pace_out_t, ps.slot_error_us, "slot_error_us", HM_F_DBL),
    HM_FIELD(ej_pace_out_t, ps.slot_misses, "slot_misses", HM_F_U64),
    HM_FIELD(ej_pace_out_t, ps.applied_epoch, "applied_epoch", HM_F_I64),
};

/* The job as its options resolved it: the head of both the results and --dry-run. */
static const hm_field_t job_fields[] = {
    HM_FIELD(ej_opts_t, nranks, "ranks", HM_F_INT),
    HM_FIELD(ej_opts_t, model, "model", HM_F_STR),
    HM_FIELD(ej_opts_t, compute_s, "compute_s", HM_F_DBL),
    HM_FIELD(ej_opts_t, bytes, "bytes", HM_F_DBL),
    HM_FIELD(ej_opts_t, iterations, "iterations", HM_F_INT),
    HM_FIELD(ej_opts_t, warmup, "warmup", HM_F_INT),
};

/* One run's results (--json), after the job, without the per-iteration array. */
typedef struct {
	ej_dist_t iter_ms, comm_ms, wait_ms, compute_ms, ready_ms;
	int64_t start_us; /* CLOCK_REALTIME at the start of the first (warm-up) iteration */
	int64_t end_us;   /* CLOCK_REALTIME at the end of the last iteration */
	ej_pace_out_t pace;
} ej_summary_t;

static const hm_field_t summary_fields[] = {
    HM_FIELD_OBJ(ej_summary_t, iter_ms, "iter_ms", dist_fields),
    HM_FIELD_OBJ(ej_summary_t, comm_ms, "comm_ms", dist_fields),
    HM_FIELD_OBJ(ej_summary_t, wait_ms, "wait_ms", dist_fields),
    HM_FIELD_OBJ(ej_summary_t, compute_ms, "compute_ms", dist_fields),
    HM_FIELD_OBJ(ej_summary_t, ready_ms, "ready_ms", dist_fields),
    HM_FIELD(ej_summary_t, start_us, "start_us", HM_F_I64),
    HM_FIELD(ej_summary_t, end_us, "end_us", HM_F_I64),
    HM_FIELD_OBJ(ej_summary_t, pace, "pace", pace_fields),
};

/* What --dry-run writes after the job: its compute jitter and the class in force. */
typedef struct {
	double compute_jitter;
	int prio, dscp; /* -1: none */
} ej_resolved_t;

static const hm_field_t resolved_fields[] = {
    HM_FIELD(ej_resolved_t, compute_jitter, "compute_jitter", HM_F_DBL),
    HM_FIELD_FL(ej_resolved_t, prio, "prio", HM_F_INT, HM_F_NULL),
    HM_FIELD_FL(ej_resolved_t, dscp, "dscp", HM_F_INT, HM_F_NULL),
};

/* A new object: the job's members, then rec's from table fs. */
static json_object *job_json(const ej_opts_t *o, const hm_field_t *fs, size_t n, const void *rec)
{
	json_object *j = hm_fields_new(job_fields, HM_NFIELDS(job_fields), o);

	hm_fields_encode(j, fs, n, rec);
	return j;
}

static void print_results(const ej_opts_t *o, const ej_iter_t *it, int n, ej_summary_t *sm,
			  FILE *out)
{
	const hm_pace_stats_t *ps = &sm->pace.ps;
	const ej_dist_t *di = &sm->iter_ms, *dc = &sm->comm_ms, *dw = &sm->wait_ms;

	sm->iter_ms = dist(it, n, offsetof(ej_iter_t, iter_ms));
	sm->comm_ms = dist(it, n, offsetof(ej_iter_t, comm_ms));
	sm->wait_ms = dist(it, n, offsetof(ej_iter_t, wait_ms));
	sm->compute_ms = dist(it, n, offsetof(ej_iter_t, compute_ms));
	sm->ready_ms = dist(it, n, offsetof(ej_iter_t, ready_ms));
	if (o->json) {
		json_object *j = job_json(o, summary_fields, HM_NFIELDS(summary_fields), sm);

		if (!o->quiet) {
			json_object *arr = json_object_new_array_ext(n);

			for (int i = 0; i < n; i++)
				json_object_array_add(
				    arr,
				    hm_fields_new(iter_fields, HM_NFIELDS(iter_fields), &it[i]));
			json_object_object_add(j, "per_iteration", arr);
		}
		fprintf(out, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
		json_object_put(j);
		return;
	}
	if (!o->quiet)
		for (int i = 0; i < n; i++)
			fprintf(
			    out,
			    "iter %d iter_ms=%.2f comm_ms=%.2f wait_ms=%.2f slot=%lld epoch=%lld\n",
			    i, it[i].iter_ms, it[i].comm_ms, it[i].wait_ms,
			    it[i].slot == HM_PACE_NO_SLOT ? -1LL : (long long)it[i].slot,
			    (long long)it[i].epoch);
	fprintf(out,
		"summary ranks=%d iterations=%d bytes=%.0f compute_ms=%.1f\n"
		"summary iter_ms mean=%.2f p50=%.2f p95=%.2f p99=%.2f max=%.2f\n"
		"summary comm_ms mean=%.2f p50=%.2f p99=%.2f\n"
		"summary wait_ms mean=%.2f\n"
		"summary pace active=%d paced=%lld late=%lld skipped=%lld unpaced=%lld "
		"period_us=%.0f burst_us=%.0f slot_error_us=%.1f slot_misses=%llu "
		"applied_epoch=%lld\n",
		o->nranks, n, o->bytes, o->compute_s * 1e3, di->mean, di->p50, di->p95, di->p99,
		di->max, dc->mean, dc->p50, dc->p99, dw->mean, sm->pace.active ? 1 : 0,
		(long long)ps->paced, (long long)ps->late, (long long)ps->skipped,
		(long long)ps->unpaced, ps->period_us, ps->burst_us, ps->slot_error_us,
		(unsigned long long)ps->slot_misses, (long long)ps->applied_epoch);
}

/* Every element must be the sum of (rank + 1) over ranks: a real, checked reduction. */
static hm_rc_t check_sum(const float *buf, size_t count, int nranks, hm_err_t *err)
{
	float want = (float)nranks * (float)(nranks + 1) / 2.0f;
	size_t step = count / 97 + 1;

	for (size_t i = 0; i < count; i += step)
		if (buf[i] != want)
			return hm_err_set(err, HM_ERR_PROTO,
					  "all-reduce result %g at element %zu, expected %g",
					  (double)buf[i], i, (double)want);
	return buf[count - 1] == want ? HM_OK
				      : hm_err_set(err, HM_ERR_PROTO, "all-reduce tail is wrong");
}

/* Mark every socket of the job (ring and barrier: a barrier held behind another
 * class's burst would delay the job like its own data) with the class in force
 * when it changed (an assignment update may change it); *dscp keeps what they carry. */
static hm_rc_t mark_sockets(hm_pace_t *p, const ej_net_t *net, int *dscp, hm_err_t *err)
{
	int want = hm_pace_class_dscp(hm_pace_prio(p));

	if (want < 0 || want == *dscp)
		return HM_OK; /* no class: the sockets keep what they carry */
	for (int i = -3; i < (net->down_fds ? net->nranks : 0); i++) {
		int fd = i == -3   ? net->next_fd
			 : i == -2 ? net->prev_fd
			 : i == -1 ? net->up_fd
				   : net->down_fds[i];

		if (fd >= 0 && hm_pace_mark_socket(p, fd) == -2)
			return hm_err_set(err, HM_ERR_IO, "rank %d: IP_TOS (DSCP %d): %s",
					  net->rank, want, strerror(errno));
	}
	*dscp = want;
	return HM_OK;
}

hm_rc_t ej_run_rank(const ej_opts_t *o, FILE *out, hm_err_t *err)
{
	ej_net_t net = {.next_fd = -1, .prev_fd = -1, .up_fd = -1};
	size_t count = (size_t)(o->bytes / sizeof(float));
	int total = o->warmup + o->iterations, measured = o->iterations;
	ej_opts_t done_o = *o; /* the results name the iterations measured */
	ej_iter_t *it = calloc((size_t)o->iterations, sizeof(*it));
	float *buf = malloc((count ? count : 1) * sizeof(float));
	hm_pace_t *p = NULL;
	ej_summary_t sm = {.pace.dscp = -1};
	ej_plan_t pl = {0};
	hm_rc_t rc;
	char rank_s[16];
	unsigned seed = (unsigned)hm_pace_now_us() ^ (unsigned)getpid() * 2654435761u;

	/* The report file's %r and the warnings name this rank. */
	snprintf(rank_s, sizeof(rank_s), "%d", o->rank);
	setenv(HM_PACE_ENV_RANK, rank_s, 1);
	p = hm_pace_init();
	pl.p = p;

	if (count == 0)
		count = 1;
	if (!it || !buf || !p) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "rank %d: out of memory for %zu floats", o->rank,
				count);
		goto out;
	}
	if ((rc = ej_net_open(&net, o, err)))
		goto out;
	for (int i = 0; i < total; i++) {
		int64_t t0 = hm_pace_now_us(), ready, start, end, slot = HM_PACE_NO_SLOT;
		bool stop;

		if (i == 0)
			sm.start_us = t0;
		hm_pace_iter_begin(p);
		if ((rc = mark_sockets(p, &net, &sm.pace.dscp, err)))
			goto out;
		compute(o, &seed);
		for (size_t k = 0; k < count; k++)
			buf[k] = (float)(o->rank + 1);
		ready = hm_pace_now_us();
		/* Rank 0 plans once with the latest ready time and sends the slot id (a time)
		 * to every rank: all wait for the same instant across an update. */
		pl.max_ready_us = ready;
		stop = o->rank == 0 && o->stop_file[0] && access(o->stop_file, F_OK) == 0;
		if ((rc = ej_net_barrier(&net, (uint32_t)i, ready, plan_cb, &pl, &slot, &stop,
					 err)))
			goto out;
		if (stop) {
			measured = i > o->warmup ? i - o->warmup : 0;
			break;
		}
		hm_pace_comm_begin_slot(p, slot);
		start = hm_pace_now_us();
		if ((rc = ej_net_allreduce(&net, buf, count, err)))
			goto out;
		hm_pace_comm_end(p);
		end = hm_pace_now_us();
		if ((rc = check_sum(buf, count, o->nranks, err))) {
			hm_err_prefix(err, "rank %d iteration %d", o->rank, i);
			goto out;
		}
		if (i >= o->warmup) {
			ej_iter_t *e = &it[i - o->warmup];
			hm_pace_stats_t now_st;

			e->iter_ms = (double)(end - t0) / 1e3;
			e->comm_ms = (double)(end - start) / 1e3;
			e->wait_ms = (double)(start - ready) / 1e3;
			e->compute_ms = (double)(ready - t0) / 1e3;
			e->ready_ms = (double)(pl.max_ready_us - t0) / 1e3;
			e->start_us = t0;
			e->slot = slot;
			hm_pace_stats(p, &now_st);
			e->epoch = now_st.burst_epoch;
		}
		sm.end_us = end;
	}
	hm_pace_stats(p, &sm.pace.ps);
	sm.pace.active = hm_pace_active(p);
	sm.pace.prio = hm_pace_prio(p);
	done_o.iterations = measured;
	if (o->rank == 0)
		print_results(&done_o, it, measured, &sm, out);
out:
	ej_net_close(&net);
	hm_pace_fini(p);
	free(buf);
	free(it);
	return rc;
}

void ej_print_resolved(const ej_opts_t *o, FILE *out)
{
	hm_pace_t *p = hm_pace_init();
	ej_resolved_t r = {.compute_jitter = o->jitter, .prio = hm_pace_prio(p)};
	json_object *j;

	r.dscp = r.prio < 0 ? -1 : hm_pace_class_dscp(r.prio);
	j = job_json(o, resolved_fields, HM_NFIELDS(resolved_fields), &r);
	fprintf(out, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
	json_object_put(j);
	hm_pace_fini(p);
}

int ej_run_local(ej_opts_t *o, FILE *out)
{
	pid_t *pids = calloc((size_t)o->local, sizeof(pid_t));
	hm_err_t err = {0};
	int lfd = -1, port = 0, status = 0, rc = 0;

	if (!pids) {
		fprintf(stderr, "harmonics-emujob: out of memory\n");
		return EJ_EXIT_FAILED;
	}
	/* Rank 0's rendezvous socket exists before any child runs: no port race. */
	if (ej_net_listen_any(0, &lfd, &port, &err) != HM_OK) {
		fprintf(stderr, "harmonics-emujob: %s\n", err.msg);
		free(pids);
		return EJ_EXIT_FAILED;
	}
	fflush(out);
	for (int r = 0; r < o->local; r++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "harmonics-emujob: fork: %s\n", strerror(errno));
			rc = EJ_EXIT_FAILED;
			break;
		}
		if (pid == 0) {
			ej_opts_t c = *o;

			c.rank = r;
			c.local = 0;
			c.rdv_port = port;
			c.listen_fd = r == 0 ? lfd : -1;
			if (r != 0)
				close(lfd);
			if (ej_run_rank(&c, out, &err) != HM_OK) {
				fprintf(stderr, "harmonics-emujob: %s\n", err.msg);
				fflush(out);
				_exit(EJ_EXIT_FAILED);
			}
			fflush(out);
			_exit(0);
		}
		pids[r] = pid;
	}
	close(lfd);
	/* A failed rank makes its peers time out; stop them at once instead. */
	for (int left = o->local; left > 0; left--) {
		pid_t pid = wait(&status);

		if (pid < 0)
			break;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			rc = EJ_EXIT_FAILED;
			for (int r = 0; r < o->local; r++)
				if (pids[r] > 0 && pids[r] != pid)
					kill(pids[r], SIGTERM);
		}
		for (int r = 0; r < o->local; r++)
			if (pids[r] == pid)
				pids[r] = 0;
	}
	free(pids);
	return rc;
}
