/*
 * hm_json.h - member accessors for the JSON messages of the protocol: the value
 * of a member, or a default (0, "", false) when o is NULL or the member is absent
 * or of another type. Strings point into o (valid while o lives).
 */
#ifndef HM_JSON_H
#define HM_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

int64_t hm_json_i64(json_object *o, const char *key);
double hm_json_dbl(json_object *o, const char *key);
const char *hm_json_str(json_object *o, const char *key);
bool hm_json_bool(json_object *o, const char *key);

#endif
