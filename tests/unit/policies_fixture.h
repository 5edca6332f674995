/*
 * Shared helpers for the policy tests: a generated topology, jobs with an
 * explicit profile pinned to hosts, a simulator run, and hand-built contexts
 * for engine-level tests. Header-only (static functions) for the test programs.
 */
#ifndef POLICIES_FIXTURE_H
#define POLICIES_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_policy.h"
#include "hm_sim.h"

static inline hm_topo_t *fx_topo(int racks, int hosts, int gpus, double oversub)
{
	hm_topo_gen_t g = {0};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	g.racks = racks;
	g.hosts_per_rack = hosts;
	g.gpus_per_host = gpus;
	g.nic_bps = 100e9;
	g.oversubscription = oversub;
	if (hm_topo_generate(&g, &t, &err) != HM_OK) {
		fprintf(stderr, "hm_topo_generate: %s\n", err.msg);
		abort();
	}
	return t;
}

/* A job on hosts[0..nh) (one GPU per host) with compute c_s and a ring all-reduce. */
static inline void fx_job(hm_job_t *j, int id, const hm_topo_t *t, const int *hosts, int nh,
			  double c_s, double bytes, double iters, double arrival_s)
{
	size_t len = 1;

	memset(j, 0, sizeof(*j));
	j->id = id;
	snprintf(j->name, sizeof(j->name), "job%d", id);
	j->gpus = nh;
	snprintf(j->profile.model, sizeof(j->profile.model), "custom");
	j->profile.compute_s = c_s;
	j->profile.nphases = 1;
	j->profile.phases[0].coll = HM_COLL_ALLREDUCE_RING;
	j->profile.phases[0].bytes = bytes;
	j->iterations = iters;
	j->arrival_s = arrival_s;
	for (int i = 0; i < nh; i++)
		len += strlen(t->hosts[hosts[i]].name) + 1;
	j->nodes = calloc(1, len);
	if (!j->nodes)
		abort();
	for (int i = 0; i < nh; i++) {
		if (i)
			strcat(j->nodes, ",");
		strcat(j->nodes, t->hosts[hosts[i]].name);
	}
}

static inline void fx_free_jobs(hm_job_t *jobs, int n)
{
	for (int i = 0; i < n; i++)
		free(jobs[i].nodes);
}

static inline int fx_run(const hm_topo_t *t, hm_job_t *jobs, int n, const hm_policy_ops_t *pol,
			 double jitter, unsigned long seed, double epoch_s, hm_sim_result_t *r)
{
	hm_workload_t w = {n, jobs};
	hm_sim_opts_t o;
	hm_policy_cfg_t cfg;
	hm_err_t err = {0};
	hm_rc_t rc;

	hm_sim_opts_defaults(&o);
	o.jitter_cv = jitter;
	o.seed = seed;
	hm_policy_cfg_defaults(&cfg);
	cfg.epoch_s = epoch_s;
	cfg.seed = seed;
	cfg.budget_s = 0.5;
	cfg.jitter_cv = jitter;
	rc = hm_sim_run(t, &w, pol, &cfg, &o, r, &err);
	if (rc != HM_OK)
		fprintf(stderr, "hm_sim_run(%s): %s\n", pol->name, err.msg);
	return rc;
}

/* ---- hand-built contexts for engine tests ---- */

typedef struct {
	hm_topo_t topo;
	hm_link_t links[16];
	hm_traffic_t tr[8];
	int tr_links[8][8];
	int tr_flows[8][8];
	hm_job_t jobs[8];
	hm_sched_job_t sj[8];
	hm_sched_ctx_t ctx;
} fx_ctx_t;

/* nlinks links of 100 Gbit/s; rack[l] = owning rack (-1 above the racks). */
static inline void fx_ctx_init(fx_ctx_t *f, int nlinks, const int *rack, int nracks)
{
	memset(f, 0, sizeof(*f));
	f->topo.nlinks = nlinks;
	f->topo.links = f->links;
	f->topo.nracks = nracks;
	for (int l = 0; l < nlinks; l++) {
		f->links[l].capacity_bps = 100e9;
		f->links[l].rack = rack[l];
		f->links[l].host = -1;
		f->links[l].lower = f->links[l].upper = -1;
	}
	f->ctx.topo = &f->topo;
	f->ctx.jobs = f->sj;
	f->ctx.event = HM_EV_ARRIVAL;
}

/* Job i: compute c_s, a burst of m_s alone at full rate on each of the links. */
static inline void fx_ctx_job(fx_ctx_t *f, int i, double c_s, double m_s, const int *links, int nl)
{
	hm_traffic_t *tr = &f->tr[i];

	f->jobs[i].id = i;
	f->jobs[i].gpus = 2;
	f->jobs[i].profile.compute_s = c_s;
	f->jobs[i].profile.nphases = 1;
	tr->nphases = 1;
	tr->phases[0].flow_bytes = m_s * 100e9 / 8;
	tr->phases[0].nflows = 1;
	tr->phases[0].nlinks = nl;
	tr->phases[0].links = f->tr_links[i];
	tr->phases[0].flows = f->tr_flows[i];
	for (int k = 0; k < nl; k++) {
		f->tr_links[i][k] = links[k];
		f->tr_flows[i][k] = 1;
	}
	tr->alone_comm_s[0] = m_s;
	tr->alone_iter_s = c_s + m_s;
	f->sj[i].id = i;
	f->sj[i].job = &f->jobs[i];
	f->sj[i].traffic = tr;
	f->sj[i].npaths = 1;
	if (i + 1 > f->ctx.njobs)
		f->ctx.njobs = i + 1;
	f->ctx.event_job = i;
}

/* Mark job i as measured over the last epoch: its compute and spread. */
static inline void fx_ctx_measured(fx_ctx_t *f, int i, double sd_s)
{
	f->sj[i].meas_compute_s = f->jobs[i].profile.compute_s;
	f->sj[i].meas_comm_s = f->tr[i].alone_comm_s[0];
	f->sj[i].meas_iter_s = f->tr[i].alone_iter_s;
	f->sj[i].meas_iter_sd_s = sd_s;
}

#endif
