/*
 * hm_topo.c - queries on a built topology: host lookup, equal-cost paths and
 * routes, totals, summary, release.
 *
 * Routing model (up/down, as in Slurm's topology/tree and ECMP in a Clos):
 * traffic climbs from the source NIC through its ToR to the lowest switch
 * level at which the two ToRs share an ancestor, then descends. The equal-cost
 * paths are every combination of a shortest up-path from the source ToR to a
 * common ancestor A at that level and a shortest up-path from the destination
 * ToR to A (walked downwards), enumerated in a fixed order and capped at
 * HM_MAX_PATHS. Cost per call: a breadth-first walk over the ancestors of the
 * two ToRs only (a few dozen switches), never over all hosts.
 */
#include "hm_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_topo_build.h"

#define CNT_SAT (1u << 24) /* path counts saturate here; only the first 64 are used */

void hm_topo_free(hm_topo_t *t)
{
	if (!t)
		return;
	for (int i = 0; t->hosts && i < t->nhosts; i++)
		free(t->hosts[i].name);
	for (int i = 0; t->switches && i < t->nswitches; i++) {
		free(t->switches[i].name);
		free(t->switches[i].parents);
		free(t->switches[i].up_link);
		free(t->switches[i].down_link);
	}
	free(t->hosts);
	free(t->switches);
	free(t->links);
	free(t->rack_switch);
	free(t->host_order);
	for (int i = 0; t->planes && i < t->nplanes; i++) {
		free(t->planes[i].name);
		free(t->planes[i].host_tor);
	}
	free(t->planes);
	free(t);
}

static bool dup_ints(int **dst, const int *src, int n)
{
	if (!src || n <= 0)
		return true;
	if (!(*dst = malloc((size_t)n * sizeof(int))))
		return false;
	memcpy(*dst, src, (size_t)n * sizeof(int));
	return true;
}

static bool dup_str(char **dst, const char *src)
{
	return !src || (*dst = strdup(src)) != NULL;
}

hm_topo_t *hm_topo_clone(const hm_topo_t *t)
{
	hm_topo_t *c;
	bool ok;

	if (!t || !(c = calloc(1, sizeof(*c))))
		return NULL;
	/* Arrays zeroed first, so hm_topo_free is safe at any point of the copy. */
	c->hosts = calloc((size_t)t->nhosts + 1, sizeof(*c->hosts));
	c->switches = calloc((size_t)t->nswitches + 1, sizeof(*c->switches));
	c->links = calloc((size_t)t->nlinks + 1, sizeof(*c->links));
	ok = c->hosts && c->switches && c->links;
	if (ok) {
		c->nhosts = t->nhosts;
		c->nswitches = t->nswitches;
		c->nlinks = t->nlinks;
		c->nracks = t->nracks;
		c->nlevels = t->nlevels;
		memcpy(c->links, t->links, (size_t)t->nlinks * sizeof(*t->links));
		ok = dup_ints(&c->rack_switch, t->rack_switch, t->nracks) &&
		     dup_ints(&c->host_order, t->host_order, t->nhosts);
	}
	for (int i = 0; ok && i < t->nhosts; i++) {
		c->hosts[i] = t->hosts[i];
		c->hosts[i].name = NULL;
		ok = dup_str(&c->hosts[i].name, t->hosts[i].name);
	}
	for (int i = 0; ok && i < t->nswitches; i++) {
		const hm_switch_t *s = &t->switches[i];
		hm_switch_t *d = &c->switches[i];

		*d = *s; /* then own copies of what it points to */
		d->name = NULL;
		d->parents = d->up_link = d->down_link = NULL;
		ok = dup_str(&d->name, s->name) && dup_ints(&d->parents, s->parents, s->nparents) &&
		     dup_ints(&d->up_link, s->up_link, s->nparents) &&
		     dup_ints(&d->down_link, s->down_link, s->nparents);
	}
	if (ok && t->nplanes > 0 && t->planes) {
		ok = (c->planes = calloc((size_t)t->nplanes, sizeof(*c->planes))) != NULL;
		for (int i = 0; ok && i < t->nplanes; i++) {
			c->planes[i] = t->planes[i];
			c->planes[i].name = NULL;
			c->planes[i].host_tor = NULL;
			c->nplanes = i + 1;
			ok = dup_str(&c->planes[i].name, t->planes[i].name) &&
			     (!t->planes[i].host_tor ||
			      dup_ints(&c->planes[i].host_tor, t->planes[i].host_tor, t->nhosts));
		}
	}
	if (!ok) {
		hm_topo_free(c);
		return NULL;
	}
	return c;
}

int hm_topo_host_index(const hm_topo_t *t, const char *name)
{
	int lo = 0, hi;

	if (!t || !name)
		return -1;
	if (!t->host_order) {
		for (int i = 0; i < t->nhosts; i++)
			if (strcmp(t->hosts[i].name, name) == 0)
				return i;
		return -1;
	}
	hi = t->nhosts - 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2, h = t->host_order[mid];
		int c = strcmp(t->hosts[h].name, name);

		if (c == 0)
			return h;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

int hm_topo_gpus(const hm_topo_t *t)
{
	int n = 0;

	for (int i = 0; t && i < t->nhosts; i++)
		n += t->hosts[i].gpus;
	return n;
}

void hm_topo_describe(const hm_topo_t *t, char *buf, size_t len)
{
	if (!buf || len == 0)
		return;
	if (!t) {
		snprintf(buf, len, "no topology");
		return;
	}
	snprintf(buf, len, "%d racks, %d hosts, %d GPUs, %d levels, %d switches, %d links",
		 t->nracks, t->nhosts, hm_topo_gpus(t), t->nlevels, t->nswitches, t->nlinks);
}

/* Ancestors of one ToR in breadth-first order with shortest up-distance and
 * the number of shortest up-paths reaching each. */
typedef struct {
	int n;
	int sw[HM_TOPO_MAX_ANCESTORS];
	int dist[HM_TOPO_MAX_ANCESTORS];
	unsigned cnt[HM_TOPO_MAX_ANCESTORS];
} anc_t;

static int anc_pos(const anc_t *a, int sw)
{
	for (int i = 0; i < a->n; i++)
		if (a->sw[i] == sw)
			return i;
	return -1;
}

static void anc_walk(const hm_topo_t *t, int tor, anc_t *a)
{
	a->n = 1;
	a->sw[0] = tor;
	a->dist[0] = 0;
	a->cnt[0] = 1;
	for (int i = 0; i < a->n; i++) {
		const hm_switch_t *s = &t->switches[a->sw[i]];

		for (int k = 0; k < s->nparents; k++) {
			int j = anc_pos(a, s->parents[k]);

			if (j < 0) {
				if (a->n == HM_TOPO_MAX_ANCESTORS)
					continue; /* beyond the scratch space: not used */
				j = a->n++;
				a->sw[j] = s->parents[k];
				a->dist[j] = a->dist[i] + 1;
				a->cnt[j] = 0;
			}
			if (a->dist[j] == a->dist[i] + 1) {
				a->cnt[j] += a->cnt[i];
				if (a->cnt[j] > CNT_SAT)
					a->cnt[j] = CNT_SAT;
			}
		}
	}
}

typedef struct {
	anc_t src, dst;
	int best_level, best_dist;
	int npaths;
} paths_t;

static bool is_candidate(const hm_topo_t *t, const paths_t *p, int i, int *j)
{
	*j = anc_pos(&p->dst, p->src.sw[i]);
	return *j >= 0 && t->switches[p->src.sw[i]].level == p->best_level &&
	       p->src.dist[i] + p->dst.dist[*j] == p->best_dist;
}

static unsigned block_size(const paths_t *p, int i, int j)
{
	unsigned long long b = (unsigned long long)p->src.cnt[i] * p->dst.cnt[j];

	return b > HM_MAX_PATHS ? HM_MAX_PATHS : (unsigned)b;
}

/* Common ancestors at the lowest level (then shortest) and their path count. */
static void paths_find(const hm_topo_t *t, int src_tor, int dst_tor, paths_t *p)
{
	int j;

	anc_walk(t, src_tor, &p->src);
	anc_walk(t, dst_tor, &p->dst);
	p->best_level = -1;
	p->best_dist = 0;
	p->npaths = 0;
	for (int i = 0; i < p->src.n; i++) {
		int lvl;

		j = anc_pos(&p->dst, p->src.sw[i]);
		if (j < 0)
			continue;
		lvl = t->switches[p->src.sw[i]].level;
		if (p->best_level < 0 || lvl < p->best_level ||
		    (lvl == p->best_level && p->src.dist[i] + p->dst.dist[j] < p->best_dist)) {
			p->best_level = lvl;
			p->best_dist = p->src.dist[i] + p->dst.dist[j];
		}
	}
	if (p->best_level < 0)
		return;
	for (int i = 0; i < p->src.n && p->npaths < HM_MAX_PATHS; i++)
		if (is_candidate(t, p, i, &j))
			p->npaths += (int)block_size(p, i, j);
	if (p->npaths > HM_MAX_PATHS)
		p->npaths = HM_MAX_PATHS;
}

static bool has_parent(const hm_switch_t *s, int parent)
{
	for (int k = 0; k < s->nparents; k++)
		if (s->parents[k] == parent)
			return true;
	return false;
}

/* The idx-th shortest up-path from a's ToR to a->sw[top]: seq[0] = ToR ... seq[dist] = top. */
static void up_path(const hm_topo_t *t, const anc_t *a, int top, unsigned idx, int *seq)
{
	int cur = top;

	seq[a->dist[cur]] = a->sw[cur];
	while (a->dist[cur] > 0) {
		int next = -1;

		for (int j = 0; j < a->n; j++) {
			if (a->dist[j] != a->dist[cur] - 1 ||
			    !has_parent(&t->switches[a->sw[j]], a->sw[cur]))
				continue;
			if (idx < a->cnt[j]) {
				next = j;
				break;
			}
			idx -= a->cnt[j];
		}
		if (next < 0)
			return; /* cannot happen: counts are consistent */
		cur = next;
		seq[a->dist[cur]] = a->sw[cur];
	}
}

static int link_to_parent(const hm_switch_t *s, int parent, bool up)
{
	for (int k = 0; k < s->nparents; k++)
		if (s->parents[k] == parent)
			return up ? s->up_link[k] : s->down_link[k];
	return -1;
}

static bool host_ok(const hm_topo_t *t, int h, int nic)
{
	return h >= 0 && h < t->nhosts && nic >= 0 && nic < t->hosts[h].nics;
}

/* Host h's ToR in plane `plane`: -1 when it is not in the plane. */
static int tor_of(const hm_topo_t *t, int plane, int h)
{
	const hm_topo_plane_t *p = plane > 0 ? &t->planes[plane] : NULL;

	if (p && p->host_tor)
		return p->host_tor[h];
	return t->rack_switch[t->hosts[h].rack];
}

static bool plane_ok(const hm_topo_t *t, int plane)
{
	return plane == 0 || (plane > 0 && plane < t->nplanes && t->planes);
}

int hm_topo_npaths_plane(const hm_topo_t *t, int plane, int src_host, int dst_host)
{
	paths_t *p;
	int n, ts, td;

	if (!t || !plane_ok(t, plane) || !host_ok(t, src_host, 0) || !host_ok(t, dst_host, 0))
		return 0;
	if (src_host == dst_host)
		return 1;
	ts = tor_of(t, plane, src_host);
	td = tor_of(t, plane, dst_host);
	if (ts < 0 || td < 0)
		return 0;
	if (ts == td)
		return 1;
	p = malloc(sizeof(*p));
	if (!p)
		return 0;
	paths_find(t, ts, td, p);
	n = p->npaths;
	free(p);
	return n;
}

int hm_topo_npaths(const hm_topo_t *t, int src_host, int dst_host)
{
	return hm_topo_npaths_plane(t, 0, src_host, dst_host);
}

int hm_topo_route_plane(const hm_topo_t *t, int plane, int src_host, int src_nic, int dst_host,
			int dst_nic, int path_idx, int *links)
{
	const hm_host_t *hs, *hd;
	paths_t *p = NULL;
	int n = 0, k, i, j = -1, rc = -1, ts, td;
	int seq_up[HM_TOPO_MAX_LEVELS + 1], seq_down[HM_TOPO_MAX_LEVELS + 1];

	if (!t || !links || !plane_ok(t, plane) || !host_ok(t, src_host, src_nic) ||
	    !host_ok(t, dst_host, dst_nic))
		return -1;
	if (src_host == dst_host)
		return 0;
	hs = &t->hosts[src_host];
	hd = &t->hosts[dst_host];
	ts = tor_of(t, plane, src_host);
	td = tor_of(t, plane, dst_host);
	if (ts < 0 || td < 0)
		return -1;
	links[n++] = hs->nic_up_link[src_nic];
	if (ts == td) {
		links[n++] = hd->nic_down_link[dst_nic];
		return n;
	}
	p = malloc(sizeof(*p)); /* ~12 KiB: keep it off small thread stacks */
	if (!p)
		goto out;
	paths_find(t, ts, td, p);
	if (p->npaths <= 0)
		goto out;
	k = path_idx % p->npaths;
	if (k < 0)
		k += p->npaths;
	/* Find the common ancestor whose block of paths holds k. */
	for (i = 0; i < p->src.n; i++) {
		if (!is_candidate(t, p, i, &j))
			continue;
		if ((unsigned)k < block_size(p, i, j))
			break;
		k -= (int)block_size(p, i, j);
	}
	if (i == p->src.n)
		goto out;
	/* Source up-path varies fastest, so consecutive indexes leave by different uplinks. */
	up_path(t, &p->src, i, (unsigned)k % p->src.cnt[i], seq_up);
	up_path(t, &p->dst, j, ((unsigned)k / p->src.cnt[i]) % p->dst.cnt[j], seq_down);
	for (int s = 0; s < p->src.dist[i]; s++)
		links[n++] = link_to_parent(&t->switches[seq_up[s]], seq_up[s + 1], true);
	for (int s = p->dst.dist[j] - 1; s >= 0; s--)
		links[n++] = link_to_parent(&t->switches[seq_down[s]], seq_down[s + 1], false);
	links[n++] = hd->nic_down_link[dst_nic];
	rc = n;
out:
	free(p);
	return rc;
}

int hm_topo_route(const hm_topo_t *t, int src_host, int src_nic, int dst_host, int dst_nic,
		  int path_idx, int *links)
{
	return hm_topo_route_plane(t, 0, src_host, src_nic, dst_host, dst_nic, path_idx, links);
}
