/*
 * The measured burst as the model's burst (hm_burst_est): a job declaring a
 * tenth of its real bytes is modelled with its measured burst once enough
 * bursts are in, noise is smoothed (the factor in use does not follow it),
 * absurd windows are refused, contention is not read as bytes, and the burst
 * the model predicts (hm_traffic_alone_burst_s) is the runtime's span.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_burst_est.h"
#include "hm_job.h"
#include "job_topo_fixture.h"

#define TOPO "racks=2,hosts=1,gpus=4,nics=1,nic=100G,uplink=50G"

/* The burst alone of a one-phase all-reduce of `bytes` across the two racks. */
static double modelled_burst_s(const hm_topo_t *t, const hm_burst_est_t *e, double bytes)
{
	hm_slot_t slots[] = {{0, 4, 0}, {1, 4, 0}};
	hm_placement_t pl = {2, slots};
	hm_profile_t p = {.compute_s = 0.2, .nphases = 1};
	hm_traffic_t tr;
	hm_err_t err = {0};
	double b;

	p.phases[0] = (hm_phase_t){.coll = HM_COLL_ALLREDUCE_RING, .bytes = bytes};
	hm_burst_est_apply(e, &p);
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	b = hm_traffic_alone_burst_s(&p, &tr);
	hm_traffic_free(&tr);
	return b;
}

/* A window of n bursts of burst_s against what the model now predicts alone. */
static hm_burst_verdict_t fold(hm_burst_est_t *e, double burst_s, double n, double pred_s)
{
	hm_burst_window_t w = {.burst_s = burst_s, .n = n, .iter_s = 1.0, .pred_alone_s = pred_s};

	return hm_burst_est_fold(e, &w);
}

/* Declared 1e8 bytes, the collectives move 1e9: measured 10x the modelled burst. */
static void test_ten_times_the_declared(void **state)
{
	hm_topo_t *t = fixture_topo(TOPO);
	hm_burst_est_t e;
	double declared_s, real_s;

	(void)state;
	hm_burst_est_init(&e);
	declared_s = modelled_burst_s(t, &e, 1e8);
	real_s = modelled_burst_s(t, &e, 1e9);
	assert_true(declared_s > 0 && fabs(real_s / declared_s - 10) < 1e-9);
	/* Below HM_BURST_MIN_SAMPLES bursts the declared bytes stay. */
	assert_int_equal(fold(&e, real_s, 10, declared_s), HM_BURST_USED);
	assert_true(e.factor == 1);
	assert_true(fabs(modelled_burst_s(t, &e, 1e8) - declared_s) < 1e-12);
	/* The 20th burst: the model takes the measured burst. */
	assert_int_equal(fold(&e, real_s, 10, modelled_burst_s(t, &e, 1e8)), HM_BURST_USED);
	assert_true(fabs(e.factor - 10) < 1e-9);
	assert_true(fabs(modelled_burst_s(t, &e, 1e8) - real_s) < 1e-9 * real_s);
	/* It stays there: the prediction now matches the measurement. */
	for (int k = 0; k < 20; k++)
		assert_int_equal(fold(&e, real_s, 10, modelled_burst_s(t, &e, 1e8)), HM_BURST_USED);
	assert_true(fabs(e.factor - 10) < 1e-9);
	/* And a job that moves 10x less than it declared is modelled shorter the same way. */
	hm_burst_est_init(&e);
	for (int k = 0; k < 3; k++)
		fold(&e, declared_s / 10, 10, modelled_burst_s(t, &e, 1e8));
	assert_true(fabs(e.factor - 0.1) < 1e-9);
	hm_topo_free(t);
}

/* Windows +-20% around 10x: the estimate is their mean, the factor in use moves once. */
static void test_noise_is_smoothed(void **state)
{
	static const double noise[] = {0.8, 1.2, 0.9, 1.1, 1.2, 0.8, 1.15, 0.85};
	hm_burst_est_t e;
	double pred_s = 0.01, last = 1;
	int moves = 0;

	(void)state;
	hm_burst_est_init(&e);
	for (int k = 0; k < 80; k++) {
		double real_s = 10 * pred_s * noise[k % 8];
		/* The model's burst is the declared one times the factor in use. */
		assert_int_equal(fold(&e, real_s, 10, pred_s * e.factor), HM_BURST_USED);
		moves += e.factor != last;
		last = e.factor;
	}
	assert_true(fabs(e.est - 10) < 0.5);
	assert_true(fabs(e.factor - 10) < 1.5);
	assert_true(moves <= 2);
	/* A job declared right, measured within the band: exactly the declared bytes. */
	hm_burst_est_init(&e);
	for (int k = 0; k < 80; k++)
		fold(&e, pred_s * (k % 2 ? 1.12 : 0.9), 10, pred_s * e.factor);
	assert_true(e.factor == 1);
	assert_true(e.total == 800);
}

/* Zero, negative, NaN, infinite, longer than the period, 1000x: refused, nothing moves. */
static void test_absurd_refused(void **state)
{
	hm_burst_est_t e;
	hm_burst_window_t w = {.n = 10, .iter_s = 0.5, .pred_alone_s = 0.01};
	const double bad[] = {0, -0.01, NAN, INFINITY, 0.6, 10.0};
	const hm_burst_verdict_t why[] = {HM_BURST_ZERO, HM_BURST_ZERO, HM_BURST_ZERO,
					  HM_BURST_ZERO, HM_BURST_LONG, HM_BURST_LONG};

	(void)state;
	hm_burst_est_init(&e);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		w.burst_s = bad[k];
		assert_int_equal(hm_burst_est_fold(&e, &w), why[k]);
	}
	w.iter_s = 0; /* period unknown: the ratio bound catches 1000x */
	w.burst_s = 10.0;
	assert_int_equal(hm_burst_est_fold(&e, &w), HM_BURST_ABSURD);
	w.burst_s = 1e-6;
	assert_int_equal(hm_burst_est_fold(&e, &w), HM_BURST_ABSURD);
	assert_int_equal(e.refused, 8);
	assert_true(e.factor == 1 && e.est == 0 && e.total == 0);
	/* Nothing modelled (no network phase) or no burst: nothing to fold, not refused. */
	w.burst_s = 0.02;
	w.pred_alone_s = 0;
	assert_int_equal(hm_burst_est_fold(&e, &w), HM_BURST_NONE);
	w.pred_alone_s = 0.01;
	w.n = 0;
	assert_int_equal(hm_burst_est_fold(&e, &w), HM_BURST_NONE);
	assert_int_equal(hm_burst_est_fold(NULL, &w), HM_BURST_NONE);
	assert_int_equal(e.refused, 8);
	assert_string_equal(hm_burst_verdict_str(HM_BURST_LONG), "longer than the period");
}

/* Once 3x is learnt, a lone 30x window is an outlier; three in a row are a new pattern. */
static void test_outliers(void **state)
{
	hm_burst_est_t e;
	double pred_s = 0.01;

	(void)state;
	hm_burst_est_init(&e);
	for (int k = 0; k < 4; k++)
		fold(&e, 3 * pred_s, 10, pred_s * e.factor);
	assert_true(fabs(e.factor - 3) < 1e-9);
	assert_int_equal(fold(&e, 30 * pred_s, 10, pred_s * e.factor), HM_BURST_OUTLIER);
	assert_int_equal(fold(&e, 3 * pred_s, 10, pred_s * e.factor), HM_BURST_USED);
	assert_true(fabs(e.est - 3) < 1e-9);
	assert_int_equal(fold(&e, 30 * pred_s, 10, pred_s * e.factor), HM_BURST_OUTLIER);
	assert_int_equal(fold(&e, 30 * pred_s, 10, pred_s * e.factor), HM_BURST_OUTLIER);
	assert_int_equal(fold(&e, 30 * pred_s, 10, pred_s * e.factor), HM_BURST_USED);
	assert_true(fabs(e.est - 30) < 1e-9);
	assert_true(fabs(e.factor - 3) < 1e-9); /* 10 bursts behind it: not yet */
	assert_int_equal(fold(&e, 30 * pred_s, 10, pred_s * e.factor), HM_BURST_USED);
	assert_true(fabs(e.factor - 30) < 1e-9);
}

/*
 * Under contention the model expected (share 1/2: the burst takes 1x to 2x
 * alone), a window inside that range moves nothing; one beyond it moves the
 * factor only as far as the range's edge.
 */
static void test_contention_is_not_bytes(void **state)
{
	hm_burst_est_t e;
	hm_burst_window_t w = {.n = 10, .pred_alone_s = 0.01, .pred_shared_s = 0.02};

	(void)state;
	hm_burst_est_init(&e);
	for (int k = 0; k < 4; k++) {
		w.burst_s = k % 2 ? 0.0195 : 0.012;
		assert_int_equal(hm_burst_est_fold(&e, &w), HM_BURST_USED);
	}
	assert_true(e.factor == 1 && fabs(e.est - 1) < 1e-12);
	hm_burst_est_init(&e);
	w.burst_s = 0.05; /* 5x alone: at least 2.5x the bytes */
	for (int k = 0; k < 2; k++)
		hm_burst_est_fold(&e, &w);
	assert_true(fabs(e.factor - 2.5) < 1e-9);
	/* Shorter than alone: the bytes are fewer whatever the sharing. */
	hm_burst_est_init(&e);
	w.burst_s = 0.004;
	for (int k = 0; k < 2; k++)
		hm_burst_est_fold(&e, &w);
	assert_true(fabs(e.factor - 0.4) < 1e-9);
}

/* The span the runtime measures: compute gaps between overlapped phases included. */
static void test_alone_burst_span(void **state)
{
	hm_profile_t p = {.compute_s = 1.0, .nphases = 2};
	hm_traffic_t tr = {.nphases = 2, .alone_comm_s = {0.1, 0.2}};

	(void)state;
	p.phases[0].overlap = 0.5; /* ready at 0.5 s, done 0.6 s */
	p.phases[1].overlap = 0;   /* ready at 1.0 s, done 1.2 s */
	assert_true(fabs(hm_traffic_alone_burst_s(&p, &tr) - 0.7) < 1e-12);
	p.phases[1].overlap = 0.5; /* back to back */
	assert_true(fabs(hm_traffic_alone_burst_s(&p, &tr) - 0.3) < 1e-12);
	assert_true(hm_traffic_alone_burst_s(NULL, &tr) == 0);
	p.nphases = 0;
	assert_true(hm_traffic_alone_burst_s(&p, &tr) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ten_times_the_declared),
	    cmocka_unit_test(test_noise_is_smoothed),
	    cmocka_unit_test(test_absurd_refused),
	    cmocka_unit_test(test_outliers),
	    cmocka_unit_test(test_contention_is_not_bytes),
	    cmocka_unit_test(test_alone_burst_span),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
