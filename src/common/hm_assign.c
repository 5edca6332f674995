/* The assignment record in JSON and the register reply (hm_assign.h). */
#include "hm_assign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "hm_clock.h"
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

/* Random hex nonce; getrandom, else the clock and pid (uniqueness, not secrecy). */
static void make_nonce(char nonce[HM_ASSIGN_NONCE_LEN + 1])
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint64_t)hm_clock_us(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 40);
	snprintf(nonce, HM_ASSIGN_NONCE_LEN + 1, "%016llx", (unsigned long long)r);
}

char *hm_assign_request(uint32_t job_id, uint32_t step_id, const char *node,
			char nonce[HM_ASSIGN_NONCE_LEN + 1])
{
	json_object *req = json_object_new_object();
	const char *txt;
	char *out;

	make_nonce(nonce);
	ADD(req, "op", json_object_new_string("register"));
	ADD(req, "job_id", json_object_new_int64(job_id));
	ADD(req, "step_id", json_object_new_int64(step_id));
	ADD(req, "node", json_object_new_string(node));
	ADD(req, "nonce", json_object_new_string(nonce));
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

void hm_assign_reply_add_next(json_object *reply, const hm_assignment_t *next, int64_t effective_us)
{
	ADD(reply, "next", hm_json_assignment(next));
	ADD(reply, "effective_us", json_object_new_int64(effective_us));
}

/* A member's text for a message (any JSON type), or dflt when absent. */
static const char *member_text(json_object *o, const char *key, const char *dflt)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : dflt;
}

hm_rc_t hm_assign_reply_parse(const char *reply_json, const char *from, uint32_t job_id,
			      const char *nonce, hm_assign_reply_t *out, hm_err_t *err)
{
	json_object *r = reply_json ? json_tokener_parse(reply_json) : NULL;
	json_object *as = NULL, *nx = NULL;
	hm_rc_t rc = HM_OK;

	memset(out, 0, sizeof(*out));
	if (!r) {
		rc = hm_err_set(err, HM_ERR_PROTO, "unreadable reply from %s", from);
	} else if (strcmp(hm_json_str(r, "nonce"), nonce) != 0 ||
		   (json_object_object_get_ex(r, "job_id", NULL) &&
		    hm_json_i64(r, "job_id") != (int64_t)job_id)) {
		rc = hm_err_set(err, HM_ERR_PROTO,
				"reply from %s answers another request (job %lld, nonce '%.20s'; "
				"expected job %u, nonce '%s')",
				from, (long long)hm_json_i64(r, "job_id"), hm_json_str(r, "nonce"),
				job_id, nonce);
	} else if (!hm_json_bool(r, "ok")) {
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "coordinator refused: %.300s",
				member_text(r, "error", "no reason"));
	} else if (!hm_json_bool(r, "scheduled")) {
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "not scheduled: %.300s",
				member_text(r, "reason", "no reason given"));
	} else if (!json_object_object_get_ex(r, "assignment", &as)) {
		rc = hm_err_set(err, HM_ERR_PROTO, "reply without assignment");
	} else {
		hm_json_assignment_parse(as, &out->cur);
		out->cur.scheduled = true;
		if (!out->cur.policy[0])
			snprintf(out->cur.policy, sizeof(out->cur.policy), "auto");
		if (json_object_object_get_ex(r, "next", &nx)) {
			hm_json_assignment_parse(nx, &out->next);
			out->next.scheduled = true;
			if (!out->next.policy[0])
				snprintf(out->next.policy, sizeof(out->next.policy), "auto");
			out->has_next = true;
			out->effective_us = hm_json_i64(r, "effective_us");
		}
	}
	if (rc != HM_OK)
		memset(out, 0, sizeof(*out));
	json_object_put(r);
	return rc;
}
