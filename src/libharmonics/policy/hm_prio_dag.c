/*
 * hm_prio_dag.c - Crux's DAG priority compression (hm_prio.h): the contention
 * DAG's nodes put into K hardware classes, best of several topological orders.
 * The Crux policy and the harmonics model (its class layering) both use it, so
 * it lives with the shared model, below the policies.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hm_clock.h"
#include "hm_prio.h"
#include "hm_pol_common.h"
#include "hm_rng.h"

typedef struct {
	int n, ne;
	int *ostart, *oadj; /* out-edges (CSR) */
	double *ow;
	int *indeg;
	double *win; /* total in-weight */
} dag_t;

static void dag_free(dag_t *g)
{
	free(g->ostart);
	free(g->oadj);
	free(g->ow);
	free(g->indeg);
	free(g->win);
}

static int dag_build(dag_t *g, int n, const double *prio, int ne, const int *a, const int *b,
		     const double *w)
{
	int *fill;

	memset(g, 0, sizeof(*g));
	g->n = n;
	g->ne = ne;
	g->ostart = calloc((size_t)n + 1, sizeof(int));
	g->oadj = malloc(sizeof(int) * (size_t)(ne + 1));
	g->ow = malloc(sizeof(double) * (size_t)(ne + 1));
	g->indeg = calloc((size_t)n + 1, sizeof(int));
	g->win = calloc((size_t)n + 1, sizeof(double));
	fill = calloc((size_t)n + 1, sizeof(int));
	if (!g->ostart || !g->oadj || !g->ow || !g->indeg || !g->win || !fill) {
		free(fill);
		return -1;
	}
	for (int e = 0; e < ne; e++) {
		int hi = a[e], lo = b[e];
		if (prio[lo] > prio[hi] || (prio[lo] == prio[hi] && lo < hi)) {
			hi = b[e];
			lo = a[e];
		}
		g->ostart[hi + 1]++;
	}
	for (int i = 0; i < n; i++)
		g->ostart[i + 1] += g->ostart[i];
	for (int e = 0; e < ne; e++) {
		int hi = a[e], lo = b[e];
		if (prio[lo] > prio[hi] || (prio[lo] == prio[hi] && lo < hi)) {
			hi = b[e];
			lo = a[e];
		}
		g->oadj[g->ostart[hi] + fill[hi]] = lo;
		g->ow[g->ostart[hi] + fill[hi]] = w[e];
		fill[hi]++;
		g->indeg[lo]++;
		g->win[lo] += w[e];
	}
	free(fill);
	return 0;
}

/* Random topological order (Kahn, uniform pick among ready nodes). */
static void random_topo(const dag_t *g, uint64_t *rng, int *order, int *indeg, int *ready)
{
	int nr = 0, no = 0;

	memcpy(indeg, g->indeg, sizeof(int) * (size_t)g->n);
	for (int i = 0; i < g->n; i++)
		if (indeg[i] == 0)
			ready[nr++] = i;
	while (nr > 0) {
		int pick = (int)(hm_rng_next(rng) % (uint64_t)nr), v = ready[pick];
		ready[pick] = ready[--nr];
		order[no++] = v;
		for (int e = g->ostart[v]; e < g->ostart[v + 1]; e++)
			if (--indeg[g->oadj[e]] == 0)
				ready[nr++] = g->oadj[e];
	}
}

/* DP over one order: best cut with at most K contiguous levels; fills seg_end. */
static double dp_order(const dag_t *g, const int *order, int K, int *pos, double *f, int *arg,
		       double *C, int *lvl_of_pos)
{
	int n = g->n;
	double best;
	int bk = 0;

	for (int i = 0; i < n; i++)
		pos[order[i]] = i;
	/* f[k * n + i]: first i + 1 nodes in k + 1 levels, a level ending at i. */
	for (int i = 0; i < n; i++) {
		f[i] = 0;
		arg[i] = -1;
	}
	for (int k = 1; k < K; k++)
		for (int i = 0; i < n; i++) {
			f[k * n + i] = -INFINITY;
			arg[k * n + i] = -1;
		}
	for (int i = 1; i < n; i++) {
		/* C[j] = weight of edges from positions <= j into (j, i]. */
		double c = 0;
		for (int j = i - 1; j >= 0; j--) {
			int v = order[j + 1];
			c += g->win[v];
			for (int e = g->ostart[v]; e < g->ostart[v + 1]; e++)
				if (pos[g->oadj[e]] <= i)
					c -= g->ow[e];
			C[j] = c;
		}
		for (int k = 1; k < K; k++)
			for (int j = 0; j < i; j++) {
				double v = f[(k - 1) * n + j] + C[j];
				if (v > f[k * n + i]) {
					f[k * n + i] = v;
					arg[k * n + i] = j;
				}
			}
	}
	best = f[n - 1];
	for (int k = 1; k < K; k++)
		if (f[k * n + n - 1] > best + 1e-12) {
			best = f[k * n + n - 1];
			bk = k;
		}
	/* Backtrack: levels by position. */
	for (int i = n - 1, k = bk; i >= 0;) {
		int j = k > 0 ? arg[k * n + i] : -1;
		for (int p = j + 1; p <= i; p++)
			lvl_of_pos[p] = k;
		i = j;
		k--;
		if (k < 0 && i >= 0) { /* cannot happen: level 0 covers the rest */
			for (int p = 0; p <= i; p++)
				lvl_of_pos[p] = 0;
			break;
		}
	}
	return best;
}

double hm_prio_compress(int n, const double *prio, int nedges, const int *a, const int *b,
			const double *w, int K, int orders, uint64_t seed, double deadline_s,
			int *level, int *cut_short)
{
	dag_t g;
	double best = -1, *f = NULL, *C = NULL;
	int *order = NULL, *pos = NULL, *arg = NULL, *indeg = NULL, *ready = NULL, *lvl = NULL;
	uint64_t rng = seed ^ 0x43525558ULL;

	if (cut_short)
		*cut_short = 0;
	if (n <= 0)
		return 0;
	if (K < 1)
		K = 1;
	if (K > n)
		K = n;
	if (dag_build(&g, n, prio, nedges, a, b, w) != 0)
		goto out;
	order = malloc(sizeof(int) * (size_t)n);
	pos = malloc(sizeof(int) * (size_t)n);
	indeg = malloc(sizeof(int) * (size_t)n);
	ready = malloc(sizeof(int) * (size_t)n);
	lvl = malloc(sizeof(int) * (size_t)n);
	C = malloc(sizeof(double) * (size_t)n);
	f = malloc(sizeof(double) * (size_t)n * (size_t)K);
	arg = malloc(sizeof(int) * (size_t)n * (size_t)K);
	if (!order || !pos || !indeg || !ready || !lvl || !C || !f || !arg)
		goto out;
	for (int o = 0; o < (orders > 0 ? orders : 1); o++) {
		double v;
		if (o > 0 && deadline_s > 0 && hm_mono_s() > deadline_s) {
			if (cut_short)
				*cut_short = 1;
			break;
		}
		random_topo(&g, &rng, order, indeg, ready);
		v = dp_order(&g, order, K, pos, f, arg, C, lvl);
		if (v > best + 1e-12) {
			best = v;
			for (int p = 0; p < n; p++)
				level[order[p]] = lvl[p];
		}
	}
out:
	dag_free(&g);
	free(order);
	free(pos);
	free(indeg);
	free(ready);
	free(lvl);
	free(C);
	free(f);
	free(arg);
	return best;
}

