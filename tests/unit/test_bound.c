/*
 * The capacity bound (hm_bound.h) on hand-computable cases: SRPT on one group,
 * jobs that share nothing (the bound is their alone completions), a job that
 * must wait for nothing, link groups of a Clos with equal-cost uplinks, and
 * the simulator's per-run bound below every policy on the two-job testbed and
 * equal to the alone time where the jobs share no link.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "hm_bound.h"
#include "policies_fixture.h"

/* One group of capacity 1 bit/s: work in seconds equals bits. */
static void test_srpt_one_group(void **state)
{
	(void)state;
	double cap = 1, sum = -1;
	int g = 0;
	double w1 = 1, w2 = 1;
	hm_bound_job_t j[2] = {
	    {.release_s = 0, .work_s = 0.5, .ngroups = 1, .group = &g, .bits = &w1},
	    {.release_s = 0, .work_s = 0.5, .ngroups = 1, .group = &g, .bits = &w2},
	};
	hm_err_t err = {0};

	/* The link needs 1 s per job: completions no earlier than 1 and 2. */
	assert_int_equal(hm_bound_sum_completion(&cap, 1, j, 2, &sum, &err), HM_OK);
	assert_true(fabs(sum - 3.0) < 1e-12);
	/* Running time dominates: each job alone (3 s) is the bound, 3 + 3. */
	j[0].work_s = j[1].work_s = 3;
	assert_int_equal(hm_bound_sum_completion(&cap, 1, j, 2, &sum, &err), HM_OK);
	assert_true(fabs(sum - 6.0) < 1e-12);
	/* Mixed: SRPT ends the link work at 0.5 and 1.5 s, the running times at
	 * 1 and 4 s: the first completion no earlier than 1, the second than 4. */
	w1 = 0.5;
	j[0].work_s = 1;
	j[1].work_s = 4;
	assert_int_equal(hm_bound_sum_completion(&cap, 1, j, 2, &sum, &err), HM_OK);
	assert_true(fabs(sum - (1.0 + 4.0)) < 1e-12);
	/* Releases: the second job arrives when the first is done. */
	w1 = 2;
	w2 = 2;
	j[0].work_s = j[1].work_s = 0.1;
	j[1].release_s = 10;
	assert_int_equal(hm_bound_sum_completion(&cap, 1, j, 2, &sum, &err), HM_OK);
	assert_true(fabs(sum - (2.0 + 12.0)) < 1e-12);
	/* A bad group id is refused with the id in the message. */
	g = 3;
	assert_int_equal(hm_bound_sum_completion(&cap, 1, j, 2, &sum, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "group 3"));
}

/* Jobs on different groups never wait for each other: the sum of e_j. */
static void test_disjoint(void **state)
{
	(void)state;
	double cap[2] = {1, 1}, w = 5, sum = 0;
	int g0 = 0, g1 = 1;
	hm_bound_job_t j[2] = {
	    {.release_s = 1, .work_s = 2, .ngroups = 1, .group = &g0, .bits = &w},
	    {.release_s = 0, .work_s = 7, .ngroups = 1, .group = &g1, .bits = &w},
	};
	hm_err_t err = {0};

	assert_int_equal(hm_bound_sum_completion(cap, 2, j, 2, &sum, &err), HM_OK);
	assert_true(fabs(sum - (3.0 + 7.0)) < 1e-12);
}

/* A Clos with 2 aggregation switches per pod: a ToR's two uplinks are one
 * group (paths choose between them), NIC links are groups of their own. */
static void test_link_groups(void **state)
{
	(void)state;
	hm_topo_gen_t gen = {0};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};
	int *group = NULL, ng = 0, seen_up = 0;
	double *cap = NULL;

	gen.racks = 4;
	gen.hosts_per_rack = 2;
	gen.gpus_per_host = 1;
	gen.nic_bps = 100e9;
	gen.oversubscription = 2;
	gen.racks_per_pod = 2;
	gen.aggs_per_pod = 2;
	gen.cores = 2;
	assert_int_equal(hm_topo_generate(&gen, &t, &err), HM_OK);
	assert_int_equal(hm_bound_link_groups(t, &group, &cap, &ng, &err), HM_OK);
	for (int l = 0; l < t->nlinks; l++) {
		const hm_link_t *k = &t->links[l];
		if (k->kind == HM_LINK_NIC_UP || k->kind == HM_LINK_NIC_DOWN) {
			assert_true(cap[group[l]] == k->capacity_bps);
			continue;
		}
		if (k->kind == HM_LINK_SW_UP && t->switches[k->lower].level == 0) {
			/* Both uplinks of this ToR, nothing else: 2 x 50 Gbit/s. */
			assert_true(fabs(cap[group[l]] - 2 * k->capacity_bps) < 1);
			for (int m = 0; m < t->nlinks; m++)
				if (group[m] == group[l])
					assert_int_equal(t->links[m].lower, k->lower);
			seen_up++;
		}
	}
	assert_int_equal(seen_up, 8);
	free(group);
	free(cap);
	hm_topo_free(t);
}

/*
 * The two-job testbed of test_sim (one shared 100 Gbit/s uplink per
 * direction): every policy's mean JCT is at least the bound. With nothing
 * shared (the second job on one host), fair equals the bound exactly.
 */
static void test_sim_bound(void **state)
{
	(void)state;
	extern const hm_policy_ops_t hm_policy_optimal, hm_policy_cassini, hm_policy_crux,
	    hm_policy_harmonics;
	const hm_policy_ops_t *pols[5] = {&hm_policy_fair, &hm_policy_optimal, &hm_policy_cassini,
					  &hm_policy_crux, &hm_policy_harmonics};
	hm_topo_t *t = fx_topo(2, 2, 1, 2);
	int ha[2] = {0, 2}, hb[2] = {1, 3}, hc[1] = {1};
	hm_job_t j[2];
	hm_sim_result_t r;

	for (double jit = 0; jit <= 0.05; jit += 0.05) {
		fx_job(&j[0], 0, t, ha, 2, 0.3, 1.25e9, 200, 0);
		fx_job(&j[1], 1, t, hb, 2, 0.3, 1.25e9, 200, 0);
		for (int p = 0; p < 5; p++) {
			assert_int_equal(fx_run(t, j, 2, pols[p], jit, 3, 2, &r), HM_OK);
			assert_int_equal(r.completed, 2);
			assert_true(r.bound_mean_jct_s > 0);
			assert_true(r.mean_jct_s >= r.bound_mean_jct_s * (1 - 1e-9));
			hm_sim_result_free(&r);
		}
		fx_free_jobs(j, 2);
		fx_job(&j[0], 0, t, ha, 2, 0.3, 1.25e9, 200, 0);
		fx_job(&j[1], 1, t, hc, 1, 0.3, 1.25e9, 200, 5);
		assert_int_equal(fx_run(t, j, 2, &hm_policy_fair, jit, 3, 2, &r), HM_OK);
		assert_true(fabs(r.mean_jct_s - r.bound_mean_jct_s) <= 1e-9 * r.mean_jct_s);
		hm_sim_result_free(&r);
		fx_free_jobs(j, 2);
	}
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_srpt_one_group),
	    cmocka_unit_test(test_disjoint),
	    cmocka_unit_test(test_link_groups),
	    cmocka_unit_test(test_sim_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
