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

/*
 * What one bound works on: the link groups shared by two or more jobs with
 * their jobs (CSR), the components of jobs linked by them (CSR), and the
 * sweep's scratch. Freed by bws_free.
 */
typedef struct {
	int *uf;     /* union-find over jobs */
	int *gcount; /* jobs per group */
	long nent;   /* (job, group) pairs */
	int *gstart; /* jobs of shared group g: gjob[gstart[g] .. gstart[g + 1]), */
	int *gjob;
	double *gwork; /* and their work on it (seconds of the whole group) */
	int *cstart;   /* jobs of component c: cjob[cstart[c] .. cstart[c + 1]) */
	int *cjob;
	int *E, *S; /* per group: its jobs past e_j, its SRPT completions so far */
	int *dcnt;  /* groups per deficit max(E_g - S_g, 0) */
	double *heap, *done;
	sjob_t *sj;
	bev_t *ev;
} bws_t;

static void bws_free(bws_t *w)
{
	free(w->uf);
	free(w->gcount);
	free(w->gstart);
	free(w->gjob);
	free(w->gwork);
	free(w->cstart);
	free(w->cjob);
	free(w->E);
	free(w->S);
	free(w->dcnt);
	free(w->heap);
	free(w->done);
	free(w->sj);
	free(w->ev);
}

static hm_rc_t bound_nomem(hm_err_t *err, int njobs)
{
	return hm_err_set(err, HM_ERR_NOMEM, "bound: out of memory for %d jobs", njobs);
}

/* Check every job's groups, count the jobs per group and join jobs sharing one. */
static hm_rc_t join_jobs(bws_t *w, const double *group_cap_bps, int ngroups,
			 const hm_bound_job_t *jobs, int njobs, hm_err_t *err)
{
	int *gfirst = malloc(sizeof(int) * ((size_t)ngroups + 1)); /* first job of each group */
	hm_rc_t rc = HM_OK;

	w->gcount = calloc((size_t)ngroups + 1, sizeof(int));
	w->uf = malloc(sizeof(int) * ((size_t)njobs + 1));
	if (!w->gcount || !gfirst || !w->uf) {
		rc = bound_nomem(err, njobs);
		goto out;
	}
	for (int j = 0; j < njobs; j++)
		w->uf[j] = j;
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
			w->gcount[g]++;
			w->nent++;
			if (gfirst[g] < 0)
				gfirst[g] = j;
			else
				uf_union(w->uf, gfirst[g], j);
		}
out:
	free(gfirst);
	return rc;
}

/* Jobs per group (CSR), only groups shared by two or more jobs matter. */
static hm_rc_t shared_groups(bws_t *w, const double *group_cap_bps, int ngroups,
			     const hm_bound_job_t *jobs, int njobs, hm_err_t *err)
{
	int *gfill = calloc((size_t)ngroups + 1, sizeof(int));
	hm_rc_t rc = HM_OK;

	w->gstart = calloc((size_t)ngroups + 2, sizeof(int));
	w->gjob = malloc(sizeof(int) * ((size_t)w->nent + 1));
	w->gwork = malloc(sizeof(double) * ((size_t)w->nent + 1));
	if (!w->gstart || !gfill || !w->gjob || !w->gwork) {
		rc = bound_nomem(err, njobs);
		goto out;
	}
	for (int g = 0; g < ngroups; g++)
		w->gstart[g + 1] = w->gstart[g] + (w->gcount[g] >= 2 ? w->gcount[g] : 0);
	for (int j = 0; j < njobs; j++)
		for (int k = 0; k < jobs[j].ngroups; k++) {
			int g = jobs[j].group[k];
			if (w->gcount[g] < 2)
				continue;
			w->gjob[w->gstart[g] + gfill[g]] = j;
			w->gwork[w->gstart[g] + gfill[g]] = jobs[j].bits[k] / group_cap_bps[g];
			gfill[g]++;
		}
out:
	free(gfill);
	return rc;
}

/* Jobs per component (CSR), and the scratch of the components' sweeps. */
static hm_rc_t components(bws_t *w, int ngroups, int njobs, hm_err_t *err)
{
	int *cfill = calloc((size_t)njobs + 1, sizeof(int));
	hm_rc_t rc = HM_OK;

	w->cstart = calloc((size_t)njobs + 2, sizeof(int));
	w->cjob = malloc(sizeof(int) * ((size_t)njobs + 1));
	w->E = calloc((size_t)ngroups + 1, sizeof(int));
	w->S = calloc((size_t)ngroups + 1, sizeof(int));
	w->dcnt = calloc((size_t)njobs + 2, sizeof(int));
	w->heap = malloc(sizeof(double) * ((size_t)njobs + 1));
	w->done = malloc(sizeof(double) * ((size_t)njobs + 1));
	w->sj = malloc(sizeof(*w->sj) * ((size_t)njobs + 1));
	w->ev = malloc(sizeof(*w->ev) * ((size_t)njobs + (size_t)w->nent + 1));
	if (!w->cstart || !cfill || !w->cjob || !w->E || !w->S || !w->dcnt || !w->heap ||
	    !w->done || !w->sj || !w->ev) {
		rc = bound_nomem(err, njobs);
		goto out;
	}
	for (int j = 0; j < njobs; j++)
		w->cstart[uf_find(w->uf, j) + 1]++;
	for (int c = 0; c < njobs; c++)
		w->cstart[c + 1] += w->cstart[c];
	for (int j = 0; j < njobs; j++) {
		int c = uf_find(w->uf, j);
		w->cjob[w->cstart[c] + cfill[c]++] = j;
	}
out:
	free(cfill);
	return rc;
}

/* Shared group g's SRPT completion times as events into ev; returns their number. */
static int group_completions(bws_t *w, int g, const hm_bound_job_t *jobs, bev_t *ev)
{
	int cnt = w->gstart[g + 1] - w->gstart[g];

	for (int i = 0; i < cnt; i++) {
		w->sj[i].r = jobs[w->gjob[w->gstart[g] + i]].release_s;
		w->sj[i].w = w->gwork[w->gstart[g] + i];
	}
	srpt(w->sj, cnt, w->heap, w->done);
	for (int i = 0; i < cnt; i++) {
		ev[i].t = w->done[i];
		ev[i].kind = 1;
		ev[i].who = g;
	}
	return cnt;
}

/* Events of component c into w->ev: its jobs' e_j, and each shared group's SRPT
 * completions once (from its first job, which also resets E_g and S_g). Returns
 * their number. */
static int component_events(bws_t *w, int c, const hm_bound_job_t *jobs)
{
	int ne = 0;

	for (int q = w->cstart[c]; q < w->cstart[c + 1]; q++) {
		int j = w->cjob[q];
		w->ev[ne].t = jobs[j].release_s + jobs[j].work_s;
		w->ev[ne].kind = 0;
		w->ev[ne].who = j;
		ne++;
		for (int m = 0; m < jobs[j].ngroups; m++) {
			int g = jobs[j].group[m], cnt = w->gstart[g + 1] - w->gstart[g];
			if (cnt < 2 || w->gjob[w->gstart[g]] != j)
				continue; /* not shared, or done from its first job */
			ne += group_completions(w, g, jobs, &w->ev[ne]);
			w->E[g] = w->S[g] = 0;
		}
	}
	return ne;
}

/* One more of E_g or S_g (*count): moves g between the deficit counts. Returns the
 * new deficit when it changed, else 0. */
static int deficit_step(bws_t *w, int g, int *count)
{
	int d0 = w->E[g] > w->S[g] ? w->E[g] - w->S[g] : 0, d1;

	(*count)++;
	d1 = w->E[g] > w->S[g] ? w->E[g] - w->S[g] : 0;
	if (d0 == d1)
		return 0;
	w->dcnt[d0]--;
	w->dcnt[d1]++;
	return d1;
}

/*
 * Sweep the ne sorted events of a component of nc jobs: by time t, at most
 * (jobs past e) - max over groups of (E_g - S_g)^+ of them can have completed,
 * so each further completion adds t at least. Adds to *total_s in event order.
 */
static void component_sweep(bws_t *w, int ne, int nc, const hm_bound_job_t *jobs, int ngroups,
			    double *total_s)
{
	int done_n = 0, maxdef = 0, k = 0;

	memset(w->dcnt, 0, sizeof(int) * ((size_t)nc + 2));
	w->dcnt[0] = ngroups; /* every group starts at deficit 0 (only counts > 0 matter) */
	for (int i = 0; i < ne;) {
		double t = w->ev[i].t;
		for (; i < ne && w->ev[i].t == t; i++) {
			int who = w->ev[i].who;
			if (w->ev[i].kind == 1) {
				deficit_step(w, who, &w->S[who]);
				continue;
			}
			done_n++;
			for (int m = 0; m < jobs[who].ngroups; m++) {
				int g = jobs[who].group[m], d1;
				if (w->gstart[g + 1] - w->gstart[g] < 2)
					continue;
				d1 = deficit_step(w, g, &w->E[g]);
				if (d1 > maxdef)
					maxdef = d1;
			}
		}
		while (maxdef > 0 && w->dcnt[maxdef] == 0)
			maxdef--;
		/* Completions k+1 .. done_n - maxdef cannot come before t. */
		for (; k < done_n - maxdef; k++)
			*total_s += t;
	}
	for (; k < nc; k++) /* cannot happen: every deficit ends at 0 */
		*total_s += w->ev[ne - 1].t;
}

hm_rc_t hm_bound_sum_completion(const double *group_cap_bps, int ngroups,
				const hm_bound_job_t *jobs, int njobs, double *sum_s, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	bws_t w = {0};
	double total_s = 0;

	*sum_s = 0;
	if (njobs <= 0)
		return HM_OK;
	if ((rc = join_jobs(&w, group_cap_bps, ngroups, jobs, njobs, err)) != HM_OK ||
	    (rc = shared_groups(&w, group_cap_bps, ngroups, jobs, njobs, err)) != HM_OK ||
	    (rc = components(&w, ngroups, njobs, err)) != HM_OK)
		goto out;
	for (int c = 0; c < njobs; c++) {
		int nc = w.cstart[c + 1] - w.cstart[c], ne;

		if (nc == 0)
			continue;
		ne = component_events(&w, c, jobs);
		qsort(w.ev, (size_t)ne, sizeof(*w.ev), bev_cmp);
		component_sweep(&w, ne, nc, jobs, ngroups, &total_s);
	}
	*sum_s = total_s;
out:
	bws_free(&w);
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
