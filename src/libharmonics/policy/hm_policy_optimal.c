/*
 * optimal: exact joint search over discretised shifts and priority classes,
 * minimising the mean estimated slowdown (estimated iteration time over the
 * contention-free one) from the contention model (hm_contention.h), with slot
 * holding: each decided job gets period = its model period, its shift on that
 * grid and a guard.
 *
 * Jobs are split into components of jobs that share links (independent
 * subproblems: costs add up, so solving each exactly is exact overall). Jobs
 * alone on their links get no decision effort (fair defaults). In a component,
 * jobs are sorted by load (heaviest first) and searched depth-first, each
 * choosing a class in 0..K-1 (K = min(jobs, prio_levels - reserved_levels);
 * the reserved classes are the lowest ones) and a shift bin in
 * 0..shift_bins-1; the first job's shift is fixed at 0 (only relative shifts
 * matter). Bound: the sum of the estimated slowdowns of the jobs assigned so
 * far, evaluated alone among themselves, plus 1 for every unassigned job; adding
 * a job never shortens another's estimate, so the bound is valid. The first
 * incumbent is a cheap complete one (bursts packed back to back, one class),
 * which a greedy pass then improves job by job. Only assignments whose classes
 * are dense (0..u-1 all used) are leaves, so equivalent relabellings are not
 * repeated.
 *
 * A component where holding slots is not worth it runs free with strict
 * priority classes, lightest first (leave_to_classes()).
 *
 * Budget: cfg->budget_s of wall clock per decide(), checked before every model
 * evaluation, so a decision overshoots it by at most one evaluation. When it
 * runs out the best complete assignment found so far is used (there always is
 * one) and ctx->budget_exhausted is set; components not reached yet run free
 * with classes.
 *
 * A component whose membership is unchanged since its last decision (its
 * signature is kept in dec.epoch) keeps its decision, so arrivals elsewhere do
 * not perturb running slots.
 */
#include "hm_contention.h"
#include "hm_clock.h"
#include "hm_policy.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPT_DEFAULT_BINS 24
#define OPT_GUARD_FRAC   0.05 /* default guard: 5% of the period */
#define OPT_EPS          1e-9
#define OPT_MAX_MARGIN   0.03 /* jitter margin cap, fraction of the period */
#define OPT_WORTH        0.01 /* hold slots only when they gain > 1% over free running */
#define OPT_FREE_SAMPLES 16
#define OPT_MAX_STRETCH  0.1 /* longest period rounding, fraction of the period */
#define OPT_MAX_HYPER    4   /* common hyperperiod at most this many longest periods */

typedef struct {
	hm_policy_cfg_t cfg;
} opt_state_t;

typedef struct {
	const hm_cm_t *m;
	int n;    /* jobs in the component */
	int *job; /* model indexes, heaviest first */
	int bins, K;
	double deadline_s, best;
	bool out_of_time;
	long nodes;
	int *cls, *bin, *best_cls, *best_bin;
	double *shift, *it;
	double *floor; /* per job: slot period / contention-free iteration, its least cost */
	double *rest;  /* rest[d]: sum of floor[d..n) */
	double *guard; /* per job: the guard its decision will get, seconds */
} search_t;

/* Usable classes: prio_levels - reserved_levels (the reserved are the lowest), 1..31. */
static int class_levels(const opt_state_t *st)
{
	int k = st->cfg.prio_levels - st->cfg.reserved_levels;

	return k < 1 ? 1 : k > 31 ? 31 : k;
}

static hm_rc_t opt_create(const hm_policy_cfg_t *cfg, void **state, hm_err_t *err)
{
	opt_state_t *s = calloc(1, sizeof(*s));

	if (!s)
		return hm_err_set(err, HM_ERR_NOMEM, "optimal: out of memory");
	if (cfg)
		s->cfg = *cfg;
	else
		hm_policy_cfg_defaults(&s->cfg);
	if (s->cfg.shift_bins <= 0)
		s->cfg.shift_bins = OPT_DEFAULT_BINS;
	if (s->cfg.shift_bins > 100000 || s->cfg.budget_s < 0 || !isfinite(s->cfg.budget_s) ||
	    s->cfg.guard_s < 0 || !isfinite(s->cfg.guard_s)) {
		hm_err_set(err, HM_ERR_INVAL,
			   "optimal: shift_bins %d, budget %g s, guard %g s (accepted: bins "
			   "1..100000, budget and guard finite >= 0)",
			   s->cfg.shift_bins, s->cfg.budget_s, s->cfg.guard_s);
		free(s);
		return HM_ERR_INVAL;
	}
	*state = s;
	return HM_OK;
}

static void opt_destroy(void *state)
{
	free(state);
}

/*
 * Sum over the first d jobs, evaluated among themselves, of their estimated
 * slowdown when held to their slots (hm_cm_eval_held: never faster than the
 * slot period, late bursts past the guard lose whole periods).
 */
static double partial(search_t *s, int d)
{
	double sum = 0;

	for (int i = 0; i < d; i++)
		s->shift[i] = s->bin[i] * hm_cm_period_s(s->m, s->job[i]) / s->bins;
	hm_cm_eval_held(s->m, s->job, d, s->shift, s->cls, s->it);
	for (int i = 0; i < d; i++) {
		double alone = hm_cm_alone_iter_s(s->m, s->job[i]);
		sum += alone > 0 ? s->it[i] / alone : 1;
	}
	return sum;
}

static bool dense(const search_t *s)
{
	unsigned used = 0;
	int top = -1;

	for (int i = 0; i < s->n; i++) {
		used |= 1u << (s->cls[i] < 31 ? s->cls[i] : 31);
		if (s->cls[i] > top)
			top = s->cls[i];
	}
	return top < 31 && used == (top >= 0 ? (1u << (top + 1)) - 1 : 0);
}

static void save(search_t *s, double cost)
{
	s->best = cost;
	memcpy(s->best_cls, s->cls, (size_t)s->n * sizeof(int));
	memcpy(s->best_bin, s->bin, (size_t)s->n * sizeof(int));
}

/* The clock costs ~50 ns, an evaluation microseconds to milliseconds: check before each. */
static bool out_of_time(search_t *s)
{
	if (!s->out_of_time && hm_mono_s() > s->deadline_s)
		s->out_of_time = true;
	return s->out_of_time;
}

static void dfs(search_t *s, int d)
{
	int nb = d == 0 ? 1 : s->bins;

	for (int c = 0; c < s->K && !s->out_of_time; c++) {
		for (int k = 0; k < nb && !s->out_of_time; k++) {
			s->nodes++;
			if (out_of_time(s))
				break;
			s->cls[d] = c;
			s->bin[d] = k;
			double cost = partial(s, d + 1);
			if (cost + s->rest[d + 1] >= s->best - OPT_EPS)
				continue;
			if (d + 1 == s->n) {
				if (dense(s))
					save(s, cost);
			} else {
				dfs(s, d + 1);
			}
		}
	}
}

/* No holding, class 0: the job shares links fairly; its path choice is kept. */
static void leave_to_fair(hm_decision_t *d)
{
	int path = d->path;

	memset(d, 0, sizeof(*d));
	d->path = path;
}

/* Heaviest first (ties by index): insertion sort, components are small. */
static void sort_by_load(const hm_cm_t *m, int *member, int n)
{
	for (int i = 1; i < n; i++) {
		int v = member[i], j = i - 1;
		double lv = hm_cm_load_bps(m, v);
		while (j >= 0 && (hm_cm_load_bps(m, member[j]) < lv ||
				  (hm_cm_load_bps(m, member[j]) == lv && member[j] > v))) {
			member[j + 1] = member[j];
			j--;
		}
		member[j + 1] = v;
	}
}

/*
 * Jobs of a component not held to slots run free with strict priority classes,
 * lightest (least hm_cm_load_bps) first, capped to K classes: the light job's
 * short burst goes through at once and the heavy one waits, then stays out of
 * its way. This beats plain fair sharing in the simulator (testbed mean JCT
 * 1010.7 -> 980.5 s). The model is not asked to choose the order: with static
 * shifts it cannot see strict priority's self-staggering and judges classes no
 * better than one. Reorders member (heaviest first).
 */
static void leave_to_classes(hm_sched_ctx_t *ctx, const hm_cm_t *m, int *member, int n, int K)
{
	sort_by_load(m, member, n);
	for (int i = 0; i < n; i++) {
		hm_decision_t *d = &ctx->jobs[member[i]].dec;
		int rank = n - 1 - i; /* 0: the lightest */
		leave_to_fair(d);
		d->prio = rank < K - 1 ? rank : K - 1;
	}
}

/*
 * Complete jobs from..n-1 cheaply: each burst packed right after the previous
 * job's (the first at shift 0), class 0. Held jobs get classes only where the
 * model sees them help (ties keep class 0, as in the greedy): a lower class
 * starves while slots settle. Class 0 keeps a dense prefix dense.
 */
static void complete(search_t *s, int from)
{
	for (int i = from; i < s->n; i++) {
		s->cls[i] = 0;
		s->bin[i] = 0;
		if (i == 0)
			continue;
		double prev_p_s = hm_cm_period_s(s->m, s->job[i - 1]);
		double end_s =
		    s->bin[i - 1] * prev_p_s / s->bins + hm_cm_comm_s(s->m, s->job[i - 1]);
		double p_s = hm_cm_period_s(s->m, s->job[i]);
		int k = (int)ceil(fmod(end_s, p_s) / p_s * s->bins - 1e-9);
		s->bin[i] = k >= 0 && k < s->bins ? k : 0;
	}
}

/*
 * Greedy, anytime: each job in turn (heaviest first) takes its best (class,
 * shift) among the jobs before it; after each job the prefix completed by
 * complete() is a candidate incumbent, so time spent is never lost when the
 * budget cuts the pass. The caller has saved a complete incumbent first.
 */
static void greedy(search_t *s)
{
	for (int d = 0; d < s->n; d++) {
		double best = HUGE_VAL;
		int bc = 0, bk = 0, nb = d == 0 ? 1 : s->bins;
		/* Classes grow by at most one per job so the result stays dense. */
		int maxc = 0;
		for (int i = 0; i < d; i++)
			maxc = s->cls[i] + 1 > maxc ? s->cls[i] + 1 : maxc;
		for (int c = 0; c <= maxc && c < s->K; c++)
			for (int k = 0; k < nb; k++) {
				if (out_of_time(s))
					return;
				s->cls[d] = c;
				s->bin[d] = k;
				double cost = partial(s, d + 1);
				if (cost < best - OPT_EPS) {
					best = cost;
					bc = c;
					bk = k;
				}
			}
		s->cls[d] = bc;
		s->bin[d] = bk;
		if (out_of_time(s))
			return;
		complete(s, d + 1);
		double cost = partial(s, s->n);
		if (cost < s->best - OPT_EPS)
			save(s, cost);
	}
}

static int find(int *par, int x)
{
	while (par[x] != x)
		x = par[x] = par[par[x]];
	return x;
}

/* FNV-1a over the sorted job ids of a component: its membership signature. */
static unsigned long signature(const hm_sched_ctx_t *ctx, const int *member, int n, int *tmp)
{
	uint64_t h = 1469598103934665603ULL;

	for (int i = 0; i < n; i++)
		tmp[i] = ctx->jobs[member[i]].id;
	for (int i = 1; i < n; i++) /* insertion sort: components are small */
		for (int j = i; j > 0 && tmp[j - 1] > tmp[j]; j--) {
			int t = tmp[j];
			tmp[j] = tmp[j - 1];
			tmp[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		h ^= (uint64_t)(unsigned)tmp[i];
		h *= 1099511628211ULL;
	}
	return (unsigned long)(h | 1); /* never 0, the "no decision" epoch */
}

/* Guard of a held job: cfg.guard_s, else 5% of the period, at least 3 r P. */
static double guard_s(const opt_state_t *st, double period_s, double r)
{
	double g = st->cfg.guard_s > 0 ? st->cfg.guard_s : OPT_GUARD_FRAC * period_s;

	return g < 3 * r * period_s ? 3 * r * period_s : g;
}

/*
 * Mean estimated slowdown of the component's jobs running free: seeded random
 * shifts, one class. Only meaningful when the budget did not cut it
 * (s->out_of_time).
 */
static double free_running(search_t *s, unsigned long seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
	double sum = 0;

	for (int k = 0; k < OPT_FREE_SAMPLES && !out_of_time(s); k++) {
		for (int i = 0; i < s->n; i++) {
			x ^= x << 13; /* xorshift64 */
			x ^= x >> 7;
			x ^= x << 17;
			s->shift[i] = (double)(x >> 11) / 9007199254740992.0 *
				      hm_cm_period_s(s->m, s->job[i]);
		}
		sum += hm_cm_eval(s->m, s->job, s->n, s->shift, NULL, NULL);
	}
	memset(s->shift, 0, (size_t)s->n * sizeof(*s->shift));
	return sum / OPT_FREE_SAMPLES;
}

static long long lcm_ll(long long a, long long b)
{
	long long x = a, y = b;

	while (y) {
		long long t = x % y;
		x = y;
		y = t;
	}
	return a / x * b;
}

/*
 * Slots of jobs with unrelated periods drift through each other, so a static
 * stagger cannot last. Round the periods up to multiples of one base Q with a
 * small hyperperiod: among Q = P_max / k (k = 1..12) and P_j / k (k = 1..4),
 * the one with the least mean stretch, every stretch at most OPT_MAX_STRETCH
 * and the hyperperiod at most OPT_MAX_HYPER * P_max. Periods stay as they are
 * when no base qualifies.
 */
static hm_rc_t commensurate(hm_cm_t *m, const int *member, int n, hm_err_t *err)
{
	double pmax = 0, best_q = 0, best_score = HUGE_VAL;

	for (int i = 0; i < n; i++)
		if (hm_cm_period_s(m, member[i]) > pmax)
			pmax = hm_cm_period_s(m, member[i]);
	for (int c = -1; c < n; c++) {
		double base = c < 0 ? pmax : hm_cm_period_s(m, member[c]);
		for (int k = 1; k <= (c < 0 ? 12 : 4); k++) {
			double q = base / k, score = 0;
			long long l = 1;
			bool ok = q > 0;
			for (int i = 0; i < n && ok; i++) {
				double p = hm_cm_period_s(m, member[i]);
				long long kk = (long long)ceil(p / q - 1e-9);
				double st = kk * q / p - 1;
				ok = kk >= 1 && st <= OPT_MAX_STRETCH;
				if (ok) {
					score += st;
					l = lcm_ll(l, kk);
					ok = l * q <= OPT_MAX_HYPER * pmax * (1 + 1e-9);
				}
			}
			if (ok && score < best_score - 1e-12) {
				best_score = score;
				best_q = q;
			}
		}
	}
	if (!(best_q > 0) || best_score <= 0)
		return HM_OK;
	for (int i = 0; i < n; i++) {
		double p = hm_cm_period_s(m, member[i]);
		double np = ceil(p / best_q - 1e-9) * best_q;
		if (np != p) {
			hm_rc_t rc = hm_cm_set_period(m, member[i], np, err);
			if (rc != HM_OK)
				return rc;
		}
	}
	return HM_OK;
}

static hm_rc_t solve(const opt_state_t *st, hm_sched_ctx_t *ctx, hm_cm_t *m, int *member, int n,
		     double deadline_s, hm_err_t *err)
{
	search_t s;
	hm_rc_t rc = HM_OK;

	memset(&s, 0, sizeof(s));
	s.m = m;
	s.n = n;
	s.job = member;
	s.bins = st->cfg.shift_bins;
	s.K = class_levels(st) < n ? class_levels(st) : n;
	s.deadline_s = deadline_s;
	s.best = HUGE_VAL;
	s.cls = calloc((size_t)n, sizeof(int));
	s.bin = calloc((size_t)n, sizeof(int));
	s.best_cls = calloc((size_t)n, sizeof(int));
	s.best_bin = calloc((size_t)n, sizeof(int));
	s.shift = calloc((size_t)n, sizeof(double));
	s.it = calloc((size_t)n, sizeof(double));
	s.floor = calloc((size_t)n, sizeof(double));
	s.rest = calloc((size_t)n + 1, sizeof(double));
	s.guard = calloc((size_t)n, sizeof(double));
	if (!s.cls || !s.bin || !s.best_cls || !s.best_bin || !s.shift || !s.it || !s.floor ||
	    !s.rest || !s.guard) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "optimal: out of memory for %d jobs", n);
		goto out;
	}
	/* Free running (what fair sharing sees), on the natural periods. */
	double free_run = free_running(&s, st->cfg.seed);
	/*
	 * Jitter margin: a held burst that is late (within the guard) makes the next
	 * one later, a random walk that ends in a skipped slot; periods longer by
	 * the measured relative jitter r give it a drift back to the slot start. One
	 * r per component so that identical jobs keep identical periods.
	 */
	double r = 0;
	for (int i = 0; i < n; i++) {
		const hm_sched_job_t *sj = &ctx->jobs[member[i]];
		if (sj->meas_iter_s > 0 && sj->meas_iter_sd_s / sj->meas_iter_s > r)
			r = sj->meas_iter_sd_s / sj->meas_iter_s;
	}
	if (r > OPT_MAX_MARGIN)
		r = OPT_MAX_MARGIN;
	for (int i = 0; i < n && r > 0; i++) {
		rc = hm_cm_set_period(m, member[i], hm_cm_period_s(m, member[i]) * (1 + r), err);
		if (rc != HM_OK)
			goto out;
	}
	rc = commensurate(m, member, n, err);
	if (rc != HM_OK)
		goto out;
	sort_by_load(m, member, n);
	s.rest[n] = 0;
	for (int i = n - 1; i >= 0; i--) {
		double alone = hm_cm_alone_iter_s(m, member[i]);
		s.floor[i] = alone > 0 ? hm_cm_period_s(m, member[i]) / alone : 1;
		if (s.floor[i] < 1)
			s.floor[i] = 1;
		s.rest[i] = s.rest[i + 1] + s.floor[i];
		s.guard[i] = guard_s(st, hm_cm_period_s(m, member[i]), r);
	}
	/*
	 * Holding costs something (waiting for slots, the jitter margin r, longer
	 * common periods, skipped slots): hold only when the estimated gain over
	 * free-running jobs (mean slowdown over OPT_FREE_SAMPLES seeded random
	 * shift vectors, what fair sharing sees on average) exceeds OPT_WORTH. The
	 * best possible mean is rest[0] / n, so a small free-running cost ends it
	 * before any search. A budget that cut free_running() leaves nothing to
	 * compare with: the jobs run free.
	 */
	bool hold = !s.out_of_time && free_run - s.rest[0] / n >= OPT_WORTH;
	if (hold) {
		/* A complete incumbent first: whatever cuts the search, one exists. */
		complete(&s, 0);
		save(&s, partial(&s, n));
		/* Once an incumbent has no contention left, nothing can beat it. */
		if (s.best > s.rest[0] + OPT_EPS)
			greedy(&s);
		if (s.best > s.rest[0] + OPT_EPS && !s.out_of_time)
			dfs(&s, 0);
		hold = free_run - s.best / n >= OPT_WORTH;
	}
	if (s.out_of_time)
		ctx->budget_exhausted = true;
	if (!hold) {
		leave_to_classes(ctx, m, member, n, class_levels(st));
		/* Without a search, holding could reach at best the bound rest[0] / n. */
		bool searched = s.best < HUGE_VAL;
		double held = searched ? s.best / n : s.rest[0] / n;
		if (s.out_of_time && !searched)
			snprintf(ctx->note, sizeof(ctx->note),
				 "optimal: %d jobs left to priority classes, lightest first: "
				 "budget exhausted before the free-running estimate",
				 n);
		else
			snprintf(ctx->note, sizeof(ctx->note),
				 "optimal: %d jobs left to priority classes, lightest first: "
				 "holding not worth it (free-running cost %.4f, held %s%.4f)%s",
				 n, free_run, searched ? "" : ">= ", held,
				 s.out_of_time ? ", budget exhausted" : "");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		hm_decision_t *d = &ctx->jobs[member[i]].dec;
		double P = hm_cm_period_s(m, member[i]);
		d->period_s = P;
		d->shift_s = s.best_bin[i] * P / s.bins;
		d->origin_s = hm_cm_origin_s(m);
		d->guard_s = s.guard[i];
		d->prio = s.best_cls[i];
	}
	snprintf(ctx->note, sizeof(ctx->note),
		 "optimal: %d jobs held to slots, cost %.4f (free-running %.4f), %ld nodes%s", n,
		 s.best / n, free_run, s.nodes, s.out_of_time ? ", budget exhausted" : "");
out:
	free(s.cls);
	free(s.bin);
	free(s.best_cls);
	free(s.best_bin);
	free(s.shift);
	free(s.it);
	free(s.floor);
	free(s.rest);
	free(s.guard);
	return rc;
}

static hm_rc_t opt_decide(void *state, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	const opt_state_t *st = state;
	hm_cm_t *m = NULL;
	int n = ctx->njobs, *par = NULL, *member = NULL, *tmp = NULL, unreached = 0;
	double deadline_s = hm_mono_s() + st->cfg.budget_s;
	hm_rc_t rc;

	rc = hm_cm_build(ctx, NULL, &m, err);
	if (rc != HM_OK)
		goto out;
	/*
	 * Slot period: the contention-free iteration, corrected by the measured
	 * compute (not the measured iteration, which includes past waits and
	 * contention and would ratchet the period up at every re-decision).
	 */
	for (int i = 0; i < n; i++) {
		const hm_sched_job_t *sj = &ctx->jobs[i];
		double P = hm_cm_alone_iter_s(m, i);
		if (sj->meas_compute_s > 0 && sj->job)
			P += sj->meas_compute_s - sj->job->profile.compute_s;
		if (P > 0 && hm_cm_period_s(m, i) != P) {
			rc = hm_cm_set_period(m, i, P, err);
			if (rc != HM_OK)
				goto out;
		}
	}
	par = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	member = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	tmp = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	if (!par || !member || !tmp) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "optimal: out of memory for %d jobs", n);
		goto out;
	}
	for (int i = 0; i < n; i++)
		par[i] = i;
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			if (hm_cm_shares_link(m, a, b))
				par[find(par, a)] = find(par, b);
	for (int r = 0; r < n; r++) {
		if (find(par, r) != r)
			continue;
		int cnt = 0;
		for (int i = 0; i < n; i++)
			if (find(par, i) == r)
				member[cnt++] = i;
		if (cnt == 1) { /* alone on its links: fair defaults, no effort */
			leave_to_fair(&ctx->jobs[r].dec);
			continue;
		}
		unsigned long sig = signature(ctx, member, cnt, tmp);
		bool same = true;
		for (int i = 0; i < cnt && same; i++)
			same = ctx->jobs[member[i]].dec.epoch == sig &&
			       ctx->jobs[member[i]].dec.period_s > 0;
		if (same)
			continue;
		if (hm_mono_s() > deadline_s) {
			/* Budget spent on earlier components: these run free with classes. */
			leave_to_classes(ctx, m, member, cnt, class_levels(st));
			ctx->budget_exhausted = true;
			unreached += cnt;
			continue;
		}
		rc = solve(st, ctx, m, member, cnt, deadline_s, err);
		if (rc != HM_OK)
			goto out;
		for (int i = 0; i < cnt; i++)
			ctx->jobs[member[i]].dec.epoch = sig;
	}
	if (unreached > 0)
		snprintf(ctx->note, sizeof(ctx->note),
			 "optimal: budget exhausted; %d jobs of components not reached left to "
			 "priority classes, lightest first",
			 unreached);
out:
	hm_cm_free(m);
	free(par);
	free(member);
	free(tmp);
	return rc;
}

const hm_policy_ops_t hm_policy_optimal = {
    .name = "optimal",
    .description = "exact branch-and-bound over shifts and priority classes (time budget)",
    .create = opt_create,
    .decide = opt_decide,
    .destroy = opt_destroy,
    .place = NULL,
    .uses_epochs = false,
};
