/*
 * hm_burst_est.h - a job's measured burst as the model's burst: the declared
 * bytes corrected by a factor learnt from what the job's bursts take as it runs.
 *
 * The runtime measures a burst from its slot release to its last collective's
 * end: holds are excluded, contention is included. A window of measurements
 * (the mean of n bursts, as the node agents send them each beat) is compared
 * with what the model predicted for the conditions it was taken under: the
 * burst alone with the bytes in use (pred_alone_s) and, where the model
 * expected other jobs on the links, the burst if they overlapped all the time
 * (pred_shared_s = alone / the job's max-min share). Any factor in
 * [burst / pred_shared, burst / pred_alone] explains the window; the fold
 * takes the one closest to the factor in use (no change when it is inside),
 * so contention is never read as bytes and a job modelled alone (its own slot,
 * or no shared link) is measured exactly.
 *
 * Bounds and smoothing follow the measured compute and period (hm_pol_common.c,
 * hm_coord_nodes.c): a window is a sample-weighted mean; a mean <= 0, longer
 * than the window's iteration, or more than HM_BURST_RATIO_MAX off the
 * prediction is refused; the estimate is a sample-weighted mean with a memory
 * of HM_BURST_MEMORY bursts; a window over HM_BURST_OUTLIER_X off the estimate
 * is refused unless HM_BURST_OUTLIER_RUN follow in a row (a new pattern: the
 * estimate restarts from them). The factor in use moves only once
 * HM_BURST_MIN_SAMPLES bursts are behind the estimate and the estimate is more
 * than HM_BURST_DEADBAND off it (the measured compute's band), and goes back
 * to exactly 1 within the band of 1, so a job declared right keeps its
 * declared bytes. No allocation, no global state.
 */
#ifndef HM_BURST_EST_H
#define HM_BURST_EST_H

#include <stdbool.h>

#include "hm_job.h"

#define HM_BURST_MIN_SAMPLES 20    /* bursts behind the estimate before it is used */
#define HM_BURST_MEMORY      200   /* bursts the running mean remembers */
#define HM_BURST_DEADBAND    0.15  /* relative change that moves the factor in use */
#define HM_BURST_RATIO_MAX   100.0 /* a window further off the prediction is absurd */
#define HM_BURST_OUTLIER_X   4.0   /* a window this far off the estimate is an outlier */
#define HM_BURST_OUTLIER_RUN 3     /* outliers in a row that restart the estimate */

typedef struct {
	double factor;         /* in use: modelled bytes = declared x factor; 1 = declared */
	double est;            /* smoothed factor; 0 = no estimate yet */
	double samples;        /* bursts behind est (at most HM_BURST_MEMORY) */
	double total;          /* bursts folded in since the job started */
	int outliers;          /* outlier windows in a row */
	unsigned long refused; /* windows refused since the job started */
} hm_burst_est_t;

/* One window of measurements and the model's prediction for it. */
typedef struct {
	double burst_s;       /* mean measured burst */
	double n;             /* bursts in the window */
	double iter_s;        /* mean iteration period of the window; 0 = unknown */
	double pred_alone_s;  /* modelled burst alone, bytes in use (factor applied) */
	double pred_shared_s; /* modelled burst with the other jobs on its links all the
			       * time (alone / share); <= pred_alone_s: the model had it alone */
} hm_burst_window_t;

typedef enum {
	HM_BURST_USED,    /* folded into the estimate */
	HM_BURST_NONE,    /* no burst in the window, or nothing modelled (no network phase) */
	HM_BURST_ZERO,    /* a mean <= 0 or not finite */
	HM_BURST_LONG,    /* longer than the window's iteration period */
	HM_BURST_ABSURD,  /* more than HM_BURST_RATIO_MAX off the prediction */
	HM_BURST_OUTLIER, /* more than HM_BURST_OUTLIER_X off the estimate */
} hm_burst_verdict_t;

/* A fresh estimator: factor 1, no estimate. */
void hm_burst_est_init(hm_burst_est_t *e);

/*
 * Fold window w into e. Returns the verdict; e->factor may have changed (the
 * caller derives the job's traffic again when it did). NULL-safe: HM_BURST_NONE.
 */
hm_burst_verdict_t hm_burst_est_fold(hm_burst_est_t *e, const hm_burst_window_t *w);

/* "used", "none", "zero", "longer than the period", "absurd", "outlier". */
const char *hm_burst_verdict_str(hm_burst_verdict_t v);

/* Multiply every phase's bytes of p by the factor in use (none when it is 1). */
void hm_burst_est_apply(const hm_burst_est_t *e, hm_profile_t *p);

#endif
