/*
 * hm_topo_build.c - internal builder: names to indexes, switch levels from
 * the nesting, checks, then the directed links with rack ownership.
 */
#include "hm_topo_build.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>

/* Open-addressing name -> index map; keys are borrowed from the builder's names. */
typedef struct {
	const char **keys;
	int *vals;
	size_t cap; /* power of two, 0 = empty */
	size_t n;
} tb_map_t;

typedef struct {
	char *name;
	int line;
	int nparents, cap_parents;
	int *parents;
	double uplink_bps;
	int nhosts;    /* hosts directly below */
	int nchildren; /* switches directly below */
} tb_switch_t;

typedef struct {
	char *name;
	int tor;
	int gpus, nics;
	double nic_bps;
} tb_host_t;

struct hm_tb {
	const char *fname;
	double default_uplink_bps;
	tb_switch_t *sw;
	int nsw, cap_sw;
	tb_host_t *hosts;
	int nhosts, cap_hosts;
	tb_map_t swmap, hostmap;
};

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int map_get(const tb_map_t *m, const char *key)
{
	if (m->cap == 0)
		return -1;
	for (size_t i = hash_name(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return -1;
		if (strcmp(m->keys[i], key) == 0)
			return m->vals[i];
	}
}

static bool map_put(tb_map_t *m, const char *key, int val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 64;
		tb_map_t nm = {calloc(ncap, sizeof(*nm.keys)), calloc(ncap, sizeof(*nm.vals)), ncap,
			       0};

		if (!nm.keys || !nm.vals) {
			free(nm.keys);
			free(nm.vals);
			return false;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i])
				map_put(&nm, m->keys[i], m->vals[i]);
		free(m->keys);
		free(m->vals);
		*m = nm;
	}
	size_t i = hash_name(key) & (m->cap - 1);
	while (m->keys[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return true;
}

static void map_free(tb_map_t *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

hm_tb_t *hm_tb_new(const char *fname)
{
	hm_tb_t *b = calloc(1, sizeof(*b));

	if (b) {
		b->fname = fname ? fname : "topology";
		b->default_uplink_bps = HM_DEFAULT_UPLINK_BPS;
	}
	return b;
}

void hm_tb_free(hm_tb_t *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->nsw; i++) {
		free(b->sw[i].name);
		free(b->sw[i].parents);
	}
	for (int i = 0; i < b->nhosts; i++)
		free(b->hosts[i].name);
	free(b->sw);
	free(b->hosts);
	map_free(&b->swmap);
	map_free(&b->hostmap);
	free(b);
}

void hm_tb_set_default_uplink(hm_tb_t *b, double bps)
{
	b->default_uplink_bps = bps > 0 ? bps : HM_DEFAULT_UPLINK_BPS;
}

int hm_tb_switch_find(const hm_tb_t *b, const char *name)
{
	return map_get(&b->swmap, name);
}

int hm_tb_host_find(const hm_tb_t *b, const char *name)
{
	return map_get(&b->hostmap, name);
}

const char *hm_tb_switch_name(const hm_tb_t *b, int idx)
{
	return b->sw[idx].name;
}

int hm_tb_switch_line(const hm_tb_t *b, int idx)
{
	return b->sw[idx].line;
}

void hm_tb_switch_set_line(hm_tb_t *b, int idx, int line)
{
	b->sw[idx].line = line;
}

void hm_tb_switch_set_uplink(hm_tb_t *b, int idx, double bps)
{
	b->sw[idx].uplink_bps = bps;
}

int hm_tb_host_tor(const hm_tb_t *b, int idx)
{
	return b->hosts[idx].tor;
}

static hm_rc_t check_name(const char *what, const char *name, hm_err_t *err)
{
	if (!name || !*name)
		return hm_err_set(err, HM_ERR_PARSE, "empty %s name", what);
	if (strlen(name) > HM_TOPO_MAX_NAME)
		return hm_err_set(err, HM_ERR_PARSE, "%s name '%.40s...' is longer than %d bytes",
				  what, name, HM_TOPO_MAX_NAME);
	return HM_OK;
}

hm_rc_t hm_tb_switch_add(hm_tb_t *b, const char *name, int line, int *idx, hm_err_t *err)
{
	tb_switch_t *s;
	hm_rc_t rc = check_name("switch", name, err);

	if (rc)
		return rc;
	if (b->nsw == b->cap_sw) {
		int ncap = b->cap_sw ? b->cap_sw * 2 : 16;
		tb_switch_t *n = realloc(b->sw, (size_t)ncap * sizeof(*n));

		if (!n)
			return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
		b->sw = n;
		b->cap_sw = ncap;
	}
	s = &b->sw[b->nsw];
	memset(s, 0, sizeof(*s));
	s->name = strdup(name);
	if (!s->name || !map_put(&b->swmap, s->name, b->nsw)) {
		free(s->name);
		return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
	}
	s->line = line;
	*idx = b->nsw++;
	return HM_OK;
}

hm_rc_t hm_tb_parent_add(hm_tb_t *b, int child, int parent, hm_err_t *err)
{
	tb_switch_t *c = &b->sw[child];

	for (int i = 0; i < c->nparents; i++)
		if (c->parents[i] == parent)
			return HM_OK;
	if (c->nparents == c->cap_parents) {
		int ncap = c->cap_parents ? c->cap_parents * 2 : 2;
		int *n = realloc(c->parents, (size_t)ncap * sizeof(*n));

		if (!n)
			return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
		c->parents = n;
		c->cap_parents = ncap;
	}
	c->parents[c->nparents++] = parent;
	b->sw[parent].nchildren++;
	return HM_OK;
}

hm_rc_t hm_tb_host_add(hm_tb_t *b, const char *name, int tor, int gpus, int nics, double nic_bps,
		       int *idx, hm_err_t *err)
{
	tb_host_t *h;
	hm_rc_t rc = check_name("host", name, err);

	if (rc)
		return rc;
	if (gpus < 0 || gpus > HM_MAX_GPUS_PER_HOST || nics < 1 || nics > HM_MAX_NICS_PER_HOST ||
	    !(nic_bps > 0))
		return hm_err_set(err, HM_ERR_RANGE,
				  "host '%s': %d GPUs, %d NICs at %g bit/s; accepted 0-%d GPUs, "
				  "1-%d NICs, speed > 0",
				  name, gpus, nics, nic_bps, HM_MAX_GPUS_PER_HOST,
				  HM_MAX_NICS_PER_HOST);
	if (b->nhosts >= HM_TOPO_MAX_HOSTS)
		return hm_err_set(err, HM_ERR_RANGE,
				  "host '%s': more than %d hosts in the topology; accepted up to %d",
				  name, HM_TOPO_MAX_HOSTS, HM_TOPO_MAX_HOSTS);
	if (b->nhosts == b->cap_hosts) {
		int ncap = b->cap_hosts ? b->cap_hosts * 2 : 64;
		tb_host_t *n = realloc(b->hosts, (size_t)ncap * sizeof(*n));

		if (!n)
			return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
		b->hosts = n;
		b->cap_hosts = ncap;
	}
	h = &b->hosts[b->nhosts];
	h->name = strdup(name);
	if (!h->name || !map_put(&b->hostmap, h->name, b->nhosts)) {
		free(h->name);
		return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
	}
	h->tor = tor;
	h->gpus = gpus;
	h->nics = nics;
	h->nic_bps = nic_bps;
	b->sw[tor].nhosts++;
	*idx = b->nhosts++;
	return HM_OK;
}

/* "file:line: " or "file: " for messages about switch i. */
static const char *where(const hm_tb_t *b, int i, char *buf, size_t len)
{
	if (b->sw[i].line > 0)
		snprintf(buf, len, "%s:%d", b->fname, b->sw[i].line);
	else
		snprintf(buf, len, "%s", b->fname);
	return buf;
}

/* Levels by Kahn's algorithm over child -> parent edges; fails on loops. */
static hm_rc_t derive_levels(hm_tb_t *b, int *level, int *nlevels, hm_err_t *err)
{
	int *pending = calloc((size_t)b->nsw, sizeof(int)); /* children not yet levelled */
	int *queue = malloc((size_t)b->nsw * sizeof(int));
	int head = 0, tail = 0, maxl = 0;
	hm_rc_t rc = HM_OK;
	char wb[300];

	if (!pending || !queue) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
		goto out;
	}
	for (int i = 0; i < b->nsw; i++) {
		tb_switch_t *s = &b->sw[i];

		if (s->nhosts > 0 && s->nchildren > 0) {
			rc = hm_err_set(
			    err, HM_ERR_PARSE,
			    "%s: switch '%s' has both hosts and child switches; a "
			    "switch with hosts is a rack (ToR) and has no switches below",
			    where(b, i, wb, sizeof(wb)), s->name);
			goto out;
		}
		if (s->nhosts == 0 && s->nchildren == 0) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s: switch '%s' has neither hosts nor child switches",
					where(b, i, wb, sizeof(wb)), s->name);
			goto out;
		}
		pending[i] = s->nchildren;
		level[i] = 0;
		if (pending[i] == 0)
			queue[tail++] = i;
	}
	while (head < tail) {
		int c = queue[head++];

		for (int k = 0; k < b->sw[c].nparents; k++) {
			int p = b->sw[c].parents[k];

			if (level[p] < level[c] + 1)
				level[p] = level[c] + 1;
			if (--pending[p] == 0)
				queue[tail++] = p;
		}
		if (level[c] > maxl)
			maxl = level[c];
	}
	if (tail < b->nsw) {
		for (int i = 0; i < b->nsw; i++) {
			if (pending[i] > 0) {
				rc = hm_err_set(err, HM_ERR_PARSE,
						"%s: switch '%s' is part of a loop of parent/child "
						"switch references; the switches must form a tree "
						"or a Clos (no cycles)",
						where(b, i, wb, sizeof(wb)), b->sw[i].name);
				goto out;
			}
		}
	}
	if (maxl + 1 > HM_TOPO_MAX_LEVELS) {
		rc = hm_err_set(err, HM_ERR_RANGE, "%s: %d switch levels, at most %d are supported",
				b->fname, maxl + 1, HM_TOPO_MAX_LEVELS);
		goto out;
	}
	*nlevels = maxl + 1;
out:
	free(pending);
	free(queue);
	return rc;
}

static int uf_find(int *uf, int x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

static hm_rc_t check_connected(const hm_tb_t *b, hm_err_t *err)
{
	int *uf = malloc((size_t)b->nsw * sizeof(int));
	hm_rc_t rc = HM_OK;

	if (!uf)
		return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
	for (int i = 0; i < b->nsw; i++)
		uf[i] = i;
	for (int i = 0; i < b->nsw; i++)
		for (int k = 0; k < b->sw[i].nparents; k++)
			uf[uf_find(uf, i)] = uf_find(uf, b->sw[i].parents[k]);
	for (int i = 1; i < b->nsw; i++) {
		if (uf_find(uf, i) != uf_find(uf, 0)) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s: switches '%s' and '%s' are not connected; add a top "
					"switch whose Switches= lists both parts",
					b->fname, b->sw[0].name, b->sw[i].name);
			break;
		}
	}
	free(uf);
	return rc;
}

typedef struct {
	const char *name;
	int idx;
} name_idx_t;

static int cmp_name_idx(const void *a, const void *b)
{
	return strcmp(((const name_idx_t *)a)->name, ((const name_idx_t *)b)->name);
}

/* Sorted host index for hm_topo_host_index (binary search, no O(n) scans). */
static hm_rc_t build_host_order(hm_topo_t *t, hm_err_t *err)
{
	name_idx_t *tmp;

	if (t->nhosts == 0)
		return HM_OK;
	tmp = malloc((size_t)t->nhosts * sizeof(*tmp));
	t->host_order = malloc((size_t)t->nhosts * sizeof(int));
	if (!tmp || !t->host_order) {
		free(tmp);
		return hm_err_set(err, HM_ERR_NOMEM, "out of memory");
	}
	for (int i = 0; i < t->nhosts; i++)
		tmp[i] = (name_idx_t){t->hosts[i].name, i};
	/* Names are unique (the builder checked), so the order is total. */
	qsort(tmp, (size_t)t->nhosts, sizeof(*tmp), cmp_name_idx);
	for (int i = 0; i < t->nhosts; i++)
		t->host_order[i] = tmp[i].idx;
	free(tmp);
	return HM_OK;
}

static int add_link(hm_topo_t *t, hm_link_kind_t kind, double bps, int rack, int level, int host,
		    int lower, int upper)
{
	hm_link_t *l = &t->links[t->nlinks];

	l->kind = kind;
	l->capacity_bps = bps;
	l->rack = rack;
	l->level = level;
	l->host = host;
	l->lower = lower;
	l->upper = upper;
	return t->nlinks++;
}

hm_rc_t hm_tb_finish(hm_tb_t *b, hm_topo_t **out, hm_err_t *err)
{
	hm_topo_t *t = NULL;
	int *level = NULL, *perm = NULL, *inv = NULL;
	int nlevels = 0, nlinks = 0, next = 0;
	hm_rc_t rc = HM_OK;

	*out = NULL;
	if (b->nsw == 0 || b->nhosts == 0) {
		rc = hm_err_set(err, HM_ERR_PARSE, "%s: no %s defined", b->fname,
				b->nsw == 0 ? "switches" : "hosts");
		goto out;
	}
	level = malloc((size_t)b->nsw * sizeof(int));
	perm = malloc((size_t)b->nsw * sizeof(int)); /* new index -> builder index */
	inv = malloc((size_t)b->nsw * sizeof(int));  /* builder index -> new index */
	t = calloc(1, sizeof(*t));
	if (!level || !perm || !inv || !t) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
		goto out;
	}
	rc = derive_levels(b, level, &nlevels, err);
	if (rc)
		goto out;
	rc = check_connected(b, err);
	if (rc)
		goto out;
	/* Switches ordered by level, so ToRs come first and rack id == switch index. */
	for (int l = 0; l < nlevels; l++)
		for (int i = 0; i < b->nsw; i++)
			if (level[i] == l) {
				inv[i] = next;
				perm[next++] = i;
			}
	for (int i = 0; i < b->nhosts; i++)
		nlinks += 2 * b->hosts[i].nics;
	for (int i = 0; i < b->nsw; i++)
		nlinks += 2 * b->sw[i].nparents;
	t->nlevels = nlevels;
	t->hosts = calloc((size_t)b->nhosts, sizeof(*t->hosts));
	t->switches = calloc((size_t)b->nsw, sizeof(*t->switches));
	t->links = calloc((size_t)nlinks, sizeof(*t->links));
	if (!t->hosts || !t->switches || !t->links) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory for %d links", b->fname,
				nlinks);
		goto out;
	}
	/* Switches: take over names and parent lists. */
	t->nswitches = b->nsw;
	for (int n = 0; n < b->nsw; n++) {
		tb_switch_t *s = &b->sw[perm[n]];
		hm_switch_t *d = &t->switches[n];

		d->name = s->name;
		s->name = NULL;
		d->level = level[perm[n]];
		d->rack = d->level == 0 ? n : -1;
		if (d->level == 0)
			t->nracks++;
		d->nparents = s->nparents;
		d->parents = s->parents;
		s->parents = NULL;
		s->nparents = 0;
		for (int k = 0; k < d->nparents; k++)
			d->parents[k] = inv[d->parents[k]];
		d->up_link = calloc((size_t)d->nparents + 1, sizeof(int));
		d->down_link = calloc((size_t)d->nparents + 1, sizeof(int));
		if (!d->up_link || !d->down_link) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
			goto out;
		}
	}
	t->rack_switch = malloc((size_t)t->nracks * sizeof(int));
	if (!t->rack_switch) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", b->fname);
		goto out;
	}
	for (int r = 0; r < t->nracks; r++)
		t->rack_switch[r] = r;
	/* Hosts and their NIC links (owned by the host's rack). */
	t->nhosts = b->nhosts;
	for (int i = 0; i < b->nhosts; i++) {
		tb_host_t *s = &b->hosts[i];
		hm_host_t *h = &t->hosts[i];

		h->name = s->name;
		s->name = NULL;
		h->rack = inv[s->tor];
		h->gpus = s->gpus;
		h->nics = s->nics;
		h->nic_bps = s->nic_bps;
		for (int g = 0; g < HM_MAX_GPUS_PER_HOST; g++)
			h->gpu_nic[g] = g % h->nics;
		for (int k = 0; k < h->nics; k++) {
			h->nic_up_link[k] =
			    add_link(t, HM_LINK_NIC_UP, h->nic_bps, h->rack, 0, i, -1, h->rack);
			h->nic_down_link[k] =
			    add_link(t, HM_LINK_NIC_DOWN, h->nic_bps, h->rack, 0, i, -1, h->rack);
		}
	}
	/* Switch links: a ToR's uplinks belong to its rack, higher ones to nobody. */
	for (int n = 0; n < t->nswitches; n++) {
		hm_switch_t *d = &t->switches[n];
		double bps = b->sw[perm[n]].uplink_bps > 0 ? b->sw[perm[n]].uplink_bps
							   : b->default_uplink_bps;
		int rack = d->level == 0 ? d->rack : -1;

		for (int k = 0; k < d->nparents; k++) {
			int p = d->parents[k];
			int lvl = t->switches[p].level; /* link level = upper end's level */

			d->up_link[k] = add_link(t, HM_LINK_SW_UP, bps, rack, lvl, -1, n, p);
			d->down_link[k] = add_link(t, HM_LINK_SW_DOWN, bps, rack, lvl, -1, n, p);
		}
	}
	rc = build_host_order(t, err);
	if (rc)
		goto out;
	*out = t;
	t = NULL;
out:
	hm_topo_free(t);
	free(level);
	free(perm);
	free(inv);
	return rc;
}

void hm_topo_opts_resolve(const hm_topo_opts_t *in, hm_topo_opts_t *out)
{
	if (in)
		*out = *in;
	else
		memset(out, 0, sizeof(*out));
	if (!(out->nic_bps > 0))
		out->nic_bps = HM_DEFAULT_NIC_BPS;
	if (!(out->uplink_bps > 0))
		out->uplink_bps = HM_DEFAULT_UPLINK_BPS;
	if (out->gpus_per_host <= 0)
		out->gpus_per_host = HM_DEFAULT_GPUS_PER_HOST;
	if (out->nics_per_host <= 0)
		out->nics_per_host = HM_DEFAULT_NICS_PER_HOST;
	if (!out->col_host)
		out->col_host = "host";
	if (!out->col_tor)
		out->col_tor = "tor";
	if (!out->col_agg)
		out->col_agg = "agg";
	if (!out->col_core)
		out->col_core = "core";
}

hm_rc_t hm_topo_read_line(FILE *f, const char *fname, int lineno, char **buf, size_t *cap,
			  char **line, hm_err_t *err)
{
	ssize_t n;

	*line = NULL;
	errno = 0;
	n = getline(buf, cap, f);
	if (n < 0) {
		if (ferror(f))
			return hm_err_set(err, HM_ERR_IO, "%s:%d: read error: %s", fname, lineno,
					  strerror(errno ? errno : EIO));
		return HM_OK;
	}
	if (n > HM_TOPO_MAX_LINE)
		return hm_err_set(err, HM_ERR_PARSE,
				  "%s:%d: line of %zd bytes, at most %d accepted", fname, lineno, n,
				  HM_TOPO_MAX_LINE);
	while (n > 0 && ((*buf)[n - 1] == '\n' || (*buf)[n - 1] == '\r'))
		(*buf)[--n] = '\0';
	for (ssize_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)(*buf)[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return hm_err_set(err, HM_ERR_PARSE,
					  "%s:%d: byte 0x%02x at column %zd: not a text file "
					  "(control bytes are not accepted)",
					  fname, lineno, c, i + 1);
	}
	*line = *buf;
	return HM_OK;
}
