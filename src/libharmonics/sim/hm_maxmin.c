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

/* Grow *arr (elements of size sz) to at least need elements; *cap tracks it. */
static bool grow(void **arr, int cap, int need, size_t sz)
{
	void *a = realloc(*arr, (size_t)(need > cap ? need : cap) * sz);

	if (!a)
		return false;
	*arr = a;
	return true;
}

static int next_cap(int cap, int need)
{
	int c = cap ? cap : 64;

	while (c < need)
		c *= 2;
	return c;
}

hm_rc_t hm_mm_reserve(hm_mm_ws_t *ws, int nl, int nph, int nent, hm_err_t *err)
{
	bool ok = true;

	if (nl + 1 > ws->cap_l) {
		int c = next_cap(ws->cap_l, nl + 1);
		ok = ok && grow((void **)&ws->res, 0, c, sizeof(double)) &&
		     grow((void **)&ws->fixed, 0, c, sizeof(double)) &&
		     grow((void **)&ws->w, 0, c, sizeof(int)) &&
		     grow((void **)&ws->ver, 0, c, sizeof(unsigned)) &&
		     grow((void **)&ws->lstart, 0, c, sizeof(int)) &&
		     grow((void **)&ws->lfill, 0, c, sizeof(int)) &&
		     grow((void **)&ws->heap, 0, c, sizeof(hm_mm_hent_t)) &&
		     grow((void **)&ws->key, 0, c, sizeof(double)) &&
		     grow((void **)&ws->live, 0, c, sizeof(int));
		if (ok)
			ws->cap_l = c;
	}
	if (ok && nph + 1 > ws->cap_ph) {
		int c = next_cap(ws->cap_ph, nph + 1);
		ok = grow((void **)&ws->pstart, 0, c, sizeof(int)) &&
		     grow((void **)&ws->prio, 0, c, sizeof(int)) &&
		     grow((void **)&ws->pcap, 0, c, sizeof(double)) &&
		     grow((void **)&ws->pcapl, 0, c, sizeof(int)) &&
		     grow((void **)&ws->capq, 0, c, sizeof(int)) &&
		     grow((void **)&ws->order, 0, c, sizeof(int)) &&
		     grow((void **)&ws->frozen, 0, c, 1);
		if (ok)
			ws->cap_ph = c;
	}
	if (ok && nent + 1 > ws->cap_ent) {
		int c = next_cap(ws->cap_ent, nent + 1);
		ok = grow((void **)&ws->elink, 0, c, sizeof(int)) &&
		     grow((void **)&ws->eflow, 0, c, sizeof(int)) &&
		     grow((void **)&ws->lph, 0, c, sizeof(int));
		if (ok)
			ws->cap_ent = c;
	}
	if (!ok)
		return hm_err_set(err, HM_ERR_NOMEM,
				  "max-min: out of memory for %d links, %d phases, %d entries", nl,
				  nph, nent);
	return HM_OK;
}

void hm_mm_ws_free(hm_mm_ws_t *ws)
{
	if (!ws)
		return;
	free(ws->res);
	free(ws->pstart);
	free(ws->elink);
	free(ws->eflow);
	free(ws->prio);
	free(ws->pcap);
	free(ws->pcapl);
	free(ws->capq);
	free(ws->fixed);
	free(ws->w);
	free(ws->ver);
	free(ws->lstart);
	free(ws->lfill);
	free(ws->lph);
	free(ws->order);
	free(ws->frozen);
	free(ws->heap);
	free(ws->key);
	free(ws->live);
	memset(ws, 0, sizeof(*ws));
}

/* Up to this many links a class is filled by scans, beyond by a heap. */
#define MM_SCAN_LINKS 256

/* 4-ary min-heap: half the depth of a binary one, and sifts dominate a solve. */
static void sift_down(hm_mm_hent_t *h, int n, int i)
{
	hm_mm_hent_t v = h[i];

	for (;;) {
		int c = 4 * i + 1, best = c;
		if (c >= n)
			break;
		int end = c + 4 < n ? c + 4 : n;
		for (int k = c + 1; k < end; k++)
			if (h[k].key < h[best].key)
				best = k;
		if (h[best].key >= v.key)
			break;
		h[i] = h[best];
		i = best;
	}
	h[i] = v;
}

/* Replace the top with a larger key (lazy update) or remove it (key < 0). */
static void heap_fix_top(hm_mm_hent_t *h, int *n, double key, unsigned ver)
{
	if (key < 0) {
		h[0] = h[--*n];
	} else {
		h[0].key = key;
		h[0].ver = ver;
	}
	if (*n > 0)
		sift_down(h, *n, 0);
}

/* Stable sort of phase indexes by class; insertion sort, classes are nearly sorted. */
static void sort_by_class(int *order, const int *prio, int nph)
{
	for (int i = 1; i < nph; i++) {
		int v = order[i], j = i - 1;
		while (j >= 0 && prio[order[j]] > prio[v]) {
			order[j + 1] = order[j];
			j--;
		}
		order[j + 1] = v;
	}
}

/* Phase p freezes at level: its links carry its load as fixed. */
static void freeze_phase(hm_mm_ws_t *ws, int p, double level, double *rate)
{
	const int *elink = ws->elink, *eflow = ws->eflow;

	ws->frozen[p] = 1;
	rate[p] = level;
	for (int e = ws->pstart[p]; e < ws->pstart[p + 1]; e++) {
		int m = elink[e];
		ws->fixed[m] += eflow[e] * level;
		ws->w[m] -= eflow[e];
		ws->ver[m]++;
	}
}

/* Link l saturates at level: its unfrozen phases of class c freeze there. */
static int freeze_link(hm_mm_ws_t *ws, int l, int c, double level, double *rate)
{
	int n = 0;

	for (int x = ws->lstart[l]; x < ws->lstart[l + 1]; x++) {
		int p = ws->lph[x];
		if (ws->prio[p] != c || ws->frozen[p])
			continue;
		freeze_phase(ws, p, level, rate);
		n++;
	}
	return n;
}

/*
 * Heap water-filling: freezing a phase at a level not above a link's key only
 * raises that key, so keys in the heap are lower bounds: a popped stale key is
 * recomputed and pushed back down (lazy updates). O(F + L log L).
 */
static void fill_heap(hm_mm_ws_t *ws, int c, int nl, double *rate, int active)
{
	hm_mm_hent_t *heap = ws->heap;
	int nh = 0;
	double level = 0;

	for (int l = 0; l < nl; l++)
		if (ws->w[l] > 0)
			heap[nh++] = (hm_mm_hent_t){ws->res[l] / ws->w[l], l, ws->ver[l]};
	for (int i = (nh - 2) / 4; nh > 1 && i >= 0; i--)
		sift_down(heap, nh, i);
	/* Stop once every phase is frozen: the links left cannot change a rate. */
	while (nh > 0 && active > 0) {
		int l = heap[0].l;
		if (ws->w[l] <= 0) {
			heap_fix_top(heap, &nh, -1, 0);
			continue;
		}
		if (heap[0].ver != ws->ver[l]) {
			double key = (ws->res[l] - ws->fixed[l]) / ws->w[l];
			if (key < level)
				key = level;
			if (key > heap[0].key) {
				heap_fix_top(heap, &nh, key, ws->ver[l]);
				continue;
			}
		}
		if (heap[0].key > level)
			level = heap[0].key;
		heap_fix_top(heap, &nh, -1, 0);
		active -= freeze_link(ws, l, c, level, rate);
	}
}

/*
 * The same water-filling by scans, for small problems (MM_SCAN_LINKS): each
 * step takes the lowest key over the links that still carry unfrozen phases,
 * recomputing only the keys a freeze changed (ver != 0). Steps are few (a
 * handful of distinct levels), and a scan of a short array beats the heap's
 * unpredictable sifts and its pops of links whose phases all froze elsewhere.
 * Same levels as the heap (the same expression on the same loads); links with
 * equal keys may be taken in another order (rounding of the loads only).
 * A link that carries one phase (its private links, folded into one, or a
 * shared link whose other phases stay outside the problem) keeps its key
 * until that phase freezes: it caps the phase instead, and the caps are taken
 * in order from a sorted queue, (key, link) as the scan would take them.
 */
static void fill_scan(hm_mm_ws_t *ws, int c, int nl, double *rate, int active)
{
	int *live = ws->live, nlive = 0, *q = ws->capq, nq = 0, qi = 0;
	double *key = ws->key, level = 0, *pcap = ws->pcap;
	int *pcapl = ws->pcapl;

	for (int l = 0; l < nl; l++) {
		if (ws->w[l] <= 0)
			continue;
		double k = ws->res[l] / ws->w[l];
		if (ws->lstart[l + 1] - ws->lstart[l] == 1) {
			int p = ws->lph[ws->lstart[l]];
			if (pcapl[p] < 0)
				q[nq++] = p;
			if (pcapl[p] < 0 || k < pcap[p]) {
				pcap[p] = k;
				pcapl[p] = l;
			}
			continue;
		}
		live[nlive++] = l;
		key[l] = k;
		ws->ver[l] = 0;
	}
	for (int i = 1; i < nq; i++) { /* by (cap, link): insertion sort, few */
		int v = q[i], j = i - 1;
		while (j >= 0 && (pcap[q[j]] > pcap[v] ||
				  (pcap[q[j]] == pcap[v] && pcapl[q[j]] > pcapl[v]))) {
			q[j + 1] = q[j];
			j--;
		}
		q[j + 1] = v;
	}
	while ((nlive > 0 || qi < nq) && active > 0) {
		int best = -1, n = 0;
		for (int i = 0; i < nlive; i++) {
			int l = live[i];
			if (ws->w[l] <= 0)
				continue; /* every phase on it froze: gone */
			live[n++] = l;
			if (ws->ver[l]) {
				double k = (ws->res[l] - ws->fixed[l]) / ws->w[l];
				key[l] = k < level ? level : k;
				ws->ver[l] = 0;
			}
			if (best < 0 || key[l] < key[best])
				best = l;
		}
		nlive = n;
		while (qi < nq && ws->frozen[q[qi]])
			qi++;
		if (qi < nq) {
			int p = q[qi];
			if (best < 0 || pcap[p] < key[best] ||
			    (pcap[p] == key[best] && pcapl[p] < best)) {
				if (pcap[p] > level)
					level = pcap[p];
				qi++;
				freeze_phase(ws, p, level, rate);
				active--;
				continue;
			}
		}
		if (best < 0)
			break;
		if (key[best] > level)
			level = key[best];
		active -= freeze_link(ws, best, c, level, rate);
	}
}

/*
 * Water-filling of one class (phases order[lo..hi), all of class c) on the
 * residual capacities: the common level rises; the link with the lowest
 * saturation level (residual - frozen load) / unfrozen flows saturates next and
 * freezes its unfrozen phases there.
 */
static void fill_class(hm_mm_ws_t *ws, int lo, int hi, int c, int nl, double *rate)
{
	const int *order = ws->order, *pstart = ws->pstart, *elink = ws->elink, *eflow = ws->eflow;
	int active = 0;

	for (int i = lo; i < hi; i++) {
		int p = order[i];
		for (int e = pstart[p]; e < pstart[p + 1]; e++)
			ws->w[elink[e]] += eflow[e];
		ws->frozen[p] = pstart[p] == pstart[p + 1];
		ws->pcapl[p] = -1;
		rate[p] = ws->frozen[p] ? HUGE_VAL : 0;
		active += !ws->frozen[p];
	}
	if (nl <= MM_SCAN_LINKS)
		fill_scan(ws, c, nl, rate, active);
	else
		fill_heap(ws, c, nl, rate, active);
	for (int l = 0; l < nl; l++) {
		ws->res[l] -= ws->fixed[l];
		if (ws->res[l] < 0)
			ws->res[l] = 0;
		ws->fixed[l] = 0;
		ws->w[l] = 0;
	}
}

void hm_mm_solve(hm_mm_ws_t *ws, int nl, int nph, double *rate)
{
	bool sorted = true;

	/* Phases per link (CSR), to freeze the phases of a saturated link. */
	for (int l = 0; l <= nl; l++)
		ws->lstart[l] = 0;
	for (int e = 0; e < ws->pstart[nph]; e++)
		ws->lstart[ws->elink[e] + 1]++;
	for (int l = 0; l < nl; l++) {
		ws->lstart[l + 1] += ws->lstart[l];
		ws->lfill[l] = ws->lstart[l];
		ws->fixed[l] = 0;
		ws->w[l] = 0;
		ws->ver[l] = 0;
	}
	for (int p = 0; p < nph; p++) {
		ws->order[p] = p;
		ws->frozen[p] = 0;
		if (p > 0 && ws->prio[p] < ws->prio[p - 1])
			sorted = false;
		for (int e = ws->pstart[p]; e < ws->pstart[p + 1]; e++)
			ws->lph[ws->lfill[ws->elink[e]]++] = p;
	}
	if (!sorted)
		sort_by_class(ws->order, ws->prio, nph);
	for (int lo = 0; lo < nph;) {
		int hi = lo + 1, c = ws->prio[ws->order[lo]];
		while (hi < nph && ws->prio[ws->order[hi]] == c)
			hi++;
		fill_class(ws, lo, hi, c, nl, rate);
		lo = hi;
	}
}

hm_rc_t hm_maxmin(const double *capacity_bps, int nlinks, const hm_mm_phase_t *ph, int nph,
		  double *rate_bps, hm_err_t *err)
{
	hm_mm_ws_t ws;
	int *lidx = NULL, nl = 0, nent = 0;
	hm_rc_t rc = HM_OK;

	memset(&ws, 0, sizeof(ws));
	if (nph < 0 || nlinks < 0 || (nph > 0 && (!ph || !rate_bps || !capacity_bps)))
		return hm_err_set(err, HM_ERR_INVAL,
				  "max-min: %d phases, %d links, missing arrays (accepted: counts "
				  ">= 0, non-NULL capacity, phases, rates)",
				  nph, nlinks);
	lidx = malloc((size_t)(nlinks > 0 ? nlinks : 1) * sizeof(*lidx));
	if (!lidx)
		return hm_err_set(err, HM_ERR_NOMEM, "max-min: out of memory for %d links", nlinks);
	for (int l = 0; l < nlinks; l++)
		lidx[l] = -1;
	for (int i = 0; i < nph; i++) {
		if (ph[i].nl < 0 || (ph[i].nl > 0 && (!ph[i].links || !ph[i].flows))) {
			rc = hm_err_set(err, HM_ERR_INVAL,
					"max-min: phase %d has %d links without arrays (accepted: "
					">= 0 with links and flows)",
					i, ph[i].nl);
			goto out;
		}
		for (int k = 0; k < ph[i].nl; k++) {
			int l = ph[i].links[k];
			if (l < 0 || l >= nlinks) {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"max-min: phase %d uses link %d (accepted: 0..%d)",
						i, l, nlinks - 1);
				goto out;
			}
			if (!(capacity_bps[l] > 0) || !isfinite(capacity_bps[l])) {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"max-min: link %d has capacity %g bit/s (accepted: "
						"finite > 0)",
						l, capacity_bps[l]);
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
			if (lidx[l] < 0)
				lidx[l] = nl++;
			nent += ph[i].flows[k] > 0;
		}
	}
	rc = hm_mm_reserve(&ws, nl, nph, nent, err);
	if (rc != HM_OK)
		goto out;
	for (int l = 0; l < nlinks; l++)
		if (lidx[l] >= 0)
			ws.res[lidx[l]] = capacity_bps[l];
	nent = 0;
	for (int i = 0; i < nph; i++) {
		ws.pstart[i] = nent;
		ws.prio[i] = ph[i].prio;
		for (int k = 0; k < ph[i].nl; k++) {
			if (ph[i].flows[k] > 0) {
				ws.elink[nent] = lidx[ph[i].links[k]];
				ws.eflow[nent++] = ph[i].flows[k];
			}
		}
	}
	ws.pstart[nph] = nent;
	hm_mm_solve(&ws, nl, nph, rate_bps);
out:
	free(lidx);
	hm_mm_ws_free(&ws);
	return rc;
}
