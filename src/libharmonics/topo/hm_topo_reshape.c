/*
 * hm_topo_reshape.c - the same tree with other hosts' GPUs and NICs: what the
 * coordinator builds when node agents report hardware that differs from what
 * topology.conf and harmonics.conf said (a host with 8 NICs, not 1). Switches,
 * their uplinks, the hosts' order and names and the other planes (named
 * topologies) stay; links are numbered anew.
 */
#include <stdlib.h>

#include "hm_topo.h"
#include "hm_topo_build.h"

/* Capacity of switch s's uplinks (0: none, a top switch). */
static double uplink_bps(const hm_topo_t *t, int s)
{
	return t->switches[s].nparents > 0 ? t->links[t->switches[s].up_link[0]].capacity_bps : 0;
}

hm_rc_t hm_topo_reshape(const hm_topo_t *t, const hm_host_t *shape, hm_topo_t **out, hm_err_t *err)
{
	hm_tb_t *b = hm_tb_new("reshape");
	hm_topo_t *n = NULL;
	hm_rc_t rc = HM_OK;
	/* Plane 0's switches; the other planes' are copied after (hm_topo_plane.c). */
	int nsw = t->nplanes > 0 && t->planes ? t->planes[0].nswitches : t->nswitches;

	*out = NULL;
	if (!b)
		return hm_err_set(err, HM_ERR_NOMEM, "reshape: out of memory");
	for (int s = 0; s < nsw && rc == HM_OK; s++) {
		int idx;

		rc = hm_tb_switch_add(b, t->switches[s].name, 0, &idx, err);
		if (rc == HM_OK && uplink_bps(t, s) > 0)
			hm_tb_switch_set_uplink(b, idx, uplink_bps(t, s));
	}
	for (int s = 0; s < nsw && rc == HM_OK; s++)
		for (int p = 0; p < t->switches[s].nparents && rc == HM_OK; p++)
			rc = hm_tb_parent_add(b, s, t->switches[s].parents[p], err);
	for (int h = 0; h < t->nhosts && rc == HM_OK; h++) {
		const hm_host_t *o = &t->hosts[h], *w = shape ? &shape[h] : o;
		int tor = t->rack_switch[o->rack], idx;

		rc = hm_tb_host_add(b, o->name, tor, w->gpus, w->nics, w->nic_bps, &idx, err);
	}
	if (rc == HM_OK)
		rc = hm_tb_finish(b, &n, err);
	for (int h = 0; rc == HM_OK && h < n->nhosts; h++) {
		const hm_host_t *w = shape ? &shape[h] : &t->hosts[h];

		for (int g = 0; g < w->gpus; g++) {
			if (w->gpu_nic[g] < 0 || w->gpu_nic[g] >= w->nics) {
				rc = hm_err_set(err, HM_ERR_RANGE,
						"host %s: GPU %d on NIC %d, accepted 0..%d",
						n->hosts[h].name, g, w->gpu_nic[g], w->nics - 1);
				break;
			}
			n->hosts[h].gpu_nic[g] = w->gpu_nic[g];
		}
	}
	if (rc == HM_OK && t->nplanes > 0)
		rc = hm_topo_planes_copy(n, t, err);
	if (rc == HM_OK) {
		*out = n;
		n = NULL;
	} else {
		hm_err_prefix(err, "reshape");
	}
	hm_topo_free(n);
	hm_tb_free(b);
	return rc;
}
