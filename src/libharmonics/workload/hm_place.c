/*
 * hm_place.c - free GPUs per host and the default placement every policy starts
 * from (docs/workloads.md, "Default placement"). It follows Slurm's cons_tres
 * with topology/tree for a job asking for N GPUs:
 *
 *   1. N fits in one host (N <= the largest host): the first host in index order
 *      with N free GPUs (as a job submitted with --nodes=1); none free: queue.
 *   2. Else one rack: among racks that can hold it, the one needing the fewest
 *      hosts, then the tightest (fewest free GPUs, Slurm's best-fit switch),
 *      then the lowest index.
 *   3. Else the fewest racks (most free GPUs first, then index order).
 *   Hosts are taken most-free first (fewest hosts; ties by index), each filled
 *   before the next; the ring order is rack index, then host index.
 *
 * A job with a fixed nodes list gets its GPUs spread evenly over those hosts in
 * the listed order (the first N mod H hosts get one more).
 */
#include "hm_job.h"
#include "hm_hostlist.h"
#include "hm_job_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hm_rc_t hm_cluster_state_init(hm_cluster_state_t *cs, const hm_topo_t *t)
{
	if (!cs)
		return HM_ERR_INVAL;
	memset(cs, 0, sizeof(*cs));
	if (!t || t->nhosts < 1)
		return HM_ERR_INVAL;
	cs->free_gpus = calloc((size_t)t->nhosts, sizeof(*cs->free_gpus));
	if (!cs->free_gpus)
		return HM_ERR_NOMEM;
	for (int h = 0; h < t->nhosts; h++)
		cs->free_gpus[h] = t->hosts[h].gpus > 0 ? t->hosts[h].gpus : 0;
	cs->topo = t;
	return HM_OK;
}

void hm_cluster_state_free(hm_cluster_state_t *cs)
{
	if (!cs)
		return;
	free(cs->free_gpus);
	cs->free_gpus = NULL;
	cs->topo = NULL;
}

void hm_place_release(hm_cluster_state_t *cs, const hm_placement_t *p)
{
	if (!cs || !cs->free_gpus || !p)
		return;
	for (int s = 0; s < p->nslots; s++) {
		int h = p->slots[s].host;

		if (h < 0 || h >= cs->topo->nhosts)
			continue;
		cs->free_gpus[h] += p->slots[s].gpus;
		if (cs->free_gpus[h] > cs->topo->hosts[h].gpus)
			cs->free_gpus[h] = cs->topo->hosts[h].gpus;
	}
}

/* Rack id of host h: hm_host_t.rack is the rack id (see rack_switch). */
static int host_rack(const hm_topo_t *t, int h)
{
	int r = t->hosts[h].rack;

	return r >= 0 && r < t->nracks ? r : 0;
}

static const char *job_label(const hm_job_t *job, char *buf, size_t len)
{
	if (job->name[0])
		return hm_job_quote(job->name, buf, len);
	snprintf(buf, len, "#%d", job->id);
	return buf;
}

/* Insertion sorts with an explicit context (no globals, so placements on different
 * cluster states may run on different threads); lists are a rack or a cluster of hosts. */
static bool more_free(const int *free_gpus, int x, int y)
{
	return free_gpus[x] != free_gpus[y] ? free_gpus[x] > free_gpus[y] : x < y;
}

static void sort_most_free(const int *free_gpus, int *v, int n)
{
	for (int i = 1; i < n; i++) {
		int x = v[i], j = i;

		for (; j > 0 && more_free(free_gpus, x, v[j - 1]); j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Ring order: rack id, then host index. */
static bool ring_before(const hm_topo_t *t, const hm_slot_t *x, const hm_slot_t *y)
{
	int rx = host_rack(t, x->host), ry = host_rack(t, y->host);

	return rx != ry ? rx < ry : x->host < y->host;
}

static void sort_ring(const hm_topo_t *t, hm_slot_t *v, int n)
{
	for (int i = 1; i < n; i++) {
		hm_slot_t x = v[i];
		int j = i;

		for (; j > 0 && ring_before(t, &x, &v[j - 1]); j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/*
 * Hosts of cand[0..ncand) sorted most-free first; count how many cover `need`.
 * Returns that count, or 0 when they cannot. cand is reordered.
 */
static int hosts_needed(const int *free_gpus, int *cand, int ncand, int need)
{
	int sum = 0;

	sort_most_free(free_gpus, cand, ncand);
	for (int i = 0; i < ncand && free_gpus[cand[i]] > 0; i++) {
		sum += free_gpus[cand[i]];
		if (sum >= need)
			return i + 1;
	}
	return 0;
}

/* Take the first n hosts of cand (most free first) for `need` GPUs into out, ring ordered. */
static hm_rc_t take_hosts(hm_cluster_state_t *cs, const int *cand, int n, int need,
			  hm_placement_t *out, hm_err_t *err)
{
	out->slots = calloc((size_t)n, sizeof(*out->slots));
	if (!out->slots)
		return hm_err_set(err, HM_ERR_NOMEM, "placement: out of memory");
	for (int i = 0; i < n; i++) {
		int h = cand[i], g = cs->free_gpus[h] < need ? cs->free_gpus[h] : need;

		out->slots[i].host = h;
		out->slots[i].gpus = g;
		need -= g;
	}
	out->nslots = n;
	sort_ring(cs->topo, out->slots, n);
	return HM_OK;
}

static hm_rc_t place_fixed(hm_cluster_state_t *cs, const hm_job_t *job, hm_placement_t *out,
			   hm_err_t *err)
{
	const hm_topo_t *t = cs->topo;
	char **names = NULL, lbl[80], q[80];
	int n = 0;
	hm_rc_t rc;

	rc = hm_hostlist_expand(job->nodes, &names, &n, err);
	if (rc != HM_OK) {
		hm_err_prefix(err, "job %s nodes", job_label(job, lbl, sizeof(lbl)));
		rc = HM_ERR_INVAL;
		goto out;
	}
	if (n < 1 || n > job->gpus) {
		rc = hm_err_set(
		    err, HM_ERR_INVAL,
		    "job %s: nodes '%s' lists %d hosts for %d GPUs; accepted 1..%d hosts "
		    "(each host gets at least one GPU)",
		    job_label(job, lbl, sizeof(lbl)), hm_job_quote(job->nodes, q, sizeof(q)), n,
		    job->gpus, job->gpus);
		goto out;
	}
	out->slots = calloc((size_t)n, sizeof(*out->slots));
	if (!out->slots) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "placement: out of memory");
		goto out;
	}
	out->nslots = n;
	for (int i = 0; i < n; i++) {
		int h = hm_topo_host_index(t, names[i]);
		int g = job->gpus / n + (i < job->gpus % n);

		if (h < 0) {
			rc = hm_err_set(
			    err, HM_ERR_INVAL,
			    "job %s: nodes names unknown host '%s' (not in the topology)",
			    job_label(job, lbl, sizeof(lbl)), hm_job_quote(names[i], q, sizeof(q)));
			goto out;
		}
		for (int o = 0; o < i; o++)
			if (out->slots[o].host == h) {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"job %s: nodes lists host '%s' twice",
						job_label(job, lbl, sizeof(lbl)), names[i]);
				goto out;
			}
		if (g > t->hosts[h].gpus) {
			rc = hm_err_set(
			    err, HM_ERR_INVAL, "job %s: host '%s' would need %d GPUs but has %d",
			    job_label(job, lbl, sizeof(lbl)), names[i], g, t->hosts[h].gpus);
			goto out;
		}
		out->slots[i].host = h;
		out->slots[i].gpus = g;
	}
	for (int i = 0; i < n; i++)
		if (cs->free_gpus[out->slots[i].host] < out->slots[i].gpus) {
			rc = hm_err_set(err, HM_ERR_PLACE,
					"job %s: host '%s' has %d free GPUs, needs %d",
					job_label(job, lbl, sizeof(lbl)), names[i],
					cs->free_gpus[out->slots[i].host], out->slots[i].gpus);
			goto out;
		}
out:
	hm_hostlist_free(names, n);
	return rc;
}

/* Default placement of a job larger than a host. */
static hm_rc_t place_multi(hm_cluster_state_t *cs, const hm_job_t *job, int *cand, int *rack_free,
			   hm_placement_t *out, hm_err_t *err)
{
	const hm_topo_t *t = cs->topo;
	int best_rack = -1, best_hosts = 0, best_free = 0, ncand, nracks = 0, need = job->gpus;
	int nr = t->nracks > 0 ? t->nracks : 1; /* no switches: one rack of every host */
	int *racks = NULL;
	char lbl[80];
	hm_rc_t rc = HM_OK;

	for (int r = 0; r < nr; r++) {
		int n;

		ncand = 0;
		for (int h = 0; h < t->nhosts; h++)
			if (host_rack(t, h) == r)
				cand[ncand++] = h;
		n = hosts_needed(cs->free_gpus, cand, ncand, need);
		rack_free[r] = 0;
		for (int i = 0; i < ncand; i++)
			rack_free[r] += cs->free_gpus[cand[i]];
		if (n && (best_rack < 0 || n < best_hosts ||
			  (n == best_hosts && rack_free[r] < best_free))) {
			best_rack = r;
			best_hosts = n;
			best_free = rack_free[r];
		}
	}
	if (best_rack >= 0) {
		ncand = 0;
		for (int h = 0; h < t->nhosts; h++)
			if (host_rack(t, h) == best_rack)
				cand[ncand++] = h;
		hosts_needed(cs->free_gpus, cand, ncand, need);
		return take_hosts(cs, cand, best_hosts, need, out, err);
	}
	/* Fewest racks: most free first. */
	racks = malloc((size_t)nr * sizeof(*racks));
	if (!racks)
		return hm_err_set(err, HM_ERR_NOMEM, "placement: out of memory");
	for (int r = 0; r < nr; r++)
		racks[r] = r;
	nracks = hosts_needed(rack_free, racks, nr, need);
	if (!nracks) {
		rc = hm_err_set(err, HM_ERR_PLACE, "job %s: %d GPUs requested, not enough free now",
				job_label(job, lbl, sizeof(lbl)), need);
		goto out;
	}
	ncand = 0;
	for (int h = 0; h < t->nhosts; h++)
		for (int i = 0; i < nracks; i++)
			if (host_rack(t, h) == racks[i]) {
				cand[ncand++] = h;
				break;
			}
	rc = take_hosts(cs, cand, hosts_needed(cs->free_gpus, cand, ncand, need), need, out, err);
out:
	free(racks);
	return rc;
}

hm_rc_t hm_place_default(hm_cluster_state_t *cs, const hm_job_t *job, hm_placement_t *out,
			 hm_err_t *err)
{
	const hm_topo_t *t;
	int total = 0, max_host = 0, *cand = NULL, *rack_free = NULL;
	char lbl[80];
	hm_rc_t rc = HM_OK;

	if (!out)
		return hm_err_set(err, HM_ERR_INVAL, "hm_place_default: NULL output");
	memset(out, 0, sizeof(*out));
	if (!cs || !cs->topo || !cs->free_gpus || !job)
		return hm_err_set(err, HM_ERR_INVAL, "hm_place_default: NULL cluster state or job");
	t = cs->topo;
	if (job->gpus < 1)
		return hm_err_set(err, HM_ERR_INVAL, "job %s: %d GPUs, accepted >= 1",
				  job_label(job, lbl, sizeof(lbl)), job->gpus);
	if (job->nodes) {
		rc = place_fixed(cs, job, out, err);
		goto out;
	}
	for (int h = 0; h < t->nhosts; h++) {
		total += t->hosts[h].gpus;
		if (t->hosts[h].gpus > max_host)
			max_host = t->hosts[h].gpus;
	}
	if (job->gpus > total) {
		rc = hm_err_set(err, HM_ERR_INVAL,
				"job %s: %d GPUs requested, the cluster has %d; accepted 1..%d",
				job_label(job, lbl, sizeof(lbl)), job->gpus, total, total);
		goto out;
	}
	if (job->gpus <= max_host) {
		for (int h = 0; h < t->nhosts; h++)
			if (cs->free_gpus[h] >= job->gpus) {
				out->slots = calloc(1, sizeof(*out->slots));
				if (!out->slots) {
					rc = hm_err_set(err, HM_ERR_NOMEM,
							"placement: out of memory");
					goto out;
				}
				out->nslots = 1;
				out->slots[0].host = h;
				out->slots[0].gpus = job->gpus;
				goto out;
			}
		rc = hm_err_set(err, HM_ERR_PLACE, "job %s: no host has %d free GPUs now",
				job_label(job, lbl, sizeof(lbl)), job->gpus);
		goto out;
	}
	cand = malloc((size_t)t->nhosts * sizeof(*cand));
	rack_free = calloc((size_t)(t->nracks > 0 ? t->nracks : 1), sizeof(*rack_free));
	if (!cand || !rack_free) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "placement: out of memory");
		goto out;
	}
	rc = place_multi(cs, job, cand, rack_free, out, err);
out:
	free(cand);
	free(rack_free);
	if (rc == HM_OK) {
		for (int s = 0; s < out->nslots; s++)
			cs->free_gpus[out->slots[s].host] -= out->slots[s].gpus;
	} else {
		hm_placement_free(out);
	}
	return rc;
}
