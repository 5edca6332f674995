/*
 * hm_sim_place.c - the simulator's placement option (hm_sim_opts_t.placement,
 * harmonics-sim --placement): which hosts an arriving job gets.
 *
 *   packed     hm_place_default: cons_tres with topology/tree
 *   spread     a fragmented cluster: a random host that fits a job of one host;
 *              else hosts with free GPUs in a random order (seeded per job)
 *   harmonics  the candidates of hm_place_candidates, chosen by hm_place_choose
 *              against the running jobs' link loads (the select plugin's rule)
 *   cassini    the same candidates, chosen by Cassini's compatibility (its place())
 *
 * A job fits under every placement exactly when it fits under packed (the same
 * free GPUs), so queueing decisions differ only through the hosts taken. A job
 * with a fixed nodes list keeps it.
 */
#include "hm_sim_int.h"
#include "hm_clock.h"
#include "hm_place_score.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"default", "packed", "spread", "harmonics", "cassini"};

const char *hm_sim_placement_name(hm_sim_placement_t p)
{
	return (unsigned)p < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[p] : "?";
}

hm_rc_t hm_sim_placement_parse(const char *name, hm_sim_placement_t *out, hm_err_t *err)
{
	for (unsigned i = 1; name && i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (strcmp(name, kind_names[i]) == 0) {
			*out = (hm_sim_placement_t)i;
			return HM_OK;
		}
	return hm_err_set(err, HM_ERR_INVAL,
			  "placement '%s' unknown; accepted: packed, spread, harmonics, cassini",
			  name ? name : "(null)");
}

static int max_host_gpus(const hm_topo_t *t)
{
	int m = 0;

	for (int h = 0; h < t->nhosts; h++)
		m = t->hosts[h].gpus > m ? t->hosts[h].gpus : m;
	return m;
}

static bool ring_before(const hm_topo_t *t, const hm_slot_t *x, const hm_slot_t *y)
{
	int rx = t->hosts[x->host].rack, ry = t->hosts[y->host].rack;

	return rx != ry ? rx < ry : x->host < y->host;
}

/* A fragmented cluster: free GPUs wherever they are, in a random order. */
static hm_rc_t spread(sim_t *s, int j, hm_placement_t *out, hm_err_t *err)
{
	const hm_topo_t *t = s->topo;
	const hm_job_t *job = s->jobs[j].job;
	uint64_t st[2] = {s->o.seed * 0x9E3779B97F4A7C15ull + 0x5851F42D4C957F2Dull,
			  (uint64_t)job->id * 0xBF58476D1CE4E5B9ull + 1};
	int *hosts = malloc((size_t)t->nhosts * sizeof(int)), n = 0, need = job->gpus;

	if (!hosts)
		return hm_err_set(err, HM_ERR_NOMEM, "placement: out of memory");
	for (int h = 0; h < t->nhosts; h++)
		if (s->cs.free_gpus[h] >= (job->gpus <= max_host_gpus(t) ? job->gpus : 1))
			hosts[n++] = h;
	for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
		int k = (int)(sim_rand01(st) * (i + 1)), x;

		k = k > i ? i : k;
		x = hosts[i];
		hosts[i] = hosts[k];
		hosts[k] = x;
	}
	memset(out, 0, sizeof(*out));
	out->slots = calloc((size_t)(n > 0 ? n : 1), sizeof(*out->slots));
	if (!out->slots) {
		free(hosts);
		return hm_err_set(err, HM_ERR_NOMEM, "placement: out of memory");
	}
	for (int i = 0; i < n && need > 0; i++) {
		int g = s->cs.free_gpus[hosts[i]] < need ? s->cs.free_gpus[hosts[i]] : need;

		out->slots[out->nslots++] = (hm_slot_t){.host = hosts[i], .gpus = g};
		need -= g;
	}
	free(hosts);
	for (int i = 1; i < out->nslots; i++) {
		hm_slot_t x = out->slots[i];
		int k = i;

		for (; k > 0 && ring_before(t, &x, &out->slots[k - 1]); k--)
			out->slots[k] = out->slots[k - 1];
		out->slots[k] = x;
	}
	return HM_OK; /* fits: the caller checked with the packed placement */
}

/* The running jobs as the placement score sees them. */
static hm_rc_t running_view(sim_t *s, bool scheduled, hm_lview_t **v, hm_err_t *err)
{
	hm_lview_job_t *jv = calloc((size_t)s->nrunning + 1, sizeof(*jv));
	hm_rc_t rc;

	if (!jv)
		return hm_err_set(err, HM_ERR_NOMEM, "placement: out of memory");
	for (int i = 0; i < s->nrunning; i++) {
		sim_job_t *sj = &s->jobs[s->running[i]];
		int p = sj->dec.path >= 0 && sj->dec.path < sj->npaths ? sj->dec.path : 0;

		jv[i].id = (uint32_t)sj->job->id;
		jv[i].gpus = sj->job->gpus;
		jv[i].scheduled = scheduled;
		jv[i].tr = &sj->tr[p];
		hm_lview_job_times(&sj->job->profile, &sj->tr[p], &jv[i].period_s, &jv[i].burst_s);
		if (sj->meas_iter_s > 0)
			jv[i].period_s = sj->meas_iter_s;
	}
	rc = hm_lview_build(s->topo, jv, s->nrunning, v, err);
	free(jv);
	return rc;
}

/* Cassini's own choice among the candidates (its place(), as in its evaluation). */
static int cassini_pick(sim_t *s, int j, hm_placement_t *pl, int n, hm_err_t *err)
{
	hm_traffic_t tr[HM_PLACE_MAX_CANDS];
	int k = 0, pick = 0;

	memset(tr, 0, sizeof(tr));
	for (int c = 0; c < n; c++)
		if (hm_traffic_derive(s->topo, &s->jobs[j].job->profile, &pl[c], 0, &tr[c], err) !=
		    HM_OK)
			goto out;
	for (int i = 0; i < s->nrunning; i++)
		sim_fill_job(s, &s->sched[k++], s->running[i]);
	sim_fill_job(s, &s->sched[k], j);
	s->sched[k].placement = &pl[0];
	s->sched[k].traffic = &tr[0];
	s->sched[k].path_traffic = NULL;
	s->sched[k].npaths = 1;
	hm_sched_ctx_t ctx = {.topo = s->topo,
			      .now_s = s->now,
			      .event = HM_EV_ARRIVAL,
			      .event_job = k,
			      .njobs = k + 1,
			      .jobs = s->sched};
	pick = hm_policy_cassini.place(NULL, &ctx, pl, tr, n);
out:
	for (int c = 0; c < n; c++)
		hm_traffic_free(&tr[c]);
	return pick >= 0 && pick < n ? pick : 0;
}

/* harmonics or cassini: candidates, then the chooser; out replaces the packed choice. */
static hm_rc_t choose(sim_t *s, int j, hm_placement_t *out, hm_err_t *err)
{
	const hm_job_t *job = s->jobs[j].job;
	bool scheduled = s->pol && s->pol->decide && strcmp(s->pol->name, "fair") != 0;
	hm_place_cand_t c[HM_PLACE_MAX_CANDS];
	hm_placement_t pl[HM_PLACE_MAX_CANDS];
	hm_place_req_t req = {s->cs.free_gpus, job->gpus, max_host_gpus(s->topo)};
	hm_lview_t *v = NULL;
	hm_rc_t rc = HM_OK;
	int n = 0, pick = 0;

	memset(pl, 0, sizeof(pl));
	if (s->o.placement == HM_SIM_PLACE_HARMONICS && (rc = running_view(s, scheduled, &v, err)))
		return rc;
	n = hm_place_candidates(s->topo, v, &req, c, HM_PLACE_MAX_CANDS);
	if (n < 0) {
		hm_lview_free(v);
		return hm_err_set(err, HM_ERR_NOMEM, "placement: candidates: out of memory");
	}
	if (n <= 1)
		goto out; /* the packed one only (or none: cannot happen, it fits) */
	if (s->o.placement == HM_SIM_PLACE_HARMONICS) {
		hm_place_job_t pj = {.id = (uint32_t)job->id,
				     .profile = &job->profile,
				     .scheduled = scheduled,
				     .gpus_per_node = -1,
				     .max_paths = 1};
		hm_err_t e = {0};

		pick = hm_place_choose(s->topo, v, &pj, c, n, NULL, &e);
		if (pick < 0)
			pick = 0; /* nothing derivable: the packed one */
	} else {
		for (int k = 0; k < n && rc == HM_OK; k++)
			rc = hm_place_cand_placement(s->topo, &c[k], -1, NULL, &pl[k], err);
		if (rc == HM_OK)
			pick = cassini_pick(s, j, pl, n, err);
	}
	if (rc == HM_OK && pick > 0) {
		hm_placement_t np;

		rc = hm_place_cand_placement(s->topo, &c[pick], -1, NULL, &np, err);
		if (rc == HM_OK) {
			hm_placement_free(out);
			*out = np;
		}
	}
out:
	for (int k = 0; k < n; k++) {
		hm_place_cand_free(&c[k]);
		hm_placement_free(&pl[k]);
	}
	hm_lview_free(v);
	return rc;
}

hm_rc_t sim_place_job(sim_t *s, int j, hm_placement_t *out, hm_err_t *err)
{
	const hm_job_t *job = s->jobs[j].job;
	hm_rc_t rc = hm_place_default(&s->cs, job, out, err);
	double t0;

	if (rc != HM_OK || job->nodes || s->o.placement == HM_SIM_PLACE_DEFAULT ||
	    s->o.placement == HM_SIM_PLACE_PACKED)
		return rc;
	/* It fits: choose again on the same free GPUs. */
	t0 = hm_mono_s();
	hm_place_release(&s->cs, out);
	if (s->o.placement == HM_SIM_PLACE_SPREAD) {
		hm_placement_free(out);
		rc = spread(s, j, out, err);
	} else {
		rc = choose(s, j, out, err);
	}
	s->res->sched_time_s += hm_mono_s() - t0;
	if (rc != HM_OK) {
		hm_placement_free(out);
		return rc;
	}
	for (int k = 0; k < out->nslots; k++)
		s->cs.free_gpus[out->slots[k].host] -= out->slots[k].gpus;
	return HM_OK;
}
