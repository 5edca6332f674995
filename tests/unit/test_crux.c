/*
 * Unit tests for Crux: the k correction on the paper's two-job example and the
 * DAG priority compression (order kept on every shared link, near-optimal cut).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_prio.h"

/*
 * Paper's example: equal intensity (compute = communication), iterations 2 s
 * and 1 s on one bottleneck. Reference (most traffic) first: the 1 s job gets
 * one iteration per 2 s, utilisation (1/2 + 0.5/2) / 2 = 37.5%. Short job
 * first: the long job needs 3 s, (1/3 + 1/2) / 2 = 41.7%. The short job loses
 * 0.5 - 0.25 = 0.25 when second, the long one 0.5 - 1/3 = 1/6: k = 1.5.
 */
static void test_k_paper_example(void **state)
{
	(void)state;
	double comp[2] = {1.0, 0.5}, comm[2] = {1.0, 0.5}, u[2];

	hm_prio_two_job_util(comp, comm, 0, u);
	assert_float_equal((u[0] + u[1]) / 2, 0.375, 2e-3);
	hm_prio_two_job_util(comp, comm, 1, u);
	assert_float_equal((u[0] + u[1]) / 2, 0.41667, 2e-3);
	assert_float_equal(hm_prio_k(1.0, 1.0, 1, 0.5, 0.5, 1), 1.5, 0.02);
	/* The same job against itself loses the same either way: k = 1. */
	assert_float_equal(hm_prio_k(1.0, 1.0, 1, 1.0, 1.0, 1), 1.0, 0.02);
	/* No contention possible (tiny burst): clamped, never NaN. */
	double k = hm_prio_k(1.0, 0.0, 1, 0.5, 0.5, 1);
	assert_true(k >= 0.1 && k <= 10);
}

static uint64_t rng_state = 12345;
static double urand(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Exhaustive best cut over all order-keeping level assignments (tiny n). */
static double brute(int n, const double *prio, int ne, const int *a, const int *b, const double *w,
		    int K)
{
	int lv[8];
	long total = 1;
	double best = 0;

	for (int i = 0; i < n; i++)
		total *= K;
	for (long code = 0; code < total; code++) {
		long c = code;
		double cut = 0;
		int ok = 1;
		for (int i = 0; i < n; i++) {
			lv[i] = (int)(c % K);
			c /= K;
		}
		for (int e = 0; e < ne && ok; e++) {
			int hi = a[e], lo = b[e];
			if (prio[lo] > prio[hi] || (prio[lo] == prio[hi] && lo < hi)) {
				hi = b[e];
				lo = a[e];
			}
			if (lv[hi] > lv[lo])
				ok = 0;
			else if (lv[hi] < lv[lo])
				cut += w[e];
		}
		if (ok && cut > best)
			best = cut;
	}
	return best;
}

/*
 * The two-job run event by event, as written first (fmin, arrays, every event
 * simulated): hm_prio_two_job_util replays a repeating cycle instead and must
 * give the same bits.
 */
static void plain_util(const double comp_s[2], const double comm_s[2], int first, double util[2])
{
	double rem[2] = {comp_s[0], comp_s[1]}, busy[2] = {0, 0}, t = 0;
	int comm[2] = {0, 0};
	double Tmax = fmax(comp_s[0] + comm_s[0], comp_s[1] + comm_s[1]);
	double warm = 10 * Tmax, end = warm + 100 * Tmax;
	long ev = 0;

	while (t < end && ev < 200000) {
		int tx = comm[first] ? first : comm[1 - first] ? 1 - first : -1;
		double dt = INFINITY;
		for (int i = 0; i < 2; i++)
			if (!comm[i] || i == tx)
				dt = fmin(dt, rem[i]);
		if (!isfinite(dt))
			break;
		if (t < warm && t + dt > warm)
			dt = warm - t;
		for (int i = 0; i < 2; i++) {
			if (!comm[i]) {
				rem[i] -= dt;
				if (t >= warm)
					busy[i] += dt;
			} else if (i == tx) {
				rem[i] -= dt;
			}
		}
		t += dt;
		for (int i = 0; i < 2; i++)
			if (rem[i] <= 1e-12 * (1 + Tmax)) {
				comm[i] = !comm[i];
				rem[i] = comm[i] ? comm_s[i] : comp_s[i];
				if (rem[i] <= 0) {
					comm[i] = 0;
					rem[i] = comp_s[i];
				}
			}
		ev++;
	}
	for (int i = 0; i < 2; i++)
		util[i] = t > warm ? busy[i] / (t - warm) : 0;
}

static void test_two_job_replay(void **state)
{
	(void)state;
	for (int inst = 0; inst < 400; inst++) {
		double comp[2] = {0.01 + 2 * urand(), 0.01 + 2 * urand()};
		double comm[2] = {urand(), urand()};
		double u[2], v[2];
		if (inst % 4 == 1) { /* harmonic shapes: short cycles */
			comp[1] = comp[0] / (1 + inst % 3);
			comm[1] = comm[0] / (1 + inst % 3);
		} else if (inst % 4 == 2) { /* nothing to send */
			comm[inst % 2] = 0;
		}
		for (int first = 0; first < 2; first++) {
			hm_prio_two_job_util(comp, comm, first, u);
			plain_util(comp, comm, first, v);
			assert_memory_equal(u, v, sizeof(u));
		}
	}
}

/* The memo returns hm_prio_k's value for every shape, hit or miss, also past
 * the shapes it was sized for (it must not fill up and probe forever). */
static void test_kmemo(void **state)
{
	(void)state;
	hm_prio_kmemo_t *m = hm_prio_kmemo_new(1); /* room for 8 shapes */
	double k[40];

	assert_non_null(m);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 40; i++) {
			double comp = 0.1 + 0.05 * i, comm = 0.3 - 0.005 * i;
			double v = hm_prio_kmemo_k(m, 1.0, 1.0, 8, comp, comm, 1 + i % 4);

			assert_float_equal(v, hm_prio_k(1.0, 1.0, 8, comp, comm, 1 + i % 4), 0);
			if (round == 0)
				k[i] = v;
			else
				assert_float_equal(v, k[i], 0);
		}
	hm_prio_kmemo_free(m);
	/* No memo (out of memory): computed each time. */
	assert_float_equal(hm_prio_kmemo_k(NULL, 1.0, 1.0, 8, 0.5, 0.5, 4),
			   hm_prio_k(1.0, 1.0, 8, 0.5, 0.5, 4), 0);
}

/* Never a higher-priority job below a lower one it shares a link with. */
static void test_compression_order(void **state)
{
	(void)state;
	for (int inst = 0; inst < 200; inst++) {
		int n = 2 + (int)(urand() * 30), ne = 0, K = 1 + (int)(urand() * 7);
		int a[600], b[600], level[40], cs = 0;
		double prio[40], w[600];

		for (int i = 0; i < n; i++)
			prio[i] = (double)(int)(urand() * 6); /* ties on purpose */
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				if (urand() < 0.3 && ne < 600) {
					a[ne] = i;
					b[ne] = j;
					w[ne] = 0.1 + urand();
					ne++;
				}
		double cut =
		    hm_prio_compress(n, prio, ne, a, b, w, K, 10, (uint64_t)inst, 0, level, &cs);
		assert_true(cut >= 0);
		assert_int_equal(cs, 0);
		for (int i = 0; i < n; i++) {
			assert_true(level[i] >= 0);
			assert_true(level[i] < K);
		}
		for (int e = 0; e < ne; e++) {
			int hi = a[e], lo = b[e];
			if (prio[lo] > prio[hi] || (prio[lo] == prio[hi] && lo < hi)) {
				hi = b[e];
				lo = a[e];
			}
			assert_true(level[hi] <= level[lo]);
		}
	}
}

/* With enough levels every edge is cut; with few, near the exhaustive optimum. */
static void test_compression_quality(void **state)
{
	(void)state;
	double worst = 1;

	for (int inst = 0; inst < 60; inst++) {
		int n = 3 + (int)(urand() * 5), ne = 0, K = 2 + (int)(urand() * 2), level[8];
		int a[40], b[40];
		double prio[8], w[40], total = 0;

		for (int i = 0; i < n; i++)
			prio[i] = urand();
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				if (urand() < 0.5) {
					a[ne] = i;
					b[ne] = j;
					w[ne] = 0.1 + urand();
					total += w[ne];
					ne++;
				}
		double best = brute(n, prio, ne, a, b, w, K);
		double got =
		    hm_prio_compress(n, prio, ne, a, b, w, K, 10, (uint64_t)inst, 0, level, NULL);
		assert_true(got <= best + 1e-9);
		if (best > 0 && got / best < worst)
			worst = got / best;
		/* n levels: a total order, every edge cut. */
		got = hm_prio_compress(n, prio, ne, a, b, w, n, 10, (uint64_t)inst, 0, level, NULL);
		assert_float_equal(got, total, 1e-9);
	}
	/* The paper reports ~97% of the exhaustive optimum per stage. */
	assert_true(worst >= 0.85);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_k_paper_example),     cmocka_unit_test(test_kmemo),
	    cmocka_unit_test(test_two_job_replay),      cmocka_unit_test(test_compression_order),
	    cmocka_unit_test(test_compression_quality),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
