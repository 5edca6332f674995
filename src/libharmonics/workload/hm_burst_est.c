/* The measured burst as the model's burst (hm_burst_est.h). */
#include "hm_burst_est.h"

#include <math.h>
#include <stddef.h>

void hm_burst_est_init(hm_burst_est_t *e)
{
	*e = (hm_burst_est_t){.factor = 1};
}

/* The factor closest to 1 relative to the one in use that explains w: in [lo, hi]. */
static double explaining_ratio(const hm_burst_window_t *w)
{
	double shared = w->pred_shared_s > w->pred_alone_s ? w->pred_shared_s : w->pred_alone_s;
	double hi = w->burst_s / w->pred_alone_s, lo = w->burst_s / shared;

	return lo > 1 ? lo : hi < 1 ? hi : 1;
}

/* Move the factor in use only past the band, and back to exactly 1 inside 1's band. */
static void update_factor(hm_burst_est_t *e)
{
	if (e->samples < HM_BURST_MIN_SAMPLES)
		return;
	if (fabs(e->est - 1) <= HM_BURST_DEADBAND)
		e->factor = 1;
	else if (fabs(e->est / e->factor - 1) > HM_BURST_DEADBAND)
		e->factor = e->est;
}

hm_burst_verdict_t hm_burst_est_fold(hm_burst_est_t *e, const hm_burst_window_t *w)
{
	double r, v, s;

	if (!e || !w || !(w->n > 0) || !(w->pred_alone_s > 0) || !isfinite(w->pred_alone_s))
		return HM_BURST_NONE;
	if (!(e->factor > 0) || !isfinite(e->factor))
		hm_burst_est_init(e); /* a corrupt estimator starts again rather than spreads */
	if (!(w->burst_s > 0) || !isfinite(w->burst_s) || !isfinite(w->n)) {
		e->refused++;
		return HM_BURST_ZERO;
	}
	if (w->iter_s > 0 && w->burst_s > w->iter_s) {
		e->refused++;
		return HM_BURST_LONG;
	}
	r = explaining_ratio(w);
	if (!(r <= HM_BURST_RATIO_MAX && r >= 1 / HM_BURST_RATIO_MAX)) {
		e->refused++;
		return HM_BURST_ABSURD;
	}
	v = e->factor * r;
	if (e->est > 0 && e->samples >= HM_BURST_MIN_SAMPLES &&
	    (v > e->est * HM_BURST_OUTLIER_X || v < e->est / HM_BURST_OUTLIER_X)) {
		if (++e->outliers < HM_BURST_OUTLIER_RUN) {
			e->refused++;
			return HM_BURST_OUTLIER;
		}
		e->est = 0; /* a run of them: a new pattern, start again from this one */
		e->samples = 0;
	}
	e->outliers = 0;
	s = e->est > 0 ? e->samples : 0;
	e->est = (s * e->est + w->n * v) / (s + w->n);
	e->samples = fmin(s + w->n, HM_BURST_MEMORY);
	e->total += w->n;
	update_factor(e);
	return HM_BURST_USED;
}

const char *hm_burst_verdict_str(hm_burst_verdict_t v)
{
	switch (v) {
	case HM_BURST_USED:
		return "used";
	case HM_BURST_NONE:
		return "none";
	case HM_BURST_ZERO:
		return "zero";
	case HM_BURST_LONG:
		return "longer than the period";
	case HM_BURST_ABSURD:
		return "absurd";
	case HM_BURST_OUTLIER:
		return "outlier";
	}
	return "unknown";
}

void hm_burst_est_apply(const hm_burst_est_t *e, hm_profile_t *p)
{
	if (!e || !p || e->factor == 1 || !(e->factor > 0) || !isfinite(e->factor))
		return;
	for (int k = 0; k < p->nphases && k < HM_MAX_PHASES; k++)
		p->phases[k].bytes *= e->factor;
}
