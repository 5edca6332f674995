/*
 * bench_place: the time select/harmonics_cons_tres adds to one placement
 * (prints numbers, no pass/fail; docs/placement.md).
 *
 * What is timed is the plugin's own work outside cons_tres for one job: the
 * node availability and ring keys (one pass over the nodes), the ranked plan
 * (hm_sel_plan: candidates, their traffic and scores against the live view) and
 * the recording of the choice (its traffic, the overlay entry). cons_tres' two
 * extra calls (the probe and the allocation on the chosen set) are not in it:
 * slurmctld's log line gives them per job ("... us, N of them in cons_tres").
 *
 * Cluster of N nodes: racks of 32 nodes x 8 GPUs, 100 Gbit/s NICs, one ToR
 * uplink of 100 Gbit/s (as in the Slurm test cluster: a ring crossing racks
 * shares it, so candidates differ), pods of 16 racks above 16 racks. About 90%
 * of the nodes run multi-node jobs (2-16 nodes, seeded, half of them
 * staggered), each starting in a random rack and spilling into the next ones
 * (a fragmented cluster: most uplinks carry several jobs). The arriving job
 * asks for 2, 8, 32 or 64 whole nodes (racks hold 32); cons_tres' choice is
 * taken as the first free nodes in index order. Sizes are rounded up to whole
 * pods: 1000 -> 1,024 nodes, 10000 -> 10,240.
 *
 * Columns: the chosen set's score and that of cons_tres' stand-in choice.
 *
 * Usage: bench_place [--nodes N[,N...]] [--repeats R] [--seed S]
 *        (default 1000,10000 nodes, 31 repeats: median, p90, min in us)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_clock.h"
#include "hm_rng.h"
#include "hm_select.h"
#include "hm_sort.h"
#include "hm_topo.h"

#define MAX_SIZES  8
#define RACK_HOSTS 32

static uint64_t rng_state;

static double urand(void)
{
	return hm_rng_unit(&rng_state);
}

static void profile(hm_profile_t *p, double bytes, double compute_s)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->model, sizeof(p->model), "custom");
	p->compute_s = compute_s;
	p->nphases = 1;
	p->phases[0].coll = HM_COLL_ALLREDUCE_RING;
	p->phases[0].bytes = bytes;
}

typedef struct {
	hm_topo_t *t;
	int *free_host; /* 1 = idle node */
	hm_traffic_t *tr;
	hm_lview_job_t *jobs;
	int njobs;
	hm_lview_t *v;
	hm_live_t live;
	int *ring_key;
} cluster_t;

static void cluster_free(cluster_t *c)
{
	hm_lview_free(c->v);
	for (int i = 0; i < c->njobs; i++)
		hm_traffic_free(&c->tr[i]);
	free(c->tr);
	free(c->jobs);
	free(c->free_host);
	free(c->ring_key);
	hm_topo_free(c->t);
	memset(c, 0, sizeof(*c));
}

/* Running jobs until ~90% of the nodes are busy; each spills from a random rack. */
static int cluster_make(int nodes, cluster_t *c, hm_err_t *err)
{
	char spec[160];
	hm_topo_gen_t gen;
	int racks = (nodes + RACK_HOSTS - 1) / RACK_HOSTS, busy = 0, cap;

	memset(c, 0, sizeof(*c));
	if (racks > 16)
		racks = (racks + 15) / 16 * 16;
	snprintf(spec, sizeof(spec), "racks=%d,hosts=%d,gpus=8,nic=100G,uplink=100G%s", racks,
		 RACK_HOSTS, racks > 16 ? ",racks_per_pod=16" : "");
	if (hm_topo_gen_parse(spec, &gen, err) != HM_OK ||
	    hm_topo_generate(&gen, &c->t, err) != HM_OK)
		return -1;
	cap = c->t->nhosts;
	c->free_host = malloc((size_t)cap * sizeof(int));
	c->ring_key = malloc((size_t)cap * sizeof(int));
	c->tr = calloc((size_t)cap, sizeof(hm_traffic_t));
	c->jobs = calloc((size_t)cap, sizeof(hm_lview_job_t));
	if (!c->free_host || !c->ring_key || !c->tr || !c->jobs)
		return -1;
	for (int h = 0; h < cap; h++) {
		c->free_host[h] = 1;
		c->ring_key[h] = h;
	}
	while (busy < cap * 90 / 100) {
		int n = 2 << (int)(urand() * 4), start = (int)(urand() * c->t->nracks) * RACK_HOSTS;
		hm_placement_t pl = {0};
		hm_profile_t prof;
		hm_lview_job_t *j = &c->jobs[c->njobs];

		pl.slots = calloc((size_t)n, sizeof(hm_slot_t));
		if (!pl.slots)
			return -1;
		for (int k = 0; k < cap && pl.nslots < n; k++) {
			int h = (start + k) % cap;

			if (c->free_host[h]) {
				c->free_host[h] = 0;
				pl.slots[pl.nslots++] = (hm_slot_t){h, 8, 0};
			}
		}
		busy += pl.nslots;
		profile(&prof, 0.5e9 + urand() * 2e9, 0.1 + urand() * 0.4);
		if (hm_traffic_derive(c->t, &prof, &pl, 0, &c->tr[c->njobs], err) != HM_OK) {
			hm_placement_free(&pl);
			return -1;
		}
		*j = (hm_lview_job_t){.id = (uint32_t)(c->njobs + 1),
				      .gpus = 8 * pl.nslots,
				      .scheduled = urand() < 0.5,
				      .tr = &c->tr[c->njobs]};
		hm_lview_job_times(&prof, j->tr, &j->period_s, &j->burst_s);
		c->njobs++;
		hm_placement_free(&pl);
	}
	if (hm_lview_build(c->t, c->jobs, c->njobs, &c->v, err) != HM_OK)
		return -1;
	c->live = (hm_live_t){.abi = HM_LIVE_ABI,
			      .size = sizeof(hm_live_t),
			      .topo = c->t,
			      .topo_gen = 1,
			      .view = c->v,
			      .staggers = true};
	return 0;
}

/* One placement as the plugin does it, without cons_tres; its time in us. */
static double place_once(cluster_t *c, const hm_profile_t *prof, int need, int *avail, int *cth,
			 hm_sel_recent_list_t *recent, double *score, double *ct_score, int *ncands)
{
	hm_sel_plan_t plan;
	hm_err_t err = {0};
	double t0 = hm_mono_s();
	int nct = 0;

	/* availability() and cons_tres' hosts: one pass over the nodes */
	for (int h = 0; h < c->t->nhosts; h++) {
		avail[h] = c->free_host[h];
		if (avail[h] && nct < need)
			cth[nct++] = h;
	}
	hm_sel_job_t sj = {.job_id = 999999,
			   .profile = prof,
			   .scheduled = true,
			   .gpus_per_node = 0,
			   .need = need,
			   .avail = avail,
			   .ring_key = c->ring_key,
			   .ct_hosts = cth,
			   .ct_n = nct};
	if (hm_sel_plan(&c->live, c->v, &sj, &plan, &err) != HM_OK) {
		fprintf(stderr, "bench_place: plan: %s\n", err.msg);
		return -1;
	}
	/* record(): the chosen set's traffic goes into the overlay */
	{
		const hm_place_cand_t *best = &plan.c[plan.order[0]];
		hm_placement_t pl;
		hm_traffic_t tr = {0};
		hm_lview_job_t j = {.id = sj.job_id, .scheduled = true};

		if (hm_place_cand_placement(c->t, best, 0, c->ring_key, &pl, &err) == HM_OK) {
			if (hm_traffic_derive(c->t, prof, &pl, 0, &tr, &err) == HM_OK) {
				hm_lview_job_times(prof, &tr, &j.period_s, &j.burst_s);
				(void)hm_sel_recent_add(recent, &j, &tr, 1, 0, &err);
			}
			hm_traffic_free(&tr);
			hm_placement_free(&pl);
		}
	}
	*score = plan.s[plan.order[0]].total;
	*ct_score = plan.cons_tres >= 0 ? plan.s[plan.cons_tres].total : -1;
	*ncands = plan.n;
	hm_sel_plan_free(&plan);
	return (hm_mono_s() - t0) * 1e6;
}

static int parse_list(const char *s, int *out, int max)
{
	int n = 0;
	char *end;

	while (*s && n < max) {
		long v;

		errno = 0;
		v = strtol(s, &end, 10);
		if (end == s || errno || v < 32 || v > 1000000 || (*end && *end != ','))
			return -1;
		out[n++] = (int)v;
		s = *end ? end + 1 : end;
	}
	return *s ? -1 : n;
}

int main(int argc, char **argv)
{
	int sizes[MAX_SIZES] = {1000, 10000}, nsizes = 2, repeats = 31;
	const int needs[] = {2, 8, 32, 64};
	unsigned long seed = 1;
	int rc = 1;

	for (int i = 1; i < argc; i++) {
		char *end = NULL;

		if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc) {
			if ((nsizes = parse_list(argv[++i], sizes, MAX_SIZES)) <= 0) {
				fprintf(stderr,
					"bench_place: --nodes '%s': accepted: a list of "
					"32..1000000, comma-separated\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
			long v = strtol(argv[++i], &end, 10);

			if (!*argv[i] || *end || v < 1 || v > 10000) {
				fprintf(stderr, "bench_place: --repeats '%s': accepted: 1..10000\n",
					argv[i]);
				return 2;
			}
			repeats = (int)v;
		} else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
			seed = strtoul(argv[++i], &end, 10);
			if (!*argv[i] || *end) {
				fprintf(stderr, "bench_place: --seed '%s': accepted: an integer\n",
					argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: bench_place [--nodes N[,N...]] [--repeats R] "
					"[--seed S]\n");
			return 2;
		}
	}
	printf("%7s %6s %6s %5s %10s %10s %10s %6s %8s %8s\n", "nodes", "jobs", "need", "cands",
	       "median_us", "p90_us", "min_us", "racks", "score", "ct_score");
	for (int s = 0; s < nsizes; s++) {
		cluster_t c;
		hm_err_t err = {0};
		int *avail, *cth;
		double *t = malloc((size_t)repeats * sizeof(double));

		rng_state = seed;
		if (!t || cluster_make(sizes[s], &c, &err) != 0) {
			fprintf(stderr, "bench_place: %d nodes: %s\n", sizes[s],
				err.msg[0] ? err.msg : "out of memory");
			free(t);
			cluster_free(&c);
			goto out;
		}
		avail = malloc((size_t)c.t->nhosts * sizeof(int));
		cth = malloc((size_t)c.t->nhosts * sizeof(int));
		for (size_t k = 0; avail && cth && k < sizeof(needs) / sizeof(needs[0]); k++) {
			hm_profile_t prof;
			hm_sel_recent_list_t recent = {0};
			double score = 0, ct_score = 0;
			int ncands = 0;

			profile(&prof, 1.25e9, 0.3);
			(void)place_once(&c, &prof, needs[k], avail, cth, &recent, &score,
					 &ct_score, &ncands); /* warm-up */
			for (int r = 0; r < repeats; r++) {
				t[r] = place_once(&c, &prof, needs[k], avail, cth, &recent, &score,
						  &ct_score, &ncands);
				hm_sel_recent_free(&recent);
				if (t[r] < 0)
					goto next;
			}
			qsort(t, (size_t)repeats, sizeof(double), hm_cmp_double);
			printf("%7d %6d %6d %5d %10.0f %10.0f %10.0f %6d %8.4f %8.4f\n",
			       c.t->nhosts, c.njobs, needs[k], ncands, t[repeats / 2],
			       t[(repeats * 9) / 10 < repeats ? (repeats * 9) / 10 : repeats - 1],
			       t[0], c.t->nracks, score, ct_score);
		next:
			hm_sel_recent_free(&recent);
		}
		free(avail);
		free(cth);
		free(t);
		cluster_free(&c);
	}
	rc = 0;
out:
	return rc;
}
