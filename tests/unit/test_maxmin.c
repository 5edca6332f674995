/* Unit tests for hm_maxmin: textbook max-min cases, coupled phases, strict priority. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_sim.h"

/* Single link of capacity C, N one-flow phases: each gets C / N. */
static void test_single_link(void **state)
{
	(void)state;
	double cap[1] = {12e9};
	int link0[1] = {0}, one[1] = {1};
	hm_mm_phase_t ph[5];
	double rate[5];
	hm_err_t err = {0};

	for (int n = 1; n <= 5; n++) {
		for (int i = 0; i < n; i++)
			ph[i] = (hm_mm_phase_t){1, link0, one, 0};
		assert_int_equal(hm_maxmin(cap, 1, ph, n, rate, &err), HM_OK);
		for (int i = 0; i < n; i++)
			assert_float_equal(rate[i], 12e9 / n, 1);
	}
}

/*
 * Classic example (Bertsekas & Gallager): links A, B of capacity 1; flow 0
 * crosses A and B, flow 1 only A, flow 2 only B, flow 3 only B. B is the
 * bottleneck with 3 flows: flows 0, 2, 3 get 1/3; flow 1 gets A's rest, 2/3.
 */
static void test_classic(void **state)
{
	(void)state;
	double cap[2] = {1, 1};
	int ab[2] = {0, 1}, a[1] = {0}, b[1] = {1}, one2[2] = {1, 1}, one[1] = {1};
	hm_mm_phase_t ph[4] = {{2, ab, one2, 0}, {1, a, one, 0}, {1, b, one, 0}, {1, b, one, 0}};
	double rate[4];
	hm_err_t err = {0};

	assert_int_equal(hm_maxmin(cap, 2, ph, 4, rate, &err), HM_OK);
	assert_float_equal(rate[0], 1.0 / 3, 1e-12);
	assert_float_equal(rate[1], 2.0 / 3, 1e-12);
	assert_float_equal(rate[2], 1.0 / 3, 1e-12);
	assert_float_equal(rate[3], 1.0 / 3, 1e-12);
}

/*
 * Three links with different path lengths (capacities 10, 4, 10): phase 0
 * crosses all three; phase 1 only link 0; phase 2 links 1 and 2; phase 3 link 2.
 * Link 1 saturates first at 2 (phases 0, 2); then link 0 gives phase 1 10-2=8,
 * link 2 gives phase 3 10-2-2=6.
 */
static void test_three_links(void **state)
{
	(void)state;
	double cap[3] = {10, 4, 10};
	int l012[3] = {0, 1, 2}, l0[1] = {0}, l12[2] = {1, 2}, l2[1] = {2};
	int f3[3] = {1, 1, 1}, f2[2] = {1, 1}, f1[1] = {1};
	hm_mm_phase_t ph[4] = {{3, l012, f3, 0}, {1, l0, f1, 0}, {2, l12, f2, 0}, {1, l2, f1, 0}};
	double rate[4];
	hm_err_t err = {0};

	assert_int_equal(hm_maxmin(cap, 3, ph, 4, rate, &err), HM_OK);
	assert_float_equal(rate[0], 2, 1e-9);
	assert_float_equal(rate[1], 8, 1e-9);
	assert_float_equal(rate[2], 2, 1e-9);
	assert_float_equal(rate[3], 6, 1e-9);
}

/*
 * Coupled phase limited by its worst link: phase 0 has 2 flows on link 0
 * (capacity 10) and 1 flow on link 1 (capacity 10); phase 1 has 1 flow on
 * link 0. Link 0: 3 flows -> 10/3 each; phase 0 is frozen by link 0, so its
 * single flow on link 1 uses only 10/3 and phase 2 (alone on link 1) gets the
 * freed 20/3 instead of sharing 5/5.
 */
static void test_coupled(void **state)
{
	(void)state;
	double cap[2] = {10, 10};
	int l01[2] = {0, 1}, f21[2] = {2, 1}, l0[1] = {0}, l1[1] = {1}, f1[1] = {1};
	hm_mm_phase_t ph[3] = {{2, l01, f21, 0}, {1, l0, f1, 0}, {1, l1, f1, 0}};
	double rate[3];
	hm_err_t err = {0};

	assert_int_equal(hm_maxmin(cap, 2, ph, 3, rate, &err), HM_OK);
	assert_float_equal(rate[0], 10.0 / 3, 1e-9);
	assert_float_equal(rate[1], 10.0 / 3, 1e-9);
	assert_float_equal(rate[2], 20.0 / 3, 1e-9);
}

/*
 * Strict priority: class 0 phase on links 0+1 (cap 10 and 4) is limited to 4 by
 * link 1; the class 1 phase on link 0 gets the residual 6 (not starved), while a
 * class 1 phase on the full link 1 gets 0. Within class 1 two phases on link 0
 * share the residual fairly (3 each).
 */
static void test_priority(void **state)
{
	(void)state;
	double cap[2] = {10, 4};
	int l01[2] = {0, 1}, f11[2] = {1, 1}, l0[1] = {0}, l1[1] = {1}, f1[1] = {1};
	hm_mm_phase_t ph[3] = {{1, l0, f1, 1}, {2, l01, f11, 0}, {1, l1, f1, 1}};
	double rate[4];
	hm_err_t err = {0};

	assert_int_equal(hm_maxmin(cap, 2, ph, 3, rate, &err), HM_OK);
	assert_float_equal(rate[1], 4, 1e-9);
	assert_float_equal(rate[0], 6, 1e-9);
	assert_float_equal(rate[2], 0, 1e-9);

	hm_mm_phase_t ph2[4] = {{1, l0, f1, 1}, {2, l01, f11, 0}, {1, l0, f1, 1}, {1, l1, f1, 2}};
	assert_int_equal(hm_maxmin(cap, 2, ph2, 4, rate, &err), HM_OK);
	assert_float_equal(rate[0], 3, 1e-9);
	assert_float_equal(rate[2], 3, 1e-9);
	assert_float_equal(rate[3], 0, 1e-9);
}

/* Bad input: unknown link and non-positive capacity are rejected with the value named. */
static void test_bad_input(void **state)
{
	(void)state;
	double cap[1] = {0};
	int l5[1] = {5}, l0[1] = {0}, f1[1] = {1};
	hm_mm_phase_t ph[1] = {{1, l5, f1, 0}};
	double rate[1];
	hm_err_t err = {0};

	assert_int_equal(hm_maxmin(cap, 1, ph, 1, rate, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "link 5"));
	ph[0].links = l0;
	assert_int_equal(hm_maxmin(cap, 1, ph, 1, rate, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "capacity"));
	assert_int_equal(hm_maxmin(cap, 1, NULL, 0, NULL, &err), HM_OK);
}

/*
 * Random instances, checked by the definition rather than known answers: the
 * rates fit every link and every phase has a bottleneck, a full link where no
 * phase of its class goes faster and no lower class gets bandwidth. 60 links
 * (the scan fill) and 600 (the heap fill), one class and three.
 */
static void check_random(int nl, int nph, int classes, uint64_t seed)
{
	double *cap = malloc(sizeof(double) * (size_t)nl),
	       *rate = malloc(sizeof(double) * (size_t)nph);
	double *load = calloc((size_t)nl, sizeof(double));
	int(*links)[8] = malloc(sizeof(*links) * (size_t)nph),
	(*flows)[8] = malloc(sizeof(*flows) * (size_t)nph);
	hm_mm_phase_t *ph = malloc(sizeof(*ph) * (size_t)nph);
	hm_err_t err = {0};
	uint64_t x = seed;
#define RND(n) ((int)((x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 33) % (n))

	assert_non_null(cap);
	assert_non_null(rate);
	assert_non_null(load);
	assert_non_null(links);
	assert_non_null(flows);
	assert_non_null(ph);
	for (int l = 0; l < nl; l++)
		cap[l] = 1e9 * (1 + RND(4));
	for (int i = 0; i < nph; i++) {
		int n = 1 + RND(8), k = 0, base = RND(nl);
		for (int j = 0; j < n; j++) { /* ascending, distinct, near base */
			int l = (base + j * (1 + RND(3))) % nl;
			bool dup = false;
			for (int q = 0; q < k; q++)
				dup |= links[i][q] == l;
			if (!dup) {
				links[i][k] = l;
				flows[i][k++] = 1 + RND(3);
			}
		}
		ph[i] = (hm_mm_phase_t){k, links[i], flows[i], RND(classes)};
	}
#undef RND
	assert_int_equal(hm_maxmin(cap, nl, ph, nph, rate, &err), HM_OK);
	for (int i = 0; i < nph; i++)
		for (int k = 0; k < ph[i].nl; k++)
			load[ph[i].links[k]] += ph[i].flows[k] * rate[i];
	for (int l = 0; l < nl; l++)
		assert_true(load[l] <= cap[l] * (1 + 1e-9));
	for (int i = 0; i < nph; i++) {
		bool found = false;
		assert_true(rate[i] >= 0 && rate[i] < HUGE_VAL); /* 0: a lower class starved */
		for (int k = 0; k < ph[i].nl && !found; k++) {
			int l = ph[i].links[k];
			bool ok = load[l] >= cap[l] * (1 - 1e-9);
			for (int o = 0; o < nph && ok; o++)
				for (int q = 0; q < ph[o].nl && ok; q++) {
					if (ph[o].links[q] != l)
						continue;
					if (ph[o].prio == ph[i].prio)
						ok = rate[o] <= rate[i] * (1 + 1e-9);
					else if (ph[o].prio > ph[i].prio)
						ok = rate[o] <= cap[l] * 1e-9;
				}
			found = ok;
		}
		assert_true(found);
	}
	free(cap);
	free(rate);
	free(load);
	free(links);
	free(flows);
	free(ph);
}

static void test_random(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 5; seed++) {
		check_random(60, 40, 1, seed);
		check_random(60, 40, 3, seed);
		check_random(600, 400, 1, seed);
		check_random(600, 400, 3, seed);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_single_link), cmocka_unit_test(test_classic),
	    cmocka_unit_test(test_three_links), cmocka_unit_test(test_coupled),
	    cmocka_unit_test(test_priority),    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
