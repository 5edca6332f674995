/*
 * hm_traffic.c - the link loads a placed job puts on the network, and its
 * contention-free iteration time. Formulas (docs/models.md, "Traffic"):
 *
 *   N GPUs over H hosts h0..h(H-1) in ring order; S = the phase's buffer bytes.
 *   Ring collectives use the host ring h0->h1->...->h(H-1)->h0; per ring edge:
 *     all-reduce            2(N-1)/N * S
 *     reduce-scatter        (N-1)/N * S
 *     all-gather            (N-1)/N * S
 *     broadcast (pipelined) S
 *   All-to-all: every GPU sends S/N to every other GPU, so host a sends
 *   g_a * g_b * S / N to host b. It is modelled as g_a * g_b GPU-pair flows per
 *   NIC rail (one connection per GPU pair, as NCCL opens them), each carrying
 *   S / (N * k) bytes.
 *
 *   NIC rails: a slot's GPUs are the first `gpus` GPUs of its host, which use
 *   the NICs hm_host_t.gpu_nic names. k = the fewest distinct NICs any of the
 *   job's hosts uses; host-to-host traffic is split into k parallel flows, rail
 *   i from the i-th NIC (ascending) of the sender to the i-th NIC of the
 *   receiver, each carrying edge_bytes / k.
 *
 *   H == 1: everything stays inside the host (NVLink/PCIe, not modelled), so a
 *   phase has no flows and takes no time.
 *
 * The flows of a phase are coupled (a ring advances at its slowest edge), so
 * alone on an idle network every flow runs at the max-min rate of its most
 * loaded link: alone_comm_s = max over links (flows * flow_bytes * 8 / capacity).
 */
#include "hm_job.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void hm_traffic_free(hm_traffic_t *tr)
{
	if (!tr)
		return;
	for (int p = 0; p < HM_MAX_PHASES; p++) {
		free(tr->phases[p].links);
		free(tr->phases[p].flows);
		tr->phases[p].links = NULL;
		tr->phases[p].flows = NULL;
		tr->phases[p].nlinks = 0;
	}
	tr->nphases = 0;
}

static hm_rc_t check_profile(const hm_profile_t *prof, hm_err_t *err)
{
	if (!(prof->compute_s >= 0) || !isfinite(prof->compute_s))
		return hm_err_set(err, HM_ERR_INVAL,
				  "profile '%s': compute_s %g is not a finite number >= 0",
				  prof->model, prof->compute_s);
	if (prof->nphases < 0 || prof->nphases > HM_MAX_PHASES)
		return hm_err_set(err, HM_ERR_INVAL, "profile '%s': %d phases, accepted 0..%d",
				  prof->model, prof->nphases, HM_MAX_PHASES);
	for (int p = 0; p < prof->nphases; p++) {
		const hm_phase_t *ph = &prof->phases[p];

		if ((unsigned)ph->coll >= HM_COLL__COUNT)
			return hm_err_set(
			    err, HM_ERR_INVAL,
			    "profile '%s' phase %d: unknown collective %d, accepted 0..%d",
			    prof->model, p, (int)ph->coll, HM_COLL__COUNT - 1);
		if (!(ph->bytes >= 0) || !isfinite(ph->bytes))
			return hm_err_set(
			    err, HM_ERR_INVAL,
			    "profile '%s' phase %d: bytes %g is not a finite number >= 0",
			    prof->model, p, ph->bytes);
		if (!(ph->overlap >= 0 && ph->overlap <= 1))
			return hm_err_set(err, HM_ERR_INVAL,
					  "profile '%s' phase %d: overlap %g, accepted [0, 1]",
					  prof->model, p, ph->overlap);
	}
	return HM_OK;
}

/* Distinct NICs (ascending) used by slot sl's GPUs on host h (its mask, else the first
   sl->gpus); returns their count or -1. */
static int slot_nics(const hm_host_t *h, const hm_slot_t *sl, int *nics)
{
	bool used[HM_MAX_NICS_PER_HOST] = {false};
	int n = 0;

	for (int g = 0; g < (sl->gpu_mask ? h->gpus : sl->gpus); g++) {
		int nic = h->gpu_nic[g];

		if (sl->gpu_mask && !(sl->gpu_mask >> g & 1u))
			continue;

		if (nic < 0 || nic >= h->nics)
			return -1;
		used[nic] = true;
	}
	for (int i = 0; i < h->nics; i++)
		if (used[i])
			nics[n++] = i;
	return n;
}

static hm_rc_t check_placement(const hm_topo_t *t, const hm_placement_t *pl, int *ngpus, int *k,
			       int (*nics)[HM_MAX_NICS_PER_HOST], hm_err_t *err)
{
	long total = 0;

	if (!pl || pl->nslots < 1 || !pl->slots)
		return hm_err_set(err, HM_ERR_INVAL, "placement: no hosts");
	*k = HM_MAX_NICS_PER_HOST;
	for (int s = 0; s < pl->nslots; s++) {
		const hm_slot_t *sl = &pl->slots[s];
		const hm_host_t *h;
		int n;

		if (sl->host < 0 || sl->host >= t->nhosts)
			return hm_err_set(err, HM_ERR_INVAL,
					  "placement slot %d: host index %d, accepted 0..%d", s,
					  sl->host, t->nhosts - 1);
		h = &t->hosts[sl->host];
		if (sl->gpus < 1 || sl->gpus > h->gpus || sl->gpus > HM_MAX_GPUS_PER_HOST)
			return hm_err_set(err, HM_ERR_INVAL,
					  "placement slot %d: %d GPUs on host %s, accepted 1..%d",
					  s, sl->gpus, h->name ? h->name : "?", h->gpus);
		if (h->nics < 1 || h->nics > HM_MAX_NICS_PER_HOST)
			return hm_err_set(err, HM_ERR_INVAL, "host %s: %d NICs, accepted 1..%d",
					  h->name ? h->name : "?", h->nics, HM_MAX_NICS_PER_HOST);
		for (int o = 0; o < s; o++)
			if (pl->slots[o].host == sl->host)
				return hm_err_set(
				    err, HM_ERR_INVAL,
				    "placement: host %s appears twice (slots %d and %d)",
				    h->name ? h->name : "?", o, s);
		if (sl->gpu_mask && (__builtin_popcount(sl->gpu_mask) != sl->gpus ||
				     sl->gpu_mask >> h->gpus))
			return hm_err_set(err, HM_ERR_INVAL,
					  "placement slot %d: GPU mask 0x%x on host %s, accepted %d of "
					  "GPUs 0..%d",
					  s, sl->gpu_mask, h->name ? h->name : "?", sl->gpus,
					  h->gpus - 1);
		n = slot_nics(h, sl, nics[s]);
		if (n < 1)
			return hm_err_set(err, HM_ERR_INVAL,
					  "host %s: a GPU maps to a NIC outside 0..%d (gpu_nic)",
					  h->name ? h->name : "?", h->nics - 1);
		if (n < *k)
			*k = n;
		total += sl->gpus;
	}
	*ngpus = (int)total;
	return HM_OK;
}

/* Add `w` flows along the route of one rail to the per-link counters. */
static hm_rc_t add_route(const hm_topo_t *t, int plane, int a, int nic_a, int b, int nic_b,
			 int path_idx, long long w, long long *count, hm_err_t *err)
{
	int links[HM_MAX_ROUTE_LINKS];
	int n = hm_topo_route_plane(t, plane, a, nic_a, b, nic_b, path_idx, links);

	if (n < 0 || n > HM_MAX_ROUTE_LINKS)
		return hm_err_set(err, HM_ERR_INVAL, "no route from host %s to host %s%s%s",
				  t->hosts[a].name ? t->hosts[a].name : "?",
				  t->hosts[b].name ? t->hosts[b].name : "?",
				  plane ? " in topology " : "",
				  plane ? hm_topo_plane_name(t, plane) : "");
	for (int i = 0; i < n; i++) {
		if (links[i] < 0 || links[i] >= t->nlinks)
			return hm_err_set(
			    err, HM_ERR_INVAL, "route %s -> %s: link id %d outside 0..%d",
			    t->hosts[a].name ? t->hosts[a].name : "?",
			    t->hosts[b].name ? t->hosts[b].name : "?", links[i], t->nlinks - 1);
		count[links[i]] += w;
	}
	return HM_OK;
}

/* Per-edge bytes of a ring collective of S bytes over N GPUs. */
static double ring_edge_bytes(hm_coll_t coll, double s, int n)
{
	double frac = (double)(n - 1) / n;

	switch (coll) {
	case HM_COLL_ALLREDUCE_RING:
		return 2 * frac * s;
	case HM_COLL_REDUCESCATTER_RING:
	case HM_COLL_ALLGATHER_RING:
		return frac * s;
	case HM_COLL_BROADCAST_RING:
		return s;
	default:
		return 0;
	}
}

static hm_rc_t derive_phase(const hm_topo_t *t, int plane, const hm_phase_t *ph,
			    const hm_placement_t *pl, int ngpus, int k,
			    int (*nics)[HM_MAX_NICS_PER_HOST], int path_idx, long long *count,
			    hm_phase_load_t *out, hm_err_t *err)
{
	int h = pl->nslots, nl = 0;
	long long nflows = 0;
	hm_rc_t rc = HM_OK;

	memset(count, 0, (size_t)t->nlinks * sizeof(*count));
	if (ph->coll == HM_COLL_ALLTOALL) {
		out->flow_bytes = ph->bytes / ((double)ngpus * k);
		for (int a = 0; a < h; a++)
			for (int b = 0; b < h; b++) {
				long long w = (long long)pl->slots[a].gpus * pl->slots[b].gpus;

				if (a == b)
					continue;
				for (int i = 0; i < k && rc == HM_OK; i++)
					rc = add_route(t, plane, pl->slots[a].host, nics[a][i],
						       pl->slots[b].host, nics[b][i], path_idx, w,
						       count, err);
				if (rc != HM_OK)
					return rc;
				nflows += w * k;
			}
	} else {
		out->flow_bytes = ring_edge_bytes(ph->coll, ph->bytes, ngpus) / k;
		for (int e = 0; e < h; e++) {
			int a = e, b = (e + 1) % h;

			for (int i = 0; i < k && rc == HM_OK; i++)
				rc = add_route(t, plane, pl->slots[a].host, nics[a][i],
					       pl->slots[b].host, nics[b][i], path_idx, 1, count,
					       err);
			if (rc != HM_OK)
				return rc;
			nflows += k;
		}
	}
	for (int l = 0; l < t->nlinks; l++) {
		if (count[l] > INT_MAX || nflows > INT_MAX)
			return hm_err_set(err, HM_ERR_RANGE,
					  "traffic: more than %d flows on one phase", INT_MAX);
		if (count[l] > 0 && !(t->links[l].capacity_bps > 0))
			return hm_err_set(err, HM_ERR_INVAL,
					  "traffic: link %d has capacity %g bit/s, accepted > 0", l,
					  t->links[l].capacity_bps);
		nl += count[l] > 0;
	}
	out->nflows = (int)nflows;
	out->links = malloc((size_t)(nl ? nl : 1) * sizeof(int));
	out->flows = malloc((size_t)(nl ? nl : 1) * sizeof(int));
	if (!out->links || !out->flows)
		return hm_err_set(err, HM_ERR_NOMEM, "traffic: out of memory for %d links", nl);
	for (int l = 0; l < t->nlinks; l++)
		if (count[l] > 0) {
			out->links[out->nlinks] = l;
			out->flows[out->nlinks] = (int)count[l];
			out->nlinks++;
		}
	return HM_OK;
}

/* Time of one phase alone: its flows at the max-min rate of its busiest link. */
static double phase_alone_s(const hm_topo_t *t, const hm_phase_load_t *ld)
{
	double worst = 0;

	for (int i = 0; i < ld->nlinks; i++) {
		double cap, s;

		if (ld->links[i] < 0 || ld->links[i] >= t->nlinks)
			continue; /* not this topology's link: hm_traffic_derive never writes one */
		cap = t->links[ld->links[i]].capacity_bps;
		if (!(cap > 0))
			return HUGE_VAL;
		s = ld->flows[i] * ld->flow_bytes * 8 / cap;

		if (s > worst)
			worst = s;
	}
	return worst;
}

/* The iteration model of hm_job.h given each phase's duration. */
static double iteration_s(const hm_profile_t *prof, const double *comm_s, int nphases)
{
	double end = 0, c = prof->compute_s;

	for (int p = 0; p < nphases; p++) {
		double start = (1 - prof->phases[p].overlap) * c;

		if (start < end)
			start = end;
		end = start + comm_s[p];
	}
	return end > c ? end : c;
}

double hm_traffic_alone_iter_s(const hm_topo_t *t, const hm_profile_t *prof, const hm_traffic_t *tr)
{
	double comm_s[HM_MAX_PHASES] = {0};
	int n;

	if (!prof)
		return 0;
	n = prof->nphases < HM_MAX_PHASES ? prof->nphases : HM_MAX_PHASES;
	if (t && tr)
		for (int p = 0; p < n && p < tr->nphases; p++)
			comm_s[p] = phase_alone_s(t, &tr->phases[p]);
	return iteration_s(prof, comm_s, n < 0 ? 0 : n);
}

double hm_traffic_alone_burst_s(const hm_profile_t *prof, const hm_traffic_t *tr)
{
	double first, end = 0, c;
	int n;

	if (!prof || !tr || prof->nphases < 1)
		return 0;
	c = prof->compute_s;
	n = prof->nphases < tr->nphases ? prof->nphases : tr->nphases;
	n = n < HM_MAX_PHASES ? n : HM_MAX_PHASES;
	first = (1 - prof->phases[0].overlap) * c;
	for (int p = 0; p < n; p++) {
		double start = (1 - prof->phases[p].overlap) * c;

		if (start < end)
			start = end;
		end = start + tr->alone_comm_s[p];
	}
	return n > 0 && end > first ? end - first : 0;
}

hm_rc_t hm_traffic_derive(const hm_topo_t *t, const hm_profile_t *prof, const hm_placement_t *pl,
			  int path_idx, hm_traffic_t *out, hm_err_t *err)
{
	return hm_traffic_derive_plane(t, 0, prof, pl, path_idx, out, err);
}

hm_rc_t hm_traffic_derive_plane(const hm_topo_t *t, int plane, const hm_profile_t *prof,
				const hm_placement_t *pl, int path_idx, hm_traffic_t *out,
				hm_err_t *err)
{
	int(*nics)[HM_MAX_NICS_PER_HOST] = NULL; /* per slot: its distinct NICs */
	long long *count = NULL;
	int ngpus = 0, k = 0;
	hm_rc_t rc;

	if (!out)
		return hm_err_set(err, HM_ERR_INVAL, "hm_traffic_derive: NULL output");
	memset(out, 0, sizeof(*out));
	if (!t || !prof || !pl)
		return hm_err_set(err, HM_ERR_INVAL,
				  "hm_traffic_derive: NULL topology/profile/placement");
	if (path_idx < 0)
		return hm_err_set(err, HM_ERR_INVAL, "traffic: path index %d, accepted >= 0",
				  path_idx);
	rc = check_profile(prof, err);
	if (rc != HM_OK)
		goto out;
	if (pl->nslots > t->nhosts) {
		rc = hm_err_set(err, HM_ERR_INVAL, "placement: %d slots on a %d-host topology",
				pl->nslots, t->nhosts);
		goto out;
	}
	nics = calloc((size_t)(pl->nslots > 0 ? pl->nslots : 1), sizeof(*nics));
	if (!nics) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "traffic: out of memory");
		goto out;
	}
	rc = check_placement(t, pl, &ngpus, &k, nics, err);
	if (rc != HM_OK)
		goto out;
	out->nphases = prof->nphases;
	if (pl->nslots > 1) {
		count = malloc((size_t)(t->nlinks ? t->nlinks : 1) * sizeof(*count));
		if (!count) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "traffic: out of memory");
			goto out;
		}
		for (int p = 0; p < prof->nphases; p++) {
			rc = derive_phase(t, plane, &prof->phases[p], pl, ngpus, k, nics, path_idx,
					  count, &out->phases[p], err);
			if (rc != HM_OK)
				goto out;
			out->alone_comm_s[p] = phase_alone_s(t, &out->phases[p]);
		}
	}
	out->alone_iter_s = iteration_s(prof, out->alone_comm_s, prof->nphases);
out:
	free(count);
	free(nics);
	if (rc != HM_OK)
		hm_traffic_free(out);
	return rc;
}
