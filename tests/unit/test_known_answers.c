/*
 * Tests with known answers on random small contended instances
 * (random_instances.h; tests/bench/bench_random runs the same instances at
 * full length and prints the study):
 *  - harmonics' mean JCT is never more than 0.5% above fair's (>= 50
 *    contended instances: fair above the bound);
 *  - the bound is below every policy's mean JCT, and optimal's is no more
 *    than 1% above the best other policy's;
 *  - with nothing shared (the same jobs far apart in time) fair's mean JCT is
 *    the bound.
 * About 3 s of CPU on the instances as the bench runs them (60 s jobs).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "random_instances.h"

extern const hm_policy_ops_t hm_policy_fair, hm_policy_optimal, hm_policy_cassini, hm_policy_crux,
    hm_policy_harmonics;

#define N_CONTENDED 50 /* instances for harmonics against fair */
#define N_ALL       6  /* instances for every policy (optimal is the costly one) */
#define BUDGET_S    0.5

/* Instance k; 0 on success. */
static int make(ri_t *ri, unsigned long k)
{
	if (ri_make(ri, k) == 0)
		return 0;
	ri_free(ri);
	return -1;
}

static void run(const ri_t *ri, const hm_policy_ops_t *pol, unsigned long k, hm_sim_result_t *r)
{
	hm_err_t err = {0};
	hm_rc_t rc = ri_run(ri, pol, 1 + k, BUDGET_S, r, &err);

	if (rc != HM_OK)
		fprintf(stderr, "instance %lu, %s: %s\n", k, pol->name, err.msg);
	assert_int_equal(rc, HM_OK);
	assert_int_equal(r->completed, ri->njobs);
}

static void test_harmonics_vs_fair(void **state)
{
	(void)state;
	int contended = 0;
	double worst = 0, worst_job = 0;

	for (unsigned long k = 0; contended < N_CONTENDED && k < 2 * N_CONTENDED; k++) {
		ri_t ri;
		hm_sim_result_t f, h;

		if (make(&ri, k) != 0)
			continue;
		run(&ri, &hm_policy_fair, k, &f);
		if (f.mean_jct_s > f.bound_mean_jct_s * 1.001) {
			run(&ri, &hm_policy_harmonics, k, &h);
			if (h.mean_jct_s > f.mean_jct_s * 1.005)
				fprintf(stderr,
					"instance %lu (%s): harmonics %.3f s, fair %.3f s\n", k,
					ri.what, h.mean_jct_s, f.mean_jct_s);
			assert_true(h.mean_jct_s <= f.mean_jct_s * 1.005);
			worst = fmax(worst, h.mean_jct_s / f.mean_jct_s);
			for (int i = 0; i < ri.njobs; i++)
				worst_job = fmax(worst_job, h.jobs[i].jct_s / f.jobs[i].jct_s);
			contended++;
			hm_sim_result_free(&h);
		}
		hm_sim_result_free(&f);
		ri_free(&ri);
	}
	assert_int_equal(contended, N_CONTENDED);
	printf(
	    "harmonics / fair mean JCT over %d contended instances: worst %.4f; worst job %.3f\n",
	    contended, worst, worst_job);
}

static void test_optimal_and_bound(void **state)
{
	(void)state;
	const hm_policy_ops_t *pol[5] = {&hm_policy_fair, &hm_policy_optimal, &hm_policy_cassini,
					 &hm_policy_crux, &hm_policy_harmonics};
	int done = 0;

	for (unsigned long k = 0; done < N_ALL && k < 4 * N_ALL; k++) {
		ri_t ri;
		hm_sim_result_t r[5];
		double best_other = HUGE_VAL;

		if (make(&ri, k) != 0)
			continue;
		for (int p = 0; p < 5; p++) {
			run(&ri, pol[p], k, &r[p]);
			assert_true(r[p].bound_mean_jct_s > 0);
			assert_true(r[p].mean_jct_s >= r[p].bound_mean_jct_s * (1 - 1e-9));
			if (p != 1)
				best_other = fmin(best_other, r[p].mean_jct_s);
		}
		if (r[1].mean_jct_s > best_other * 1.01)
			fprintf(stderr, "instance %lu (%s): optimal %.3f s, best other %.3f s\n", k,
				ri.what, r[1].mean_jct_s, best_other);
		assert_true(r[1].mean_jct_s <= best_other * 1.01);
		for (int p = 0; p < 5; p++)
			hm_sim_result_free(&r[p]);
		ri_free(&ri);
		done++;
	}
	assert_int_equal(done, N_ALL);
}

/* The same jobs 1,000 s apart share no link: fair's mean JCT is the bound. */
static void test_bound_is_alone(void **state)
{
	(void)state;
	int done = 0;

	for (unsigned long k = 0; done < 10; k++) {
		ri_t ri;
		hm_sim_result_t f;

		if (make(&ri, k) != 0)
			continue;
		for (int i = 0; i < ri.njobs; i++)
			ri.jobs[i].arrival_s = 1000.0 * i;
		run(&ri, &hm_policy_fair, k, &f);
		assert_true(fabs(f.mean_jct_s - f.bound_mean_jct_s) <= 1e-9 * f.mean_jct_s);
		hm_sim_result_free(&f);
		ri_free(&ri);
		done++;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bound_is_alone),
	    cmocka_unit_test(test_harmonics_vs_fair),
	    cmocka_unit_test(test_optimal_and_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
