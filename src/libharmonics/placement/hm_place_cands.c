/*
 * hm_place_cands.c - candidate host sets for an arriving job (hm_place_score.h).
 *
 * Rules, in this order (duplicates dropped):
 *   packed      hm_place_default's choice, always first (cons_tres + topology/tree)
 *   When one rack can hold the job:
 *   quiet       racks that can, by the summed NIC load of the hosts they would
 *               give, then hosts needed, tightest, index (up to 3)
 *   Else:
 *   light       racks by uplink load, most free first among equals
 *   light-fit   the same, finishing with the tightest rack that covers the rest
 *               among those no more loaded than the next one in line
 *   ratio       racks by uplink load per free unit (light and roomy first), fit finish
 *   packed-fit  most free first, fit finish
 *   fewest-light as many racks as packed needs, the least loaded such set
 *   pod         light-fit inside one pod (the ToRs' first parent), up to 3 pods
 *               by mean uplink load, on topologies with several pods
 * Within a rack, hosts are taken most free first (ties by index), as cons_tres.
 */
#include "hm_place_score.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	const hm_topo_t *t;
	const hm_lview_t *v;
	const int *avail;
	int need, nr, nh;
	int *rfree;        /* [nr] free units per rack */
	int *roff, *rh;    /* hosts of rack r with units, most free first: rh[roff[r]..roff[r+1]) */
	int *pod;          /* [nr] pod id (first parent switch of the ToR), -1 none */
	int *order, *used; /* [nr] scratch */
	int *pick, npick;  /* [nh] hosts taken so far, in take order */
	hm_place_cand_t *out;
	int nout, max;
	bool oom;
} gen_t;

void hm_place_cand_free(hm_place_cand_t *c)
{
	if (!c)
		return;
	free(c->hosts);
	free(c->units);
	memset(c, 0, sizeof(*c));
}

static int host_rack(const hm_topo_t *t, int h)
{
	int r = t->hosts[h].rack;

	return r >= 0 && r < t->nracks ? r : 0;
}

static double rack_load(const gen_t *g, int r)
{
	return g->v ? hm_lview_rack_util(g->v, r) : 0;
}

/* Most free first, ties by index: cons_tres' order and hm_place_default's. */
static bool more_free(const int *avail, int x, int y)
{
	return avail[x] != avail[y] ? avail[x] > avail[y] : x < y;
}

static void sort_most_free(const int *avail, int *v, int n)
{
	for (int i = 1; i < n; i++) {
		int x = v[i], j = i;

		for (; j > 0 && more_free(avail, x, v[j - 1]); j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Hosts of v[0..n) (sorted most free first) that cover need; 0 when they cannot. */
static int hosts_needed(const int *avail, const int *v, int n, int need)
{
	int sum = 0;

	for (int i = 0; i < n && avail[v[i]] > 0; i++) {
		sum += avail[v[i]];
		if (sum >= need)
			return i + 1;
	}
	return 0;
}

static bool ring_before(const hm_topo_t *t, int x, int y)
{
	int rx = host_rack(t, x), ry = host_rack(t, y);

	return rx != ry ? rx < ry : x < y;
}

/* Turn the hosts picked (take order) into a candidate: units, ring order, dedupe. */
static void emit(gen_t *g, const char *rule)
{
	hm_place_cand_t c = {0};
	int left = g->need;
	bool *seen = NULL;

	if (g->nout >= g->max || g->npick == 0 || g->oom)
		return;
	c.hosts = malloc((size_t)g->npick * sizeof(int));
	c.units = malloc((size_t)g->npick * sizeof(int));
	seen = calloc((size_t)g->nr, sizeof(bool));
	if (!c.hosts || !c.units || !seen) {
		g->oom = true;
		goto out;
	}
	for (int i = 0; i < g->npick && left > 0; i++) {
		int h = g->pick[i], u = g->avail[h] < left ? g->avail[h] : left;

		c.hosts[c.nhosts] = h;
		c.units[c.nhosts++] = u;
		left -= u;
	}
	if (left > 0)
		goto out; /* cannot happen: rules pick enough */
	for (int i = 1; i < c.nhosts; i++) {
		int h = c.hosts[i], u = c.units[i], j = i;

		for (; j > 0 && ring_before(g->t, h, c.hosts[j - 1]); j--) {
			c.hosts[j] = c.hosts[j - 1];
			c.units[j] = c.units[j - 1];
		}
		c.hosts[j] = h;
		c.units[j] = u;
	}
	for (int i = 0; i < c.nhosts; i++) {
		int r = host_rack(g->t, c.hosts[i]);

		c.nracks += !seen[r];
		seen[r] = true;
	}
	for (int k = 0; k < g->nout; k++)
		if (g->out[k].nhosts == c.nhosts &&
		    !memcmp(g->out[k].hosts, c.hosts, (size_t)c.nhosts * sizeof(int)) &&
		    !memcmp(g->out[k].units, c.units, (size_t)c.nhosts * sizeof(int)))
			goto out;
	c.rule = rule;
	g->out[g->nout++] = c;
	memset(&c, 0, sizeof(c));
out:
	hm_place_cand_free(&c);
	free(seen);
}

/* Pick hosts of rack r, most free first, until `left` is covered; returns what is left. */
static int take_rack(gen_t *g, int r, int left)
{
	for (int i = g->roff[r]; i < g->roff[r + 1] && left > 0; i++) {
		g->pick[g->npick++] = g->rh[i];
		left -= g->avail[g->rh[i]];
	}
	g->used[r] = 1;
	return left;
}

/* hm_place_default's choice (see hm_place.c). */
static void rule_packed(gen_t *g, int single_rack)
{
	int n;

	g->npick = 0;
	if (single_rack >= 0) {
		int r = single_rack, cnt = g->roff[r + 1] - g->roff[r];

		n = hosts_needed(g->avail, g->rh + g->roff[r], cnt, g->need);
		for (int i = 0; i < n; i++)
			g->pick[g->npick++] = g->rh[g->roff[r] + i];
		emit(g, "packed");
		return;
	}
	/* Fewest racks, most free first; then the union of their hosts, most free first. */
	for (int r = 0; r < g->nr; r++)
		g->order[r] = r;
	sort_most_free(g->rfree, g->order, g->nr);
	n = hosts_needed(g->rfree, g->order, g->nr, g->need);
	if (!n)
		return;
	memset(g->used, 0, (size_t)g->nr * sizeof(int));
	for (int i = 0; i < n; i++)
		g->used[g->order[i]] = 1;
	for (int h = 0; h < g->nh; h++)
		if (g->used[host_rack(g->t, h)] && g->avail[h] > 0)
			g->pick[g->npick++] = h;
	sort_most_free(g->avail, g->pick, g->npick);
	emit(g, "packed");
}

/*
 * Take racks in order[0..n); with fit, finish with the tightest unused rack of
 * the allowed set that covers the rest, among those no more loaded than the
 * next rack in line.
 */
static void take_in_order(gen_t *g, const int *order, int n, bool fit, const char *rule)
{
	int left = g->need;

	g->npick = 0;
	memset(g->used, 0, (size_t)g->nr * sizeof(int));
	for (int i = 0; i < n && left > 0; i++) {
		int r = order[i];

		if (g->used[r] || g->rfree[r] <= 0)
			continue;
		if (fit) {
			int best = -1;

			for (int k = i; k < n; k++) {
				int q = order[k];

				if (g->used[q] || g->rfree[q] < left ||
				    rack_load(g, q) > rack_load(g, r) + 1e-12)
					continue;
				if (best < 0 || g->rfree[q] < g->rfree[best] ||
				    (g->rfree[q] == g->rfree[best] &&
				     rack_load(g, q) < rack_load(g, best)))
					best = q;
			}
			if (best >= 0) {
				left = take_rack(g, best, left);
				break;
			}
		}
		left = take_rack(g, r, left);
	}
	if (left <= 0)
		emit(g, rule);
}

/* Comparators of rack orders need the generator: a file-scope pointer would not be
 * thread safe, so racks are sorted by insertion with an explicit key. */
static void sort_racks(gen_t *g, int *v, int n, int key)
{
	for (int i = 1; i < n; i++) {
		int x = v[i], j = i;

		for (; j > 0; j--) {
			int y = v[j - 1];
			double kx, ky;

			if (key == 0) { /* uplink load, then most free, then index */
				kx = rack_load(g, x);
				ky = rack_load(g, y);
			} else { /* uplink load per free unit */
				kx = rack_load(g, x) / (g->rfree[x] > 0 ? g->rfree[x] : 1e-9);
				ky = rack_load(g, y) / (g->rfree[y] > 0 ? g->rfree[y] : 1e-9);
			}
			if (kx > ky + 1e-12 || (kx >= ky - 1e-12 && !more_free(g->rfree, x, y)))
				break;
			v[j] = y;
		}
		v[j] = x;
	}
}

/*
 * As few racks as packed needs, the least loaded such set: racks whose uplink
 * load is at most a threshold, most free first, for thresholds rising through
 * the racks' loads until the k most free of them cover the job.
 * order[0..n) holds the racks with free units, most free first.
 */
static void fewest_light(gen_t *g, int n)
{
	int k = hosts_needed(g->rfree, g->order, n, g->need), *sel;
	double *lv;

	if (k < 2)
		return;
	sel = malloc((size_t)n * sizeof(int));
	lv = malloc((size_t)n * sizeof(double));
	if (!sel || !lv) {
		g->oom = true;
		goto out;
	}
	for (int i = 0; i < n; i++)
		lv[i] = rack_load(g, g->order[i]);
	for (int i = 1; i < n; i++) { /* distinct thresholds, ascending */
		double x = lv[i];
		int j = i;

		for (; j > 0 && lv[j - 1] > x; j--)
			lv[j] = lv[j - 1];
		lv[j] = x;
	}
	for (int ti = 0; ti < n; ti++) {
		int m = 0, sum = 0;

		if (ti > 0 && lv[ti] <= lv[ti - 1] + 1e-12)
			continue;
		for (int i = 0; i < n && m < k; i++) /* most free first among the light */
			if (rack_load(g, g->order[i]) <= lv[ti] + 1e-12) {
				sel[m++] = g->order[i];
				sum += g->rfree[g->order[i]];
			}
		if (m == k && sum >= g->need) {
			take_in_order(g, sel, m, true, "fewest-light");
			break;
		}
	}
out:
	free(sel);
	free(lv);
}

static void multi_rack(gen_t *g)
{
	int n = 0, npods = 0, *pods = NULL, *pfree = NULL;
	double *pload = NULL;

	for (int r = 0; r < g->nr; r++)
		if (g->rfree[r] > 0)
			g->order[n++] = r;
	if (g->v) {
		sort_racks(g, g->order, n, 0);
		take_in_order(g, g->order, n, false, "light");
		take_in_order(g, g->order, n, true, "light-fit");
		sort_racks(g, g->order, n, 1);
		take_in_order(g, g->order, n, true, "ratio");
	}
	n = 0;
	for (int r = 0; r < g->nr; r++)
		if (g->rfree[r] > 0)
			g->order[n++] = r;
	sort_most_free(g->rfree, g->order, n);
	take_in_order(g, g->order, n, true, "packed-fit");
	if (g->v)
		fewest_light(g, n);
	if (!g->v)
		return;
	/* Pods: distinct first parents of the ToRs, by mean rack load, most free first. */
	pods = malloc((size_t)g->nr * sizeof(int));
	pfree = calloc((size_t)g->nr, sizeof(int));
	pload = calloc((size_t)g->nr, sizeof(double));
	if (!pods || !pfree || !pload) {
		g->oom = true;
		goto out;
	}
	for (int r = 0; r < g->nr; r++) {
		int k = 0;

		if (g->pod[r] < 0)
			continue;
		while (k < npods && g->pod[pods[k]] != g->pod[r])
			k++;
		if (k == npods)
			pods[npods++] = r; /* the pod's first rack stands for it */
		pfree[k] += g->rfree[r];
		pload[k] += rack_load(g, r);
	}
	for (int tries = 0; npods > 1 && tries < 3; tries++) {
		int best = -1;

		for (int k = 0; k < npods; k++) {
			if (pfree[k] < g->need)
				continue;
			if (best < 0 || pload[k] < pload[best] - 1e-12 ||
			    (pload[k] <= pload[best] + 1e-12 && pfree[k] > pfree[best]))
				best = k;
		}
		if (best < 0)
			break;
		n = 0;
		for (int r = 0; r < g->nr; r++)
			if (g->rfree[r] > 0 && g->pod[r] == g->pod[pods[best]])
				g->order[n++] = r;
		sort_racks(g, g->order, n, 0);
		take_in_order(g, g->order, n, true, "pod");
		pfree[best] = -1; /* not again */
	}
out:
	free(pods);
	free(pfree);
	free(pload);
}

/* Racks that can hold the job alone, by the NIC load of the hosts they would give. */
static void single_rack(gen_t *g)
{
	int n = 0, *need_h = calloc((size_t)g->nr, sizeof(int));
	double *nic = calloc((size_t)g->nr, sizeof(double));

	if (!need_h || !nic) {
		g->oom = true;
		goto out;
	}
	for (int r = 0; r < g->nr; r++) {
		need_h[r] = hosts_needed(g->avail, g->rh + g->roff[r], g->roff[r + 1] - g->roff[r],
					 g->need);
		if (!need_h[r])
			continue;
		for (int i = 0; i < need_h[r]; i++)
			nic[r] += hm_lview_host_util(g->v, g->rh[g->roff[r] + i]);
		g->order[n++] = r;
	}
	for (int i = 1; i < n; i++) {
		int x = g->order[i], j = i;

		for (; j > 0; j--) {
			int y = g->order[j - 1];

			if (nic[x] > nic[y] + 1e-12 ||
			    (nic[x] >= nic[y] - 1e-12 &&
			     (need_h[x] > need_h[y] ||
			      (need_h[x] == need_h[y] && (g->rfree[x] > g->rfree[y] ||
							  (g->rfree[x] == g->rfree[y] && x > y))))))
				break;
			g->order[j] = y;
		}
		g->order[j] = x;
	}
	for (int i = 0; i < n && i < 3; i++) {
		int r = g->order[i];

		g->npick = 0;
		for (int k = 0; k < need_h[r]; k++)
			g->pick[g->npick++] = g->rh[g->roff[r] + k];
		emit(g, "quiet");
	}
out:
	free(need_h);
	free(nic);
}

static void gen_free(gen_t *g)
{
	free(g->rfree);
	free(g->roff);
	free(g->rh);
	free(g->pod);
	free(g->order);
	free(g->used);
	free(g->pick);
}

/* Free units per rack, hosts per rack (most free first), pods. */
static bool gen_init(gen_t *g)
{
	const hm_topo_t *t = g->t;
	int *fill;

	g->nr = t->nracks > 0 ? t->nracks : 1; /* no switches: one rack of every host */
	g->nh = t->nhosts;
	g->rfree = calloc((size_t)g->nr, sizeof(int));
	g->roff = calloc((size_t)g->nr + 1, sizeof(int));
	g->rh = malloc(((size_t)g->nh + 1) * sizeof(int));
	g->pod = malloc((size_t)g->nr * sizeof(int));
	g->order = malloc((size_t)g->nr * sizeof(int));
	g->used = calloc((size_t)g->nr, sizeof(int));
	g->pick = malloc(((size_t)g->nh + 1) * sizeof(int));
	fill = calloc((size_t)g->nr, sizeof(int));
	if (!g->rfree || !g->roff || !g->rh || !g->pod || !g->order || !g->used || !g->pick ||
	    !fill) {
		free(fill);
		return false;
	}
	for (int h = 0; h < g->nh; h++)
		if (g->avail[h] > 0) {
			g->rfree[host_rack(t, h)] += g->avail[h];
			g->roff[host_rack(t, h) + 1]++;
		}
	for (int r = 0; r < g->nr; r++)
		g->roff[r + 1] += g->roff[r];
	for (int h = 0; h < g->nh; h++)
		if (g->avail[h] > 0) {
			int r = host_rack(t, h);

			g->rh[g->roff[r] + fill[r]++] = h;
		}
	for (int r = 0; r < g->nr; r++) {
		const hm_switch_t *sw = t->nracks > 0 ? &t->switches[t->rack_switch[r]] : NULL;

		sort_most_free(g->avail, g->rh + g->roff[r], g->roff[r + 1] - g->roff[r]);
		g->pod[r] = sw && sw->nparents > 0 ? sw->parents[0] : -1;
	}
	free(fill);
	return true;
}

int hm_place_candidates(const hm_topo_t *t, const hm_lview_t *v, const hm_place_req_t *req,
			hm_place_cand_t *out, int max)
{
	gen_t g = {.t = t, .v = v, .out = out};
	int best = -1, best_n = 0, total = 0;

	if (!t || !req || !req->avail || !out || req->need < 1 || t->nhosts < 1 || max < 1 ||
	    (v && v->topo != t &&
	     (v->topo->nlinks != t->nlinks || v->topo->nracks != t->nracks ||
	      v->topo->nhosts != t->nhosts)))
		return -1;
	g.avail = req->avail;
	g.need = req->need;
	g.max = max < HM_PLACE_MAX_CANDS ? max : HM_PLACE_MAX_CANDS;
	memset(out, 0, (size_t)g.max * sizeof(*out));
	for (int h = 0; h < t->nhosts; h++)
		total += req->avail[h] > 0 ? req->avail[h] : 0;
	if (total < req->need)
		return 0;
	if (req->need <= req->host_units) { /* one host, first fit in index order */
		for (int h = 0; h < t->nhosts; h++)
			if (req->avail[h] >= req->need) {
				g.pick = &h;
				g.npick = 1;
				g.nr = t->nracks > 0 ? t->nracks : 1;
				emit(&g, "packed");
				return g.oom ? -1 : g.nout;
			}
		return 0;
	}
	if (!gen_init(&g)) {
		gen_free(&g);
		return -1;
	}
	for (int r = 0; r < g.nr; r++) {
		int n = hosts_needed(g.avail, g.rh + g.roff[r], g.roff[r + 1] - g.roff[r], g.need);

		if (n && (best < 0 || n < best_n || (n == best_n && g.rfree[r] < g.rfree[best]))) {
			best = r;
			best_n = n;
		}
	}
	rule_packed(&g, best);
	if (best >= 0 && v)
		single_rack(&g);
	else if (best < 0)
		multi_rack(&g);
	gen_free(&g);
	if (g.oom) {
		for (int k = 0; k < g.nout; k++)
			hm_place_cand_free(&out[k]);
		return -1;
	}
	return g.nout;
}
