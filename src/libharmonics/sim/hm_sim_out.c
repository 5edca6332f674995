/*
 * Simulator metrics: iteration samples (bounded reservoirs), the link
 * utilisation timeline, and the per-job and aggregate results of hm_sim.h.
 */
#include "hm_sim_int.h"

#include "hm_bound.h"
#include "hm_sort.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SIM_JOB_SAMPLES 1024 /* iteration times kept per job for its p99 */

/* xoroshiro128+ in [0, 1). */
double sim_rand01(uint64_t st[2])
{
	uint64_t s0 = st[0], s1 = st[1], r = s0 + s1;

	s1 ^= s0;
	st[0] = ((s0 << 24) | (s0 >> 40)) ^ s1 ^ (s1 << 16);
	st[1] = (s1 << 37) | (s1 >> 27);
	return (double)(r >> 11) * (1.0 / 9007199254740992.0);
}

/* Reservoir slot for the n-th item (0-based) of a stream into cap slots; -1 = drop. */
static int reservoir_slot(uint64_t st[2], double n, int cap)
{
	if (n < cap)
		return (int)n;
	double k = floor(sim_rand01(st) * (n + 1));
	return k < cap ? (int)k : -1;
}

void sim_record_iter(sim_t *s, sim_job_t *sj, double iter_s)
{
	int slot;

	if (s->eval) {
		sj->ep_n++; /* every iteration of the run: when it ends */
		if (s->now >= s->measure_from_s) {
			sj->iters++;
			sj->sum_iter_s += iter_s;
		}
		return;
	}
	if (!sj->samp) {
		double want =
		    sj->target_iters < SIM_JOB_SAMPLES ? sj->target_iters : SIM_JOB_SAMPLES;
		sj->cap_samp = want > 1 ? (int)want : 1;
		sj->samp = malloc((size_t)sj->cap_samp * sizeof(double));
		if (!sj->samp)
			sj->cap_samp = 0; /* p99 falls back to the mean */
	}
	slot = sj->cap_samp ? reservoir_slot(s->rng, sj->iters, sj->cap_samp) : -1;
	if (slot >= 0) {
		sj->samp[slot] = iter_s;
		if (slot >= sj->nsamp)
			sj->nsamp = slot + 1;
	}
	slot = reservoir_slot(s->rng, s->seen_samples, s->cap_samples);
	if (slot >= 0) {
		s->samp_raw[slot] = iter_s;
		s->samp_norm[slot] = sj->alone_iter_s > 0 ? iter_s / sj->alone_iter_s : 1;
	}
	s->seen_samples++;
	sj->iters++;
	sj->sum_iter_s += iter_s;
	sj->ep_n++;
	sj->ep_iter_s += iter_s;
	sj->ep_iter2_s += iter_s * iter_s;
	/* Compute and burst end before the iteration does; counting them here
	 * keeps an epoch's three sums over the same iterations. */
	sj->ep_compute_s += sj->compute_s;
	sj->ep_compute2_s += sj->compute_s * sj->compute_s;
	sj->ep_comm_s += sj->burst_s;
}

hm_rc_t sim_sample_util(sim_t *s, hm_err_t *err)
{
	hm_sim_result_t *r = s->res;

	if (r->nt == s->cap_t) {
		int cap = s->cap_t ? s->cap_t * 2 : 256;
		double *a = realloc(r->t_s, (size_t)cap * sizeof(double));
		if (a)
			r->t_s = a;
		double *b = realloc(r->util_busiest, (size_t)cap * sizeof(double));
		if (b)
			r->util_busiest = b;
		double *c = realloc(r->util_mean, (size_t)cap * sizeof(double));
		if (c)
			r->util_mean = c;
		if (!a || !b || !c)
			return hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory (samples)");
		s->cap_t = cap;
	}
	r->t_s[r->nt] = s->now;
	sim_net_util(s, &r->util_busiest[r->nt], &r->util_mean[r->nt]);
	r->nt++;
	return HM_OK;
}

/* Nearest-rank 99th percentile (selects in place: the array is reordered). */
static double nth_select(double *v, int n, int k)
{
	int lo = 0, hi = n - 1;

	while (lo < hi) {
		double pivot = v[lo + (hi - lo) / 2];
		int i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				double t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

static double p99(double *v, int n)
{
	if (n <= 0)
		return 0;
	int k = (int)ceil(0.99 * n) - 1;
	if (k < 0)
		k = 0;
	return nth_select(v, n, k);
}

/*
 * Lower bound on this run's mean JCT (hm_bound.h) over its completed jobs:
 * each released at its start (queueing as it happened here), needing its
 * iterations at the contention-free time of its realised mean compute (the
 * jitter draws are the same under every policy; iteration time is convex in
 * compute, so that is a bound on the mean), on the link groups its paths
 * cannot avoid.
 */
static hm_rc_t sim_bound(sim_t *s, hm_err_t *err)
{
	hm_sim_result_t *r = s->res;
	hm_bound_job_t *bj = NULL;
	int *group = NULL, *gpool = NULL, ngroups = 0, nb = 0, cap = 0, used = 0;
	double *gcap = NULL, *bpool = NULL, sum = 0, arr = 0;
	hm_rc_t rc;

	r->bound_mean_jct_s = 0;
	if (r->completed == 0)
		return HM_OK;
	rc = hm_bound_link_groups(s->topo, &group, &gcap, &ngroups, err);
	if (rc != HM_OK)
		return rc;
	for (int j = 0; j < s->nj; j++)
		if (s->jobs[j].state == SJ_DONE)
			for (int p = 0; p < s->jobs[j].tr[0].nphases; p++)
				cap += s->jobs[j].tr[0].phases[p].nlinks;
	bj = calloc((size_t)r->completed + 1, sizeof(*bj));
	gpool = malloc(sizeof(int) * ((size_t)cap + 1));
	bpool = malloc(sizeof(double) * ((size_t)cap + 1));
	if (!bj || !gpool || !bpool) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory (bound)");
		goto out;
	}
	for (int j = 0; j < s->nj; j++) {
		sim_job_t *sj = &s->jobs[j];
		hm_profile_t prof;
		double alone = INFINITY;
		int n;

		if (sj->state != SJ_DONE)
			continue;
		prof = sj->job->profile;
		if (sj->iters > 0)
			prof.compute_s = sj->sum_compute_s / sj->iters;
		for (int p = 0; p < sj->npaths; p++)
			alone = fmin(alone, hm_traffic_alone_iter_s(s->topo, &prof, &sj->tr[p]));
		n = hm_bound_job_groups(sj->tr, sj->npaths, group, gpool + used, bpool + used,
					cap - used);
		if (n < 0) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory (bound)");
			goto out;
		}
		for (int k = 0; k < n; k++)
			bpool[used + k] *= sj->iters;
		bj[nb].release_s = sj->start_s;
		bj[nb].work_s = sj->iters * alone;
		bj[nb].ngroups = n;
		bj[nb].group = gpool + used;
		bj[nb].bits = bpool + used;
		used += n;
		arr += sj->job->arrival_s;
		nb++;
	}
	rc = hm_bound_sum_completion(gcap, ngroups, bj, nb, &sum, err);
	if (rc == HM_OK)
		r->bound_mean_jct_s = (sum - arr) / nb;
out:
	free(bj);
	free(gpool);
	free(bpool);
	free(group);
	free(gcap);
	return rc;
}

hm_rc_t sim_results(sim_t *s, hm_err_t *err)
{
	hm_sim_result_t *r = s->res;
	double *jct = NULL;
	double gw_compute = 0, gw_wall = 0, n_iter_jobs = 0;
	hm_rc_t rc = HM_OK;

	r->njobs = s->nj;
	r->jobs = calloc((size_t)(s->nj > 0 ? s->nj : 1), sizeof(*r->jobs));
	jct = malloc((size_t)(s->nj > 0 ? s->nj : 1) * sizeof(*jct));
	if (!r->jobs || !jct) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory (results)");
		goto out;
	}
	for (int j = 0; j < s->nj; j++) {
		sim_job_t *sj = &s->jobs[j];
		hm_sim_job_result_t *o = &r->jobs[j];
		o->id = sj->job->id;
		snprintf(o->name, sizeof(o->name), "%s", sj->job->name);
		o->gpus = sj->job->gpus;
		o->arrival_s = sj->job->arrival_s;
		o->placed = sj->state == SJ_RUNNING || sj->state == SJ_DONE;
		o->completed = sj->state == SJ_DONE;
		if (sj->state == SJ_QUEUED || sj->state == SJ_PENDING)
			snprintf(o->note, sizeof(o->note), "%s",
				 sj->state == SJ_QUEUED ? "still waiting for GPUs at the end"
							: "not arrived by the end");
		else
			snprintf(o->note, sizeof(o->note), "%s", sj->note);
		if (!o->placed) {
			r->unplaced++;
			continue;
		}
		o->start_s = sj->start_s;
		o->end_s = o->completed ? sj->end_s : s->now;
		o->iterations = sj->iters;
		o->alone_iter_s = sj->alone_iter_s;
		double wall = o->end_s - o->start_s;
		o->gpu_util = wall > 0 ? sj->sum_compute_s / wall : 0;
		if (o->gpu_util > 1)
			o->gpu_util = 1; /* a compute that ended exactly at the horizon */
		gw_compute += o->gpus * sj->sum_compute_s;
		gw_wall += o->gpus * wall;
		if (o->completed) {
			o->jct_s = o->end_s - o->arrival_s;
			jct[r->completed++] = o->jct_s;
			r->mean_jct_s += o->jct_s;
			if (o->end_s > r->makespan_s)
				r->makespan_s = o->end_s;
		}
		if (sj->iters > 0) {
			o->mean_iter_s = sj->sum_iter_s / sj->iters;
			o->mean_comm_s = sj->sum_comm_s / sj->iters;
			o->p99_iter_s = sj->nsamp > 0 ? p99(sj->samp, sj->nsamp) : o->mean_iter_s;
			o->slowdown = o->alone_iter_s > 0 ? o->mean_iter_s / o->alone_iter_s : 1;
			r->mean_iter_s += o->mean_iter_s;
			r->mean_comm_s += o->mean_comm_s;
			r->mean_slowdown += o->slowdown;
			n_iter_jobs++;
		}
	}
	if (r->completed > 0) {
		r->mean_jct_s /= r->completed;
		r->p99_jct_s = p99(jct, r->completed);
	}
	if (n_iter_jobs > 0) {
		r->mean_iter_s /= n_iter_jobs;
		r->mean_comm_s /= n_iter_jobs;
		r->mean_slowdown /= n_iter_jobs;
	}
	r->gpu_util = gw_wall > 0 ? gw_compute / gw_wall : 0;
	rc = sim_bound(s, err);
	if (rc != HM_OK)
		goto out;
	r->nsamples = s->seen_samples < s->cap_samples ? (int)s->seen_samples : s->cap_samples;
	r->p99_iter_s = p99(s->samp_raw, r->nsamples);
	r->iter_slowdown_samples =
	    malloc((size_t)(r->nsamples > 0 ? r->nsamples : 1) * sizeof(double));
	if (!r->iter_slowdown_samples) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory (results)");
		goto out;
	}
	memcpy(r->iter_slowdown_samples, s->samp_norm, (size_t)r->nsamples * sizeof(double));
	qsort(r->iter_slowdown_samples, (size_t)r->nsamples, sizeof(double), hm_cmp_double);
out:
	free(jct);
	return rc;
}

void hm_sim_result_free(hm_sim_result_t *r)
{
	if (!r)
		return;
	free(r->jobs);
	free(r->iter_slowdown_samples);
	free(r->t_s);
	free(r->util_busiest);
	free(r->util_mean);
	r->jobs = NULL;
	r->iter_slowdown_samples = NULL;
	r->t_s = r->util_busiest = r->util_mean = NULL;
	r->njobs = r->nsamples = r->nt = 0;
}
