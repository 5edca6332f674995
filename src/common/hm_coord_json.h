/*
 * hm_coord_json.h - JSON forms of the engine's views, shared by the server (replies),
 * the state file and harmonicsctl (reading replies), each driven by one field
 * table (hm_fields.h). Returned objects are new references (caller
 * json_object_put()s them); parsers zero the struct, then read leniently
 * (absent or mistyped members as 0 / "", unknown ones ignored). The
 * assignment's JSON is hm_assign.h's.
 */
#ifndef HM_COORD_JSON_H
#define HM_COORD_JSON_H

#include <json-c/json.h>

#include "hm_assign.h"
#include "hm_fields.h"
#include "hm_json.h"
#include "hm_views.h"

/* A step's measurements (the state file's "measured", a "report" request's members). */
#define HM_MEASURE_NFIELDS 6
extern const hm_field_t hm_measure_fields[HM_MEASURE_NFIELDS];

json_object *hm_json_job_view(const hm_coord_job_view_t *v);
void hm_json_job_view_parse(json_object *o, hm_coord_job_view_t *v);

json_object *hm_json_stats(const hm_coord_stats_t *s);
void hm_json_stats_parse(json_object *o, hm_coord_stats_t *s);

json_object *hm_json_rack_view(const hm_coord_rack_view_t *r);
void hm_json_rack_view_parse(json_object *o, hm_coord_rack_view_t *r);

/* The links of the metrics and of an explained job. */
json_object *hm_json_link_view(const hm_coord_link_view_t *l);
/* A job explained: its view under "job", its links as an array under "links". */
json_object *hm_json_explain(const hm_coord_explain_t *e);
void hm_json_explain_parse(json_object *o, hm_coord_explain_t *e);

#endif
