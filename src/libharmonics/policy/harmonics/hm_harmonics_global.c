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

/* Scratch of one solve, reused from job to job. */
typedef struct {
	int *stamp;     /* per job: the tag of the last neighbour scan that met it */
	int *neigh;     /* decided partners above the racks of the job being decided */
	double *ex;     /* their excess */
	int nn;         /* how many */
	double *shifts; /* the candidate shifts of one period, */
	double *cost;   /* and their costs */
	int cap;        /* room in shifts and cost */
} gscratch_t;

/* The cheapest slot found so far for one job. */
typedef struct {
	double cost, P_s, s_s;
	double overlap_cost; /* cost less the stretch: what holding still collides */
} gslot_t;

static hm_rc_t gscratch_init(gscratch_t *ws, const hm_hmodel_t *m)
{
	ws->cap = m->cfg.shift_grid + 4 * MAX_NEIGH + 8;
	ws->stamp = calloc((size_t)m->njobs, sizeof(int));
	ws->neigh = malloc(sizeof(int) * MAX_NEIGH);
	ws->ex = malloc(sizeof(double) * MAX_NEIGH);
	ws->shifts = malloc(sizeof(double) * (size_t)ws->cap);
	ws->cost = malloc(sizeof(double) * (size_t)ws->cap);
	return ws->stamp && ws->neigh && ws->ex && ws->shifts && ws->cost ? HM_OK : HM_ERR_NOMEM;
}

static void gscratch_free(gscratch_t *ws)
{
	free(ws->stamp);
	free(ws->neigh);
	free(ws->ex);
	free(ws->shifts);
	free(ws->cost);
}

/* Period candidates of x: current, robust, harmonics of decided partners. */
static int candidate_periods(const hm_hmodel_t *m, int x, const gscratch_t *ws, double *periods)
{
	const hm_hjob_t *jx = &m->jobs[x];
	double lo = jx->R_s, hi = m->cfg.max_stretch * jx->R_s;
	int np = 0;

	if (jx->prev_P_s >= jx->R_s * (1 - 1e-12))
		add_period(periods, &np, jx->prev_P_s, lo, hi);
	add_period(periods, &np, jx->R_s, lo, hi);
	for (int i = 0; i < ws->nn; i++)
		if (m->jobs[ws->neigh[i]].hold)
			for (int mult = 1; mult <= 3; mult++) {
				double p = m->jobs[ws->neigh[i]].P_s;
				add_period(periods, &np, p * mult, lo, hi);
				add_period(periods, &np, p / mult, lo, hi);
			}
	rack_periods(m, x, periods, &np, lo, hi);
	return np;
}

/*
 * Cost of x running free, added to *free_cost: expected overlap with everything
 * around it above the racks, and in the racks the overlap with their cross-rack
 * jobs plus the local partners that cannot stagger around a drifting job (those
 * alone also into *local_pen).
 */
static void free_running_cost(const hm_hmodel_t *m, int x, hm_hjob_t *probe, const gscratch_t *ws,
			      double *free_cost, double *local_pen)
{
	const hm_hjob_t *jx = &m->jobs[x];

	probe->hold = false;
	for (int i = 0; i < ws->nn; i++)
		*free_cost +=
		    HM_PAIR_LOSS * ws->ex[i] * hm_hjob_pair_rate(probe, &m->jobs[ws->neigh[i]]);
	for (int k = 0; k < jx->nracks; k++) {
		double s0 = 0, c0 = 0, und = 0;
		double pen = hm_local_report(m, jx->racks[k], x, 0, &s0, 1, &c0, &und);
		*free_cost += pen + c0 + und;
		*local_pen += pen;
	}
}

/* Shifts worth trying with period P: the current one when the period stays, a
 * grid, and just after or before each held partner's burst. */
static int period_shifts(const hm_hmodel_t *m, const hm_hjob_t *jx, double P, bool keep,
			 gscratch_t *ws)
{
	int G = m->cfg.shift_grid, ns = 0;

	if (keep)
		ws->shifts[ns++] = jx->prev_s_s;
	for (int g = 0; g < G; g++)
		ws->shifts[ns++] = P * g / G;
	for (int i = 0; i < ws->nn && ns + 2 <= ws->cap; i++) {
		const hm_hjob_t *y = &m->jobs[ws->neigh[i]];
		if (!y->hold)
			continue;
		ws->shifts[ns++] = fmod(y->s_s + y->pj->burst_s, P);
		ws->shifts[ns++] = fmod(y->s_s - jx->pj->burst_s + 2 * P, P);
	}
	return ns;
}

/* Cost of x holding (P, each shift): stretch, the racks' reports, then the links
 * above the racks. */
static void shift_costs(const hm_hmodel_t *m, int x, hm_hjob_t *probe, double P, int ns,
			gscratch_t *ws)
{
	const hm_hjob_t *jx = &m->jobs[x];

	for (int i = 0; i < ns; i++)
		ws->cost[i] = hm_stretch_cost(jx, P);
	for (int k = 0; k < jx->nracks; k++) {
		double und = 0; /* free-running only: counted in the free-running cost */
		/* The report's own penalty is the same for every period: local_pen
		 * (from the free-running report) stands for it. */
		(void)hm_local_report(m, jx->racks[k], x, P, ws->shifts, ns, ws->cost, &und);
	}
	probe->hold = true;
	probe->P_s = P;
	for (int i = 0; i < ns; i++) {
		hm_burst_t a;
		probe->s_s = ws->shifts[i];
		a = hm_hjob_burst(probe);
		for (int q = 0; q < ws->nn; q++) {
			hm_burst_t b = hm_hjob_burst(&m->jobs[ws->neigh[q]]);
			ws->cost[i] += HM_PAIR_LOSS * ws->ex[q] * hm_burst_overlap_rate(&a, &b);
		}
	}
}

/* Search the shifts of period P; *best keeps the cheapest slot (ties: the first). */
static void period_best(const hm_hmodel_t *m, int x, hm_hjob_t *probe, double P, double free_cost,
			gscratch_t *ws, gslot_t *best)
{
	const hm_hjob_t *jx = &m->jobs[x];
	/* A kept period's cost counts 1% less: a job is not moved for a marginal gain. */
	bool keep = jx->prev_P_s > 0 && fabs(jx->prev_P_s - P) <= 1e-9 * P;
	int ns;

	/* A period whose stretch alone misses the holding threshold cannot be
	 * chosen: not searched. */
	if (hm_stretch_cost(jx, P) * (keep ? 0.99 : 1.0) >
	    free_cost * (1 - m->cfg.hold_min_gain) * (1 + 1e-9))
		return;
	ns = period_shifts(m, jx, P, keep, ws);
	shift_costs(m, x, probe, P, ns, ws);
	for (int i = 0; i < ns; i++) {
		double c = ws->cost[i] * (keep ? 0.99 : 1.0);
		if (c < best->cost - 1e-12) {
			best->cost = c;
			best->P_s = P;
			best->s_s = ws->shifts[i];
			best->overlap_cost = ws->cost[i] - hm_stretch_cost(jx, P);
		}
	}
}

/* A closed group: every decided partner above the racks held, and no local
 * partner left to drift into the slots. */
static bool group_closed(const hm_hmodel_t *m, const gscratch_t *ws, double local_pen)
{
	for (int i = 0; i < ws->nn; i++)
		if (!m->jobs[ws->neigh[i]].hold)
			return false;
	return !(local_pen > 0);
}

/* Decide cross-rack job x: hold the cheapest slot, or run free. tag marks its
 * neighbour scan. */
static void decide_cross(hm_hmodel_t *m, int x, int tag, gscratch_t *ws)
{
	hm_hjob_t *jx = &m->jobs[x];
	hm_hjob_t probe = *jx; /* x at each candidate slot, for the overlap rates */
	double periods[MAX_PERIODS], free_cost = 0, local_pen = 0;
	gslot_t best = {INFINITY, 0, 0, 0};
	int np;

	if (jx->decided) /* fixed before the solve (hm_tier_pin_silent) */
		return;
	/* Alone, or not closed: it will run free whatever the costs say; skip them. */
	if (!jx->partnered || !closed_ok(m, x)) {
		hm_hjob_run_free(jx);
		jx->decided = true;
		return;
	}
	ws->nn = global_neighbours(m, x, ws->neigh, ws->ex, ws->stamp, tag, &free_cost);
	np = candidate_periods(m, x, ws, periods);
	free_running_cost(m, x, &probe, ws, &free_cost, &local_pen);
	for (int pi = 0; pi < np; pi++)
		period_best(m, x, &probe, periods[pi], free_cost, ws, &best);
	/* Hold only a burst that keeps its slot (a slowed burst misses it and
	 * loses a whole period), in a closed group. */
	if (np > 0 && group_closed(m, ws, local_pen) && best.overlap_cost <= HM_HOLD_MAX_OVERLAP &&
	    best.cost < free_cost * (1 - m->cfg.hold_min_gain)) {
		jx->hold = true;
		jx->P_s = best.P_s;
		jx->s_s = best.s_s;
		jx->guard_s = hm_hjob_guard(m, jx);
	} else {
		hm_hjob_run_free(jx);
	}
	jx->decided = true;
}

/* A cross-rack partner of held jx (rack links and links above alike) runs free. */
static bool has_free_partner(const hm_hmodel_t *m, const hm_hjob_t *jx)
{
	for (int k = 0; k < jx->pj->nlinks; k++) {
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
			return true;
		}
	}
	return false;
}

/*
 * Close the groups: a held job with a free-running partner decided after it
 * would have its slots invaded; release it (only hold -> free moves, so this
 * ends).
 */
static void close_groups(hm_hmodel_t *m)
{
	for (bool changed = true; changed;) {
		changed = false;
		for (int oi = 0; oi < m->ncross; oi++) {
			hm_hjob_t *jx = &m->jobs[m->cross[oi]];
			if (jx->hold && has_free_partner(m, jx)) {
				hm_hjob_run_free(jx);
				changed = true;
			}
		}
	}
}

hm_rc_t hm_global_solve(hm_hmodel_t *m, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	int *order = NULL;
	gscratch_t ws = {0};

	if (m->ncross == 0)
		return HM_OK;
	order = malloc(sizeof(int) * (size_t)m->ncross);
	if (!order || gscratch_init(&ws, m) != HM_OK) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: global: out of memory");
		goto out;
	}
	/* Heaviest first: they get the first pick of the slots. */
	memcpy(order, m->cross, sizeof(int) * (size_t)m->ncross);
	g_sort_model = m;
	qsort(order, (size_t)m->ncross, sizeof(int), cmp_load_desc);
	for (int oi = 0; oi < m->ncross; oi++)
		decide_cross(m, order[oi], oi + 1, &ws);
	close_groups(m);
out:
	free(order);
	gscratch_free(&ws);
	return rc;
}
