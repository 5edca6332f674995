/*
 * Unit tests for Cassini: the BFS shift formula on a three-job chain and on a
 * loop, the unified circle on two complementary jobs, and the simulator case
 * of two identical jobs sharing an uplink (staggered to zero overlap by
 * cassini and by optimal).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>

#include "hm_cassini.h"
#include "policies_fixture.h"

extern const hm_policy_ops_t hm_policy_cassini;
extern const hm_policy_ops_t hm_policy_optimal;

/*
 * Chain: job 0 -(link 0)- job 1 -(link 1)- job 2, periods 1, 1, 2 s. Rotations:
 * t_0^0 = 0.2, t_1^0 = 0.5, t_1^1 = 0.1, t_2^1 = 0.7. From root 0 (t_0 = 0):
 * t_1 = (0 - 0.2 + 0.5) mod 1 = 0.3; t_2 = (0.3 - 0.1 + 0.7) mod 2 = 0.9.
 */
static void test_bfs_chain(void **state)
{
	(void)state;
	double T[3] = {1, 1, 2}, t[3];
	int comp[3], roots[3] = {0, 1, 2};
	hm_cassini_edge_t e[4] = {{0, 0, 0.2}, {1, 0, 0.5}, {1, 1, 0.1}, {2, 1, 0.7}};

	assert_int_equal(hm_cassini_propagate(3, T, 2, 4, e, roots, 1e-9, t, comp), 0);
	assert_float_equal(t[0], 0.0, 1e-12);
	assert_float_equal(t[1], 0.3, 1e-12);
	assert_float_equal(t[2], 0.9, 1e-12);
	for (int i = 0; i < 3; i++)
		assert_int_equal(comp[i], 0);
	/* Another root: the same relative shifts (0 -> 1 -> 2 up to the root's phase). */
	int roots2[3] = {2, 0, 1};
	assert_int_equal(hm_cassini_propagate(3, T, 2, 4, e, roots2, 1e-9, t, comp), 0);
	assert_float_equal(t[2], 0.0, 1e-12);
	assert_float_equal(t[1], fmod(0 - 0.7 + 0.1 + 1, 1), 1e-12); /* 0.4 */
	assert_int_equal(comp[0], 2);
}

/*
 * Loop: add link 2 joining jobs 0 and 2. BFS reaches job 2 first over link 2
 * (t_2 = 0 - 0 + 0.5 = 0.5); the chain through job 1 asks for 0.9: a conflict,
 * the first assignment stays. A consistent loop (t_2^2 = 0.9) has none.
 */
static void test_bfs_loop(void **state)
{
	(void)state;
	double T[3] = {1, 1, 2}, t[3];
	int comp[3], roots[3] = {0, 1, 2};
	hm_cassini_edge_t e[6] = {{0, 0, 0.2}, {0, 2, 0.0}, {1, 0, 0.5},
				  {1, 1, 0.1}, {2, 1, 0.7}, {2, 2, 0.5}};

	assert_int_equal(hm_cassini_propagate(3, T, 3, 6, e, roots, 1e-9, t, comp), 1);
	assert_float_equal(t[2], 0.5, 1e-12);
	assert_float_equal(t[1], 0.3, 1e-12);
	e[5].rot_s = 0.9;
	assert_int_equal(hm_cassini_propagate(3, T, 3, 6, e, roots, 1e-9, t, comp), 0);
	assert_float_equal(t[2], 0.9, 1e-12);
	/* A job with no edge is in no component. */
	double T4[4] = {1, 1, 2, 1}, t4[4];
	int comp4[4], roots4[4] = {0, 1, 2, 3};
	assert_int_equal(hm_cassini_propagate(4, T4, 3, 6, e, roots4, 1e-9, t4, comp4), 0);
	assert_int_equal(comp4[3], -1);
}

/* Two complementary jobs (burst half the period, full rate): score 1, no overlap. */
static void test_link_complementary(void **state)
{
	(void)state;
	double T[2] = {0.4, 0.4}, b[2] = {0.2, 0.2}, d[2] = {1, 1}, rot[2];
	double zero[2] = {0, 0};

	assert_float_equal(hm_cassini_score(2, T, b, d, zero), 0.5, 1e-9);
	assert_float_equal(hm_cassini_link(2, T, b, d, rot), 1.0, 1e-9);
	assert_float_equal(rot[0], 0, 1e-12);
	assert_float_equal(fabs(rot[1] - 0.2), 0, 0.4 / 360 + 1e-9);
	/* Different periods: the unified circle is their LCM (0.4 and 0.8 s). */
	double T2[2] = {0.4, 0.8}, b2[2] = {0.1, 0.2};
	assert_float_equal(hm_cassini_link(2, T2, b2, d, rot), 1.0, 1e-9);
	/* Overloaded link: no rotation removes all excess. */
	double b3[2] = {0.3, 0.3};
	assert_true(hm_cassini_link(2, T, b3, d, rot) < 1.0);
}

/*
 * Simulator: two identical jobs (C = 0.3 s, M = 0.1 s alone) share the ToR
 * uplinks; started together they overlap forever under fair sharing (C + 2M).
 * Cassini delays the second one by a shift that puts the bursts apart: every
 * burst alone, M; so does optimal.
 */
static void test_sim_stagger(void **state)
{
	(void)state;
	hm_topo_t *t = fx_topo(2, 2, 1, 2);
	hm_job_t j[2];
	int ha[2] = {0, 2}, hb[2] = {1, 3};
	const hm_policy_ops_t *pols[2] = {&hm_policy_cassini, &hm_policy_optimal};

	fx_job(&j[0], 0, t, ha, 2, 0.3, 1.25e9, 200, 0);
	fx_job(&j[1], 1, t, hb, 2, 0.3, 1.25e9, 200, 0);
	for (int p = 0; p < 2; p++) {
		hm_sim_result_t r;
		assert_int_equal(fx_run(t, j, 2, pols[p], 0, 1, 0, &r), HM_OK);
		assert_int_equal(r.completed, 2);
		for (int i = 0; i < 2; i++) {
			if (r.jobs[i].mean_comm_s > 0.1 * 1.01)
				fprintf(stderr, "%s: job %d comm %.4f\n", pols[p]->name, i,
					r.jobs[i].mean_comm_s);
			assert_true(r.jobs[i].mean_comm_s <= 0.1 * 1.01);
		}
		hm_sim_result_free(&r);
	}
	fx_free_jobs(j, 2);
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bfs_chain),
	    cmocka_unit_test(test_bfs_loop),
	    cmocka_unit_test(test_link_complementary),
	    cmocka_unit_test(test_sim_stagger),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
