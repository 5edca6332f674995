/* The Global Coordinator engine: cross-rack jobs (see hm_harmonics_global.h). */
#include "hm_harmonics_global.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hm_harmonics_local.h"

#define MAX_PERIODS 8
#define MAX_NEIGH   256

static const hm_hmodel_t *g_sort_model; /* qsort has no argument; set under the caller */

static int cmp_load_desc(const void *x, const void *y)
{
	const hm_hjob_t *a = &g_sort_model->jobs[*(const int *)x];
	const hm_hjob_t *b = &g_sort_model->jobs[*(const int *)y];
	double la = a->pj->gpus * a->pj->burst_s / a->pj->T_s;
	double lb = b->pj->gpus * b->pj->burst_s / b->pj->T_s;

	if (la != lb)
		return la > lb ? -1 : 1;
	return (*(const int *)x > *(const int *)y) - (*(const int *)x < *(const int *)y);
}

static void add_period(double *ps, int *n, double v, double lo, double hi)
{
	if (v < lo * (1 - 1e-12) || v > hi || *n >= MAX_PERIODS)
		return;
	for (int i = 0; i < *n; i++)
		if (fabs(ps[i] - v) <= 1e-9 * v)
			return;
	ps[(*n)++] = v;
}

/* Decided cross-rack jobs sharing links above the racks with x (bounded scan per link). */
static int global_neighbours(const hm_hmodel_t *m, int x, int *neigh, double *ex, int *stamp,
			     int tag, double *undecided_pen)
{
	const hm_hjob_t *jx = &m->jobs[x];
	int n = 0;

	for (int k = 0; k < jx->pj->nlinks; k++) {
		int l = jx->pj->links[k];
		int lo = m->view.lstart[l], hi = m->view.lstart[l + 1];
		if (hm_hmodel_link_rack(m, l) >= 0)
			continue;
		if (hi - lo > m->cfg.max_link_scan)
			hi = lo + m->cfg.max_link_scan;
		for (int q = lo; q < hi && n < MAX_NEIGH; q++) {
			int y = m->view.ljobs[q];
			double e;
			if (y == x || stamp[y] == tag)
				continue;
			stamp[y] = tag;
			e = hm_hjob_excess_on(m, jx, &m->jobs[y], -1);
			if (e <= 0)
				continue;
			if (!m->jobs[y].decided) {
				/* Decided later, around x: counts only if x runs free. */
				*undecided_pen +=
				    HM_PAIR_LOSS * e * hm_hjob_free_rate(jx, &m->jobs[y]);
				continue;
			}
			neigh[n] = y;
			ex[n] = e;
			n++;
		}
	}
	return n;
}

/* Racks' partners of x (cross-rack, decided) for period candidates. */
static void rack_periods(const hm_hmodel_t *m, int x, double *ps, int *np, double lo, double hi)
{
	const hm_hjob_t *jx = &m->jobs[x];

	for (int k = 0; k < jx->nracks; k++) {
		int r = jx->racks[k];
		for (int q = m->rstart[r]; q < m->rstart[r + 1]; q++) {
			const hm_hjob_t *y = &m->jobs[m->rjobs[q]];
			if (m->rjobs[q] == x || y->rack != HM_HJOB_CROSS || !y->decided || !y->hold)
				continue;
			if (hm_hjob_excess_on(m, jx, y, r) <= 0)
				continue;
			for (int mult = 1; mult <= 3; mult++) {
				add_period(ps, np, y->P_s * mult, lo, hi);
				add_period(ps, np, y->P_s / mult, lo, hi);
			}
		}
	}
}

/*
 * Can x hold at all? Not when a partner on any of its links is local to a rack
 * (it would drift into x's slots unless the rack holds it, decided later) or
 * is a cross-rack job already decided to run free.
 */
static bool closed_ok(const hm_hmodel_t *m, int x)
{
	const hm_hjob_t *jx = &m->jobs[x];

	for (int k = 0; k < jx->pj->nlinks; k++) {
		int l = jx->pj->links[k];
		int lo, hi;
		if (!hm_hmodel_link_scan(m, l, &lo, &hi))
			continue;
		for (int q = lo; q < hi; q++) {
			const hm_hjob_t *y = &m->jobs[m->view.ljobs[q]];
			if (y == jx || y->rack == HM_HJOB_NONET)
				continue;
			if (y->rack == HM_HJOB_CROSS && (!y->decided || y->hold))
				continue;
			if (hm_pjob_excess(jx->pj, y->pj, NULL) > 0)
				return false;
		}
	}
	return true;
}

hm_rc_t hm_global_solve(hm_hmodel_t *m, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	int *order = NULL, *stamp = NULL, *neigh = NULL;
	double *ex = NULL, *shifts = NULL, *cost = NULL;
	int G = m->cfg.shift_grid, cap = G + 4 * MAX_NEIGH + 8;

	if (m->ncross == 0)
		return HM_OK;
	order = malloc(sizeof(int) * (size_t)m->ncross);
	stamp = calloc((size_t)m->njobs, sizeof(int));
	neigh = malloc(sizeof(int) * MAX_NEIGH);
	ex = malloc(sizeof(double) * MAX_NEIGH);
	shifts = malloc(sizeof(double) * (size_t)cap);
	cost = malloc(sizeof(double) * (size_t)cap);
	if (!order || !stamp || !neigh || !ex || !shifts || !cost) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: global: out of memory");
		goto out;
	}
	memcpy(order, m->cross, sizeof(int) * (size_t)m->ncross);
	g_sort_model = m;
	qsort(order, (size_t)m->ncross, sizeof(int), cmp_load_desc);
	for (int oi = 0; oi < m->ncross; oi++) {
		int x = order[oi], nn, np = 0;
		hm_hjob_t *jx = &m->jobs[x];
		double periods[MAX_PERIODS], best = INFINITY, best_P = 0, best_s = 0, best_ov = 0;
		double free_cost = 0, local_pen = 0;
		bool closed = true;
		hm_hjob_t probe = *jx;

		if (jx->decided) /* fixed before the solve (hm_tier_pin_silent) */
			continue;
		if (!jx->partnered) {
			hm_hjob_run_free(jx);
			jx->decided = true;
			continue;
		}
		/* Not closed: it will run free whatever the costs say; skip them. */
		closed = closed_ok(m, x);
		if (!closed) {
			hm_hjob_run_free(jx);
			jx->decided = true;
			continue;
		}
		nn = global_neighbours(m, x, neigh, ex, stamp, oi + 1, &free_cost);
		if (closed) {
			/* Period candidates: current, robust, harmonics of decided partners. */
			if (jx->prev_P_s >= jx->R_s * (1 - 1e-12))
				add_period(periods, &np, jx->prev_P_s, jx->R_s,
					   m->cfg.max_stretch * jx->R_s);
			add_period(periods, &np, jx->R_s, jx->R_s, m->cfg.max_stretch * jx->R_s);
			for (int i = 0; i < nn; i++)
				if (m->jobs[neigh[i]].hold)
					for (int mult = 1; mult <= 3; mult++) {
						double p = m->jobs[neigh[i]].P_s;
						add_period(periods, &np, p * mult, jx->R_s,
							   m->cfg.max_stretch * jx->R_s);
						add_period(periods, &np, p / mult, jx->R_s,
							   m->cfg.max_stretch * jx->R_s);
					}
			rack_periods(m, x, periods, &np, jx->R_s, m->cfg.max_stretch * jx->R_s);
		}
		/* Free running: expected overlap with everything around it. */
		probe.hold = false;
		for (int i = 0; i < nn; i++)
			free_cost +=
			    HM_PAIR_LOSS * ex[i] * hm_hjob_pair_rate(&probe, &m->jobs[neigh[i]]);
		/* Free running in the racks: overlap with their cross-rack jobs, plus the
		 * local partners that cannot stagger around a drifting job. */
		for (int k = 0; k < jx->nracks; k++) {
			double s0 = 0, c0 = 0, und = 0;
			double pen = hm_local_report(m, jx->racks[k], x, 0, &s0, 1, &c0, &und);
			free_cost += pen + c0 + und;
			local_pen += pen;
		}
		for (int pi = 0; pi < np; pi++) {
			double P = periods[pi];
			int ns = 0;
			bool keep = jx->prev_P_s > 0 && fabs(jx->prev_P_s - P) <= 1e-9 * P;
			double free_pen = 0;

			/* A period whose stretch alone misses the holding threshold
			 * cannot be chosen: not searched. */
			if (hm_stretch_cost(jx, P) * (keep ? 0.99 : 1.0) >
			    free_cost * (1 - m->cfg.hold_min_gain) * (1 + 1e-9))
				continue;
			if (keep)
				shifts[ns++] = jx->prev_s_s;
			for (int g = 0; g < G; g++)
				shifts[ns++] = P * g / G;
			for (int i = 0; i < nn && ns + 2 <= cap; i++) {
				const hm_hjob_t *y = &m->jobs[neigh[i]];
				if (!y->hold)
					continue;
				shifts[ns++] = fmod(y->s_s + y->pj->burst_s, P);
				shifts[ns++] = fmod(y->s_s - jx->pj->burst_s + 2 * P, P);
			}
			for (int i = 0; i < ns; i++)
				cost[i] = hm_stretch_cost(jx, P);
			/* The racks' reports, then the links above the racks. */
			for (int k = 0; k < jx->nracks; k++) {
				double und = 0; /* free-running only: counted below */
				free_pen +=
				    hm_local_report(m, jx->racks[k], x, P, shifts, ns, cost, &und);
			}
			probe.hold = true;
			probe.P_s = P;
			for (int i = 0; i < ns; i++) {
				hm_burst_t a;
				probe.s_s = shifts[i];
				a = hm_hjob_burst(&probe);
				for (int q = 0; q < nn; q++) {
					hm_burst_t b = hm_hjob_burst(&m->jobs[neigh[q]]);
					cost[i] +=
					    HM_PAIR_LOSS * ex[q] * hm_burst_overlap_rate(&a, &b);
				}
			}
			for (int i = 0; i < ns; i++) {
				double c = cost[i] * (keep ? 0.99 : 1.0);
				if (c < best - 1e-12) {
					best = c;
					best_P = P;
					best_s = shifts[i];
					best_ov = cost[i] - hm_stretch_cost(jx, P);
				}
			}
			(void)free_pen; /* same for every period: taken once below */
		}
		/* Hold only a burst that keeps its slot (a slowed burst misses it and
		 * loses a whole period), in a closed group: every decided partner
		 * held, no local partner left to drift into the slots. */
		for (int i = 0; i < nn; i++)
			if (!m->jobs[neigh[i]].hold)
				closed = false;
		if (local_pen > 0)
			closed = false;
		if (np > 0 && closed && best_ov <= HM_HOLD_MAX_OVERLAP &&
		    best < free_cost * (1 - m->cfg.hold_min_gain)) {
			jx->hold = true;
			jx->P_s = best_P;
			jx->s_s = best_s;
			jx->guard_s = hm_hjob_guard(m, jx);
		} else {
			hm_hjob_run_free(jx);
		}
		jx->decided = true;
	}
	/*
	 * Close the groups: a held job with a free-running partner decided after
	 * it would have its slots invaded; release it (only hold -> free moves,
	 * so this ends). Partners on rack links and links above the racks alike.
	 */
	for (bool changed = true; changed;) {
		changed = false;
		for (int oi = 0; oi < m->ncross; oi++) {
			hm_hjob_t *jx = &m->jobs[m->cross[oi]];
			if (!jx->hold)
				continue;
			for (int k = 0; k < jx->pj->nlinks && jx->hold; k++) {
				int l = jx->pj->links[k];
				int lo = m->view.lstart[l], hi = m->view.lstart[l + 1];
				if (hi - lo > m->cfg.max_link_scan)
					hi = lo + m->cfg.max_link_scan;
				for (int q = lo; q < hi; q++) {
					const hm_hjob_t *y = &m->jobs[m->view.ljobs[q]];
					if (y == jx || y->rack != HM_HJOB_CROSS || y->hold)
						continue;
					if (hm_pjob_excess(jx->pj, y->pj, NULL) <= 0)
						continue;
					hm_hjob_run_free(jx);
					changed = true;
					break;
				}
			}
		}
	}
out:
	free(order);
	free(stamp);
	free(neigh);
	free(ex);
	free(shifts);
	free(cost);
	return rc;
}
