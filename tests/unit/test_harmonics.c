/*
 * Unit tests for the two-tier Harmonics policy: the engines on hand-built
 * contexts (known answers) and the simulator on the closed-form case of two
 * complementary jobs sharing one uplink.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>

#include "hm_pol_common.h"
#include "policies_fixture.h"

extern const hm_policy_ops_t hm_policy_harmonics;

/* prio_levels 0: the default. */
static void decide_cfg(fx_ctx_t *f, int threads, bool plan_only, int prio_levels)
{
	hm_policy_cfg_t cfg;
	void *st = NULL;
	hm_err_t err = {0};

	hm_policy_cfg_defaults(&cfg);
	cfg.threads = threads;
	cfg.plan_only = plan_only;
	if (prio_levels > 0)
		cfg.prio_levels = prio_levels;
	assert_int_equal(hm_policy_harmonics.create(&cfg, &st, &err), HM_OK);
	assert_int_equal(hm_policy_harmonics.decide(st, &f->ctx, &err), HM_OK);
	hm_policy_harmonics.destroy(st);
}

/* The tiers' plan alone; the check against fair sharing has its own test. */
static void decide(fx_ctx_t *f, int threads)
{
	decide_cfg(f, threads, true, 0);
}

static hm_burst_t burst_of(const fx_ctx_t *f, int i)
{
	hm_burst_t b = {f->sj[i].dec.period_s, f->sj[i].dec.shift_s, f->tr[i].alone_comm_s[0],
			false};
	return b;
}

/* Alone on its link: never held (period 0), so it never loses time. */
static void test_alone_not_held(void **state)
{
	(void)state;
	fx_ctx_t f;
	int rack[1] = {0}, l0[1] = {0};

	fx_ctx_init(&f, 1, rack, 1);
	fx_ctx_job(&f, 0, 0.3, 0.1, l0, 1);
	decide(&f, 1);
	assert_true(f.sj[0].dec.period_s == 0);
	assert_true(f.sj[0].dec.shift_s == 0);
}

/*
 * Two complementary jobs in one rack, each saturating the link: compute 0.3 s
 * and 0.7 s, bursts 0.1 s (T = 0.4 s and 0.8 s), measured with a small spread.
 * Classes alone cannot stagger different periods: both held, on periods >= T
 * in ratio 1:2 exactly, with bursts that never overlap (the exact periodic
 * computation), in different classes.
 */
static void test_local_stagger(void **state)
{
	(void)state;
	fx_ctx_t f;
	int rack[1] = {0}, l0[1] = {0};
	const double T_s[2] = {0.4, 0.8};

	fx_ctx_init(&f, 1, rack, 1);
	fx_ctx_job(&f, 0, 0.3, 0.1, l0, 1);
	fx_ctx_job(&f, 1, 0.7, 0.1, l0, 1);
	fx_ctx_measured(&f, 0, 1e-3);
	fx_ctx_measured(&f, 1, 1e-3);
	decide(&f, 1);
	for (int i = 0; i < 2; i++) {
		assert_true(f.sj[i].dec.period_s >= T_s[i] - 1e-12);
		assert_true(f.sj[i].dec.period_s <= T_s[i] * 1.2);
		assert_true(f.sj[i].dec.guard_s > 0);
	}
	assert_float_equal(f.sj[1].dec.period_s, 2 * f.sj[0].dec.period_s, 1e-9);
	hm_burst_t a = burst_of(&f, 0), b = burst_of(&f, 1);
	assert_float_equal(hm_burst_overlap_rate(&a, &b), 0, 1e-12);
	assert_int_not_equal(f.sj[0].dec.prio, f.sj[1].dec.prio);
}

/*
 * The check: the stagger above holds slots one jitter deviation longer than
 * the period with a guard of two; with the measured spread as compute jitter
 * a late burst often outruns its guard and waits a whole period, which the
 * check sees in the simulator's model. Strict classes alone lose almost
 * nothing here (the short job first): the plan is replaced, and says so.
 */
static void test_check_replaces_fragile_hold(void **state)
{
	(void)state;
	fx_ctx_t f;
	int rack[1] = {0}, l0[1] = {0};

	fx_ctx_init(&f, 1, rack, 1);
	fx_ctx_job(&f, 0, 0.3, 0.1, l0, 1);
	fx_ctx_job(&f, 1, 0.7, 0.1, l0, 1);
	fx_ctx_measured(&f, 0, 1e-3);
	fx_ctx_measured(&f, 1, 1e-3);
	decide_cfg(&f, 1, false, 0);
	for (int i = 0; i < 2; i++)
		assert_true(f.sj[i].dec.period_s == 0);
	assert_int_not_equal(f.sj[0].dec.prio, f.sj[1].dec.prio);
	assert_non_null(strstr(f.ctx.note, "1 replaced"));
}

/*
 * A measured compute spread (waits and contention excluded) above twice the
 * assumed jitter is the job's own, where the iteration's spread alone (capped)
 * would not count. The stagger of test_local_stagger with compute spreads of
 * 10% (twice the assumed jitter: the slots of the rule before, T + a small
 * margin) and of a quarter, as a real framework's step on shared hosts: slots
 * that absorb it cost more than the overlap they save, in the plan and in the
 * check: nothing held.
 */
static void spread_case(fx_ctx_t *f, double cv)
{
	int rack[1] = {0}, l0[1] = {0};

	fx_ctx_init(f, 1, rack, 1);
	fx_ctx_job(f, 0, 0.3, 0.1, l0, 1);
	fx_ctx_job(f, 1, 0.7, 0.1, l0, 1);
	for (int i = 0; i < 2; i++) {
		fx_ctx_measured(f, i, 1e-3);
		f->sj[i].meas_compute_sd_s = cv * f->sj[i].meas_compute_s;
	}
}

static void test_compute_spread(void **state)
{
	(void)state;
	fx_ctx_t f;
	const double T_s[2] = {0.4, 0.8};

	spread_case(&f, 2 * HM_POL_DEFAULT_CV);
	decide(&f, 1);
	for (int i = 0; i < 2; i++)
		assert_true(f.sj[i].dec.period_s >= T_s[i] - 1e-12 &&
			    f.sj[i].dec.period_s <= T_s[i] * 1.05);
	spread_case(&f, 0.25);
	decide(&f, 1);
	for (int i = 0; i < 2; i++)
		assert_true(f.sj[i].dec.period_s == 0);
	spread_case(&f, 0.25);
	decide_cfg(&f, 1, false, 0);
	for (int i = 0; i < 2; i++)
		assert_true(f.sj[i].dec.period_s == 0);
}

/*
 * The check's class search, with two classes (prio_levels 3, one reserved):
 * two light jobs (compute 0.1 s, burst 0.02 s) and a heavy one (0.5 s,
 * 0.1 s) on one link. The check's orders put one job per class, so one light
 * job always shares the low class with the heavy one; fair sharing slows all
 * three. Moving that light job up, both light jobs above the heavy one, is
 * found only by the search.
 */
static void test_check_class_search(void **state)
{
	(void)state;
	fx_ctx_t f;
	int rack[1] = {0}, l0[1] = {0};

	fx_ctx_init(&f, 1, rack, 1);
	fx_ctx_job(&f, 0, 0.1, 0.02, l0, 1);
	fx_ctx_job(&f, 1, 0.1, 0.02, l0, 1);
	fx_ctx_job(&f, 2, 0.5, 0.1, l0, 1);
	for (int i = 0; i < 3; i++)
		fx_ctx_measured(&f, i, 1e-3);
	decide_cfg(&f, 1, false, 3);
	assert_int_equal(f.sj[0].dec.prio, 0);
	assert_int_equal(f.sj[1].dec.prio, 0);
	assert_int_equal(f.sj[2].dec.prio, 1);
	for (int i = 0; i < 3; i++)
		assert_true(f.sj[i].dec.period_s == 0);
	assert_non_null(strstr(f.ctx.note, "1 replaced, 1 of "));
}

/*
 * Two identical complementary jobs (compute 0.3 s, burst 0.1 s): with equal
 * periods strict classes stagger them by themselves (the lower waits once,
 * then follows; test_sim_stagger measures it), which costs less than a slot
 * margin: not held, different classes.
 */
static void test_equal_periods_classes(void **state)
{
	(void)state;
	fx_ctx_t f;
	int rack[1] = {0}, l0[1] = {0};

	fx_ctx_init(&f, 1, rack, 1);
	fx_ctx_job(&f, 0, 0.3, 0.1, l0, 1);
	fx_ctx_job(&f, 1, 0.3, 0.1, l0, 1);
	fx_ctx_measured(&f, 0, 1e-3);
	fx_ctx_measured(&f, 1, 1e-3);
	decide(&f, 1);
	assert_true(f.sj[0].dec.period_s == 0 && f.sj[1].dec.period_s == 0);
	assert_int_not_equal(f.sj[0].dec.prio, f.sj[1].dec.prio);
}

/*
 * Two jobs across racks 0 and 1 share the link above the racks (and each
 * rack's uplink); rack 0 also holds a pair of local jobs on its own NIC link.
 * The Global Coordinator staggers the cross-rack pair on periods 1:2; rack 0's
 * Local Scheduler staggers its pair. Threads must not change the answer.
 */
static void test_cross_rack(void **state)
{
	(void)state;
	fx_ctx_t f, g;
	int rack[4] = {0, 1, -1, 0}, lx[3] = {0, 1, 2}, l3[1] = {3};

	for (int pass = 0; pass < 2; pass++) {
		fx_ctx_t *c = pass ? &g : &f;
		fx_ctx_init(c, 4, rack, 2);
		fx_ctx_job(c, 0, 0.3, 0.1, lx, 3);
		fx_ctx_job(c, 1, 0.65, 0.15, lx, 3);
		fx_ctx_job(c, 2, 0.6, 0.2, l3, 1);
		fx_ctx_job(c, 3, 1.4, 0.2, l3, 1);
		for (int i = 0; i < 4; i++)
			fx_ctx_measured(c, i, 1e-3);
		decide(c, pass ? 2 : 1);
	}
	for (int i = 0; i < 4; i++) {
		assert_memory_equal(&f.sj[i].dec, &g.sj[i].dec, sizeof(hm_decision_t));
		assert_true(f.sj[i].dec.period_s > 0);
	}
	/* The cross-rack pair (T = 0.4 s, 0.8 s): periods 1:2, no overlap. */
	assert_float_equal(f.sj[1].dec.period_s, 2 * f.sj[0].dec.period_s, 1e-9);
	hm_burst_t a = burst_of(&f, 0), b = burst_of(&f, 1);
	assert_float_equal(hm_burst_overlap_rate(&a, &b), 0, 1e-12);
	assert_float_equal(f.sj[3].dec.period_s, 2 * f.sj[2].dec.period_s, 1e-9);
	a = burst_of(&f, 2);
	b = burst_of(&f, 3);
	assert_float_equal(hm_burst_overlap_rate(&a, &b), 0, 1e-12);
	assert_int_not_equal(f.sj[0].dec.prio, f.sj[1].dec.prio);
}

/*
 * A cross-rack job whose partner runs free (its period cannot be made a
 * harmonic cheaply) is not held: a drifting partner would push its bursts out
 * of their slots. Both run free, in different classes.
 */
static void test_open_group_free(void **state)
{
	(void)state;
	fx_ctx_t f;
	int rack[3] = {0, 1, -1}, lx[3] = {0, 1, 2}, l0[1] = {0};

	fx_ctx_init(&f, 3, rack, 2);
	fx_ctx_job(&f, 0, 0.3, 0.1, lx, 3);
	fx_ctx_job(&f, 1, 0.5, 0.15, l0, 1); /* T 0.65: no cheap harmonic of 0.4 */
	decide(&f, 1);
	assert_true(f.sj[0].dec.period_s == 0);
	assert_true(f.sj[1].dec.period_s == 0);
	assert_int_not_equal(f.sj[0].dec.prio, f.sj[1].dec.prio);
}

/*
 * Without a measured spread the assumed jitter makes holding cost more than the
 * expected overlap of two light jobs: they run free, in different classes.
 */
static void test_free_with_classes(void **state)
{
	(void)state;
	fx_ctx_t f;
	int rack[1] = {0}, l0[1] = {0};

	fx_ctx_init(&f, 1, rack, 1);
	fx_ctx_job(&f, 0, 0.9, 0.1, l0, 1);
	fx_ctx_job(&f, 1, 0.9, 0.1, l0, 1);
	decide(&f, 1);
	assert_true(f.sj[0].dec.period_s == 0 && f.sj[1].dec.period_s == 0);
	assert_true(f.sj[0].dec.shift_s == 0 && f.sj[1].dec.shift_s == 0);
	assert_int_not_equal(f.sj[0].dec.prio, f.sj[1].dec.prio);
}

/* Unchanged input: the same decision again (no churn at epoch boundaries). */
static void test_stable(void **state)
{
	(void)state;
	fx_ctx_t f;
	int rack[1] = {0}, l0[1] = {0};
	hm_decision_t d0, d1;

	fx_ctx_init(&f, 1, rack, 1);
	fx_ctx_job(&f, 0, 0.3, 0.1, l0, 1);
	fx_ctx_job(&f, 1, 0.2, 0.1, l0, 1);
	fx_ctx_measured(&f, 0, 1e-3);
	fx_ctx_measured(&f, 1, 1e-3);
	decide(&f, 1);
	d0 = f.sj[0].dec;
	d1 = f.sj[1].dec;
	f.ctx.event = HM_EV_EPOCH;
	decide(&f, 1);
	assert_float_equal(f.sj[0].dec.shift_s, d0.shift_s, 1e-12);
	assert_float_equal(f.sj[1].dec.shift_s, d1.shift_s, 1e-12);
	assert_float_equal(f.sj[1].dec.period_s, d1.period_s, 1e-12);
}

/*
 * Simulator, closed form: two identical jobs (C = 0.3 s, M = 0.1 s) share the
 * ToR uplinks of a 2-rack cluster (oversubscription 2). Fair sharing: C + 2M =
 * 0.5 s per iteration. Staggered: every burst alone (comm time M) and the
 * iteration C + M = 0.4 s plus the slot margin.
 */
static void test_sim_stagger(void **state)
{
	(void)state;
	hm_topo_t *t = fx_topo(2, 2, 1, 2);
	hm_job_t j[2];
	int ha[2] = {0, 2}, hb[2] = {1, 3};
	hm_sim_result_t rf, rh;

	fx_job(&j[0], 0, t, ha, 2, 0.3, 1.25e9, 300, 0);
	fx_job(&j[1], 1, t, hb, 2, 0.3, 1.25e9, 300, 0);
	assert_int_equal(fx_run(t, j, 2, &hm_policy_fair, 0, 1, 0, &rf), HM_OK);
	assert_int_equal(fx_run(t, j, 2, &hm_policy_harmonics, 0, 1, 5, &rh), HM_OK);
	assert_int_equal(rh.completed, 2);
	assert_float_equal(rf.jobs[0].mean_iter_s, 0.5, 1e-6);
	for (int i = 0; i < 2; i++) {
		assert_true(rh.jobs[i].mean_comm_s <= 0.1 * 1.01);
		assert_true(rh.jobs[i].mean_iter_s <= 0.4 * 1.1);
	}
	assert_true(rh.mean_jct_s < rf.mean_jct_s * 0.9);
	hm_sim_result_free(&rf);
	hm_sim_result_free(&rh);
	fx_free_jobs(j, 2);
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_alone_not_held),
	    cmocka_unit_test(test_local_stagger),
	    cmocka_unit_test(test_compute_spread),
	    cmocka_unit_test(test_check_replaces_fragile_hold),
	    cmocka_unit_test(test_check_class_search),
	    cmocka_unit_test(test_equal_periods_classes),
	    cmocka_unit_test(test_cross_rack),
	    cmocka_unit_test(test_open_group_free),
	    cmocka_unit_test(test_free_with_classes),
	    cmocka_unit_test(test_stable),
	    cmocka_unit_test(test_sim_stagger),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
