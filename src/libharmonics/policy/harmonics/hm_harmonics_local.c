/* The Local Scheduler engine: one rack's problem (see hm_harmonics_local.h). */
#include "hm_harmonics_local.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BASES 12
#define SWEEPS    3
/* Largest link id scattered into a per-id array (4 MiB of ints). */
#define SCATTER_MAX_LINKS (1 << 20)

typedef struct {
	int a, b; /* job indexes; a is local to the rack */
	double e; /* excess demand on their shared links */
} edge_t;

struct hm_local {
	int cap_jobs, cap_edges;
	int *act;    /* partnered local jobs of the rack */
	int *estart; /* per act entry: its edges */
	edge_t *edges;
	int *act_of; /* job index -> act entry or -1; sized to the model, kept -1 */
	int cap_act_of;
	bool *placed;   /* per act entry */
	double *best_s; /* per act entry */
	double *best_P;
	double *cand;
	int cap_cand;
	int *apos; /* link id -> 1 + position in the job scattered, 0 else; kept 0 */
	int cap_apos;
};

hm_local_t *hm_local_create(const hm_hmodel_t *m)
{
	hm_local_t *ls = calloc(1, sizeof(*ls));
	(void)m;
	return ls;
}

void hm_local_free(hm_local_t *ls)
{
	if (!ls)
		return;
	free(ls->act);
	free(ls->estart);
	free(ls->edges);
	free(ls->act_of);
	free(ls->placed);
	free(ls->best_s);
	free(ls->best_P);
	free(ls->cand);
	free(ls->apos);
	free(ls);
}

static bool grow(void **p, int *cap, int need, size_t elem)
{
	void *np;

	if (need <= *cap)
		return true;
	np = realloc(*p, elem * (size_t)need);
	if (!np)
		return false;
	*p = np;
	*cap = need;
	return true;
}

static hm_rc_t ensure(hm_local_t *ls, int njobs, int nedges, int ncand)
{
	int cj = ls->cap_jobs, ce = ls->cap_edges, cc = ls->cap_cand;

	if (njobs > cj) {
		int c = cj;
		if (!grow((void **)&ls->act, &c, njobs, sizeof(int)))
			return HM_ERR_NOMEM;
		c = cj;
		if (!grow((void **)&ls->estart, &c, njobs + 1, sizeof(int)))
			return HM_ERR_NOMEM;
		c = cj;
		if (!grow((void **)&ls->placed, &c, njobs, sizeof(bool)))
			return HM_ERR_NOMEM;
		c = cj;
		if (!grow((void **)&ls->best_s, &c, njobs, sizeof(double)))
			return HM_ERR_NOMEM;
		c = cj;
		if (!grow((void **)&ls->best_P, &c, njobs, sizeof(double)))
			return HM_ERR_NOMEM;
		ls->cap_jobs = njobs;
	}
	if (!grow((void **)&ls->edges, &ce, nedges, sizeof(edge_t)))
		return HM_ERR_NOMEM;
	ls->cap_edges = ce;
	if (!grow((void **)&ls->cand, &cc, ncand, sizeof(double)))
		return HM_ERR_NOMEM;
	ls->cap_cand = cc;
	return HM_OK;
}

double hm_stretch_cost(const hm_hjob_t *j, double P_s)
{
	double T = j->pj->T_s;
	return P_s > T ? (P_s - T) / T : 0;
}

static double pair_cost(const hm_hjob_t *a, const hm_hjob_t *b, double e)
{
	return HM_PAIR_LOSS * e * hm_hjob_pair_rate(a, b);
}

double hm_local_report(const hm_hmodel_t *m, int r, int x, double P_s, const double *shifts, int n,
		       double *cost, double *undecided_pen)
{
	const hm_hjob_t *jx = &m->jobs[x];
	hm_hjob_t probe = *jx;
	double free_pen = 0;

	/* P_s == 0 asks for the cost of x running free. */
	probe.hold = P_s > 0;
	probe.P_s = P_s;
	for (int k = m->rstart[r]; k < m->rstart[r + 1]; k++) {
		int b = m->rjobs[k];
		const hm_hjob_t *jb = &m->jobs[b];
		double e;

		if (b == x)
			continue;
		e = hm_hjob_excess_on(m, jx, jb, r);
		if (e <= 0)
			continue;
		if (jb->rack == HM_HJOB_CROSS && jb->decided) {
			hm_burst_t y = hm_hjob_burst(jb);
			for (int i = 0; i < n; i++) {
				hm_burst_t bx;
				probe.s_s = shifts[i];
				bx = hm_hjob_burst(&probe);
				cost[i] += HM_PAIR_LOSS * e * hm_burst_overlap_rate(&bx, &y);
			}
		} else {
			/* Partners decided later cannot stagger around a drifting job. */
			double pen = HM_PAIR_LOSS * e * hm_hjob_free_rate(jx, jb);
			if (jb->rack == HM_HJOB_CROSS)
				*undecided_pen += pen;
			else
				free_pen += pen;
		}
	}
	return free_pen;
}

/* Cost to job a (act index ai) at shift s against partners placed so far. */
static double job_cost_at(const hm_local_t *ls, hm_hmodel_t *m, int ai, double s, const int *act_of)
{
	hm_hjob_t *a = &m->jobs[ls->act[ai]];
	double saved = a->s_s, c = 0;

	a->s_s = s;
	for (int k = ls->estart[ai]; k < ls->estart[ai + 1]; k++) {
		const edge_t *ed = &ls->edges[k];
		int bi = act_of[ed->b];
		if (bi >= 0 && !ls->placed[bi])
			continue;
		c += pair_cost(a, &m->jobs[ed->b], ed->e);
	}
	a->s_s = saved;
	return c;
}

static int add_cand(hm_local_t *ls, int n, double s, double P)
{
	s = fmod(s, P);
	if (s < 0)
		s += P;
	if (n < ls->cap_cand)
		ls->cand[n++] = s;
	return n;
}

/* Best shift for act entry ai given placed partners; keeps the current one on ties. */
static void best_shift(hm_local_t *ls, hm_hmodel_t *m, int ai, const int *act_of, int grid)
{
	hm_hjob_t *a = &m->jobs[ls->act[ai]];
	double P = a->P_s, best, best_s;
	int n = 0;

	if (ls->placed[ai])
		n = add_cand(ls, n, a->s_s, P);
	for (int g = 0; g < grid; g++)
		n = add_cand(ls, n, P * g / grid, P);
	for (int k = ls->estart[ai]; k < ls->estart[ai + 1]; k++) {
		const hm_hjob_t *b = &m->jobs[ls->edges[k].b];
		int bi = act_of[ls->edges[k].b];
		int reps;
		if ((bi >= 0 && !ls->placed[bi]) || !b->hold)
			continue;
		reps = (int)ceil(P / b->P_s - 1e-9);
		if (reps > 8)
			reps = 8;
		for (int q = 0; q < reps; q++) {
			n = add_cand(ls, n, b->s_s + b->pj->burst_s + q * b->P_s, P);
			n = add_cand(ls, n, b->s_s - a->pj->burst_s + q * b->P_s, P);
		}
	}
	best = INFINITY;
	best_s = 0;
	for (int i = 0; i < n; i++) {
		double c = job_cost_at(ls, m, ai, ls->cand[i], act_of);
		if (c < best - 1e-12) {
			best = c;
			best_s = ls->cand[i];
		}
	}
	a->s_s = best_s;
	ls->placed[ai] = true;
}

/* Whole-group cost: stretch + overlap on every edge (local pairs once). */
static double group_cost(const hm_local_t *ls, hm_hmodel_t *m, const int *members, int nm,
			 const int *act_of)
{
	double c = 0;

	for (int i = 0; i < nm; i++) {
		int ai = members[i];
		const hm_hjob_t *a = &m->jobs[ls->act[ai]];
		if (a->hold)
			c += hm_stretch_cost(a, a->P_s);
		for (int k = ls->estart[ai]; k < ls->estart[ai + 1]; k++) {
			const edge_t *ed = &ls->edges[k];
			if (act_of[ed->b] >= 0 && ed->b < ed->a)
				continue;
			c += pair_cost(a, &m->jobs[ed->b], ed->e);
		}
	}
	return c;
}

/* Try one base: harmonic periods, greedy shifts, coordinate descent. */
static double try_base(hm_local_t *ls, hm_hmodel_t *m, const int *members, int nm,
		       const int *act_of, double base)
{
	for (int i = 0; i < nm; i++) {
		int ai = members[i];
		hm_hjob_t *a = &m->jobs[ls->act[ai]];
		a->hold = true;
		a->P_s = hm_harmonic_period(base, a->R_s);
		ls->placed[ai] = a->prev_P_s > 0 && fabs(a->prev_P_s - a->P_s) <= 1e-9 * a->P_s;
		a->s_s = ls->placed[ai] ? a->prev_s_s : 0;
	}
	for (int i = 0; i < nm; i++) {
		int ai = members[i];
		if (!ls->placed[ai])
			best_shift(ls, m, ai, act_of, m->cfg.shift_grid);
	}
	for (int sw = 0; sw < SWEEPS; sw++)
		for (int i = 0; i < nm; i++)
			best_shift(ls, m, members[i], act_of, m->cfg.shift_grid);
	return group_cost(ls, m, members, nm, act_of);
}

static void add_base(double *bases, int *nb, double v)
{
	if (v <= 0 || *nb >= MAX_BASES)
		return;
	for (int i = 0; i < *nb; i++)
		if (fabs(bases[i] - v) <= 1e-9 * v)
			return;
	bases[(*nb)++] = v;
}

static hm_rc_t solve_group(hm_local_t *ls, hm_hmodel_t *m, const int *members, int nm,
			   const int *act_of)
{
	double bases[MAX_BASES], best = INFINITY, free_cost, prev_base = 0;
	int nb = 0, best_b = -1;
	bool closed = true;

	/* A free-running fixed partner would drift into any slots: no holding,
	 * nothing to search (see the closure rule below). */
	for (int i = 0; i < nm && closed; i++)
		for (int k = ls->estart[members[i]]; k < ls->estart[members[i] + 1]; k++)
			if (act_of[ls->edges[k].b] < 0 && !m->jobs[ls->edges[k].b].hold)
				closed = false;
	if (!closed)
		nb = MAX_BASES + 1; /* skip the base search */

	/* Bases: fixed holding partners' periods first (exact staggering with them). */
	for (int i = 0; i < nm && closed; i++) {
		int ai = members[i];
		for (int k = ls->estart[ai]; k < ls->estart[ai + 1]; k++) {
			const hm_hjob_t *b = &m->jobs[ls->edges[k].b];
			if (act_of[ls->edges[k].b] < 0 && b->hold)
				add_base(bases, &nb, b->P_s);
		}
	}
	for (int i = 0; i < nm; i++) {
		const hm_hjob_t *a = &m->jobs[ls->act[members[i]]];
		if (a->prev_P_s > 0 && prev_base == 0)
			prev_base = a->prev_P_s;
	}
	add_base(bases, &nb, prev_base);
	for (int i = 0; i < nm; i++)
		add_base(bases, &nb, m->jobs[ls->act[members[i]]].R_s);
	for (int i = 0; i < nm; i++)
		add_base(bases, &nb, 2 * m->jobs[ls->act[members[i]]].R_s);
	if (!closed)
		nb = 0;
	/* Free running first: a base whose stretch alone already misses the
	 * holding threshold cannot be chosen, so it is not searched. */
	for (int i = 0; i < nm; i++)
		m->jobs[ls->act[members[i]]].hold = false;
	free_cost = group_cost(ls, m, members, nm, act_of);
	for (int bi = 0; bi < nb; bi++) {
		/* Prefer keeping the current slots (no churn) unless clearly worse. */
		double f = prev_base > 0 && fabs(bases[bi] - prev_base) <= 1e-9 * prev_base ? 0.99 : 1;
		double st = 0, c;
		for (int i = 0; i < nm; i++) {
			const hm_hjob_t *a = &m->jobs[ls->act[members[i]]];
			st += hm_stretch_cost(a, hm_harmonic_period(bases[bi], a->R_s));
		}
		if (st * f > free_cost * (1 - m->cfg.hold_min_gain) * (1 + 1e-9))
			continue;
		c = f * try_base(ls, m, members, nm, act_of, bases[bi]);
		if (c < best - 1e-12) {
			best = c;
			best_b = bi;
		}
	}
	for (int i = 0; i < nm; i++)
		m->jobs[ls->act[members[i]]].hold = false;
	if (best_b >= 0 && best < free_cost * (1 - m->cfg.hold_min_gain)) {
		double ov = try_base(ls, m, members, nm, act_of, bases[best_b]);
		for (int i = 0; i < nm; i++) {
			const hm_hjob_t *a = &m->jobs[ls->act[members[i]]];
			ov -= hm_stretch_cost(a, a->P_s);
		}
		/* Hold only bursts that keep their slots (see HM_HOLD_MAX_OVERLAP),
		 * and only closed groups: a free-running partner drifts into slots. */
		if (ov > HM_HOLD_MAX_OVERLAP * nm)
			best_b = -1;
		for (int i = 0; i < nm && best_b >= 0; i++)
			for (int k = ls->estart[members[i]]; k < ls->estart[members[i] + 1]; k++)
				if (act_of[ls->edges[k].b] < 0 && !m->jobs[ls->edges[k].b].hold)
					best_b = -1;
	}
	if (best_b >= 0 && best < free_cost * (1 - m->cfg.hold_min_gain)) {
		for (int i = 0; i < nm; i++) {
			hm_hjob_t *a = &m->jobs[ls->act[members[i]]];
			a->guard_s = hm_hjob_guard(m, a);
		}
	} else {
		for (int i = 0; i < nm; i++) {
			hm_hjob_t *a = &m->jobs[ls->act[members[i]]];
			hm_hjob_run_free(a);
		}
	}
	for (int i = 0; i < nm; i++)
		m->jobs[ls->act[members[i]]].decided = true;
	return HM_OK;
}

hm_rc_t hm_local_solve(hm_local_t *ls, hm_hmodel_t *m, int r, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	int lo = m->rstart[r], hi = m->rstart[r + 1], n = hi - lo, na = 0, ne = 0;
	int *act_of, *members = NULL;
	hm_uf_t uf = {0};
	bool scatter = true;

	if (n == 0)
		return HM_OK;
	rc = ensure(ls, n + 1, 16, 4 * m->cfg.shift_grid + 64);
	if (rc != HM_OK)
		goto nomem;
	for (int k = lo; k < hi; k++) {
		hm_hjob_t *j = &m->jobs[m->rjobs[k]];
		if (j->rack != r)
			continue;
		if (!j->partnered) {
			/* Alone on its links: never held, never loses time. */
			hm_hjob_run_free(j);
			j->decided = true;
			continue;
		}
		ls->act[na++] = m->rjobs[k];
	}
	if (na == 0)
		goto layer;
	/* act_of: job index -> act entry, -1 otherwise (sparse map over this rack only). */
	if (ls->cap_act_of < m->njobs) {
		free(ls->act_of);
		ls->act_of = malloc(sizeof(int) * (size_t)m->njobs);
		if (!ls->act_of)
			goto nomem;
		ls->cap_act_of = m->njobs;
		for (int i = 0; i < m->njobs; i++)
			ls->act_of[i] = -1;
	}
	act_of = ls->act_of;
	members = malloc(sizeof(int) * (size_t)na);
	if (!members || hm_uf_init(&uf, na) != HM_OK)
		goto nomem;
	for (int i = 0; i < na; i++)
		act_of[ls->act[i]] = i;
	/* Each active job's links scattered once, its pairs then cost the partner's
	 * links (ids beyond SCATTER_MAX_LINKS, only from a malformed peer: merged). */
	for (int k = lo; k < hi && scatter; k++) {
		const hm_pjob_t *p = m->jobs[m->rjobs[k]].pj;
		int top = p->nlinks > 0 ? p->links[p->nlinks - 1] + 1 : 0; /* ascending */
		if (top > SCATTER_MAX_LINKS) {
			scatter = false;
		} else if (top > ls->cap_apos) { /* doubled: racks further on use higher ids */
			int cap = top > 2 * ls->cap_apos ? top : 2 * ls->cap_apos;
			int *na_ = calloc((size_t)cap, sizeof(int));
			if (!na_)
				goto nomem;
			free(ls->apos);
			ls->apos = na_;
			ls->cap_apos = cap;
		}
	}
	for (int i = 0; i < na; i++) {
		const hm_hjob_t *a = &m->jobs[ls->act[i]];
		ls->estart[i] = ne;
		for (int k = 0; k < a->pj->nlinks && scatter; k++)
			ls->apos[a->pj->links[k]] = k + 1;
		for (int k = lo; k < hi; k++) {
			int b = m->rjobs[k];
			double e;
			if (b == ls->act[i])
				continue;
			/* see hm_hjob_excess_on: the pair's own demands */
			e = scatter ? hm_pjob_excess_at(a->pj, ls->apos, m->jobs[b].pj, NULL)
				    : hm_pjob_excess(a->pj, m->jobs[b].pj, NULL);
			if (e <= 0)
				continue;
			if (ensure(ls, n + 1, ne + 1, 0) != HM_OK)
				goto nomem;
			ls->edges[ne].a = ls->act[i];
			ls->edges[ne].b = b;
			ls->edges[ne].e = e;
			ne++;
			if (act_of[b] >= 0)
				hm_uf_union(&uf, i, act_of[b]);
		}
		for (int k = 0; k < a->pj->nlinks && scatter; k++)
			ls->apos[a->pj->links[k]] = 0;
	}
	ls->estart[na] = ne;
	/* Groups in order of their smallest member; members in decreasing duty. */
	for (int i = 0; i < na; i++) {
		int root = hm_uf_find(&uf, i), nm = 0;
		if (root != i)
			continue;
		for (int k = 0; k < na; k++)
			if (hm_uf_find(&uf, k) == root)
				members[nm++] = k;
		for (int x = 1; x < nm; x++) {
			int v = members[x], y = x - 1;
			const hm_pjob_t *pv = m->jobs[ls->act[v]].pj;
			double dv = pv->burst_s / pv->T_s;
			while (y >= 0) {
				const hm_pjob_t *py = m->jobs[ls->act[members[y]]].pj;
				if (py->burst_s / py->T_s >= dv)
					break;
				members[y + 1] = members[y];
				y--;
			}
			members[y + 1] = v;
		}
		rc = solve_group(ls, m, members, nm, act_of);
		if (rc != HM_OK)
			goto out;
	}
layer:
	goto out;
nomem:
	rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: rack %d: out of memory", r);
out:
	for (int i = 0; ls->act_of && i < na; i++)
		ls->act_of[ls->act[i]] = -1;
	hm_uf_free(&uf);
	free(members);
	return rc;
}
