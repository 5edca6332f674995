/*
 * Event-driven flow-level simulator: the run loop and each job's iteration
 * state machine (compute, then phases, slot holding, one-time shifts).
 * Network sharing lives in hm_sim_net.c, policy calls and placement in
 * hm_sim_sched.c, metrics in hm_sim_out.c. Semantics: docs/simulator.md.
 */
#include "hm_sim_int.h"
#include "hm_clock.h"
#include "hm_rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Numerical slack (seconds) for "ready exactly at the slot start". */
#define SLOT_EPS_S 1e-9
/* Utilisation timeline points kept at most (a bad sample_s cannot exhaust memory). */
#define SIM_MAX_UTIL_SAMPLES 1000000

void hm_sim_opts_defaults(hm_sim_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->max_iter_samples = 100000;
}

/* Standard normal from the job's own stream (Box-Muller, one draw per call). */
static double normal(uint64_t st[2])
{
	double u1 = sim_rand01(st), u2 = sim_rand01(st);

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static hm_rc_t push(sim_t *s, double t, int type, int j, hm_err_t *err)
{
	return sim_heap_push(&s->heap, t, type, j, err);
}

static hm_rc_t iter_start(sim_t *s, int j, hm_err_t *err);

/* The job's first iteration once placed and decided (after its one-time shift, if any). */
static hm_rc_t job_begin(sim_t *s, int j, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];

	if (sj->pending_delay_s > 0) {
		double d = sj->pending_delay_s;
		sj->pending_delay_s = 0;
		return push(s, s->now + d, SEV_ITER_START, j, err);
	}
	return iter_start(s, j, err);
}

/* Place job j if it fits now; a placed job runs, the policy hears of it, it begins. */
static hm_rc_t job_try_start(sim_t *s, int j, sim_place_t *out, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	hm_rc_t rc = sim_place(s, j, out, err);

	if (rc != HM_OK || *out == SIM_PLACE_QUEUED)
		return rc;
	if (*out == SIM_PLACE_NEVER) {
		sj->state = SJ_UNPLACED;
		s->remaining--;
		return HM_OK;
	}
	sj->state = SJ_RUNNING;
	sj->start_s = s->now;
	sj->iter_start_s = s->now;
	sj->run_pos = s->nrunning;
	s->running[s->nrunning++] = j;
	rc = sim_policy_call(s, HM_EV_ARRIVAL, j, err);
	if (rc != HM_OK)
		return rc;
	return job_begin(s, j, err);
}

/* Job j finished its last iteration: free its GPUs, tell the policy, start queued jobs. */
static hm_rc_t job_end(sim_t *s, int j, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	hm_rc_t rc;

	sj->state = SJ_DONE;
	sj->end_s = s->now;
	s->remaining--;
	hm_place_release(&s->cs, &sj->pl);
	int pos = sj->run_pos;
	s->running[pos] = s->running[--s->nrunning];
	s->jobs[s->running[pos]].run_pos = pos;
	sj->run_pos = -1;
	if (s->nrunning > 0) {
		rc = sim_policy_call(s, HM_EV_DEPARTURE, -1, err);
		if (rc != HM_OK)
			return rc;
	}
	/* First fit in arrival order over the waiting jobs. */
	int kept = 0;
	for (int i = 0; i < s->nqueue; i++) {
		int q = s->queue[i];
		sim_place_t out;

		rc = job_try_start(s, q, &out, err);
		if (rc != HM_OK)
			return rc;
		if (out == SIM_PLACE_QUEUED)
			s->queue[kept++] = q;
	}
	s->nqueue = kept;
	return HM_OK;
}

static hm_rc_t iter_end(sim_t *s, int j, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];

	sim_record_iter(s, sj, s->now - sj->iter_start_s);
	if (s->eval && sj->ep_n >= sj->target_iters) { /* done: nothing to free or tell */
		sj->state = SJ_DONE;
		sj->end_s = s->now;
		return HM_OK;
	}
	if (sj->iters >= sj->target_iters)
		return job_end(s, j, err);
	if (sj->pending_delay_s > 0) {
		double d = sj->pending_delay_s;
		sj->pending_delay_s = 0;
		return push(s, s->now + d, SEV_ITER_START, j, err);
	}
	return iter_start(s, j, err);
}

static hm_rc_t phase_start(sim_t *s, int j, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	int p = sj->next_phase++;
	int path;

	sim_dec_promote(s, sj);
	path = sj->dec.path;

	if (path < 0 || path >= sj->npaths)
		path = 0;
	sj->cur_phase = p;
	if (p == 0)
		sj->burst_start_s = s->now;
	const hm_phase_load_t *ld = &sj->tr[path].phases[p];
	if (ld->nlinks == 0 || !(ld->flow_bytes > 0)) {
		/* Traffic that stays inside a host: its alone time, no shared link. */
		sim_end_set(s, j, s->now + sj->tr[path].alone_comm_s[p]);
		return HM_OK;
	}
	return sim_net_start(s, j, ld, sj->dec.prio > 0 ? sj->dec.prio : 0, err);
}

/* The first slot of a held decision at or after time t. */
static double slot_at_or_after(const hm_decision_t *d, double t)
{
	double base = d->origin_s + d->shift_s;

	return base + ceil((t - base) / d->period_s - SLOT_EPS_S) * d->period_s;
}

/*
 * Phase next_phase may start now; the first one waits for its slot when held.
 * A slot at or after a pending decision's switch time T gives way to that
 * decision's first slot at or after T (contract C, docs/pacing.md).
 */
static hm_rc_t phase_ready(sim_t *s, int j, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	const hm_decision_t *d, *n;

	sim_dec_promote(s, sj);
	d = &sj->dec;
	if (sj->next_phase == 0 && d->period_s > 0) {
		double rel = s->now - d->origin_s - d->shift_s;
		double k = floor(rel / d->period_s);
		double slot = d->origin_s + d->shift_s + k * d->period_s;
		double guard = d->guard_s > 0 ? d->guard_s : 0;
		if (s->now - slot > guard + SLOT_EPS_S) {
			/* Too late for this slot: skip to the next one. */
			slot += d->period_s;
			n = &sj->next;
			if (sj->has_next && slot >= sj->next_at_s && n->period_s > 0)
				slot = slot_at_or_after(n, sj->next_at_s);
			else if (sj->has_next && slot >= sj->next_at_s)
				return phase_start(s, j, err); /* the next one runs free */
			sj->slot_wait = true;
			return push(s, slot, SEV_PHASE_START, j, err);
		}
	}
	return phase_start(s, j, err);
}

/* Called whenever job j has no phase running: start, schedule or finish. */
static hm_rc_t next_phase(sim_t *s, int j, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	const hm_profile_t *pr = &sj->job->profile;

	if (sj->next_phase >= pr->nphases)
		return sj->compute_done ? iter_end(s, j, err) : HM_OK;
	double ready = sj->iter_start_s + sj->compute_s * (1 - pr->phases[sj->next_phase].overlap);
	if (ready <= s->now)
		return phase_ready(s, j, err);
	if (!sj->compute_done && ready >= sj->compute_end_s)
		return HM_OK; /* the compute-end event starts it: one event fewer */
	sj->ready_pending = true;
	return push(s, ready, SEV_PHASE_READY, j, err);
}

static hm_rc_t iter_start(sim_t *s, int j, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	double c = sj->job->profile.compute_s;
	hm_rc_t rc;

	double cv = s->eval && sj->cv >= 0 ? sj->cv : s->o.jitter_cv;

	if (cv > 0) {
		double f = 1 + cv * normal(sj->rng);
		c *= f > 0.05 ? f : 0.05;
	}
	sj->iter_start_s = s->now;
	sj->compute_s = c;
	sj->compute_end_s = s->now + c;
	sj->compute_done = false;
	sj->burst_s = 0;
	sj->next_phase = 0;
	sj->cur_phase = -1;
	rc = push(s, sj->compute_end_s, SEV_COMPUTE_END, j, err);
	if (rc != HM_OK)
		return rc;
	return next_phase(s, j, err);
}

hm_rc_t sim_handle(sim_t *s, const sim_ev_t *ev, hm_err_t *err)
{
	sim_job_t *sj = ev->job >= 0 ? &s->jobs[ev->job] : NULL;
	hm_rc_t rc;

	switch (ev->type) {
	case SEV_ARRIVAL: {
		sim_place_t out;

		rc = job_try_start(s, ev->job, &out, err);
		if (rc == HM_OK && out == SIM_PLACE_QUEUED) {
			sj->state = SJ_QUEUED;
			s->queue[s->nqueue++] = ev->job;
		}
		return rc;
	}
	case SEV_ITER_START:
		return iter_start(s, ev->job, err);
	case SEV_COMPUTE_END:
		sj->compute_done = true;
		sj->sum_compute_s += sj->compute_s;
		if (sj->cur_phase < 0 && !sj->ready_pending && !sj->slot_wait)
			return next_phase(s, ev->job, err);
		return HM_OK;
	case SEV_PHASE_READY:
		sj->ready_pending = false;
		return phase_ready(s, ev->job, err);
	case SEV_PHASE_START:
		sj->slot_wait = false;
		return phase_start(s, ev->job, err);
	case SEV_PHASE_END:
		if (sj->cur_phase < 0)
			return HM_OK;
		rc = sim_net_stop(s, ev->job, err);
		if (rc != HM_OK)
			return rc;
		if (sj->cur_phase == sj->job->profile.nphases - 1) {
			double b = s->now - sj->burst_start_s;
			sj->sum_comm_s += b;
			sj->burst_s = b;
		}
		sj->cur_phase = -1;
		return next_phase(s, ev->job, err);
	case SEV_EPOCH:
		if (s->remaining <= 0)
			return HM_OK;
		if (s->nrunning > 0) {
			rc = sim_policy_call(s, HM_EV_EPOCH, -1, err);
			if (rc != HM_OK)
				return rc;
		}
		return push(s, s->now + s->pcfg.epoch_s, SEV_EPOCH, -1, err);
	case SEV_SAMPLE:
		if (s->remaining <= 0 || s->res->nt >= SIM_MAX_UTIL_SAMPLES)
			return HM_OK; /* done, or enough points for any plot */
		rc = sim_sample_util(s, err);
		if (rc != HM_OK)
			return rc;
		return push(s, s->now + s->o.sample_s, SEV_SAMPLE, -1, err);
	default:
		return hm_err_set(err, HM_ERR_INVAL, "simulator: unknown event type %d", ev->type);
	}
}

static hm_rc_t setup(sim_t *s, hm_err_t *err)
{
	hm_rc_t rc;
	uint64_t x;

	s->nj = s->w->njobs;
	s->jobs = calloc((size_t)(s->nj > 0 ? s->nj : 1), sizeof(*s->jobs));
	s->queue = calloc((size_t)(s->nj > 0 ? s->nj : 1), sizeof(*s->queue));
	s->running = calloc((size_t)(s->nj > 0 ? s->nj : 1), sizeof(*s->running));
	s->sched = calloc((size_t)(s->nj > 0 ? s->nj : 1), sizeof(*s->sched));
	s->sched_map = calloc((size_t)(s->nj > 0 ? s->nj : 1), sizeof(*s->sched_map));
	if (!s->jobs || !s->queue || !s->running || !s->sched || !s->sched_map)
		return hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory for %d jobs", s->nj);
	rc = hm_cluster_state_init(&s->cs, s->topo);
	if (rc != HM_OK)
		return hm_err_set(err, rc, "simulator: cannot initialise the cluster state");
	s->cs_init = true;
	rc = sim_net_init(s, err);
	if (rc != HM_OK)
		return rc;
	x = s->o.seed ^ 0x5bd1e995ULL;
	s->rng[0] = hm_rng_next(&x);
	s->rng[1] = hm_rng_next(&x);
	s->cap_samples = s->o.max_iter_samples > 0 ? s->o.max_iter_samples : 100000;
	s->samp_raw = malloc((size_t)s->cap_samples * sizeof(double));
	s->samp_norm = malloc((size_t)s->cap_samples * sizeof(double));
	if (!s->samp_raw || !s->samp_norm)
		return hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory for samples");
	for (int j = 0; j < s->nj; j++) {
		sim_job_t *sj = &s->jobs[j];
		const hm_job_t *job = &s->w->jobs[j];
		sj->job = job;
		sj->state = SJ_PENDING;
		sj->run_pos = -1;
		sj->act_pos = -1;
		sj->cur_phase = -1;
		/* Per-job stream from (seed, job index): same draws under every policy. */
		x = s->o.seed * 0x100000001b3ULL + (uint64_t)j * 0x9e3779b97f4a7c15ULL + 1;
		sj->rng[0] = hm_rng_next(&x);
		sj->rng[1] = hm_rng_next(&x);
		if (!(job->arrival_s >= 0) || !isfinite(job->arrival_s))
			return hm_err_set(
			    err, HM_ERR_INVAL,
			    "simulator: job %d (%s) arrives at %g s (accepted: finite "
			    ">= 0)",
			    j, job->name, job->arrival_s);
		if (job->profile.nphases < 0 || job->profile.nphases > HM_MAX_PHASES)
			return hm_err_set(err, HM_ERR_INVAL,
					  "simulator: job %d (%s) has %d phases (accepted: 0..%d)",
					  j, job->name, job->profile.nphases, HM_MAX_PHASES);
		rc = push(s, job->arrival_s, SEV_ARRIVAL, j, err);
		if (rc != HM_OK)
			return rc;
	}
	s->remaining = s->nj;
	if (s->pol && s->pol->uses_epochs && s->pcfg.epoch_s > 0) {
		rc = push(s, s->pcfg.epoch_s, SEV_EPOCH, -1, err);
		if (rc != HM_OK)
			return rc;
	}
	if (s->o.sample_s > 0)
		return push(s, 0, SEV_SAMPLE, -1, err);
	return HM_OK;
}

static void teardown(sim_t *s)
{
	if (s->pol && s->pol->destroy)
		s->pol->destroy(s->pstate);
	for (int j = 0; s->jobs && j < s->nj; j++) {
		sim_job_t *sj = &s->jobs[j];
		hm_placement_free(&sj->pl);
		for (int p = 0; sj->tr && p < sj->npaths; p++)
			hm_traffic_free(&sj->tr[p]);
		free(sj->tr);
		free(sj->samp);
	}
	if (s->cs_init)
		hm_cluster_state_free(&s->cs);
	sim_net_free(s);
	free(s->jobs);
	free(s->queue);
	free(s->running);
	free(s->sched);
	free(s->sched_map);
	free(s->samp_raw);
	free(s->samp_norm);
}

static void progress(sim_t *s, double *last_wall)
{
	double w = hm_mono_s();
	if (w - *last_wall < 0.1)
		return;
	*last_wall = w;
	double f = s->nj > 0 ? (double)(s->nj - s->remaining) / s->nj : 1;
	if (s->o.horizon_s > 0 && s->now / s->o.horizon_s > f)
		f = s->now / s->o.horizon_s;
	s->o.progress(f > 1 ? 1 : f, s->o.progress_arg);
}

hm_rc_t hm_sim_run(const hm_topo_t *t, const hm_workload_t *w, const hm_policy_ops_t *policy,
		   const hm_policy_cfg_t *pcfg, const hm_sim_opts_t *opts, hm_sim_result_t *out,
		   hm_err_t *err)
{
	sim_t s;
	sim_ev_t ev;
	hm_rc_t rc = HM_OK;
	double t0 = hm_mono_s(), last_wall = t0;

	if (!out)
		return hm_err_set(err, HM_ERR_INVAL, "hm_sim_run: NULL result");
	memset(out, 0, sizeof(*out));
	if (!t || !w || (w->njobs > 0 && !w->jobs))
		return hm_err_set(err, HM_ERR_INVAL, "hm_sim_run: NULL topology or workload");
	memset(&s, 0, sizeof(s));
	s.topo = t;
	s.w = w;
	s.pol = policy;
	s.res = out;
	if (pcfg)
		s.pcfg = *pcfg;
	else
		hm_policy_cfg_defaults(&s.pcfg);
	if (opts)
		s.o = *opts;
	else
		hm_sim_opts_defaults(&s.o);
	if (s.o.jitter_cv < 0 || !isfinite(s.o.jitter_cv) || s.o.horizon_s < 0 ||
	    s.o.sample_s < 0 || !isfinite(s.o.horizon_s) || !isfinite(s.o.sample_s) ||
	    !(s.o.update_lead_s >= 0) || !isfinite(s.o.update_lead_s)) {
		rc = hm_err_set(err, HM_ERR_INVAL,
				"simulator: jitter %g, horizon %g s, sample %g s, update lead %g s "
				"(accepted: finite >= 0)",
				s.o.jitter_cv, s.o.horizon_s, s.o.sample_s, s.o.update_lead_s);
		goto out;
	}
	if ((unsigned)s.o.placement > HM_SIM_PLACE_CASSINI) {
		rc = hm_err_set(err, HM_ERR_INVAL, "simulator: placement %d, accepted 0..%d",
				(int)s.o.placement, (int)HM_SIM_PLACE_CASSINI);
		goto out;
	}
	snprintf(out->policy, sizeof(out->policy), "%s", policy ? policy->name : "fair");
	if (policy && policy->create) {
		rc = policy->create(&s.pcfg, &s.pstate, err);
		if (rc != HM_OK)
			goto out;
	}
	rc = setup(&s, err);
	if (rc != HM_OK)
		goto out;
	while (sim_next(&s, &ev)) {
		if (s.o.horizon_s > 0 && ev.t > s.o.horizon_s) {
			s.now = s.o.horizon_s;
			break;
		}
		s.now = ev.t;
		s.events++;
		rc = sim_handle(&s, &ev, err);
		if (rc != HM_OK)
			goto out;
		if (s.o.progress && (s.events & 4095) == 0)
			progress(&s, &last_wall);
	}
	out->events = s.events;
	rc = sim_results(&s, err);
	out->sim_wall_s = hm_mono_s() - t0;
	if (s.o.progress)
		s.o.progress(1, s.o.progress_arg);
out:
	teardown(&s);
	if (rc != HM_OK)
		hm_sim_result_free(out);
	return rc;
}
