/* The tiers' message records (see hm_rack_msg.h). */
#include "hm_rack_msg.h"

#include <stdlib.h>
#include <string.h>

void hm_rack_req_free(hm_rack_req_t *q)
{
	if (!q)
		return;
	free(q->jobs);
	free(q->link_pool);
	free(q->dbl_pool);
	memset(q, 0, sizeof(*q));
}

void hm_rack_rep_free(hm_rack_rep_t *p)
{
	if (!p)
		return;
	free(p->dec);
	memset(p, 0, sizeof(*p));
}

hm_rc_t hm_rack_req_alloc(hm_rack_req_t *q, int njobs, int nlinks_total, hm_err_t *err)
{
	q->jobs = calloc((size_t)njobs + 1, sizeof(*q->jobs));
	q->link_pool = calloc((size_t)nlinks_total + 1, sizeof(int));
	q->dbl_pool = calloc((size_t)nlinks_total + 1, sizeof(double));
	if (!q->jobs || !q->link_pool || !q->dbl_pool) {
		hm_rack_req_free(q);
		return hm_err_set(err, HM_ERR_NOMEM, "rack request: out of memory for %d jobs",
				  njobs);
	}
	q->njobs = njobs;
	return HM_OK;
}

hm_rc_t hm_rack_req_copy(hm_rack_req_t *dst, const hm_rack_req_t *src, hm_err_t *err)
{
	hm_rack_req_t q = {0};
	int nl = 0, used = 0;
	hm_rc_t rc;

	for (int i = 0; i < src->njobs; i++)
		nl += src->jobs[i].nlinks;
	if ((rc = hm_rack_req_alloc(&q, src->njobs, nl, err)) != HM_OK)
		return rc;
	q.rack = src->rack;
	q.round = src->round;
	q.shift_grid = src->shift_grid;
	q.hold_min_gain = src->hold_min_gain;
	q.guard_s = src->guard_s;
	for (int i = 0; i < src->njobs; i++) {
		const hm_rack_job_t *j = &src->jobs[i];
		hm_rack_job_t *o = &q.jobs[i];

		*o = *j;
		o->links = q.link_pool + used;
		o->demand = q.dbl_pool + used;
		memcpy(o->links, j->links, sizeof(int) * (size_t)j->nlinks);
		memcpy(o->demand, j->demand, sizeof(double) * (size_t)j->nlinks);
		used += j->nlinks;
	}
	*dst = q;
	return HM_OK;
}

hm_rc_t hm_rack_req_check(const hm_rack_req_t *q, hm_err_t *err)
{
	for (int i = 0; i < q->njobs; i++) {
		const hm_rack_job_t *j = &q->jobs[i];
		if (i > 0 && j->idx <= q->jobs[i - 1].idx)
			return hm_err_set(
			    err, HM_ERR_PROTO,
			    "rack_round: jobs[%d].i: %d after %d (accepted: ascending)", i, j->idx,
			    q->jobs[i - 1].idx);
		if (!(j->T_s > 0) || !(j->burst_s >= 0) || !(j->sd_s >= 0) ||
		    (!j->cross && !(j->R_s > 0)))
			return hm_err_set(
			    err, HM_ERR_PROTO,
			    "rack_round: jobs[%d]: T_s %g, burst_s %g, sd_s %g, R_s %g "
			    "(accepted: T_s > 0, burst_s >= 0, sd_s >= 0, R_s > 0)",
			    i, j->T_s, j->burst_s, j->sd_s, j->R_s);
		if (j->cross && j->hold && !(j->P_s > 0))
			return hm_err_set(
			    err, HM_ERR_PROTO,
			    "rack_round: jobs[%d]: holds with period %g (accepted: > 0)", i,
			    j->P_s);
		for (int k = 0; k < j->nlinks; k++) {
			if (k > 0 && j->links[k] <= j->links[k - 1])
				return hm_err_set(err, HM_ERR_PROTO,
						  "rack_round: jobs[%d].l[%d]: %d after %d "
						  "(accepted: ascending, unique)",
						  i, k, j->links[k], j->links[k - 1]);
			if (!(j->demand[k] > 0 && j->demand[k] <= 1))
				return hm_err_set(
				    err, HM_ERR_PROTO,
				    "rack_round: jobs[%d].d[%d]: %g (accepted: (0, 1])", i, k,
				    j->demand[k]);
		}
	}
	return HM_OK;
}
