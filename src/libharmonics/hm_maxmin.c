/*
 * Per-flow max-min rates with coupled phases and strict priority classes.
 *
 * Progressive filling: classes are served from 0 (highest) down. Within a
 * class all unfrozen phases raise one common per-flow rate together; a link
 * saturates when the flows crossing it use its residual capacity, and every
 * phase crossing a saturated link freezes at the current rate (a coupled phase
 * advances at its slowest flow, so one bottleneck fixes all of its flows and
 * leaves its other links' spare capacity to others). The next class gets the
 * residual capacity.
 */
#include "hm_sim_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A link counts as saturated when less than this fraction of its capacity is left. */
#define HM_MM_EPS 1e-9

hm_rc_t hm_mm_ws_init(hm_mm_ws_t *ws, int nlinks, hm_err_t *err)
{
	memset(ws, 0, sizeof(*ws));
	if (nlinks < 0)
		return hm_err_set(err, HM_ERR_INVAL, "max-min: bad link count %d (accepted: >= 0)",
				  nlinks);
	ws->nlinks = nlinks;
	size_t n = nlinks > 0 ? (size_t)nlinks : 1;
	ws->res = calloc(n, sizeof(*ws->res));
	ws->w = calloc(n, sizeof(*ws->w));
	ws->mark = calloc(n, 1);
	ws->sat = calloc(n, 1);
	ws->list = calloc(n, sizeof(*ws->list));
	if (!ws->res || !ws->w || !ws->mark || !ws->sat || !ws->list) {
		hm_mm_ws_free(ws);
		return hm_err_set(err, HM_ERR_NOMEM, "max-min: out of memory for %d links", nlinks);
	}
	return HM_OK;
}

void hm_mm_ws_free(hm_mm_ws_t *ws)
{
	if (!ws)
		return;
	free(ws->res);
	free(ws->w);
	free(ws->mark);
	free(ws->sat);
	free(ws->list);
	free(ws->order);
	free(ws->frozen);
	memset(ws, 0, sizeof(*ws));
}

static hm_rc_t ws_reserve_phases(hm_mm_ws_t *ws, int nph, hm_err_t *err)
{
	if (nph <= ws->cap_ph)
		return HM_OK;
	int cap = ws->cap_ph ? ws->cap_ph : 64;
	while (cap < nph)
		cap *= 2;
	int *o = realloc(ws->order, (size_t)cap * sizeof(*o));
	if (o)
		ws->order = o;
	unsigned char *f = realloc(ws->frozen, (size_t)cap);
	if (f)
		ws->frozen = f;
	if (!o || !f)
		return hm_err_set(err, HM_ERR_NOMEM, "max-min: out of memory for %d phases", nph);
	ws->cap_ph = cap;
	return HM_OK;
}

/* Stable sort of phase indexes by class; insertion sort, classes are nearly sorted. */
static void sort_by_class(int *order, const hm_mm_phase_t *ph, int nph)
{
	for (int i = 1; i < nph; i++) {
		int v = order[i], j = i - 1;
		while (j >= 0 && ph[order[j]].prio > ph[v].prio) {
			order[j + 1] = order[j];
			j--;
		}
		order[j + 1] = v;
	}
}

/* Fill one class order[lo..hi) on the residual capacities. */
static void fill_class(hm_mm_ws_t *ws, const hm_mm_phase_t *ph, const int *order, int lo, int hi,
		       const double *cap, int nlist, double *rate)
{
	int active = 0;

	for (int i = lo; i < hi; i++) {
		const hm_mm_phase_t *p = &ph[order[i]];
		int nw = 0;
		for (int k = 0; k < p->nl; k++) {
			if (p->flows[k] > 0) {
				ws->w[p->links[k]] += p->flows[k];
				nw++;
			}
		}
		ws->frozen[i] = nw == 0;
		rate[order[i]] = nw == 0 ? HUGE_VAL : 0;
		active += nw > 0;
	}
	double level = 0;
	while (active > 0) {
		double delta = HUGE_VAL;
		int argmin = -1;
		for (int i = 0; i < nlist; i++) {
			int l = ws->list[i];
			if (ws->w[l] > 0) {
				double d = ws->res[l] / ws->w[l];
				if (d < delta) {
					delta = d;
					argmin = l;
				}
			}
		}
		if (argmin < 0)
			break; /* cannot happen: active phases have weighted links */
		if (delta < 0)
			delta = 0;
		level += delta;
		for (int i = 0; i < nlist; i++) {
			int l = ws->list[i];
			if (ws->w[l] > 0) {
				ws->res[l] -= delta * ws->w[l];
				if (ws->res[l] <= HM_MM_EPS * cap[l])
					ws->sat[l] = 1;
			}
		}
		ws->sat[argmin] = 1; /* guarantees progress despite rounding */
		for (int i = lo; i < hi; i++) {
			if (ws->frozen[i])
				continue;
			const hm_mm_phase_t *p = &ph[order[i]];
			bool hit = false;
			for (int k = 0; k < p->nl && !hit; k++)
				hit = p->flows[k] > 0 && ws->sat[p->links[k]];
			if (!hit)
				continue;
			ws->frozen[i] = 1;
			rate[order[i]] = level;
			active--;
			for (int k = 0; k < p->nl; k++)
				if (p->flows[k] > 0)
					ws->w[p->links[k]] -= p->flows[k];
		}
	}
	for (int i = 0; i < nlist; i++) {
		int l = ws->list[i];
		ws->w[l] = 0; /* exact zero for the next class despite rounding */
		if (ws->sat[l])
			ws->res[l] = 0;
	}
}

hm_rc_t hm_mm_solve(hm_mm_ws_t *ws, const double *cap, const hm_mm_phase_t *ph, int nph,
		    double *rate, hm_err_t *err)
{
	hm_rc_t rc = ws_reserve_phases(ws, nph, err);
	int nlist = 0;

	if (rc != HM_OK)
		return rc;
	bool sorted = true;
	for (int i = 0; i < nph; i++) {
		ws->order[i] = i;
		if (i > 0 && ph[i].prio < ph[i - 1].prio)
			sorted = false;
		for (int k = 0; k < ph[i].nl; k++) {
			int l = ph[i].links[k];
			if (l < 0 || l >= ws->nlinks) {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"max-min: phase %d uses link %d (accepted: 0..%d)",
						i, l, ws->nlinks - 1);
				goto out;
			}
			if (!(cap[l] > 0) || !isfinite(cap[l])) {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"max-min: link %d has capacity %g bit/s (accepted: "
						"finite > 0)",
						l, cap[l]);
				goto out;
			}
			if (ph[i].flows[k] < 0) {
				rc = hm_err_set(
				    err, HM_ERR_INVAL,
				    "max-min: phase %d has %d flows on link %d (accepted: "
				    ">= 0)",
				    i, ph[i].flows[k], l);
				goto out;
			}
			if (!ws->mark[l]) {
				ws->mark[l] = 1;
				ws->list[nlist++] = l;
				ws->res[l] = cap[l];
				ws->w[l] = 0;
				ws->sat[l] = 0;
			}
		}
	}
	if (!sorted)
		sort_by_class(ws->order, ph, nph);
	for (int lo = 0; lo < nph;) {
		int hi = lo + 1;
		while (hi < nph && ph[ws->order[hi]].prio == ph[ws->order[lo]].prio)
			hi++;
		/* Saturation is per class: a link full for a higher class stays full (res 0). */
		for (int i = 0; i < nlist; i++)
			ws->sat[ws->list[i]] = ws->res[ws->list[i]] <= HM_MM_EPS * cap[ws->list[i]];
		fill_class(ws, ph, ws->order, lo, hi, cap, nlist, rate);
		lo = hi;
	}
out:
	for (int i = 0; i < nlist; i++)
		ws->mark[ws->list[i]] = 0;
	return rc;
}

hm_rc_t hm_maxmin(const double *capacity_bps, int nlinks, const hm_mm_phase_t *ph, int nph,
		  double *rate_bps, hm_err_t *err)
{
	hm_mm_ws_t ws;
	hm_rc_t rc;

	if (nph < 0 || (nph > 0 && (!ph || !rate_bps || !capacity_bps)))
		return hm_err_set(err, HM_ERR_INVAL,
				  "max-min: %d phases with missing arrays (accepted: nph >= 0 and "
				  "non-NULL capacity, phases, rates)",
				  nph);
	rc = hm_mm_ws_init(&ws, nlinks, err);
	if (rc != HM_OK)
		return rc;
	rc = hm_mm_solve(&ws, capacity_bps, ph, nph, rate_bps, err);
	hm_mm_ws_free(&ws);
	return rc;
}
