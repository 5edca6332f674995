/*
 * hm_rack_wire.h - the bodies of contract B's rack_round and rack_result
 * (docs/protocol.md): the tiers' records (hm_rack_msg.h) to JSON members and
 * strictly back. hm_agent_wire.c frames them as messages (v, op, seq, re).
 */
#ifndef HM_RACK_WIRE_H
#define HM_RACK_WIRE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "hm_error.h"
#include "hm_rack_msg.h"

void hm_rw_round_encode(json_object *o, const hm_rack_req_t *q);
/* Fill q (zeroed by the caller; free with hm_rack_req_free even on error);
   checked with hm_rack_req_check. HM_ERR_PROTO names the member path. */
hm_rc_t hm_rw_round_decode(json_object *o, hm_rack_req_t *q, hm_err_t *err);

void hm_rw_result_encode(json_object *o, const hm_rack_rep_t *p);
/* Fill p (zeroed by the caller; free with hm_rack_rep_free even on error). */
hm_rc_t hm_rw_result_decode(json_object *o, hm_rack_rep_t *p, hm_err_t *err);

/* The codec's array member reader (hm_agent_wire.c): *arr and *n of member key
   of o, at most max entries; absent is an error when required (else *n = 0).
   HM_ERR_PROTO names path.key. */
hm_rc_t hm_aw_get_array(json_object *o, const char *key, size_t max, bool required,
			json_object **arr, size_t *n, const char *path, hm_err_t *err);

#endif
