/*
 * hm_coord_json.h - JSON forms of the engine's views, shared by the server (replies),
 * the state file and harmonicsctl (reading replies). Returned objects are new
 * references (caller json_object_put()s them); parsers fill the struct and
 * ignore unknown members.
 */
#ifndef HM_COORD_JSON_H
#define HM_COORD_JSON_H

#include <json-c/json.h>

#include "hm_coord.h"

json_object *hm_json_assignment(const hm_assignment_t *a);
void hm_json_assignment_parse(json_object *o, hm_assignment_t *a);

json_object *hm_json_job_view(const hm_coord_job_view_t *v);
void hm_json_job_view_parse(json_object *o, hm_coord_job_view_t *v);

json_object *hm_json_stats(const hm_coord_stats_t *s);
void hm_json_stats_parse(json_object *o, hm_coord_stats_t *s);

json_object *hm_json_rack_view(const hm_coord_rack_view_t *r);
void hm_json_rack_view_parse(json_object *o, hm_coord_rack_view_t *r);

/* Member accessors with defaults (0 / "") for absent or mistyped members. */
int64_t hm_json_i64(json_object *o, const char *key);
double hm_json_dbl(json_object *o, const char *key);
const char *hm_json_str(json_object *o, const char *key);
bool hm_json_bool(json_object *o, const char *key);

#endif
