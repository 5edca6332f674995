/* Snapshots of the engine for status queries (copies; the mutex is held briefly). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_coord_int.h"

/* hm_coord_int.h */
void hm_coord_view_of(const hm_topo_t *t, const hm_cjob_t *j, hm_coord_job_view_t *v)
{
	memset(v, 0, sizeof(*v));
	v->job_id = j->job_id;
	v->uid = j->uid;
	snprintf(v->account, sizeof(v->account), "%s", j->account);
	snprintf(v->name, sizeof(v->name), "%s", j->name);
	snprintf(v->nodes, sizeof(v->nodes), "%s", j->nodes);
	snprintf(v->mode, sizeof(v->mode), "%s", j->mode);
	snprintf(v->profile, sizeof(v->profile), "%s", j->eff_profile);
	v->gpus = j->job.gpus; /* 0 when the node list could not be placed */
	v->nracks = j->nracks;
	snprintf(v->topology, sizeof(v->topology), "%s", hm_topo_plane_name(t, j->plane));
	v->start_s = j->start_s;
	if (j->decided) {
		v->a = j->a;
	} else {
		v->a.scheduled = false;
		snprintf(v->a.reason, sizeof(v->a.reason), "%s",
			 j->schedulable ? "awaiting decision" : j->reason);
	}
	v->registered_steps = j->registered_steps;
	v->has_prev = j->has_prev;
	v->effective_us = j->effective_us;
	v->applied_epoch = -1;
	for (int s = 0; j->node_applied && s < j->pl.nslots; s++) {
		long e = j->node_applied[s];

		v->steps += j->node_steps[s];
		if (e >= 0 && (v->applied_epoch < 0 || e < v->applied_epoch))
			v->applied_epoch = e;
	}
	v->measured = j->measured;
	v->measured_period_us = j->measured && j->meas.iter_s > 0 ? j->meas.iter_s * 1e6 : -1;
	v->measured_burst_us = j->measured && j->meas.comm_s > 0 ? j->meas.comm_s * 1e6 : -1;
	v->slot_misses = j->slot_misses;
	v->class_in_force = hm_coord_class_in_force(j);
	v->unpaced = j->unpaced;
}

void hm_coord_stats(hm_coord_t *c, hm_coord_stats_t *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->mu);
	snprintf(out->policy, sizeof(out->policy), "%s", c->pol->name);
	out->epoch_s = c->conf.epoch_s;
	out->epoch = c->epoch;
	out->last_decide_s = c->last_decide_s;
	out->last_decide_wall_s = c->last_decide_wall_s;
	out->njobs = c->njobs;
	for (int i = 0; i < c->njobs; i++)
		out->nscheduled += c->jobs[i].decided && c->jobs[i].a.scheduled;
	out->nracks = c->topo->nracks;
	out->nhosts = c->topo->nhosts;
	out->ngpus = hm_topo_gpus(c->topo);
	out->requests = c->requests;
	out->refused = c->refused;
	out->started_s = c->started_s;
	pthread_mutex_unlock(&c->mu);
}

static int by_id(const void *a, const void *b)
{
	const hm_coord_job_view_t *x = a, *y = b;

	return x->job_id < y->job_id ? -1 : x->job_id > y->job_id;
}

hm_rc_t hm_coord_jobs(hm_coord_t *c, hm_coord_job_view_t **out, int *n)
{
	hm_rc_t rc = HM_OK;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&c->mu);
	if (c->njobs && !(*out = calloc((size_t)c->njobs, sizeof(**out)))) {
		rc = HM_ERR_NOMEM;
		goto out;
	}
	for (int i = 0; i < c->njobs; i++)
		hm_coord_view_of(c->topo, &c->jobs[i], &(*out)[i]);
	*n = c->njobs;
out:
	pthread_mutex_unlock(&c->mu);
	if (*n > 1)
		qsort(*out, (size_t)*n, sizeof(**out), by_id);
	return rc;
}

hm_rc_t hm_coord_job(hm_coord_t *c, uint32_t job_id, hm_coord_job_view_t *out)
{
	hm_cjob_t *j;
	hm_rc_t rc = HM_OK;

	pthread_mutex_lock(&c->mu);
	if ((j = hm_coord_find(c, job_id)))
		hm_coord_view_of(c->topo, j, out);
	else
		rc = HM_ERR_NOTFOUND;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* hm_coord_int.h */
void hm_coord_job_link_util(const hm_topo_t *t, const hm_cjob_t *j, double *util, double *ju)
{
	if (!j->have_tr || j->tr.alone_iter_s <= 0)
		return;
	for (int p = 0; p < j->tr.nphases; p++) {
		const hm_phase_load_t *pl = &j->tr.phases[p];

		for (int k = 0; k < pl->nlinks; k++)
			ju[pl->links[k]] +=
			    pl->flows[k] * pl->flow_bytes * 8.0 /
			    (j->tr.alone_iter_s * t->links[pl->links[k]].capacity_bps);
	}
	for (int p = 0; p < j->tr.nphases; p++)
		for (int k = 0; k < j->tr.phases[p].nlinks; k++) {
			int l = j->tr.phases[p].links[k];

			util[l] += ju[l];
			ju[l] = 0;
		}
}

/* One pass over hosts, jobs and links (the mutex is held: per rack passes took
   seconds on 1,024 racks and held off every agent's beat). */
hm_rc_t hm_coord_racks(hm_coord_t *c, hm_coord_rack_view_t **out, int *n)
{
	const hm_topo_t *t;
	double *util = NULL, *ju = NULL;
	int *seen = NULL;
	hm_rc_t rc = HM_OK;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&c->mu);
	t = c->topo;
	util = calloc((size_t)t->nlinks + 1, sizeof(*util));
	ju = calloc((size_t)t->nlinks + 1, sizeof(*ju));
	seen = calloc((size_t)t->nracks + 1, sizeof(*seen));
	if (!util || !ju || !seen ||
	    (t->nracks && !(*out = calloc((size_t)t->nracks, sizeof(**out))))) {
		rc = HM_ERR_NOMEM;
		goto out;
	}
	for (int r = 0; r < t->nracks; r++) {
		hm_coord_rack_view_t *v = &(*out)[r];
		int sw = t->rack_switch ? t->rack_switch[r] : -1;

		v->rack = r;
		snprintf(v->name, sizeof(v->name), "%s",
			 sw >= 0 && sw < t->nswitches ? t->switches[sw].name : "?");
		hm_coord_rack_leader_view(c, r, v);
	}
	for (int h = 0; h < t->nhosts; h++) {
		int r = t->hosts[h].rack;

		if (r >= 0 && r < t->nracks) {
			(*out)[r].nhosts++;
			(*out)[r].ngpus += t->hosts[h].gpus;
		}
	}
	for (int i = 0; i < c->njobs; i++) {
		const hm_cjob_t *j = &c->jobs[i];

		for (int s = 0; s < j->pl.nslots; s++) {
			int r = t->hosts[j->pl.slots[s].host].rack;

			if (r < 0 || r >= t->nracks || seen[r] == i + 1)
				continue;
			seen[r] = i + 1; /* each job once per rack */
			(*out)[r].njobs++;
			(*out)[r].ncross += j->nracks > 1;
		}
		hm_coord_job_link_util(t, j, util, ju);
	}
	for (int l = 0; l < t->nlinks; l++) {
		int r = t->links[l].rack;

		if (r >= 0 && r < t->nracks && util[l] > (*out)[r].load)
			(*out)[r].load = util[l];
	}
	*n = t->nracks;
out:
	if (rc != HM_OK) {
		free(*out);
		*out = NULL;
	}
	free(util);
	free(ju);
	free(seen);
	pthread_mutex_unlock(&c->mu);
	return rc;
}
