/*
 * Random small instances through the simulator: harmonics is never worse than
 * fair sharing beyond the jitter's noise, and every policy gives the same
 * result twice for the same seed (optimal only when its budget did not cut a
 * decision: a wall-clock budget is not reproducible).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "policies_fixture.h"

extern const hm_policy_ops_t hm_policy_cassini, hm_policy_crux, hm_policy_harmonics;
extern const hm_policy_ops_t hm_policy_optimal;

#define INSTANCES 12
#define JITTER    0.03
/* Mean JCT noise between policies at this jitter on ~150 iterations: 3%. */
#define TOLERANCE 1.03

static uint64_t rs;
static double urand(void)
{
	rs = rs * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rs >> 11) / 9007199254740992.0;
}

/* 2-4 jobs of 2 GPUs on distinct random hosts of 2 racks x 3 hosts x 2 GPUs. */
static int make_jobs(const hm_topo_t *t, hm_job_t *j, int inst)
{
	int freeg[6] = {2, 2, 2, 2, 2, 2}, n;

	rs = 0x1234 + 977 * (uint64_t)inst;
	n = 2 + (int)(urand() * 3);
	for (int i = 0; i < n; i++) {
		int h[2];
		do
			h[0] = (int)(urand() * 6);
		while (freeg[h[0]] == 0);
		do
			h[1] = (int)(urand() * 6);
		while (h[1] == h[0] || freeg[h[1]] == 0);
		freeg[h[0]]--;
		freeg[h[1]]--;
		double c = 0.1 + 0.4 * urand(), m = 0.02 + 0.18 * urand();
		fx_job(&j[i], i, t, h, 2, c, m * 100e9 / 8, 150, 2.0 * urand());
	}
	return n;
}

static void test_harmonics_not_worse(void **state)
{
	(void)state;
	hm_topo_t *t = fx_topo(2, 3, 2, 2);

	for (int inst = 0; inst < INSTANCES; inst++) {
		hm_job_t j[4];
		hm_sim_result_t rf, rh;
		int n = make_jobs(t, j, inst);

		assert_int_equal(fx_run(t, j, n, &hm_policy_fair, JITTER, 7, 0, &rf), HM_OK);
		assert_int_equal(fx_run(t, j, n, &hm_policy_harmonics, JITTER, 7, 2, &rh), HM_OK);
		assert_int_equal(rh.completed, n);
		if (rh.mean_jct_s > rf.mean_jct_s * TOLERANCE)
			fprintf(stderr, "instance %d: harmonics %.3f fair %.3f\n", inst,
				rh.mean_jct_s, rf.mean_jct_s);
		assert_true(rh.mean_jct_s <= rf.mean_jct_s * TOLERANCE);
		hm_sim_result_free(&rf);
		hm_sim_result_free(&rh);
		fx_free_jobs(j, n);
	}
	hm_topo_free(t);
}

static void test_deterministic(void **state)
{
	(void)state;
	hm_topo_t *t = fx_topo(2, 3, 2, 2);
	const hm_policy_ops_t *pols[5] = {&hm_policy_fair, &hm_policy_optimal, &hm_policy_cassini,
					  &hm_policy_crux, &hm_policy_harmonics};

	/* Every registered policy is one of the five and all five are registered. */
	assert_int_equal(hm_policy_count(), 5);
	for (int inst = 0; inst < 3; inst++) {
		hm_job_t j[4];
		int n = make_jobs(t, j, inst);
		for (int p = 0; p < 5; p++) {
			hm_sim_result_t a, b;
			assert_int_equal(fx_run(t, j, n, pols[p], JITTER, 11, 2, &a), HM_OK);
			assert_int_equal(fx_run(t, j, n, pols[p], JITTER, 11, 2, &b), HM_OK);
			if (!a.budget_exhausted && !b.budget_exhausted) {
				assert_true(a.mean_jct_s == b.mean_jct_s);
				assert_true(a.p99_jct_s == b.p99_jct_s);
				assert_true(a.mean_comm_s == b.mean_comm_s);
				for (int i = 0; i < n; i++)
					assert_true(a.jobs[i].end_s == b.jobs[i].end_s);
			}
			hm_sim_result_free(&a);
			hm_sim_result_free(&b);
		}
		fx_free_jobs(j, n);
	}
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_harmonics_not_worse),
	    cmocka_unit_test(test_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
