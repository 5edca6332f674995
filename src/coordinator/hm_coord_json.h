/*
 * hm_coord_json.h - JSON forms of the engine's views, shared by the server (replies),
 * the state file and harmonicsctl (reading replies). Returned objects are new
 * references (caller json_object_put()s them); parsers fill the struct and
 * ignore unknown members. The assignment's JSON is hm_assign.h's.
 */
#ifndef HM_COORD_JSON_H
#define HM_COORD_JSON_H

#include <json-c/json.h>

#include "hm_assign.h"
#include "hm_coord.h"
#include "hm_json.h"

json_object *hm_json_job_view(const hm_coord_job_view_t *v);
void hm_json_job_view_parse(json_object *o, hm_coord_job_view_t *v);

json_object *hm_json_stats(const hm_coord_stats_t *s);
void hm_json_stats_parse(json_object *o, hm_coord_stats_t *s);

json_object *hm_json_rack_view(const hm_coord_rack_view_t *r);
void hm_json_rack_view_parse(json_object *o, hm_coord_rack_view_t *r);

#endif
