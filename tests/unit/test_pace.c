/*
 * Unit tests for libharmonics-pace: assignment parsing, slot planning, the
 * assignment file update channel, the report, and every fail-open path
 * (no assignment, off, stale, garbage: one warning, no wait).
 */
#include "hm_pace.h"
#include "pace_assign.h"
#include "pace_fixture.h"

static char tmpdir[] = "/tmp/test_pace.XXXXXX";

/* A valid assignment: period_us, shift_us, origin one period ago, guard 10 ms. */
static void set_assignment(long long period_us, long long shift_us, long long origin_us)
{
	setenv(HM_PACE_ENV_MODE, "harmonics", 1);
	setenv_ll(HM_PACE_ENV_PERIOD_US, period_us);
	setenv_ll(HM_PACE_ENV_SHIFT_US, shift_us);
	setenv_ll(HM_PACE_ENV_ORIGIN_US, origin_us);
	setenv_ll(HM_PACE_ENV_GUARD_US, 10000);
	setenv(HM_PACE_ENV_PRIO, "2", 1);
	setenv(HM_PACE_ENV_EPOCH, "7", 1);
	setenv(HM_PACE_ENV_JOB_ID, "42", 1);
}

static int setup(void **state)
{
	pace_clear_env();
	return 0;
}

/* ---- parsing ---- */

static void test_assign_env_ok(void **state)
{
	pace_assign_t a;
	hm_err_t err = {0};

	set_assignment(240000, 120000, 1000000);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_OK);
	assert_true(a.present);
	assert_false(a.cur.off);
	assert_string_equal(a.cur.mode, "harmonics");
	assert_int_equal(a.cur.period_us, 240000);
	assert_int_equal(a.cur.shift_us, 120000);
	assert_int_equal(a.cur.prio, 2);
	assert_int_equal(a.cur.epoch, 7);
	assert_int_equal(a.job_id, 42);
	assert_int_equal(a.valid_until_us, PACE_NO_EXPIRY);
	assert_int_equal(pace_sched_guard_us(&a.cur), 10000);

	/* Default guard: min(10 ms, period / 4). */
	unsetenv(HM_PACE_ENV_GUARD_US);
	setenv(HM_PACE_ENV_SHIFT_US, "0", 1);
	setenv(HM_PACE_ENV_PERIOD_US, "2000", 1);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_OK);
	assert_int_equal(pace_sched_guard_us(&a.cur), 500);
}

static void test_assign_env_none_and_off(void **state)
{
	pace_assign_t a;
	hm_err_t err = {0};

	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_OK);
	assert_false(a.present);
	setenv(HM_PACE_ENV_MODE, "off", 1);
	setenv(HM_PACE_ENV_PERIOD_US, "bogus-but-ignored-when-off", 1);
	/* A garbage value is an error even when off: the plugin wrote something wrong. */
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_ERR_PARSE);
	unsetenv(HM_PACE_ENV_PERIOD_US);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_OK);
	assert_true(a.cur.off);
}

static void test_assign_env_errors(void **state)
{
	pace_assign_t a;
	hm_err_t err = {0};

	set_assignment(240000, 120000, 1000000);
	setenv(HM_PACE_ENV_PERIOD_US, "240ms", 1);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "HARMONICS_PERIOD_US"));
	assert_non_null(strstr(err.msg, "'240ms'"));
	assert_non_null(strstr(err.msg, "environment"));

	setenv(HM_PACE_ENV_PERIOD_US, "100000", 1); /* shift 120000 >= period */
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_ERR_RANGE);
	assert_non_null(strstr(err.msg, "HARMONICS_SHIFT_US=120000"));

	setenv(HM_PACE_ENV_PERIOD_US, "240000", 1);
	setenv(HM_PACE_ENV_PRIO, "9", 1);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_ERR_RANGE);
	assert_non_null(strstr(err.msg, "HARMONICS_PRIO"));
	assert_non_null(strstr(err.msg, "[0, 7]")); /* the one range of classes */

	setenv(HM_PACE_ENV_PRIO, "1", 1);
	unsetenv(HM_PACE_ENV_ORIGIN_US);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "HARMONICS_ORIGIN_US is missing"));

	pace_clear_env();
	setenv(HM_PACE_ENV_PERIOD_US, "1000", 1); /* keys but no mode */
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "HARMONICS_MODE is missing"));

	setenv(HM_PACE_ENV_MODE, "two words", 1);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_ERR_PARSE);
}

static void test_assign_file_text(void **state)
{
	pace_assign_t a;
	hm_err_t err = {0};

	pace_assign_clear(&a);
	assert_int_equal(pace_assign_parse_text(&a,
						"# epoch 3\n\nHARMONICS_MODE=harmonics\n"
						"HARMONICS_PERIOD_US = 500000\n"
						"HARMONICS_ORIGIN_US=1700000000000000\n"
						"HARMONICS_SHIFT_US=250000\n",
						"assign.txt", &err),
			 HM_OK);
	assert_int_equal(pace_assign_validate(&a, "assign.txt", &err), HM_OK);
	assert_int_equal(a.cur.period_us, 500000);
	assert_int_equal(a.cur.shift_us, 250000);

	assert_int_equal(pace_assign_parse_text(&a, "HARMONICS_MODE=x\n\nHARMONICS_PERIOD=5\n",
						"assign.txt", &err),
			 HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "assign.txt:3"));
	assert_non_null(strstr(err.msg, "unknown key 'HARMONICS_PERIOD'"));
	assert_non_null(strstr(err.msg, "accepted"));

	assert_int_equal(pace_assign_parse_text(&a, "HARMONICS_EPOCH=-1\n", "f", &err),
			 HM_ERR_RANGE);
	assert_non_null(strstr(err.msg, "f:1"));
	assert_int_equal(pace_assign_parse_text(&a, "just words\n", "f", &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "'just words' is not KEY=VALUE"));
}

/* ---- planning (pure arithmetic on the slot grid) ---- */

static void test_plan(void **state)
{
	const long long P = 200000, S = 50000, O = 1000000000000000LL; /* origin far in the past */
	hm_pace_t *p;
	int64_t k, slot_us;

	set_assignment(P, S, O);
	p = hm_pace_init();
	assert_non_null(p);
	assert_true(hm_pace_active(p));
	assert_int_equal(hm_pace_prio(p), 2);
	assert_int_equal(hm_pace_period_us(p), P);

	/* Slot ids are the slots' start times. Ready exactly on a slot, or up to the
	 * guard after it: that slot. */
	k = hm_pace_plan(p, O + S + 10 * P);
	assert_int_equal(k, O + S + 10 * P);
	assert_int_equal(hm_pace_slot_us(p, k), k);
	assert_int_equal(hm_pace_slot_us(NULL, k), k);
	assert_int_equal(hm_pace_slot_us(p, HM_PACE_NO_SLOT), -1);
	assert_int_equal(hm_pace_plan(p, O + S + 10 * P + 10000), O + S + 10 * P);
	/* Later than the guard: the next slot (skip-to-next-slot policy). */
	assert_int_equal(hm_pace_plan(p, O + S + 10 * P + 10001), O + S + 11 * P);
	/* Early: the coming slot. */
	assert_int_equal(hm_pace_plan(p, O + S + 10 * P - 1), O + S + 10 * P);
	/* Before the origin: the grid extends backwards. */
	assert_int_equal(hm_pace_plan(p, O + S - P), O + S - P);

	/* After using a slot, never plan it (or earlier) again: one burst per slot. */
	slot_us = hm_pace_plan(p, hm_pace_now_us());
	assert_true(slot_us > 0);
	hm_pace_comm_begin(p);
	hm_pace_comm_end(p);
	k = hm_pace_plan(p, O);
	assert_true(k > slot_us);
	assert_int_equal((k - O - S) % P, 0);
	hm_pace_fini(p);
}

/* Begin a burst and return how long comm_begin held us, microseconds. */
static int64_t timed_burst(hm_pace_t *p)
{
	int64_t t0;

	hm_pace_iter_begin(p);
	t0 = hm_pace_now_us();
	hm_pace_comm_begin(p);
	hm_pace_comm_end(p);
	return hm_pace_now_us() - t0;
}

/* PERIOD_US=0 is free running: a valid assignment (its class applies) that never holds. */
static void test_free_running(void **state)
{
	pace_assign_t a;
	hm_err_t err = {0};
	hm_pace_t *p;

	set_assignment(0, 0, 0);
	setenv(HM_PACE_ENV_GUARD_US, "0", 1);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_OK);
	assert_int_equal(a.cur.period_us, 0);
	p = hm_pace_init();
	assert_non_null(p);
	assert_true(hm_pace_active(p));
	assert_int_equal(hm_pace_prio(p), 2);
	assert_int_equal(hm_pace_plan(p, hm_pace_now_us()), HM_PACE_NO_SLOT);
	assert_true(timed_burst(p) < 100000); /* never held */
	hm_pace_fini(p);

	/* A guard with period 0 is accepted and ignored (harmonics.conf Guard > 0 used to
	 * break every free-running job): still active, still never held. */
	setenv(HM_PACE_ENV_GUARD_US, "50000", 1);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_OK);
	assert_int_equal(a.cur.guard_us, 50000);
	p = hm_pace_init();
	assert_true(hm_pace_active(p));
	assert_int_equal(hm_pace_period_us(p), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(hm_pace_plan(p, hm_pace_now_us()), HM_PACE_NO_SLOT);
		assert_true(timed_burst(p) < 100000);
	}
	hm_pace_fini(p);

	/* Missing is still an error (0 is a value, not a default). */
	unsetenv(HM_PACE_ENV_PERIOD_US);
	setenv(HM_PACE_ENV_GUARD_US, "0", 1);
	assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "HARMONICS_PERIOD_US is missing"));
}

static void test_paced_waits(void **state)
{
	/* The slot is about 400 ms away: the runtime must wait roughly that long. */
	long long now = hm_pace_now_us();
	hm_pace_t *p;
	int64_t waited;
	hm_pace_stats_t st;

	set_assignment(1000000, 0, now + 400000);
	p = hm_pace_init();
	waited = timed_burst(p);
	assert_true(waited >= 390000);
	assert_true(waited < 900000);
	hm_pace_stats(p, &st);
	assert_int_equal(st.paced, 1);
	assert_int_equal(st.unpaced, 0);
	hm_pace_fini(p);
}

/* ---- fail-open ---- */

static void assert_no_wait(const char *expect_warning)
{
	hm_pace_t *p;
	hm_pace_stats_t st;
	const char *err;

	capture_stderr(tmpdir);
	p = hm_pace_init();
	assert_non_null(p);
	assert_false(hm_pace_active(p));
	for (int i = 0; i < 5; i++)
		assert_true(timed_burst(p) < 50000); /* the slot would be ~0.9 s away */
	assert_int_equal(hm_pace_plan(p, hm_pace_now_us()), HM_PACE_NO_SLOT);
	hm_pace_stats(p, &st);
	assert_int_equal(st.bursts, 5);
	assert_int_equal(st.unpaced, 5);
	assert_int_equal(st.paced, 0);
	hm_pace_fini(p);
	err = captured_stderr();
	if (expect_warning) {
		assert_int_equal(count_substr(err, "harmonics-pace: "), 1);
		assert_non_null(strstr(err, expect_warning));
		assert_non_null(strstr(err, "fail-open"));
	} else {
		assert_string_equal(err, "");
	}
}

static void test_failopen_none(void **state)
{
	assert_no_wait(NULL);
}

static void test_failopen_off(void **state)
{
	set_assignment(1000000, 0, hm_pace_now_us() + 900000);
	setenv(HM_PACE_ENV_MODE, "off", 1);
	assert_no_wait(NULL);
}

static void test_failopen_stale(void **state)
{
	long long now = hm_pace_now_us();

	set_assignment(1000000, 0, now + 900000);
	setenv_ll(HM_PACE_ENV_VALID_UNTIL_US, now - 1);
	assert_no_wait("stale");
}

static void test_failopen_garbage(void **state)
{
	set_assignment(1000000, 0, hm_pace_now_us() + 900000);
	setenv(HM_PACE_ENV_SHIFT_US, "0x10", 1);
	assert_no_wait("HARMONICS_SHIFT_US: '0x10'");
	pace_clear_env();
	set_assignment(1000000, 0, hm_pace_now_us() + 900000);
	setenv(HM_PACE_ENV_ORIGIN_US, "", 1);
	assert_no_wait("HARMONICS_ORIGIN_US");
}

/* ---- update channel and report ---- */

static void test_assign_file_update(void **state)
{
	char path[300], text[256];
	long long now = hm_pace_now_us();
	hm_pace_t *p;

	snprintf(path, sizeof(path), "%s/assign", tmpdir);
	/* Start with "off" in the file: no waiting even though the env has a slot. */
	set_assignment(1000000, 0, now + 900000);
	setenv(HM_PACE_ENV_ASSIGN_FILE, path, 1);
	write_file_atomic(path, "HARMONICS_MODE=off\n");
	p = hm_pace_init();
	assert_false(hm_pace_active(p));
	assert_true(timed_burst(p) < 50000);

	/* The scheduler pushes a new epoch: the next poll (<= 100 ms) picks it up. */
	snprintf(text, sizeof(text),
		 "HARMONICS_MODE=harmonics\nHARMONICS_EPOCH=8\nHARMONICS_PERIOD_US=300000\n"
		 "HARMONICS_SHIFT_US=100000\nHARMONICS_ORIGIN_US=%lld\n",
		 now);
	write_file_atomic(path, text);
	usleep(120000);
	hm_pace_iter_begin(p);
	assert_true(hm_pace_active(p));
	assert_int_equal(hm_pace_period_us(p), 300000);
	assert_int_equal(hm_pace_plan(p, now + 100000), now + 100000);

	/* A garbage update: fail-open with a warning naming file and line. */
	capture_stderr(tmpdir);
	write_file_atomic(path, "HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=fast\n");
	usleep(120000);
	hm_pace_iter_begin(p);
	assert_false(hm_pace_active(p));
	assert_non_null(strstr(captured_stderr(), "assign:2"));
	hm_pace_fini(p);
}

/* hm_pace_active polls the file itself: the NCCL interposer asks it alone before
   a burst, so a process that started off (or went stale) picks up a renewal. */
static void test_active_polls_file(void **state)
{
	char path[300], text[256];
	long long now = hm_pace_now_us();
	hm_pace_t *p;

	snprintf(path, sizeof(path), "%s/assign", tmpdir);
	set_assignment(1000000, 0, now + 900000);
	setenv(HM_PACE_ENV_ASSIGN_FILE, path, 1);
	write_file_atomic(path, "HARMONICS_MODE=off\n");
	p = hm_pace_init();
	assert_false(hm_pace_active(p));
	snprintf(text, sizeof(text),
		 "HARMONICS_MODE=harmonics\nHARMONICS_EPOCH=8\nHARMONICS_PERIOD_US=300000\n"
		 "HARMONICS_SHIFT_US=100000\nHARMONICS_ORIGIN_US=%lld\n",
		 now);
	write_file_atomic(path, text);
	usleep(120000);
	assert_true(hm_pace_active(p));
	hm_pace_fini(p);
}

static void test_report(void **state)
{
	char tmpl[300], path[300], buf[2048];
	hm_pace_t *p;
	long long now = hm_pace_now_us();

	snprintf(tmpl, sizeof(tmpl), "%s/report.%%r", tmpdir);
	snprintf(path, sizeof(path), "%s/report.3", tmpdir);
	set_assignment(50000, 0, now + 30000);
	setenv(HM_PACE_ENV_REPORT_FILE, tmpl, 1);
	setenv(HM_PACE_ENV_RANK, "3", 1);
	p = hm_pace_init();
	for (int i = 0; i < 4; i++) {
		hm_pace_iter_begin(p);
		usleep(5000);
		hm_pace_comm_begin(p);
		usleep(10000);
		hm_pace_comm_end(p);
	}
	hm_pace_fini(p);
	slurp(path, buf, sizeof(buf));
	assert_non_null(strstr(buf, "HARMONICS_REPORT_VERSION=2\n"));
	assert_non_null(strstr(buf, "\nRANK=3\n"));
	assert_non_null(strstr(buf, "\nJOB_ID=42\n"));
	assert_non_null(strstr(buf, "\nITERATIONS=4\n"));
	assert_non_null(strstr(buf, "\nPACED=4\n"));
	assert_non_null(strstr(buf, "\nPERIOD_ASSIGNED_US=50000\n"));
	/* Every burst is held to a 50 ms slot: the measured period is about 50 ms. */
	{
		const char *q = strstr(buf, "\nPERIOD_US=");
		double period_us;

		assert_non_null(q);
		period_us = strtod(q + 11, NULL);
		assert_true(period_us > 40000 && period_us < 110000);
		q = strstr(buf, "\nBURST_US=");
		assert_non_null(q);
		assert_true(strtod(q + 10, NULL) >= 9000);
	}
}

static void test_null_handle(void **state)
{
	hm_pace_stats_t st;

	hm_pace_iter_begin(NULL);
	hm_pace_comm_begin(NULL);
	hm_pace_comm_end(NULL);
	hm_pace_stats(NULL, &st);
	assert_int_equal(st.bursts, 0);
	assert_false(hm_pace_active(NULL));
	assert_int_equal(hm_pace_report(NULL), -1);
	hm_pace_fini(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_assign_env_ok, setup),
	    cmocka_unit_test_setup(test_assign_env_none_and_off, setup),
	    cmocka_unit_test_setup(test_assign_env_errors, setup),
	    cmocka_unit_test_setup(test_assign_file_text, setup),
	    cmocka_unit_test_setup(test_plan, setup),
	    cmocka_unit_test_setup(test_free_running, setup),
	    cmocka_unit_test_setup(test_paced_waits, setup),
	    cmocka_unit_test_setup(test_failopen_none, setup),
	    cmocka_unit_test_setup(test_failopen_off, setup),
	    cmocka_unit_test_setup(test_failopen_stale, setup),
	    cmocka_unit_test_setup(test_failopen_garbage, setup),
	    cmocka_unit_test_setup(test_assign_file_update, setup),
	    cmocka_unit_test_setup(test_active_polls_file, setup),
	    cmocka_unit_test_setup(test_report, setup),
	    cmocka_unit_test(test_null_handle),
	};
	int rc;
	char cmd[64];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_pace: could not remove %s\n", tmpdir);
	return rc;
}
