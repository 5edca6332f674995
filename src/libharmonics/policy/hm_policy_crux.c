/*
 * hm_policy_crux.c - Crux (SIGCOMM'24): GPU intensity, intensity-ordered path
 * selection over equal-cost paths, priority P = k * I with the k correction,
 * and DAG priority compression to the hardware classes. Departures from the
 * paper are listed in docs/algorithms.md.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_prio.h"
#include "hm_clock.h"
#include "hm_pol_common.h"
#include "hm_policy.h"

#define CRUX_ORDERS 10

/* ---- the policy ---- */

typedef struct {
	hm_policy_cfg_t cfg;
	unsigned long epoch;
} cstate_t;

static hm_rc_t c_create(const hm_policy_cfg_t *cfg, void **state, hm_err_t *err)
{
	cstate_t *s;

	if (cfg->prio_levels < 1 || cfg->reserved_levels < 0 ||
	    cfg->reserved_levels >= cfg->prio_levels)
		return hm_err_set(err, HM_ERR_INVAL,
				  "crux: prio_levels %d with reserved_levels %d leaves no class "
				  "(accepted: prio_levels > reserved_levels >= 0)",
				  cfg->prio_levels, cfg->reserved_levels);
	s = calloc(1, sizeof(*s));
	if (!s)
		return hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
	s->cfg = *cfg;
	*state = s;
	return HM_OK;
}

static void c_destroy(void *state)
{
	free(state);
}

static double intensity(const hm_pjob_t *p)
{
	return p->bneck_s > 0 ? p->gpus * p->comp_s / p->bneck_s : 0;
}

/* Contention edges, each pair of jobs sharing a link once; w is the intensity of
 * the endpoint with the higher priority. */
typedef struct {
	int *a, *b;
	double *w;
	int n, cap;
} cedges_t;

static void cedges_free(cedges_t *e)
{
	free(e->a);
	free(e->b);
	free(e->w);
}

static hm_rc_t cedges_push(cedges_t *e, int a, int b, double w, hm_err_t *err)
{
	if (e->n == e->cap) {
		int nc = e->cap ? 2 * e->cap : 1024;
		int *na = realloc(e->a, sizeof(int) * (size_t)nc);
		int *nb = na ? realloc(e->b, sizeof(int) * (size_t)nc) : NULL;
		double *nw = nb ? realloc(e->w, sizeof(double) * (size_t)nc) : NULL;

		/* Keep what realloc moved, so cedges_free releases it. */
		if (na)
			e->a = na;
		if (nb)
			e->b = nb;
		if (!nw)
			return hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
		e->w = nw;
		e->cap = nc;
	}
	e->a[e->n] = a;
	e->b[e->n] = b;
	e->w[e->n] = w;
	e->n++;
	return HM_OK;
}

/* Intensity-ordered ECMP paths, from a view of the jobs on their current paths;
 * I and T_s are scratch of ctx->njobs (the caller reuses them). */
static hm_rc_t choose_paths(hm_sched_ctx_t *ctx, int *path, double *I, double *T_s, hm_err_t *err)
{
	hm_pview_t v0 = {0};
	hm_rc_t rc = hm_pview_build(ctx, NULL, &v0, err);

	if (rc != HM_OK)
		goto out;
	for (int i = 0; i < ctx->njobs; i++) {
		I[i] = intensity(&v0.jobs[i]);
		T_s[i] = v0.jobs[i].T_s;
	}
	rc = hm_pol_choose_paths(ctx, T_s, I, 0, path, err);
out:
	hm_pview_free(&v0);
	return rc;
}

/* P = k * I; k relates each job to the reference, the job with the most traffic
 * per iteration. Jobs without links keep P = 0. */
static void crux_priorities(const hm_pview_t *v, double *I, double *P)
{
	hm_prio_kmemo_t *kmemo = NULL;
	int ref = -1;

	for (int i = 0; i < v->njobs; i++) {
		I[i] = intensity(&v->jobs[i]);
		if (v->jobs[i].nlinks > 0 && (ref < 0 || v->jobs[i].bits > v->jobs[ref].bits))
			ref = i;
	}
	kmemo = hm_prio_kmemo_new(v->njobs); /* NULL (no memory): k computed per job */
	for (int i = 0; i < v->njobs; i++) {
		const hm_pjob_t *p = &v->jobs[i], *r = ref >= 0 ? &v->jobs[ref] : NULL;
		double k = 1.0;
		if (p->nlinks == 0)
			continue;
		if (r && i != ref)
			k = hm_prio_kmemo_k(kmemo, r->comp_s, r->burst_s, r->gpus, p->comp_s,
					    p->burst_s, p->gpus);
		P[i] = k * I[i];
	}
	hm_prio_kmemo_free(kmemo);
}

/* Jobs sharing a link: one edge per pair, and the pair joined in uf. */
static hm_rc_t contention_edges(const hm_pview_t *v, const double *P, const double *I, hm_uf_t *uf,
				cedges_t *e, hm_err_t *err)
{
	int *stamp = malloc(sizeof(int) * (size_t)(v->njobs + 1));
	hm_rc_t rc = HM_OK;

	if (!stamp) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
		goto out;
	}
	for (int i = 0; i < v->njobs; i++)
		stamp[i] = -1;
	for (int i = 0; i < v->njobs; i++) {
		const hm_pjob_t *p = &v->jobs[i];
		for (int m = 0; m < p->nlinks; m++) {
			int l = p->links[m];
			for (int q = v->lstart[l]; q < v->lstart[l + 1]; q++) {
				int j = v->ljobs[q];
				if (j <= i || stamp[j] == i)
					continue;
				stamp[j] = i;
				rc = cedges_push(
				    e, i, j, P[i] > P[j] || (P[i] == P[j] && i < j) ? I[i] : I[j],
				    err);
				if (rc != HM_OK)
					goto out;
				hm_uf_union(uf, i, j);
			}
		}
	}
out:
	free(stamp);
	return rc;
}

/*
 * Jobs on links and edges bucketed by contention component (CSR), so that
 * compressing every component stays linear in their number: component r has
 * jobs members[gstart[r] .. gstart[r + 1]) (local[i] is job i's index there)
 * and edges eorder[estart[r] .. estart[r + 1]).
 */
typedef struct {
	int *gstart, *members, *local;
	int *estart, *eorder;
} comps_t;

static void comps_free(comps_t *g)
{
	free(g->gstart);
	free(g->members);
	free(g->local);
	free(g->estart);
	free(g->eorder);
}

static hm_rc_t comps_build(comps_t *g, const hm_pview_t *v, const cedges_t *e, hm_uf_t *uf,
			   hm_err_t *err)
{
	int *comp_of = malloc(sizeof(int) * (size_t)(v->njobs + 1));
	int *gfill = calloc((size_t)v->njobs + 1, sizeof(int));
	hm_rc_t rc = HM_OK;

	g->gstart = calloc((size_t)v->njobs + 2, sizeof(int));
	g->members = malloc(sizeof(int) * (size_t)(v->njobs + 1));
	g->local = malloc(sizeof(int) * (size_t)(v->njobs + 1));
	g->estart = calloc((size_t)v->njobs + 2, sizeof(int));
	g->eorder = malloc(sizeof(int) * (size_t)(e->n + 1));
	if (!comp_of || !gfill || !g->gstart || !g->members || !g->local || !g->estart ||
	    !g->eorder) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
		goto out;
	}
	for (int i = 0; i < v->njobs; i++) {
		comp_of[i] = hm_uf_find(uf, i);
		if (v->jobs[i].nlinks > 0)
			g->gstart[comp_of[i] + 1]++;
	}
	for (int k = 0; k < e->n; k++)
		g->estart[comp_of[e->a[k]] + 1]++;
	for (int r = 0; r < v->njobs; r++) {
		g->gstart[r + 1] += g->gstart[r];
		g->estart[r + 1] += g->estart[r];
	}
	for (int i = 0; i < v->njobs; i++)
		if (v->jobs[i].nlinks > 0) {
			int r = comp_of[i];
			g->local[i] = gfill[r];
			g->members[g->gstart[r] + gfill[r]++] = i;
		}
	memset(gfill, 0, sizeof(int) * (size_t)v->njobs);
	for (int k = 0; k < e->n; k++) {
		int r = comp_of[e->a[k]];
		g->eorder[g->estart[r] + gfill[r]++] = k;
	}
out:
	free(comp_of);
	free(gfill);
	return rc;
}

/* Compress each contention component to the K job classes: level[i] per job. */
static hm_rc_t compress_components(const cstate_t *s, const hm_pview_t *v, const cedges_t *e,
				   const double *P, hm_uf_t *uf, double deadline_s, int *level,
				   int *ncomp, int *cut, hm_err_t *err)
{
	int K = s->cfg.prio_levels - s->cfg.reserved_levels;
	comps_t g = {0};
	double *lprio = malloc(sizeof(double) * (size_t)(v->njobs + 1));
	double *lw = malloc(sizeof(double) * (size_t)(e->n + 1));
	int *la = malloc(sizeof(int) * (size_t)(e->n + 1));
	int *lb = malloc(sizeof(int) * (size_t)(e->n + 1));
	int *lv = malloc(sizeof(int) * (size_t)(v->njobs + 1));
	hm_rc_t rc = HM_OK;

	if (!lprio || !lw || !la || !lb || !lv) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
		goto out;
	}
	if ((rc = comps_build(&g, v, e, uf, err)) != HM_OK)
		goto out;
	for (int r = 0; r < v->njobs; r++) {
		const int *mem = &g.members[g.gstart[r]], *eo = &g.eorder[g.estart[r]];
		int nm = g.gstart[r + 1] - g.gstart[r], nel = g.estart[r + 1] - g.estart[r], cs = 0;
		if (nm == 0)
			continue;
		(*ncomp)++;
		for (int q = 0; q < nm; q++)
			lprio[q] = P[mem[q]];
		for (int q = 0; q < nel; q++) {
			la[q] = g.local[e->a[eo[q]]];
			lb[q] = g.local[e->b[eo[q]]];
			lw[q] = e->w[eo[q]];
		}
		if (hm_prio_compress(nm, lprio, nel, la, lb, lw, K, CRUX_ORDERS,
				     s->cfg.seed + (uint64_t)r, deadline_s, lv, &cs) < 0) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
			goto out;
		}
		*cut |= cs;
		for (int q = 0; q < nm; q++)
			level[mem[q]] = lv[q];
	}
out:
	comps_free(&g);
	free(lprio);
	free(lw);
	free(la);
	free(lb);
	free(lv);
	return rc;
}

/* Classes and paths into the jobs' decisions; the epoch moves only on a change. */
static void apply_decisions(cstate_t *s, hm_sched_ctx_t *ctx, const int *level, const int *path)
{
	s->epoch++;
	for (int i = 0; i < ctx->njobs; i++) {
		hm_decision_t d = ctx->jobs[i].dec;
		d.prio = level[i];
		d.path = path[i];
		d.period_s = 0;
		d.shift_s = 0;
		d.guard_s = 0;
		if (d.prio != ctx->jobs[i].dec.prio || d.path != ctx->jobs[i].dec.path ||
		    ctx->jobs[i].dec.period_s != 0 || ctx->jobs[i].dec.shift_s != 0) {
			d.epoch = s->epoch;
			ctx->jobs[i].dec = d;
		}
	}
}

static hm_rc_t c_decide(void *state, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	cstate_t *s = state;
	double deadline_s = s->cfg.budget_s > 0 ? hm_mono_s() + s->cfg.budget_s : 0;
	hm_pview_t v = {0};
	const hm_traffic_t **trs = NULL;
	int *path = NULL, *level = NULL;
	double *P = NULL, *I = NULL;
	hm_uf_t uf = {0};
	cedges_t e = {0};
	int cut = 0, ncomp = 0;
	hm_rc_t rc = HM_OK;

	path = malloc(sizeof(int) * (size_t)(ctx->njobs + 1));
	trs = malloc(sizeof(*trs) * (size_t)(ctx->njobs + 1));
	I = calloc((size_t)ctx->njobs + 1, sizeof(double));
	P = calloc((size_t)ctx->njobs + 1, sizeof(double));
	if (!path || !trs || !I || !P) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
		goto out;
	}
	if ((rc = choose_paths(ctx, path, I, P, err)) != HM_OK)
		goto out;
	memset(P, 0, sizeof(double) * (size_t)ctx->njobs); /* now the priorities */
	for (int i = 0; i < ctx->njobs; i++)
		trs[i] = hm_pol_traffic(&ctx->jobs[i], path[i]);
	if ((rc = hm_pview_build(ctx, trs, &v, err)) != HM_OK)
		goto out;
	level = calloc((size_t)v.njobs + 1, sizeof(int));
	if (!level || hm_uf_init(&uf, v.njobs) != HM_OK) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
		goto out;
	}
	crux_priorities(&v, I, P);
	if ((rc = contention_edges(&v, P, I, &uf, &e, err)) != HM_OK)
		goto out;
	rc = compress_components(s, &v, &e, P, &uf, deadline_s, level, &ncomp, &cut, err);
	if (rc != HM_OK)
		goto out;
	apply_decisions(s, ctx, level, path);
	if (cut)
		ctx->budget_exhausted = true;
	snprintf(ctx->note, sizeof(ctx->note), "crux: %d jobs, %d contention edges, %d groups%s",
		 ctx->njobs, e.n, ncomp, cut ? ", budget cut the order sampling" : "");
out:
	hm_uf_free(&uf);
	hm_pview_free(&v);
	cedges_free(&e);
	free(trs);
	free(path);
	free(level);
	free(P);
	free(I);
	return rc;
}

const hm_policy_ops_t hm_policy_crux = {
    .name = "crux",
    .description = "Crux (SIGCOMM'24): GPU-intensity priorities P = k*I compressed to the "
		   "hardware classes, intensity-ordered ECMP path selection",
    .create = c_create,
    .decide = c_decide,
    .destroy = c_destroy,
    .place = NULL,
    .uses_epochs = false,
};
