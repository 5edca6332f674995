/* Global Coordinator engine: job table, placement/traffic derivation, policy runs. */
#include "hm_coord.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "hm_clock.h"
#include "hm_coord_int.h"
#include "hm_hostlist.h"
#include "hm_log.h"
#include "hm_spec.h"

/* harmonics.conf -> a policy's configuration: the one place that maps them. */
static hm_rc_t policy_create(const hm_conf_t *conf, const hm_policy_ops_t *p,
			     const hm_rack_transport_t *racks, void **state, hm_err_t *err)
{
	hm_policy_cfg_t cfg;
	hm_rc_t rc;

	*state = NULL;
	hm_policy_cfg_defaults(&cfg);
	cfg.epoch_s = conf->epoch_s;
	cfg.prio_levels = conf->prio_levels;
	cfg.reserved_levels = conf->reserved_levels;
	cfg.budget_s = conf->decision_budget_s;
	if (conf->guard_s > 0) /* 0: the policy's own default */
		cfg.guard_s = conf->guard_s;
	cfg.racks = racks;
	if (p->create && (rc = p->create(&cfg, state, err)) != HM_OK) {
		hm_err_prefix(err, "policy %s", p->name);
		return rc;
	}
	return HM_OK;
}

static hm_rc_t policy_open(const hm_conf_t *conf, const hm_rack_transport_t *racks,
			   const hm_policy_ops_t **pol, void **state, hm_err_t *err)
{
	const hm_policy_ops_t *p = hm_policy_find(conf->policy);
	hm_rc_t rc;

	*state = NULL;
	if (!p)
		return hm_err_set(err, HM_ERR_NOTFOUND, "Policy=%s is not available (accepted: %s)",
				  conf->policy, hm_policy_names());
	if ((rc = policy_create(conf, p, racks, state, err)) != HM_OK)
		return rc;
	*pol = p;
	return HM_OK;
}

static void policy_close(const hm_policy_ops_t *pol, void *state)
{
	if (pol && pol->destroy)
		pol->destroy(state);
}

hm_rc_t hm_coord_create(const hm_conf_t *conf, hm_topo_t *topo, hm_coord_t **out, hm_err_t *err)
{
	hm_coord_t *c = NULL;
	pthread_condattr_t ca;
	hm_rc_t rc = HM_OK;

	*out = NULL;
	if (!topo) {
		rc = hm_err_set(err, HM_ERR_INVAL, "coordinator needs a topology");
		goto out;
	}
	if (!(c = calloc(1, sizeof(*c)))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		goto out;
	}
	c->conf = *conf;
	hm_coord_tier_init(c);
	if ((rc = policy_open(conf, &c->rack_tr, &c->pol, &c->pol_state, err)) != HM_OK)
		goto out_free;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv_job, &ca);
	pthread_cond_init(&c->cv_work, &ca);
	pthread_condattr_destroy(&ca);
	c->topo = topo;
	topo = NULL;
	if (hm_coord_nodes_rebuild(c, NULL) != HM_OK) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		hm_coord_destroy(c);
		c = NULL;
		goto out;
	}
	c->started_s = hm_real_s();
	*out = c;
	goto out;
out_free:
	hm_coord_tier_fini(c);
	free(c);
out:
	hm_topo_free(topo);
	return rc;
}

void hm_cjob_clear_derived(hm_cjob_t *j)
{
	hm_placement_free(&j->pl);
	memset(&j->pl, 0, sizeof(j->pl));
	if (j->have_tr)
		hm_traffic_free(&j->tr);
	memset(&j->tr, 0, sizeof(j->tr));
	j->have_tr = false;
	free(j->node_applied);
	free(j->node_steps);
	free(j->node_class);
	j->node_applied = NULL;
	j->node_steps = NULL;
	j->node_class = NULL;
}

void hm_coord_destroy(hm_coord_t *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->njobs; i++) {
		hm_cjob_clear_derived(&c->jobs[i]);
		free(c->jobs[i].nodes);
	}
	free(c->jobs);
	hm_coord_index_clear(&c->index);
	free(c->nodes);
	free(c->hj_start);
	free(c->hj_list);
	hm_coord_racks_free(c);
	policy_close(c->pol, c->pol_state);
	hm_topo_free(c->topo);
	pthread_cond_destroy(&c->cv_job);
	pthread_cond_destroy(&c->cv_work);
	pthread_mutex_destroy(&c->mu);
	hm_coord_tier_fini(c);
	free(c);
}

hm_cjob_t *hm_coord_find(hm_coord_t *c, uint32_t job_id)
{
	int k = hm_coord_index_get(&c->index, job_id);

	return k >= 0 && k < c->njobs && c->jobs[k].job_id == job_id ? &c->jobs[k] : NULL;
}

void hm_coord_set_unscheduled(hm_coord_t *c, hm_cjob_t *j, double now_s)
{
	hm_assignment_t *a = &j->a;

	if (j->decided && !a->scheduled && strcmp(a->reason, j->reason) == 0)
		return;
	memset(a, 0, sizeof(*a));
	a->scheduled = false;
	snprintf(a->reason, sizeof(a->reason), "%s", j->reason);
	snprintf(a->policy, sizeof(a->policy), "%s", c->conf.policy);
	a->epoch = c->epoch + 1; /* the counter moves once per decide run */
	a->decided_us = (int64_t)(now_s * 1e6);
	a->valid_until_us = a->decided_us + (int64_t)(c->conf.valid_s * 1e6);
	j->decided = true;
	j->has_prev = false; /* unscheduled at once: no switch */
	hm_coord_touch_nodes(c, j);
}

/* Effective profile: declared, else configured default, else measured. */
static hm_rc_t job_profile(hm_coord_t *c, hm_cjob_t *j, hm_profile_t *p, hm_err_t *err)
{
	const char *spec = j->profile_spec[0] ? j->profile_spec : c->conf.default_profile;

	if (*spec) {
		/* Views show the spec cut to eff_profile's size; the parser reads it whole. */
		if (snprintf(j->eff_profile, sizeof(j->eff_profile), "%s", spec) < 0)
			j->eff_profile[0] = '\0';
		hm_rc_t rc = hm_spec_profile_parse(spec, p, err);

		if (rc == HM_OK) /* the measured burst (hm_coord_burst.c) */
			hm_burst_est_apply(&j->burst, p);
		return rc;
	}
	if (j->measured && j->meas.iter_s > 0 && j->meas.bytes > 0) {
		memset(p, 0, sizeof(*p));
		snprintf(p->model, sizeof(p->model), "measured");
		p->compute_s = j->meas.compute_s > 0 ? j->meas.compute_s
						     : fmax(j->meas.iter_s - j->meas.comm_s, 0);
		p->nphases = 1;
		p->phases[0].coll = HM_COLL_ALLREDUCE_RING;
		p->phases[0].bytes = j->meas.bytes;
		hm_burst_est_apply(&j->burst, p);
		snprintf(j->eff_profile, sizeof(j->eff_profile), "measured:iter=%gs,bytes=%g",
			 j->meas.iter_s, j->meas.bytes);
		return HM_OK;
	}
	j->eff_profile[0] = '\0';
	return hm_err_set(err, HM_ERR_NOTFOUND, "no profile");
}

/*
 * The job's link loads on its partition's topology (a plane of c->topo). A
 * topology the file lacks, or a node outside it, would leave the job
 * unscheduled for a naming slip: it is modelled on the cluster default
 * instead, and the log says so (fail-open).
 */
hm_rc_t hm_coord_derive_plane(hm_coord_t *c, hm_cjob_t *j, const hm_profile_t *prof, hm_err_t *err)
{
	int plane = hm_topo_plane_index(c->topo, j->topology);
	hm_rc_t rc;

	j->plane = 0;
	if (plane < 0) {
		hm_log(HM_LOG_INFO,
		       "job %u: topology '%s' of its partition is not in the topology file: "
		       "modelled on the cluster default '%s'",
		       j->job_id, j->topology, hm_topo_plane_name(c->topo, 0));
		plane = 0;
	}
	if (plane > 0) {
		rc = hm_traffic_derive_plane(c->topo, plane, prof, &j->pl, 0, &j->tr, err);
		if (rc == HM_OK) {
			j->plane = plane;
			return HM_OK;
		}
		hm_log(HM_LOG_INFO, "job %u: topology '%s': %s: modelled on the cluster default",
		       j->job_id, j->topology, err->msg);
		memset(err, 0, sizeof(*err));
	}
	return hm_traffic_derive(c->topo, prof, &j->pl, 0, &j->tr, err);
}

void hm_coord_derive(hm_coord_t *c, hm_cjob_t *j)
{
	char **names = NULL;
	int nnames = 0, gpus = 0;
	hm_err_t e = {0};
	hm_profile_t prof;
	bool *rack_seen = NULL, placed = false;

	hm_cjob_clear_derived(j);
	c->hj_stale = true; /* its placement is derived again */
	j->schedulable = false;
	j->nracks = 0;
	j->job.gpus = 0;
	j->reason[0] = '\0';
	/* Placement first: even a job that is not scheduled shows where it runs. */
	if (hm_hostlist_expand(j->nodes, &names, &nnames, &e) != HM_OK || nnames == 0) {
		snprintf(j->reason, sizeof(j->reason), "bad node list");
		hm_log(HM_LOG_INFO, "job %u: node list '%s': %s", j->job_id, j->nodes, e.msg);
		goto out;
	}
	if (!(j->pl.slots = calloc((size_t)nnames, sizeof(*j->pl.slots))) ||
	    !(rack_seen = calloc((size_t)c->topo->nracks + 1, sizeof(*rack_seen)))) {
		snprintf(j->reason, sizeof(j->reason), "out of memory");
		goto out;
	}
	for (int i = 0; i < nnames; i++) {
		int h = hm_topo_host_index(c->topo, names[i]);
		const hm_host_t *host;
		uint32_t mask = 0;
		int g;

		if (h < 0) {
			snprintf(j->reason, sizeof(j->reason), "node %.40s not in topology",
				 names[i]);
			goto out;
		}
		host = &c->topo->hosts[h];
		g = j->gpus_per_node > 0 && j->gpus_per_node < host->gpus ? j->gpus_per_node
									  : host->gpus;
		/* The GPUs Slurm allocated, when known: their NICs carry the job. */
		if (hm_coord_gpu_mask(j->gpu_ids, names[i], &mask) < 0 || (mask >> host->gpus)) {
			snprintf(j->reason, sizeof(j->reason), "bad GPU indexes '%.40s' on %.40s",
				 j->gpu_ids, names[i]);
			goto out;
		}
		if (mask)
			g = __builtin_popcount(mask);
		j->pl.slots[j->pl.nslots++] = (hm_slot_t){.host = h, .gpus = g, .gpu_mask = mask};
		gpus += g;
		if (host->rack >= 0 && host->rack < c->topo->nracks && !rack_seen[host->rack]) {
			rack_seen[host->rack] = true;
			j->nracks++;
		}
	}
	placed = true;
	hm_coord_node_reports_reset(j);
	memset(&j->job, 0, sizeof(j->job));
	j->job.id = (int)j->job_id;
	snprintf(j->job.name, sizeof(j->job.name), "%s", j->name);
	j->job.gpus = gpus;
	j->job.arrival_s = j->start_s;

	if (strcmp(j->mode, "off") == 0) {
		snprintf(j->reason, sizeof(j->reason), "comm-sched off");
		goto out;
	}
	if (hm_spec_mode_check(j->mode, &e) != HM_OK) {
		snprintf(j->reason, sizeof(j->reason), "bad mode %s", j->mode);
		goto out;
	}
	/* One policy schedules all jobs that share links; submission refuses another
	   one where harmonics.conf is readable, this catches the rest. */
	if (strcmp(j->mode, "auto") != 0 && strcasecmp(j->mode, c->conf.policy) != 0) {
		snprintf(j->reason, sizeof(j->reason), "asked for %.20s, the cluster runs %.20s",
			 j->mode, c->conf.policy);
		goto out;
	}
	if (job_profile(c, j, &prof, &e) != HM_OK) {
		snprintf(j->reason, sizeof(j->reason), "%s",
			 e.rc == HM_ERR_NOTFOUND ? "no profile" : "bad profile");
		if (e.rc != HM_ERR_NOTFOUND)
			hm_log(HM_LOG_INFO, "job %u: %s", j->job_id, e.msg);
		goto out;
	}
	j->job.profile = prof;
	if (hm_coord_derive_plane(c, j, &prof, &e) != HM_OK) {
		snprintf(j->reason, sizeof(j->reason), "traffic: %.100s", e.msg);
		goto out;
	}
	j->have_tr = true;
	j->schedulable = true;
out:
	hm_hostlist_free(names, nnames);
	free(rack_seen);
	if (!j->schedulable && !placed) {
		hm_cjob_clear_derived(j);
		j->nracks = 0;
		j->job.gpus = 0;
	}
}

hm_rc_t hm_coord_reconfigure(hm_coord_t *c, const hm_conf_t *conf, hm_topo_t *topo, hm_err_t *err)
{
	const hm_policy_ops_t *pol = NULL;
	void *state = NULL;
	hm_rc_t rc;

	if ((rc = policy_open(conf, &c->rack_tr, &pol, &state, err)) != HM_OK) {
		hm_topo_free(topo);
		return rc;
	}
	hm_coord_lock_mut(c);
	policy_close(c->pol, c->pol_state);
	c->pol = pol;
	c->pol_state = state;
	c->conf = *conf;
	if (topo) {
		hm_topo_t *old = c->topo;

		c->topo = topo;
		if (hm_coord_nodes_rebuild(c, old) != HM_OK)
			hm_log(HM_LOG_ERROR, "reconfigure: out of memory for the node table");
		hm_topo_free(old);
	}
	/* Derived data point into the topology and depend on defaults: redo it, keep
	   decisions (the next decide starts from them). */
	for (int i = 0; i < c->njobs; i++)
		hm_coord_derive(c, &c->jobs[i]);
	c->need_decide = true;
	pthread_mutex_unlock(&c->mu);
	hm_log(HM_LOG_INFO, "reconfigured: policy %s, epoch %gs, %d jobs kept", conf->policy,
	       conf->epoch_s, c->njobs);
	return HM_OK;
}

hm_rc_t hm_coord_set_policy_ops(hm_coord_t *c, const hm_policy_ops_t *ops, hm_err_t *err)
{
	void *state = NULL;
	hm_rc_t rc;

	if ((rc = policy_create(&c->conf, ops, &c->rack_tr, &state, err)) != HM_OK)
		return rc;
	hm_coord_lock_mut(c);
	policy_close(c->pol, c->pol_state);
	c->pol = ops;
	c->pol_state = state;
	c->need_decide = true;
	pthread_mutex_unlock(&c->mu);
	return HM_OK;
}

hm_cjob_t *hm_coord_add(hm_coord_t *c, const hm_coord_job_info_t *info)
{
	c->hj_stale = true;
	hm_cjob_t *j;

	if (c->njobs == c->cap) {
		int cap = c->cap ? c->cap * 2 : 16;
		hm_cjob_t *nj = realloc(c->jobs, (size_t)cap * sizeof(*nj));

		if (!nj)
			return NULL;
		c->jobs = nj;
		c->cap = cap;
	}
	j = &c->jobs[c->njobs];
	memset(j, 0, sizeof(*j));
	j->job_id = info->job_id;
	j->slot_misses = -1;
	hm_burst_est_init(&j->burst);
	if (!(j->nodes = strdup(info->nodes)))
		return NULL;
	if (hm_coord_index_put(&c->index, info->job_id, c->njobs) != 0) {
		free(j->nodes);
		return NULL;
	}
	c->njobs++;
	return j;
}

/* The account is who may see the job, not a scheduling input: it changes no decision. */
static void set_account(hm_cjob_t *j, const hm_coord_job_info_t *info)
{
	const char *a = info->account ? info->account : "";

	if (strlen(a) >= sizeof(j->account))
		a = ""; /* cut, it could name another account */
	snprintf(j->account, sizeof(j->account), "%s", a);
}

static const char *info_mode(const hm_coord_t *c, const hm_coord_job_info_t *info)
{
	return info->mode && *info->mode ? info->mode : c->conf.default_mode;
}

hm_rc_t hm_coord_job_upsert(hm_coord_t *c, const hm_coord_job_info_t *info, hm_err_t *err)
{
	hm_cjob_t *j;
	char mode[HM_CONF_NAME_MAX];
	const char *profile = info->profile ? info->profile : "";
	hm_rc_t rc = HM_OK;

	if (!info->nodes || !*info->nodes)
		return hm_err_set(err, HM_ERR_INVAL, "job %u: empty node list", info->job_id);
	snprintf(mode, sizeof(mode), "%s", info_mode(c, info));
	for (char *p = mode; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	hm_coord_lock_mut(c);
	j = hm_coord_find(c, info->job_id);
	if (j && strcmp(j->nodes, info->nodes) == 0 && strcmp(j->mode, mode) == 0 &&
	    strcmp(j->profile_spec, profile) == 0 && j->gpus_per_node == info->gpus_per_node &&
	    strcmp(j->gpu_ids, info->gpu_ids ? info->gpu_ids : "") == 0 && j->uid == info->uid &&
	    strcmp(j->topology, info->topology ? info->topology : "") == 0) {
		set_account(j, info);
		goto out; /* unchanged: keep the decision */
	}
	if (!j) {
		if (!(j = hm_coord_add(c, info))) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
			goto out;
		}
		j->arrived = true;
	} else {
		char *nodes = strdup(info->nodes);

		if (!nodes) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
			goto out;
		}
		free(j->nodes);
		j->nodes = nodes;
	}
	j->job_id = info->job_id;
	j->uid = info->uid;
	set_account(j, info);
	snprintf(j->name, sizeof(j->name), "%s", info->name ? info->name : "");
	j->gpus_per_node = info->gpus_per_node;
	snprintf(j->gpu_ids, sizeof(j->gpu_ids), "%s", info->gpu_ids ? info->gpu_ids : "");
	snprintf(j->mode, sizeof(j->mode), "%s", mode);
	snprintf(j->topology, sizeof(j->topology), "%s", info->topology ? info->topology : "");
	if (strcmp(j->profile_spec, profile) != 0)
		hm_burst_est_init(&j->burst); /* learnt against the old declaration */
	snprintf(j->profile_spec, sizeof(j->profile_spec), "%s", profile);
	j->start_s = info->start_s;
	hm_coord_derive(c, j);
	c->need_decide = true;
	if (!j->schedulable && strcmp(j->mode, "off") != 0)
		rc = hm_err_set(err, HM_ERR_INVAL, "job %u runs unscheduled: %s", j->job_id,
				j->reason);
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

hm_rc_t hm_coord_job_remove(hm_coord_t *c, uint32_t job_id)
{
	hm_cjob_t *j;
	hm_rc_t rc = HM_OK;

	hm_coord_lock_mut(c);
	if (!(j = hm_coord_find(c, job_id))) {
		rc = HM_ERR_NOTFOUND;
		goto out;
	}
	hm_coord_touch_nodes(c, j); /* its nodes' lists change */
	hm_cjob_clear_derived(j);
	free(j->nodes);
	hm_coord_index_del(&c->index, job_id);
	*j = c->jobs[--c->njobs];
	if (j != &c->jobs[c->njobs]) /* the last job moved into the hole */
		(void)hm_coord_index_put(&c->index, j->job_id, (int)(j - c->jobs));
	c->hj_stale = true;
	c->need_decide = true;
	c->had_departure = true;
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

hm_rc_t hm_coord_job_ids(hm_coord_t *c, uint32_t **ids, int *n)
{
	hm_rc_t rc = HM_OK;

	*ids = NULL;
	*n = 0;
	pthread_mutex_lock(&c->mu);
	if (c->njobs && !(*ids = malloc((size_t)c->njobs * sizeof(**ids)))) {
		rc = HM_ERR_NOMEM;
		goto out;
	}
	for (int i = 0; i < c->njobs; i++)
		(*ids)[i] = c->jobs[i].job_id;
	*n = c->njobs;
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

hm_rc_t hm_coord_job_measure(hm_coord_t *c, uint32_t job_id, const hm_coord_measure_t *m,
			     hm_err_t *err)
{
	hm_cjob_t *j;
	hm_rc_t rc = HM_OK;

	if (!(m->iter_s >= 0 && m->compute_s >= 0 && m->comm_s >= 0 && m->iter_sd_s >= 0 &&
	      m->bytes >= 0 && m->compute_sd_s >= 0 &&
	      isfinite(m->iter_s + m->compute_s + m->comm_s + m->iter_sd_s + m->bytes +
		       m->compute_sd_s) &&
	      m->iter_s < 86400))
		return hm_err_set(err, HM_ERR_RANGE,
				  "job %u: measured values must be finite, >= 0, iter_s < 1 day",
				  job_id);
	/* Not hm_coord_lock_mut: a policy run reads neither j->meas (it has its copy)
	   nor a job it does not schedule, the only kind derived here. */
	pthread_mutex_lock(&c->mu);
	if (!(j = hm_coord_find(c, job_id))) {
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "job %u is not running", job_id);
		goto out;
	}
	j->meas = *m;
	j->measured = true;
	/* A job waiting for a profile can be scheduled now. */
	if (!j->schedulable && strcmp(j->reason, "no profile") == 0) {
		hm_coord_derive(c, j);
		if (j->schedulable) {
			j->arrived = true;
			c->need_decide = true;
		}
	}
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static bool same_schedule(const hm_assignment_t *x, const hm_assignment_t *y)
{
	return x->scheduled && y->scheduled && x->period_us == y->period_us &&
	       x->shift_us == y->shift_us && x->origin_us == y->origin_us &&
	       x->guard_us == y->guard_us && x->prio == y->prio && x->path == y->path &&
	       strcmp(x->policy, y->policy) == 0;
}

/*
 * A changed decision for a job whose steps may be running the current one:
 * every step switches at one time (contract C, docs/pacing.md), effective_us =
 * now + UpdateLead, so that agents and runtimes (which poll every 100 ms) hold
 * it before then. A step holds at most the one in force and one next: a change
 * decided while another is still pending waits (deferred) until that one took
 * effect. A first decision, or one from or to unscheduled, applies at once.
 */
static void switch_to(hm_coord_t *c, hm_cjob_t *j, const hm_assignment_t *n, int64_t now_us)
{
	if (!(j->decided && j->a.scheduled && n->scheduled)) {
		j->has_prev = j->has_deferred = false;
	} else if (j->has_prev && now_us < j->effective_us) {
		j->deferred = *n;
		j->has_deferred = true;
		return; /* nothing changes for the steps yet */
	} else {
		j->prev = j->a;
		j->has_prev = true;
		j->has_deferred = false;
		j->effective_us = now_us + (int64_t)c->conf.update_lead_ms * 1000;
	}
	j->a = *n;
	j->decided = true;
	hm_coord_touch_nodes(c, j);
}

/* A deferred decision whose predecessor took effect goes out now (caller holds mu). */
static bool release_deferred(hm_coord_t *c, hm_cjob_t *j, int64_t now_us)
{
	hm_assignment_t n;

	if (!j->has_deferred || now_us < j->effective_us)
		return false;
	n = j->deferred;
	j->has_deferred = false;
	switch_to(c, j, &n, now_us);
	return true;
}

/* Assignment from a policy decision; returns true when it differs from the current one. */
static bool apply_decision(hm_coord_t *c, hm_cjob_t *j, double now_s)
{
	int64_t now_us = (int64_t)llround(now_s * 1e6);
	hm_assignment_t n = {0};
	const hm_decision_t *d = &j->dec;

	n.scheduled = true;
	snprintf(n.policy, sizeof(n.policy), "%s", c->pol->name);
	n.period_us = (int64_t)llround(d->period_s * 1e6);
	n.shift_us = (int64_t)llround(d->shift_s * 1e6);
	n.origin_us = (int64_t)llround(d->origin_s * 1e6);
	n.guard_us = (int64_t)llround((d->guard_s > 0 ? d->guard_s : c->conf.guard_s) * 1e6);
	n.prio = d->prio;
	n.path = d->path;
	if (j->has_deferred && same_schedule(&j->deferred, &n))
		return false; /* already waiting to go out */
	if (j->decided && same_schedule(&j->a, &n)) {
		j->has_deferred = false; /* a later change back to what the steps get anyway */
		/* Same decision: only extend its validity. */
		j->a.valid_until_us = now_us + (int64_t)(c->conf.valid_s * 1e6);
		return false;
	}
	n.epoch = c->epoch + 1;
	n.decided_us = now_us;
	n.valid_until_us = n.decided_us + (int64_t)(c->conf.valid_s * 1e6);
	switch_to(c, j, &n, now_us);
	return true;
}

/*
 * One policy call over the schedulable jobs, mutex released (c->deciding set:
 * the table's shape, placements and the topology stay as they are; readers,
 * beats and reports go on). The decisions carry over in sj between calls.
 */
static hm_rc_t run_policy(hm_coord_t *c, hm_sched_job_t *sj, int n, hm_sched_event_t ev,
			  int ev_job, double now_s, hm_err_t *err)
{
	hm_sched_ctx_t ctx = {0};
	hm_rc_t rc;

	ctx.topo = c->topo;
	ctx.now_s = now_s;
	ctx.event = ev;
	ctx.event_job = ev_job;
	ctx.njobs = n;
	ctx.jobs = sj;
	rc = c->pol->decide(c->pol_state, &ctx, err);
	if (rc != HM_OK && rc != HM_ERR_BUDGET)
		return rc;
	if (ctx.budget_exhausted || rc == HM_ERR_BUDGET)
		hm_log(HM_LOG_VERBOSE, "policy %s: budget of %gs exhausted, best found kept",
		       c->pol->name, c->conf.decision_budget_s);
	if (ctx.note[0])
		hm_log(HM_LOG_DEBUG, "policy %s: %s", c->pol->name, ctx.note);
	return HM_OK;
}

hm_rc_t hm_coord_decide(hm_coord_t *c, double now_s, bool *changed, hm_err_t *err)
{
	hm_sched_job_t *sj = NULL;
	int *map = NULL, n = 0, nchanged = 0, released = 0;
	bool epoch_due, ran = false, departure, *arrived = NULL;
	double t0 = hm_mono_s();
	hm_rc_t rc = HM_OK;

	*changed = false;
	hm_coord_lock_mut(c);
	for (int i = 0; i < c->njobs; i++) {
		released += release_deferred(c, &c->jobs[i], (int64_t)llround(now_s * 1e6));
		if (hm_coord_pace_update(c, &c->jobs[i], now_s))
			c->need_decide = true; /* paced <-> unpaced: the model changed */
	}
	epoch_due = c->conf.epoch_s > 0 && c->pol->uses_epochs &&
		    now_s >= c->last_decide_s + c->conf.epoch_s;
	if (!c->need_decide && !epoch_due)
		goto out;
	/* The policy sees what the node agents measured since the last decision. */
	for (int i = 0; i < c->njobs; i++)
		hm_coord_fold_measures(&c->jobs[i]);
	hm_coord_fold_bursts(c);
	if (c->njobs && (!(sj = calloc((size_t)c->njobs, sizeof(*sj))) ||
			 !(map = calloc((size_t)c->njobs, sizeof(*map))) ||
			 !(arrived = calloc((size_t)c->njobs, sizeof(*arrived))))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < c->njobs; i++) {
		hm_cjob_t *j = &c->jobs[i];

		if (!j->schedulable)
			continue;
		map[n] = i;
		sj[n] = (hm_sched_job_t){
		    .id = (int)j->job_id,
		    .job = &j->job,
		    .placement = &j->pl,
		    .traffic = &j->tr,
		    .npaths = 1,
		    .start_s = j->start_s,
		    .iter_start_s = j->start_s,
		    .meas_iter_s = j->measured ? j->meas.iter_s : 0,
		    .meas_compute_s = j->measured ? j->meas.compute_s : 0,
		    .meas_comm_s = j->measured ? j->meas.comm_s : 0,
		    .meas_iter_sd_s = j->measured ? j->meas.iter_sd_s : 0,
		    .meas_compute_sd_s = j->measured ? j->meas.compute_sd_s : 0,
		};
		hm_coord_pace_model(c, j, &sj[n]);
		n++;
	}
	/* Cleared now: an arrival while the policy runs asks for the next round. */
	departure = c->had_departure;
	c->need_decide = false;
	c->had_departure = false;
	for (int k = 0; k < n; k++) {
		sj[k].dec = c->jobs[map[k]].dec;
		arrived[k] = c->jobs[map[k]].arrived;
		c->jobs[map[k]].arrived = false;
	}
	c->deciding = true;
	pthread_mutex_unlock(&c->mu);
	/* One arrival event per new job, in table order, so that policies that treat the
	   arriving job specially see each one; then departures or the epoch. */
	for (int k = 0; k < n && rc == HM_OK; k++) {
		if (!arrived[k])
			continue;
		/* Bound the whole run (register waits for it): once the budget is spent,
		   later arrivals count as placed by the calls already made. */
		if (ran && hm_mono_s() - t0 >= c->conf.decision_budget_s)
			continue;
		rc = run_policy(c, sj, n, HM_EV_ARRIVAL, k, now_s, err);
		ran = true;
	}
	if (rc == HM_OK && n > 0 && !ran)
		rc = run_policy(c, sj, n, departure ? HM_EV_DEPARTURE : HM_EV_EPOCH, -1, now_s,
				err);
	pthread_mutex_lock(&c->mu);
	c->deciding = false;
	pthread_cond_broadcast(&c->cv_idle);
	if (rc != HM_OK) {
		c->need_decide = true; /* try again next round, arrivals included */
		c->had_departure |= departure;
		for (int k = 0; k < n; k++)
			c->jobs[map[k]].arrived |= arrived[k];
		hm_err_prefix(err, "policy %s", c->pol->name);
		goto out;
	}
	for (int k = 0; k < n; k++) {
		c->jobs[map[k]].dec = sj[k].dec;
		nchanged += apply_decision(c, &c->jobs[map[k]], now_s);
	}
	for (int i = 0; i < c->njobs; i++) {
		hm_cjob_t *j = &c->jobs[i];

		if (!j->schedulable) {
			unsigned long before = j->a.epoch;
			bool was = j->decided;

			hm_coord_set_unscheduled(c, j, now_s);
			nchanged += !was || j->a.epoch != before;
			j->arrived = false;
		}
	}
	if (nchanged)
		c->epoch++;
	c->last_decide_s = now_s;
	c->last_decide_wall_s = hm_mono_s() - t0;
	hm_coord_mx_decision(&c->mx, c->last_decide_wall_s, nchanged);
	*changed = nchanged > 0;
	if (nchanged)
		hm_log(HM_LOG_INFO,
		       "policy %s: %d of %d jobs got a new decision (epoch %lu, %.1f ms)",
		       c->pol->name, nchanged, c->njobs, c->epoch, c->last_decide_wall_s * 1e3);
	pthread_cond_broadcast(&c->cv_job);
out:
	if (released)
		*changed = true;
	if (*changed && c->notify)
		c->notify(c->notify_arg);
	pthread_mutex_unlock(&c->mu);
	free(sj);
	free(map);
	free(arrived);
	return rc;
}

hm_rc_t hm_coord_assignment(hm_coord_t *c, uint32_t job_id, hm_assignment_t *out)
{
	hm_cjob_t *j;
	hm_rc_t rc = HM_OK;

	pthread_mutex_lock(&c->mu);
	if (!(j = hm_coord_find(c, job_id)) || !j->decided)
		rc = HM_ERR_NOTFOUND;
	else
		*out = j->a;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

hm_rc_t hm_coord_job_owner(hm_coord_t *c, uint32_t job_id, uint32_t *uid, char *account, size_t len)
{
	hm_cjob_t *j;
	hm_rc_t rc = HM_OK;

	pthread_mutex_lock(&c->mu);
	if (!(j = hm_coord_find(c, job_id)))
		rc = HM_ERR_NOTFOUND;
	else {
		if (uid)
			*uid = j->uid;
		if (account)
			snprintf(account, len, "%s", j->account);
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

hm_rc_t hm_coord_job_uid(hm_coord_t *c, uint32_t job_id, uint32_t *uid)
{
	return hm_coord_job_owner(c, job_id, uid, NULL, 0);
}

void hm_coord_note_register(hm_coord_t *c, uint32_t job_id)
{
	hm_cjob_t *j;

	pthread_mutex_lock(&c->mu);
	if ((j = hm_coord_find(c, job_id)))
		j->registered_steps++;
	pthread_mutex_unlock(&c->mu);
}

void hm_coord_note_request(hm_coord_t *c, bool refused)
{
	pthread_mutex_lock(&c->mu);
	c->requests++;
	c->refused += refused;
	pthread_mutex_unlock(&c->mu);
}

hm_rc_t hm_coord_wait_job(hm_coord_t *c, uint32_t job_id, int timeout_ms)
{
	struct timespec ts;
	hm_cjob_t *j;
	hm_rc_t rc = HM_OK;

	ts = hm_clock_deadline(CLOCK_MONOTONIC, timeout_ms);
	pthread_mutex_lock(&c->mu);
	/* A decided job answers at once, even while other changes wait for the sched thread. */
	while (!((j = hm_coord_find(c, job_id)) && j->decided)) {
		c->work_requested = true;
		pthread_cond_broadcast(&c->cv_work);
		if (pthread_cond_timedwait(&c->cv_job, &c->mu, &ts) == ETIMEDOUT) {
			j = hm_coord_find(c, job_id);
			rc = j && j->decided ? HM_OK : j ? HM_ERR_TIMEOUT : HM_ERR_NOTFOUND;
			break;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

bool hm_coord_wait_work(hm_coord_t *c, int timeout_ms)
{
	struct timespec ts;
	bool requested;

	ts = hm_clock_deadline(CLOCK_MONOTONIC, timeout_ms);
	pthread_mutex_lock(&c->mu);
	while (!c->work_requested)
		if (pthread_cond_timedwait(&c->cv_work, &c->mu, &ts) == ETIMEDOUT)
			break;
	requested = c->work_requested;
	c->work_requested = false;
	pthread_mutex_unlock(&c->mu);
	return requested;
}

void hm_coord_wake(hm_coord_t *c)
{
	pthread_mutex_lock(&c->mu);
	c->work_requested = true;
	pthread_cond_broadcast(&c->cv_work);
	pthread_mutex_unlock(&c->mu);
}
