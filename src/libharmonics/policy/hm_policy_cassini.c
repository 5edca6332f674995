/*
 * hm_policy_cassini.c - Cassini (NSDI'24): per-link unified circles with 360
 * angle bins, compatibility scores, an affinity graph with BFS shift
 * propagation, loop handling, and the choice among placement candidates.
 * Shifts are applied as one-time delays of the next iteration (period 0).
 * Departures from the paper are listed in docs/algorithms.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_cassini.h"
#include "hm_pol_common.h"
#include "hm_policy.h"

#define NB HM_CASSINI_BINS

static long long gcdll(long long a, long long b)
{
	while (b) {
		long long t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Unified circle perimeter (seconds). */
static double circle_len(int n, const double *T_s)
{
	long long L = 1, qmax = 1;
	double Tmax = 0;

	for (int i = 0; i < n; i++) {
		long long q = llround(T_s[i] * 1000.0);
		if (q < 1)
			q = 1;
		if (q > qmax)
			qmax = q;
		Tmax = fmax(Tmax, T_s[i]);
		L = L / gcdll(L, q) * q;
		if (L > HM_CASSINI_LCM_CAP * qmax || L <= 0)
			return Tmax; /* the LCM explodes: fall back to the longest period */
	}
	return (double)L / 1000.0;
}

static void pattern(double T, double b, double d, double L, double *pat)
{
	double w = L / NB;

	for (int k = 0; k < NB; k++) {
		double ph = fmod((k + 0.5) * w, T);
		pat[k] = ph >= T - b ? d : 0;
	}
}

/* Excess of job pattern pat rotated by r bins on top of rest[]. */
static double excess_with(const double *rest, const double *pat, int r)
{
	double ex = 0;

	for (int k = 0; k < NB; k++) {
		double v = rest[k] + pat[(k - r + NB) % NB] - 1.0;
		if (v > 0)
			ex += v;
	}
	return ex;
}

static void add_pat(double *tot, const double *pat, int r, double sign)
{
	for (int k = 0; k < NB; k++)
		tot[k] += sign * pat[(k - r + NB) % NB];
}

double hm_cassini_score(int n, const double *T_s, const double *burst_s, const double *demand,
			const double *rot_s)
{
	double L = circle_len(n, T_s), w = L / NB, tot[NB] = {0}, pat[NB], ex = 0;

	for (int i = 0; i < n; i++) {
		pattern(T_s[i], burst_s[i], demand[i], L, pat);
		add_pat(tot, pat, (int)llround(rot_s[i] / w) % NB, 1);
	}
	for (int k = 0; k < NB; k++)
		if (tot[k] > 1)
			ex += tot[k] - 1;
	return 1.0 - ex / NB;
}

double hm_cassini_link(int n, const double *T_s, const double *burst_s, const double *demand,
		       double *rot_s)
{
	double L = circle_len(n, T_s), w = L / NB, tot[NB] = {0}, ex = 0;
	double *pats = malloc(sizeof(double) * NB * (size_t)(n > 0 ? n : 1));
	int *rot = calloc((size_t)(n > 0 ? n : 1), sizeof(int));

	if (!pats || !rot) {
		free(pats);
		free(rot);
		return -1;
	}
	for (int i = 0; i < n; i++)
		pattern(T_s[i], burst_s[i], demand[i], L, pats + (size_t)i * NB);
	if (n > 0)
		add_pat(tot, pats, 0, 1);
	/* Greedy insertion (exhaustive for two jobs), then one descent sweep. */
	for (int sweep = 0; sweep < 2; sweep++) {
		for (int i = 1; i < n; i++) {
			double *pat = pats + (size_t)i * NB, best = INFINITY;
			int R = (int)ceil(T_s[i] / w - 1e-9), br = 0;
			if (R > NB)
				R = NB;
			if (R < 1)
				R = 1;
			if (sweep > 0)
				add_pat(tot, pat, rot[i], -1);
			for (int r = 0; r < R; r++) {
				double e = excess_with(tot, pat, r);
				if (e < best - 1e-12) {
					best = e;
					br = r;
				}
			}
			rot[i] = br;
			add_pat(tot, pat, br, 1);
		}
		if (n <= 2)
			break;
	}
	for (int k = 0; k < NB; k++)
		if (tot[k] > 1)
			ex += tot[k] - 1;
	for (int i = 0; i < n; i++)
		rot_s[i] = fmod(rot[i] * w, T_s[i]);
	free(pats);
	free(rot);
	return 1.0 - ex / NB;
}

static double circ_dist(double a, double b, double T)
{
	double d = fmod(fabs(a - b), T);
	return fmin(d, T - d);
}

int hm_cassini_propagate(int njobs, const double *T_s, int nlinks, int nedges,
			 const hm_cassini_edge_t *e, const int *roots, double tol_s,
			 double *shift_s, int *comp)
{
	int *js = calloc((size_t)njobs + 2, sizeof(int)),
	    *je = malloc(sizeof(int) * (size_t)(nedges + 1));
	int *ls = calloc((size_t)nlinks + 2, sizeof(int)),
	    *le = malloc(sizeof(int) * (size_t)(nedges + 1));
	int *fill = calloc((size_t)(njobs > nlinks ? njobs : nlinks) + 1, sizeof(int));
	int *queue = malloc(sizeof(int) * (size_t)(njobs + 1));
	char *lexp = calloc((size_t)nlinks + 1, 1);
	int conflicts = 0;

	if (!js || !je || !ls || !le || !fill || !queue || !lexp) {
		conflicts = -1;
		goto out;
	}
	for (int k = 0; k < nedges; k++) {
		js[e[k].job + 1]++;
		ls[e[k].link + 1]++;
	}
	for (int i = 0; i < njobs; i++)
		js[i + 1] += js[i];
	for (int l = 0; l < nlinks; l++)
		ls[l + 1] += ls[l];
	for (int k = 0; k < nedges; k++)
		je[js[e[k].job] + fill[e[k].job]++] = k;
	memset(fill, 0, sizeof(int) * (size_t)(njobs > nlinks ? njobs : nlinks));
	for (int k = 0; k < nedges; k++)
		le[ls[e[k].link] + fill[e[k].link]++] = k;
	for (int i = 0; i < njobs; i++) {
		shift_s[i] = 0;
		comp[i] = -1;
	}
	for (int q = 0; q < njobs; q++) {
		int root = roots[q], qh = 0, qt = 0;
		if (comp[root] >= 0 || js[root] == js[root + 1])
			continue;
		comp[root] = root;
		shift_s[root] = 0;
		queue[qt++] = root;
		while (qh < qt) {
			int i = queue[qh++];
			for (int a = js[i]; a < js[i + 1]; a++) {
				const hm_cassini_edge_t *ei = &e[je[a]];
				if (lexp[ei->link])
					continue;
				lexp[ei->link] = 1;
				for (int b = ls[ei->link]; b < ls[ei->link + 1]; b++) {
					const hm_cassini_edge_t *ej = &e[le[b]];
					int j = ej->job;
					double t;
					if (j == i)
						continue;
					t = fmod(shift_s[i] - ei->rot_s + ej->rot_s, T_s[j]);
					if (t < 0)
						t += T_s[j];
					if (comp[j] < 0) {
						comp[j] = root;
						shift_s[j] = t;
						queue[qt++] = j;
					} else if (circ_dist(t, shift_s[j], T_s[j]) > tol_s) {
						conflicts++; /* a loop: keep the first assignment */
					}
				}
			}
		}
	}
out:
	free(js);
	free(je);
	free(ls);
	free(le);
	free(fill);
	free(queue);
	free(lexp);
	return conflicts;
}

/* ---- the policy ---- */

typedef struct {
	hm_policy_cfg_t cfg;
	unsigned long epoch;
} kstate_t;

typedef struct {
	double *shift; /* per job */
	int *comp;
	double *score_sum;
	int *score_n;
	int conflicts;
	int nlinks_contended;
} csol_t;

static void csol_free(csol_t *c)
{
	free(c->shift);
	free(c->comp);
	free(c->score_sum);
	free(c->score_n);
}

static const hm_sched_ctx_t *g_root_ctx; /* qsort comparator context */

static int root_cmp(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	double sa = g_root_ctx->jobs[a].start_s, sb = g_root_ctx->jobs[b].start_s;

	if (sa != sb)
		return sa < sb ? -1 : 1;
	return (a > b) - (a < b);
}

static hm_rc_t cassini_solve(const hm_sched_ctx_t *ctx, const hm_pview_t *v, csol_t *out,
			     hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	int n = v->njobs, ne = 0, ecap = 0, nl = 0, prev_lo = -1, prev_hi = -1;
	hm_cassini_edge_t *edges = NULL;
	double *T = malloc(sizeof(double) * (size_t)(n + 1));
	double *lT = NULL, *lb = NULL, *ld = NULL, *lr = NULL, prev_score = 0;
	int *roots = malloc(sizeof(int) * (size_t)(n + 1));
	int maxl = 1;

	memset(out, 0, sizeof(*out));
	out->shift = calloc((size_t)n + 1, sizeof(double));
	out->comp = malloc(sizeof(int) * (size_t)(n + 1));
	out->score_sum = calloc((size_t)n + 1, sizeof(double));
	out->score_n = calloc((size_t)n + 1, sizeof(int));
	for (int l = 0; l < v->nlinks; l++)
		if (v->lstart[l + 1] - v->lstart[l] > maxl)
			maxl = v->lstart[l + 1] - v->lstart[l];
	lT = malloc(sizeof(double) * (size_t)maxl);
	lb = malloc(sizeof(double) * (size_t)maxl);
	ld = malloc(sizeof(double) * (size_t)maxl);
	lr = malloc(sizeof(double) * (size_t)maxl);
	if (!T || !roots || !out->shift || !out->comp || !out->score_sum || !out->score_n || !lT ||
	    !lb || !ld || !lr)
		goto nomem;
	for (int i = 0; i < n; i++) {
		T[i] = v->jobs[i].T_s;
		roots[i] = i;
	}
	for (int l = 0; l < v->nlinks; l++) {
		int lo = v->lstart[l], hi = v->lstart[l + 1], m = hi - lo;
		double dsum = 0, score;
		if (m < 2)
			continue;
		for (int q = 0; q < m; q++) {
			const hm_pjob_t *p = &v->jobs[v->ljobs[lo + q]];
			for (int k = 0; k < p->nlinks; k++)
				if (p->links[k] == l)
					ld[q] = p->demand[k];
			lT[q] = p->T_s;
			lb[q] = p->burst_s;
			dsum += ld[q];
		}
		if (dsum <= 1.0 + 1e-9)
			continue; /* no contention possible: no constraint */
		/* Same job set as the previous contended link (e.g. the other direction). */
		if (prev_lo >= 0 && prev_hi - prev_lo == m &&
		    memcmp(&v->ljobs[prev_lo], &v->ljobs[lo], sizeof(int) * (size_t)m) == 0) {
			score = prev_score;
		} else {
			score = hm_cassini_link(m, lT, lb, ld, lr);
			if (score < -0.5)
				goto nomem;
		}
		prev_lo = lo;
		prev_hi = hi;
		prev_score = score;
		if (ne + m > ecap) {
			int nc = (ne + m) * 2 + 64;
			hm_cassini_edge_t *ned = realloc(edges, sizeof(*edges) * (size_t)nc);
			if (!ned)
				goto nomem;
			edges = ned;
			ecap = nc;
		}
		for (int q = 0; q < m; q++) {
			int j = v->ljobs[lo + q];
			edges[ne].job = j;
			edges[ne].link = nl;
			edges[ne].rot_s = lr[q];
			ne++;
			out->score_sum[j] += score;
			out->score_n[j]++;
		}
		nl++;
	}
	out->nlinks_contended = nl;
	/* Roots: longest-running jobs first (they keep their phase). */
	g_root_ctx = ctx;
	qsort(roots, (size_t)n, sizeof(int), root_cmp);
	{
		/* Loops agreeing within one angle bin are not conflicts. */
		double tmin = INFINITY;
		for (int i = 0; i < n; i++)
			tmin = fmin(tmin, T[i]);
		out->conflicts =
		    hm_cassini_propagate(n, T, nl, ne, edges, roots, isfinite(tmin) ? tmin / NB : 0,
					 out->shift, out->comp);
	}
	if (out->conflicts < 0)
		goto nomem;
	goto done;
nomem:
	rc = hm_err_set(err, HM_ERR_NOMEM, "cassini: out of memory");
	csol_free(out);
done:
	free(edges);
	free(T);
	free(roots);
	free(lT);
	free(lb);
	free(ld);
	free(lr);
	return rc;
}

static hm_rc_t k_create(const hm_policy_cfg_t *cfg, void **state, hm_err_t *err)
{
	kstate_t *s = calloc(1, sizeof(*s));

	if (!s)
		return hm_err_set(err, HM_ERR_NOMEM, "cassini: out of memory");
	s->cfg = *cfg;
	*state = s;
	return HM_OK;
}

static void k_destroy(void *state)
{
	free(state);
}

/* When job i's next iteration would start without a delay. */
static double next_start(const hm_sched_ctx_t *ctx, int i, const hm_pjob_t *p)
{
	const hm_sched_job_t *sj = &ctx->jobs[i];
	double it = sj->meas_iter_s > 0 ? sj->meas_iter_s : p->T_s;

	if (ctx->event == HM_EV_ARRIVAL && i == ctx->event_job)
		return ctx->now_s; /* placed now: the delay applies to its first iteration */
	return sj->iter_start_s + it;
}

static hm_rc_t k_decide(void *state, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	kstate_t *s = state;
	hm_pview_t v = {0};
	csol_t sol = {0};
	const hm_traffic_t **trs = malloc(sizeof(*trs) * (size_t)(ctx->njobs + 1));
	hm_rc_t rc = HM_OK;
	int delayed = 0;

	if (!trs)
		return hm_err_set(err, HM_ERR_NOMEM, "cassini: out of memory");
	for (int i = 0; i < ctx->njobs; i++)
		trs[i] = hm_pol_traffic(&ctx->jobs[i], ctx->jobs[i].dec.path);
	rc = hm_pview_build(ctx, trs, &v, err);
	if (rc != HM_OK)
		goto out;
	rc = cassini_solve(ctx, &v, &sol, err);
	if (rc != HM_OK)
		goto out;
	s->epoch++;
	for (int i = 0; i < ctx->njobs; i++) {
		const hm_pjob_t *p = &v.jobs[i];
		int root = sol.comp[i];
		double ref, delay, tol;
		hm_decision_t d = ctx->jobs[i].dec;

		if (root < 0 || root == i)
			continue;
		/* Root keeps its phase: its next start is angle 0 of the component. */
		ref = next_start(ctx, root, &v.jobs[root]);
		delay = fmod(ref + sol.shift[i] - next_start(ctx, i, p), p->T_s);
		if (delay < 0)
			delay += p->T_s;
		tol = p->T_s / NB;
		if (delay < tol || p->T_s - delay < tol)
			continue; /* already aligned within one angle bin */
		d.period_s = 0;
		d.shift_s = delay;
		d.guard_s = 0;
		d.epoch = s->epoch;
		ctx->jobs[i].dec = d;
		delayed++;
	}
	snprintf(ctx->note, sizeof(ctx->note),
		 "cassini: %d contended links, %d one-time delays, %d loop conflicts",
		 sol.nlinks_contended, delayed, sol.conflicts);
out:
	csol_free(&sol);
	hm_pview_free(&v);
	free(trs);
	return rc;
}

/* Placement: the candidate whose links score best, loop-free candidates first. */
static int k_place(void *state, hm_sched_ctx_t *ctx, const hm_placement_t *cands,
		   const hm_traffic_t *cand_traffic, int ncands)
{
	const hm_traffic_t **trs;
	int best = 0, best_conf = 0;
	double best_score = -INFINITY;

	(void)state;
	(void)cands;
	if (ncands <= 1 || ctx->event_job < 0 || ctx->event_job >= ctx->njobs)
		return 0;
	trs = malloc(sizeof(*trs) * (size_t)(ctx->njobs + 1));
	if (!trs)
		return 0;
	for (int i = 0; i < ctx->njobs; i++)
		trs[i] = hm_pol_traffic(&ctx->jobs[i], ctx->jobs[i].dec.path);
	for (int c = 0; c < ncands; c++) {
		hm_pview_t v = {0};
		csol_t sol = {0};
		hm_err_t e = {0};
		int x = ctx->event_job, nlx;
		double score;

		trs[x] = &cand_traffic[c];
		if (hm_pview_build(ctx, trs, &v, &e) != HM_OK)
			continue;
		if (cassini_solve(ctx, &v, &sol, &e) != HM_OK) {
			hm_pview_free(&v);
			continue;
		}
		nlx = v.jobs[x].nlinks;
		/* Uncontended links count as perfectly compatible. */
		score = nlx > 0 ? (sol.score_sum[x] + (nlx - sol.score_n[x])) / nlx : 1.0;
		if (best_score == -INFINITY || (sol.conflicts == 0 && best_conf > 0) ||
		    ((sol.conflicts == 0) == (best_conf == 0) && score > best_score + 1e-12)) {
			best = c;
			best_conf = sol.conflicts;
			best_score = score;
		}
		csol_free(&sol);
		hm_pview_free(&v);
	}
	free(trs);
	return best;
}

const hm_policy_ops_t hm_policy_cassini = {
    .name = "cassini",
    .description = "Cassini (NSDI'24): unified-circle compatibility per link, affinity-graph "
		   "BFS time shifts (one-time delays), compatibility-aware placement",
    .create = k_create,
    .decide = k_decide,
    .destroy = k_destroy,
    .place = k_place,
    .uses_epochs = false,
};
