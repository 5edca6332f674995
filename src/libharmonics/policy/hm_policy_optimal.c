/*
 * optimal: the reference the other policies are measured against. It searches
 * the decision space they use (free running, strict priority orders, paths,
 * one-time delays, slot holding with guards sized to the jitter) and judges
 * every candidate by running it in the simulator's own model (hm_sim_eval_*:
 * the same iteration, slot and max-min semantics, seeded compute jitter), so
 * the numbers it compares are the numbers the simulator will produce, up to
 * the jitter draws. Objective, maximised: the mean over a component's jobs of
 * their progress rate, contention-free iteration time over mean iteration
 * time. A job's completion moves by the progress it loses, so this is mean
 * JCT decision by decision; the mean slowdown would not be (it prefers
 * sharing to strict order where both lose the same progress).
 *
 * Candidates, per component of jobs that can share a link (on any of their
 * paths; components are independent, so they are solved apart):
 *   - the decisions in force (no change is a candidate: changes cost waits);
 *   - fair sharing; the decisions of crux, cassini and harmonics, each run on
 *     the same context (crux and cassini only on arrivals and departures, as
 *     in the simulator; their last decisions are kept in between);
 *   - priority orders by several keys, and slot holding on one common period
 *     (harmonic periods for shorter jobs) with margins of 1, 2 and 3 jitter
 *     deviations and bursts packed back to back;
 * then first-improvement local search from the best: swap two jobs' classes,
 * move a job to another class, another path, or let a held job run free.
 *
 * Budget (cfg.budget_s, wall clock per decision, and cfg.budget_evals,
 * evaluations per decision when > 0): both are checked before every
 * evaluation; the evaluation cap makes a cut search repeatable whatever the
 * machine's load. Every component's candidates are evaluated before any
 * local search. When the budget runs out the best decision found is applied
 * (components not reached keep their decisions in force), ctx->budget_exhausted
 * is set and the note says so. Without a cut the decision is deterministic.
 */
#include "hm_clock.h"
#include "hm_pol_common.h"
#include "hm_pol_eval.h"
#include "hm_policy.h"
#include "hm_sim.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPT_DEFAULT_CV 0.02     /* jitter assumed when cfg.jitter_cv is 0 */
#define OPT_PERIODS    15       /* evaluation horizon: periods of the slowest job */
#define OPT_SEEDS      2        /* jitter draws per evaluation (the same for every candidate) */
#define OPT_MAX_EVENTS 400000.0 /* horizon shortened so one run stays under this */
#define OPT_END_EVENTS 400000.0 /* the same for runs until the jobs end */
#define OPT_KEEP       0.005    /* what a change to every job must gain (keeps_margin) */
#define OPT_IMPROVE    1e-4     /* local search: smallest relative gain taken */
#define NSUB           3        /* crux, cassini, harmonics */

typedef struct {
	int id;
	hm_decision_t dec[NSUB];
	bool have[NSUB];
} memo_t;

typedef struct {
	hm_policy_cfg_t cfg;
	const hm_policy_ops_t *sub[NSUB];
	void *sub_state[NSUB];
	memo_t *memo; /* last decision of each sub-policy per job id (open addressing) */
	size_t memo_cap, memo_used;
	hm_sim_eval_t *ev;
	int ev_cap;
	const hm_topo_t *ev_topo;
	unsigned long epoch, decisions;
	long decision_evals; /* evaluations in the decision under way (budget_evals) */
} opt_state_t;

/* One component's search state. */
typedef struct {
	opt_state_t *st;
	hm_sched_ctx_t *ctx;
	hm_pol_comp_t pc; /* the component and its evaluation runs */
	int n;            /* members (pc.n) */
	const int *member;
	hm_decision_t *cur, *best; /* cur: pc.cur */
	double best_cost, keep_cost; /* keep_cost: score of the decisions in force (0: not yet) */
	int K, evals;
	double deadline_s;
	bool cut;
} comp_t;

static hm_rc_t opt_create(const hm_policy_cfg_t *cfg, void **state, hm_err_t *err)
{
	opt_state_t *s = calloc(1, sizeof(*s));
	const hm_policy_ops_t *sub[NSUB] = {&hm_policy_crux, &hm_policy_cassini,
					    &hm_policy_harmonics};
	hm_policy_cfg_t sub_cfg;

	if (!s)
		return hm_err_set(err, HM_ERR_NOMEM, "optimal: out of memory");
	if (cfg)
		s->cfg = *cfg;
	else
		hm_policy_cfg_defaults(&s->cfg);
	if (s->cfg.budget_s < 0 || !isfinite(s->cfg.budget_s) || s->cfg.budget_evals < 0 ||
	    s->cfg.guard_s < 0 ||
	    !isfinite(s->cfg.guard_s) || !(s->cfg.jitter_cv >= 0) || s->cfg.jitter_cv > 1) {
		hm_err_set(
		    err, HM_ERR_INVAL,
		    "optimal: budget %g s, %ld evaluations, guard %g s, jitter %g (accepted: "
		    "budget and guard finite >= 0, evaluations >= 0, jitter 0..1)",
		    s->cfg.budget_s, s->cfg.budget_evals, s->cfg.guard_s, s->cfg.jitter_cv);
		free(s);
		return HM_ERR_INVAL;
	}
	/* The others get every class there is: with one level, none is reserved. */
	sub_cfg = s->cfg;
	if (sub_cfg.prio_levels >= 1 && sub_cfg.reserved_levels >= sub_cfg.prio_levels)
		sub_cfg.reserved_levels = sub_cfg.prio_levels - 1;
	for (int k = 0; k < NSUB; k++) {
		hm_rc_t rc;
		s->sub[k] = sub[k];
		rc = sub[k]->create(&sub_cfg, &s->sub_state[k], err);
		if (rc != HM_OK) {
			hm_err_prefix(err, "optimal");
			for (int q = 0; q < k; q++)
				sub[q]->destroy(s->sub_state[q]);
			free(s);
			return rc;
		}
	}
	*state = s;
	return HM_OK;
}

static void opt_destroy(void *state)
{
	opt_state_t *s = state;

	if (!s)
		return;
	for (int k = 0; k < NSUB; k++)
		if (s->sub[k])
			s->sub[k]->destroy(s->sub_state[k]);
	hm_sim_eval_free(s->ev);
	free(s->memo);
	free(s);
}

/* ---- memo of the sub-policies' decisions per job id ---- */

static memo_t *memo_get(opt_state_t *s, int id, bool add)
{
	size_t h;

	if (s->memo_cap == 0 || (add && 2 * (s->memo_used + 1) > s->memo_cap)) {
		size_t nc = s->memo_cap ? 2 * s->memo_cap : 64;
		memo_t *nm = calloc(nc, sizeof(*nm)), *old = s->memo;
		size_t oc = s->memo_cap;
		if (!nm)
			return NULL;
		for (size_t i = 0; i < nc; i++)
			nm[i].id = -1;
		s->memo = nm;
		s->memo_cap = nc;
		s->memo_used = 0;
		for (size_t i = 0; i < oc; i++)
			if (old[i].id >= 0) {
				memo_t *e = memo_get(s, old[i].id, true);
				*e = old[i];
			}
		free(old);
	}
	h = ((size_t)(unsigned)id * 2654435761u) & (s->memo_cap - 1);
	while (s->memo[h].id >= 0 && s->memo[h].id != id)
		h = (h + 1) & (s->memo_cap - 1);
	if (s->memo[h].id == id)
		return &s->memo[h];
	if (!add)
		return NULL;
	memset(&s->memo[h], 0, sizeof(s->memo[h]));
	s->memo[h].id = id;
	s->memo_used++;
	return &s->memo[h];
}

/*
 * Run sub-policy k on a copy of the context (decisions in force as input) and
 * keep its decisions per job. Crux and cassini decide on arrivals and
 * departures only, as the simulator calls them; at epochs their last
 * decisions stand.
 */
static hm_rc_t run_sub(opt_state_t *s, int k, const hm_sched_ctx_t *ctx, hm_sched_job_t *copy,
		       hm_err_t *err)
{
	hm_sched_ctx_t c = *ctx;
	hm_rc_t rc;

	if (ctx->event == HM_EV_EPOCH && !s->sub[k]->uses_epochs)
		return HM_OK;
	memcpy(copy, ctx->jobs, sizeof(*copy) * (size_t)ctx->njobs);
	c.jobs = copy;
	c.budget_exhausted = false;
	c.note[0] = '\0';
	rc = s->sub[k]->decide(s->sub_state[k], &c, err);
	if (rc != HM_OK) {
		hm_err_prefix(err, "optimal: %s candidate", s->sub[k]->name);
		return rc;
	}
	for (int i = 0; i < ctx->njobs; i++) {
		memo_t *e = memo_get(s, ctx->jobs[i].id, true);
		if (!e)
			return hm_err_set(err, HM_ERR_NOMEM, "optimal: out of memory");
		e->dec[k] = copy[i].dec;
		e->have[k] = true;
	}
	return HM_OK;
}

/* ---- evaluation ---- */

static double evaluate(comp_t *c, const hm_decision_t *d, hm_err_t *err, hm_rc_t *rc)
{
	c->evals++;
	c->st->decision_evals++;
	return hm_pol_comp_score(&c->pc, c->st->ev, d, rc, err);
}

static bool out_of_time(comp_t *c)
{
	long cap = c->st->cfg.budget_evals;

	if (!c->cut && ((cap > 0 && c->st->decision_evals >= cap) || hm_mono_s() > c->deadline_s))
		c->cut = true;
	return c->cut;
}

/* A change must beat the decisions in force by OPT_KEEP times the share of
 * jobs it changes (hm_pol_keep_bar). */
static bool keeps_margin(const comp_t *c, const hm_decision_t *d, double v)
{
	return c->keep_cost <= 0 || v > hm_pol_keep_bar(c->keep_cost, OPT_KEEP, d, c->cur, c->n);
}

/* Evaluate d[]; keep it when better than the best by more than rel (and
 * than what is in force by its margin). */
static hm_rc_t try_cand(comp_t *c, const hm_decision_t *d, double rel, bool *better, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	double v;

	if (better)
		*better = false;
	if (out_of_time(c))
		return HM_OK;
	v = evaluate(c, d, err, &rc);
	if (rc != HM_OK)
		return rc;
	if (v > c->best_cost * (1 + rel) && keeps_margin(c, d, v)) {
		c->best_cost = v;
		memcpy(c->best, d, sizeof(*d) * (size_t)c->n);
		if (better)
			*better = true;
	}
	return HM_OK;
}

/* ---- candidate builders ---- */

static void set_free(hm_decision_t *d, int prio, int path)
{
	memset(d, 0, sizeof(*d));
	d->prio = prio;
	d->path = path;
}

/* Free running, classes in ascending key order (one class per job up to K). */
static void order_cand(comp_t *c, const double *key, hm_decision_t *d)
{
	hm_pol_ord_t o[c->n];

	for (int i = 0; i < c->n; i++) {
		o[i].key = key[i];
		o[i].i = i;
	}
	qsort(o, (size_t)c->n, sizeof(o[0]), hm_pol_ord_cmp);
	for (int r = 0; r < c->n; r++)
		set_free(&d[o[r].i], r < c->K ? r : c->K - 1, c->cur[o[r].i].path);
}

/*
 * Slot holding on one base period P = max T (1 + z cv): each job takes the
 * harmonic P / m >= its T (1 + z cv), bursts packed back to back in the order
 * of decreasing burst, classes in the same order, guard 2 z cv P.
 */
static void hold_cand(comp_t *c, const double *burst, double z, hm_decision_t *d)
{
	double P = 0, at = 0;
	hm_pol_ord_t o[c->n];

	for (int i = 0; i < c->n; i++)
		P = fmax(P, c->pc.T[i] * (1 + z * c->pc.cv));
	for (int i = 0; i < c->n; i++) {
		o[i].key = -burst[i];
		o[i].i = i;
	}
	qsort(o, (size_t)c->n, sizeof(o[0]), hm_pol_ord_cmp);
	for (int r = 0; r < c->n; r++) {
		int i = o[r].i;
		double m = floor(P / (c->pc.T[i] * (1 + z * c->pc.cv)) + 1e-9);
		hm_decision_t *x = &d[i];
		memset(x, 0, sizeof(*x));
		x->period_s = P / (m >= 1 ? m : 1);
		x->shift_s = fmod(at, x->period_s);
		x->guard_s = c->st->cfg.guard_s > 0 ? c->st->cfg.guard_s
						    : fmax(2 * z * c->pc.cv * P, 0.005 * P);
		/* The slots in force stay where they are (no wait to move them). */
		x->origin_s =
		    c->cur[i].period_s == x->period_s ? c->cur[i].origin_s : c->ctx->now_s;
		x->prio = r < c->K ? r : c->K - 1;
		x->path = c->cur[i].path;
		at += burst[i];
	}
}

/* ---- local search ---- */

static hm_rc_t local_search(comp_t *c, hm_err_t *err)
{
	hm_decision_t d[c->n];
	hm_rc_t rc = HM_OK;
	bool improved = true, b;

	long moves = (long)c->n * c->K, steps = hm_pol_class_steps(c->n, c->K);

	while (improved && !out_of_time(c)) {
		improved = false;
		/* Swap two jobs' classes, then move a job to another class. */
		for (long s = 0; s < steps && !improved; s++) {
			if (!hm_pol_class_step(c->best, c->n, c->K, (moves + s) % steps, d))
				continue;
			if ((rc = try_cand(c, d, OPT_IMPROVE, &b, err)) != HM_OK)
				return rc;
			improved = b;
		}
		/* Another path; a held job let free. */
		for (int i = 0; i < c->n && !improved; i++) {
			int np = c->pc.ej[i].npaths > 8 ? 8 : c->pc.ej[i].npaths;
			for (int p = 0; p < np && !improved; p++) {
				if (p == c->best[i].path)
					continue;
				memcpy(d, c->best, sizeof(d));
				d[i].path = p;
				if ((rc = try_cand(c, d, OPT_IMPROVE, &b, err)) != HM_OK)
					return rc;
				improved = b;
			}
			if (!improved && c->best[i].period_s > 0) {
				memcpy(d, c->best, sizeof(d));
				set_free(&d[i], c->best[i].prio, c->best[i].path);
				if ((rc = try_cand(c, d, OPT_IMPROVE, &b, err)) != HM_OK)
					return rc;
				improved = b;
			}
		}
	}
	return rc;
}

/* ---- one component ---- */

static hm_rc_t comp_init(opt_state_t *st, hm_sched_ctx_t *ctx, const int *member, int n,
			 double deadline_s, comp_t *c, hm_err_t *err)
{
	hm_rc_t rc;

	memset(c, 0, sizeof(*c));
	c->st = st;
	c->ctx = ctx;
	c->n = n;
	c->member = member;
	c->deadline_s = deadline_s;
	c->K = st->cfg.prio_levels - st->cfg.reserved_levels;
	if (c->K < 1) /* one level: nothing reserved (as for the others, opt_create) */
		c->K = 1;
	rc = hm_pol_comp_init(&c->pc, ctx, member, n,
			      st->cfg.jitter_cv > 0 ? st->cfg.jitter_cv : OPT_DEFAULT_CV,
			      st->cfg.seed * 0x9e3779b97f4a7c15ULL + st->decisions, OPT_SEEDS,
			      OPT_PERIODS, OPT_MAX_EVENTS, err);
	if (rc != HM_OK)
		return rc;
	hm_pol_comp_to_end(&c->pc, OPT_END_EVENTS);
	c->cur = c->pc.cur;
	c->best = calloc((size_t)n, sizeof(*c->best));
	if (!c->best)
		return hm_err_set(err, HM_ERR_NOMEM, "optimal: out of memory for %d jobs", n);
	c->best_cost = -1;
	return HM_OK;
}

static void comp_free(comp_t *c)
{
	hm_pol_comp_free(&c->pc);
	free(c->best);
}

/* The candidates every component gets before any local search. */
static hm_rc_t candidates(comp_t *c, hm_err_t *err)
{
	opt_state_t *st = c->st;
	hm_decision_t d[c->n];
	double key[c->n], burst[c->n];
	hm_rc_t rc;

	/* What is in force first: a change must beat it (keeps_margin). */
	memcpy(d, c->cur, sizeof(d));
	if ((rc = try_cand(c, d, 0, NULL, err)) != HM_OK)
		return rc;
	c->keep_cost = c->best_cost;
	for (int i = 0; i < c->n; i++)
		set_free(&d[i], 0, c->cur[i].path);
	if ((rc = try_cand(c, d, 0, NULL, err)) != HM_OK)
		return rc;
	for (int k = 0; k < NSUB; k++) {
		bool all = true;
		for (int i = 0; i < c->n && all; i++) {
			memo_t *e = memo_get(st, c->ctx->jobs[c->member[i]].id, false);
			all = e && e->have[k];
			if (all)
				d[i] = e->dec[k];
		}
		if (all && (rc = try_cand(c, d, 0, NULL, err)) != HM_OK)
			return rc;
	}
	/* Priority orders: lightest burst first, shortest burst x period first
	 * (Smith's rule for relative slowdown), and their reverses. */
	for (int i = 0; i < c->n; i++) {
		const hm_sched_job_t *sj = &c->ctx->jobs[c->member[i]];
		double comp = sj->job ? sj->job->profile.compute_s : 0;
		burst[i] = fmax(c->pc.T[i] - comp, 0);
	}
	for (int v = 0; v < 4; v++) {
		for (int i = 0; i < c->n; i++) {
			double k = v < 2 ? burst[i] : burst[i] * c->pc.T[i];
			key[i] = v % 2 ? -k : k;
		}
		order_cand(c, key, d);
		if ((rc = try_cand(c, d, 0, NULL, err)) != HM_OK)
			return rc;
	}
	for (int z = 1; z <= 3; z++) {
		hold_cand(c, burst, z, d);
		if ((rc = try_cand(c, d, 0, NULL, err)) != HM_OK)
			return rc;
	}
	return HM_OK;
}

static hm_rc_t opt_decide(void *state, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	opt_state_t *st = state;
	int n = ctx->njobs, *par = NULL, *member = NULL, ncomp = 0, unreached = 0;
	int changed = 0, evals = 0;
	double deadline_s = hm_mono_s() + st->cfg.budget_s;
	hm_sched_job_t *copy = NULL;
	comp_t *cs = NULL;
	hm_rc_t rc = HM_OK;

	st->decisions++;
	st->decision_evals = 0;
	if (n == 0)
		return HM_OK;
	par = malloc(sizeof(int) * (size_t)n);
	member = malloc(sizeof(int) * (size_t)n);
	copy = malloc(sizeof(*copy) * (size_t)n);
	cs = calloc((size_t)n, sizeof(*cs));
	if (!par || !member || !copy || !cs) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "optimal: out of memory for %d jobs", n);
		goto out;
	}
	for (int k = 0; k < NSUB && rc == HM_OK; k++)
		rc = run_sub(st, k, ctx, copy, err);
	if (rc == HM_OK)
		rc = hm_pol_components(ctx, true, par, err);
	if (rc != HM_OK)
		goto out;
	if (!st->ev || st->ev_cap < n || st->ev_topo != ctx->topo) {
		hm_sim_eval_free(st->ev);
		st->ev_cap = n > 64 ? n : 64;
		st->ev = hm_sim_eval_new(ctx->topo, st->ev_cap, err);
		st->ev_topo = ctx->topo;
		if (!st->ev) {
			rc = HM_ERR_NOMEM;
			goto out;
		}
	}
	/* Members grouped by component (member[] in component order). */
	{
		int *cnt = calloc((size_t)n + 1, sizeof(int)), *pos = NULL;
		if (!cnt) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "optimal: out of memory");
			goto out;
		}
		for (int i = 0; i < n; i++)
			cnt[hm_pol_comp_root(par, i) + 1]++;
		for (int r = 0; r < n; r++)
			cnt[r + 1] += cnt[r];
		pos = malloc(sizeof(int) * (size_t)n);
		if (!pos) {
			free(cnt);
			rc = hm_err_set(err, HM_ERR_NOMEM, "optimal: out of memory");
			goto out;
		}
		memcpy(pos, cnt, sizeof(int) * (size_t)n);
		for (int i = 0; i < n; i++)
			member[pos[hm_pol_comp_root(par, i)]++] = i;
		for (int r = 0; r < n && rc == HM_OK; r++) {
			int m = cnt[r + 1] - cnt[r];
			if (m == 0)
				continue;
			if (m == 1) { /* alone on its links: fair, it never waits */
				hm_decision_t *d = &ctx->jobs[member[cnt[r]]].dec, f;
				set_free(&f, 0, d->path);
				if (!hm_pol_same_decision(&f, d)) {
					f.epoch = st->epoch + 1;
					*d = f;
				}
				continue;
			}
			rc = comp_init(st, ctx, member + cnt[r], m, deadline_s, &cs[ncomp], err);
			ncomp++;
			if (rc == HM_OK)
				rc = candidates(&cs[ncomp - 1], err);
		}
		free(cnt);
		free(pos);
		if (rc != HM_OK)
			goto out;
	}
	for (int q = 0; q < ncomp && rc == HM_OK; q++) {
		if (cs[q].best_cost < 0)
			continue;
		rc = local_search(&cs[q], err);
	}
	if (rc != HM_OK)
		goto out;
	st->epoch++;
	for (int q = 0; q < ncomp; q++) {
		comp_t *c = &cs[q];
		evals += c->evals;
		if (c->cut)
			ctx->budget_exhausted = true;
		if (c->best_cost < 0) {
			unreached += c->n;
			continue;
		}
		for (int i = 0; i < c->n; i++) {
			hm_decision_t *d = &ctx->jobs[c->member[i]].dec;
			if (hm_pol_same_decision(&c->best[i], d))
				continue;
			*d = c->best[i];
			d->epoch = st->epoch;
			changed++;
		}
	}
	snprintf(ctx->note, sizeof(ctx->note),
		 "optimal: %d jobs, %d components, %d evaluations, %d changed%s%s", n, ncomp, evals,
		 changed, ctx->budget_exhausted ? ", budget exhausted: best found applied" : "",
		 unreached ? ", components not reached keep their decisions" : "");
out:
	for (int q = 0; q < ncomp; q++)
		comp_free(&cs[q]);
	free(cs);
	free(par);
	free(member);
	free(copy);
	return rc;
}

const hm_policy_ops_t hm_policy_optimal = {
    .name = "optimal",
    .description = "search over every decision the others use (theirs included), each judged "
		   "in the simulator's own model (time budget)",
    .create = opt_create,
    .decide = opt_decide,
    .destroy = opt_destroy,
    .place = NULL,
    .uses_epochs = true,
};
