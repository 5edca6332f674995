/* The problem shared by the two Harmonics tiers (see hm_harmonics_model.h). */
#include "hm_harmonics_model.h"

#include "hm_prio.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void hm_hcfg_from_policy(const hm_policy_cfg_t *pc, hm_hcfg_t *hc)
{
	memset(hc, 0, sizeof(*hc));
	hc->z_sd = 1.0;
	hc->max_stretch = 1.5;
	hc->shift_grid = pc->shift_bins > 0 ? pc->shift_bins : 24;
	hc->guard_s = pc->guard_s > 0 ? pc->guard_s : 0;
	hc->classes = pc->prio_levels - pc->reserved_levels;
	if (hc->classes < 1)
		hc->classes = 1;
	hc->max_link_scan = 32;
	hc->hold_min_gain = 0.5;
}

double hm_harmonic_period(double base_s, double R_s)
{
	if (base_s <= 0)
		return R_s;
	if (base_s >= R_s) {
		double n = floor(base_s / R_s * (1 + 1e-12));
		return base_s / (n < 1 ? 1 : n);
	}
	return base_s * ceil(R_s / base_s * (1 - 1e-12));
}

hm_burst_t hm_hjob_burst(const hm_hjob_t *j)
{
	hm_burst_t b;

	b.b_s = j->pj->burst_s;
	if (j->hold) {
		b.P_s = j->P_s;
		b.s_s = j->s_s;
		b.free = false;
	} else {
		b.P_s = j->pj->T_s;
		b.s_s = 0;
		b.free = true;
	}
	return b;
}

double hm_hjob_free_rate(const hm_hjob_t *a, const hm_hjob_t *b)
{
	const hm_pjob_t *x = a->pj, *y = b->pj;
	/* fmin / fmax written out: no library call (values are never NaN). */
	double dx = x->burst_s / x->T_s, dy = y->burst_s / y->T_s;
	double duty = (dx < 1 ? dx : 1) * (dy < 1 ? dy : 1);
	double T = x->T_s < y->T_s ? x->T_s : y->T_s, slack = T - x->burst_s - y->burst_s;
	double Tmax = x->T_s > y->T_s ? x->T_s : y->T_s;

	/*
	 * Their gap then walks with the compute jitter between 0 and the slack,
	 * and the lower job loses what it crosses either bound: about
	 * (sd_x^2 + sd_y^2) / (2 slack) per iteration.
	 */
	if (fabs(x->T_s - y->T_s) <= HM_SAME_PERIOD * Tmax && slack > 0) {
		double var = x->sd_s * x->sd_s + y->sd_s * y->sd_s;
		double r = var / (2 * slack * T);
		return r < duty ? r : duty;
	}
	return duty;
}

double hm_hjob_pair_rate(const hm_hjob_t *a, const hm_hjob_t *b)
{
	hm_burst_t x, y;

	if (!a->hold && !b->hold)
		return hm_hjob_free_rate(a, b);
	x = hm_hjob_burst(a);
	y = hm_hjob_burst(b);
	return hm_burst_overlap_rate(&x, &y);
}

double hm_hjob_excess_on(const hm_hmodel_t *m, const hm_hjob_t *a, const hm_hjob_t *b, int r)
{
	const hm_pjob_t *x = a->pj, *y = b->pj;
	double best = 0;
	int i = 0, k = 0;

	while (i < x->nlinks && k < y->nlinks) {
		if (x->links[i] < y->links[k]) {
			i++;
		} else if (x->links[i] > y->links[k]) {
			k++;
		} else {
			if (hm_hmodel_link_rack(m, x->links[i]) == r) {
				double e = x->demand[i] + y->demand[k] - 1.0;
				if (e > best)
					best = e;
			}
			i++;
			k++;
		}
	}
	return best > 1 ? 1 : best;
}

double hm_hjob_guard(const hm_hmodel_t *m, const hm_hjob_t *j)
{
	double g, cap;

	if (m->cfg.guard_s > 0)
		return m->cfg.guard_s;
	/* Late bursts within ~3 sd (period margin 1 sd + guard 2 sd) keep their slot. */
	g = 2.0 * j->pj->sd_s + 0.005 * j->P_s;
	cap = 0.25 * (j->P_s - j->pj->burst_s);
	if (cap > 0 && g > cap)
		g = cap;
	return g;
}

/*
 * Class order (ascending key): Crux's corrected GPU intensity k * I, highest
 * first. k comes from simulating both strict orders of the job against the
 * reference (the job with the most traffic per iteration) and keeps the order
 * that loses less GPU work, so a class-only group gets Crux's order; holding
 * is what Harmonics adds. Measured against burst / compute * T^e (e = 0, 0.5,
 * 1): equal on the testbed, better with 4:1 uplinks (docs/algorithms.md).
 */
static void prio_keys(hm_hmodel_t *m, const int *start, const int *list)
{
	int ref = -1;
	hm_prio_kmemo_t *memo;

	for (int i = 0; i < m->njobs; i++)
		if (m->jobs[i].rack != HM_HJOB_NONET &&
		    (ref < 0 || m->jobs[i].pj->bits > m->jobs[ref].pj->bits))
			ref = i;
	memo = hm_prio_kmemo_new(m->njobs); /* NULL (no memory): k computed per job */
	/* Only groups of two or more are ordered: a job alone needs no key. */
	for (int g = 0; g < m->njobs; g++) {
		if (start[g + 1] - start[g] < 2)
			continue;
		for (int q = start[g]; q < start[g + 1]; q++) {
			int i = list[q];
			const hm_pjob_t *p = m->jobs[i].pj, *r = ref >= 0 ? m->jobs[ref].pj : p;
			double k = 1, I = p->bneck_s > 0 ? p->gpus * p->comp_s / p->bneck_s : 0;
			if (i != ref)
				k = hm_prio_kmemo_k(memo, r->comp_s, r->burst_s, r->gpus, p->comp_s,
						    p->burst_s, p->gpus);
			m->jobs[i].key = -k * I;
		}
	}
	hm_prio_kmemo_free(memo);
}

static int rack_insert(int *racks, int n, int r)
{
	int i = 0;

	while (i < n && racks[i] < r)
		i++;
	if (i < n && racks[i] == r)
		return n;
	memmove(racks + i + 1, racks + i, sizeof(int) * (size_t)(n - i));
	racks[i] = r;
	return n + 1;
}

/*
 * Job x's links into apos[] (hm_pjob_excess_at), the previous job's (*cur)
 * cleared: a job's pairs then cost the partner's links only.
 */
static void scatter_links(const hm_hmodel_t *m, int *apos, int *cur, int x)
{
	const hm_pjob_t *p;

	if (*cur == x)
		return;
	if (*cur >= 0) {
		p = m->jobs[*cur].pj;
		for (int k = 0; k < p->nlinks; k++)
			apos[p->links[k]] = 0;
	}
	p = m->jobs[x].pj;
	for (int k = 0; k < p->nlinks; k++)
		apos[p->links[k]] = k + 1;
	*cur = x;
}

/*
 * One period margin per contention group (jobs linked by links where their own
 * demands exceed it): R = T (1 + z max sd/T). Identical jobs then get identical
 * robust periods whatever their measured spreads, so one can take the other's
 * period and they stagger exactly; with a margin each, the later of two
 * near-equal jobs finds no harmonic of its partner within its stretch and runs
 * free.
 */
static hm_rc_t group_margins(hm_hmodel_t *m, const unsigned char *partnered, hm_err_t *err)
{
	hm_uf_t uf = {0}, cg = {0};
	double *rel = NULL;
	int *seen = NULL, *cseen = NULL, *apos = NULL, cur = -1;
	hm_rc_t rc = HM_OK;

	rel = calloc((size_t)m->njobs + 1, sizeof(double));
	seen = malloc(sizeof(int) * (size_t)(m->njobs + 1));
	cseen = malloc(sizeof(int) * (size_t)(m->njobs + 1));
	apos = calloc((size_t)m->view.nlinks + 1, sizeof(int));
	m->grp_size = malloc(sizeof(int) * (size_t)(m->njobs + 1));
	if (!rel || !seen || !cseen || !apos || !m->grp_size ||
	    hm_uf_init(&uf, m->njobs) != HM_OK || hm_uf_init(&cg, m->njobs) != HM_OK) {
		rc =
		    hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory for %d jobs", m->njobs);
		goto out;
	}
	for (int x = 0; x < m->njobs; x++) {
		seen[x] = cseen[x] = -1;
		m->grp_size[x] = 1;
	}
	/*
	 * One sweep, two groupings, each exactly as alone (their own seen marks and
	 * union-finds, pairs in the same order): the margins' (partnered pairs
	 * whose own demands exceed a link) and the classes' first pass (pairs whose
	 * demands with the link's mean load exceed it; hm_hmodel_classes).
	 */
	for (int x = 0; x < m->njobs; x++) {
		const hm_hjob_t *j = &m->jobs[x];
		int rx = hm_uf_find(&cg, x);
		if (j->rack == HM_HJOB_NONET)
			continue; /* never partnered either */
		for (int k = 0; k < j->pj->nlinks; k++) {
			int lo, hi;
			if (!hm_hmodel_link_scan(m, j->pj->links[k], &lo, &hi))
				continue;
			for (int q = lo; q < hi; q++) {
				int y = m->view.ljobs[q], ry;
				if (y <= x)
					continue;
				ry = hm_uf_find(&cg, y);
				if (rx != ry && cseen[y] != x) { /* a pair on several links: once */
					cseen[y] = x;
					scatter_links(m, apos, &cur, x);
					if (hm_pjob_excess_at(j->pj, apos, m->jobs[y].pj,
							      m->view.lload) > 0) {
						hm_uf_union(&cg, x, y);
						m->grp_size[hm_uf_find(&cg, x)] =
						    m->grp_size[rx] + m->grp_size[ry];
						rx = hm_uf_find(&cg, x);
					}
				}
				if (!partnered[x] || seen[y] == x || !partnered[y] ||
				    hm_uf_find(&uf, x) == hm_uf_find(&uf, y))
					continue;
				seen[y] = x;
				scatter_links(m, apos, &cur, x);
				if (hm_pjob_excess_at(j->pj, apos, m->jobs[y].pj, NULL) > 0)
					hm_uf_union(&uf, x, y);
			}
		}
	}
	m->grp_parent = cg.parent; /* the model's now */
	cg.parent = NULL;
	for (int x = 0; x < m->njobs; x++) {
		const hm_pjob_t *pj = m->jobs[x].pj;
		int g = hm_uf_find(&uf, x);
		double r = m->jobs[x].rack == HM_HJOB_NONET ? 0 : pj->sd_s / pj->T_s;
		if (r > rel[g])
			rel[g] = r;
	}
	for (int x = 0; x < m->njobs; x++) {
		hm_hjob_t *j = &m->jobs[x];
		j->R_s = j->pj->T_s * (1 + m->cfg.z_sd * rel[hm_uf_find(&uf, x)]);
	}
out:
	hm_uf_free(&uf);
	hm_uf_free(&cg);
	free(rel);
	free(seen);
	free(cseen);
	free(apos);
	return rc;
}

hm_rc_t hm_hmodel_build(const hm_sched_ctx_t *ctx, const hm_hcfg_t *cfg, hm_hmodel_t *m,
			hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	const hm_traffic_t **trs = NULL;
	double *max1 = NULL, *max2 = NULL;
	int *who1 = NULL, *cnt = NULL;
	unsigned char *partnered = NULL; /* jobs[].partnered in 1 byte a job: read per pair */
	int pool_used = 0, pool_cap = 0;

	memset(m, 0, sizeof(*m));
	m->topo = ctx->topo;
	m->cfg = *cfg;
	m->njobs = ctx->njobs;
	m->nracks = ctx->topo->nracks;
	trs = malloc(sizeof(*trs) * (size_t)(ctx->njobs + 1));
	if (!trs) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory");
		goto out;
	}
	for (int i = 0; i < ctx->njobs; i++)
		trs[i] = hm_pol_traffic(&ctx->jobs[i], ctx->jobs[i].dec.path);
	rc = hm_pview_build(ctx, trs, &m->view, err);
	if (rc != HM_OK)
		goto out;
	for (int i = 0; i < m->njobs; i++)
		pool_cap += m->view.jobs[i].nlinks;
	m->jobs = calloc((size_t)m->njobs + 1, sizeof(*m->jobs));
	m->rack_pool = malloc(sizeof(int) * (size_t)(pool_cap + 1));
	m->rstart = calloc((size_t)m->nracks + 2, sizeof(int));
	m->cross = malloc(sizeof(int) * (size_t)(m->njobs + 1));
	max1 = calloc((size_t)m->view.nlinks + 1, sizeof(double));
	max2 = calloc((size_t)m->view.nlinks + 1, sizeof(double));
	who1 = malloc(sizeof(int) * (size_t)(m->view.nlinks + 1));
	cnt = calloc((size_t)m->nracks + 1, sizeof(int));
	m->lrack = malloc(sizeof(int) * (size_t)(m->view.nlinks + 1));
	partnered = calloc((size_t)m->njobs + 1, 1);
	if (!m->jobs || !m->rack_pool || !m->rstart || !m->cross || !max1 || !max2 || !who1 ||
	    !cnt || !m->lrack || !partnered) {
		rc =
		    hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory for %d jobs", m->njobs);
		goto out;
	}
	for (int l = 0; l < m->view.nlinks; l++) {
		who1[l] = -1;
		m->lrack[l] = m->topo->links[l].rack;
	}
	for (int i = 0; i < m->njobs; i++) {
		hm_hjob_t *j = &m->jobs[i];
		const hm_sched_job_t *sj = &ctx->jobs[i];
		bool global = false;

		j->pj = &m->view.jobs[i];
		j->id = sj->id;
		j->racks = m->rack_pool + pool_used;
		for (int k = 0; k < j->pj->nlinks; k++) {
			int l = j->pj->links[k], r = m->lrack[l];
			double d = j->pj->demand[k];
			if (r < 0 || r >= m->nracks)
				global = true;
			else
				j->nracks = rack_insert(j->racks, j->nracks, r);
			if (d > max1[l]) {
				max2[l] = max1[l];
				max1[l] = d;
				who1[l] = i;
			} else if (d > max2[l]) {
				max2[l] = d;
			}
		}
		pool_used += j->nracks;
		if (j->pj->nlinks == 0 || j->pj->burst_s <= 0)
			j->rack = HM_HJOB_NONET;
		else if (global || j->nracks > 1)
			j->rack = HM_HJOB_CROSS;
		else
			j->rack = j->racks[0];
		if (sj->dec.period_s > 0) {
			j->prev_P_s = sj->dec.period_s;
			j->prev_s_s = fmod(sj->dec.origin_s + sj->dec.shift_s, sj->dec.period_s);
			if (j->prev_s_s < 0)
				j->prev_s_s += sj->dec.period_s;
		}
		j->prio = 0;
		j->prev_prio = sj->dec.prio;
	}
	for (int i = 0; i < m->njobs; i++) {
		hm_hjob_t *j = &m->jobs[i];
		if (j->rack == HM_HJOB_NONET)
			continue;
		for (int k = 0; k < j->pj->nlinks && !j->partnered; k++) {
			int l = j->pj->links[k];
			double other = who1[l] == i ? max2[l] : max1[l];
			double bg = m->view.lload[l] -
				    j->pj->demand[k] * fmin(1, j->pj->burst_s / j->pj->T_s);
			if (other > 0 && j->pj->demand[k] + (other > bg ? other : bg) > 1.0 + 1e-9)
				j->partnered = true;
		}
		partnered[i] = j->partnered;
		for (int k = 0; k < j->nracks; k++)
			cnt[j->racks[k]]++;
		if (j->rack == HM_HJOB_CROSS)
			m->cross[m->ncross++] = i;
	}
	rc = group_margins(m, partnered, err);
	if (rc != HM_OK)
		goto out;
	for (int r = 0; r < m->nracks; r++)
		m->rstart[r + 1] = m->rstart[r] + cnt[r];
	m->rjobs = malloc(sizeof(int) * (size_t)(m->rstart[m->nracks] + 1));
	if (!m->rjobs) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory");
		goto out;
	}
	memset(cnt, 0, sizeof(int) * (size_t)m->nracks);
	for (int i = 0; i < m->njobs; i++) {
		const hm_hjob_t *j = &m->jobs[i];
		if (j->rack == HM_HJOB_NONET)
			continue;
		for (int k = 0; k < j->nracks; k++) {
			int r = j->racks[k];
			m->rjobs[m->rstart[r] + cnt[r]++] = i;
		}
	}
out:
	free(trs);
	free(max1);
	free(max2);
	free(who1);
	free(cnt);
	free(partnered);
	if (rc != HM_OK)
		hm_hmodel_free(m);
	return rc;
}

void hm_hmodel_free(hm_hmodel_t *m)
{
	if (!m)
		return;
	hm_pview_free(&m->view);
	free(m->jobs);
	free(m->rack_pool);
	free(m->rstart);
	free(m->rjobs);
	free(m->cross);
	free(m->grp_parent);
	free(m->grp_size);
	free(m->lrack);
	memset(m, 0, sizeof(*m));
}

/* Keys within 2% are a tie (measurements wobble): the current class, then the
 * index decide, so classes do not flip between epochs. */
static inline int key_order(const hm_hmodel_t *m, int a, int b)
{
	double ka = m->jobs[a].key, kb = m->jobs[b].key, kmax = ka > kb ? ka : kb;

	/* Held jobs first: their bursts must not be slowed by free-running ones. */
	if (m->jobs[a].hold != m->jobs[b].hold)
		return m->jobs[a].hold ? -1 : 1;
	if (fabs(ka - kb) > 0.02 * kmax) /* fmax without the library call */
		return ka < kb ? -1 : 1;
	if (m->jobs[a].prev_prio != m->jobs[b].prev_prio)
		return m->jobs[a].prev_prio < m->jobs[b].prev_prio ? -1 : 1;
	return (a > b) - (a < b);
}

/*
 * Sort by key_order with glibc's merge sort (qsort_r's): key_order is not a
 * strict weak order (2% ties), so the result depends on the comparisons made,
 * and these are the same; inlined, a third of the cost. tmp: n entries.
 */
static void key_sort(const hm_hmodel_t *m, int *b, int n, int *tmp)
{
	int n1 = n / 2, n2 = n - n1, *b1 = b, *b2 = b + n1, *t = tmp;

	if (n <= 1)
		return;
	key_sort(m, b1, n1, tmp);
	key_sort(m, b2, n2, tmp);
	while (n1 > 0 && n2 > 0) {
		if (key_order(m, *b1, *b2) <= 0) {
			*t++ = *b1++;
			n1--;
		} else {
			*t++ = *b2++;
			n2--;
		}
	}
	if (n1 > 0)
		memcpy(t, b1, sizeof(int) * (size_t)n1);
	memcpy(b, tmp, sizeof(int) * (size_t)(n - n2));
}

static bool key_less(const hm_hmodel_t *m, int a, int b)
{
	return key_order(m, a, b) < 0;
}

/*
 * Exact-ish classes for a small group: Crux's DAG compression over the group's
 * contention edges (weight: expected overlap the separation avoids), order by
 * key. Returns false when it cannot (too big, no memory): the caller layers.
 */
#define HM_COMPRESS_MAX 256
/* Light edges (pairs that only meet on a contended link) join groups up to this size. */
#define HM_LIGHT_GROUP_MAX 32
/* Random topological orders per group: 4 (Crux samples 10; racks are small
 * and re-solved every epoch, so fewer orders lose little and halve the time). */
#define HM_CLASS_ORDERS 4
static bool prio_compress(hm_hmodel_t *m, const int *jobs, int n)
{
	int *ea = NULL, *eb = NULL, *lvl = NULL, ne = 0, cap = 0;
	double *w = NULL, *pr = NULL;
	bool ok = false;

	if (n > HM_COMPRESS_MAX)
		return false;
	pr = malloc(sizeof(double) * (size_t)(n + 1));
	lvl = malloc(sizeof(int) * (size_t)(n + 1));
	if (!pr || !lvl)
		goto out;
	for (int q = 0; q < n; q++) {
		const hm_hjob_t *j = &m->jobs[jobs[q]];
		pr[q] = -(double)q; /* jobs[] is sorted by key: earlier = higher */
		for (int k = 0; k < j->pj->nlinks; k++) {
			int l = j->pj->links[k];
			int lo, hi;
			if (!hm_hmodel_link_scan(m, l, &lo, &hi))
				continue;
			for (int p = lo; p < hi; p++) {
				int y = m->view.ljobs[p], qy = -1;
				const hm_hjob_t *o = &m->jobs[y];
				double e;
				if (y == jobs[q] || !o->grp)
					continue;
				for (int r = q + 1; r < n; r++)
					if (jobs[r] == y) {
						qy = r;
						break;
					}
				if (qy <= q)
					continue; /* each pair once, from its earlier member */
				/* Pairs on a contended link whose own demands fit still
				 * meet other jobs there: in a small group a light edge
				 * orders them too. */
				e = hm_pjob_excess(j->pj, o->pj, m->view.lload);
				if (e <= 0 && n > HM_LIGHT_GROUP_MAX)
					continue;
				e = fmax(e, HM_CLASS_MIN_EXCESS);
				if (ne == cap) {
					int nc = cap ? 2 * cap : 64;
					int *na = realloc(ea, sizeof(int) * (size_t)nc);
					int *nb = na ? realloc(eb, sizeof(int) * (size_t)nc) : NULL;
					double *nw =
					    nb ? realloc(w, sizeof(double) * (size_t)nc) : NULL;
					if (na)
						ea = na;
					if (nb)
						eb = nb;
					if (!nw)
						goto out;
					w = nw;
					cap = nc;
				}
				ea[ne] = q;
				eb[ne] = qy;
				w[ne] = e * fmin(1, j->pj->burst_s / j->pj->T_s) *
					fmin(1, o->pj->burst_s / o->pj->T_s);
				if (j->hold != o->hold)
					w[ne] += 1.0; /* always separate held from free */
				ne++;
			}
		}
	}
	/* A pair sharing several links appears once per link: harmless extra weight. */
	if (hm_prio_compress(n, pr, ne, ea, eb, w, m->cfg.classes, HM_CLASS_ORDERS, 7, 0, lvl,
			     NULL) < 0)
		goto out;
	for (int q = 0; q < n; q++)
		m->jobs[jobs[q]].prio = lvl[q];
	ok = true;
out:
	free(ea);
	free(eb);
	free(w);
	free(pr);
	free(lvl);
	return ok;
}

void hm_prio_layer(hm_hmodel_t *m, int *jobs, int n, hm_prio_scratch_t *sc)
{
	int K = m->cfg.classes, *seen = sc->seen, cur = -1;

	/* Total order (key, index): deterministic whatever the caller's order. */
	key_sort(m, jobs, n, sc->tmp);
	for (int q = 0; q < n; q++)
		m->jobs[jobs[q]].grp = true;
	bool compressed = prio_compress(m, jobs, n);
	for (int q = 0; q < n; q++) {
		int x = jobs[q], lvl = compressed ? m->jobs[x].prio : 0;
		hm_hjob_t *j = &m->jobs[x];

		for (int k = 0; k < j->pj->nlinks; k++) {
			int l = j->pj->links[k];
			int lo, hi;
			if (!hm_hmodel_link_scan(m, l, &lo, &hi))
				continue;
			for (int p = lo; p < hi; p++) {
				int y = m->view.ljobs[p];
				const hm_hjob_t *o = &m->jobs[y];
				/* A neighbour on several links: once (nothing below
				 * changes while x is placed). */
				if (y == x || seen[y] == x)
					continue;
				seen[y] = x;
				if (!sc->set[y] || !key_less(m, y, x))
					continue;
				if (compressed && o->grp)
					continue; /* the group's own order is the compressed one */
				if (o->prio + 1 <= lvl)
					continue;
				scatter_links(m, sc->apos, &cur, x);
				if (hm_pjob_excess_at(j->pj, sc->apos, o->pj, m->view.lload) > 0)
					lvl = o->prio + 1;
			}
		}
		j->prio = lvl < K ? lvl : K - 1;
		j->prio_set = true;
		sc->set[x] = 1;
	}
	if (cur >= 0) /* apos back to zeros */
		for (int k = 0; k < m->jobs[cur].pj->nlinks; k++)
			sc->apos[m->jobs[cur].pj->links[k]] = 0;
	for (int q = 0; q < n; q++)
		m->jobs[jobs[q]].grp = false;
}

hm_rc_t hm_hmodel_classes(hm_hmodel_t *m, hm_err_t *err)
{
	hm_uf_t uf = {0};
	int *start = NULL, *fill = NULL, *list = NULL, *size = NULL, *seen = NULL, *apos = NULL;
	unsigned char *set = NULL;
	int cur = -1;
	hm_prio_scratch_t sc;
	hm_rc_t rc = HM_OK;

	if (hm_uf_init(&uf, m->njobs) != HM_OK)
		goto nomem;
	size = malloc(sizeof(int) * (size_t)(m->njobs + 1));
	seen = malloc(sizeof(int) * (size_t)(m->njobs + 1));
	apos = calloc((size_t)m->view.nlinks + 1, sizeof(int));
	if (!size || !seen || !apos)
		goto nomem;
	for (int x = 0; x < m->njobs; x++)
		size[x] = 1;
	/*
	 * Groups: pairs whose demands exceed a link they share first; then pairs
	 * that only meet on a contended link, while the group stays small enough
	 * to be compressed exactly (light edges order it; they need not chain
	 * a large cluster into one layered group).
	 */
	for (int x = 0; x < m->njobs; x++)
		seen[x] = -1;
	if (m->grp_parent) { /* the first pass made with the group margins */
		memcpy(uf.parent, m->grp_parent, sizeof(int) * (size_t)m->njobs);
		memcpy(size, m->grp_size, sizeof(int) * (size_t)m->njobs);
	}
	for (int pass = m->grp_parent ? 1 : 0; pass < 2; pass++)
		for (int x = 0; x < m->njobs; x++) {
			const hm_hjob_t *j = &m->jobs[x];
			int rx = hm_uf_find(&uf, x);
			if (j->rack == HM_HJOB_NONET)
				continue;
			/* Light edges cannot grow a group already at the limit (sizes
			 * only grow): most jobs of a large cluster are in one. */
			for (int k = 0;
			     k < j->pj->nlinks && !(pass == 1 && size[rx] >= HM_LIGHT_GROUP_MAX);
			     k++) {
				int l = j->pj->links[k];
				int lo, hi;
				if (!hm_hmodel_link_scan(m, l, &lo, &hi))
					continue;
				for (int q = lo; q < hi; q++) {
					int y = m->view.ljobs[q], ry;
					if (y <= x)
						continue;
					ry = hm_uf_find(&uf, y);
					if (rx == ry)
						continue;
					/* A pair on several contended links: its excess once. */
					if (pass == 0 && seen[y] == x)
						continue;
					if (pass == 0) {
						seen[y] = x;
						scatter_links(m, apos, &cur, x);
						if (!(hm_pjob_excess_at(j->pj, apos, m->jobs[y].pj,
									m->view.lload) > 0))
							continue;
					}
					if (pass == 1 && size[rx] + size[ry] > HM_LIGHT_GROUP_MAX)
						continue;
					hm_uf_union(&uf, x, y);
					size[hm_uf_find(&uf, x)] = size[rx] + size[ry];
					rx = hm_uf_find(&uf, x);
				}
			}
		}
	start = calloc((size_t)m->njobs + 2, sizeof(int));
	fill = calloc((size_t)m->njobs + 1, sizeof(int));
	list = malloc(sizeof(int) * (size_t)(m->njobs + 1));
	if (!start || !fill || !list)
		goto nomem;
	for (int x = 0; x < m->njobs; x++)
		if (m->jobs[x].rack != HM_HJOB_NONET)
			start[hm_uf_find(&uf, x) + 1]++;
	for (int r = 0; r < m->njobs; r++)
		start[r + 1] += start[r];
	for (int x = 0; x < m->njobs; x++)
		if (m->jobs[x].rack != HM_HJOB_NONET) {
			int r = hm_uf_find(&uf, x);
			list[start[r] + fill[r]++] = x;
		}
	prio_keys(m, start, list);
	for (int x = 0; x < m->njobs; x++)
		seen[x] = -1;
	if (cur >= 0) /* apos back to zeros for the layering */
		for (int k = 0; k < m->jobs[cur].pj->nlinks; k++)
			apos[m->jobs[cur].pj->links[k]] = 0;
	set = calloc((size_t)m->njobs + 1, 1);
	if (!set)
		goto nomem;
	for (int x = 0; x < m->njobs; x++)
		set[x] = m->jobs[x].prio_set;
	sc.seen = seen;
	sc.tmp = fill;
	sc.apos = apos;
	sc.set = set;
	for (int r = 0; r < m->njobs; r++)
		if (start[r + 1] > start[r])
			hm_prio_layer(m, list + start[r], start[r + 1] - start[r], &sc);
	goto out;
nomem:
	rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: classes: out of memory");
out:
	hm_uf_free(&uf);
	free(start);
	free(fill);
	free(list);
	free(size);
	free(seen);
	free(apos);
	free(set);
	return rc;
}
