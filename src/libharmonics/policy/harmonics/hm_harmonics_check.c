/* The check against fair sharing (see hm_harmonics_check.h). */
#include "hm_harmonics_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hm_pol_common.h"
#include "hm_pol_eval.h"

#define CHECK_PERIODS    10 /* run length: periods of the component's slowest job */
#define CHECK_WARMUP     3  /* periods before judging (slots settle) */
#define CHECK_SEEDS      1
#define CHECK_CANDIDATES 5 /* the plan, in force, fair sharing, Smith's order, Crux's order */

/* Each job's jitter to judge with: its measured compute spread (the
 * iteration spread where compute alone is not measured; the assumed one
 * before anything is measured), at most 10%. */
static double job_cv(const hm_sched_job_t *sj)
{
	double sd = sj->meas_compute_sd_s > 0 ? sj->meas_compute_sd_s : sj->meas_iter_sd_s;
	double cv = sj->meas_compute_s > 0 ? sd / sj->meas_compute_s : HM_POL_DEFAULT_CV;

	return cv > 0.1 ? 0.1 : cv;
}

/* Bit for bit what the evaluation reads of a decision (not its epoch). */
static bool same_input(const hm_decision_t *a, const hm_decision_t *b, int n)
{
	for (int i = 0; i < n; i++)
		if (memcmp(&a[i].shift_s, &b[i].shift_s, sizeof(double)) ||
		    memcmp(&a[i].period_s, &b[i].period_s, sizeof(double)) ||
		    memcmp(&a[i].guard_s, &b[i].guard_s, sizeof(double)) ||
		    memcmp(&a[i].origin_s, &b[i].origin_s, sizeof(double)) ||
		    a[i].prio != b[i].prio || a[i].path != b[i].path)
			return false;
	return true;
}

/*
 * Score candidate d (n jobs); it becomes best when it beats *best_rate. One
 * already scored (done[0..*ndone), n entries each) is not run again: its
 * score is the one it had, which *best_rate (only ever raised) did not
 * stay below.
 */
static hm_rc_t keep_better(hm_pol_comp_t *pc, hm_sim_eval_t *ev, const hm_decision_t *d, int n,
			   hm_decision_t *done, int *ndone, hm_decision_t *best, double *best_rate,
			   hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	double v;

	for (int c = 0; c < *ndone; c++)
		if (same_input(&done[(size_t)c * (size_t)n], d, n))
			return HM_OK;
	memcpy(&done[(size_t)(*ndone)++ * (size_t)n], d, sizeof(*d) * (size_t)n);
	v = hm_pol_comp_score(pc, ev, d, &rc, err);

	if (rc == HM_OK && v > *best_rate) {
		*best_rate = v;
		memcpy(best, d, sizeof(*d) * (size_t)n);
	}
	return rc;
}

/*
 * The class search (first improvement) from best, whose score is *rate: the
 * steps of hm_pol_class_step in a cycle from step start; one is taken when it gains
 * keep (a result other than the plan must also beat bar), and the cycle goes
 * on from there until a whole round gains nothing or the budget (cfg's
 * search events, cost each) is spent. Strict classes trade one job's bursts
 * for another's, and the check's two orders put one job per class: the
 * mixed-period testbeds gain most from moving a job between them. A budget
 * too small for a whole round still explores another part each decision,
 * whose result comes back as the decision in force (docs/algorithms.md,
 * "The check").
 */
static hm_rc_t class_search(hm_pol_comp_t *pc, hm_sim_eval_t *ev, hm_decision_t *best, int n, int K,
			    double *rate, double bar, double cost, uint64_t start, hm_decision_t *d,
			    hm_hcheck_cfg_t *cfg, hm_err_t *err)
{
	long steps = hm_pol_class_steps(n, K), q = (long)(start % (uint64_t)steps);
	hm_rc_t rc = HM_OK;

	for (long quiet = 0; quiet < steps; quiet++, q = (q + 1) % steps) {
		double v;

		if (!hm_pol_class_step(best, n, K, q, d))
			continue;
		if (cfg->search_spent + cost > cfg->search_events ||
		    cfg->events + cost > cfg->max_events)
			break;
		cfg->search_spent += cost;
		cfg->events += (long)cost;
		cfg->moves++;
		v = hm_pol_comp_score(pc, ev, d, &rc, err);
		if (rc != HM_OK)
			break;
		if (v > *rate * (1 + cfg->keep) && v > bar) {
			*rate = v;
			memcpy(best, d, sizeof(*d) * (size_t)n);
			cfg->taken++;
			quiet = -1; /* a whole round again from here */
		}
	}
	return rc;
}

static hm_rc_t check_one(const hm_sched_ctx_t *ctx, const hm_hmodel_t *m, hm_decision_t *plan,
			 const int *member, int n, hm_sim_eval_t *ev, hm_hcheck_cfg_t *cfg,
			 hm_err_t *err)
{
	hm_pol_comp_t pc;
	hm_decision_t *d = NULL, *best = NULL, *done = NULL; /* done: CHECK_CANDIDATES x n */
	int ndone = 0;
	hm_pol_ord_t *o = NULL;
	double best_rate, plan_rate, cost;
	int K = m->cfg.classes;
	hm_rc_t rc;

	rc = hm_pol_comp_init(&pc, ctx, member, n, HM_POL_DEFAULT_CV,
			      0x68636b ^ (uint64_t)(ctx->now_s * 1000), CHECK_SEEDS,
			      CHECK_PERIODS + CHECK_WARMUP, cfg->max_events, err);
	if (rc != HM_OK)
		return rc;
	for (int i = 0; i < n; i++)
		pc.ej[i].jitter_cv = job_cv(&ctx->jobs[member[i]]);
	/* The long run: random phases, judged after the slots have settled. */
	pc.random_phase = true;
	pc.warmup_s = CHECK_WARMUP * pc.horizon_s / (CHECK_PERIODS + CHECK_WARMUP);
	cost = hm_pol_comp_events(&pc); /* of one candidate's run */
	if (cost * CHECK_CANDIDATES > cfg->max_events - cfg->events) {
		hm_pol_comp_free(&pc);
		return HM_OK; /* no room left: the plan stands */
	}
	d = malloc(sizeof(*d) * (size_t)n);
	best = malloc(sizeof(*best) * (size_t)n);
	o = malloc(sizeof(*o) * (size_t)n);
	done = malloc(sizeof(*done) * CHECK_CANDIDATES * (size_t)n);
	if (!d || !best || !o || !done) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: check: out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		best[i] = plan[member[i]];
	plan_rate = best_rate = hm_pol_comp_score(&pc, ev, best, &rc, err);
	if (rc != HM_OK)
		goto out;
	memcpy(&done[(size_t)ndone++ * (size_t)n], best, sizeof(*best) * (size_t)n);
	best_rate *= 1 + cfg->keep;
	/* What is in force: the last decision's search result, to go on from. */
	if ((rc = keep_better(&pc, ev, pc.cur, n, done, &ndone, best, &best_rate, err)) != HM_OK)
		goto out;
	/* Fair sharing. */
	for (int i = 0; i < n; i++) {
		memset(&d[i], 0, sizeof(d[i]));
		d[i].path = plan[member[i]].path;
	}
	if ((rc = keep_better(&pc, ev, d, n, done, &ndone, best, &best_rate, err)) != HM_OK)
		goto out;
	/* One class per job in Smith's order for progress (shortest burst x period
	 * first), then in Crux's order (corrected GPU intensity, highest first). */
	for (int v2 = 0; v2 < 2; v2++) {
		for (int i = 0; i < n; i++) {
			const hm_pjob_t *p = m->jobs[member[i]].pj;
			o[i].key = v2 == 0 ? p->burst_s * p->T_s : m->jobs[member[i]].key;
			o[i].i = i;
		}
		qsort(o, (size_t)n, sizeof(*o), hm_pol_ord_cmp);
		for (int r = 0; r < n; r++) {
			memset(&d[o[r].i], 0, sizeof(d[0]));
			d[o[r].i].path = plan[member[o[r].i]].path;
			d[o[r].i].prio = r < K ? r : K - 1;
		}
		if ((rc = keep_better(&pc, ev, d, n, done, &ndone, best, &best_rate, err)) != HM_OK)
			goto out;
	}
	cfg->events += (long)(CHECK_CANDIDATES * cost);
	/* From the plan (best_rate its bar, then) or the candidate that beat it. */
	rc = class_search(&pc, ev, best, n, K, &best_rate, plan_rate * (1 + cfg->keep), cost,
			  (uint64_t)(ctx->now_s * 1000) * 0x9e3779b97f4a7c15ULL >> 17, d, cfg, err);
	if (rc != HM_OK)
		goto out;
	{
		bool changed = false;
		for (int i = 0; i < n; i++)
			if (!hm_pol_same_decision(&best[i], &plan[member[i]])) {
				plan[member[i]] = best[i];
				changed = true;
			}
		cfg->changed += changed;
	}
	cfg->checked++;
out:
	free(d);
	free(best);
	free(o);
	free(done);
	hm_pol_comp_free(&pc);
	return rc;
}

hm_rc_t hm_hcheck(const hm_sched_ctx_t *ctx, const hm_hmodel_t *m, hm_decision_t *plan,
		  hm_sim_eval_t **ev, int *ev_cap, hm_hcheck_cfg_t *cfg, hm_err_t *err)
{
	int n = ctx->njobs, *par = NULL, *cnt = NULL, *member = NULL, *pos = NULL;
	hm_rc_t rc = HM_OK;

	cfg->checked = cfg->changed = cfg->moves = cfg->taken = 0;
	cfg->events = cfg->search_spent = 0;
	if (n < 2)
		return HM_OK;
	par = malloc(sizeof(int) * (size_t)n);
	cnt = calloc((size_t)n + 1, sizeof(int));
	member = malloc(sizeof(int) * (size_t)n);
	pos = malloc(sizeof(int) * (size_t)n);
	if (!par || !cnt || !member || !pos) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: check: out of memory");
		goto out;
	}
	rc = hm_pol_components(ctx, false, par, err);
	if (rc != HM_OK)
		goto out;
	for (int i = 0; i < n; i++)
		cnt[hm_pol_comp_root(par, i) + 1]++;
	for (int r = 0; r < n; r++)
		cnt[r + 1] += cnt[r];
	memcpy(pos, cnt, sizeof(int) * (size_t)n);
	for (int i = 0; i < n; i++)
		member[pos[hm_pol_comp_root(par, i)]++] = i;
	for (int r = 0; r < n && rc == HM_OK; r++) {
		int k = cnt[r + 1] - cnt[r];
		if (k < 2 || k > cfg->max_jobs)
			continue;
		if (!*ev || *ev_cap < k) {
			hm_sim_eval_free(*ev);
			*ev_cap = cfg->max_jobs;
			*ev = hm_sim_eval_new(ctx->topo, *ev_cap, err);
			if (!*ev) {
				rc = HM_ERR_NOMEM;
				break;
			}
		}
		rc = check_one(ctx, m, plan, member + cnt[r], k, *ev, cfg, err);
	}
out:
	free(par);
	free(cnt);
	free(member);
	free(pos);
	return rc;
}
