/* Lower bound on completion times from link capacities (see hm_bound.h). */
#include "hm_bound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Union-find with path halving (components of jobs linked by shared groups). */
static int uf_find(int *parent, int a)
{
	while (parent[a] != a) {
		parent[a] = parent[parent[a]];
		a = parent[a];
	}
	return a;
}

static void uf_union(int *parent, int a, int b)
{
	a = uf_find(parent, a);
	b = uf_find(parent, b);
	if (a != b)
		parent[a < b ? b : a] = a < b ? a : b;
}

typedef struct {
	double t;
	int kind; /* 0: a job reaches e_j, 1: an SRPT completion on a group */
	int who;  /* job (kind 0) or group (kind 1) */
} bev_t;

static int bev_cmp(const void *x, const void *y)
{
	const bev_t *a = x, *b = y;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	/* At equal times completions first, so the count read after the time is whole. */
	if (a->kind != b->kind)
		return a->kind > b->kind ? -1 : 1;
	return (a->who > b->who) - (a->who < b->who);
}

typedef struct {
	double r, w; /* release, work (seconds of the whole group) */
} sjob_t;

static int sjob_cmp(const void *x, const void *y)
{
	const sjob_t *a = x, *b = y;

	if (a->r != b->r)
		return a->r < b->r ? -1 : 1;
	return (a->w > b->w) - (a->w < b->w);
}

/* Min-heap of remaining works. */
static void hpush(double *h, int *n, double v)
{
	int i = (*n)++;

	while (i > 0 && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static double hpop(double *h, int *n)
{
	double top = h[0], v = h[--(*n)];
	int i = 0;

	for (;;) {
		int c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = v;
	return top;
}

/*
 * Preemptive SRPT on one machine: completion times (ascending) of m jobs into
 * done[]. jobs[] is sorted by release here; heap is scratch of m doubles.
 */
static void srpt(sjob_t *jobs, int m, double *heap, double *done)
{
	int nh = 0, nd = 0, next = 0;
	double t;

	qsort(jobs, (size_t)m, sizeof(*jobs), sjob_cmp);
	t = m > 0 ? jobs[0].r : 0;
	while (nd < m) {
		if (nh == 0 && next < m && jobs[next].r > t)
			t = jobs[next].r;
		while (next < m && jobs[next].r <= t)
			hpush(heap, &nh, jobs[next++].w);
		/* Run the shortest until it ends or the next release. */
		double w = hpop(heap, &nh);
		double until = next < m ? jobs[next].r : INFINITY;
		if (t + w <= until) {
			t += w;
			done[nd++] = t;
		} else {
			hpush(heap, &nh, w - (until - t));
			t = until;
		}
	}
}

hm_rc_t hm_bound_sum_completion(const double *group_cap_bps, int ngroups,
				const hm_bound_job_t *jobs, int njobs, double *sum_s, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	int *uf = NULL;
	int *gcount = NULL, *gfirst = NULL, *gstart = NULL, *gfill = NULL, *gjob = NULL;
	int *E = NULL, *S = NULL, *dcnt = NULL, *cstart = NULL, *cjob = NULL, *cfill = NULL;
	double *gwork = NULL, *heap = NULL, *done = NULL;
	sjob_t *sj = NULL;
	bev_t *ev = NULL;
	long nent = 0;
	double total = 0;

	*sum_s = 0;
	if (njobs <= 0)
		return HM_OK;
	gcount = calloc((size_t)ngroups + 1, sizeof(int));
	gfirst = malloc(sizeof(int) * ((size_t)ngroups + 1));
	uf = malloc(sizeof(int) * ((size_t)njobs + 1));
	if (!gcount || !gfirst || !uf)
		goto nomem;
	for (int j = 0; j < njobs; j++)
		uf[j] = j;
	for (int g = 0; g < ngroups; g++)
		gfirst[g] = -1;
	for (int j = 0; j < njobs; j++)
		for (int k = 0; k < jobs[j].ngroups; k++) {
			int g = jobs[j].group[k];
			if (g < 0 || g >= ngroups || !(group_cap_bps[g] > 0)) {
				rc = hm_err_set(
				    err, HM_ERR_INVAL,
				    "bound: job %d uses link group %d (accepted 0..%d with a "
				    "capacity > 0)",
				    j, g, ngroups - 1);
				goto out;
			}
			gcount[g]++;
			nent++;
			if (gfirst[g] < 0)
				gfirst[g] = j;
			else
				uf_union(uf, gfirst[g], j);
		}
	/* Jobs per group (CSR), only groups shared by two or more jobs matter. */
	gstart = calloc((size_t)ngroups + 2, sizeof(int));
	gfill = calloc((size_t)ngroups + 1, sizeof(int));
	gjob = malloc(sizeof(int) * ((size_t)nent + 1));
	gwork = malloc(sizeof(double) * ((size_t)nent + 1));
	if (!gstart || !gfill || !gjob || !gwork)
		goto nomem;
	for (int g = 0; g < ngroups; g++)
		gstart[g + 1] = gstart[g] + (gcount[g] >= 2 ? gcount[g] : 0);
	for (int j = 0; j < njobs; j++)
		for (int k = 0; k < jobs[j].ngroups; k++) {
			int g = jobs[j].group[k];
			if (gcount[g] < 2)
				continue;
			gjob[gstart[g] + gfill[g]] = j;
			gwork[gstart[g] + gfill[g]] = jobs[j].bits[k] / group_cap_bps[g];
			gfill[g]++;
		}
	/* Jobs per component, and the shared groups of each component. */
	cstart = calloc((size_t)njobs + 2, sizeof(int));
	cfill = calloc((size_t)njobs + 1, sizeof(int));
	cjob = malloc(sizeof(int) * ((size_t)njobs + 1));
	E = calloc((size_t)ngroups + 1, sizeof(int));
	S = calloc((size_t)ngroups + 1, sizeof(int));
	dcnt = calloc((size_t)njobs + 2, sizeof(int));
	heap = malloc(sizeof(double) * ((size_t)njobs + 1));
	done = malloc(sizeof(double) * ((size_t)njobs + 1));
	sj = malloc(sizeof(*sj) * ((size_t)njobs + 1));
	ev = malloc(sizeof(*ev) * ((size_t)njobs + (size_t)nent + 1));
	if (!cstart || !cfill || !cjob || !E || !S || !dcnt || !heap || !done || !sj || !ev)
		goto nomem;
	for (int j = 0; j < njobs; j++)
		cstart[uf_find(uf, j) + 1]++;
	for (int c = 0; c < njobs; c++)
		cstart[c + 1] += cstart[c];
	for (int j = 0; j < njobs; j++) {
		int c = uf_find(uf, j);
		cjob[cstart[c] + cfill[c]++] = j;
	}
	for (int c = 0; c < njobs; c++) {
		int nc = cstart[c + 1] - cstart[c], ne = 0, done_n = 0, maxdef = 0, k = 0;

		if (nc == 0)
			continue;
		/* e_j events, and each shared group's SRPT completions once. */
		for (int q = cstart[c]; q < cstart[c + 1]; q++) {
			int j = cjob[q];
			ev[ne].t = jobs[j].release_s + jobs[j].work_s;
			ev[ne].kind = 0;
			ev[ne].who = j;
			ne++;
			for (int m = 0; m < jobs[j].ngroups; m++) {
				int g = jobs[j].group[m], cnt = gstart[g + 1] - gstart[g];
				if (cnt < 2 || gjob[gstart[g]] != j)
					continue; /* not shared, or done from its first job */
				for (int i = 0; i < cnt; i++) {
					sj[i].r = jobs[gjob[gstart[g] + i]].release_s;
					sj[i].w = gwork[gstart[g] + i];
				}
				srpt(sj, cnt, heap, done);
				for (int i = 0; i < cnt; i++) {
					ev[ne].t = done[i];
					ev[ne].kind = 1;
					ev[ne].who = g;
					ne++;
				}
				E[g] = S[g] = 0;
			}
		}
		qsort(ev, (size_t)ne, sizeof(*ev), bev_cmp);
		memset(dcnt, 0, sizeof(int) * ((size_t)nc + 2));
		dcnt[0] = ngroups; /* every group starts at deficit 0 (only counts > 0 matter) */
		/* Sweep: count = (jobs past e) - max over groups of (E_g - S_g)^+. */
		for (int i = 0; i < ne;) {
			double t = ev[i].t;
			for (; i < ne && ev[i].t == t; i++) {
				int d0, d1;
				if (ev[i].kind == 1) {
					int g = ev[i].who;
					d0 = E[g] > S[g] ? E[g] - S[g] : 0;
					S[g]++;
					d1 = E[g] > S[g] ? E[g] - S[g] : 0;
					if (d0 != d1) {
						dcnt[d0]--;
						dcnt[d1]++;
					}
					continue;
				}
				done_n++;
				for (int m = 0; m < jobs[ev[i].who].ngroups; m++) {
					int g = jobs[ev[i].who].group[m];
					if (gstart[g + 1] - gstart[g] < 2)
						continue;
					d0 = E[g] > S[g] ? E[g] - S[g] : 0;
					E[g]++;
					d1 = E[g] > S[g] ? E[g] - S[g] : 0;
					if (d0 != d1) {
						dcnt[d0]--;
						dcnt[d1]++;
						if (d1 > maxdef)
							maxdef = d1;
					}
				}
			}
			while (maxdef > 0 && dcnt[maxdef] == 0)
				maxdef--;
			/* Completions k+1 .. done_n - maxdef cannot come before t. */
			for (; k < done_n - maxdef; k++)
				total += t;
		}
		for (; k < nc; k++) /* cannot happen: every deficit ends at 0 */
			total += ev[ne - 1].t;
	}
	*sum_s = total;
	goto out;
nomem:
	rc = hm_err_set(err, HM_ERR_NOMEM, "bound: out of memory for %d jobs", njobs);
out:
	free(uf);
	free(gcount);
	free(gfirst);
	free(gstart);
	free(gfill);
	free(gjob);
	free(gwork);
	free(cstart);
	free(cfill);
	free(cjob);
	free(E);
	free(S);
	free(dcnt);
	free(heap);
	free(done);
	free(sj);
	free(ev);
	return rc;
}

typedef struct {
	int kind, level, lo, hi, link;
} lkey_t;

/* Signature order; equal signatures by link id (the sort is then total). */
static int lkey_sig(const lkey_t *a, const lkey_t *b)
{
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->level != b->level)
		return a->level < b->level ? -1 : 1;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return (a->hi > b->hi) - (a->hi < b->hi);
}

static int lkey_cmp(const void *x, const void *y)
{
	const lkey_t *a = x, *b = y;
	int c = lkey_sig(a, b);

	return c ? c : (a->link > b->link) - (a->link < b->link);
}

/* Racks below a switch as (first, last): the signature of its uplink group. */
hm_rc_t hm_bound_link_groups(const hm_topo_t *t, int **group, double **cap_bps, int *ngroups,
			     hm_err_t *err)
{
	int *lo = malloc(sizeof(int) * ((size_t)t->nswitches + 1));
	int *hi = malloc(sizeof(int) * ((size_t)t->nswitches + 1));
	int *g = malloc(sizeof(int) * ((size_t)t->nlinks + 1));
	double *cap = calloc((size_t)t->nlinks + 1, sizeof(double));
	lkey_t *key = malloc(sizeof(*key) * ((size_t)t->nlinks + 1));
	int n = 0, nk = 0;

	*group = NULL;
	*cap_bps = NULL;
	*ngroups = 0;
	if (!lo || !hi || !g || !cap || !key) {
		free(lo);
		free(hi);
		free(g);
		free(cap);
		free(key);
		return hm_err_set(err, HM_ERR_NOMEM, "bound: out of memory for %d links",
				  t->nlinks);
	}
	for (int s = 0; s < t->nswitches; s++) {
		lo[s] = t->switches[s].level == 0 ? t->switches[s].rack : t->nracks;
		hi[s] = t->switches[s].level == 0 ? t->switches[s].rack : -1;
	}
	/* Levels ascend from the racks: push each switch's range to its parents. */
	for (int lvl = 0; lvl < 16; lvl++)
		for (int s = 0; s < t->nswitches; s++) {
			const hm_switch_t *sw = &t->switches[s];
			if (sw->level != lvl)
				continue;
			for (int p = 0; p < sw->nparents; p++) {
				int q = sw->parents[p];
				if (lo[s] < lo[q])
					lo[q] = lo[s];
				if (hi[s] > hi[q])
					hi[q] = hi[s];
			}
		}
	/* NIC links alone; switch links by (kind, level, racks below the lower end). */
	for (int l = 0; l < t->nlinks; l++) {
		const hm_link_t *k = &t->links[l];
		g[l] = -1;
		if ((k->kind == HM_LINK_SW_UP || k->kind == HM_LINK_SW_DOWN) && k->lower >= 0) {
			key[nk].kind = (int)k->kind;
			key[nk].level = t->switches[k->lower].level;
			key[nk].lo = lo[k->lower];
			key[nk].hi = hi[k->lower];
			key[nk].link = l;
			nk++;
		} else {
			g[l] = n++;
		}
	}
	qsort(key, (size_t)nk, sizeof(*key), lkey_cmp);
	for (int i = 0; i < nk; i++) {
		if (i == 0 || lkey_sig(&key[i - 1], &key[i]) != 0)
			n++;
		g[key[i].link] = n - 1;
	}
	for (int l = 0; l < t->nlinks; l++)
		cap[g[l]] += t->links[l].capacity_bps;
	free(lo);
	free(hi);
	free(key);
	*group = g;
	*cap_bps = cap;
	*ngroups = n;
	return HM_OK;
}

typedef struct {
	int g;
	double bits;
} gbits_t;

static int gbits_cmp(const void *x, const void *y)
{
	const gbits_t *a = x, *b = y;

	return (a->g > b->g) - (a->g < b->g);
}

/* Per-group bits of one path, merged and sorted by group into v; returns the count. */
static int path_groups(const hm_traffic_t *tr, const int *group, gbits_t *v)
{
	int n = 0, out = 0;

	for (int p = 0; p < tr->nphases && p < HM_MAX_PHASES; p++) {
		const hm_phase_load_t *ph = &tr->phases[p];
		for (int i = 0; i < ph->nlinks; i++) {
			v[n].g = group[ph->links[i]];
			v[n].bits = ph->flow_bytes * 8.0 * (double)ph->flows[i];
			n++;
		}
	}
	qsort(v, (size_t)n, sizeof(*v), gbits_cmp);
	for (int i = 0; i < n; i++) {
		if (out > 0 && v[out - 1].g == v[i].g)
			v[out - 1].bits += v[i].bits;
		else
			v[out++] = v[i];
	}
	return out;
}

int hm_bound_job_groups(const hm_traffic_t *tr, int npaths, const int *group, int *out_group,
			double *out_bits, int cap)
{
	int total = 0, n0, res = 0;
	gbits_t *a = NULL, *b = NULL;

	if (!tr || npaths < 1)
		return 0;
	for (int p = 0; p < tr[0].nphases && p < HM_MAX_PHASES; p++)
		total += tr[0].phases[p].nlinks;
	for (int q = 1; q < npaths; q++) {
		int t = 0;
		for (int p = 0; p < tr[q].nphases && p < HM_MAX_PHASES; p++)
			t += tr[q].phases[p].nlinks;
		if (t > total)
			total = t;
	}
	a = malloc(sizeof(*a) * ((size_t)total + 1));
	b = malloc(sizeof(*b) * ((size_t)total + 1));
	if (!a || !b) {
		res = -1;
		goto out;
	}
	n0 = path_groups(&tr[0], group, a);
	/* Least over the paths, group by group (a group a path misses gets 0). */
	for (int q = 1; q < npaths; q++) {
		int nb = path_groups(&tr[q], group, b), i = 0, k = 0;
		for (; i < n0; i++) {
			while (k < nb && b[k].g < a[i].g)
				k++;
			a[i].bits = k < nb && b[k].g == a[i].g ? fmin(a[i].bits, b[k].bits) : 0;
		}
	}
	for (int i = 0; i < n0; i++) {
		if (!(a[i].bits > 0))
			continue;
		if (res >= cap) {
			res = -1;
			goto out;
		}
		out_group[res] = a[i].g;
		out_bits[res] = a[i].bits;
		res++;
	}
out:
	free(a);
	free(b);
	return res;
}
