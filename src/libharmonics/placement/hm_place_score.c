/*
 * hm_place_score.c - the placement score (the formulas are in hm_place_score.h
 * and docs/placement.md): pairwise expected overlap of bursts under random
 * relative phases, the max-min shares during the overlap, the worst link of
 * each pair, and a residual when both jobs can be staggered.
 */
#include "hm_place_score.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	int link;
	double bits;
} xuse_t;

struct hm_place_scratch {
	int njobs;
	double *dx, *dy; /* per view job: worst slowdown added to x, to the job */
	char *seen;      /* per view job: shares a link with x */
	int *touched;    /* view jobs seen, in order */
	int cap_x;
	xuse_t *x; /* the scored job's links */
};

hm_place_scratch_t *hm_place_scratch_new(void)
{
	return calloc(1, sizeof(hm_place_scratch_t));
}

void hm_place_scratch_free(hm_place_scratch_t *s)
{
	if (!s)
		return;
	free(s->dx);
	free(s->dy);
	free(s->seen);
	free(s->touched);
	free(s->x);
	free(s);
}

static bool fit_jobs(hm_place_scratch_t *s, int njobs)
{
	if (s->njobs >= njobs && s->dx)
		return true;
	free(s->dx);
	free(s->dy);
	free(s->seen);
	free(s->touched);
	s->dx = calloc((size_t)njobs + 1, sizeof(double));
	s->dy = calloc((size_t)njobs + 1, sizeof(double));
	s->seen = calloc((size_t)njobs + 1, 1);
	s->touched = malloc(((size_t)njobs + 1) * sizeof(int));
	s->njobs = s->dx && s->dy && s->seen && s->touched ? njobs : 0;
	return s->njobs == njobs;
}

static int cmp_xuse(const void *a, const void *b)
{
	const xuse_t *x = a, *y = b;

	return (x->link > y->link) - (x->link < y->link);
}

/* x's bits per link, summed over phases, sorted by link; -1 out of memory or bad link. */
static int x_links(hm_place_scratch_t *s, const hm_topo_t *t, const hm_traffic_t *tr)
{
	int n = 0, m = 0;

	for (int p = 0; p < tr->nphases; p++)
		n += tr->phases[p].nlinks;
	if (n > s->cap_x) {
		xuse_t *nx = realloc(s->x, (size_t)n * sizeof(*nx));

		if (!nx)
			return -1;
		s->x = nx;
		s->cap_x = n;
	}
	n = 0;
	for (int p = 0; p < tr->nphases; p++) {
		const hm_phase_load_t *ph = &tr->phases[p];

		for (int i = 0; i < ph->nlinks; i++) {
			if (ph->links[i] < 0 || ph->links[i] >= t->nlinks)
				return -1;
			s->x[n++] = (xuse_t){ph->links[i], ph->flow_bytes * 8.0 * ph->flows[i]};
		}
	}
	qsort(s->x, (size_t)n, sizeof(*s->x), cmp_xuse);
	for (int i = 0; i < n; i++) {
		if (m > 0 && s->x[m - 1].link == s->x[i].link)
			s->x[m - 1].bits += s->x[i].bits;
		else
			s->x[m++] = s->x[i];
	}
	return m;
}

static bool pos(double x)
{
	return x > 0 && isfinite(x);
}

/* Max-min shares of two demands (fractions of one link) that exceed it together. */
static void shares(double ax, double ay, double *sx, double *sy)
{
	if (ax <= 0.5) {
		*sx = ax;
		*sy = 1 - ax;
	} else if (ay <= 0.5) {
		*sy = ay;
		*sx = 1 - ay;
	} else {
		*sx = *sy = 0.5;
	}
}

/* The pair (x, y) on one link: y's full-link time ty; keeps each side's worst link. */
static void pair(hm_place_scratch_t *s, const hm_lview_job_t *x, double ax,
		 const hm_lview_job_t *jy, int y, double ty, double util, int *nt)
{
	double Mx = x->burst_s, Px = x->period_s, My = jy->burst_s, Py = jy->period_s;
	double ay, sx, sy, dx, dy, f = 1;

	if (!s->seen[y]) {
		s->seen[y] = 1;
		s->touched[(*nt)++] = y;
	}
	if (!pos(My) || !pos(Py) || !pos(ty))
		return;
	ay = fmin(1, ty / My);
	if (ax + ay <= 1)
		return; /* both fit in the link together */
	shares(ax, ay, &sx, &sy);
	if (x->scheduled && jy->scheduled && util <= 1)
		f = HM_PLACE_SCHED_RESIDUAL;
	dx = f * Mx * fmin(1, My / Py) * (ax / sx - 1) / Px;
	dy = f * My * fmin(1, Mx / Px) * (ay / sy - 1) / Py;
	if (dx > s->dx[y])
		s->dx[y] = dx;
	if (dy > s->dy[y])
		s->dy[y] = dy;
}

hm_rc_t hm_place_score(const hm_lview_t *v, const hm_lview_job_t *x, hm_place_scratch_t *s,
		       hm_place_score_t *out, hm_err_t *err)
{
	hm_place_scratch_t *own = NULL;
	const hm_topo_t *t;
	int nx, nt = 0;
	double Mx, Px;

	if (!out)
		return hm_err_set(err, HM_ERR_INVAL, "hm_place_score: NULL output");
	memset(out, 0, sizeof(*out));
	if (!v || !v->topo || !x || !x->tr)
		return hm_err_set(err, HM_ERR_INVAL, "hm_place_score: NULL view, job or traffic");
	t = v->topo;
	for (const hm_lview_t *w = v->next; w; w = w->next)
		if (w->topo != t)
			return hm_err_set(err, HM_ERR_INVAL,
					  "hm_place_score: chained views of different topologies");
	Mx = x->burst_s;
	Px = x->period_s;
	if (!s && !(s = own = hm_place_scratch_new()))
		return hm_err_set(err, HM_ERR_NOMEM, "placement score: out of memory");
	if (!fit_jobs(s, hm_lview_njobs(v))) {
		hm_place_scratch_free(own);
		return hm_err_set(err, HM_ERR_NOMEM, "placement score: out of memory");
	}
	nx = x_links(s, t, x->tr);
	if (nx < 0) {
		hm_place_scratch_free(own);
		return hm_err_set(err, HM_ERR_INVAL,
				  "hm_place_score: job %u: traffic outside the topology or out of "
				  "memory",
				  x->id);
	}
	for (int i = 0; i < nx; i++) {
		int l = s->x[i].link, base = 0;
		double C = t->links[l].capacity_bps, tx = 0, ax = 0, util = 0;
		bool shared = false, sized = pos(C) && pos(Mx) && pos(Px) && pos(s->x[i].bits);

		if (sized) {
			tx = s->x[i].bits / C;
			ax = fmin(1, tx / Mx);
			util = hm_lview_link_util(v, l) + tx / Px;
		}
		for (const hm_lview_t *w = v; w; base += w->njobs, w = w->next) {
			int b = w->use_off[l], e = w->use_off[l + 1];

			shared |= e > b;
			for (int k = b; k < e && sized; k++)
				pair(s, x, ax, &w->jobs[w->use[k].job], base + w->use[k].job,
				     w->use[k].bits / C, util, &nt);
		}
		out->shared_links += shared;
	}
	for (int k = 0; k < nt; k++) {
		int y = s->touched[k];

		out->self += s->dx[y];
		out->others += s->dy[y];
		s->dx[y] = s->dy[y] = 0;
		s->seen[y] = 0;
	}
	out->shared_jobs = nt;
	out->total = out->self + out->others;
	hm_place_scratch_free(own);
	return HM_OK;
}

static int key_of(const int *ring_key, int h)
{
	return ring_key ? ring_key[h] : 0;
}

hm_rc_t hm_place_cand_placement(const hm_topo_t *t, const hm_place_cand_t *c, int gpus_per_node,
				const int *ring_key, hm_placement_t *out, hm_err_t *err)
{
	if (!out)
		return hm_err_set(err, HM_ERR_INVAL, "hm_place_cand_placement: NULL output");
	memset(out, 0, sizeof(*out));
	if (!t || !c || c->nhosts < 1 || !c->hosts || !c->units)
		return hm_err_set(err, HM_ERR_INVAL, "hm_place_cand_placement: empty candidate");
	out->slots = calloc((size_t)c->nhosts, sizeof(*out->slots));
	if (!out->slots)
		return hm_err_set(err, HM_ERR_NOMEM, "placement: out of memory");
	for (int i = 0; i < c->nhosts; i++) {
		int h = c->hosts[i], g;

		if (h < 0 || h >= t->nhosts) {
			hm_placement_free(out);
			return hm_err_set(err, HM_ERR_INVAL, "candidate host %d outside 0..%d", h,
					  t->nhosts - 1);
		}
		if (gpus_per_node < 0)
			g = c->units[i];
		else
			g = gpus_per_node > 0 && gpus_per_node < t->hosts[h].gpus
				? gpus_per_node
				: t->hosts[h].gpus;
		out->slots[out->nslots++] = (hm_slot_t){.host = h, .gpus = g};
	}
	/* Stable insertion sort by ring key (equal keys keep the candidate's order). */
	for (int i = 1; ring_key && i < out->nslots; i++) {
		hm_slot_t x = out->slots[i];
		int j = i;

		for (; j > 0 && key_of(ring_key, x.host) < key_of(ring_key, out->slots[j - 1].host);
		     j--)
			out->slots[j] = out->slots[j - 1];
		out->slots[j] = x;
	}
	return HM_OK;
}

/* Best score of one candidate over its first max_paths equal-cost paths. */
static hm_rc_t score_cand(const hm_topo_t *t, const hm_lview_t *v, const hm_place_job_t *job,
			  const hm_place_cand_t *c, hm_place_scratch_t *s, hm_place_score_t *best,
			  hm_err_t *err)
{
	hm_placement_t pl;
	int np = 1;
	hm_rc_t rc;

	memset(best, 0, sizeof(*best));
	best->total = INFINITY;
	rc = hm_place_cand_placement(t, c, job->gpus_per_node, job->ring_key, &pl, err);
	if (rc != HM_OK)
		return rc;
	for (int i = 0; i < pl.nslots; i++) {
		int k = hm_topo_npaths_plane(t, job->plane, pl.slots[i].host,
					     pl.slots[(i + 1) % pl.nslots].host);

		np = k > np ? k : np;
	}
	if (np > job->max_paths)
		np = job->max_paths > 0 ? job->max_paths : 1;
	for (int p = 0; p < np && rc == HM_OK; p++) {
		hm_traffic_t tr;
		hm_lview_job_t x = {.id = job->id, .scheduled = job->scheduled, .tr = &tr};
		hm_place_score_t sc;

		memset(&tr, 0, sizeof(tr));
		rc = hm_traffic_derive_plane(t, job->plane, job->profile, &pl, p, &tr, err);
		if (rc == HM_OK) {
			for (int i = 0; i < pl.nslots; i++)
				x.gpus += pl.slots[i].gpus;
			hm_lview_job_times(job->profile, &tr, &x.period_s, &x.burst_s);
			if (v)
				rc = hm_place_score(v, &x, s, &sc, err);
			else
				memset(&sc, 0, sizeof(sc));
			if (rc == HM_OK && sc.total < best->total)
				*best = sc;
		}
		hm_traffic_free(&tr);
	}
	hm_placement_free(&pl);
	return rc;
}

int hm_place_choose(const hm_topo_t *t, const hm_lview_t *v, const hm_place_job_t *job,
		    const hm_place_cand_t *cands, int n, hm_place_score_t *scores, hm_err_t *err)
{
	hm_place_scratch_t *s;
	hm_place_score_t sc, best_sc;
	int best = -1;

	if (!t || !job || !job->profile || !cands || n < 1) {
		hm_err_set(err, HM_ERR_INVAL, "hm_place_choose: no topology, job or candidates");
		return -1;
	}
	if (v && v->topo != t) {
		hm_err_set(err, HM_ERR_INVAL, "hm_place_choose: view of another topology");
		return -1;
	}
	if (!(s = hm_place_scratch_new())) {
		hm_err_set(err, HM_ERR_NOMEM, "placement: out of memory");
		return -1;
	}
	for (int k = 0; k < n; k++) {
		hm_err_t e = {0};

		if (score_cand(t, v, job, &cands[k], s, &sc, &e) != HM_OK) {
			if (e.rc == HM_ERR_NOMEM) {
				if (err)
					*err = e;
				best = -1;
				break;
			}
			memset(&sc, 0, sizeof(sc));
			sc.total = INFINITY; /* not derivable: never chosen */
		}
		if (scores)
			scores[k] = sc;
		if (!isfinite(sc.total))
			continue;
		if (best < 0 || sc.total < best_sc.total - HM_PLACE_SCORE_EPS ||
		    (sc.total <= best_sc.total + HM_PLACE_SCORE_EPS &&
		     cands[k].nracks < cands[best].nracks)) {
			best = k;
			best_sc = sc;
		}
	}
	hm_place_scratch_free(s);
	if (best < 0 && err && err->rc == HM_OK)
		hm_err_set(err, HM_ERR_INVAL, "hm_place_choose: no candidate's traffic derives");
	return best;
}
