/* The two tiers' round as messages (see hm_harmonics_tier.h, hm_rack_msg.h). */
#include "hm_harmonics_tier.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hm_harmonics_local.h"

static void set_free(hm_hjob_t *j)
{
	hm_hjob_run_free(j);
	j->decided = true;
}

/* Links of job j in rack r (count, and copied out when links != NULL). */
static int rack_links(const hm_hmodel_t *m, const hm_hjob_t *j, int r, int *links, double *demand)
{
	int n = 0;

	if (j->rack == r) { /* the rack's own job: all its links are r's (hm_hmodel_build) */
		if (links && j->pj->nlinks > 0) {
			memcpy(links, j->pj->links, sizeof(int) * (size_t)j->pj->nlinks);
			memcpy(demand, j->pj->demand, sizeof(double) * (size_t)j->pj->nlinks);
		}
		return j->pj->nlinks;
	}
	for (int k = 0; k < j->pj->nlinks; k++) {
		if (hm_hmodel_link_rack(m, j->pj->links[k]) != r)
			continue;
		if (links) {
			links[n] = j->pj->links[k];
			demand[n] = j->pj->demand[k];
		}
		n++;
	}
	return n;
}

static bool rack_has_work(hm_hmodel_t *m, int r)
{
	bool work = false;

	for (int k = m->rstart[r]; k < m->rstart[r + 1]; k++) {
		hm_hjob_t *j = &m->jobs[m->rjobs[k]];
		if (j->rack != r)
			continue;
		if (j->partnered)
			work = true;
		else
			set_free(j); /* alone on its links: never held */
	}
	return work;
}

static hm_rc_t make_request(const hm_hmodel_t *m, int r, unsigned long round, hm_rack_req_t *q,
			    hm_err_t *err)
{
	int nj = 0, nl = 0, used = 0;
	hm_rc_t rc;

	for (int k = m->rstart[r]; k < m->rstart[r + 1]; k++) {
		const hm_hjob_t *j = &m->jobs[m->rjobs[k]];
		nj++;
		nl += rack_links(m, j, r, NULL, NULL);
	}
	if (nj > HM_RACK_MAX_JOBS)
		return hm_err_set(
		    err, HM_ERR_RANGE,
		    "harmonics: rack %d has %d contending jobs (at most %d per request)", r, nj,
		    HM_RACK_MAX_JOBS);
	rc = hm_rack_req_alloc(q, nj, nl, err);
	if (rc != HM_OK)
		return rc;
	q->rack = r;
	q->round = round;
	q->shift_grid = m->cfg.shift_grid;
	q->hold_min_gain = m->cfg.hold_min_gain;
	q->guard_s = m->cfg.guard_s;
	nj = 0;
	for (int k = m->rstart[r]; k < m->rstart[r + 1]; k++) {
		const hm_hjob_t *j = &m->jobs[m->rjobs[k]];
		hm_rack_job_t *o = &q->jobs[nj++];

		o->idx = m->rjobs[k];
		o->job_id = j->id;
		o->cross = j->rack != r;
		o->burst_s = j->pj->burst_s;
		o->T_s = j->pj->T_s;
		o->sd_s = j->pj->sd_s;
		o->links = q->link_pool + used;
		o->demand = q->dbl_pool + used;
		o->nlinks = rack_links(m, j, r, o->links, o->demand);
		used += o->nlinks;
		if (o->nlinks > HM_RACK_MAX_LINKS) {
			hm_rack_req_free(q);
			return hm_err_set(
			    err, HM_ERR_RANGE,
			    "harmonics: job %d loads %d links of rack %d (at most %d)", j->id,
			    o->nlinks, r, HM_RACK_MAX_LINKS);
		}
		if (o->cross) {
			o->hold = j->hold;
			o->P_s = j->hold ? j->P_s : 0;
			o->s_s = j->hold ? j->s_s : 0;
		} else {
			o->R_s = j->R_s;
			o->partnered = j->partnered;
			o->prev_P_s = j->prev_P_s;
			o->prev_s_s = j->prev_s_s;
		}
	}
	return HM_OK;
}

hm_rc_t hm_tier_requests(hm_hmodel_t *m, unsigned long round, hm_rack_req_t **reqs, int *n,
			 hm_err_t *err)
{
	hm_rack_req_t *q;
	int nq = 0;
	hm_rc_t rc = HM_OK;

	*reqs = NULL;
	*n = 0;
	q = calloc((size_t)m->nracks + 1, sizeof(*q));
	if (!q)
		return hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory");
	for (int r = 0; r < m->nracks && rc == HM_OK; r++)
		if (rack_has_work(m, r))
			if ((rc = make_request(m, r, round, &q[nq], err)) == HM_OK)
				nq++;
	if (rc != HM_OK) {
		for (int i = 0; i < nq; i++)
			hm_rack_req_free(&q[i]);
		free(q);
		return rc;
	}
	*reqs = q;
	*n = nq;
	return HM_OK;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* What one thread reuses from rack to rack: the Local Scheduler's scratch and
   the rack model's arrays (grown, never shrunk). */
typedef struct {
	hm_local_t *ls;
	hm_hjob_t *jobs;
	hm_pjob_t *pj;
	int *rjobs;
	int cap;
} scratch_t;

static void scratch_free(scratch_t *sc)
{
	hm_local_free(sc->ls);
	free(sc->jobs);
	free(sc->pj);
	free(sc->rjobs);
	memset(sc, 0, sizeof(*sc));
}

static bool scratch_fit(scratch_t *sc, int n)
{
	if (!sc->ls && !(sc->ls = hm_local_create(NULL)))
		return false;
	if (n > sc->cap) {
		hm_hjob_t *j = realloc(sc->jobs, sizeof(*j) * (size_t)n);
		hm_pjob_t *p = j ? realloc(sc->pj, sizeof(*p) * (size_t)n) : NULL;
		int *r = p ? realloc(sc->rjobs, sizeof(*r) * (size_t)n) : NULL;
		if (j)
			sc->jobs = j;
		if (p)
			sc->pj = p;
		if (!r)
			return false;
		sc->rjobs = r;
		sc->cap = n;
	}
	memset(sc->jobs, 0, sizeof(*sc->jobs) * (size_t)n);
	memset(sc->pj, 0, sizeof(*sc->pj) * (size_t)n);
	return true;
}

static hm_rc_t solve_with(scratch_t *sc, const hm_rack_req_t *q, hm_rack_rep_t *rep, hm_err_t *err)
{
	hm_hmodel_t m;
	hm_pjob_t *pj;
	int rstart[2] = {0, q->njobs}, *rjobs, nlocal = 0;
	double t0 = now_ms();
	hm_rc_t rc = hm_rack_req_check(q, err);

	memset(rep, 0, sizeof(*rep));
	memset(&m, 0, sizeof(m));
	if (rc != HM_OK)
		return rc;
	rep->dec = calloc((size_t)q->njobs + 1, sizeof(*rep->dec));
	if (!rep->dec || !scratch_fit(sc, q->njobs + 1)) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "rack %d: out of memory for %d jobs", q->rack,
				q->njobs);
		goto out;
	}
	/* The rack's own model: one rack (index 0), its jobs in the coordinator's order. */
	m.cfg.shift_grid = q->shift_grid > 0 ? q->shift_grid : 24;
	m.cfg.hold_min_gain = q->hold_min_gain;
	m.cfg.guard_s = q->guard_s;
	m.njobs = q->njobs;
	m.nracks = 1;
	m.rstart = rstart;
	m.jobs = sc->jobs;
	m.rjobs = rjobs = sc->rjobs;
	pj = sc->pj;
	for (int i = 0; i < q->njobs; i++) {
		const hm_rack_job_t *o = &q->jobs[i];
		hm_hjob_t *j = &m.jobs[i];
		rjobs[i] = i;
		pj[i].idx = i;
		pj[i].burst_s = o->burst_s;
		pj[i].T_s = o->T_s;
		pj[i].sd_s = o->sd_s;
		pj[i].nlinks = o->nlinks;
		pj[i].links = o->links;
		pj[i].demand = o->demand;
		j->pj = &pj[i];
		j->id = o->idx;
		j->nracks = 1;
		j->partnered = o->cross || o->partnered;
		if (o->cross) {
			j->rack = HM_HJOB_CROSS;
			j->decided = true;
			j->hold = o->hold;
			j->P_s = o->P_s;
			j->s_s = o->s_s;
		} else {
			j->rack = 0;
			j->R_s = o->R_s;
			j->prev_P_s = o->prev_P_s;
			j->prev_s_s = o->prev_s_s;
		}
	}
	rc = hm_local_solve(sc->ls, &m, 0, err);
	if (rc != HM_OK)
		goto out;
	for (int i = 0; i < q->njobs; i++) {
		const hm_hjob_t *j = &m.jobs[i];
		hm_rack_dec_t *d;
		if (q->jobs[i].cross)
			continue;
		d = &rep->dec[nlocal++];
		d->idx = q->jobs[i].idx;
		d->hold = j->hold;
		d->P_s = j->hold ? j->P_s : 0;
		d->s_s = j->hold ? j->s_s : 0;
		d->guard_s = j->hold ? j->guard_s : 0;
	}
	rep->ndec = nlocal;
	rep->rack = q->rack;
	rep->round = q->round;
	rep->answered = true;
	rep->solve_ms = now_ms() - t0;
out:
	if (rc != HM_OK)
		hm_rack_rep_free(rep);
	return rc;
}

hm_rc_t hm_tier_rack_solve(const hm_rack_req_t *q, hm_rack_rep_t *rep, hm_err_t *err)
{
	scratch_t sc = {0};
	hm_rc_t rc = solve_with(&sc, q, rep, err);

	scratch_free(&sc);
	return rc;
}

typedef struct {
	const hm_rack_req_t *reqs;
	hm_rack_rep_t *reps;
	int n, next;
	pthread_mutex_t lock;
} pool_t;

/* A rack whose solve fails stays unanswered: its local jobs run free. */
static void *pool_worker(void *arg)
{
	pool_t *p = arg;
	scratch_t sc = {0};

	for (;;) {
		int i;
		hm_err_t err = {0};
		pthread_mutex_lock(&p->lock);
		i = p->next++;
		pthread_mutex_unlock(&p->lock);
		if (i >= p->n)
			break;
		if (solve_with(&sc, &p->reqs[i], &p->reps[i], &err) != HM_OK)
			p->reps[i].answered = false;
	}
	scratch_free(&sc);
	return NULL;
}

hm_rc_t hm_tier_inproc_exchange(void *arg, const hm_rack_req_t *reqs, hm_rack_rep_t *reps, int n,
				hm_err_t *err)
{
	pool_t p = {.reqs = reqs, .reps = reps, .n = n, .next = 0};
	int threads = arg ? *(const int *)arg : 1, started = 0;
	pthread_t tid[64];

	(void)err;
	if (threads > 64)
		threads = 64;
	if (threads > n)
		threads = n;
	pthread_mutex_init(&p.lock, NULL);
	for (int i = 0; threads > 1 && i < threads; i++)
		if (pthread_create(&tid[started], NULL, pool_worker, &p) == 0)
			started++;
	if (started == 0)
		pool_worker(&p); /* one thread asked, or none could start: here */
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&p.lock);
	return HM_OK;
}

static bool valid_dec(const hm_rack_dec_t *d, const hm_hjob_t *j)
{
	if (!d->hold)
		return true;
	return d->P_s >= j->R_s * (1 - 1e-9) && isfinite(d->P_s) && d->s_s >= 0 &&
	       d->s_s < d->P_s && d->guard_s >= 0 && d->guard_s < d->P_s;
}

bool hm_tier_apply(hm_hmodel_t *m, const hm_rack_req_t *q, const hm_rack_rep_t *rep)
{
	bool ok = rep->answered && rep->rack == q->rack && rep->round == q->round;
	int d = 0;

	/* The reply answers the request's local jobs, in its order, each once. */
	for (int i = 0; i < q->njobs && ok; i++) {
		if (q->jobs[i].cross)
			continue;
		ok = d < rep->ndec && rep->dec[d].idx == q->jobs[i].idx &&
		     valid_dec(&rep->dec[d], &m->jobs[q->jobs[i].idx]);
		d++;
	}
	ok = ok && d == rep->ndec;
	d = 0;
	for (int i = 0; i < q->njobs; i++) {
		hm_hjob_t *j;
		if (q->jobs[i].cross)
			continue;
		j = &m->jobs[q->jobs[i].idx];
		set_free(j);
		if (ok && rep->dec[d].hold) {
			j->hold = true;
			j->P_s = rep->dec[d].P_s;
			j->s_s = rep->dec[d].s_s;
			j->guard_s = rep->dec[d].guard_s;
		}
		d++;
	}
	return ok;
}

int hm_tier_pin_silent(hm_hmodel_t *m, const unsigned char *silent, int nsilent)
{
	int pinned = 0;

	for (int i = 0; silent && i < m->ncross; i++) {
		hm_hjob_t *j = &m->jobs[m->cross[i]];
		bool cut = false;
		for (int k = 0; k < j->nracks && !cut; k++)
			cut = j->racks[k] < nsilent && silent[j->racks[k]];
		if (cut) {
			set_free(j);
			pinned++;
		}
	}
	return pinned;
}

hm_rc_t hm_tier_round(hm_hmodel_t *m, unsigned long round, const hm_rack_transport_t *t,
		      int threads, hm_tier_stats_t *st, unsigned char *silent, hm_err_t *err)
{
	hm_rack_req_t *reqs = NULL;
	hm_rack_rep_t *reps = NULL;
	hm_tier_stats_t s = {0};
	int n = 0;
	hm_rc_t rc = hm_tier_requests(m, round, &reqs, &n, err);

	if (rc != HM_OK)
		return rc;
	reps = calloc((size_t)n + 1, sizeof(*reps));
	if (!reps) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "harmonics: out of memory");
		goto out;
	}
	if (n > 0) {
		if (t)
			rc = t->exchange(t->arg, reqs, reps, n, err);
		if (!t || rc != HM_OK) /* nothing tried: solve here */
			rc = hm_tier_inproc_exchange(&threads, reqs, reps, n, err);
	}
	if (silent)
		memset(silent, 0, (size_t)m->nracks);
	for (int i = 0; i < n; i++) {
		s.racks_asked++;
		if (!hm_tier_apply(m, &reqs[i], &reps[i])) {
			if (silent)
				silent[reqs[i].rack] = 1;
		} else {
			s.racks_answered++;
			s.racks_by_leader += reps[i].by_leader;
		}
	}
out:
	for (int i = 0; i < n; i++) {
		hm_rack_req_free(&reqs[i]);
		if (reps)
			hm_rack_rep_free(&reps[i]);
	}
	free(reqs);
	free(reps);
	if (st)
		*st = s;
	return rc;
}
