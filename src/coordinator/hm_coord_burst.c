/*
 * hm_coord_burst.c - the measured burst into the model. At each decide every
 * job's window of measured bursts (the node agents' beats since the last one)
 * is compared with what the model predicted for the conditions it ran under,
 * and a job whose real collectives are longer or shorter than its declared
 * bytes gets equivalent bytes (hm_burst_est.h; docs/architecture.md "The
 * measured burst").
 *
 * The conditions: a job held in its slots (a period in force, and its nodes'
 * steps report an applied epoch) is what the model staggered away from the
 * others, so it predicted the burst alone. Any other job was predicted to take
 * between its burst alone and that burst over its worst max-min share of a link
 * (flows of every other job on it, as harmonicsctl job --explain shows it).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hm_coord_int.h"
#include "hm_log.h"

/* Flows of j on each link, its busiest phase (flows[l], stamped mark[l] == stamp). */
static void job_link_flows(const hm_cjob_t *j, int nl, int *flows, int *mark, int stamp)
{
	for (int p = 0; p < j->tr.nphases && p < HM_MAX_PHASES; p++)
		for (int k = 0; k < j->tr.phases[p].nlinks; k++) {
			int l = j->tr.phases[p].links[k], f = j->tr.phases[p].flows[k];

			if (l < 0 || l >= nl)
				continue;
			if (mark[l] != stamp) {
				mark[l] = stamp;
				flows[l] = f;
			} else if (f > flows[l]) {
				flows[l] = f;
			}
		}
}

/* Add j's flows into total[] (each link once); its own into own[] (stamped). */
static void add_job(const hm_cjob_t *j, int nl, int *own, int *mark, int stamp, double *total)
{
	job_link_flows(j, nl, own, mark, stamp);
	for (int p = 0; p < j->tr.nphases && p < HM_MAX_PHASES; p++)
		for (int k = 0; k < j->tr.phases[p].nlinks; k++) {
			int l = j->tr.phases[p].links[k];

			if (l >= 0 && l < nl && mark[l] == stamp) {
				total[l] += own[l];
				mark[l] = -stamp; /* counted */
			}
		}
}

/* Its worst max-min share of a link against every job's flows (1: alone everywhere). */
static double worst_share(const hm_cjob_t *j, int nl, int *own, int *mark, int stamp,
			  const double *total)
{
	double worst = 1;

	job_link_flows(j, nl, own, mark, stamp);
	for (int l = 0; l < nl; l++)
		if (mark[l] == stamp && total[l] > 0 && own[l] / total[l] < worst)
			worst = own[l] / total[l];
	return worst;
}

/* Held in its slots over the window: a period in force and its steps applying one. */
static bool held(const hm_cjob_t *j)
{
	int reporting = 0;

	if (!j->a.scheduled || j->a.period_us <= 0 || (j->has_prev && j->prev.period_us <= 0))
		return false;
	for (int s = 0; j->node_applied && s < j->pl.nslots; s++) {
		if (j->node_steps[s] <= 0)
			continue;
		if (j->node_applied[s] < 0)
			return false; /* running free (no file, stale, off) */
		reporting++;
	}
	return reporting > 0;
}

/* Derive j again with its new factor; the nodes' reports stay (same placement). */
static void rederive(hm_coord_t *c, hm_cjob_t *j)
{
	long *applied = j->node_applied;
	int *steps = j->node_steps, n = j->pl.nslots;

	j->node_applied = NULL;
	j->node_steps = NULL;
	hm_coord_derive(c, j);
	if (applied && steps && j->node_applied && j->node_steps && j->pl.nslots == n) {
		memcpy(j->node_applied, applied, (size_t)n * sizeof(*applied));
		memcpy(j->node_steps, steps, (size_t)n * sizeof(*steps));
	}
	free(applied);
	free(steps);
}

static void fold_job(hm_coord_t *c, hm_cjob_t *j, double share)
{
	double before = j->burst.factor, alone;
	hm_burst_window_t w;
	hm_burst_verdict_t v;

	alone = hm_traffic_alone_burst_s(&j->job.profile, &j->tr);
	w = (hm_burst_window_t){
	    .burst_s = j->meas.comm_s,
	    .n = j->burst_win_n,
	    .iter_s = j->meas.iter_s,
	    .pred_alone_s = alone,
	    .pred_shared_s = held(j) || !(share > 0) ? alone : alone / share,
	};
	v = hm_burst_est_fold(&j->burst, &w);
	if (v != HM_BURST_USED && v != HM_BURST_NONE)
		hm_log(HM_LOG_VERBOSE,
		       "job %u: measured burst %.6g ms over %g bursts refused (%s; modelled %.6g "
		       "ms alone, iteration %.6g ms)",
		       j->job_id, w.burst_s * 1e3, w.n, hm_burst_verdict_str(v), alone * 1e3,
		       w.iter_s * 1e3);
	if (j->burst.factor == before)
		return;
	hm_log(HM_LOG_INFO,
	       "job %u: modelled burst %.6g ms -> %.6g ms alone (measured %.6g ms; declared "
	       "bytes x %.3g, from %g bursts)",
	       j->job_id, alone * 1e3, alone * j->burst.factor / before * 1e3, w.burst_s * 1e3,
	       j->burst.factor, j->burst.total);
	rederive(c, j);
}

void hm_coord_fold_bursts(hm_coord_t *c)
{
	int nl = c->topo->nlinks, *own = NULL, *mark = NULL;
	double *total = NULL;
	bool any = false;

	for (int i = 0; i < c->njobs; i++)
		any |= c->jobs[i].burst_win_n > 0 && c->jobs[i].schedulable && c->jobs[i].have_tr;
	if (!any)
		return;
	own = calloc((size_t)nl + 1, sizeof(*own));
	mark = calloc((size_t)nl + 1, sizeof(*mark));
	total = calloc((size_t)nl + 1, sizeof(*total));
	if (!own || !mark || !total) {
		hm_log(HM_LOG_ERROR, "measured bursts: out of memory for %d links; not folded", nl);
		goto out;
	}
	for (int i = 0; i < c->njobs; i++)
		if (c->jobs[i].have_tr)
			add_job(&c->jobs[i], nl, own, mark, i + 1, total);
	for (int i = 0; i < c->njobs; i++) {
		hm_cjob_t *j = &c->jobs[i];

		if (j->burst_win_n > 0 && j->schedulable && j->have_tr)
			fold_job(c, j, worst_share(j, nl, own, mark, c->njobs + i + 1, total));
		j->burst_win_n = 0;
	}
out:
	free(own);
	free(mark);
	free(total);
}
