/* JSON encodings of job views, counters, racks and measurements: one table each. */
#include "hm_coord_json.h"

#include <string.h>

/* Ranges for a strict read (the state file's); the lenient readers ignore them. */
const hm_field_t hm_measure_fields[HM_MEASURE_NFIELDS] = {
    HM_FIELD_CHECKED(hm_coord_measure_t, iter_s, "iter_s", HM_F_DBL, 0, 1e6, 0, NULL),
    HM_FIELD_CHECKED(hm_coord_measure_t, compute_s, "compute_s", HM_F_DBL, 0, 1e6, 0, NULL),
    HM_FIELD_CHECKED(hm_coord_measure_t, comm_s, "comm_s", HM_F_DBL, 0, 1e6, 0, NULL),
    HM_FIELD_CHECKED(hm_coord_measure_t, iter_sd_s, "iter_sd_s", HM_F_DBL, 0, 1e6, 0, NULL),
    HM_FIELD_CHECKED(hm_coord_measure_t, bytes, "bytes", HM_F_DBL, 0, 1e18, 0, NULL),
    HM_FIELD_CHECKED(hm_coord_measure_t, compute_sd_s, "compute_sd_s", HM_F_DBL, 0, 1e6, 0, NULL),
};

static const hm_field_t job_view_fields[] = {
    HM_FIELD(hm_coord_job_view_t, job_id, "job_id", HM_F_U32),
    HM_FIELD(hm_coord_job_view_t, uid, "uid", HM_F_U32),
    HM_FIELD(hm_coord_job_view_t, account, "account", HM_F_STR),
    HM_FIELD(hm_coord_job_view_t, name, "name", HM_F_STR),
    HM_FIELD(hm_coord_job_view_t, nodes, "nodes", HM_F_STR),
    HM_FIELD(hm_coord_job_view_t, mode, "mode", HM_F_STR),
    HM_FIELD(hm_coord_job_view_t, profile, "profile", HM_F_STR),
    HM_FIELD(hm_coord_job_view_t, gpus, "gpus", HM_F_INT),
    HM_FIELD(hm_coord_job_view_t, nracks, "racks", HM_F_INT),
    HM_FIELD(hm_coord_job_view_t, topology, "topology", HM_F_STR),
    HM_FIELD(hm_coord_job_view_t, start_s, "start_s", HM_F_DBL),
    HM_FIELD(hm_coord_job_view_t, registered_steps, "registered_steps", HM_F_INT),
    HM_FIELD(hm_coord_job_view_t, measured, "measured", HM_F_BOOL),
    /* The live loop at a glance (harmonicsctl jobs --json): the latest decision, what
       the steps run, what they measured; null where not reported or not measured. */
    HM_FIELD(hm_coord_job_view_t, a.policy, "policy", HM_F_STR),
    HM_FIELD(hm_coord_job_view_t, a.epoch, "decided_epoch", HM_F_ULONG),
    HM_FIELD_FL(hm_coord_job_view_t, applied_epoch, "applied_epoch", HM_F_LONG, HM_F_NULL),
    HM_FIELD(hm_coord_job_view_t, a.period_us, "period_us", HM_F_I64),
    HM_FIELD(hm_coord_job_view_t, a.shift_us, "shift_us", HM_F_I64),
    HM_FIELD(hm_coord_job_view_t, a.prio, "prio", HM_F_INT),
    HM_FIELD_WHEN(hm_coord_job_view_t, effective_us, "switch_at_us", HM_F_I64, HM_F_IF, has_prev),
    HM_FIELD(hm_coord_job_view_t, steps, "steps", HM_F_INT),
    HM_FIELD_FL(hm_coord_job_view_t, measured_period_us, "measured_period_us", HM_F_DBL, HM_F_NULL),
    HM_FIELD_FL(hm_coord_job_view_t, measured_burst_us, "measured_burst_us", HM_F_DBL, HM_F_NULL),
    HM_FIELD_FL(hm_coord_job_view_t, slot_misses, "slot_misses", HM_F_LONG, HM_F_NULL),
    /* The class its NCCL traffic carries (null: none reported), and whether it is
       modelled unpaced (no applied epoch for UnpacedAfter). */
    HM_FIELD_FL(hm_coord_job_view_t, class_in_force, "class_in_force", HM_F_INT, HM_F_NULL),
    HM_FIELD(hm_coord_job_view_t, unpaced, "unpaced", HM_F_BOOL),
    HM_FIELD_OBJ(hm_coord_job_view_t, a, "assignment", hm_assignment_fields),
};

static const hm_field_t stats_fields[] = {
    HM_FIELD(hm_coord_stats_t, policy, "policy", HM_F_STR),
    HM_FIELD(hm_coord_stats_t, epoch_s, "epoch_s", HM_F_DBL),
    HM_FIELD(hm_coord_stats_t, epoch, "epoch", HM_F_ULONG),
    HM_FIELD(hm_coord_stats_t, last_decide_s, "last_decide_s", HM_F_DBL),
    HM_FIELD(hm_coord_stats_t, last_decide_wall_s, "last_decide_wall_s", HM_F_DBL),
    HM_FIELD(hm_coord_stats_t, njobs, "jobs", HM_F_INT),
    HM_FIELD(hm_coord_stats_t, nscheduled, "scheduled", HM_F_INT),
    HM_FIELD(hm_coord_stats_t, nracks, "racks", HM_F_INT),
    HM_FIELD(hm_coord_stats_t, nhosts, "hosts", HM_F_INT),
    HM_FIELD(hm_coord_stats_t, ngpus, "gpus", HM_F_INT),
    HM_FIELD(hm_coord_stats_t, requests, "requests", HM_F_ULONG),
    HM_FIELD(hm_coord_stats_t, refused, "refused", HM_F_ULONG),
    HM_FIELD(hm_coord_stats_t, started_s, "started_s", HM_F_DBL),
};

static const hm_field_t rack_view_fields[] = {
    HM_FIELD(hm_coord_rack_view_t, rack, "rack", HM_F_INT),
    HM_FIELD(hm_coord_rack_view_t, name, "name", HM_F_STR),
    HM_FIELD(hm_coord_rack_view_t, nhosts, "hosts", HM_F_INT),
    HM_FIELD(hm_coord_rack_view_t, ngpus, "gpus", HM_F_INT),
    HM_FIELD(hm_coord_rack_view_t, njobs, "jobs", HM_F_INT),
    HM_FIELD(hm_coord_rack_view_t, ncross, "cross_rack_jobs", HM_F_INT),
    HM_FIELD(hm_coord_rack_view_t, load, "load", HM_F_DBL),
    /* Its leader (null: none), state, the last round that solved it, its solve time. */
    HM_FIELD_FL(hm_coord_rack_view_t, leader, "leader", HM_F_STR, HM_F_NULL),
    HM_FIELD_FL(hm_coord_rack_view_t, leader_addr, "leader_addr", HM_F_STR, HM_F_NULL),
    HM_FIELD(hm_coord_rack_view_t, state, "state", HM_F_STR),
    HM_FIELD(hm_coord_rack_view_t, term, "term", HM_F_ULONG),
    HM_FIELD_FL(hm_coord_rack_view_t, leader_since_s, "leader_since_s", HM_F_DBL, HM_F_NULL),
    HM_FIELD_FL(hm_coord_rack_view_t, last_epoch, "last_epoch", HM_F_LONG, HM_F_NULL),
    HM_FIELD_FL(hm_coord_rack_view_t, solve_ms, "solve_ms", HM_F_DBL, HM_F_NULL),
    /* Who solved that round (null: no round yet), and the counts of each kind. */
    HM_FIELD_FL(hm_coord_rack_view_t, solver, "solver", HM_F_STR, HM_F_NULL),
    HM_FIELD(hm_coord_rack_view_t, leader_solves, "leader_solves", HM_F_ULONG),
    HM_FIELD(hm_coord_rack_view_t, coord_solves, "coordinator_solves", HM_F_ULONG),
    HM_FIELD(hm_coord_rack_view_t, silent, "silent_rounds", HM_F_ULONG),
};

json_object *hm_json_job_view(const hm_coord_job_view_t *v)
{
	return hm_fields_new(job_view_fields, HM_NFIELDS(job_view_fields), v);
}

void hm_json_job_view_parse(json_object *o, hm_coord_job_view_t *v)
{
	memset(v, 0, sizeof(*v));
	v->class_in_force = -1; /* an older coordinator sends none */
	hm_fields_read(o, job_view_fields, HM_NFIELDS(job_view_fields), v);
}

json_object *hm_json_stats(const hm_coord_stats_t *s)
{
	return hm_fields_new(stats_fields, HM_NFIELDS(stats_fields), s);
}

void hm_json_stats_parse(json_object *o, hm_coord_stats_t *s)
{
	memset(s, 0, sizeof(*s));
	hm_fields_read(o, stats_fields, HM_NFIELDS(stats_fields), s);
}

json_object *hm_json_rack_view(const hm_coord_rack_view_t *r)
{
	return hm_fields_new(rack_view_fields, HM_NFIELDS(rack_view_fields), r);
}

void hm_json_rack_view_parse(json_object *o, hm_coord_rack_view_t *r)
{
	memset(r, 0, sizeof(*r));
	/* A coordinator without leaders sends none of these: not measured, not 0. */
	r->leader_since_s = r->solve_ms = -1;
	r->last_epoch = -1;
	hm_fields_read(o, rack_view_fields, HM_NFIELDS(rack_view_fields), r);
}

static const hm_field_t link_view_fields[] = {
    HM_FIELD(hm_coord_link_view_t, name, "link", HM_F_STR),
    HM_FIELD(hm_coord_link_view_t, level, "level", HM_F_INT),
    HM_FIELD(hm_coord_link_view_t, dir, "direction", HM_F_STR),
    HM_FIELD(hm_coord_link_view_t, rack, "rack", HM_F_STR),
    HM_FIELD(hm_coord_link_view_t, capacity_bps, "capacity_bps", HM_F_DBL),
    HM_FIELD(hm_coord_link_view_t, util, "predicted_utilisation", HM_F_DBL),
    HM_FIELD(hm_coord_link_view_t, njobs, "jobs", HM_F_INT),
};

/* One link of an explained job: the link's members, then the job's part. */
static const hm_field_t explain_link_fields[] = {
    HM_FIELD(hm_coord_explain_link_t, link.name, "link", HM_F_STR),
    HM_FIELD(hm_coord_explain_link_t, link.level, "level", HM_F_INT),
    HM_FIELD(hm_coord_explain_link_t, link.dir, "direction", HM_F_STR),
    HM_FIELD(hm_coord_explain_link_t, link.rack, "rack", HM_F_STR),
    HM_FIELD(hm_coord_explain_link_t, link.capacity_bps, "capacity_bps", HM_F_DBL),
    HM_FIELD(hm_coord_explain_link_t, link.util, "predicted_utilisation", HM_F_DBL),
    HM_FIELD(hm_coord_explain_link_t, link.njobs, "jobs", HM_F_INT),
    HM_FIELD(hm_coord_explain_link_t, own_util, "own_utilisation", HM_F_DBL),
    HM_FIELD(hm_coord_explain_link_t, share, "share", HM_F_DBL),
    HM_FIELD(hm_coord_explain_link_t, nothers, "others", HM_F_INT),
    HM_FIELD(hm_coord_explain_link_t, others, "other_jobs", HM_F_STR),
};

static const hm_field_t explain_fields[] = {
    HM_FIELD_OBJ(hm_coord_explain_t, job, "job", job_view_fields),
    HM_FIELD(hm_coord_explain_t, gpus, "gpus", HM_F_STR),
    HM_FIELD(hm_coord_explain_t, nlinks_total, "links_total", HM_F_INT),
    HM_FIELD(hm_coord_explain_t, nshared, "shared_links", HM_F_INT),
    HM_FIELD(hm_coord_explain_t, share, "predicted_share", HM_F_DBL),
    HM_FIELD(hm_coord_explain_t, slowdown, "predicted_slowdown", HM_F_DBL),
    HM_FIELD(hm_coord_explain_t, decision, "decision", HM_F_STR),
    HM_FIELD(hm_coord_explain_t, why, "reason", HM_F_STR),
    HM_FIELD_FL(hm_coord_explain_t, burst_declared_us, "burst_declared_us", HM_F_DBL, HM_F_NULL),
    HM_FIELD_FL(hm_coord_explain_t, burst_model_us, "burst_modelled_us", HM_F_DBL, HM_F_NULL),
    HM_FIELD_FL(hm_coord_explain_t, burst_factor, "burst_factor", HM_F_DBL, HM_F_NULL),
    HM_FIELD(hm_coord_explain_t, burst_samples, "burst_samples", HM_F_DBL),
};

json_object *hm_json_link_view(const hm_coord_link_view_t *l)
{
	return hm_fields_new(link_view_fields, HM_NFIELDS(link_view_fields), l);
}

json_object *hm_json_explain(const hm_coord_explain_t *e)
{
	json_object *o = hm_fields_new(explain_fields, HM_NFIELDS(explain_fields), e);
	json_object *arr = json_object_new_array();

	for (int i = 0; i < e->nlinks; i++)
		json_object_array_add(arr,
				      hm_fields_new(explain_link_fields,
						    HM_NFIELDS(explain_link_fields), &e->links[i]));
	json_object_object_add(o, "links", arr);
	return o;
}

void hm_json_explain_parse(json_object *o, hm_coord_explain_t *e)
{
	json_object *arr = NULL;

	memset(e, 0, sizeof(*e));
	hm_fields_read(o, explain_fields, HM_NFIELDS(explain_fields), e);
	if (!o || !json_object_object_get_ex(o, "links", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(arr) && e->nlinks < HM_EXPLAIN_MAX_LINKS;
	     i++)
		hm_fields_read(json_object_array_get_idx(arr, i), explain_link_fields,
			       HM_NFIELDS(explain_link_fields), &e->links[e->nlinks++]);
}
