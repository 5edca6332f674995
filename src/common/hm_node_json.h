/*
 * hm_node_json.h - a node agent's view in JSON (harmonicsctl nodes): written by
 * the server, read by harmonicsctl. New references; the parser ignores unknown
 * members and reads absent ones as 0 / "".
 */
#ifndef HM_NODE_JSON_H
#define HM_NODE_JSON_H

#include <json-c/json.h>

#include "hm_views.h"

json_object *hm_json_node_view(const hm_coord_node_view_t *v);
void hm_json_node_view_parse(json_object *o, hm_coord_node_view_t *v);

#endif
