/* The engine's side of the node agents: hello, beats, per-node assignments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_coord_int.h"
#include "hm_log.h"

/* A node whose jobs report values out of range logs one line per this many s. */
#define HM_REFUSED_LOG_S 60

/* Until then a pending change is still sent as "next" (contract C's promotion). */
static int64_t next_until_us(const hm_cjob_t *j)
{
	int64_t p = j->prev.period_us > j->a.period_us ? j->prev.period_us : j->a.period_us;

	return j->effective_us + p + 1000000;
}

/* Drop a switch that every step has passed (caller holds mu). */
static void settle(hm_cjob_t *j, int64_t now_us)
{
	if (j->has_prev && now_us >= next_until_us(j))
		j->has_prev = false;
}

static hm_cnode_t *node_of(hm_coord_t *c, const char *name, int *host)
{
	int h = name ? hm_topo_host_index(c->topo, name) : -1;

	if (host)
		*host = h;
	return h >= 0 && c->nodes ? &c->nodes[h] : NULL;
}

static bool on_host(const hm_cjob_t *j, int host, int *slot)
{
	for (int s = 0; s < j->pl.nslots; s++) {
		if (j->pl.slots[s].host == host) {
			if (slot)
				*slot = s;
			return true;
		}
	}
	return false;
}

void hm_coord_touch_nodes(hm_coord_t *c, const hm_cjob_t *j)
{
	c->gen++;
	for (int s = 0; c->nodes && s < j->pl.nslots; s++)
		c->nodes[j->pl.slots[s].host].gen = c->gen;
}

void hm_coord_node_reports_reset(hm_cjob_t *j)
{
	free(j->node_applied);
	free(j->node_steps);
	free(j->node_class);
	j->node_applied = NULL;
	j->node_steps = NULL;
	j->node_class = NULL;
	if (j->pl.nslots <= 0)
		return;
	j->node_applied = malloc((size_t)j->pl.nslots * sizeof(*j->node_applied));
	j->node_steps = calloc((size_t)j->pl.nslots, sizeof(*j->node_steps));
	j->node_class = malloc((size_t)j->pl.nslots * sizeof(*j->node_class));
	if (!j->node_applied || !j->node_steps || !j->node_class) {
		free(j->node_applied);
		free(j->node_steps);
		free(j->node_class);
		j->node_applied = NULL;
		j->node_steps = NULL;
		j->node_class = NULL;
		return; /* no agent figures for this job: it still runs */
	}
	for (int s = 0; s < j->pl.nslots; s++)
		j->node_applied[s] = j->node_class[s] = -1;
}

void hm_coord_fold_measures(hm_cjob_t *j)
{
	double mean, var;

	j->burst_win_n = 0;
	if (!(j->acc_n > 0))
		return;
	mean = j->acc_iter_us / j->acc_n;
	var = j->acc_iter_sq_us2 / j->acc_n - mean * mean;
	j->meas.iter_s = mean * 1e-6;
	j->meas.iter_sd_s = sqrt(var > 0 ? var : 0) * 1e-6;
	if (j->acc_compute_n > 0)
		j->meas.compute_s = j->acc_compute_us / j->acc_compute_n * 1e-6;
	if (j->acc_csd_n > 0) { /* pooled over the nodes' windows: their means differ too */
		double cm = j->acc_csd_us / j->acc_csd_n,
		       cv = j->acc_csd_sq_us2 / j->acc_csd_n - cm * cm;

		j->meas.compute_sd_s = sqrt(cv > 0 ? cv : 0) * 1e-6;
	}
	if (j->acc_burst_n > 0) {
		j->meas.comm_s = j->acc_burst_us / j->acc_burst_n * 1e-6;
		j->burst_win_n = j->acc_burst_n;
	}
	j->measured = true;
	j->acc_n = j->acc_iter_us = j->acc_iter_sq_us2 = 0;
	j->acc_compute_n = j->acc_compute_us = j->acc_burst_n = j->acc_burst_us = 0;
	j->acc_csd_n = j->acc_csd_us = j->acc_csd_sq_us2 = 0;
}

/* Why an agent's report cannot shape its host ("" when it can). */
static void topo_unusable(const hm_hwnode_t *hw, char *note, size_t len)
{
	note[0] = '\0';
	if (hw->ngpus < 1 || hw->nnics < 1) {
		snprintf(note, len,
			 "reports %d GPUs and %d NICs: the configured ones are kept (GpusPerNode, "
			 "NicsPerNode)",
			 hw->ngpus, hw->nnics);
		return;
	}
	for (int g = 0; g < hw->ngpus; g++)
		if (hw->gpu_nic[g] < 0 || hw->gpu_nic[g] >= hw->nnics) {
			snprintf(note, len, "reports GPU %d on NIC %d of %d: not used", g,
				 hw->gpu_nic[g], hw->nnics);
			return;
		}
}

/* Host h differs from what agent report hw says. */
static bool host_differs(const hm_host_t *host, const hm_hwnode_t *hw)
{
	return hw->ngpus != host->gpus || hw->nnics != host->nics ||
	       memcmp(host->gpu_nic, hw->gpu_nic, (size_t)hw->ngpus * sizeof(int)) != 0;
}

/*
 * Give every host whose agent reported usable hardware its GPUs, NICs and GPU
 * -> NIC map: the map alone in place, other counts by a reshaped topology (its
 * links renumbered: every job is derived again). Caller holds mu. Returns
 * whether anything changed.
 */
static bool apply_reports(hm_coord_t *c)
{
	hm_topo_t *t = c->topo, *n = NULL;
	hm_host_t *shape = NULL;
	hm_err_t err = {0};
	bool counts = false, maps = false;
	char note[128];

	for (int h = 0; c->nodes && h < t->nhosts; h++) {
		const hm_hwnode_t *hw = &c->nodes[h].topo;

		topo_unusable(hw, note, sizeof(note));
		if (!c->nodes[h].has_topo || note[0] || !host_differs(&t->hosts[h], hw))
			continue;
		if (hw->ngpus == t->hosts[h].gpus && hw->nnics == t->hosts[h].nics) {
			memcpy(t->hosts[h].gpu_nic, hw->gpu_nic, (size_t)hw->ngpus * sizeof(int));
			maps = true;
		} else {
			counts = true;
		}
	}
	if (!counts)
		return maps;
	if (!(shape = malloc((size_t)t->nhosts * sizeof(*shape)))) {
		hm_log(HM_LOG_ERROR, "node hardware: out of memory (the topology is kept)");
		return maps;
	}
	memcpy(shape, t->hosts, (size_t)t->nhosts * sizeof(*shape));
	for (int h = 0; h < t->nhosts; h++) {
		const hm_hwnode_t *hw = &c->nodes[h].topo;

		topo_unusable(hw, note, sizeof(note));
		if (!c->nodes[h].has_topo || note[0])
			continue;
		shape[h].gpus = hw->ngpus;
		shape[h].nics = hw->nnics;
		memcpy(shape[h].gpu_nic, hw->gpu_nic, (size_t)hw->ngpus * sizeof(int));
	}
	if (hm_topo_reshape(t, shape, &n, &err) != HM_OK) {
		hm_log(HM_LOG_ERROR, "node hardware: %s (the topology is kept)", err.msg);
		free(shape);
		return maps;
	}
	free(shape);
	c->topo = n;
	c->hj_stale = true;
	hm_topo_free(t);
	for (int i = 0; i < c->njobs; i++) /* link ids changed */
		hm_coord_derive(c, &c->jobs[i]);
	c->need_decide = true;
	return true;
}

hm_rc_t hm_coord_nodes_rebuild(hm_coord_t *c, const hm_topo_t *old_topo)
{
	hm_cnode_t *nn = calloc((size_t)(c->topo->nhosts > 0 ? c->topo->nhosts : 1), sizeof(*nn));
	hm_crack_t *old_racks;
	hm_rc_t rc;

	c->hj_stale = true; /* hosts renumbered */
	if (!nn) {
		free(c->nodes);
		c->nodes = NULL; /* no node may index a table of another topology */
		hm_coord_racks_free(c);
		return HM_ERR_NOMEM;
	}
	for (int h = 0; old_topo && c->nodes && h < old_topo->nhosts; h++) {
		int k = hm_topo_host_index(c->topo, old_topo->hosts[h].name);

		if (k >= 0)
			nn[k] = c->nodes[h];
	}
	free(c->nodes);
	c->nodes = nn;
	/* A new topology comes without the agents' hardware: put it back. */
	(void)apply_reports(c);
	old_racks = c->racks;
	c->racks = NULL; /* rebuilt from the old one, then freed */
	rc = hm_coord_racks_rebuild(c, old_topo, old_racks);
	free(old_racks);
	return rc;
}

hm_rc_t hm_coord_node_hello(hm_coord_t *c, const char *node, const hm_hwnode_t *topo, double now_s,
			    hm_err_t *err)
{
	hm_cnode_t *n;
	char note[128] = "";
	int h;
	hm_rc_t rc = HM_OK;

	hm_coord_lock_mut(c); /* a topology change must wait out a policy run */
	if (!(n = node_of(c, node, &h))) {
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "node %s is not in the topology", node);
		goto out;
	}
	n->seen = n->up = true;
	n->loss_pending = false;
	n->last_s = n->up_s = now_s;
	n->has_topo = topo != NULL;
	if (topo) {
		hm_host_t before = c->topo->hosts[h];

		n->topo = *topo;
		topo_unusable(topo, note, sizeof(note));
		if (note[0]) {
			hm_log(HM_LOG_INFO, "node %s: %s", node, note);
		} else if (host_differs(&before, topo) && apply_reports(c)) {
			/* Rails changed: the traffic of its jobs changes with them. */
			for (int i = 0; i < c->njobs; i++) {
				if (on_host(&c->jobs[i], h, NULL)) {
					hm_coord_derive(c, &c->jobs[i]);
					c->need_decide = true;
				}
			}
			hm_log(HM_LOG_INFO,
			       "node %s: %d GPUs, %d NICs and the GPU -> NIC map from its agent "
			       "applied (the topology had %d and %d)",
			       node, topo->ngpus, topo->nnics, before.gpus, before.nics);
		}
	}
	hm_log(HM_LOG_VERBOSE, "node %s: agent up", node);
	hm_coord_elect_host(c, h, now_s);
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* Add one node's window of job j into its accumulators (weighted by samples). */
static void accumulate(hm_cjob_t *j, const hm_aw_meas_t *m)
{
	double n = (double)m->samples;

	if (!(n > 0) || !(m->iter_us > 0) || !isfinite(m->iter_us) || !isfinite(m->iter_sd_us))
		return;
	j->acc_n += n;
	j->acc_iter_us += n * m->iter_us;
	j->acc_iter_sq_us2 += n * (m->iter_sd_us * m->iter_sd_us + m->iter_us * m->iter_us);
	if (m->compute_us >= 0 && isfinite(m->compute_us)) {
		j->acc_compute_n += n;
		j->acc_compute_us += n * m->compute_us;
		if (m->compute_sd_us >= 0 && isfinite(m->compute_sd_us)) {
			j->acc_csd_n += n;
			j->acc_csd_us += n * m->compute_us;
			j->acc_csd_sq_us2 += n * (m->compute_sd_us * m->compute_sd_us +
						  m->compute_us * m->compute_us);
		}
	}
	if (m->burst_us >= 0 && isfinite(m->burst_us)) {
		j->acc_burst_n += n;
		j->acc_burst_us += n * m->burst_us;
	}
	j->slot_misses = (j->slot_misses > 0 ? j->slot_misses : 0) + (long)m->slot_misses;
}

hm_rc_t hm_coord_node_beat(hm_coord_t *c, const hm_aw_node_state_t *st, double now_s, hm_err_t *err)
{
	hm_cnode_t *n;
	int h;
	hm_rc_t rc = HM_OK;

	pthread_mutex_lock(&c->mu);
	if (!(n = node_of(c, st->node, &h))) {
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "node %s is not in the topology", st->node);
		goto out;
	}
	n->seen = n->up = true;
	n->last_s = now_s;
	n->steps = n->ranks = 0;
	for (int k = 0; k < st->njobs; k++) {
		const hm_aw_job_state_t *js = &st->jobs[k];
		hm_cjob_t *j = hm_coord_find(c, (uint32_t)js->job_id);
		int s;

		n->steps += js->steps;
		n->ranks += js->ranks;
		if (!j || !on_host(j, h, &s))
			continue;
		if (j->node_applied) {
			j->node_applied[s] = js->applied_epoch;
			j->node_steps[s] = js->steps;
			j->node_class[s] = js->has_nccl_class ? js->nccl_class : -1;
			if (hm_coord_pace_update(c, j, now_s))
				c->need_decide = true; /* reports arrived: paced again */
		}
		if (js->has_meas)
			accumulate(j, &js->meas);
		else if (js->meas_refused[0] && now_s - n->refused_log_s >= HM_REFUSED_LOG_S) {
			n->refused_log_s = now_s;
			hm_log(HM_LOG_ERROR,
			       "node %s: job %ld's measurement refused, the rest of the beat kept "
			       "(logged at most every %d s per node): %s",
			       st->node, js->job_id, HM_REFUSED_LOG_S, js->meas_refused);
		}
	}
	hm_coord_elect_host(c, h, now_s);
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

void hm_coord_node_clock(hm_coord_t *c, const char *node, int64_t offset_us, int64_t rtt_us)
{
	int64_t bound_us = (int64_t)(c->conf.clock_skew_max_s * 1e6), margin;
	hm_cnode_t *n;
	bool was;
	int h;

	pthread_mutex_lock(&c->mu);
	if (!(n = node_of(c, node, &h)))
		goto out;
	was = n->clock_skewed;
	n->has_clock = true;
	n->clock_offset_us = offset_us;
	n->clock_rtt_us = rtt_us;
	/* The agent's rule (agent_clock_sample): beyond the bound by more than half the RTT. */
	margin = (offset_us < 0 ? -offset_us : offset_us) - rtt_us / 2;
	n->clock_skewed = bound_us > 0 && margin > bound_us;
	if (n->clock_skewed && !was)
		hm_log(HM_LOG_ERROR,
		       "node %s: its clock is %+lld us off the coordinator's (round trip %lld us), "
		       "beyond ClockSkewMax=%lld us: its steps run free until it is within",
		       node, (long long)-offset_us, (long long)rtt_us, (long long)bound_us);
	else if (!n->clock_skewed && was)
		hm_log(HM_LOG_INFO,
		       "node %s: its clock is within ClockSkewMax=%lld us again (%+lld us)", node,
		       (long long)bound_us, (long long)-offset_us);
out:
	pthread_mutex_unlock(&c->mu);
}

void hm_coord_node_lost(hm_coord_t *c, const char *node, double now_s)
{
	hm_cnode_t *n;
	int h;

	pthread_mutex_lock(&c->mu);
	if ((n = node_of(c, node, &h)) && n->up) {
		if (now_s < c->stall_grace_until_s) {
			/* Closed while we could not read (stale hellos, agents that gave up
			   on us): lost only if no hello comes before the grace ends. */
			n->loss_pending = true;
			hm_log(HM_LOG_VERBOSE,
			       "node %s: agent connection closed during the grace after a stall",
			       node);
		} else {
			n->up = n->loss_pending = false;
			hm_log(HM_LOG_INFO, "node %s: agent lost (last heard %.1f s ago)", node,
			       now_s - n->last_s);
			hm_coord_elect_host(c, h, now_s);
		}
	}
	pthread_mutex_unlock(&c->mu);
}

void hm_coord_nodes_stalled(hm_coord_t *c, double now_s, double stall_s)
{
	double grace_s = (c->conf.agent_valid_ms + c->conf.heartbeat_ms) / 1000.0;

	pthread_mutex_lock(&c->mu);
	/* Silence is counted in time we could have heard it: the stall does not count. */
	for (int h = 0; c->nodes && h < c->topo->nhosts; h++) {
		hm_cnode_t *n = &c->nodes[h];

		if (n->up)
			n->last_s = n->last_s + stall_s < now_s ? n->last_s + stall_s : now_s;
	}
	c->stall_grace_until_s = now_s + grace_s;
	hm_log(HM_LOG_INFO,
	       "stalled for %.1f s (slurmctld stopped or starved): agents' silence and "
	       "closed connections do not count as lost for %.2f s",
	       stall_s, grace_s);
	pthread_mutex_unlock(&c->mu);
}

void hm_coord_nodes_grace_check(hm_coord_t *c, double now_s)
{
	pthread_mutex_lock(&c->mu);
	for (int h = 0; c->nodes && now_s >= c->stall_grace_until_s && h < c->topo->nhosts; h++) {
		hm_cnode_t *n = &c->nodes[h];

		if (!n->up || !n->loss_pending)
			continue;
		n->up = n->loss_pending = false;
		hm_log(HM_LOG_INFO,
		       "node %s: agent lost (its connection closed during a stall's grace, no "
		       "hello since)",
		       c->topo->hosts[h].name);
		hm_coord_elect_host(c, h, now_s);
	}
	pthread_mutex_unlock(&c->mu);
}

static void to_sched(const hm_assignment_t *a, hm_aw_sched_t *s)
{
	memset(s, 0, sizeof(*s));
	/* Policy names are short (hm_policy_names.h): the wire keeps 31 bytes. */
	snprintf(s->policy, sizeof(s->policy), "%.*s", (int)sizeof(s->policy) - 1,
		 a->scheduled ? a->policy : "off");
	s->epoch = (long)a->epoch;
	s->period_us = a->period_us;
	s->shift_us = a->shift_us;
	s->origin_us = a->origin_us;
	s->guard_us = a->guard_us;
	s->prio = a->prio;
}

/* The wire entry of job j (caller holds mu): while a change is pending, the one
   in force and the next one with its switch time, also a little past the switch
   (an agent promotes by itself; new readers compute the same slots from both). */
static void job_entry(const hm_cjob_t *j, int64_t now_us, hm_aw_job_assign_t *e)
{
	memset(e, 0, sizeof(*e));
	e->job_id = (long)j->job_id;
	e->uid = j->uid;
	if (!j->decided || !j->a.scheduled) {
		snprintf(e->reason, sizeof(e->reason), "%s",
			 !j->decided ? "awaiting decision" : j->a.reason);
		return; /* unscheduled at once: no switch to wait for */
	}
	e->scheduled = true;
	if (j->has_prev && now_us < next_until_us(j)) {
		to_sched(&j->prev, &e->cur);
		to_sched(&j->a, &e->next);
		e->has_next = true;
		e->next_effective_us = j->effective_us;
	} else {
		to_sched(&j->a, &e->cur);
	}
}

/* Slot s of j is the first on its host (a job is listed once per host). */
static bool first_on_host(const hm_cjob_t *j, int s)
{
	for (int k = 0; k < s; k++)
		if (j->pl.slots[k].host == j->pl.slots[s].host)
			return false;
	return true;
}

/* The per-host job index (caller holds mu); false when out of memory. */
static bool host_jobs(hm_coord_t *c)
{
	int nh = c->topo->nhosts, total = 0;
	int *start = NULL, *pos = NULL, *list = NULL;
	bool ok = false;

	if (!c->hj_stale && c->hj_start)
		return true;
	start = calloc((size_t)nh + 1, sizeof(int));
	pos = calloc((size_t)nh + 1, sizeof(int));
	if (!start || !pos)
		goto out;
	for (int i = 0; i < c->njobs; i++)
		for (int s = 0; s < c->jobs[i].pl.nslots; s++) {
			int h = c->jobs[i].pl.slots[s].host;
			if (h >= 0 && h < nh && first_on_host(&c->jobs[i], s)) {
				start[h + 1]++;
				total++;
			}
		}
	if (!(list = malloc(sizeof(int) * ((size_t)total + 1))))
		goto out;
	for (int h = 0; h < nh; h++) {
		start[h + 1] += start[h];
		pos[h] = start[h];
	}
	for (int i = 0; i < c->njobs; i++) /* table order within each host */
		for (int s = 0; s < c->jobs[i].pl.nslots; s++) {
			int h = c->jobs[i].pl.slots[s].host;
			if (h >= 0 && h < nh && first_on_host(&c->jobs[i], s))
				list[pos[h]++] = i;
		}
	free(c->hj_start);
	free(c->hj_list);
	c->hj_start = start;
	c->hj_list = list;
	start = list = NULL;
	c->hj_stale = false;
	ok = true;
out:
	free(start);
	free(pos);
	free(list);
	return ok;
}

hm_rc_t hm_coord_node_assign(hm_coord_t *c, const char *node, double now_s,
			     hm_aw_node_assign_t *out, unsigned long *gen, hm_err_t *err)
{
	int64_t now_us = (int64_t)llround(now_s * 1e6);
	hm_cnode_t *n;
	int h;
	hm_rc_t rc = HM_OK;

	memset(out, 0, sizeof(*out));
	snprintf(out->node, sizeof(out->node), "%s", node);
	pthread_mutex_lock(&c->mu);
	if (!(n = node_of(c, node, &h))) {
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "node %s is not in the topology", node);
		goto out;
	}
	if (gen)
		*gen = n->gen;
	if (!host_jobs(c)) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "node %s: out of memory", node);
		goto out;
	}
	for (int k = c->hj_start[h]; k < c->hj_start[h + 1]; k++) {
		hm_cjob_t *j = &c->jobs[c->hj_list[k]];

		settle(j, now_us);
		if (out->njobs == HM_AW_MAX_JOBS) {
			rc = hm_err_set(err, HM_ERR_RANGE,
					"node %s runs more than %d jobs: the first %d are listed",
					node, HM_AW_MAX_JOBS, HM_AW_MAX_JOBS);
			break;
		}
		job_entry(j, now_us, &out->jobs[out->njobs++]);
	}
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

unsigned long hm_coord_node_gen(hm_coord_t *c, const char *node)
{
	hm_cnode_t *n;
	unsigned long g = 0;

	pthread_mutex_lock(&c->mu);
	if ((n = node_of(c, node, NULL)))
		g = n->gen;
	pthread_mutex_unlock(&c->mu);
	return g;
}

void hm_coord_set_notify(hm_coord_t *c, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&c->mu);
	c->notify = fn;
	c->notify_arg = arg;
	pthread_mutex_unlock(&c->mu);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const hm_coord_node_view_t *)a)->node,
		      ((const hm_coord_node_view_t *)b)->node);
}

hm_rc_t hm_coord_nodes(hm_coord_t *c, hm_coord_node_view_t **out, int *n)
{
	hm_rc_t rc = HM_OK;
	int nh;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&c->mu);
	nh = c->topo->nhosts;
	/* Jobs per host from the cached per-host index: the metrics render this on
	   every sched round, and hosts x jobs x slots was 20 % of slurmctld's CPU
	   with 1,024 nodes and 10,000 jobs. */
	if (nh > 0 && (!host_jobs(c) || !(*out = calloc((size_t)nh, sizeof(**out))))) {
		rc = HM_ERR_NOMEM;
		goto out;
	}
	for (int h = 0; h < nh; h++) {
		const hm_cnode_t *cn = &c->nodes[h];
		hm_coord_node_view_t *v = &(*out)[h];

		snprintf(v->node, sizeof(v->node), "%s", c->topo->hosts[h].name);
		snprintf(v->state, sizeof(v->state), "%s",
			 cn->up     ? "up"
			 : cn->seen ? "lost"
				    : "none");
		v->last_seen_s = cn->last_s;
		v->steps = cn->steps;
		v->ranks = cn->ranks;
		v->has_clock = cn->has_clock;
		v->clock_skewed = cn->clock_skewed;
		v->clock_offset_us = cn->has_clock ? -cn->clock_offset_us : 0;
		v->has_topo = cn->has_topo;
		if (cn->has_topo) {
			v->topo = cn->topo;
			topo_unusable(&cn->topo, v->topo_note, sizeof(v->topo_note));
		}
		v->jobs = c->hj_start[h + 1] - c->hj_start[h];
	}
	*n = nh;
out:
	pthread_mutex_unlock(&c->mu);
	if (*n > 1)
		qsort(*out, (size_t)*n, sizeof(**out), by_name);
	return rc;
}

hm_rc_t hm_coord_assignment_now(hm_coord_t *c, uint32_t job_id, double now_s, hm_assignment_t *cur,
				hm_assignment_t *next, bool *has_next, int64_t *effective_us)
{
	int64_t now_us = (int64_t)llround(now_s * 1e6);
	hm_cjob_t *j;
	hm_rc_t rc = HM_OK;

	*has_next = false;
	*effective_us = 0;
	pthread_mutex_lock(&c->mu);
	if (!(j = hm_coord_find(c, job_id)) || !j->decided) {
		rc = HM_ERR_NOTFOUND;
		goto out;
	}
	settle(j, now_us);
	if (j->has_prev && now_us < next_until_us(j)) {
		*cur = j->prev;
		*next = j->a;
		*has_next = true;
		*effective_us = j->effective_us;
	} else {
		*cur = j->a;
	}
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}
