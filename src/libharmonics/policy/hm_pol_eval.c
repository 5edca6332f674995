/* Judging a component's decisions in the simulator's model (hm_pol_eval.h). */
#include "hm_pol_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hm_pol_common.h"
#include "hm_rng.h"

#define EVAL_MIN_HORIZON_S 2.0

bool hm_pol_same_decision(const hm_decision_t *a, const hm_decision_t *b)
{
	return a->shift_s == b->shift_s && a->period_s == b->period_s && a->guard_s == b->guard_s &&
	       a->origin_s == b->origin_s && a->prio == b->prio && a->path == b->path;
}

long hm_pol_class_steps(int n, int K)
{
	return (long)n * K + (long)n * (n - 1) / 2;
}

bool hm_pol_class_step(const hm_decision_t *best, int n, int K, long q, hm_decision_t *d)
{
	memcpy(d, best, sizeof(*d) * (size_t)n);
	if (q < (long)n * K) {
		int i = (int)(q / K), k = (int)(q % K);
		d[i].prio = k;
		return k != best[i].prio;
	}
	q -= (long)n * K;
	for (int i = 0; i < n; i++) {
		if (q < n - 1 - i) {
			int j = i + 1 + (int)q;
			d[i].prio = best[j].prio;
			d[j].prio = best[i].prio;
			return best[i].prio != best[j].prio;
		}
		q -= n - 1 - i;
	}
	return false;
}

double hm_pol_keep_bar(double base, double keep, const hm_decision_t *d, const hm_decision_t *ref,
		       int n)
{
	int changed = 0;

	for (int i = 0; i < n; i++)
		changed += !hm_pol_same_decision(&d[i], &ref[i]);
	return n > 0 ? base * (1 + keep * changed / n) : base;
}

hm_rc_t hm_pol_comp_init(hm_pol_comp_t *c, const hm_sched_ctx_t *ctx, const int *member, int n,
			 double cv, uint64_t seed, int seeds, double periods, double max_events,
			 hm_err_t *err)
{
	double Tmax = 0, rate = 0;

	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	c->n = n;
	c->member = member;
	c->cv = cv;
	c->seed = seed;
	c->seeds = seeds > 0 ? seeds : 1;
	c->ej = calloc((size_t)n + 1, sizeof(*c->ej));
	c->T = calloc((size_t)n + 1, sizeof(double));
	c->left = calloc((size_t)n + 1, sizeof(double));
	c->out = calloc((size_t)n + 1, sizeof(*c->out));
	c->cur = calloc((size_t)n + 1, sizeof(*c->cur));
	if (!c->ej || !c->T || !c->left || !c->out || !c->cur) {
		hm_pol_comp_free(c);
		return hm_err_set(err, HM_ERR_NOMEM, "evaluation: out of memory for %d jobs", n);
	}
	for (int i = 0; i < n; i++) {
		const hm_sched_job_t *sj = &ctx->jobs[member[i]];
		bool multi = sj->npaths > 1 && sj->path_traffic;
		c->ej[i].job = sj->job;
		c->ej[i].tr = multi ? sj->path_traffic : sj->traffic;
		c->ej[i].npaths = multi ? sj->npaths : 1;
		c->ej[i].jitter_cv = -1; /* the component's cv unless set */
		c->T[i] = sj->traffic ? sj->traffic->alone_iter_s : 0;
		if (!(c->T[i] > 0))
			c->T[i] = sj->job && sj->job->profile.compute_s > 0
				      ? sj->job->profile.compute_s
				      : 1;
		c->cur[i] = sj->dec;
		Tmax = fmax(Tmax, c->T[i]);
		rate += 4.0 / c->T[i];
	}
	c->horizon_s = fmax(periods * Tmax, EVAL_MIN_HORIZON_S);
	if (rate * c->horizon_s > max_events)
		c->horizon_s = fmax(max_events / rate, 3 * Tmax);
	return HM_OK;
}

void hm_pol_comp_free(hm_pol_comp_t *c)
{
	free(c->ej);
	free(c->T);
	free(c->left);
	free(c->out);
	free(c->cur);
	c->ej = NULL;
	c->T = c->left = NULL;
	c->out = NULL;
	c->cur = NULL;
}

double hm_pol_comp_events(const hm_pol_comp_t *c)
{
	double rate = 0;

	for (int i = 0; i < c->n; i++)
		rate += 4.0 / c->T[i];
	return rate * c->horizon_s * c->seeds;
}

bool hm_pol_comp_to_end(hm_pol_comp_t *c, double max_events)
{
	double life = 0, rate = 0, now = c->ctx->now_s;

	for (int i = 0; i < c->n; i++) {
		const hm_sched_job_t *sj = &c->ctx->jobs[c->member[i]];
		/* The iteration under way is not in the run: it starts with the next. */
		double left = sj->iters_left - (sj->iter_start_s < now ? 1 : 0);
		if (!(sj->iters_left > 0))
			return false;
		c->left[i] = left >= 1 ? left : 1;
		life = fmax(life, c->left[i] * c->T[i]);
		rate += 4.0 / c->T[i];
	}
	/* Slowed down by the others, a job may take up to n times its life. */
	life *= c->n;
	if (rate * life > max_events)
		life = max_events / rate;
	for (int i = 0; i < c->n; i++)
		c->ej[i].iters_left = c->left[i];
	c->horizon_s = fmax(life, c->horizon_s);
	c->warmup_s = 0;
	c->to_end = true;
	return true;
}

double hm_pol_comp_score(hm_pol_comp_t *c, hm_sim_eval_t *ev, const hm_decision_t *d, hm_rc_t *rc,
			 hm_err_t *err)
{
	double sum = 0, work = 0, now = c->ctx->now_s;

	for (int i = 0; i < c->n; i++) {
		const hm_sched_job_t *sj = &c->ctx->jobs[c->member[i]];
		hm_sim_eval_job_t *e = &c->ej[i];
		double next = sj->iter_start_s + (sj->meas_iter_s > 0 ? sj->meas_iter_s : c->T[i]);
		e->dec = d[i];
		if (hm_pol_same_decision(&d[i], &c->cur[i]) && d[i].period_s == 0)
			e->dec.shift_s = 0; /* in force already: no new delay */
		/* As its traffic runs (hm_policy.h): contention is judged with the class
		   its packets carry, and a job nothing paces is never held. */
		if (sj->unpaced)
			e->dec.period_s = e->dec.shift_s = 0;
		if (sj->class_fixed)
			e->dec.prio = sj->class_in_force;
		if (e->dec.period_s > 0)
			e->dec.origin_s = d[i].origin_s - now;
		e->first_s = sj->iter_start_s >= now ? 0 : next > now ? next - now : 0;
	}
	for (int r = 0; r < c->seeds; r++) {
		/* Long-run judgement: phases drawn per seed, the same for every candidate. */
		uint64_t x = c->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)r;
		for (int i = 0; i < c->n && c->random_phase; i++)
			c->ej[i].first_s = hm_rng_unit(&x) * c->T[i];
		*rc = hm_sim_eval_run(ev, c->ej, c->n, c->horizon_s, c->warmup_s, c->cv,
				      c->seed + (uint64_t)r, c->out, err);
		if (*rc != HM_OK)
			return -1;
		for (int i = 0; i < c->n; i++) {
			const hm_sim_eval_out_t *o = &c->out[i];
			if (!c->to_end) {
				sum += o->mean_iter_s > 0 ? c->T[i] / o->mean_iter_s : 1;
				continue;
			}
			work += c->left[i] * c->T[i];
			sum += o->end_s >= 0 ? o->end_s
					     : c->horizon_s + fmax(c->left[i] - o->iters, 0) *
								  fmax(o->mean_iter_s, c->T[i]);
		}
	}
	c->runs++;
	if (c->to_end)
		return sum > 0 ? work / sum : 1;
	return sum / (c->n * c->seeds);
}

int hm_pol_comp_root(int *par, int a)
{
	while (par[a] != a)
		a = par[a] = par[par[a]];
	return a;
}

hm_rc_t hm_pol_components(const hm_sched_ctx_t *ctx, bool all_paths, int *par, hm_err_t *err)
{
	int nl = ctx->topo->nlinks, *first = malloc(sizeof(int) * ((size_t)nl + 1));

	if (!first)
		return hm_err_set(err, HM_ERR_NOMEM, "components: out of memory for %d links", nl);
	for (int l = 0; l < nl; l++)
		first[l] = -1;
	for (int i = 0; i < ctx->njobs; i++)
		par[i] = i;
	for (int i = 0; i < ctx->njobs; i++) {
		const hm_sched_job_t *sj = &ctx->jobs[i];
		int np = all_paths && sj->npaths > 1 && sj->path_traffic ? sj->npaths : 1;
		for (int p = 0; p < np; p++) {
			const hm_traffic_t *tr = hm_pol_traffic(sj, all_paths ? p : sj->dec.path);
			for (int ph = 0; tr && ph < tr->nphases; ph++)
				for (int k = 0; k < tr->phases[ph].nlinks; k++) {
					int l = tr->phases[ph].links[k];
					if (l < 0 || l >= nl)
						continue;
					if (first[l] < 0)
						first[l] = i;
					else
						par[hm_pol_comp_root(par, i)] =
						    hm_pol_comp_root(par, first[l]);
				}
		}
	}
	free(first);
	return HM_OK;
}
