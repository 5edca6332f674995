/*
 * hm_policy_harmonics.c - the two-tier Harmonics policy: the Global Coordinator
 * decides cross-rack jobs, then one Local Scheduler per rack decides the rest,
 * through cfg.racks (the rack leaders in the cluster) or in process (racks in
 * parallel threads when cfg.threads > 1; hm_harmonics_tier.h). The simulator and the Slurm
 * coordinator run exactly this code through hm_policy_harmonics.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_harmonics_check.h"
#include "hm_harmonics_global.h"
#include "hm_harmonics_local.h"
#include "hm_harmonics_tier.h"
#include "hm_policy.h"

typedef struct {
	hm_policy_cfg_t cfg;
	unsigned long epoch;
	hm_sim_eval_t *ev; /* the check's evaluator */
	int ev_cap;
	unsigned char *silent; /* per rack: no valid answer in the last round */
	int nsilent;
} hstate_t;

static hm_rc_t h_create(const hm_policy_cfg_t *cfg, void **state, hm_err_t *err)
{
	hstate_t *s;

	if (cfg->prio_levels < 1 || cfg->reserved_levels < 0 ||
	    cfg->reserved_levels >= cfg->prio_levels)
		return hm_err_set(err, HM_ERR_INVAL,
				  "harmonics: prio_levels %d with reserved_levels %d leaves no "
				  "class (accepted: prio_levels > reserved_levels >= 0)",
				  cfg->prio_levels, cfg->reserved_levels);
	s = calloc(1, sizeof(*s));
	if (!s)
		return hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory");
	s->cfg = *cfg;
	*state = s;
	return HM_OK;
}

static void h_destroy(void *state)
{
	hstate_t *s = state;

	if (s) {
		hm_sim_eval_free(s->ev);
		free(s->silent);
	}
	free(state);
}

/*
 * Equal-cost paths of every job (the Global Coordinator's links above the
 * racks): jobs in decreasing mean load (bits per contention-free iteration)
 * each take the path whose most loaded link is least utilised (Crux's rule,
 * hm_pol_choose_paths; ordered by load, which measured better than Crux's
 * intensity on the 847-host Clos: mean JCT 1747 against 1763 s, seed 1).
 * Written into the jobs' decisions before the model is built on them.
 */
static hm_rc_t choose_paths(hm_sched_ctx_t *ctx, hm_err_t *err)
{
	int n = ctx->njobs, *path = malloc(sizeof(int) * (size_t)(n + 1));
	double *key = malloc(sizeof(double) * (size_t)(n + 1));
	double *T = malloc(sizeof(double) * (size_t)(n + 1));
	hm_rc_t rc = HM_OK;
	bool multi = false;

	for (int i = 0; i < n; i++)
		multi |= ctx->jobs[i].npaths > 1;
	if (!path || !key || !T)
		rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory");
	if (rc == HM_OK && multi) {
		/* Contention-free iteration and bits per iteration on all its links. */
		for (int i = 0; i < n; i++) {
			const hm_traffic_t *tr = ctx->jobs[i].traffic;
			double bits = 0;
			T[i] = tr && tr->alone_iter_s > 0 ? tr->alone_iter_s : 1;
			for (int p = 0; tr && p < tr->nphases; p++)
				for (int k = 0; k < tr->phases[p].nlinks; k++)
					bits +=
					    tr->phases[p].flow_bytes * 8.0 * tr->phases[p].flows[k];
			key[i] = bits / T[i];
		}
		rc = hm_pol_choose_paths(ctx, T, key, 0, path, err);
		for (int i = 0; i < n && rc == HM_OK; i++)
			ctx->jobs[i].dec.path = path[i];
	}
	free(path);
	free(key);
	free(T);
	return rc;
}

static bool same_decision(const hm_decision_t *a, const hm_decision_t *b)
{
	return fabs(a->period_s - b->period_s) <= 1e-12 * (1 + fabs(a->period_s)) &&
	       fabs(a->shift_s - b->shift_s) <= 1e-12 * (1 + fabs(a->shift_s)) &&
	       fabs(a->guard_s - b->guard_s) <= 1e-12 * (1 + fabs(a->guard_s)) &&
	       a->origin_s == b->origin_s && a->prio == b->prio;
}

static hm_rc_t h_decide(void *state, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	hstate_t *s = state;
	hm_hcfg_t hc;
	hm_hmodel_t m;
	hm_hcheck_cfg_t cc = {.max_jobs = HM_CHECK_MAX_JOBS,
			      .max_events = HM_CHECK_MAX_EVENTS,
			      .search_events = HM_CHECK_SEARCH_EVENTS,
			      .keep = HM_CHECK_KEEP};
	hm_tier_stats_t ts = {0};
	hm_rc_t rc = HM_OK;
	int held = 0, cross = 0, changed = 0, pinned = 0, *path0 = NULL;
	hm_decision_t *plan = NULL;

	memset(&m, 0, sizeof(m));
	hm_hcfg_from_policy(&s->cfg, &hc);
	plan = malloc(sizeof(*plan) * (size_t)(ctx->njobs + 1));
	path0 = malloc(sizeof(int) * (size_t)(ctx->njobs + 1));
	if (!plan || !path0) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory");
		goto out;
	}
	for (int i = 0; i < ctx->njobs; i++)
		path0[i] = ctx->jobs[i].dec.path;
	rc = choose_paths(ctx, err);
	if (rc == HM_OK)
		rc = hm_hmodel_build(ctx, &hc, &m, err);
	if (rc == HM_OK && s->nsilent != m.nracks) { /* first round, or another topology */
		unsigned char *ns = calloc((size_t)m.nracks + 1, 1);
		if (!ns)
			rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory");
		free(s->silent);
		s->silent = ns;
		s->nsilent = ns ? m.nracks : 0;
	}
	if (rc == HM_OK)
		pinned = hm_tier_pin_silent(&m, s->silent, s->nsilent);
	if (rc == HM_OK)
		rc = hm_global_solve(&m, err);
	if (rc == HM_OK)
		rc = hm_tier_round(&m, s->epoch + 1, s->cfg.racks, s->cfg.threads, &ts, s->silent,
				   err);
	if (rc == HM_OK)
		rc = hm_hmodel_classes(&m, err);
	if (rc != HM_OK)
		goto out;
	s->epoch++;
	for (int i = 0; i < ctx->njobs; i++) {
		const hm_hjob_t *j = &m.jobs[i];
		hm_decision_t d = ctx->jobs[i].dec;

		if (j->hold) {
			d.period_s = j->P_s;
			d.shift_s = fmod(j->s_s, j->P_s);
			d.guard_s = j->guard_s;
			d.origin_s = 0;
			held++;
		} else {
			/* Free running: no holding and no one-time delay. */
			d.period_s = 0;
			d.shift_s = 0;
			d.guard_s = 0;
			d.origin_s = 0;
		}
		d.prio = j->prio;
		cross += j->rack == HM_HJOB_CROSS;
		plan[i] = d;
	}
	/* The plan of every small component against fair sharing and plain orders. */
	if (!s->cfg.plan_only)
		rc = hm_hcheck(ctx, &m, plan, &s->ev, &s->ev_cap, &cc, err);
	if (rc != HM_OK)
		goto out;
	for (int i = 0; i < ctx->njobs; i++) {
		hm_decision_t d = plan[i];
		ctx->jobs[i].dec.path = path0[i]; /* compared with what was in force */
		if (!same_decision(&d, &ctx->jobs[i].dec) || d.path != path0[i]) {
			d.epoch = s->epoch;
			changed++;
		} else {
			d.epoch = ctx->jobs[i].dec.epoch;
		}
		ctx->jobs[i].dec = d;
	}
	snprintf(ctx->note, sizeof(ctx->note),
		 "harmonics: %d jobs, %d cross-rack (%d free: a rack silent), %d holding slots, "
		 "%d changed; racks: %d asked, %d answered (%d by leaders); check: %d components, "
		 "%d replaced, %d of %d class moves taken",
		 ctx->njobs, cross, pinned, held, changed, ts.racks_asked, ts.racks_answered,
		 ts.racks_by_leader, cc.checked, cc.changed, cc.taken, cc.moves);
out:
	if (rc != HM_OK && path0) /* nothing decided: the decisions in force stand */
		for (int i = 0; i < ctx->njobs; i++)
			ctx->jobs[i].dec.path = path0[i];
	hm_hmodel_free(&m);
	free(plan);
	free(path0);
	return rc;
}

const hm_policy_ops_t hm_policy_harmonics = {
    .name = "harmonics",
    .description = "two tiers: Local Schedulers per rack (harmonic slot periods, shifts, "
		   "classes) and a Global Coordinator for cross-rack jobs",
    .create = h_create,
    .decide = h_decide,
    .destroy = h_destroy,
    .place = NULL,
    .uses_epochs = true,
};
