/* Helpers shared by the cassini, crux and harmonics policies (see hm_pol_common.h). */
#include "hm_pol_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const hm_traffic_t *hm_pol_traffic(const hm_sched_job_t *j, int path)
{
	if (j->npaths > 1 && j->path_traffic && path >= 0)
		return &j->path_traffic[path % j->npaths];
	return j->traffic;
}

static int traffic_entries(const hm_traffic_t *tr)
{
	int n = 0;

	if (!tr)
		return 0;
	for (int p = 0; p < tr->nphases && p < HM_MAX_PHASES; p++)
		n += tr->phases[p].nlinks;
	return n;
}

int hm_pol_ord_cmp(const void *x, const void *y)
{
	const hm_pol_ord_t *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

int hm_pol_traffic_links(const hm_traffic_t *tr, int *links, double *bits, int cap)
{
	int np, pos[HM_MAX_PHASES] = {0}, out = 0;

	if (traffic_entries(tr) == 0)
		return 0;
	if (tr->nphases == 1) {
		/* One phase: its links are ascending already (hm_job.h). */
		const hm_phase_load_t *ph = &tr->phases[0];
		for (int i = 0; i < ph->nlinks && out < cap; i++) {
			links[out] = ph->links[i];
			bits[out] = ph->flow_bytes * 8.0 * (double)ph->flows[i];
			out++;
		}
		return out;
	}
	/* Several: merge them, a link's bits summed in phase order (as a stable
	 * sort of all entries gave, without its copy). */
	np = tr->nphases < HM_MAX_PHASES ? tr->nphases : HM_MAX_PHASES;
	for (;;) {
		int l = 0;
		bool found = false;
		for (int p = 0; p < np; p++) {
			const hm_phase_load_t *ph = &tr->phases[p];
			if (pos[p] < ph->nlinks && (!found || ph->links[pos[p]] < l)) {
				l = ph->links[pos[p]];
				found = true;
			}
		}
		if (!found)
			return out;
		for (int p = 0; p < np; p++) {
			const hm_phase_load_t *ph = &tr->phases[p];
			for (; pos[p] < ph->nlinks && ph->links[pos[p]] == l; pos[p]++) {
				double b = ph->flow_bytes * 8.0 * (double)ph->flows[pos[p]];
				if (out > 0 && links[out - 1] == l) {
					bits[out - 1] += b;
					continue;
				}
				if (out == cap)
					return out;
				links[out] = l;
				bits[out] = b;
				out++;
			}
		}
	}
}

static double duty(const hm_pjob_t *p)
{
	double d = p->T_s > 0 ? p->burst_s / p->T_s : 0;

	return d < 1 ? d : 1; /* fmin(1, d) without the library call */
}

static void job_params(const hm_sched_job_t *sj, const hm_traffic_t *tr, hm_pjob_t *pj)
{
	double declared = sj->job ? sj->job->profile.compute_s : 0;
	double comp = declared;

	/*
	 * Measured compute: per-epoch means carry a boundary bias of one
	 * iteration in n (and jitter), so small differences are noise: keep the
	 * declared value; a clear change (> 15%) is a new pattern and wins.
	 */
	if (sj->meas_compute_s > 0) {
		double m = sj->meas_compute_s;
		if (declared <= 0 || fabs(m - declared) > 0.15 * declared)
			comp = m;
	}
	double burst = 0;

	if (tr)
		for (int p = 0; p < tr->nphases && p < HM_MAX_PHASES; p++)
			burst += tr->alone_comm_s[p];
	pj->gpus = sj->job ? sj->job->gpus : 1;
	pj->comp_s = comp;
	pj->burst_s = burst;
	/* alone_iter_s honours overlap; rescale it to the measured compute. */
	if (tr && tr->alone_iter_s > 0)
		pj->T_s = tr->alone_iter_s - declared + comp;
	else
		pj->T_s = comp + burst;
	if (pj->T_s < comp)
		pj->T_s = comp;
	if (pj->T_s <= 0)
		pj->T_s = 1e-6;
	/*
	 * Spread: a job keeping its slots (iterations within 10% of the period)
	 * shows slot waits, not compute jitter: keep the assumed jitter, which
	 * also keeps its period (and the group's stagger) stable across epochs.
	 * Otherwise the measured spread, capped at twice the assumed jitter (it
	 * includes contention), or the assumed jitter before any measurement.
	 * The compute's own measured spread (waits and contention excluded) above
	 * that cap is the job's own, held or not: a real framework's step on
	 * shared hosts varies by a quarter, and slots sized for 5% then miss.
	 */
	if (sj->dec.period_s > 0 && sj->meas_iter_s > 0 &&
	    sj->meas_iter_s <= 1.1 * sj->dec.period_s)
		pj->sd_s = HM_POL_DEFAULT_CV * comp;
	else if (sj->meas_iter_s > 0) /* measured, zero spread included */
		pj->sd_s = fmin(sj->meas_iter_sd_s, 2 * HM_POL_DEFAULT_CV * comp);
	else
		pj->sd_s = HM_POL_DEFAULT_CV * comp;
	if (sj->meas_compute_sd_s > 2 * HM_POL_DEFAULT_CV * comp)
		pj->sd_s = fmax(pj->sd_s, fmin(sj->meas_compute_sd_s, comp));
}

hm_rc_t hm_pview_build(const hm_sched_ctx_t *ctx, const hm_traffic_t *const *trs, hm_pview_t *v,
		       hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	const hm_topo_t *t = ctx->topo;
	int total = 0, used = 0;
	int *cnt = NULL;
	double *lcap = NULL; /* capacities read in link order: one pass, not a miss per job */

	memset(v, 0, sizeof(*v));
	v->njobs = ctx->njobs;
	v->nlinks = t ? t->nlinks : 0;
	for (int i = 0; i < ctx->njobs; i++) {
		const hm_traffic_t *tr = trs ? trs[i] : ctx->jobs[i].traffic;
		total += traffic_entries(tr);
	}
	v->jobs = calloc((size_t)(ctx->njobs > 0 ? ctx->njobs : 1), sizeof(*v->jobs));
	v->link_pool = malloc(sizeof(int) * (size_t)(total + 1));
	v->dbl_pool = malloc(sizeof(double) * 2 * (size_t)(total + 1));
	v->lstart = calloc((size_t)v->nlinks + 2, sizeof(int));
	cnt = calloc((size_t)v->nlinks + 1, sizeof(int));
	lcap = malloc(sizeof(double) * (size_t)(v->nlinks + 1));
	if (!v->jobs || !v->link_pool || !v->dbl_pool || !v->lstart || !cnt || !lcap) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "policy view: out of memory for %d jobs",
				ctx->njobs);
		goto out;
	}
	for (int l = 0; l < v->nlinks; l++)
		lcap[l] = t->links[l].capacity_bps;
	for (int i = 0; i < ctx->njobs; i++) {
		const hm_sched_job_t *sj = &ctx->jobs[i];
		const hm_traffic_t *tr = trs ? trs[i] : sj->traffic;
		hm_pjob_t *pj = &v->jobs[i];
		int n;

		pj->idx = i;
		job_params(sj, tr, pj);
		pj->links = v->link_pool + used;
		pj->lbits = v->dbl_pool + used;
		pj->demand = v->dbl_pool + total + used;
		n = hm_pol_traffic_links(tr, pj->links, pj->lbits, total - used);
		if (n < 0) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "policy view: out of memory");
			goto out;
		}
		/* Keep only links the topology knows. */
		int k = 0;
		for (int m = 0; m < n; m++) {
			int l = pj->links[m];
			if (l < 0 || l >= v->nlinks || pj->lbits[m] <= 0)
				continue;
			pj->links[k] = l;
			pj->lbits[k] = pj->lbits[m];
			k++;
		}
		pj->nlinks = k;
		used += k;
		for (int m = 0; m < k; m++) {
			double cap = lcap[pj->links[m]];
			double tx = cap > 0 ? pj->lbits[m] / cap : 0;
			pj->bits += pj->lbits[m];
			if (tx > pj->bneck_s)
				pj->bneck_s = tx;
			double d = pj->burst_s > 0 ? tx / pj->burst_s : 1.0;
			pj->demand[m] = d < 1.0 ? d : 1.0; /* fmin without the call */
			cnt[pj->links[m]]++;
		}
	}
	for (int l = 0; l < v->nlinks; l++)
		v->lstart[l + 1] = v->lstart[l] + cnt[l];
	v->ljobs = malloc(sizeof(int) * (size_t)(used + 1));
	v->lload = calloc((size_t)v->nlinks + 1, sizeof(double));
	v->lmaxd = calloc((size_t)v->nlinks + 1, sizeof(double));
	v->lcont = malloc((size_t)v->nlinks + 1);
	if (!v->ljobs || !v->lload || !v->lmaxd || !v->lcont) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "policy view: out of memory");
		goto out;
	}
	memset(cnt, 0, sizeof(int) * (size_t)v->nlinks);
	for (int i = 0; i < v->njobs; i++) {
		const hm_pjob_t *pj = &v->jobs[i];
		for (int m = 0; m < pj->nlinks; m++) {
			int l = pj->links[m];
			v->ljobs[v->lstart[l] + cnt[l]++] = i;
			v->lload[l] += pj->demand[m] * duty(pj);
			if (pj->demand[m] > v->lmaxd[l])
				v->lmaxd[l] = pj->demand[m];
		}
	}
	for (int l = 0; l < v->nlinks; l++)
		v->lcont[l] = 2 * v->lmaxd[l] + v->lload[l] > 1.0;
out:
	free(cnt);
	free(lcap);
	if (rc != HM_OK)
		hm_pview_free(v);
	return rc;
}

void hm_pview_free(hm_pview_t *v)
{
	if (!v)
		return;
	free(v->jobs);
	free(v->lstart);
	free(v->ljobs);
	free(v->lload);
	free(v->lmaxd);
	free(v->lcont);
	free(v->link_pool);
	free(v->dbl_pool);
	memset(v, 0, sizeof(*v));
}

hm_rc_t hm_uf_init(hm_uf_t *u, int n)
{
	u->n = n;
	u->parent = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
	if (!u->parent)
		return HM_ERR_NOMEM;
	for (int i = 0; i < n; i++)
		u->parent[i] = i;
	return HM_OK;
}

bool hm_uf_union(hm_uf_t *u, int a, int b)
{
	a = hm_uf_find(u, a);
	b = hm_uf_find(u, b);
	if (a == b)
		return false;
	/* Smaller index becomes the root: deterministic component ids. */
	if (a < b)
		u->parent[b] = a;
	else
		u->parent[a] = b;
	return true;
}

void hm_uf_free(hm_uf_t *u)
{
	if (!u)
		return;
	free(u->parent);
	u->parent = NULL;
}

static double seg_overlap(double a0, double a1, double b0, double b1)
{
	double lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
	return hi > lo ? hi - lo : 0;
}

/* Overlap of [a, a + len) with the bursts [s + k P, s + k P + b). */
static double circ_overlap(double a, double len, double s, double b, double P)
{
	double u = fmod(a - s, P), sum = 0;

	if (u < 0)
		u += P;
	for (int k = 0; k * P < u + len && k < 1000; k++)
		sum += seg_overlap(u, u + len, k * P, k * P + b);
	return sum;
}

/* Small p, q with p * Pa == q * Pb (hyperperiod), 0 when none up to 8. */
static int commensurate(double Pa, double Pb, int *p, int *q)
{
	double r = Pb / Pa, tol = 1e-7 * (Pa + Pb);

	if (Pa == Pb) {
		*p = *q = 1;
		return 1;
	}
	for (int qq = 1; qq <= 8; qq++) {
		double pp = floor(qq * r + 0.5);
		if (pp >= 1 && pp <= 8 && fabs(pp * Pa - qq * Pb) <= tol) {
			*p = (int)pp;
			*q = qq;
			return 1;
		}
	}
	return 0;
}

double hm_burst_overlap_rate(const hm_burst_t *a, const hm_burst_t *b)
{
	int p, q;
	double sum = 0;

	if (a->P_s <= 0 || b->P_s <= 0 || a->b_s <= 0 || b->b_s <= 0)
		return 0;
	if (a->free || b->free || !commensurate(a->P_s, b->P_s, &p, &q))
		return fmin(1, a->b_s / a->P_s) * fmin(1, b->b_s / b->P_s);
	/* p bursts of a in the hyperperiod p * P_a. */
	for (int k = 0; k < p; k++)
		sum += circ_overlap(a->s_s + k * a->P_s, fmin(a->b_s, a->P_s), b->s_s,
				    fmin(b->b_s, b->P_s), b->P_s);
	return sum / (p * a->P_s);
}

/* First k in [lo, n) with links[k] >= v (n when none): galloping, so that a
 * short link list against a long one costs its length times a logarithm. */
static inline int skip_to(const int *links, int lo, int n, int v)
{
	int hi = lo, step = 1;

	while (hi < n && links[hi] < v) {
		lo = hi + 1;
		hi += step;
		step *= 2;
	}
	if (hi > n)
		hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (links[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

double hm_pjob_excess(const hm_pjob_t *a, const hm_pjob_t *b, const double *lload)
{
	double best = 0, da = duty(a), db = duty(b);
	int i = 0, j = 0;

	while (i < a->nlinks && j < b->nlinks) {
		if (a->links[i] < b->links[j]) {
			i = skip_to(a->links, i + 1, a->nlinks, b->links[j]);
		} else if (a->links[i] > b->links[j]) {
			j = skip_to(b->links, j + 1, b->nlinks, a->links[i]);
		} else {
			double e = a->demand[i] + b->demand[j] - 1.0;
			if (lload) {
				double bg =
				    lload[a->links[i]] - a->demand[i] * da - b->demand[j] * db;
				e += bg > 0 ? bg : 0;
			}
			if (e > best)
				best = e;
			i++;
			j++;
		}
	}
	return best > 1 ? 1 : best;
}

double hm_pjob_excess_at(const hm_pjob_t *a, const int *apos, const hm_pjob_t *b,
			 const double *lload)
{
	double best = 0, da = duty(a), db = duty(b);

	if (b->nlinks > 4 * a->nlinks) /* galloping through b is cheaper */
		return hm_pjob_excess(a, b, lload);
	/* b's links in ascending order: the shared ones, as the merge visits them. */
	for (int j = 0; j < b->nlinks; j++) {
		int i = apos[b->links[j]] - 1;
		double e;
		if (i < 0)
			continue;
		e = a->demand[i] + b->demand[j] - 1.0;
		if (lload) {
			double bg = lload[a->links[i]] - a->demand[i] * da - b->demand[j] * db;
			e += bg > 0 ? bg : 0;
		}
		if (e > best)
			best = e;
	}
	return best > 1 ? 1 : best;
}

typedef struct {
	double key;
	int idx;
} kv_t;

/* The key's bits as an integer that ascends as the key descends (-0 as +0:
 * they compare equal; keys are never NaN). */
static uint64_t kv_desc_bits(double key)
{
	uint64_t b;

	key += 0.0;
	memcpy(&b, &key, sizeof(b));
	b = b >> 63 ? ~b : b | (1ULL << 63);
	return ~b;
}

/*
 * Descending key, ascending index (v[] comes in index order): a stable LSD
 * radix sort, 11 bits a pass, tmp[n] scratch (qsort's indirect comparisons
 * were half of the path choice at 23,000 jobs).
 */
static void kv_sort(kv_t *v, kv_t *tmp, int n)
{
	kv_t *src = v, *dst = tmp, *t;

	for (int shift = 0; shift < 64; shift += 11) {
		int cnt[2049] = {0}, same = 0;
		for (int i = 0; i < n; i++)
			cnt[((kv_desc_bits(src[i].key) >> shift) & 2047) + 1]++;
		for (int d = 1; d <= 2048; d++)
			same |= cnt[d] == n;
		if (same)
			continue; /* one digit for all: the pass keeps the order */
		for (int d = 0; d < 2048; d++)
			cnt[d + 1] += cnt[d];
		for (int i = 0; i < n; i++)
			dst[cnt[(kv_desc_bits(src[i].key) >> shift) & 2047]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, sizeof(*v) * (size_t)n);
}

/* Utilisation of the most loaded link of traffic tr with load[] plus the job's. */
static double worst_util(const double *cap_bps, const double *load, const int *links,
			 const double *bits, int n, double T_s)
{
	double worst = 0;

	for (int k = 0; k < n; k++) {
		double c = cap_bps[links[k]];
		double u = c > 0 ? (load[links[k]] + bits[k] / T_s) / c : 0;
		worst = u > worst ? u : worst; /* fmax without the call */
	}
	return worst;
}

/* tr's per-link bits into (*links, *bits), grown to fit; the count, or -1 (out of memory). */
static int links_of(const hm_traffic_t *tr, int **links, double **bits, int *cap, hm_err_t *err)
{
	int need = traffic_entries(tr);

	if (need > *cap) {
		free(*links);
		free(*bits);
		*cap = need;
		*links = malloc(sizeof(int) * (size_t)need);
		*bits = malloc(sizeof(double) * (size_t)need);
		if (!*links || !*bits) {
			hm_err_set(err, HM_ERR_NOMEM, "paths: out of memory");
			return -1;
		}
	}
	return hm_pol_traffic_links(tr, *links, *bits, *cap);
}

hm_rc_t hm_pol_choose_paths(const hm_sched_ctx_t *ctx, const double *T_s, const double *key,
			    double keep, int *path, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	int nl = ctx->topo->nlinks, cap = 0;
	double *load = calloc((size_t)nl + 1, sizeof(double)), *bits = NULL;
	double *cap_bps = malloc(sizeof(double) * ((size_t)nl + 1)); /* in link order: one pass */
	int *links = NULL;
	kv_t *ord = malloc(sizeof(kv_t) * 2 * (size_t)(ctx->njobs + 1));

	if (!load || !cap_bps || !ord) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "paths: out of memory");
		goto out;
	}
	for (int l = 0; l < nl; l++)
		cap_bps[l] = ctx->topo->links[l].capacity_bps;
	for (int i = 0; i < ctx->njobs; i++) {
		ord[i].key = key[i];
		ord[i].idx = i;
		path[i] = ctx->jobs[i].dec.path;
	}
	kv_sort(ord, ord + ctx->njobs + 1, ctx->njobs);
	for (int q = 0; q < ctx->njobs; q++) {
		int i = ord[q].idx, np = ctx->jobs[i].npaths, best_p = 0, cur = -1, n;
		double best = INFINITY, cur_u = INFINITY, T = T_s[i];

		if (np < 1)
			np = 1;
		if (keep > 0 && path[i] >= 0 && path[i] < np)
			cur = path[i];
		for (int p = 0; p < np && np > 1; p++) { /* one path: nothing to compare */
			const hm_traffic_t *tr = hm_pol_traffic(&ctx->jobs[i], p);
			double u;

			if ((n = links_of(tr, &links, &bits, &cap, err)) < 0) {
				rc = HM_ERR_NOMEM;
				goto out;
			}
			u = worst_util(cap_bps, load, links, bits, n, T);
			if (p == cur)
				cur_u = u;
			if (u < best - 1e-12) {
				best = u;
				best_p = p;
			}
		}
		if (cur >= 0 && !(best < cur_u * (1 - keep)))
			best_p = cur;
		path[i] = best_p;
		if ((n = links_of(hm_pol_traffic(&ctx->jobs[i], best_p), &links, &bits, &cap,
				  err)) < 0) {
			rc = HM_ERR_NOMEM;
			goto out;
		}
		for (int k = 0; k < n; k++)
			load[links[k]] += bits[k] / T;
	}
out:
	free(load);
	free(cap_bps);
	free(ord);
	free(links);
	free(bits);
	return rc;
}
