/*
 * One slot for all ranks of a collective (pace_assign_plan_shared, issue 25
 * item 4): the slot follows from the previous slot and burst end, which the
 * ranks share, not from each rank's ready time. Skewed ranks agree where their
 * own ready times disagree; a rank nearly a period behind takes its own next slot;
 * a burst ending past a slot moves the job on; around a switch time both ranks
 * take the next schedule's slot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "hm_pace.h"
#include "pace_assign.h"

#define P_US   INT64_C(100000)
#define O_US   INT64_C(1000000000000000) /* origin, on the grid */
#define S_US   (O_US + 50 * P_US)        /* the communicator's previous slot */
#define END_US (S_US + 5000)             /* its burst's end, common to the ranks */

static void parse_ok(pace_assign_t *a, const char *text)
{
	hm_err_t err = {0};

	pace_assign_clear(a);
	if (pace_assign_parse_text(a, text, "assign", &err) != HM_OK ||
	    pace_assign_validate(a, "assign", &err) != HM_OK)
		fail_msg("%s", err.msg);
}

static void slotted(pace_assign_t *a)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=%lld\nHARMONICS_SHIFT_US=0\n"
		 "HARMONICS_ORIGIN_US=%lld\nHARMONICS_GUARD_US=10000\nHARMONICS_PRIO=1\n"
		 "HARMONICS_EPOCH=1\n",
		 (long long)P_US, (long long)O_US);
	parse_ok(a, text);
}

static int64_t shared(const pace_assign_t *a, int64_t ready_us, int64_t from_us, int64_t after_us)
{
	long de = -1;

	return pace_assign_plan_shared(a, ready_us, from_us, after_us, -1, &de);
}

static int64_t own(const pace_assign_t *a, int64_t ready_us, int64_t after_us)
{
	long de = -1;

	return pace_assign_plan(a, ready_us, after_us, -1, &de);
}

/* Rank A ready 5 ms before the next slot, rank B 15 ms after it (past the 10 ms
 * guard): on their own they pick slots a period apart; shared, the same one. */
static void test_skew_agrees(void **state)
{
	pace_assign_t a;
	int64_t ra = S_US + P_US - 5000, rb = S_US + P_US + 15000;

	(void)state;
	slotted(&a);
	assert_int_equal(own(&a, ra, S_US), S_US + P_US);
	assert_int_equal(own(&a, rb, S_US), S_US + 2 * P_US);
	assert_int_equal(shared(&a, ra, END_US, S_US), S_US + P_US);
	assert_int_equal(shared(&a, rb, END_US, S_US), S_US + P_US);
	/* Ready early: the same slot, a wait. */
	assert_int_equal(shared(&a, END_US + 1000, END_US, S_US), S_US + P_US);
}

/* More than period - guard behind the shared slot: the next slot is within the
 * guard, taken as on its own; just before that line, the shared slot (at once). */
static void test_far_behind_own(void **state)
{
	pace_assign_t a;
	int64_t r = S_US + P_US + P_US - 10000 + 1000;

	(void)state;
	slotted(&a);
	assert_int_equal(shared(&a, r - 2000, END_US, S_US), S_US + P_US);
	assert_int_equal(shared(&a, r, END_US, S_US), own(&a, r, S_US));
	assert_int_equal(shared(&a, r, END_US, S_US), S_US + 2 * P_US);
}

/* A burst that ended past the next slot: the first slot at or after its end. */
static void test_long_burst_moves_on(void **state)
{
	pace_assign_t a;
	int64_t end = S_US + P_US + 3000;

	(void)state;
	slotted(&a);
	assert_int_equal(shared(&a, end + 80000, end, S_US), S_US + 2 * P_US);
}

/* A pending next schedule (shift 30 ms) from T = S + 1.5 periods: the slot before
 * T is the current one's; after it, the next one's, on every rank alike. */
static void test_switch(void **state)
{
	pace_assign_t a;
	char text[1024];
	int64_t t = S_US + P_US + P_US / 2;

	(void)state;
	snprintf(text, sizeof(text),
		 "HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=%lld\nHARMONICS_SHIFT_US=0\n"
		 "HARMONICS_ORIGIN_US=%lld\nHARMONICS_GUARD_US=10000\nHARMONICS_PRIO=1\n"
		 "HARMONICS_EPOCH=1\nHARMONICS_NEXT_EFFECTIVE_US=%lld\nHARMONICS_NEXT_MODE=harmonics\n"
		 "HARMONICS_NEXT_PERIOD_US=%lld\nHARMONICS_NEXT_SHIFT_US=30000\n"
		 "HARMONICS_NEXT_ORIGIN_US=%lld\nHARMONICS_NEXT_GUARD_US=10000\n"
		 "HARMONICS_NEXT_PRIO=1\nHARMONICS_NEXT_EPOCH=2\n",
		 (long long)P_US, (long long)O_US, (long long)t, (long long)P_US, (long long)O_US);
	parse_ok(&a, text);
	assert_int_equal(shared(&a, S_US + P_US - 5000, END_US, S_US), S_US + P_US);
	assert_int_equal(shared(&a, S_US + P_US + 15000, END_US, S_US), S_US + P_US);
	/* The next burst: after S + P, at or after T: the next grid's S + 2P + 30 ms. */
	assert_int_equal(shared(&a, S_US + 2 * P_US, S_US + P_US + 5000, S_US + P_US),
			 S_US + 2 * P_US + 30000);
	assert_int_equal(shared(&a, S_US + 2 * P_US + 40000, S_US + P_US + 5000, S_US + P_US),
			 S_US + 2 * P_US + 30000);
}

/* No grid (free running): the own plan, which does not wait. */
static void test_no_grid(void **state)
{
	pace_assign_t a;

	(void)state;
	parse_ok(&a, "HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=0\nHARMONICS_SHIFT_US=0\n"
		     "HARMONICS_ORIGIN_US=1\nHARMONICS_PRIO=1\nHARMONICS_EPOCH=1\n");
	assert_int_equal(shared(&a, S_US, END_US, S_US), HM_PACE_NO_SLOT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_skew_agrees), cmocka_unit_test(test_far_behind_own),
	    cmocka_unit_test(test_long_burst_moves_on), cmocka_unit_test(test_switch),
	    cmocka_unit_test(test_no_grid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
