/*
 * Random small contended instances for the policy property test
 * (test_policies_random) and the study behind docs/evaluation.md
 * (tests/bench/bench_random): a seeded topology of 2-3 racks of 2-4
 * single-NIC hosts with 1-2 GPUs, uplinks 2:1 or 4:1, and 2-6 jobs of 2-4
 * hosts spread over at least two racks (so they share uplinks), each with its
 * own compute (50-600 ms) and burst alone (5-80% of its compute), arriving
 * within a few seconds, each about 60 s alone. Header-only (static functions).
 */
#ifndef RANDOM_INSTANCES_H
#define RANDOM_INSTANCES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_sim.h"
#include "hm_rng.h"

#define RI_MAX_JOBS 6

typedef struct {
	hm_topo_t *topo;
	hm_job_t jobs[RI_MAX_JOBS];
	int njobs;
	double jitter;
	char what[96]; /* one-line description */
} ri_t;

/* Instance number k (any k >= 0); 0 on success. */
static inline int ri_make(ri_t *ri, unsigned long k)
{
	uint64_t s = 0x5eed0000ULL + 7919ULL * k;
	hm_topo_gen_t g = {0};
	hm_err_t err = {0};
	int free_gpus[12], nh;

	memset(ri, 0, sizeof(*ri));
	g.racks = 2 + (int)(hm_rng_unit(&s) * 2);
	g.hosts_per_rack = 2 + (int)(hm_rng_unit(&s) * 3);
	g.gpus_per_host = 1 + (int)(hm_rng_unit(&s) * 2);
	g.nic_bps = 100e9;
	g.oversubscription = hm_rng_unit(&s) < 0.5 ? 2 : 4;
	if (hm_topo_generate(&g, &ri->topo, &err) != HM_OK)
		return -1;
	nh = ri->topo->nhosts;
	for (int h = 0; h < nh; h++)
		free_gpus[h] = g.gpus_per_host;
	ri->jitter = hm_rng_unit(&s) < 0.5 ? 0.02 : 0.05;
	ri->njobs = 2 + (int)(hm_rng_unit(&s) * (RI_MAX_JOBS - 1));
	for (int i = 0; i < ri->njobs; i++) {
		int want = 2 + (int)(hm_rng_unit(&s) * 3), got = 0, hosts[4], racks = 0;
		hm_job_t *j = &ri->jobs[i];
		double c = 0.05 + 0.55 * hm_rng_unit(&s), b = c * (0.05 + 0.75 * hm_rng_unit(&s));
		size_t len = 1;

		for (int tries = 0; got < want && tries < 200; tries++) {
			int h = (int)(hm_rng_unit(&s) * nh), dup = 0;
			for (int q = 0; q < got; q++)
				dup |= hosts[q] == h;
			if (dup || free_gpus[h] == 0)
				continue;
			/* The second host from another rack than the first. */
			if (got == 1 && ri->topo->hosts[h].rack == ri->topo->hosts[hosts[0]].rack &&
			    tries < 100)
				continue;
			hosts[got++] = h;
		}
		if (got < 2) {
			ri->njobs = i;
			break;
		}
		for (int q = 0; q < got; q++) {
			free_gpus[hosts[q]]--;
			racks |= 1 << ri->topo->hosts[hosts[q]].rack;
		}
		memset(j, 0, sizeof(*j));
		j->id = i;
		snprintf(j->name, sizeof(j->name), "r%lu-%d", k, i);
		snprintf(j->profile.model, sizeof(j->profile.model), "custom");
		j->profile.compute_s = c;
		j->profile.nphases = 1;
		j->profile.phases[0].coll = HM_COLL_ALLREDUCE_RING;
		/* A ring over n hosts sends 2(n-1)/n of the buffer per host at NIC speed. */
		j->profile.phases[0].bytes = b * 100e9 / 8 * got / (2.0 * (got - 1));
		j->duration_s = 60;
		j->arrival_s = 5 * hm_rng_unit(&s);
		j->gpus = got;
		for (int q = 0; q < got; q++)
			len += strlen(ri->topo->hosts[hosts[q]].name) + 1;
		j->nodes = calloc(1, len);
		if (!j->nodes)
			return -1;
		for (int q = 0; q < got; q++) {
			if (q)
				strcat(j->nodes, ",");
			strcat(j->nodes, ri->topo->hosts[hosts[q]].name);
		}
		(void)racks;
	}
	snprintf(ri->what, sizeof(ri->what),
		 "%d racks x %d hosts x %d GPUs, %g:1, %d jobs, jitter %g", g.racks,
		 g.hosts_per_rack, g.gpus_per_host, g.oversubscription, ri->njobs, ri->jitter);
	return ri->njobs >= 2 ? 0 : -1;
}

static inline void ri_free(ri_t *ri)
{
	for (int i = 0; i < ri->njobs; i++)
		free(ri->jobs[i].nodes);
	hm_topo_free(ri->topo);
	memset(ri, 0, sizeof(*ri));
}

/* One run of policy pol on instance ri (epochs 5 s, seed, optimal's budget). */
static inline hm_rc_t ri_run(const ri_t *ri, const hm_policy_ops_t *pol, unsigned long seed,
			     double budget_s, hm_sim_result_t *r, hm_err_t *err)
{
	hm_workload_t w = {ri->njobs, (hm_job_t *)ri->jobs};
	hm_sim_opts_t o;
	hm_policy_cfg_t cfg;

	hm_sim_opts_defaults(&o);
	o.jitter_cv = ri->jitter;
	o.seed = seed;
	hm_policy_cfg_defaults(&cfg);
	cfg.epoch_s = 5;
	cfg.seed = seed;
	cfg.budget_s = budget_s;
	cfg.jitter_cv = ri->jitter;
	return hm_sim_run(ri->topo, &w, pol, &cfg, &o, r, err);
}

#endif
