/*
 * The measured burst into the coordinator's model (hm_coord_burst.c): a job
 * declaring a tenth of the bytes its collectives move is modelled with its
 * measured burst once enough bursts are in (the policy sees the longer burst
 * in the traffic it is given), and windows that cannot be a burst leave the
 * declared bytes alone.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_coord_nodes.h"

#define T0_S 2000000000.0

/* Every job held in a 400 ms slot; records the burst alone the policy is given for job 100. */
static double seen_burst_s;

static hm_rc_t burst_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	(void)st;
	(void)err;
	for (int k = 0; k < ctx->njobs; k++) {
		ctx->jobs[k].dec =
		    (hm_decision_t){.period_s = 0.4, .origin_s = 1000.0, .guard_s = 0.002};
		if (ctx->jobs[k].id == 100)
			seen_burst_s = hm_traffic_alone_burst_s(&ctx->jobs[k].job->profile,
								ctx->jobs[k].traffic);
	}
	return HM_OK;
}

static const hm_policy_ops_t burst_policy = {
    .name = "script", .decide = burst_decide, .uses_epochs = true};

static hm_coord_t *make(void)
{
	hm_conf_t conf;
	hm_coord_t *c;

	fixture_conf(&conf);
	c = fixture_coord_job100(&conf, &burst_policy, "iter=2s,comm=10%,bytes=100MB");
	assert_non_null(c);
	return c;
}

/* Both nodes of job 100 report a window of n bursts of burst_us each, paced. */
static void beat(hm_coord_t *c, double now_s, uint64_t n, double iter_us, double burst_us)
{
	static const char *nodes[] = {"n1", "n5"};
	hm_aw_node_state_t st;
	hm_err_t err = {0};

	for (int k = 0; k < 2; k++) {
		memset(&st, 0, sizeof(st));
		snprintf(st.node, sizeof(st.node), "%s", nodes[k]);
		st.njobs = 1;
		st.jobs[0] = (hm_aw_job_state_t){
		    .job_id = 100,
		    .steps = 1,
		    .ranks = 1,
		    .applied_epoch = 1,
		    .has_meas = true,
		    .meas = {
			.samples = n, .iter_us = iter_us, .compute_us = -1, .burst_us = burst_us}};
		assert_int_equal(hm_coord_node_beat(c, &st, now_s, &err), HM_OK);
	}
}

static void test_ten_times_the_declared_bytes(void **state)
{
	hm_coord_t *c = make();
	hm_coord_explain_t *ex;
	double declared_s, real_us;

	(void)state;
	fixture_decide_at(c, T0_S);
	declared_s = seen_burst_s;
	assert_true(declared_s > 0);
	real_us = 10 * declared_s * 1e6;
	/* 10 bursts (5 a node): fewer than HM_BURST_MIN_SAMPLES, declared bytes stay. */
	beat(c, T0_S + 1, 5, 2e6 + real_us, real_us);
	fixture_decide_at(c, T0_S + 11);
	assert_true(fabs(seen_burst_s - declared_s) < 1e-12);
	/* 20: the policy is given the measured burst (equivalent bytes). */
	beat(c, T0_S + 12, 5, 2e6 + real_us, real_us);
	fixture_decide_at(c, T0_S + 22);
	assert_true(fabs(seen_burst_s / declared_s - 10) < 1e-6);
	/* It stays while the job runs as measured. */
	beat(c, T0_S + 23, 50, 2e6 + real_us, real_us);
	fixture_decide_at(c, T0_S + 33);
	assert_true(fabs(seen_burst_s / declared_s - 10) < 1e-6);
	/* harmonicsctl job 100 --explain shows both, the factor and the bursts behind it. */
	ex = malloc(sizeof(*ex));
	assert_non_null(ex);
	assert_int_equal(hm_coord_explain(c, 100, ex), HM_OK);
	assert_true(fabs(ex->burst_declared_us - declared_s * 1e6) < 1e-3);
	assert_true(fabs(ex->burst_model_us - real_us) < 1e-3);
	assert_true(fabs(ex->burst_factor - 10) < 1e-6);
	assert_true(ex->burst_samples == 120);
	free(ex);
	hm_coord_destroy(c);
}

/* A burst longer than its iteration, or of 0 us: refused, the declared bytes stay. */
static void test_impossible_windows_refused(void **state)
{
	hm_coord_t *c = make();
	double declared_s;

	(void)state;
	fixture_decide_at(c, T0_S);
	declared_s = seen_burst_s;
	for (int k = 1; k <= 4; k++) {
		beat(c, T0_S + 11 * k - 10, 50, 100e3, k % 2 ? 200e3 : 0);
		fixture_decide_at(c, T0_S + 11 * k);
	}
	assert_true(fabs(seen_burst_s - declared_s) < 1e-12);
	hm_coord_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ten_times_the_declared_bytes),
	    cmocka_unit_test(test_impossible_windows_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
