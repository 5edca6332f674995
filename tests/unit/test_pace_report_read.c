/*
 * The node agent's reader of report files (src/pace/pace_report_read.h): strict
 * parsing (every bad value named with what is accepted), exact window statistics
 * from two reads (wrapped sums included), restarts, merging over tasks, and a
 * round trip through the real runtime's report.
 */
#include <math.h>

#include "hm_pace.h"
#include "pace_fixture.h"
#include "pace_report_read.h"

static char tmpdir[] = "/tmp/test_pace_report_read.XXXXXX";

/* A version-2 report as the runtime writes it, with the given counters. */
static void format_report(char *buf, size_t n, long pid, uint64_t iter_n, uint64_t iter_sum,
			  uint64_t iter_sq, uint64_t misses)
{
	snprintf(buf, n,
		 "HARMONICS_REPORT_VERSION=2\nJOB_ID=42\nRANK=3\nMODE=harmonics\nEPOCH=8\n"
		 "ACTIVE=1\nPERIOD_ASSIGNED_US=100000\nSHIFT_US=0\nITERATIONS=10\nBURSTS=10\n"
		 "PACED=10\nLATE=0\nSKIPPED=0\nUNPACED=0\nPERIOD_US=100000\nBURST_OFFSET_US=1\n"
		 "BURST_US=2\nWAIT_US=3\nSLOT_ERROR_US=0.5\nSLOT_ERROR_MAX_US=1.0\n"
		 "UPDATED_US=1700000000000000\nITER_N=%llu\nITER_SUM_US=%llu\n"
		 "ITER_SQ_SUM_US2=%llu\nCOMPUTE_N=%llu\nCOMPUTE_SUM_US=%llu\nBURST_N=%llu\n"
		 "BURST_SUM_US=%llu\nSLOT_MISSES=%llu\nAPPLIED_EPOCH=7\nPID=%ld\n",
		 (unsigned long long)iter_n, (unsigned long long)iter_sum,
		 (unsigned long long)iter_sq, (unsigned long long)iter_n,
		 (unsigned long long)(iter_sum / 2), (unsigned long long)iter_n,
		 (unsigned long long)(iter_sum / 4), (unsigned long long)misses, pid);
}

static pace_report_t parse(const char *text)
{
	pace_report_t r;
	hm_err_t err = {0};

	if (pace_report_parse(text, strlen(text), "report.0.3", &r, &err) != HM_OK)
		fail_msg("%s", err.msg);
	return r;
}

static void test_parse_ok(void **state)
{
	char text[2048];
	pace_report_t r;

	format_report(text, sizeof(text), 4242, 10, 1000000, 100500000000ULL, 2);
	strcat(text, "SOME_FUTURE_KEY=whatever\n# comment\n\n");
	r = parse(text);
	assert_int_equal(r.version, 2);
	assert_int_equal(r.job_id, 42);
	assert_int_equal(r.rank, 3);
	assert_int_equal(r.pid, 4242);
	assert_int_equal(r.epoch, 8);
	assert_int_equal(r.applied_epoch, 7);
	assert_true(r.active);
	assert_int_equal(r.updated_us, 1700000000000000LL);
	assert_int_equal(r.iter_n, 10);
	assert_int_equal(r.iter_sum_us, 1000000);
	assert_int_equal(r.iter_sq_sum_us2, 100500000000ULL);
	assert_int_equal(r.compute_sum_us, 500000);
	assert_int_equal(r.burst_sum_us, 250000);
	assert_int_equal(r.slot_misses, 2);
	/* The largest unsigned sum is accepted. */
	format_report(text, sizeof(text), 1, 1, 1, 18446744073709551615ULL, 0);
	assert_int_equal(parse(text).iter_sq_sum_us2, 18446744073709551615ULL);
}

/* Replace the first "KEY=..." line of a good report with `line` (NULL: drop it). */
static void expect_bad(const char *key, const char *line, hm_rc_t rc, const char *const *needles)
{
	char text[2048], out[2300], pat[64];
	pace_report_t r;
	hm_err_t err = {0};
	hm_rc_t got;
	const char *at, *eol;

	format_report(text, sizeof(text), 4242, 10, 1000000, 100500000000ULL, 2);
	snprintf(pat, sizeof(pat), "%s%s=", strcmp(key, "HARMONICS_REPORT_VERSION") ? "\n" : "",
		 key);
	at = strstr(text, pat);
	assert_non_null(at);
	at += pat[0] == '\n';
	eol = strchr(at, '\n') + 1;
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - text), text, line ? line : "", eol);
	got = pace_report_parse(out, strlen(out), "report.0.3", &r, &err);
	if (got != rc)
		fail_msg("%s -> '%s': rc %d (%s), expected %d", key, line ? line : "(none)", got,
			 err.msg, rc);
	for (; *needles; needles++)
		if (!strstr(err.msg, *needles))
			fail_msg("%s: message '%s' lacks '%s'", key, err.msg, *needles);
}

static void test_parse_strict(void **state)
{
	static const char *const required[] = {
	    "HARMONICS_REPORT_VERSION",
	    "JOB_ID",
	    "RANK",
	    "PID",
	    "EPOCH",
	    "APPLIED_EPOCH",
	    "ACTIVE",
	    "UPDATED_US",
	    "ITER_N",
	    "ITER_SUM_US",
	    "ITER_SQ_SUM_US2",
	    "COMPUTE_N",
	    "COMPUTE_SUM_US",
	    "BURST_N",
	    "BURST_SUM_US",
	    "SLOT_MISSES",
	};
	pace_report_t r;
	hm_err_t err = {0};
	char big[PACE_REPORT_MAX_BYTES + 2];

	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		expect_bad(required[i], NULL, HM_ERR_PARSE,
			   (const char *[]){"report.0.3", required[i], "missing", NULL});
	expect_bad(
	    "ITER_N", "ITER_N=-1\n", HM_ERR_PARSE,
	    (const char *[]){"report.0.3:", "ITER_N", "'-1'", "[0, 18446744073709551615]", NULL});
	expect_bad("ITER_SUM_US", "ITER_SUM_US=18446744073709551616\n", HM_ERR_RANGE,
		   (const char *[]){"ITER_SUM_US", "18446744073709551616", "out of range", NULL});
	expect_bad("BURST_N", "BURST_N= 5x\n", HM_ERR_PARSE, (const char *[]){"'5x'", NULL});
	expect_bad("ACTIVE", "ACTIVE=2\n", HM_ERR_RANGE,
		   (const char *[]){"ACTIVE", "[0, 1]", NULL});
	expect_bad("PID", "PID=0\n", HM_ERR_RANGE,
		   (const char *[]){"PID", "[1, 2147483647]", NULL});
	expect_bad("APPLIED_EPOCH", "APPLIED_EPOCH=-2\n", HM_ERR_RANGE,
		   (const char *[]){"APPLIED_EPOCH", "[-1, 2147483647]", NULL});
	expect_bad("UPDATED_US", "UPDATED_US=1.7e15\n", HM_ERR_PARSE,
		   (const char *[]){"UPDATED_US", "'1.7e15'", NULL});
	expect_bad("RANK", "RANK=3\nRANK=4\n", HM_ERR_PARSE,
		   (const char *[]){"RANK given twice", NULL});
	expect_bad("SLOT_MISSES", "SLOT_MISSES 2\n", HM_ERR_PARSE,
		   (const char *[]){"'SLOT_MISSES 2' is not KEY=VALUE", NULL});
	expect_bad("HARMONICS_REPORT_VERSION", "HARMONICS_REPORT_VERSION=1\n", HM_ERR_RANGE,
		   (const char *[]){"report.0.3:1", "HARMONICS_REPORT_VERSION=1", ">= 2", NULL});
	/* Size, NUL and line-length bounds (the agent reads untrusted files). */
	memset(big, 'A', sizeof(big));
	assert_int_equal(pace_report_parse(big, sizeof(big), "f", &r, &err), HM_ERR_RANGE);
	assert_non_null(strstr(err.msg, "at most 65536"));
	assert_int_equal(pace_report_parse("PID=1\0x", 7, "f", &r, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "NUL"));
	assert_int_equal(pace_report_parse(big, 300, "f", &r, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "f:1: line longer"));
}

/* A window of 4 period samples 100, 110, 90, 100 ms: mean 100 ms, sd sqrt(5e7) us. */
#define W_N   4
#define W_SUM 400000ULL
#define W_SQ  40200000000ULL

static void test_window(void **state)
{
	char text[2048];
	pace_report_t prev, cur;
	pace_window_t w, acc;
	hm_err_t err = {0};

	format_report(text, sizeof(text), 4242, 6, 612345, 62000000000ULL, 1);
	prev = parse(text);
	format_report(text, sizeof(text), 4242, 6 + W_N, 612345 + W_SUM, 62000000000ULL + W_SQ, 3);
	cur = parse(text);
	assert_int_equal(pace_report_window(&prev, &cur, &w, &err), HM_OK);
	assert_false(w.restarted);
	assert_int_equal(w.samples, W_N);
	assert_true(fabs(w.iter_us - 100000.0) < 1e-6);
	assert_true(fabs(w.iter_sd_us - sqrt(5e7)) < 1e-3);
	/* format_report's compute sum is iter_sum / 2: (506172 - 306172) / 4. */
	assert_true(fabs(w.compute_us - 50000.0) < 1e-6);
	assert_int_equal(w.burst_samples, W_N);
	assert_int_equal(w.slot_misses, 2);

	/* Sums that wrapped modulo 2^64 between the reads difference exactly. */
	format_report(text, sizeof(text), 4242, 6, 612345, 18446744073709551615ULL - 99, 1);
	prev = parse(text);
	format_report(text, sizeof(text), 4242, 6 + W_N, 612345 + W_SUM, W_SQ - 100, 1);
	cur = parse(text);
	assert_int_equal(pace_report_window(&prev, &cur, &w, &err), HM_OK);
	assert_int_equal(w.iter_sq_sum_us2, W_SQ);
	assert_true(fabs(w.iter_sd_us - sqrt(5e7)) < 1e-3);

	/* The same read twice: an empty window. */
	assert_int_equal(pace_report_window(&cur, &cur, &w, &err), HM_OK);
	assert_int_equal(w.samples, 0);
	assert_true(w.iter_us == 0 && w.iter_sd_us == 0 && w.burst_us == 0);

	/* The task restarted (another PID, or counts went back): cur alone. */
	format_report(text, sizeof(text), 5555, 2, 200000, 20000000000ULL, 0);
	cur = parse(text);
	assert_int_equal(pace_report_window(&prev, &cur, &w, &err), HM_OK);
	assert_true(w.restarted);
	assert_int_equal(w.samples, 2);
	assert_true(fabs(w.iter_us - 100000.0) < 1e-6);
	cur.pid = prev.pid;
	assert_int_equal(pace_report_window(&prev, &cur, &w, &err), HM_OK);
	assert_true(w.restarted);
	/* No previous read: from the task's start. */
	assert_int_equal(pace_report_window(NULL, &cur, &w, &err), HM_OK);
	assert_false(w.restarted);
	assert_int_equal(w.samples, 2);
	/* Two different tasks are not a window. */
	cur.rank = 4;
	assert_int_equal(pace_report_window(&prev, &cur, &w, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "rank 3, then job 42 rank 4"));

	/* Merging windows of two ranks gives the pooled statistics. */
	memset(&acc, 0, sizeof(acc));
	format_report(text, sizeof(text), 1, 0, 0, 0, 0);
	prev = parse(text);
	format_report(text, sizeof(text), 1, 2, 210000, 22100000000ULL, 1); /* 100, 110 ms */
	cur = parse(text);
	assert_int_equal(pace_report_window(&prev, &cur, &w, &err), HM_OK);
	pace_window_add(&acc, &w);
	format_report(text, sizeof(text), 1, 2, 190000, 18100000000ULL, 0); /* 90, 100 ms */
	cur = parse(text);
	assert_int_equal(pace_report_window(&prev, &cur, &w, &err), HM_OK);
	pace_window_add(&acc, &w);
	assert_int_equal(acc.samples, W_N);
	assert_true(fabs(acc.iter_us - 100000.0) < 1e-6);
	assert_true(fabs(acc.iter_sd_us - sqrt(5e7)) < 1e-3);
	assert_int_equal(acc.slot_misses, 1);
}

/* The compute's spread: from COMPUTE_SQ_SUM_US2 when every read in the window
   has it, unknown (-1) otherwise (a runtime from before the key). */
static void test_compute_spread(void **state)
{
	char text[2048], sq[64];
	pace_report_t prev, cur, old;
	pace_window_t w, w2, acc;
	hm_err_t err = {0};

	(void)state;
	format_report(text, sizeof(text), 1, 0, 0, 0, 0);
	strcat(text, "COMPUTE_SQ_SUM_US2=0\n");
	prev = parse(text);
	assert_true(prev.has_compute_sq);
	/* Compute 50 and 100 ms (format_report's compute sum is iter_sum / 2). */
	format_report(text, sizeof(text), 1, 2, 300000, 0, 0);
	snprintf(sq, sizeof(sq), "COMPUTE_SQ_SUM_US2=%llu\n", 12500000000ULL);
	strcat(text, sq);
	cur = parse(text);
	assert_int_equal(cur.compute_sq_sum_us2, 12500000000ULL);
	assert_int_equal(pace_report_window(&prev, &cur, &w, &err), HM_OK);
	assert_true(fabs(w.compute_us - 75000.0) < 1e-6);
	assert_true(fabs(w.compute_sd_us - 25000.0) < 1e-6);
	/* Twice is refused like any key. */
	strcat(text, sq);
	assert_int_equal(pace_report_parse(text, strlen(text), "r", &old, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "COMPUTE_SQ_SUM_US2 given twice"));
	/* A report without it parses; the window's spread is unknown. */
	format_report(text, sizeof(text), 1, 2, 300000, 0, 0);
	old = parse(text);
	assert_false(old.has_compute_sq);
	assert_int_equal(pace_report_window(&prev, &old, &w2, &err), HM_OK);
	assert_true(fabs(w2.compute_us - 75000.0) < 1e-6);
	assert_true(w2.compute_sd_us == -1);
	assert_int_equal(pace_report_window(NULL, &old, &w2, &err), HM_OK);
	assert_true(w2.compute_sd_us == -1);
	/* Merged: one unknown window makes the merge's spread unknown; two known
	   pool (means 75 and 125 ms, each spread 25 ms: sqrt(25^2 + 25^2)). */
	memset(&acc, 0, sizeof(acc));
	pace_window_add(&acc, &w);
	assert_true(fabs(acc.compute_sd_us - 25000.0) < 1e-6);
	pace_window_add(&acc, &w2);
	assert_true(acc.compute_sd_us == -1);
	memset(&acc, 0, sizeof(acc));
	pace_window_add(&acc, &w);
	w2 = w;
	w2.compute_sum_us += 100000; /* +50 ms each */
	w2.compute_sq_sum_us2 += 2 * 50000ULL * 150000ULL + 2 * 2500000000ULL;
	pace_window_add(&acc, &w2);
	assert_true(fabs(acc.compute_us - 100000.0) < 1e-6);
	assert_true(fabs(acc.compute_sd_us - sqrt(2) * 25000.0) < 1e-3);
}

/* Two reads of a live runtime's report: the window is exactly what happened between. */
static void test_round_trip(void **state)
{
	char tmpl[600], path[600], buf[4096];
	hm_pace_stats_t s1, s2;
	pace_report_t r1, r2;
	pace_window_t w;
	hm_err_t err = {0};
	hm_pace_t *p;
	size_t n;

	pace_clear_env();
	snprintf(tmpl, sizeof(tmpl), "%s/report.%%r", tmpdir);
	snprintf(path, sizeof(path), "%s/report.0", tmpdir);
	setenv(HM_PACE_ENV_MODE, "fair", 1);
	setenv(HM_PACE_ENV_PERIOD_US, "0", 1);
	setenv(HM_PACE_ENV_JOB_ID, "9", 1);
	setenv(HM_PACE_ENV_REPORT_FILE, tmpl, 1);
	p = hm_pace_init();
	for (int i = 0; i < 8; i++) {
		hm_pace_iter_begin(p);
		usleep(4000 + 2000 * (i % 3));
		hm_pace_comm_begin(p);
		usleep(3000);
		hm_pace_comm_end(p);
		if (i == 2) {
			assert_int_equal(hm_pace_report(p), 0);
			hm_pace_stats(p, &s1);
			n = slurp(path, buf, sizeof(buf));
			assert_int_equal(pace_report_parse(buf, n, path, &r1, &err), HM_OK);
		}
	}
	hm_pace_iter_begin(p);
	assert_int_equal(hm_pace_report(p), 0);
	hm_pace_stats(p, &s2);
	n = slurp(path, buf, sizeof(buf));
	if (pace_report_parse(buf, n, path, &r2, &err) != HM_OK)
		fail_msg("%s", err.msg);
	assert_int_equal(r2.job_id, 9);
	assert_int_equal(r2.pid, (long)getpid());
	assert_int_equal(pace_report_window(&r1, &r2, &w, &err), HM_OK);
	assert_int_equal(w.samples, s2.iter_n - s1.iter_n);
	assert_int_equal(w.samples, 6);
	assert_true(fabs(w.iter_us * 6 - (double)(s2.iter_sum_us - s1.iter_sum_us)) < 1e-6);
	assert_true(w.iter_us > 7000 && w.iter_us < 60000);
	assert_true(w.iter_sd_us > 0); /* the compute alternated 4, 6, 8 ms */
	assert_true(w.compute_us > 4000 && w.compute_us < 50000);
	assert_true(r1.has_compute_sq && r2.has_compute_sq);
	assert_true(w.compute_sd_us > 0 && w.compute_sd_us < w.compute_us); /* 4, 6, 8 ms */
	assert_int_equal(w.burst_samples, 5);
	assert_true(w.burst_us >= 3000 && w.burst_us < 50000);
	hm_pace_fini(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_ok),
	    cmocka_unit_test(test_parse_strict),
	    cmocka_unit_test(test_window),
	    cmocka_unit_test(test_compute_spread),
	    cmocka_unit_test(test_round_trip),
	};
	int rc;
	char cmd[128];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_pace_report_read: could not remove %s\n", tmpdir);
	return rc;
}
