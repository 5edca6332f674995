/*
 * Contract C of the pacing runtime (docs/pacing.md): the next assignment and its
 * switch time (strict keys, the deterministic plan around the switch, ranks that
 * read the file late still agree), Cassini's one-time delay, reloads that keep
 * the slot history, stale -> free -> resumed, the applied epoch, and the report's
 * version 2 counters.
 */
#include "hm_pace.h"
#include "pace_assign.h"
#include "pace_fixture.h"

static char tmpdir[] = "/tmp/test_pace_switch.XXXXXX";
static char assign_path[600];

#define O_US INT64_C(1000000000000000) /* an origin far in the past */

static int setup(void **state)
{
	pace_clear_env();
	snprintf(assign_path, sizeof(assign_path), "%s/assign", tmpdir);
	return 0;
}

/* Current C (period 100 ms, shift 10 ms, guard 5 ms, epoch 7) and next N (period
 * 150 ms, shift 40 ms, guard 5 ms, epoch 8) switching at t_us, as the agent writes them. */
static void format_switch(char *buf, size_t n, int64_t origin_us, int64_t t_us, int64_t valid_us)
{
	snprintf(buf, n,
		 "HARMONICS_MODE=harmonics\nHARMONICS_JOB_ID=42\nHARMONICS_PERIOD_US=100000\n"
		 "HARMONICS_SHIFT_US=10000\nHARMONICS_ORIGIN_US=%lld\nHARMONICS_GUARD_US=5000\n"
		 "HARMONICS_PRIO=1\nHARMONICS_EPOCH=7\nHARMONICS_VALID_UNTIL_US=%lld\n"
		 "HARMONICS_NEXT_EFFECTIVE_US=%lld\nHARMONICS_NEXT_MODE=harmonics\n"
		 "HARMONICS_NEXT_PERIOD_US=150000\nHARMONICS_NEXT_SHIFT_US=40000\n"
		 "HARMONICS_NEXT_ORIGIN_US=%lld\nHARMONICS_NEXT_GUARD_US=5000\n"
		 "HARMONICS_NEXT_PRIO=3\nHARMONICS_NEXT_EPOCH=8\n",
		 (long long)origin_us, (long long)valid_us, (long long)t_us, (long long)origin_us);
}

static void parse_ok(pace_assign_t *a, const char *text)
{
	hm_err_t err = {0};

	pace_assign_clear(a);
	if (pace_assign_parse_text(a, text, "assign", &err) != HM_OK ||
	    pace_assign_validate(a, "assign", &err) != HM_OK)
		fail_msg("%s", err.msg);
}

/* ---- strict parsing of every new key ---- */

static void expect_bad(const char *extra, hm_rc_t rc, const char *const *needles)
{
	char text[2048];
	pace_assign_t a;
	hm_err_t err = {0};
	hm_rc_t got;

	format_switch(text, sizeof(text) - 200, O_US, O_US + 1000000, O_US * 2);
	strcat(text, extra);
	pace_assign_clear(&a);
	got = pace_assign_parse_text(&a, text, "assign", &err);
	if (got == HM_OK)
		got = pace_assign_validate(&a, "assign", &err);
	if (got != rc)
		fail_msg("'%s' gave rc %d (%s), expected %d", extra, got, err.msg, rc);
	for (; *needles; needles++)
		if (!strstr(err.msg, *needles))
			fail_msg("'%s': message '%s' lacks '%s'", extra, err.msg, *needles);
}

static void test_next_keys_strict(void **state)
{
	pace_assign_t a;
	char text[2048];

	format_switch(text, sizeof(text), O_US, O_US + 1000000, O_US * 2);
	parse_ok(&a, text);
	assert_true(a.has_next);
	assert_int_equal(a.next_effective_us, O_US + 1000000);
	assert_int_equal(a.next.period_us, 150000);
	assert_int_equal(a.next.shift_us, 40000);
	assert_int_equal(a.next.prio, 3);
	assert_int_equal(a.next.epoch, 8);
	assert_int_equal(a.cur.epoch, 7);

	/* Each bad value is named with what is accepted (a later line overrides). */
	expect_bad("HARMONICS_NEXT_EFFECTIVE_US=soon\n", HM_ERR_PARSE,
		   (const char *[]){"assign:18", "HARMONICS_NEXT_EFFECTIVE_US", "'soon'",
				    "[0, 4611686018427387903]", NULL});
	expect_bad("HARMONICS_NEXT_PRIO=8\n", HM_ERR_RANGE,
		   (const char *[]){"HARMONICS_NEXT_PRIO", "8", "[0, 7]", NULL});
	expect_bad("HARMONICS_NEXT_PERIOD_US=-1\n", HM_ERR_RANGE,
		   (const char *[]){"HARMONICS_NEXT_PERIOD_US", "[0, 3600000000]", NULL});
	expect_bad("HARMONICS_NEXT_MODE=two words\n", HM_ERR_PARSE,
		   (const char *[]){"HARMONICS_NEXT_MODE", "'two words'", "'off'", NULL});
	expect_bad("HARMONICS_NEXT_EPOCH=x7\n", HM_ERR_PARSE,
		   (const char *[]){"HARMONICS_NEXT_EPOCH", "'x7'", "[0, 2147483647]", NULL});
	expect_bad("HARMONICS_NEXT_ORIGIN_US=1e15\n", HM_ERR_PARSE,
		   (const char *[]){"HARMONICS_NEXT_ORIGIN_US", "'1e15'", NULL});
	expect_bad("HARMONICS_NEXT_SHIFT_US=150000\n", HM_ERR_RANGE,
		   (const char *[]){"HARMONICS_NEXT_SHIFT_US=150000", "HARMONICS_NEXT_PERIOD_US",
				    "[0, period)", NULL});
	expect_bad("HARMONICS_NEXT_GUARD_US=200000\n", HM_ERR_RANGE,
		   (const char *[]){"HARMONICS_NEXT_GUARD_US=200000", "[0, period)", NULL});
	expect_bad(
	    "HARMONICS_NEXT_WHEN=1\n", HM_ERR_PARSE,
	    (const char *[]){"unknown key 'HARMONICS_NEXT_WHEN'", "HARMONICS_NEXT_EPOCH", NULL});

	/* Required companions of any NEXT_* key. */
	parse_ok(&a, "HARMONICS_MODE=off\n");
	{
		static const struct {
			const char *text, *missing;
		} cases[] = {
		    {"HARMONICS_MODE=off\nHARMONICS_NEXT_MODE=cassini\nHARMONICS_NEXT_EPOCH=3\n"
		     "HARMONICS_NEXT_PERIOD_US=0\n",
		     "HARMONICS_NEXT_EFFECTIVE_US is missing"},
		    {"HARMONICS_MODE=off\nHARMONICS_NEXT_EFFECTIVE_US=5\n"
		     "HARMONICS_NEXT_MODE=cassini\nHARMONICS_NEXT_PERIOD_US=0\n",
		     "HARMONICS_NEXT_EPOCH is missing"},
		    {"HARMONICS_MODE=off\nHARMONICS_NEXT_EFFECTIVE_US=5\nHARMONICS_NEXT_EPOCH=3\n",
		     "HARMONICS_NEXT_MODE is missing"},
		    {"HARMONICS_MODE=off\nHARMONICS_NEXT_EFFECTIVE_US=5\nHARMONICS_NEXT_EPOCH=3\n"
		     "HARMONICS_NEXT_MODE=x\n",
		     "HARMONICS_NEXT_PERIOD_US is missing"},
		    {"HARMONICS_MODE=off\nHARMONICS_NEXT_EFFECTIVE_US=5\nHARMONICS_NEXT_EPOCH=3\n"
		     "HARMONICS_NEXT_MODE=x\nHARMONICS_NEXT_PERIOD_US=1000\n",
		     "HARMONICS_NEXT_ORIGIN_US is missing"},
		    {"HARMONICS_NEXT_EFFECTIVE_US=5\nHARMONICS_NEXT_EPOCH=3\n"
		     "HARMONICS_NEXT_MODE=off\n",
		     "HARMONICS_MODE is missing"},
		};
		hm_err_t err = {0};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			pace_assign_clear(&a);
			assert_int_equal(pace_assign_parse_text(&a, cases[i].text, "f", &err),
					 HM_OK);
			assert_int_not_equal(pace_assign_validate(&a, "f", &err), HM_OK);
			if (!strstr(err.msg, cases[i].missing))
				fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].missing);
		}
	}

	/* Period 0 in the next: a guard is ignored, a shift is a one-time delay. */
	parse_ok(&a, "HARMONICS_MODE=off\nHARMONICS_NEXT_EFFECTIVE_US=5\nHARMONICS_NEXT_EPOCH=3\n"
		     "HARMONICS_NEXT_MODE=cassini\nHARMONICS_NEXT_PERIOD_US=0\n"
		     "HARMONICS_NEXT_SHIFT_US=70000\nHARMONICS_NEXT_GUARD_US=10000\n");
	assert_int_equal(pace_sched_kind(&a.next), PACE_KIND_DELAY);
	assert_int_equal(pace_sched_kind(&a.cur), PACE_KIND_OFF);

	/* The environment takes the same keys (the launch-time assignment). */
	setenv("HARMONICS_MODE", "harmonics", 1);
	setenv("HARMONICS_PERIOD_US", "0", 1);
	setenv("HARMONICS_NEXT_EFFECTIVE_US", "77", 1);
	setenv("HARMONICS_NEXT_MODE", "off", 1);
	setenv("HARMONICS_NEXT_EPOCH", "2", 1);
	{
		hm_err_t err = {0};

		assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_OK);
		assert_true(a.has_next && a.next.off && a.next_effective_us == 77);
		setenv("HARMONICS_NEXT_PRIO", "-1", 1);
		assert_int_equal(pace_assign_from_env(&a, getenv, &err), HM_ERR_RANGE);
		assert_non_null(strstr(err.msg, "environment"));
		assert_non_null(strstr(err.msg, "HARMONICS_NEXT_PRIO"));
	}
}

/* ---- the plan around the switch (pure arithmetic) ---- */

static int64_t plan(const pace_assign_t *a, int64_t r, int64_t after)
{
	long de;

	return pace_assign_plan(a, r, after, -1, &de);
}

static void test_switch_plan(void **state)
{
	const int64_t T = O_US + 1030000;
	pace_assign_t a;
	char text[2048];

	/* C slots at O+10000+k*100000 (guard 5 ms); N slots at O+40000+k*150000: ...,
	 * O+940000, O+1090000, O+1240000 (guard 5 ms); switch at O+1030000. */
	format_switch(text, sizeof(text), O_US, T, O_US * 2);
	parse_ok(&a, text);
	/* C's slot before T: C governs. */
	assert_int_equal(plan(&a, O_US + 900000, HM_PACE_NO_SLOT), O_US + 910000);
	assert_int_equal(plan(&a, O_US + 1000000, HM_PACE_NO_SLOT), O_US + 1010000);
	assert_int_equal(plan(&a, O_US + 1014000, HM_PACE_NO_SLOT), O_US + 1010000); /* guard */
	/* C's next slot (O+1110000) would be after T: N's first slot at or after T. */
	assert_int_equal(plan(&a, O_US + 1016000, HM_PACE_NO_SLOT), O_US + 1090000);
	/* Ready after T: N's slots with N's guard. */
	assert_int_equal(plan(&a, O_US + 1094000, HM_PACE_NO_SLOT), O_US + 1090000);
	assert_int_equal(plan(&a, O_US + 1096000, HM_PACE_NO_SLOT), O_US + 1240000);
	/* A slot is used once: after C's O+1010000 the next one is N's. */
	assert_int_equal(plan(&a, O_US + 1000000, O_US + 1010000), O_US + 1090000);
	assert_ptr_equal(pace_assign_at(&a, O_US + 1010000), &a.cur);
	assert_ptr_equal(pace_assign_at(&a, T), &a.next);
	/* Holds stay bounded across the switch (C's two periods + N's two + guards). */
	assert_int_equal(pace_assign_max_wait_us(&a), 200000 + 5000 + 300000 + 5000);

	/* Next free running: no slot from T on, C's slots before. */
	parse_ok(&a, "HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=100000\n"
		     "HARMONICS_ORIGIN_US=1000000000000000\nHARMONICS_GUARD_US=5000\n"
		     "HARMONICS_NEXT_EFFECTIVE_US=1000000001030000\nHARMONICS_NEXT_MODE=fair\n"
		     "HARMONICS_NEXT_PERIOD_US=0\nHARMONICS_NEXT_EPOCH=9\n");
	assert_int_equal(plan(&a, O_US + 1000000, HM_PACE_NO_SLOT), O_US + 1000000);
	assert_int_equal(plan(&a, O_US + 1010000, HM_PACE_NO_SLOT), HM_PACE_NO_SLOT);
	/* Current free running, next slotted: free before T, N's grid after. */
	parse_ok(&a, "HARMONICS_MODE=fair\nHARMONICS_PERIOD_US=0\n"
		     "HARMONICS_NEXT_EFFECTIVE_US=1000000001030000\nHARMONICS_NEXT_MODE=harmonics\n"
		     "HARMONICS_NEXT_PERIOD_US=100000\nHARMONICS_NEXT_ORIGIN_US=1000000000000000\n"
		     "HARMONICS_NEXT_GUARD_US=5000\nHARMONICS_NEXT_EPOCH=9\n");
	assert_int_equal(plan(&a, O_US + 1020000, HM_PACE_NO_SLOT), HM_PACE_NO_SLOT);
	assert_int_equal(plan(&a, O_US + 1030000, HM_PACE_NO_SLOT), O_US + 1100000);
	assert_int_equal(plan(&a, O_US + 1104000, HM_PACE_NO_SLOT), O_US + 1100000);
}

/* Two runtimes (two ranks) with the same file plan the same slot ids for ready times
 * around the switch, also one that only read the file after T. Then a live run
 * across the switch: slots on C's grid before T, on N's after, applied epoch 7 -> 8. */
static void test_switch_ranks_agree(void **state)
{
	int64_t now = hm_pace_now_us(), T = now + 250000, origin = now - 10 * 1000000;
	int64_t ready[64], slots[64];
	char text[2048];
	hm_pace_t *early, *idle, *late;
	hm_pace_stats_t st;
	pace_assign_t a;
	int n = 0, before = 0;

	format_switch(text, sizeof(text), origin, T, now + 60 * 1000000);
	parse_ok(&a, text);
	write_file_atomic(assign_path, text);
	setenv(HM_PACE_ENV_ASSIGN_FILE, assign_path, 1);
	early = hm_pace_init();
	idle = hm_pace_init(); /* read the file before T, never bursts */
	assert_true(hm_pace_active(early));
	hm_pace_stats(early, &st);
	assert_int_equal(st.applied_epoch, -1); /* before the first burst */
	assert_int_equal(st.burst_epoch, -1);
	assert_int_equal(hm_pace_prio(early), 1);
	/* Live bursts across T on the early rank. */
	while (hm_pace_now_us() < T + 350000 && n < 64) {
		const pace_sched_t *gov;

		hm_pace_iter_begin(early);
		usleep(10000);
		ready[n] = hm_pace_now_us();
		slots[n] = hm_pace_plan(early, ready[n]);
		assert_int_not_equal(slots[n], HM_PACE_NO_SLOT);
		hm_pace_comm_begin_slot(early, slots[n]);
		usleep(2000);
		hm_pace_comm_end(early);
		/* On the governing grid: C's before T, N's from T on. */
		gov = slots[n] < T ? &a.cur : &a.next;
		assert_int_equal((slots[n] - gov->origin_us - gov->shift_us) % gov->period_us, 0);
		hm_pace_stats(early, &st);
		assert_int_equal(st.applied_epoch, gov->epoch);
		before += slots[n] < T;
		n++;
	}
	assert_true(before >= 1 && n - before >= 1);
	assert_int_equal(hm_pace_period_us(early), 150000);
	assert_int_equal(hm_pace_prio(early), 3);
	/* A rank that read the same file only now (after T), replaying the same ready
	 * times, plans exactly the same slots (history included). */
	late = hm_pace_init();
	for (int i = 0; i < n; i++) {
		assert_int_equal(hm_pace_plan(late, ready[i]), slots[i]);
		hm_pace_comm_begin_slot(late, slots[i]); /* in the past: no wait, same history */
	}
	hm_pace_stats(late, &st);
	assert_int_equal(st.applied_epoch, 8);
	hm_pace_fini(late);
	/* And for any ready time around T, a pre-T reader and a post-T reader agree. */
	late = hm_pace_init();
	for (int64_t r = T - 400000; r < T + 400000; r += 7919)
		assert_int_equal(hm_pace_plan(late, r), hm_pace_plan(idle, r));
	hm_pace_fini(late);
	hm_pace_fini(idle);
	hm_pace_fini(early);
}

/* ---- Cassini's one-time delay ---- */

static void test_one_time_delay(void **state)
{
	hm_pace_t *p;
	hm_pace_stats_t st;
	int64_t t0, r, held;
	char text[512];
	pace_assign_t a;
	long de = -1;

	/* Pure: applied to the first burst of its epoch only. */
	parse_ok(&a, "HARMONICS_MODE=cassini\nHARMONICS_PERIOD_US=0\nHARMONICS_SHIFT_US=30000\n"
		     "HARMONICS_GUARD_US=10000\nHARMONICS_EPOCH=5\n");
	assert_int_equal(pace_sched_kind(&a.cur), PACE_KIND_DELAY);
	assert_int_equal(pace_assign_plan(&a, O_US, HM_PACE_NO_SLOT, -1, &de), O_US + 30000);
	assert_int_equal(de, 5);
	assert_int_equal(pace_assign_plan(&a, O_US, HM_PACE_NO_SLOT, 5, &de), HM_PACE_NO_SLOT);
	assert_int_equal(de, -1);
	/* As the next assignment: the first burst ready at or after T waits once. */
	parse_ok(&a, "HARMONICS_MODE=fair\nHARMONICS_PERIOD_US=0\nHARMONICS_EPOCH=5\n"
		     "HARMONICS_NEXT_EFFECTIVE_US=1000000000500000\nHARMONICS_NEXT_MODE=cassini\n"
		     "HARMONICS_NEXT_PERIOD_US=0\nHARMONICS_NEXT_SHIFT_US=20000\n"
		     "HARMONICS_NEXT_EPOCH=6\n");
	assert_int_equal(pace_assign_plan(&a, O_US + 499999, HM_PACE_NO_SLOT, -1, &de),
			 HM_PACE_NO_SLOT);
	assert_int_equal(pace_assign_plan(&a, O_US + 600000, HM_PACE_NO_SLOT, -1, &de),
			 O_US + 620000);
	assert_int_equal(de, 6);
	assert_int_equal(pace_assign_plan(&a, O_US + 700000, HM_PACE_NO_SLOT, 6, &de),
			 HM_PACE_NO_SLOT);

	/* Live: the first burst waits 30 ms, the next ones run free. */
	snprintf(text, sizeof(text),
		 "HARMONICS_MODE=cassini\nHARMONICS_PERIOD_US=0\nHARMONICS_SHIFT_US=30000\n"
		 "HARMONICS_GUARD_US=10000\nHARMONICS_EPOCH=5\nHARMONICS_VALID_UNTIL_US=%lld\n",
		 (long long)hm_pace_now_us() + 60 * 1000000);
	write_file_atomic(assign_path, text);
	setenv(HM_PACE_ENV_ASSIGN_FILE, assign_path, 1);
	p = hm_pace_init();
	for (int i = 0; i < 3; i++) {
		hm_pace_iter_begin(p);
		t0 = hm_pace_now_us();
		hm_pace_comm_begin(p);
		held = hm_pace_now_us() - t0;
		hm_pace_comm_end(p);
		if (i == 0)
			assert_true(held >= 29000 && held < 500000);
		else
			assert_true(held < 20000);
	}
	/* A renewal of the same epoch does not delay again. */
	snprintf(text, sizeof(text),
		 "HARMONICS_MODE=cassini\nHARMONICS_PERIOD_US=0\nHARMONICS_SHIFT_US=30000\n"
		 "HARMONICS_GUARD_US=10000\nHARMONICS_EPOCH=5\nHARMONICS_VALID_UNTIL_US=%lld\n",
		 (long long)hm_pace_now_us() + 70 * 1000000);
	write_file_atomic(assign_path, text);
	usleep(120000);
	hm_pace_iter_begin(p);
	r = hm_pace_now_us();
	assert_int_equal(hm_pace_plan(p, r), HM_PACE_NO_SLOT);
	/* A new epoch delays once more. */
	snprintf(text, sizeof(text),
		 "HARMONICS_MODE=cassini\nHARMONICS_PERIOD_US=0\nHARMONICS_SHIFT_US=25000\n"
		 "HARMONICS_EPOCH=6\n");
	write_file_atomic(assign_path, text);
	usleep(120000);
	hm_pace_iter_begin(p);
	r = hm_pace_now_us();
	assert_int_equal(hm_pace_plan(p, r), r + 25000);
	assert_int_equal(hm_pace_plan(p, r), HM_PACE_NO_SLOT);
	hm_pace_stats(p, &st);
	assert_int_equal(st.paced, 1);
	assert_int_equal(st.unpaced, 2);
	assert_int_equal(st.applied_epoch, 5);
	hm_pace_fini(p);
}

/* ---- reloads keep the slot history; stale -> free -> resumed ---- */

static void write_slotted(int64_t origin_us, int64_t valid_until_us, int epoch)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=100000\nHARMONICS_SHIFT_US=0\n"
		 "HARMONICS_ORIGIN_US=%lld\nHARMONICS_GUARD_US=20000\nHARMONICS_EPOCH=%d\n"
		 "HARMONICS_VALID_UNTIL_US=%lld\n",
		 (long long)origin_us, epoch, (long long)valid_until_us);
	write_file_atomic(assign_path, text);
}

static void test_renewal_keeps_history(void **state)
{
	int64_t now = hm_pace_now_us(), origin = now - 5 * 1000000, s1, s2;
	hm_pace_t *p;
	hm_pace_stats_t st;

	write_slotted(origin, now + 30 * 1000000, 4);
	setenv(HM_PACE_ENV_ASSIGN_FILE, assign_path, 1);
	p = hm_pace_init();
	hm_pace_iter_begin(p);
	s1 = hm_pace_plan(p, hm_pace_now_us());
	hm_pace_comm_begin_slot(p, s1);
	hm_pace_comm_end(p);
	/* The agent renews the validity (a new file, same assignment). */
	write_slotted(origin, now + 40 * 1000000, 4);
	usleep(120000);
	hm_pace_iter_begin(p);
	/* Planning from s1's ready time again must not give s1 twice. */
	assert_int_equal(hm_pace_plan(p, s1), s1 + 100000);
	/* Skipped slots still count against the same grid across the renewal. */
	s2 = hm_pace_plan(p, s1 + 100000 + 20001); /* past s1 + P's guard: s1 + 2P */
	assert_int_equal(s2, s1 + 200000);
	hm_pace_comm_begin_slot(p, s2);
	hm_pace_comm_end(p);
	hm_pace_stats(p, &st);
	assert_int_equal(st.paced, 2);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(st.slot_misses, (uint64_t)(st.skipped + st.late));
	hm_pace_fini(p);
}

static void test_stale_then_resumed(void **state)
{
	int64_t now = hm_pace_now_us(), origin = now - 5 * 1000000;
	hm_pace_t *p;
	hm_pace_stats_t st;
	const char *err;

	write_slotted(origin, now + 150000, 4);
	setenv(HM_PACE_ENV_ASSIGN_FILE, assign_path, 1);
	capture_stderr(tmpdir);
	p = hm_pace_init();
	assert_true(hm_pace_active(p));
	hm_pace_comm_begin_slot(p, HM_PACE_NO_SLOT); /* free under epoch 4: governed */
	hm_pace_comm_end(p);
	hm_pace_stats(p, &st);
	assert_int_equal(st.burst_epoch, 4);
	assert_int_equal(st.applied_epoch, 4);
	usleep(200000);
	/* The agent went silent: stale, free, one warning however often we ask. */
	for (int i = 0; i < 3; i++) {
		int64_t t0 = hm_pace_now_us();

		assert_false(hm_pace_active(p));
		assert_int_equal(hm_pace_plan(p, t0), HM_PACE_NO_SLOT);
		hm_pace_comm_begin(p);
		hm_pace_comm_end(p);
		assert_true(hm_pace_now_us() - t0 < 50000);
		/* Nothing governed these bursts; the report keeps the last applied epoch. */
		hm_pace_stats(p, &st);
		assert_int_equal(st.burst_epoch, -1);
		assert_int_equal(st.applied_epoch, 4);
	}
	/* It comes back and renews: pacing resumes, said once. */
	write_slotted(origin, hm_pace_now_us() + 30 * 1000000, 4);
	usleep(120000);
	hm_pace_iter_begin(p);
	assert_true(hm_pace_active(p));
	assert_int_not_equal(hm_pace_plan(p, hm_pace_now_us()), HM_PACE_NO_SLOT);
	hm_pace_comm_begin_slot(p, hm_pace_now_us()); /* a slot now: no wait */
	hm_pace_comm_end(p);
	hm_pace_stats(p, &st);
	assert_int_equal(st.burst_epoch, 4);
	hm_pace_fini(p);
	err = captured_stderr();
	assert_int_equal(count_substr(err, "is stale"), 1);
	assert_int_equal(count_substr(err, "pacing resumed"), 1);
	assert_int_equal(count_substr(err, "harmonics-pace: "), 2);
}

/* A switch to "off" is applied too: the step reports the new epoch, and never waits. */
static void test_off_is_applied(void **state)
{
	char text[512];
	int64_t now = hm_pace_now_us();
	hm_pace_t *p;
	hm_pace_stats_t st;

	snprintf(text, sizeof(text),
		 "HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=0\nHARMONICS_EPOCH=3\n"
		 "HARMONICS_NEXT_EFFECTIVE_US=%lld\nHARMONICS_NEXT_MODE=off\n"
		 "HARMONICS_NEXT_EPOCH=4\n",
		 (long long)now + 100000);
	write_file_atomic(assign_path, text);
	setenv(HM_PACE_ENV_ASSIGN_FILE, assign_path, 1);
	p = hm_pace_init();
	hm_pace_comm_begin(p);
	hm_pace_comm_end(p);
	hm_pace_stats(p, &st);
	assert_int_equal(st.applied_epoch, 3);
	assert_int_equal(hm_pace_prio(p), -1); /* no PRIO given */
	usleep(120000);
	assert_false(hm_pace_active(p)); /* off in force */
	hm_pace_comm_begin(p);
	hm_pace_comm_end(p);
	hm_pace_stats(p, &st);
	assert_int_equal(st.applied_epoch, 4);
	assert_int_equal(st.burst_epoch, 4); /* "off" governs the burst too */
	assert_int_equal(st.unpaced, 2);
	hm_pace_fini(p);
}

/* ---- report version 2 ---- */

static uint64_t report_u64(const char *buf, const char *key)
{
	char pat[64];
	const char *q;

	snprintf(pat, sizeof(pat), "\n%s=", key);
	q = strstr(buf, pat);
	if (!q)
		fail_msg("report lacks %s:\n%s", key, buf);
	return strtoull(q + strlen(pat), NULL, 10);
}

static void test_report_v2(void **state)
{
	static const char *const v1_keys[] = {
	    "JOB_ID",
	    "RANK",
	    "MODE",
	    "EPOCH",
	    "ACTIVE",
	    "PERIOD_ASSIGNED_US",
	    "SHIFT_US",
	    "ITERATIONS",
	    "BURSTS",
	    "PACED",
	    "LATE",
	    "SKIPPED",
	    "UNPACED",
	    "PERIOD_US",
	    "BURST_OFFSET_US",
	    "BURST_US",
	    "WAIT_US",
	    "SLOT_ERROR_US",
	    "SLOT_ERROR_MAX_US",
	    "UPDATED_US",
	};
	char tmpl[700], path[700], buf[4096];
	hm_pace_t *p;
	hm_pace_stats_t st;
	double mean_us;

	snprintf(tmpl, sizeof(tmpl), "%s/report.%%r", tmpdir);
	snprintf(path, sizeof(path), "%s/report.5", tmpdir);
	setenv(HM_PACE_ENV_MODE, "fair", 1);
	setenv(HM_PACE_ENV_PERIOD_US, "0", 1);
	setenv(HM_PACE_ENV_EPOCH, "11", 1);
	setenv(HM_PACE_ENV_REPORT_FILE, tmpl, 1);
	setenv(HM_PACE_ENV_RANK, "5", 1);
	p = hm_pace_init();
	for (int i = 0; i < 5; i++) {
		hm_pace_iter_begin(p);
		usleep(20000); /* compute */
		hm_pace_comm_begin(p);
		usleep(10000); /* burst */
		hm_pace_comm_end(p);
	}
	hm_pace_iter_begin(p);
	assert_int_equal(hm_pace_report(p), 0);
	hm_pace_stats(p, &st);
	slurp(path, buf, sizeof(buf));
	assert_non_null(strstr(buf, "HARMONICS_REPORT_VERSION=2\n"));
	for (size_t i = 0; i < sizeof(v1_keys) / sizeof(v1_keys[0]); i++)
		report_u64(buf, v1_keys[i]); /* every version-1 key is still there */
	/* Five full iterations: 5 period samples of ~30 ms, 5 compute of ~20, 5 bursts of ~10. */
	assert_int_equal(report_u64(buf, "ITER_N"), 5);
	assert_int_equal(report_u64(buf, "COMPUTE_N"), 5);
	assert_int_equal(report_u64(buf, "BURST_N"), 5);
	assert_int_equal(report_u64(buf, "ITER_SUM_US"), st.iter_sum_us);
	assert_int_equal(report_u64(buf, "ITER_SQ_SUM_US2"), st.iter_sq_sum_us2);
	assert_int_equal(report_u64(buf, "COMPUTE_SUM_US"), st.compute_sum_us);
	assert_int_equal(report_u64(buf, "BURST_SUM_US"), st.burst_sum_us);
	assert_int_equal(report_u64(buf, "SLOT_MISSES"), 0);
	assert_int_equal(report_u64(buf, "APPLIED_EPOCH"), 11);
	assert_int_equal(report_u64(buf, "PID"), (uint64_t)getpid());
	mean_us = (double)st.iter_sum_us / 5;
	assert_true(mean_us >= 30000 && mean_us < 80000);
	/* Sum of squares >= n * mean^2 (Cauchy-Schwarz), equality iff no spread. */
	assert_true((double)st.iter_sq_sum_us2 >= 5 * mean_us * mean_us * 0.999999);
	mean_us = (double)st.compute_sum_us / 5;
	assert_true(mean_us >= 20000 && mean_us < 60000);
	mean_us = (double)st.burst_sum_us / 5;
	assert_true(mean_us >= 10000 && mean_us < 50000);
	hm_pace_fini(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_next_keys_strict, setup),
	    cmocka_unit_test_setup(test_switch_plan, setup),
	    cmocka_unit_test_setup(test_switch_ranks_agree, setup),
	    cmocka_unit_test_setup(test_one_time_delay, setup),
	    cmocka_unit_test_setup(test_renewal_keeps_history, setup),
	    cmocka_unit_test_setup(test_stale_then_resumed, setup),
	    cmocka_unit_test_setup(test_off_is_applied, setup),
	    cmocka_unit_test_setup(test_report_v2, setup),
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
		fprintf(stderr, "test_pace_switch: could not remove %s\n", tmpdir);
	return rc;
}
