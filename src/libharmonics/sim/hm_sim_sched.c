/*
 * Simulator side of the policy interface: placement (default, plus a few
 * alternatives offered to policy->place), traffic per equal-cost path, policy
 * calls with measured profiles, and applying decisions.
 */
#include "hm_sim_int.h"
#include "hm_clock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIM_MAX_PATHS 8
#define SIM_MAX_CANDS 4 /* default placement + up to 3 rack-rotated alternatives */

/* Measured profile of the iterations seen since the last epoch (reset at epochs). */
static void measure(sim_job_t *sj, bool reset)
{
	if (sj->ep_n > 0) {
		double m = sj->ep_iter_s / sj->ep_n;
		double var = sj->ep_iter2_s / sj->ep_n - m * m;
		sj->meas_iter_s = m;
		sj->meas_compute_s = sj->ep_compute_s / sj->ep_n;
		double cvar = sj->ep_compute2_s / sj->ep_n - sj->meas_compute_s * sj->meas_compute_s;
		sj->meas_compute_sd_s = cvar > 0 ? sqrt(cvar) : 0;
		sj->meas_comm_s = sj->ep_comm_s / sj->ep_n;
		sj->meas_sd_s = var > 0 ? sqrt(var) : 0;
	}
	if (reset)
		sj->ep_n = sj->ep_iter_s = sj->ep_iter2_s = sj->ep_compute_s = sj->ep_compute2_s = sj->ep_comm_s = 0;
}

/* What the policy decided last for a job (pending or in force), as the coordinator keeps it. */
static const hm_decision_t *latest(const sim_job_t *sj)
{
	return sj->has_deferred ? &sj->deferred : sj->has_next ? &sj->next : &sj->dec;
}

static void fill(sim_t *s, hm_sched_job_t *o, int j)
{
	sim_job_t *sj = &s->jobs[j];

	memset(o, 0, sizeof(*o));
	o->id = sj->job->id;
	o->job = sj->job;
	o->placement = &sj->pl;
	o->traffic = &sj->tr[0];
	o->path_traffic = sj->npaths > 1 ? sj->tr : NULL;
	o->npaths = sj->npaths;
	o->start_s = sj->start_s;
	o->iter_start_s = sj->iter_start_s;
	o->meas_iter_s = sj->meas_iter_s;
	o->meas_compute_s = sj->meas_compute_s;
	o->meas_compute_sd_s = sj->meas_compute_sd_s;
	o->meas_comm_s = sj->meas_comm_s;
	o->meas_iter_sd_s = sj->meas_sd_s;
	o->iters_left = isfinite(sj->target_iters) ? fmax(sj->target_iters - sj->iters, 1) : 0;
	o->dec = *latest(sj);
}

static bool same_schedule(const hm_decision_t *a, const hm_decision_t *b)
{
	return a->shift_s == b->shift_s && a->period_s == b->period_s && a->guard_s == b->guard_s &&
	       a->origin_s == b->origin_s && a->prio == b->prio && a->path == b->path;
}

static bool dec_equal(const hm_decision_t *a, const hm_decision_t *b)
{
	return same_schedule(a, b) && a->epoch == b->epoch;
}

/* A policy's decision made safe to simulate (a bad value cannot derail a job). */
static hm_decision_t sane(const sim_job_t *sj, const hm_decision_t *d)
{
	hm_decision_t n = *d;

	if (!(n.shift_s >= 0) || !isfinite(n.shift_s))
		n.shift_s = 0;
	if (!(n.period_s >= 0) || !isfinite(n.period_s))
		n.period_s = 0;
	if (n.prio < 0)
		n.prio = 0;
	if (n.path < 0 || n.path >= sj->npaths)
		n.path = sj->npaths > 0 ? abs(n.path) % sj->npaths : 0;
	return n;
}

/*
 * A decision in force takes effect at the next burst (prio, path, slot) or the
 * next iteration start (one-time shift); a running phase keeps its class and path.
 */
static void take(sim_job_t *sj, const hm_decision_t *d)
{
	sj->dec = *d;
	if (d->period_s == 0 && d->shift_s > 0)
		sj->pending_delay_s = d->shift_s;
}

void sim_dec_promote(sim_t *s, sim_job_t *sj)
{
	while (sj->has_next && s->now >= sj->next_at_s) {
		take(sj, &sj->next);
		sj->has_next = false;
		if (sj->has_deferred) {
			/* The coordinator releases it once its predecessor took effect. */
			sj->next = sj->deferred;
			sj->has_next = true;
			sj->has_deferred = false;
			sj->next_at_s += s->o.update_lead_s;
		}
	}
}

/*
 * Without an update lead a decision is in force at once. With one (the live
 * loop, docs/pacing.md contract C, as hm_coord.c's switch_to): a job's first
 * decision is; a change reaches its running steps at now + lead; a change
 * decided while one is pending waits behind it; one equal to what the steps
 * will run anyway changes nothing.
 */
static void apply(sim_t *s, sim_job_t *sj, const hm_decision_t *d)
{
	hm_decision_t n;

	n = sane(sj, d);
	if (s->o.update_lead_s <= 0 || !sj->decided) {
		sj->decided = true;
		if (!dec_equal(&sj->dec, d))
			take(sj, &n);
		return;
	}
	sim_dec_promote(s, sj);
	if (sj->has_deferred && same_schedule(&sj->deferred, &n))
		return;
	if (same_schedule(sj->has_next ? &sj->next : &sj->dec, &n)) {
		sj->has_deferred = false;
		return;
	}
	if (sj->has_next) {
		sj->deferred = n;
		sj->has_deferred = true;
		return;
	}
	sj->next = n;
	sj->has_next = true;
	sj->next_at_s = s->now + s->o.update_lead_s;
}

hm_rc_t sim_policy_call(sim_t *s, hm_sched_event_t ev, int event_job, hm_err_t *err)
{
	hm_sched_ctx_t ctx;
	int n = 0, ev_idx = -1;

	if (!s->pol || !s->pol->decide)
		return HM_OK;
	for (int i = 0; i < s->nrunning; i++) {
		int j = s->running[i];
		measure(&s->jobs[j], ev == HM_EV_EPOCH);
		fill(s, &s->sched[n], j);
		s->sched_map[n] = j;
		if (j == event_job)
			ev_idx = n;
		n++;
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.topo = s->topo;
	ctx.now_s = s->now;
	ctx.event = ev;
	ctx.event_job = ev_idx;
	ctx.njobs = n;
	ctx.jobs = s->sched;
	double t0 = hm_mono_s();
	hm_rc_t rc = s->pol->decide(s->pstate, &ctx, err);
	double dt = hm_mono_s() - t0;
	s->res->sched_time_s += dt;
	if (dt > s->res->max_decision_s)
		s->res->max_decision_s = dt;
	s->res->decisions++;
	if (ctx.budget_exhausted)
		s->res->budget_exhausted = true;
	if (rc != HM_OK) {
		hm_err_prefix(err, "policy %s at t=%.3f s", s->pol->name, s->now);
		return rc;
	}
	for (int i = 0; i < n; i++)
		apply(s, &s->jobs[s->sched_map[i]], &s->sched[i].dec);
	return HM_OK;
}

static int host_rack(const hm_topo_t *t, int h)
{
	return t->hosts[h].rack;
}

/* Equal-cost paths of a placement: max over consecutive ring host pairs, capped. */
static int ring_paths(const hm_topo_t *t, const hm_placement_t *pl)
{
	int np = 1;

	if (pl->nslots < 2)
		return 1;
	for (int i = 0; i < pl->nslots; i++) {
		int a = pl->slots[i].host, b = pl->slots[(i + 1) % pl->nslots].host;
		int k = hm_topo_npaths(t, a, b);
		if (k > np)
			np = k;
	}
	return np > SIM_MAX_PATHS ? SIM_MAX_PATHS : np;
}

/*
 * Alternatives for policy->place: the default placement computed over racks
 * r0, r0+1, ... only (r0 = the default's first rack + k, k = 1..3), skipping
 * those that do not fit or repeat. Each is valid on the current free GPUs.
 */
static int alternatives(sim_t *s, const hm_job_t *job, hm_placement_t *cands, int ncands)
{
	const hm_topo_t *t = s->topo;
	hm_cluster_state_t cs = {t, NULL};
	int first = t->nracks > 0 && cands[0].nslots > 0 ? host_rack(t, cands[0].slots[0].host) : 0;

	if (t->nracks < 2)
		return ncands;
	cs.free_gpus = malloc((size_t)t->nhosts * sizeof(int));
	if (!cs.free_gpus)
		return ncands;
	for (int k = 1; k <= 3 && k < t->nracks && ncands < SIM_MAX_CANDS; k++) {
		int r0 = (first + k) % t->nracks;
		hm_err_t e = {0};
		for (int h = 0; h < t->nhosts; h++)
			cs.free_gpus[h] = host_rack(t, h) >= r0 ? s->cs.free_gpus[h] : 0;
		if (hm_place_default(&cs, job, &cands[ncands], &e) != HM_OK)
			continue;
		bool dup = false;
		for (int c = 0; c < ncands && !dup; c++) {
			dup = cands[c].nslots == cands[ncands].nslots &&
			      memcmp(cands[c].slots, cands[ncands].slots,
				     (size_t)cands[c].nslots * sizeof(hm_slot_t)) == 0;
		}
		if (dup)
			hm_placement_free(&cands[ncands]);
		else
			ncands++;
	}
	free(cs.free_gpus);
	return ncands;
}

/* Offer candidates to policy->place; cands[0] is the default, already taken from cs. */
static hm_rc_t choose_placement(sim_t *s, int j, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	hm_placement_t cands[SIM_MAX_CANDS];
	hm_traffic_t ctr[SIM_MAX_CANDS];
	int nc = 1, n = 0, pick;
	hm_rc_t rc = HM_OK;

	memset(cands, 0, sizeof(cands));
	memset(ctr, 0, sizeof(ctr));
	cands[0] = sj->pl;
	hm_place_release(&s->cs, &sj->pl);
	nc = alternatives(s, sj->job, cands, 1);
	for (int c = 0; c < nc; c++) {
		rc = hm_traffic_derive(s->topo, &sj->job->profile, &cands[c], 0, &ctr[c], err);
		if (rc != HM_OK)
			goto out;
	}
	/* The arriving job is the last entry, its placement cands[0] while asked. */
	for (int i = 0; i < s->nrunning; i++)
		if (s->running[i] != j)
			fill(s, &s->sched[n++], s->running[i]);
	fill(s, &s->sched[n], j);
	s->sched[n].placement = &cands[0];
	s->sched[n].traffic = &ctr[0];
	s->sched[n].path_traffic = NULL;
	s->sched[n].npaths = 1;
	hm_sched_ctx_t ctx = {.topo = s->topo,
			      .now_s = s->now,
			      .event = HM_EV_ARRIVAL,
			      .event_job = n,
			      .njobs = n + 1,
			      .jobs = s->sched};
	double t0 = hm_mono_s();
	pick = s->pol->place(s->pstate, &ctx, cands, ctr, nc);
	s->res->sched_time_s += hm_mono_s() - t0;
	if (pick < 0 || pick >= nc)
		pick = 0;
	sj->pl = cands[pick];
	cands[pick].slots = NULL;
	cands[pick].nslots = 0;
	for (int k = 0; k < sj->pl.nslots; k++)
		s->cs.free_gpus[sj->pl.slots[k].host] -= sj->pl.slots[k].gpus;
out:
	if (rc != HM_OK) { /* keep the default, taken back from the free GPUs */
		for (int k = 0; k < sj->pl.nslots; k++)
			s->cs.free_gpus[sj->pl.slots[k].host] -= sj->pl.slots[k].gpus;
		cands[0].slots = NULL;
		cands[0].nslots = 0;
	}
	for (int c = 0; c < SIM_MAX_CANDS; c++) {
		hm_traffic_free(&ctr[c]);
		hm_placement_free(&cands[c]);
	}
	return rc;
}

/* Never placeable: keep why for the per-job results. */
static hm_rc_t never(sim_job_t *sj, const char *why, sim_place_t *out)
{
	snprintf(sj->note, sizeof(sj->note), "%.*s", (int)sizeof(sj->note) - 1, why);
	*out = SIM_PLACE_NEVER;
	return HM_OK;
}

hm_rc_t sim_place(sim_t *s, int j, sim_place_t *out, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	hm_err_t e = {0};
	hm_rc_t rc = sim_place_job(s, j, &sj->pl, &e);

	*out = SIM_PLACE_QUEUED;
	if (rc == HM_ERR_PLACE)
		return HM_OK;
	if (rc == HM_ERR_INVAL)
		return never(sj, e.msg, out);
	if (rc != HM_OK)
		return hm_err_set(err, rc, "%s", e.msg);
	if (s->o.placement == HM_SIM_PLACE_DEFAULT && s->pol && s->pol->place &&
	    !sj->job->nodes) { /* a fixed nodes list is fixed */
		rc = choose_placement(s, j, err);
		if (rc != HM_OK)
			return rc;
	}
	sj->npaths = ring_paths(s->topo, &sj->pl);
	sj->tr = calloc((size_t)sj->npaths, sizeof(*sj->tr));
	if (!sj->tr)
		return hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory");
	for (int p = 0; p < sj->npaths; p++) {
		rc = hm_traffic_derive(s->topo, &sj->job->profile, &sj->pl, p, &sj->tr[p], &e);
		if (rc != HM_OK) {
			hm_place_release(&s->cs, &sj->pl);
			hm_placement_free(&sj->pl);
			return never(sj, e.msg, out);
		}
	}
	for (int p = 0; p < sj->tr[0].nphases; p++)
		if (sj->tr[0].phases[p].nlinks > 0)
			sj->network = true;
	sj->alone_iter_s = hm_traffic_alone_iter_s(s->topo, &sj->job->profile, &sj->tr[0]);
	if (!(sj->alone_iter_s > 0) || !isfinite(sj->alone_iter_s)) {
		/* Zero-length iterations would run forever at one instant: refuse them. */
		char why[128];
		snprintf(why, sizeof(why),
			 "contention-free iteration time %g s (compute_s %g, no network time); "
			 "accepted: > 0",
			 sj->alone_iter_s, sj->job->profile.compute_s);
		hm_place_release(&s->cs, &sj->pl);
		return never(sj, why, out);
	}
	if (sj->job->iterations > 0)
		sj->target_iters = ceil(sj->job->iterations);
	else if (sj->job->duration_s > 0 && sj->alone_iter_s > 0)
		sj->target_iters = ceil(sj->job->duration_s / sj->alone_iter_s - 1e-9);
	else
		sj->target_iters = 1;
	if (sj->target_iters < 1)
		sj->target_iters = 1;
	*out = SIM_PLACE_PLACED;
	return HM_OK;
}

void sim_fill_job(sim_t *s, hm_sched_job_t *o, int j)
{
	fill(s, o, j);
}
