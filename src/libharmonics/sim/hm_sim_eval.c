/*
 * Evaluation runs (hm_sim.h, hm_sim_eval_*): the simulator's own event
 * handler on jobs given placed under fixed decisions, so a policy that
 * searches judges candidates under exactly the model the simulator runs.
 * The evaluator keeps its network state and event heap between runs; a run
 * costs the events of its jobs only.
 */
#include "hm_sim_int.h"
#include "hm_rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct hm_sim_eval {
	sim_t s;
	int cap;
	uint64_t events;
};

hm_sim_eval_t *hm_sim_eval_new(const hm_topo_t *t, int max_jobs, hm_err_t *err)
{
	hm_sim_eval_t *e = calloc(1, sizeof(*e));

	if (!e) {
		hm_err_set(err, HM_ERR_NOMEM, "evaluator: out of memory");
		return NULL;
	}
	e->s.topo = t;
	e->s.eval = true;
	e->cap = max_jobs > 0 ? max_jobs : 1;
	e->s.nj = e->cap;
	e->s.jobs = calloc((size_t)e->cap, sizeof(*e->s.jobs));
	if (!e->s.jobs || sim_net_init(&e->s, err) != HM_OK) {
		if (!e->s.jobs)
			hm_err_set(err, HM_ERR_NOMEM, "evaluator: out of memory for %d jobs",
				   max_jobs);
		hm_sim_eval_free(e);
		return NULL;
	}
	return e;
}

void hm_sim_eval_free(hm_sim_eval_t *e)
{
	if (!e)
		return;
	if (e->s.cap_bps)
		sim_net_free(&e->s);
	free(e->s.jobs);
	free(e);
}

uint64_t hm_sim_eval_events(const hm_sim_eval_t *e)
{
	return e ? e->events : 0;
}

/* Take every phase off the links (the next run starts from idle links). */
static void clear(sim_t *s, int n)
{
	for (int j = 0; j < n; j++) {
		sim_job_t *sj = &s->jobs[j];
		for (int p = 0; sj->tr && p < sj->npaths; p++)
			for (int ph = 0; ph < sj->tr[p].nphases; ph++)
				for (int k = 0; k < sj->tr[p].phases[ph].nlinks; k++)
					s->lk_n[sj->tr[p].phases[ph].links[k]] = 0,
					s->lflows[sj->tr[p].phases[ph].links[k]] = 0,
					s->lused[sj->tr[p].phases[ph].links[k]] = 0;
	}
	s->nactive = 0;
	s->heap.n = 0;
	for (int i = 0; i < s->ends.n; i++)
		s->ends.pos[s->ends.a[i].job] = -1;
	s->ends.n = 0;
}

hm_rc_t hm_sim_eval_run(hm_sim_eval_t *e, const hm_sim_eval_job_t *jobs, int n, double horizon_s,
			double measure_from_s, double jitter_cv, uint64_t seed,
			hm_sim_eval_out_t *out, hm_err_t *err)
{
	sim_t *s = &e->s;
	sim_ev_t ev;
	hm_rc_t rc = HM_OK;

	if (n > e->cap || n < 0)
		return hm_err_set(err, HM_ERR_INVAL, "evaluator: %d jobs, accepted 0..%d", n,
				  e->cap);
	if (!(horizon_s > measure_from_s) || !(measure_from_s >= 0) || !(jitter_cv >= 0))
		return hm_err_set(err, HM_ERR_INVAL,
				  "evaluator: window [%g, %g] s, jitter %g (accepted: 0 <= from < "
				  "horizon, jitter >= 0)",
				  measure_from_s, horizon_s, jitter_cv);
	s->now = 0;
	s->heap.seq = 0;
	s->o.jitter_cv = jitter_cv;
	s->measure_from_s = measure_from_s;
	s->nj = n;
	for (int j = 0; j < n; j++) {
		sim_job_t *sj = &s->jobs[j];
		uint64_t x = seed * 0x100000001b3ULL + (uint64_t)j * 0x9e3779b97f4a7c15ULL + 1;

		memset(sj, 0, sizeof(*sj));
		sj->job = jobs[j].job;
		sj->tr = (hm_traffic_t *)jobs[j].tr; /* borrowed: never freed here */
		sj->npaths = jobs[j].npaths > 0 ? jobs[j].npaths : 1;
		sj->dec = jobs[j].dec;
		if (sj->dec.path < 0 || sj->dec.path >= sj->npaths)
			sj->dec.path = 0;
		sj->state = SJ_RUNNING;
		sj->cv = jobs[j].jitter_cv;
		sj->target_iters = jobs[j].iters_left > 0 ? ceil(jobs[j].iters_left - 1e-9) : INFINITY;
		sj->run_pos = sj->act_pos = -1;
		sj->cur_phase = -1;
		sj->rng[0] = hm_rng_next(&x);
		sj->rng[1] = hm_rng_next(&x);
		/* A one-time delay postpones the first iteration. */
		double first = jobs[j].first_s > 0 ? jobs[j].first_s : 0;
		if (sj->dec.period_s == 0 && sj->dec.shift_s > 0)
			first += sj->dec.shift_s;
		rc = sim_heap_push(&s->heap, first, SEV_ITER_START, j, err);
		if (rc != HM_OK)
			goto out;
	}
	while (sim_next(s, &ev)) {
		if (ev.t > horizon_s)
			break;
		s->now = ev.t;
		e->events++;
		rc = sim_handle(s, &ev, err);
		if (rc != HM_OK)
			goto out;
	}
	for (int j = 0; j < n; j++) {
		const sim_job_t *sj = &s->jobs[j];
		double m = sj->iters > 0 ? sj->sum_iter_s / sj->iters : horizon_s - measure_from_s;
		/* An unfinished iteration longer than the mean counts as that long. */
		double open = horizon_s - sj->iter_start_s;
		if (sj->state != SJ_DONE && sj->iters > 0 && open > m &&
		    sj->iter_start_s >= measure_from_s)
			m = (sj->sum_iter_s + open) / (sj->iters + 1);
		out[j].mean_iter_s = m;
		out[j].iters = sj->ep_n;
		out[j].end_s = sj->state == SJ_DONE ? sj->end_s : -1;
	}
out:
	clear(s, n);
	s->nj = e->cap;
	return rc;
}
