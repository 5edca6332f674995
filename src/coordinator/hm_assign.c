/* The assignment record in JSON and the register reply (hm_assign.h). */
#include "hm_assign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_json.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))

const hm_field_t hm_assignment_fields[HM_ASSIGNMENT_NFIELDS] = {
    HM_FIELD(hm_assignment_t, scheduled, "scheduled", HM_F_BOOL),
    HM_FIELD_WHEN(hm_assignment_t, reason, "reason", HM_F_STR, HM_F_UNLESS, scheduled),
    HM_FIELD(hm_assignment_t, policy, "policy", HM_F_STR),
    HM_FIELD(hm_assignment_t, period_us, "period_us", HM_F_I64),
    HM_FIELD(hm_assignment_t, shift_us, "shift_us", HM_F_I64),
    HM_FIELD(hm_assignment_t, origin_us, "origin_us", HM_F_I64),
    HM_FIELD(hm_assignment_t, guard_us, "guard_us", HM_F_I64),
    HM_FIELD(hm_assignment_t, prio, "prio", HM_F_INT),
    HM_FIELD(hm_assignment_t, path, "path", HM_F_INT),
    HM_FIELD(hm_assignment_t, epoch, "epoch", HM_F_ULONG),
    HM_FIELD(hm_assignment_t, decided_us, "decided_us", HM_F_I64),
    HM_FIELD(hm_assignment_t, valid_until_us, "valid_until_us", HM_F_I64),
};

json_object *hm_json_assignment(const hm_assignment_t *a)
{
	return hm_fields_new(hm_assignment_fields, HM_ASSIGNMENT_NFIELDS, a);
}

void hm_json_assignment_parse(json_object *o, hm_assignment_t *a)
{
	memset(a, 0, sizeof(*a));
	hm_fields_read(o, hm_assignment_fields, HM_ASSIGNMENT_NFIELDS, a);
}

char *hm_assign_request(uint32_t job_id, uint32_t step_id, const char *node)
{
	json_object *req = json_object_new_object();
	const char *txt;
	char *out;

	ADD(req, "op", json_object_new_string("register"));
	ADD(req, "job_id", json_object_new_int64(job_id));
	ADD(req, "step_id", json_object_new_int64(step_id));
	ADD(req, "node", json_object_new_string(node));
	txt = json_object_to_json_string(req);
	out = txt ? strdup(txt) : NULL;
	json_object_put(req);
	return out;
}

json_object *hm_assign_reply(uint32_t job_id, const hm_assignment_t *a)
{
	json_object *r = json_object_new_object();

	ADD(r, "ok", json_object_new_boolean(1));
	ADD(r, "job_id", json_object_new_int64(job_id));
	ADD(r, "scheduled", json_object_new_boolean(a->scheduled));
	if (a->scheduled)
		ADD(r, "assignment", hm_json_assignment(a));
	else
		ADD(r, "reason", json_object_new_string(a->reason));
	return r;
}

/* A member's text for a message (any JSON type), or dflt when absent. */
static const char *member_text(json_object *o, const char *key, const char *dflt)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : dflt;
}

hm_rc_t hm_assign_reply_parse(const char *reply_json, const char *from, hm_assignment_t *a,
			      hm_err_t *err)
{
	json_object *r = reply_json ? json_tokener_parse(reply_json) : NULL;
	json_object *as = NULL;
	hm_rc_t rc = HM_OK;

	memset(a, 0, sizeof(*a));
	if (!r) {
		rc = hm_err_set(err, HM_ERR_PROTO, "unreadable reply from %s", from);
	} else if (!hm_json_bool(r, "ok")) {
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "coordinator refused: %.300s",
				member_text(r, "error", "no reason"));
	} else if (!hm_json_bool(r, "scheduled")) {
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "not scheduled: %.300s",
				member_text(r, "reason", "no reason given"));
	} else if (!json_object_object_get_ex(r, "assignment", &as)) {
		rc = hm_err_set(err, HM_ERR_PROTO, "reply without assignment");
	} else {
		hm_json_assignment_parse(as, a);
		a->scheduled = true;
		if (!a->policy[0])
			snprintf(a->policy, sizeof(a->policy), "auto");
	}
	json_object_put(r);
	return rc;
}
