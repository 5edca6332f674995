/*
 * hm_coord_pace.c - whether a job's traffic follows its decision (issue 25):
 * the class its NCCL communicators carry, from the runtime's reports
 * (NCCL_CLASS through the node agents), and whether anything paces it at all
 * (a --comm-sched job whose tasks never report an applied epoch: the runtime
 * is not loaded, the user opted out, or it broke). The policy judges such a
 * job as it runs (hm_policy.h, hm_sched_job_t.unpaced and class_fixed).
 */
#include <math.h>
#include <stdio.h>

#include "hm_coord_int.h"
#include "hm_log.h"

int hm_coord_class_in_force(const hm_cjob_t *j)
{
	int cls = -1;

	/* The lowest priority over its nodes: a collective ends with its slowest flows. */
	for (int s = 0; j->node_class && s < j->pl.nslots; s++)
		if (j->node_class[s] > cls)
			cls = j->node_class[s];
	return cls;
}

static bool any_applied(const hm_cjob_t *j)
{
	for (int s = 0; j->node_applied && s < j->pl.nslots; s++)
		if (j->node_applied[s] >= 0)
			return true;
	return false;
}

/* An agent of one of j's nodes is connected: the lack of a report says something. */
static bool agent_up(const hm_coord_t *c, const hm_cjob_t *j)
{
	for (int s = 0; c->nodes && s < j->pl.nslots; s++) {
		int h = j->pl.slots[s].host;

		if (h >= 0 && h < c->topo->nhosts && c->nodes[h].up)
			return true;
	}
	return false;
}

bool hm_coord_pace_update(hm_coord_t *c, hm_cjob_t *j, double now_s)
{
	double bound_s = c->conf.unpaced_after_s;
	bool was = j->unpaced;

	if (!j->decided || !j->a.scheduled) {
		j->pace_since_s = 0; /* nothing to pace: the bound starts at its next decision */
		j->unpaced = false;
		return was;
	}
	if (any_applied(j)) {
		j->pace_since_s = now_s;
	} else if (!agent_up(c, j)) {
		/* No agent to carry a report (none installed, or all lost): no evidence
		   either way, the state stays and the bound starts again when one is up. */
		j->pace_since_s = now_s;
		return false;
	} else if (!(j->pace_since_s > 0)) { /* from its first decision, or the engine's start */
		j->pace_since_s = fmin(now_s, fmax(j->a.decided_us / 1e6, c->started_s));
	}
	j->unpaced = bound_s > 0 && now_s - j->pace_since_s >= bound_s;
	if (j->unpaced && !was)
		hm_log(HM_LOG_INFO,
		       "job %u: no step reported an applied epoch for %.0f s (UnpacedAfter=%gs): "
		       "modelled unpaced (the runtime is not loaded, opted out or broken)",
		       j->job_id, now_s - j->pace_since_s, bound_s);
	else if (!j->unpaced && was)
		hm_log(HM_LOG_INFO,
		       "job %u: its steps report an applied epoch: modelled paced again",
		       j->job_id);
	return j->unpaced != was;
}

void hm_coord_pace_model(const hm_coord_t *c, const hm_cjob_t *j, hm_sched_job_t *sj)
{
	int cls = hm_coord_class_in_force(j);

	sj->unpaced = j->unpaced;
	sj->class_fixed = false;
	if (j->unpaced) {
		/* Without a runtime its packets are unmarked, which the fabric queues with
		   the lowest classes (admin guide, "The fabric"): the lowest class. */
		sj->class_fixed = true;
		sj->class_in_force = cls >= 0 ? cls : c->conf.prio_levels - 1;
	} else if (cls >= 0 && j->decided && j->a.scheduled && cls != j->a.prio) {
		/* Pinned only where it differs: a job whose traffic carries the decided class
		   may still follow a change (communicators made after it get the new one);
		   one that differs evidently cannot (communicators keep their class). */
		sj->class_fixed = true;
		sj->class_in_force = cls;
	}
}
