/*
 * Unit tests for the contention model and the optimal policy on instances with
 * known answers. Hand-made topology: link 0 is shared (capacity 100 Gbit/s),
 * links 1.. are private. A job's burst alone takes M on its links and it
 * computes C, so its period alone is C + M.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "hm_clock.h"
#include "hm_contention.h"
#include "hm_sim.h"

#define CAP  100e9
#define MAXJ 10

static hm_link_t g_links[MAXJ + 1];
static hm_topo_t g_topo;
static int g_lk[MAXJ][2], g_fl[MAXJ][2] = {{1, 1}};
static hm_traffic_t g_tr[MAXJ];
static hm_job_t g_job[MAXJ];
static hm_sched_job_t g_sj[MAXJ];

static void setup_topo(void)
{
	memset(&g_topo, 0, sizeof(g_topo));
	for (int l = 0; l <= MAXJ; l++)
		g_links[l] = (hm_link_t){.capacity_bps = CAP, .rack = -1, .host = -1};
	g_topo.nlinks = MAXJ + 1;
	g_topo.links = g_links;
}

/* Job i: compute c_s, burst m_s alone on link 0 (if shared) and its private link i + 1. */
static void make_job(int i, double c_s, double m_s, bool shared)
{
	hm_traffic_t *tr = &g_tr[i];

	memset(tr, 0, sizeof(*tr));
	memset(&g_job[i], 0, sizeof(g_job[i]));
	memset(&g_sj[i], 0, sizeof(g_sj[i]));
	g_lk[i][0] = shared ? 0 : i + 1;
	g_lk[i][1] = i + 1;
	g_fl[i][0] = g_fl[i][1] = 1;
	tr->nphases = 1;
	tr->phases[0].flow_bytes = m_s * CAP / 8;
	tr->phases[0].nflows = 1;
	tr->phases[0].nlinks = shared ? 2 : 1;
	tr->phases[0].links = shared ? g_lk[i] : &g_lk[i][1];
	tr->phases[0].flows = g_fl[i];
	tr->alone_comm_s[0] = m_s;
	tr->alone_iter_s = c_s + m_s;
	g_job[i].id = i;
	g_job[i].gpus = 2;
	g_job[i].profile.compute_s = c_s;
	g_job[i].profile.nphases = 1;
	g_sj[i].id = i;
	g_sj[i].job = &g_job[i];
	g_sj[i].traffic = tr;
	g_sj[i].npaths = 1;
}

/* Job i bursts at frac of the link rate (its flows are limited elsewhere): a lighter load. */
static void set_rate(int i, double frac)
{
	g_tr[i].phases[0].flow_bytes *= frac;
}

static hm_sched_ctx_t make_ctx(int n)
{
	hm_sched_ctx_t ctx = {.topo = &g_topo,
			      .now_s = 0,
			      .event = HM_EV_ARRIVAL,
			      .event_job = n - 1,
			      .njobs = n,
			      .jobs = g_sj};
	return ctx;
}

/* Circular distance of b's window start from a's, on period p, in [0, p). */
static double ahead(double a, double b, double p)
{
	double d = fmod(b - a, p);
	return d < 0 ? d + p : d;
}

/*
 * Closed forms of the model for two identical jobs on one link: fully
 * overlapped bursts each get half the link, so each burst takes 2M and the
 * iteration C + 2M; staggered by M they never overlap: C + M.
 */
static void test_model_two_jobs(void **state)
{
	(void)state;
	const double C = 0.3, M = 0.1;
	hm_cm_t *m = NULL;
	hm_err_t err = {0};
	int idx[2] = {0, 1};
	double it[2];

	setup_topo();
	make_job(0, C, M, true);
	make_job(1, C, M, true);
	hm_sched_ctx_t ctx = make_ctx(2);
	assert_int_equal(hm_cm_build(&ctx, NULL, &m, &err), HM_OK);
	assert_true(hm_cm_shares_link(m, 0, 1));
	assert_true(hm_cm_contended(m, 0));
	assert_float_equal(hm_cm_period_s(m, 0), C + M, 1e-12);
	assert_float_equal(hm_cm_comm_s(m, 1), M, 1e-12);

	double together[2] = {0, 0}, staggered[2] = {0, M}, half[2] = {0, M / 2};
	double sd = hm_cm_eval(m, idx, 2, together, NULL, it);
	assert_float_equal(it[0], C + 2 * M, 1e-9);
	assert_float_equal(it[1], C + 2 * M, 1e-9);
	assert_float_equal(sd, (C + 2 * M) / (C + M), 1e-9);
	sd = hm_cm_eval(m, idx, 2, staggered, NULL, it);
	assert_float_equal(it[0], C + M, 1e-9);
	assert_float_equal(sd, 1, 1e-9);
	/* Half overlap: each burst shares M/2 at half speed: grows by M/2. */
	hm_cm_eval(m, idx, 2, half, NULL, it);
	assert_float_equal(it[0], C + 1.5 * M, 1e-9);
	/* Strict priority while overlapped: class 0 unaffected, class 1 absorbs it. */
	int prio[2] = {0, 1};
	hm_cm_eval(m, idx, 2, together, prio, it);
	assert_float_equal(it[0], C + M, 1e-9);
	assert_true(it[1] > C + 2 * M);
	/* A subset of one job is contention-free. */
	assert_float_equal(hm_cm_eval(m, idx, 1, together, NULL, it), 1, 1e-12);
	hm_cm_free(m);
}

/* One decision over jobs 0..n-1 with cfg; returns its wall time in seconds. */
static double run_optimal_cfg(int n, const hm_policy_cfg_t *cfg, hm_sched_ctx_t *ctx)
{
	const hm_policy_ops_t *p = &hm_policy_optimal;
	void *st = NULL;
	hm_err_t err = {0};

	assert_int_equal(p->create(cfg, &st, &err), HM_OK);
	*ctx = make_ctx(n);
	double t0_s = hm_mono_s();
	assert_int_equal(p->decide(st, ctx, &err), HM_OK);
	double wall_s = hm_mono_s() - t0_s;
	p->destroy(st);
	return wall_s;
}

static void run_optimal(int n, double budget_s, hm_sched_ctx_t *ctx)
{
	hm_policy_cfg_t cfg;

	hm_policy_cfg_defaults(&cfg);
	cfg.budget_s = budget_s;
	run_optimal_cfg(n, &cfg, ctx);
}

/*
 * Jobs 0..n-1 of one component, whatever cut the search, are decided
 * completely: all held to valid slots on period_s, or all running free; classes
 * in 0..K-1 either way.
 */
static void assert_complete(int n, double period_s, int K)
{
	bool held = g_sj[0].dec.period_s > 0;

	for (int i = 0; i < n; i++) {
		const hm_decision_t *d = &g_sj[i].dec;
		assert_true(d->prio >= 0 && d->prio < K);
		if (held) {
			assert_float_equal(d->period_s, period_s, 1e-12);
			assert_true(d->shift_s >= 0 && d->shift_s < period_s);
			assert_true(d->guard_s > 0);
		} else {
			assert_float_equal(d->period_s, 0, 0);
			assert_float_equal(d->shift_s, 0, 0);
		}
	}
}

/* Job i runs free (no slot, no delay) in class cls. */
static void assert_free(int i, int cls)
{
	assert_float_equal(g_sj[i].dec.period_s, 0, 0);
	assert_float_equal(g_sj[i].dec.shift_s, 0, 0);
	assert_float_equal(g_sj[i].dec.guard_s, 0, 0);
	assert_int_equal(g_sj[i].dec.prio, cls);
}

/* Two jobs: the best shifts stagger them by at least M on the period C + M. */
static void test_optimal_two(void **state)
{
	(void)state;
	const double C = 0.3, M = 0.1, P = C + M;
	hm_sched_ctx_t ctx;

	setup_topo();
	make_job(0, C, M, true);
	make_job(1, C, M, true);
	make_job(2, C, M, false); /* alone on its link: no decision */
	run_optimal(3, 5, &ctx);
	assert_false(ctx.budget_exhausted);
	for (int i = 0; i < 2; i++) {
		assert_float_equal(g_sj[i].dec.period_s, P, 1e-12);
		assert_true(g_sj[i].dec.guard_s > 0);
	}
	double d = ahead(g_sj[0].dec.shift_s, g_sj[1].dec.shift_s, P);
	assert_true(d >= M - 1e-9 && d <= P - M + 1e-9);
	assert_float_equal(g_sj[2].dec.period_s, 0, 0);
	assert_float_equal(g_sj[2].dec.shift_s, 0, 0);
}

/*
 * Three jobs on one link with the same period 0.4 s and bursts 0.1, 0.1, 0.2:
 * the bursts fill the period exactly, so zero overlap needs a tight packing:
 * going round the period from any burst, each next one starts exactly where
 * the previous ends (the two orders of the circle are the only answers).
 */
static void test_optimal_three_tight(void **state)
{
	(void)state;
	double M[3] = {0.1, 0.1, 0.2}, P = 0.4;
	hm_sched_ctx_t ctx;

	setup_topo();
	for (int i = 0; i < 3; i++)
		make_job(i, P - M[i], M[i], true);
	run_optimal(3, 5, &ctx);
	for (int i = 0; i < 3; i++) {
		/* The burst after job i's starts exactly at its end. */
		double next = P;
		for (int k = 0; k < 3; k++)
			if (k != i) {
				double d = ahead(g_sj[i].dec.shift_s, g_sj[k].dec.shift_s, P);
				next = d < next ? d : next;
			}
		assert_float_equal(next, M[i], 1e-9);
	}
	/* And the model agrees it is contention-free. */
	hm_cm_t *m = NULL;
	hm_err_t err = {0};
	int idx[3] = {0, 1, 2}, prio[3];
	double sh[3];
	for (int i = 0; i < 3; i++) {
		sh[i] = g_sj[i].dec.shift_s;
		prio[i] = g_sj[i].dec.prio;
	}
	assert_int_equal(hm_cm_build(&ctx, NULL, &m, &err), HM_OK);
	assert_float_equal(hm_cm_eval(m, idx, 3, sh, prio, NULL), 1, 1e-9);
	hm_cm_free(m);
}

/*
 * Overloaded link (8 jobs, bursts 0.2 s in a 0.4 s period: twice the link's
 * capacity): no contention-free answer exists, the search cannot finish in
 * 20 ms, so the policy reports the budget and still returns complete
 * decisions (held when the search got far enough to beat running free, which
 * depends on the machine's speed). The same input gives the same decisions
 * (determinism).
 */
static void test_budget_and_determinism(void **state)
{
	(void)state;
	hm_sched_ctx_t ctx;
	hm_decision_t first[8];

	setup_topo();
	for (int i = 0; i < 8; i++)
		make_job(i, 0.2, 0.2, true);
	run_optimal(8, 0.02, &ctx);
	assert_true(ctx.budget_exhausted);
	assert_non_null(strstr(ctx.note, "budget"));
	assert_complete(8, 0.4, 7);
	/* Small overloaded instance, generous budget: the search completes and is
	 * deterministic across runs. */
	for (int i = 0; i < 3; i++)
		make_job(i, 0.2, 0.2, true);
	run_optimal(3, 20, &ctx);
	assert_false(ctx.budget_exhausted);
	for (int i = 0; i < 3; i++)
		first[i] = g_sj[i].dec;
	for (int i = 0; i < 3; i++)
		make_job(i, 0.2, 0.2, true);
	run_optimal(3, 20, &ctx);
	for (int i = 0; i < 3; i++) {
		assert_float_equal(g_sj[i].dec.shift_s, first[i].shift_s, 0);
		assert_int_equal(g_sj[i].dec.prio, first[i].prio);
	}
}

/*
 * Holding not worth it (bursts of 1% of a 1 s period: running free costs
 * under 1%): the jobs run free with strict priority classes, the lightest
 * load first (class 0 is the highest), the two heaviest sharing the last
 * class when only 2 are usable (3 levels, 1 reserved).
 */
static void test_fallback_lightest_first(void **state)
{
	(void)state;
	hm_sched_ctx_t ctx;
	hm_policy_cfg_t cfg;
	const double rate[3] = {0.5, 1.0, 0.25}; /* middle, heaviest, lightest */

	setup_topo();
	for (int i = 0; i < 3; i++) {
		make_job(i, 0.99, 0.01, true);
		set_rate(i, rate[i]);
	}
	make_job(3, 0.99, 0.01, false); /* alone on its links: class 0 */
	run_optimal(4, 5, &ctx);
	assert_false(ctx.budget_exhausted);
	assert_non_null(strstr(ctx.note, "priority classes, lightest first"));
	assert_free(2, 0);
	assert_free(0, 1);
	assert_free(1, 2);
	assert_free(3, 0);

	hm_policy_cfg_defaults(&cfg);
	cfg.prio_levels = 3;
	cfg.reserved_levels = 1;
	for (int i = 0; i < 3; i++) {
		make_job(i, 0.99, 0.01, true);
		set_rate(i, rate[i]);
	}
	run_optimal_cfg(3, &cfg, &ctx);
	assert_free(2, 0);
	assert_free(0, 1);
	assert_free(1, 1);
}

/*
 * The budget bounds the whole decision, the first incumbent included: 10 jobs
 * overloading one link with 100000 shift bins need seconds for one greedy pass
 * alone; with a 50 ms budget the decision returns well within 1 s (the slack
 * is one model evaluation, microseconds here) with every job decided: either
 * all held to valid slots or all running free in classes 0..K-1. A budget of
 * 0 leaves no time for any estimate: lightest-first classes, equal loads
 * ranked by index (the higher first).
 */
static void test_budget_bounds_decision(void **state)
{
	(void)state;
	hm_sched_ctx_t ctx;
	hm_policy_cfg_t cfg;
	const int n = 10, K = 7;

	setup_topo();
	for (int i = 0; i < n; i++)
		make_job(i, 0.3, 0.1, true);
	hm_policy_cfg_defaults(&cfg);
	cfg.budget_s = 0.05;
	cfg.shift_bins = 100000;
	double wall_s = run_optimal_cfg(n, &cfg, &ctx);
	assert_true(wall_s < 1.0);
	assert_true(ctx.budget_exhausted);
	assert_non_null(strstr(ctx.note, "budget exhausted"));
	assert_complete(n, 0.4, K);

	for (int i = 0; i < n; i++)
		make_job(i, 0.3, 0.1, true);
	cfg.budget_s = 0;
	run_optimal_cfg(n, &cfg, &ctx);
	assert_true(ctx.budget_exhausted);
	assert_non_null(strstr(ctx.note, "lightest first"));
	for (int i = 0; i < n; i++)
		assert_free(i, n - 1 - i < K - 1 ? n - 1 - i : K - 1);
}

/*
 * Simulator end to end (2 racks x 2 hosts x 1 GPU, oversubscription 2, see
 * test_sim.c): two identical jobs sharing one uplink. Fair sharing gives
 * C + 2M per iteration; optimal staggers them by M and every iteration after
 * the first settles to exactly C + M (the first may wait up to one period for
 * its slot), so the mean is within P / iterations of C + M.
 */
static void test_sim_optimal(void **state)
{
	(void)state;
	const double C = 0.3, M = 0.1;
	const int iters = 100;
	hm_topo_gen_t g = {.racks = 2,
			   .hosts_per_rack = 2,
			   .gpus_per_host = 1,
			   .nic_bps = 100e9,
			   .oversubscription = 2};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};
	hm_job_t j[2];

	assert_int_equal(hm_topo_generate(&g, &t, &err), HM_OK);
	for (int i = 0; i < 2; i++) {
		memset(&j[i], 0, sizeof(j[i]));
		j[i].id = i;
		j[i].gpus = 2;
		j[i].profile.compute_s = C;
		j[i].profile.nphases = 1;
		j[i].profile.phases[0].coll = HM_COLL_ALLREDUCE_RING;
		j[i].profile.phases[0].bytes = M * 100e9 / 8;
		j[i].iterations = iters;
		char buf[256];
		snprintf(buf, sizeof(buf), "%s,%s", t->hosts[i].name, t->hosts[2 + i].name);
		j[i].nodes = strdup(buf);
	}
	hm_workload_t w = {2, j};
	hm_sim_result_t rf, ro;
	assert_int_equal(hm_sim_run(t, &w, &hm_policy_fair, NULL, NULL, &rf, &err), HM_OK);
	assert_int_equal(hm_sim_run(t, &w, &hm_policy_optimal, NULL, NULL, &ro, &err), HM_OK);
	assert_float_equal(rf.mean_iter_s, C + 2 * M, 1e-9);
	for (int i = 0; i < 2; i++) {
		assert_true(ro.jobs[i].completed);
		assert_true(ro.jobs[i].mean_iter_s >= C + M - 1e-9);
		assert_true(ro.jobs[i].mean_iter_s <= C + M + (C + M) / iters + 1e-9);
		assert_float_equal(ro.jobs[i].mean_comm_s, M, 1e-9);
	}
	assert_true(ro.decisions >= 2);
	assert_true(ro.sched_time_s > 0 && ro.max_decision_s <= ro.sched_time_s);
	assert_false(ro.budget_exhausted);
	hm_sim_result_free(&rf);
	hm_sim_result_free(&ro);
	free(j[0].nodes);
	free(j[1].nodes);
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_model_two_jobs),
	    cmocka_unit_test(test_optimal_two),
	    cmocka_unit_test(test_optimal_three_tight),
	    cmocka_unit_test(test_budget_and_determinism),
	    cmocka_unit_test(test_fallback_lightest_first),
	    cmocka_unit_test(test_budget_bounds_decision),
	    cmocka_unit_test(test_sim_optimal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
