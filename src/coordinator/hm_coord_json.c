/* JSON encodings of job views, counters and racks. */
#include "hm_coord_json.h"

#include <stdio.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))

json_object *hm_json_job_view(const hm_coord_job_view_t *v)
{
	json_object *o = json_object_new_object();

	ADD(o, "job_id", json_object_new_int64(v->job_id));
	ADD(o, "uid", json_object_new_int64(v->uid));
	ADD(o, "name", json_object_new_string(v->name));
	ADD(o, "nodes", json_object_new_string(v->nodes));
	ADD(o, "mode", json_object_new_string(v->mode));
	ADD(o, "profile", json_object_new_string(v->profile));
	ADD(o, "gpus", json_object_new_int(v->gpus));
	ADD(o, "racks", json_object_new_int(v->nracks));
	ADD(o, "start_s", json_object_new_double(v->start_s));
	ADD(o, "registered_steps", json_object_new_int(v->registered_steps));
	ADD(o, "measured", json_object_new_boolean(v->measured));
	ADD(o, "assignment", hm_json_assignment(&v->a));
	return o;
}

void hm_json_job_view_parse(json_object *o, hm_coord_job_view_t *v)
{
	json_object *a = NULL;

	memset(v, 0, sizeof(*v));
	v->job_id = (uint32_t)hm_json_i64(o, "job_id");
	v->uid = (uint32_t)hm_json_i64(o, "uid");
	snprintf(v->name, sizeof(v->name), "%s", hm_json_str(o, "name"));
	snprintf(v->nodes, sizeof(v->nodes), "%s", hm_json_str(o, "nodes"));
	snprintf(v->mode, sizeof(v->mode), "%s", hm_json_str(o, "mode"));
	snprintf(v->profile, sizeof(v->profile), "%s", hm_json_str(o, "profile"));
	v->gpus = (int)hm_json_i64(o, "gpus");
	v->nracks = (int)hm_json_i64(o, "racks");
	v->start_s = hm_json_dbl(o, "start_s");
	v->registered_steps = (int)hm_json_i64(o, "registered_steps");
	v->measured = hm_json_bool(o, "measured");
	if (o && json_object_object_get_ex(o, "assignment", &a))
		hm_json_assignment_parse(a, &v->a);
}

json_object *hm_json_stats(const hm_coord_stats_t *s)
{
	json_object *o = json_object_new_object();

	ADD(o, "policy", json_object_new_string(s->policy));
	ADD(o, "epoch_s", json_object_new_double(s->epoch_s));
	ADD(o, "epoch", json_object_new_int64((int64_t)s->epoch));
	ADD(o, "last_decide_s", json_object_new_double(s->last_decide_s));
	ADD(o, "last_decide_wall_s", json_object_new_double(s->last_decide_wall_s));
	ADD(o, "jobs", json_object_new_int(s->njobs));
	ADD(o, "scheduled", json_object_new_int(s->nscheduled));
	ADD(o, "racks", json_object_new_int(s->nracks));
	ADD(o, "hosts", json_object_new_int(s->nhosts));
	ADD(o, "gpus", json_object_new_int(s->ngpus));
	ADD(o, "requests", json_object_new_int64((int64_t)s->requests));
	ADD(o, "refused", json_object_new_int64((int64_t)s->refused));
	ADD(o, "started_s", json_object_new_double(s->started_s));
	return o;
}

void hm_json_stats_parse(json_object *o, hm_coord_stats_t *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->policy, sizeof(s->policy), "%s", hm_json_str(o, "policy"));
	s->epoch_s = hm_json_dbl(o, "epoch_s");
	s->epoch = (unsigned long)hm_json_i64(o, "epoch");
	s->last_decide_s = hm_json_dbl(o, "last_decide_s");
	s->last_decide_wall_s = hm_json_dbl(o, "last_decide_wall_s");
	s->njobs = (int)hm_json_i64(o, "jobs");
	s->nscheduled = (int)hm_json_i64(o, "scheduled");
	s->nracks = (int)hm_json_i64(o, "racks");
	s->nhosts = (int)hm_json_i64(o, "hosts");
	s->ngpus = (int)hm_json_i64(o, "gpus");
	s->requests = (unsigned long)hm_json_i64(o, "requests");
	s->refused = (unsigned long)hm_json_i64(o, "refused");
	s->started_s = hm_json_dbl(o, "started_s");
}

json_object *hm_json_rack_view(const hm_coord_rack_view_t *r)
{
	json_object *o = json_object_new_object();

	ADD(o, "rack", json_object_new_int(r->rack));
	ADD(o, "name", json_object_new_string(r->name));
	ADD(o, "hosts", json_object_new_int(r->nhosts));
	ADD(o, "gpus", json_object_new_int(r->ngpus));
	ADD(o, "jobs", json_object_new_int(r->njobs));
	ADD(o, "cross_rack_jobs", json_object_new_int(r->ncross));
	ADD(o, "load", json_object_new_double(r->load));
	return o;
}

void hm_json_rack_view_parse(json_object *o, hm_coord_rack_view_t *r)
{
	memset(r, 0, sizeof(*r));
	r->rack = (int)hm_json_i64(o, "rack");
	snprintf(r->name, sizeof(r->name), "%s", hm_json_str(o, "name"));
	r->nhosts = (int)hm_json_i64(o, "hosts");
	r->ngpus = (int)hm_json_i64(o, "gpus");
	r->njobs = (int)hm_json_i64(o, "jobs");
	r->ncross = (int)hm_json_i64(o, "cross_rack_jobs");
	r->load = hm_json_dbl(o, "load");
}
