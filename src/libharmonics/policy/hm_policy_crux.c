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

static hm_rc_t c_decide(void *state, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	cstate_t *s = state;
	hm_rc_t rc = HM_OK;
	hm_pview_t v0 = {0}, v = {0};
	const hm_traffic_t **trs = NULL;
	int *path = NULL, *stamp = NULL, *ea = NULL, *eb = NULL, *level = NULL, *comp_of = NULL;
	int *members = NULL, *local = NULL;
	double *P = NULL, *I = NULL, *ew = NULL, *lprio = NULL;
	int ne = 0, ecap = 0, ref = -1, K = s->cfg.prio_levels - s->cfg.reserved_levels;
	double deadline = s->cfg.budget_s > 0 ? hm_mono_s() + s->cfg.budget_s : 0;
	hm_uf_t uf = {0};
	hm_prio_kmemo_t *kmemo = NULL;
	int cut = 0, ncomp = 0;

	rc = hm_pview_build(ctx, NULL, &v0, err);
	if (rc != HM_OK)
		goto out;
	path = malloc(sizeof(int) * (size_t)(ctx->njobs + 1));
	trs = malloc(sizeof(*trs) * (size_t)(ctx->njobs + 1));
	I = calloc((size_t)ctx->njobs + 1, sizeof(double));
	P = calloc((size_t)ctx->njobs + 1, sizeof(double));
	if (!path || !trs || !I || !P) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
		goto out;
	}
	for (int i = 0; i < ctx->njobs; i++) {
		I[i] = intensity(&v0.jobs[i]);
		P[i] = v0.jobs[i].T_s; /* P is filled with priorities below */
	}
	rc = hm_pol_choose_paths(ctx, P, I, 0, path, err);
	if (rc != HM_OK)
		goto out;
	memset(P, 0, sizeof(double) * (size_t)ctx->njobs);
	for (int i = 0; i < ctx->njobs; i++)
		trs[i] = hm_pol_traffic(&ctx->jobs[i], path[i]);
	rc = hm_pview_build(ctx, trs, &v, err);
	if (rc != HM_OK)
		goto out;
	stamp = malloc(sizeof(int) * (size_t)(v.njobs + 1));
	level = calloc((size_t)v.njobs + 1, sizeof(int));
	comp_of = malloc(sizeof(int) * (size_t)(v.njobs + 1));
	members = malloc(sizeof(int) * (size_t)(v.njobs + 1));
	local = malloc(sizeof(int) * (size_t)(v.njobs + 1));
	lprio = malloc(sizeof(double) * (size_t)(v.njobs + 1));
	if (!stamp || !level || !comp_of || !members || !local || !lprio ||
	    hm_uf_init(&uf, v.njobs) != HM_OK) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
		goto out;
	}
	/* Intensity; the reference is the job with the most traffic per iteration. */
	for (int i = 0; i < v.njobs; i++) {
		I[i] = intensity(&v.jobs[i]);
		if (v.jobs[i].nlinks > 0 && (ref < 0 || v.jobs[i].bits > v.jobs[ref].bits))
			ref = i;
		stamp[i] = -1;
	}
	kmemo = hm_prio_kmemo_new(v.njobs); /* NULL (no memory): k computed per job */
	for (int i = 0; i < v.njobs; i++) {
		const hm_pjob_t *p = &v.jobs[i], *r = ref >= 0 ? &v.jobs[ref] : NULL;
		double k = 1.0;
		if (p->nlinks == 0)
			continue;
		if (r && i != ref)
			k = hm_prio_kmemo_k(kmemo, r->comp_s, r->burst_s, r->gpus, p->comp_s,
					    p->burst_s, p->gpus);
		P[i] = k * I[i];
	}
	/* Contention edges: jobs sharing a link, each pair once. */
	for (int i = 0; i < v.njobs; i++) {
		const hm_pjob_t *p = &v.jobs[i];
		for (int m = 0; m < p->nlinks; m++) {
			int l = p->links[m];
			for (int q = v.lstart[l]; q < v.lstart[l + 1]; q++) {
				int j = v.ljobs[q];
				if (j <= i || stamp[j] == i)
					continue;
				stamp[j] = i;
				if (ne == ecap) {
					int nc = ecap ? 2 * ecap : 1024;
					int *na = realloc(ea, sizeof(int) * (size_t)nc);
					int *nb = na ? realloc(eb, sizeof(int) * (size_t)nc) : NULL;
					double *nw =
					    nb ? realloc(ew, sizeof(double) * (size_t)nc) : NULL;
					if (na)
						ea = na;
					if (nb)
						eb = nb;
					if (!nw) {
						rc = hm_err_set(err, HM_ERR_NOMEM,
								"crux: out of memory");
						goto out;
					}
					ew = nw;
					ecap = nc;
				}
				ea[ne] = i;
				eb[ne] = j;
				ew[ne] = P[i] > P[j] || (P[i] == P[j] && i < j) ? I[i] : I[j];
				ne++;
				hm_uf_union(&uf, i, j);
			}
		}
	}
	/* Compress each contention component to K levels (jobs and edges bucketed
	 * by component so the work stays linear in their number). */
	{
		int *gstart = calloc((size_t)v.njobs + 2, sizeof(int));
		int *estart = calloc((size_t)v.njobs + 2, sizeof(int));
		int *gfill = calloc((size_t)v.njobs + 1, sizeof(int));
		int *eorder = malloc(sizeof(int) * (size_t)(ne + 1));
		int *la = malloc(sizeof(int) * (size_t)(ne + 1));
		int *lb = malloc(sizeof(int) * (size_t)(ne + 1));
		double *lw = malloc(sizeof(double) * (size_t)(ne + 1));
		int *lv = malloc(sizeof(int) * (size_t)(v.njobs + 1));

		if (!gstart || !estart || !gfill || !eorder || !la || !lb || !lw || !lv) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
			goto comp_out;
		}
		for (int i = 0; i < v.njobs; i++) {
			comp_of[i] = hm_uf_find(&uf, i);
			if (v.jobs[i].nlinks > 0)
				gstart[comp_of[i] + 1]++;
		}
		for (int e = 0; e < ne; e++)
			estart[comp_of[ea[e]] + 1]++;
		for (int r = 0; r < v.njobs; r++) {
			gstart[r + 1] += gstart[r];
			estart[r + 1] += estart[r];
		}
		for (int i = 0; i < v.njobs; i++)
			if (v.jobs[i].nlinks > 0) {
				int r = comp_of[i];
				local[i] = gfill[r];
				members[gstart[r] + gfill[r]++] = i;
			}
		memset(gfill, 0, sizeof(int) * (size_t)v.njobs);
		for (int e = 0; e < ne; e++) {
			int r = comp_of[ea[e]];
			eorder[estart[r] + gfill[r]++] = e;
		}
		for (int r = 0; r < v.njobs && rc == HM_OK; r++) {
			int nm = gstart[r + 1] - gstart[r], nel = estart[r + 1] - estart[r], cs = 0;
			if (nm == 0)
				continue;
			ncomp++;
			for (int q = 0; q < nm; q++)
				lprio[q] = P[members[gstart[r] + q]];
			for (int q = 0; q < nel; q++) {
				int e = eorder[estart[r] + q];
				la[q] = local[ea[e]];
				lb[q] = local[eb[e]];
				lw[q] = ew[e];
			}
			if (hm_prio_compress(nm, lprio, nel, la, lb, lw, K, CRUX_ORDERS,
					     s->cfg.seed + (uint64_t)r, deadline, lv, &cs) < 0) {
				rc = hm_err_set(err, HM_ERR_NOMEM, "crux: out of memory");
				break;
			}
			cut |= cs;
			for (int q = 0; q < nm; q++)
				level[members[gstart[r] + q]] = lv[q];
		}
	comp_out:
		free(gstart);
		free(estart);
		free(gfill);
		free(eorder);
		free(la);
		free(lb);
		free(lw);
		free(lv);
		if (rc != HM_OK)
			goto out;
	}
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
	if (cut)
		ctx->budget_exhausted = true;
	snprintf(ctx->note, sizeof(ctx->note), "crux: %d jobs, %d contention edges, %d groups%s",
		 ctx->njobs, ne, ncomp, cut ? ", budget cut the order sampling" : "");
out:
	hm_uf_free(&uf);
	hm_pview_free(&v0);
	hm_pview_free(&v);
	free(trs);
	free(path);
	free(stamp);
	free(ea);
	free(eb);
	free(ew);
	free(level);
	free(comp_of);
	free(members);
	free(local);
	free(lprio);
	free(P);
	free(I);
	hm_prio_kmemo_free(kmemo);
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
