/*
 * The agent's job table: the assign file's text (checked by the runtime's own
 * parser), the next assignment and its promotion at T + max(periods) + 1 s
 * without renewal, report files differenced into exact per-job windows
 * (restarts, several ranks, applied epoch), a bad report logged once, and the
 * cleanup of directories of jobs the coordinator no longer lists.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent_jobs.h"

static char g_top[256];
static int g_node = -1;
static int g_lines; /* log lines received */
static char g_last_line[1024];
static int g_last_level;

static void collect(int level, const char *msg)
{
	g_lines++;
	g_last_level = level;
	snprintf(g_last_line, sizeof(g_last_line), "%s", msg);
}

static hm_logger_t g_log = {.sink = collect, .level = HM_LOG_DEBUG, .prefix = "test: "};

static int64_t real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int setup(void **state)
{
	char run[300];
	hm_err_t err = {0};

	snprintf(g_top, sizeof(g_top), "/tmp/hm_agent_jobs_XXXXXX");
	if (!mkdtemp(g_top))
		return -1;
	snprintf(run, sizeof(run), "%s/run", g_top);
	g_node = agent_node_dir_open(run, "n1", &err);
	g_lines = 0;
	return g_node >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	close(g_node);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_top);
	return system(cmd) == 0 ? 0 : -1;
}

static hm_aw_sched_t sched(const char *policy, long epoch, int64_t period, int64_t shift, int prio)
{
	hm_aw_sched_t s;

	memset(&s, 0, sizeof(s));
	snprintf(s.policy, sizeof(s.policy), "%s", policy);
	s.epoch = epoch;
	s.period_us = period;
	s.shift_us = shift;
	s.origin_us = 1700000000000000;
	s.guard_us = period ? period / 10 : 0;
	s.prio = prio;
	return s;
}

static hm_aw_job_assign_t decision(long job, bool with_next, int64_t effective_us)
{
	hm_aw_job_assign_t d;

	memset(&d, 0, sizeof(d));
	d.job_id = job;
	d.uid = (uint32_t)geteuid();
	d.scheduled = true;
	d.cur = sched("harmonics", 7, 100000, 25000, 2);
	if (with_next) {
		d.has_next = true;
		d.next_effective_us = effective_us;
		d.next = sched("harmonics", 8, 200000, 150000, 1);
	}
	return d;
}

static void parse_text(const char *text, pace_assign_t *a)
{
	hm_err_t err = {0};

	pace_assign_clear(a);
	if (pace_assign_parse_text(a, text, "assign", &err) != HM_OK ||
	    pace_assign_validate(a, "assign", &err) != HM_OK)
		fail_msg("%s\n%s", err.msg, text);
}

static void test_text_current(void **state)
{
	hm_aw_job_assign_t d = decision(42, false, 0);
	char text[AGENT_ASSIGN_TEXT_MAX];
	pace_assign_t a;
	hm_err_t err = {0};

	assert_int_equal(
	    agent_assign_text(42, &d, real_us(), 1800000000000000, text, sizeof(text), &err),
	    HM_OK);
	parse_text(text, &a);
	assert_string_equal(a.cur.mode, "harmonics");
	assert_int_equal(a.cur.period_us, 100000);
	assert_int_equal(a.cur.shift_us, 25000);
	assert_int_equal(a.cur.origin_us, 1700000000000000);
	assert_int_equal(a.cur.guard_us, 10000);
	assert_int_equal(a.cur.prio, 2);
	assert_int_equal(a.cur.epoch, 7);
	assert_int_equal(a.job_id, 42);
	assert_int_equal(a.valid_until_us, 1800000000000000);
	assert_false(a.has_next);
	assert_int_equal(agent_promote_at_us(&d), INT64_MAX);
}

/* The next assignment is written as pending until T + max(periods) + 1 s, then as current. */
static void test_text_next_promotion(void **state)
{
	const int64_t t = 1750000000000000;
	hm_aw_job_assign_t d = decision(42, true, t);
	int64_t at = agent_promote_at_us(&d);
	char text[AGENT_ASSIGN_TEXT_MAX];
	pace_assign_t a;
	hm_err_t err = {0};

	assert_int_equal(at, t + 200000 + 1000000);
	assert_int_equal(agent_assign_text(42, &d, at - 1, at + 5, text, sizeof(text), &err),
			 HM_OK);
	parse_text(text, &a);
	assert_true(a.has_next);
	assert_int_equal(a.next_effective_us, t);
	assert_int_equal(a.cur.epoch, 7);
	assert_int_equal(a.next.epoch, 8);
	assert_int_equal(a.next.period_us, 200000);
	assert_int_equal(a.next.shift_us, 150000);
	assert_int_equal(a.next.prio, 1);
	assert_int_equal(agent_assign_text(42, &d, at, at + 5, text, sizeof(text), &err), HM_OK);
	parse_text(text, &a);
	assert_false(a.has_next);
	assert_null(strstr(text, "NEXT"));
	assert_int_equal(a.cur.epoch, 8);
	assert_int_equal(a.cur.period_us, 200000);
	assert_int_equal(a.cur.shift_us, 150000);
	assert_int_equal(a.valid_until_us, at + 5);
	/* A one-time delay (Cassini: period 0, shift > 0) and a switch to off are written. */
	d.next = sched("cassini", 9, 0, 300000, 3);
	d.cur = sched("off", 8, 0, 0, 0);
	assert_int_equal(agent_assign_text(42, &d, t - 1, t + 5, text, sizeof(text), &err), HM_OK);
	parse_text(text, &a);
	assert_true(a.cur.off);
	assert_int_equal(pace_sched_kind(&a.next), PACE_KIND_DELAY);
}

static void test_text_off_and_refused(void **state)
{
	hm_aw_job_assign_t d = decision(43, false, 0);
	char text[AGENT_ASSIGN_TEXT_MAX];
	pace_assign_t a;
	hm_err_t err = {0};

	d.scheduled = false;
	snprintf(d.reason, sizeof(d.reason), "comm-sched off");
	assert_int_equal(agent_assign_text(43, &d, real_us(), 5, text, sizeof(text), &err), HM_OK);
	parse_text(text, &a);
	assert_true(a.cur.off);
	assert_int_equal(a.job_id, 43);
	/* A decision the runtime would refuse is not written: the message names the key. */
	d = decision(43, false, 0);
	d.cur.guard_us = d.cur.period_us;
	assert_int_not_equal(agent_assign_text(43, &d, real_us(), 5, text, sizeof(text), &err),
			     HM_OK);
	assert_non_null(strstr(err.msg, "HARMONICS_GUARD_US"));
	assert_non_null(strstr(err.msg, "job 43"));
	d = decision(43, false, 0);
	d.cur.shift_us = d.cur.period_us + 1;
	assert_int_not_equal(agent_assign_text(43, &d, real_us(), 5, text, sizeof(text), &err),
			     HM_OK);
	assert_non_null(strstr(err.msg, "HARMONICS_SHIFT_US"));
}

static int make_job(long id)
{
	char name[32];

	snprintf(name, sizeof(name), "job.%ld", id);
	assert_int_equal(mkdirat(g_node, name, 0700), 0);
	return openat(g_node, name, O_RDONLY | O_DIRECTORY);
}

static void read_assign(long id, pace_assign_t *a, char *text, size_t len)
{
	char path[400];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/run/n1/job.%ld/assign", g_top, id);
	assert_non_null(f = fopen(path, "r"));
	n = fread(text, 1, len - 1, f);
	fclose(f);
	text[n] = '\0';
	parse_text(text, a);
}

static void apply_one(agent_jobs_t *js, const hm_aw_job_assign_t *d, int64_t now_ms)
{
	hm_aw_node_assign_t *na = calloc(1, sizeof(*na));

	assert_non_null(na);
	snprintf(na->node, sizeof(na->node), "n1");
	if (d) {
		na->jobs[0] = *d;
		na->njobs = 1;
	}
	agent_jobs_apply(js, na, now_ms, &g_log);
	free(na);
}

/* Promotion rewrites the file with next as current and does not renew it. */
static void test_table_promotion(void **state)
{
	agent_jobs_t js;
	int64_t now = real_us(), at;
	hm_aw_job_assign_t d = decision(44, true, now + 500000);
	pace_assign_t a;
	char text[AGENT_ASSIGN_TEXT_MAX];

	memset(&js, 0, sizeof(js));
	close(make_job(44));
	js.valid_until_us = now + 3000000;
	apply_one(&js, &d, 1000);
	agent_jobs_write_all(&js, g_node, now, &g_log);
	read_assign(44, &a, text, sizeof(text));
	assert_true(a.has_next);
	at = agent_jobs_next_promotion_us(&js);
	assert_int_equal(at, now + 500000 + 200000 + 1000000);
	agent_jobs_promote(&js, g_node, at - 1, &g_log); /* not due */
	read_assign(44, &a, text, sizeof(text));
	assert_true(a.has_next);
	agent_jobs_promote(&js, g_node, at, &g_log);
	read_assign(44, &a, text, sizeof(text));
	assert_false(a.has_next);
	assert_int_equal(a.cur.epoch, 8);
	assert_int_equal(a.valid_until_us, now + 3000000); /* not a renewal */
	assert_int_equal(agent_jobs_next_promotion_us(&js), INT64_MAX);
	/* The coordinator's next reply may still carry C and N: written the same. */
	apply_one(&js, &d, 2000);
	agent_jobs_write_all(&js, g_node, at + 10, &g_log);
	read_assign(44, &a, text, sizeof(text));
	assert_false(a.has_next);
	assert_int_equal(a.cur.epoch, 8);
	/* Unlisted: no longer written. */
	apply_one(&js, NULL, 3000);
	assert_false(agent_jobs_write(&js, g_node, agent_jobs_get(&js, 44, false), at, &g_log));
	agent_jobs_free(&js);
}

/*
 * A job listed before its step made the directory (every job's start) is not a
 * failure: its directory turning up is no "recovery" at INFO either. A refused
 * directory (wrong mode) is an error, and fixing it is logged at INFO.
 */
static void test_dir_appears(void **state)
{
	agent_jobs_t js;
	int64_t now = real_us();
	hm_aw_job_assign_t d = decision(46, false, 0);
	int before;

	memset(&js, 0, sizeof(js));
	js.valid_until_us = now + 3000000;
	apply_one(&js, &d, 1000);
	before = g_lines;
	assert_false(agent_jobs_write(&js, g_node, agent_jobs_get(&js, 46, false), now, &g_log));
	assert_int_equal(g_lines - before, 1);
	assert_int_equal(g_last_level, HM_LOG_VERBOSE);
	close(make_job(46));
	assert_true(agent_jobs_write(&js, g_node, agent_jobs_get(&js, 46, false), now, &g_log));
	assert_int_equal(g_lines - before, 2); /* "assign file now epoch 7" only */
	assert_int_equal(g_last_level, HM_LOG_VERBOSE);
	assert_non_null(strstr(g_last_line, "now epoch"));
	assert_int_equal(fchmodat(g_node, "job.46", 0755, 0), 0);
	assert_false(agent_jobs_write(&js, g_node, agent_jobs_get(&js, 46, false), now, &g_log));
	assert_int_equal(g_last_level, HM_LOG_ERROR);
	assert_int_equal(fchmodat(g_node, "job.46", 0700, 0), 0);
	assert_true(agent_jobs_write(&js, g_node, agent_jobs_get(&js, 46, false), now, &g_log));
	assert_int_equal(g_last_level, HM_LOG_INFO);
	assert_non_null(strstr(g_last_line, "usable again"));
	assert_int_equal(g_lines - before, 4);
	agent_jobs_free(&js);
}

/* A report as the runtime writes it (version 2), replaced atomically. */
static int g_nccl_class = -1; /* NCCL_CLASS of the reports written, -1 = none */

static void report(int job_fd, int rank, long pid, long applied, uint64_t n, uint64_t sum,
		   uint64_t sq, uint64_t misses)
{
	char name[64], tmp[80], text[1024];
	int fd;

	snprintf(name, sizeof(name), "report.0.%d", rank);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", name, pid);
	snprintf(text, sizeof(text),
		 "HARMONICS_REPORT_VERSION=2\nJOB_ID=45\nRANK=%d\nMODE=harmonics\nEPOCH=%ld\n"
		 "ACTIVE=1\nPERIOD_ASSIGNED_US=100000\nSHIFT_US=0\nITERATIONS=%" PRIu64
		 "\nBURSTS=%" PRIu64 "\nPACED=0\nLATE=0\nSKIPPED=0\nUNPACED=0\nPERIOD_US=0\n"
		 "BURST_OFFSET_US=0\nBURST_US=0\nWAIT_US=0\nSLOT_ERROR_US=0.0\n"
		 "SLOT_ERROR_MAX_US=0.0\nUPDATED_US=%" PRId64 "\nITER_N=%" PRIu64
		 "\nITER_SUM_US=%" PRIu64 "\nITER_SQ_SUM_US2=%" PRIu64 "\nCOMPUTE_N=%" PRIu64
		 "\nCOMPUTE_SUM_US=%" PRIu64 "\nBURST_N=%" PRIu64 "\nBURST_SUM_US=%" PRIu64
		 "\nSLOT_MISSES=%" PRIu64 "\nAPPLIED_EPOCH=%ld\nPID=%ld\n",
		 rank, applied, n, n, real_us(), n, sum, sq, n, sum / 2, n, sum / 10, misses,
		 applied, pid);
	if (g_nccl_class >= 0)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "NCCL_CLASS=%d\n",
			 g_nccl_class);
	fd = openat(job_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(renameat(job_fd, tmp, job_fd, name), 0);
}

static const hm_aw_job_state_t *state_of(agent_jobs_t *js, hm_aw_node_state_t *ns, long job)
{
	hm_log_once_t once = {{0}, 0};

	agent_jobs_scan(js, g_node, &g_log);
	agent_jobs_state(js, real_us(), ns, &g_log, &once);
	for (int i = 0; i < ns->njobs; i++)
		if (ns->jobs[i].job_id == job)
			return &ns->jobs[i];
	fail_msg("job %ld not in the state", job);
	return NULL;
}

static void test_report_windows(void **state)
{
	agent_jobs_t js;
	hm_aw_node_state_t *ns = calloc(1, sizeof(*ns));
	hm_aw_job_assign_t d = decision(45, false, 0);
	int job = make_job(45);
	const hm_aw_job_state_t *s;

	memset(&js, 0, sizeof(js));
	apply_one(&js, &d, 1000);
	/* Two ranks, 10 samples of 100 ms each; rank 1 applied an older epoch. */
	report(job, 0, 1000, 3, 10, 1000000, 100000000000ULL, 1);
	report(job, 1, 1001, 2, 10, 1000000, 100000000000ULL, 2);
	s = state_of(&js, ns, 45);
	assert_true(s->has_meas);
	assert_int_equal(s->meas.samples, 20);
	assert_float_equal(s->meas.iter_us, 100000, 1e-6);
	assert_float_equal(s->meas.iter_sd_us, 0, 1e-6);
	assert_float_equal(s->meas.compute_us, 50000, 1e-6);
	assert_float_equal(s->meas.burst_us, 10000, 1e-6);
	assert_int_equal(s->meas.slot_misses, 3);
	assert_int_equal(s->steps, 1);
	assert_int_equal(s->ranks, 2);
	assert_int_equal(s->applied_epoch, 2); /* the oldest a live task runs */
	/* Sent: the next window starts empty; unchanged files add nothing. */
	agent_jobs_windows_sent(&js);
	s = state_of(&js, ns, 45);
	assert_false(s->has_meas);
	/* Rank 0 did 5 more iterations of 120 ms: the window is exactly those. */
	report(job, 0, 1000, 3, 15, 1600000, 100000000000ULL + 5 * 14400000000ULL, 4);
	s = state_of(&js, ns, 45);
	assert_true(s->has_meas);
	assert_int_equal(s->meas.samples, 5);
	assert_float_equal(s->meas.iter_us, 120000, 1e-6);
	assert_float_equal(s->meas.iter_sd_us, 0, 1e-3);
	assert_int_equal(s->meas.slot_misses, 3);
	/* Not sent (e.g. disconnected): windows keep merging until a beat carries them. */
	report(job, 0, 1000, 3, 20, 2100000,
	       100000000000ULL + 5 * 14400000000ULL + 5 * 10000000000ULL, 4);
	s = state_of(&js, ns, 45);
	assert_int_equal(s->meas.samples, 10);
	assert_float_equal(s->meas.iter_us, 110000, 1e-6);
	assert_float_equal(s->meas.iter_sd_us, 10000, 1e-3);
	agent_jobs_windows_sent(&js);
	/* Rank 1 restarted (another PID, counts from zero): its window is the new process. */
	report(job, 1, 2002, 3, 3, 270000, 3 * 8100000000ULL, 0);
	s = state_of(&js, ns, 45);
	assert_int_equal(s->meas.samples, 3);
	assert_float_equal(s->meas.iter_us, 90000, 1e-6);
	assert_int_equal(s->applied_epoch, 3);
	/* A rank's file gone: it no longer counts. */
	assert_int_equal(unlinkat(job, "report.0.1", 0), 0);
	s = state_of(&js, ns, 45);
	assert_int_equal(s->ranks, 1);
	close(job);
	agent_jobs_free(&js);
	free(ns);
}

/* A bad report is skipped with one log line per state change, not per scan. */
/* The class the tasks' communicators carry: the lowest priority among them. */
static void test_report_nccl_class(void **state)
{
	agent_jobs_t js;
	hm_aw_node_state_t *ns = calloc(1, sizeof(*ns));
	hm_aw_job_assign_t d = decision(45, false, 0);
	int job = make_job(45);
	const hm_aw_job_state_t *s;

	memset(&js, 0, sizeof(js));
	apply_one(&js, &d, 1000);
	report(job, 0, 1000, 3, 10, 1000000, 100000000000ULL, 0);
	s = state_of(&js, ns, 45);
	assert_false(s->has_nccl_class); /* no NCCL_CLASS: none reported */
	g_nccl_class = 1;
	report(job, 0, 1000, 3, 11, 1100000, 110000000000ULL, 0);
	g_nccl_class = 3;
	report(job, 1, 1001, 3, 10, 1000000, 100000000000ULL, 0);
	g_nccl_class = -1;
	s = state_of(&js, ns, 45);
	assert_true(s->has_nccl_class);
	assert_int_equal(s->nccl_class, 3);
	close(job);
	agent_jobs_free(&js);
	free(ns);
}

static void test_bad_report_logged_once(void **state)
{
	agent_jobs_t js;
	hm_aw_node_state_t *ns = calloc(1, sizeof(*ns));
	int job = make_job(45), fd, before;
	const hm_aw_job_state_t *s;

	memset(&js, 0, sizeof(js));
	fd = openat(job, "report.0.0", O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, "HARMONICS_REPORT_VERSION=1\n", 27), 27);
	close(fd);
	before = g_lines;
	for (int i = 0; i < 3; i++)
		s = state_of(&js, ns, 45);
	assert_int_equal(g_lines - before, 1);
	assert_non_null(strstr(g_last_line, "report.0.0"));
	assert_non_null(strstr(g_last_line, "job 45"));
	assert_false(s->has_meas);
	assert_int_equal(s->ranks, 0);
	report(job, 0, 1000, 1, 4, 400000, 4 * 10000000000ULL, 0);
	s = state_of(&js, ns, 45);
	assert_int_equal(s->meas.samples, 4);
	assert_int_equal(g_lines - before, 2);
	assert_non_null(strstr(g_last_line, "readable again"));
	close(job);
	agent_jobs_free(&js);
	free(ns);
}

/* Counters a user can write into a report (a window's mean of 9.2e18 us) are
   dropped for that job with one log line, not sent for the coordinator to refuse
   the node's whole beat; the job's next sane window is sent again. */
static void test_hostile_window_dropped(void **state)
{
	agent_jobs_t js;
	hm_aw_node_state_t *ns = calloc(1, sizeof(*ns));
	int job = make_job(45), before;
	const hm_aw_job_state_t *s;

	memset(&js, 0, sizeof(js));
	before = g_lines;
	report(job, 0, 1000, 1, 1, UINT64_C(1) << 63, 0, 0);
	s = state_of(&js, ns, 45);
	assert_false(s->has_meas);
	assert_int_equal(s->ranks, 1);
	assert_int_equal(g_lines - before, 1);
	assert_non_null(strstr(g_last_line, "job 45"));
	assert_non_null(strstr(g_last_line, "iter_us"));
	agent_jobs_windows_sent(&js);
	report(job, 0, 1001, 1, 4, 400000, 4 * 10000000000ULL, 0);
	s = state_of(&js, ns, 45);
	assert_true(s->has_meas);
	assert_float_equal(s->meas.iter_us, 100000, 1e-6);
	close(job);
	agent_jobs_free(&js);
	free(ns);
}

/* A scan's work is bounded whatever users keep in their directories: unchanged
   files are not read (stat first), and changed ones are read up to a byte budget
   per scan, the rest at the next. */
static void test_scan_bounded(void **state)
{
	enum { NJOBS = 200, NBIG = 100, BIG = 60000 };
	agent_jobs_t js;
	char *pad = malloc(BIG + 16);
	int fd, job, read_tasks = 0;
	agent_job_t *j;

	memset(&js, 0, sizeof(js));
	for (int i = 0; i < NJOBS; i++) {
		job = make_job(1000 + i);
		report(job, 0, 1000, 1, 4, 400000, 4 * 10000000000ULL, 0);
		close(job);
	}
	agent_jobs_scan(&js, g_node, &g_log);
	assert_int_equal(js.njobs, NJOBS);
	assert_true(js.scan_read_bytes > (size_t)NJOBS * 400);
	agent_jobs_scan(&js, g_node, &g_log);
	assert_int_equal(js.scan_read_bytes, 0); /* nothing changed: nothing read */
	/* One job rewrites 100 files of 60 kB (6 MB) every beat. */
	for (int k = 0; k < BIG; k += 100) /* lines of 100 bytes, a key the parser skips */
		memcpy(pad + k, "PAD=", 4), memset(pad + k + 4, 'a', 95), pad[k + 99] = '\n';
	job = make_job(45);
	for (int r = 0; r < NBIG; r++) {
		char name[32];

		report(job, r, 1000 + r, 1, 4, 400000, 4 * 10000000000ULL, 0);
		snprintf(name, sizeof(name), "report.0.%d", r);
		fd = openat(job, name, O_WRONLY | O_APPEND);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, pad, BIG), BIG);
		close(fd);
	}
	close(job);
	agent_jobs_scan(&js, g_node, &g_log);
	assert_true(js.scan_read_bytes <= AGENT_SCAN_READ_MAX_BYTES);
	agent_jobs_scan(&js, g_node, &g_log);
	assert_true(js.scan_read_bytes <= AGENT_SCAN_READ_MAX_BYTES);
	j = agent_jobs_get(&js, 45, false);
	assert_non_null(j);
	for (int k = 0; k < j->ntasks; k++)
		read_tasks += j->tasks[k].have_prev;
	if (read_tasks != NBIG) /* all read within two scans */
		fail_msg("%d of %d read; last log: %s", read_tasks, NBIG, g_last_line);
	free(pad);
	agent_jobs_free(&js);
}

static void age_dir(long id, int seconds)
{
	char name[32];
	struct timespec ts[2];
	int fd;

	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= seconds;
	ts[1] = ts[0];
	snprintf(name, sizeof(name), "job.%ld", id);
	fd = openat(g_node, name, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	if (faccessat(fd, "report.0.0", F_OK, 0) == 0)
		assert_int_equal(utimensat(fd, "report.0.0", ts, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
}

static void test_cleanup(void **state)
{
	agent_jobs_t js;
	hm_aw_job_assign_t d60 = decision(60, false, 0), d61 = decision(61, false, 0);
	hm_aw_node_assign_t *na = calloc(1, sizeof(*na));
	struct stat st;
	int job;
	const int64_t t0 = 100000;

	memset(&js, 0, sizeof(js));
	snprintf(na->node, sizeof(na->node), "n1");
	close(make_job(60));
	close(make_job(61));
	job = make_job(62); /* never listed, a step still writes reports */
	report(job, 0, 1000, 1, 1, 1000, 1000000, 0);
	close(job);
	na->jobs[0] = d60;
	na->jobs[1] = d61;
	na->njobs = 2;
	agent_jobs_apply(&js, na, t0 - 1000, &g_log);
	na->jobs[0] = d61; /* job 60 ended */
	na->njobs = 1;
	agent_jobs_apply(&js, na, t0, &g_log);
	age_dir(61, 3600);
	/* Job 60's user keeps writing into its directory: it goes all the same. */
	job = openat(g_node, "job.60", O_RDONLY | O_DIRECTORY);
	report(job, 0, 1000, 1, 1, 1000, 1000000, 0);
	close(job);
	agent_jobs_scan(&js, g_node, &g_log);
	agent_jobs_cleanup(&js, g_node, t0 + AGENT_CLEAN_GRACE_MS - 1, real_us(), &g_log);
	assert_int_equal(fstatat(g_node, "job.60", &st, 0), 0); /* within the grace */
	agent_jobs_cleanup(&js, g_node, t0 + AGENT_CLEAN_GRACE_MS, real_us(), &g_log);
	assert_int_equal(fstatat(g_node, "job.60", &st, 0), -1);
	assert_null(agent_jobs_get(&js, 60, false));
	assert_int_equal(fstatat(g_node, "job.61", &st, 0), 0); /* listed */
	assert_int_equal(fstatat(g_node, "job.62", &st, 0), 0); /* reports changed recently */
	age_dir(62, 3600);
	agent_jobs_scan(&js, g_node, &g_log);
	agent_jobs_cleanup(&js, g_node, t0 + AGENT_CLEAN_GRACE_MS, real_us(), &g_log);
	assert_int_equal(fstatat(g_node, "job.62", &st, 0), -1);
	/* Never listed and never quiet: it holds its slot AGENT_UNLISTED_MAX_MS at most. */
	job = make_job(63);
	report(job, 0, 1000, 1, 1, 1000, 1000000, 0);
	close(job);
	agent_jobs_scan(&js, g_node, &g_log);
	agent_jobs_cleanup(&js, g_node, t0, real_us(), &g_log);
	agent_jobs_cleanup(&js, g_node, t0 + AGENT_UNLISTED_MAX_MS - 1, real_us(), &g_log);
	assert_int_equal(fstatat(g_node, "job.63", &st, 0), 0);
	agent_jobs_cleanup(&js, g_node, t0 + AGENT_UNLISTED_MAX_MS, real_us(), &g_log);
	assert_int_equal(fstatat(g_node, "job.63", &st, 0), -1);
	agent_jobs_free(&js);
	free(na);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text_current),
	    cmocka_unit_test(test_text_next_promotion),
	    cmocka_unit_test(test_text_off_and_refused),
	    cmocka_unit_test_setup_teardown(test_table_promotion, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dir_appears, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_windows, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_nccl_class, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_report_logged_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hostile_window_dropped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_scan_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cleanup, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
