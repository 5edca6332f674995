/*
 * hm_topo_plane.c - several named topologies (topology.yaml, Slurm 25.05+) in
 * one link model: plane 0 is the cluster default with the racks, hosts and
 * NIC links; every other topology is a plane of its own switches and switch
 * links, over the same hosts and NICs (hm_topo.h, hm_topo_plane_t).
 *
 * Why separate switch links: Slurm gives each topology its own plugin and
 * records and never relates the switches of one to those of another, so
 * Harmonics cannot tell which (if any) are the same cable. The NICs are the
 * host's own (hwloc, the node agent), so they are shared by every plane.
 */
#include <stdlib.h>
#include <string.h>

#include "hm_topo.h"
#include "hm_topo_build.h"

int hm_topo_plane_index(const hm_topo_t *t, const char *name)
{
	if (!name || !*name || !t || t->nplanes == 0 || !t->planes)
		return 0;
	for (int i = 0; i < t->nplanes; i++)
		if (strcmp(t->planes[i].name, name) == 0)
			return i;
	return -1;
}

const char *hm_topo_plane_name(const hm_topo_t *t, int plane)
{
	if (!t || !t->planes || plane < 0 || plane >= t->nplanes)
		return "";
	return t->planes[plane].name;
}

static hm_rc_t grow(hm_topo_t *t, int nsw, int nlinks, hm_err_t *err)
{
	hm_switch_t *sw = realloc(t->switches, sizeof(*sw) * (size_t)(t->nswitches + nsw + 1));
	hm_link_t *l;

	if (sw)
		t->switches = sw;
	l = sw ? realloc(t->links, sizeof(*l) * (size_t)(t->nlinks + nlinks + 1)) : NULL;
	if (!l)
		return hm_err_set(err, HM_ERR_NOMEM, "topology planes: out of memory");
	t->links = l;
	memset(t->switches + t->nswitches, 0, sizeof(*sw) * (size_t)nsw);
	return HM_OK;
}

/*
 * Append switches first..first+n of s (whose parents lie in the same range)
 * with their up and down links to t, names prefixed with prefix (NULL: as
 * they are). Links keep capacity and level; they belong to no rack.
 */
static hm_rc_t append_switches(hm_topo_t *t, const hm_topo_t *s, int first, int n,
			       const char *prefix, hm_err_t *err)
{
	int base = t->nswitches, nl = 0;
	hm_rc_t rc;

	for (int i = first; i < first + n; i++)
		nl += 2 * s->switches[i].nparents;
	if ((rc = grow(t, n, nl, err)))
		return rc;
	for (int i = 0; i < n; i++) {
		const hm_switch_t *o = &s->switches[first + i];
		hm_switch_t *d = &t->switches[base + i];
		size_t len = strlen(o->name) + (prefix ? strlen(prefix) + 2 : 1);

		t->nswitches++; /* from here hm_topo_free releases it */
		d->level = o->level;
		d->rack = -1;
		d->name = malloc(len);
		d->parents = calloc((size_t)o->nparents + 1, sizeof(int));
		d->up_link = calloc((size_t)o->nparents + 1, sizeof(int));
		d->down_link = calloc((size_t)o->nparents + 1, sizeof(int));
		if (!d->name || !d->parents || !d->up_link || !d->down_link)
			return hm_err_set(err, HM_ERR_NOMEM, "topology planes: out of memory");
		snprintf(d->name, len, "%s%s%s", prefix ? prefix : "", prefix ? "/" : "", o->name);
		d->nparents = o->nparents;
		for (int k = 0; k < o->nparents; k++) {
			const hm_link_t *up = &s->links[o->up_link[k]];
			int parent = base + o->parents[k] - first;

			d->parents[k] = parent;
			for (int dir = 0; dir < 2; dir++) {
				hm_link_t *l = &t->links[t->nlinks];

				*l = (hm_link_t){dir ? HM_LINK_SW_DOWN : HM_LINK_SW_UP,
						 up->capacity_bps,
						 -1,
						 up->level,
						 -1,
						 base + i,
						 parent};
				(dir ? d->down_link : d->up_link)[k] = t->nlinks++;
			}
		}
	}
	return HM_OK;
}

static hm_rc_t plane_new(hm_topo_t *t, const char *name, const char *kind, hm_topo_plane_t **out,
			 hm_err_t *err)
{
	hm_topo_plane_t *p = realloc(t->planes, sizeof(*p) * (size_t)(t->nplanes + 1));

	*out = NULL;
	if (!p)
		return hm_err_set(err, HM_ERR_NOMEM, "topology planes: out of memory");
	t->planes = p;
	p = &t->planes[t->nplanes];
	memset(p, 0, sizeof(*p));
	if (!(p->name = strdup(name ? name : "")))
		return hm_err_set(err, HM_ERR_NOMEM, "topology planes: out of memory");
	snprintf(p->kind, sizeof(p->kind), "%s", kind ? kind : "");
	t->nplanes++;
	*out = p;
	return HM_OK;
}

hm_rc_t hm_topo_plane_add(hm_topo_t *t, const char *first_name, const char *name, const char *kind,
			  const hm_topo_t *p, int *missing, hm_err_t *err)
{
	hm_topo_plane_t *pl;
	bool flat = kind && strcmp(kind, "flat") == 0;
	int first;
	hm_rc_t rc;

	if (missing)
		*missing = 0;
	if (!t || !name || !*name || (!p && !flat))
		return hm_err_set(err, HM_ERR_INVAL, "topology planes: NULL argument");
	if (hm_topo_plane_index(t, name) > 0 ||
	    (t->nplanes > 0 && !strcmp(t->planes[0].name, name)))
		return hm_err_set(err, HM_ERR_INVAL, "topology planes: '%s' added twice", name);
	if (t->nplanes == 0) {
		if ((rc = plane_new(t, first_name ? first_name : "default", "", &pl, err)))
			return rc;
		pl->nswitches = t->nswitches;
	}
	first = t->nswitches;
	if ((rc = plane_new(t, name, kind, &pl, err)))
		return rc;
	if (flat)
		return HM_OK;
	if (!(pl->host_tor = malloc(sizeof(int) * (size_t)(t->nhosts + 1))))
		return hm_err_set(err, HM_ERR_NOMEM, "topology planes: out of memory");
	pl->sw_first = first;
	/* The plane's switches keep their order: ToRs first (index == its rack). */
	if ((rc = append_switches(t, p, 0, p->nswitches, name, err)))
		return rc;
	t->planes[t->nplanes - 1].nswitches = p->nswitches;
	for (int h = 0; h < t->nhosts; h++) {
		int k = hm_topo_host_index(p, t->hosts[h].name);

		t->planes[t->nplanes - 1].host_tor[h] =
		    k >= 0 ? first + p->rack_switch[p->hosts[k].rack] : -1;
	}
	for (int k = 0; k < p->nhosts; k++)
		t->planes[t->nplanes - 1].nmissing += hm_topo_host_index(t, p->hosts[k].name) < 0;
	if (missing)
		*missing = t->planes[t->nplanes - 1].nmissing;
	return HM_OK;
}

/* Used by hm_topo_reshape: n (rebuilt from t's plane 0, hosts in t's order)
 * gets t's other planes again; link ids above n's own are numbered anew. */
hm_rc_t hm_topo_planes_copy(hm_topo_t *n, const hm_topo_t *t, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;

	for (int i = 0; i < t->nplanes && rc == HM_OK; i++) {
		const hm_topo_plane_t *o = &t->planes[i];
		hm_topo_plane_t *d;
		int first = n->nswitches;

		if ((rc = plane_new(n, o->name, o->kind, &d, err)))
			break;
		if (i == 0) {
			d->nswitches = n->nswitches;
			continue;
		}
		if (!o->host_tor)
			continue;
		d->sw_first = first;
		d->nswitches = o->nswitches;
		d->nmissing = o->nmissing;
		if (!(d->host_tor = malloc(sizeof(int) * (size_t)(n->nhosts + 1)))) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "topology planes: out of memory");
			break;
		}
		for (int h = 0; h < n->nhosts; h++)
			d->host_tor[h] = h < t->nhosts && o->host_tor[h] >= 0
					     ? o->host_tor[h] - o->sw_first + first
					     : -1;
		rc = append_switches(n, t, o->sw_first, o->nswitches, NULL, err);
	}
	return rc;
}

void hm_topo_plane_describe(const hm_topo_t *t, int plane, char *buf, size_t len)
{
	const hm_topo_plane_t *p;
	int nodes = 0, tors = 0;
	char miss[160] = "";

	if (!buf || len == 0)
		return;
	if (!t || !t->planes || plane < 0 || plane >= t->nplanes) {
		hm_topo_describe(t, buf, len);
		return;
	}
	p = &t->planes[plane];
	if (plane == 0) {
		snprintf(buf, len, "%s %s: cluster default, %d nodes, %d %s, %d switches", p->name,
			 p->kind, t->nhosts, t->nracks,
			 strcmp(p->kind, "block") == 0 ? "blocks" : "racks", p->nswitches);
		return;
	}
	if (!p->host_tor) {
		snprintf(buf, len, "%s %s: modelled on %s's links", p->name, p->kind,
			 t->planes[0].name);
		return;
	}
	for (int h = 0; h < t->nhosts; h++)
		nodes += p->host_tor[h] >= 0;
	for (int s = p->sw_first; s < p->sw_first + p->nswitches; s++)
		tors += t->switches[s].level == 0;
	/* Nodes outside the default only when there are some (an admin acts on them). */
	if (p->nmissing > 0)
		snprintf(miss, sizeof(miss), " (%d more not in %s: not modelled)", p->nmissing,
			 t->planes[0].name);
	snprintf(buf, len, "%s %s: %d nodes%s, %d %s, %d switches", p->name, p->kind, nodes, miss,
		 tors, strcmp(p->kind, "block") == 0 ? "blocks" : "racks", p->nswitches);
}
