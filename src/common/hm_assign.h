/*
 * hm_assign.h - a job's assignment as it travels from the coordinator to a step:
 * the record, its JSON (the "assignment" member of a register reply, of a job
 * view and of the state file), and the register reply, written by the
 * coordinator's server and read by the SPANK plugin with the same field list.
 * Part of the client library (no engine needed).
 */
#ifndef HM_ASSIGN_H
#define HM_ASSIGN_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "hm_conf.h"
#include "hm_error.h"
#include "hm_fields.h"

/* What a step exports to its tasks (see hm_pace_env.h for the variable names). */
typedef struct {
	bool scheduled;                /* false: run unpaced; reason says why */
	char reason[128];              /* when !scheduled: "comm-sched off", "no profile", ... */
	char policy[HM_CONF_NAME_MAX]; /* policy that decided */
	int64_t period_us;             /* slot period; 0 = no holding (one-time delay) */
	int64_t shift_us;              /* slot offset within the period, or the delay */
	int64_t origin_us;             /* slot origin, CLOCK_REALTIME */
	int64_t guard_us;              /* late tolerance within a slot */
	int prio;                      /* priority class, 0 = highest */
	int path;                      /* equal-cost path index */
	unsigned long epoch;           /* decision epoch (increases when it changes) */
	int64_t decided_us;            /* when this decision was made */
	int64_t valid_until_us;        /* ask again after this */
} hm_assignment_t;

/* The record's JSON members, in wire order ("reason" only when not scheduled). */
#define HM_ASSIGNMENT_NFIELDS 12
extern const hm_field_t hm_assignment_fields[HM_ASSIGNMENT_NFIELDS];

/* A new JSON object (caller json_object_put()s it). */
json_object *hm_json_assignment(const hm_assignment_t *a);
/* Fill a from o; absent or mistyped members read as 0 / "" (o may be NULL). */
void hm_json_assignment_parse(json_object *o, hm_assignment_t *a);

#define HM_ASSIGN_NONCE_LEN 16 /* hex digits of a register request's nonce */

/* A register reply read back: the assignment in force and, while a change is
   pending, the next one and its switch time (contract C, docs/pacing.md). */
typedef struct {
	hm_assignment_t cur;
	bool has_next;
	hm_assignment_t next;
	int64_t effective_us;
} hm_assign_reply_t;

/*
 * A step's register request, {"op":"register","job_id":..,"step_id":..,"node":..,
 * "nonce":".."}, as malloc'd JSON text (caller frees); NULL when out of memory.
 * nonce receives a fresh random nonce (HM_ASSIGN_NONCE_LEN hex digits + NUL)
 * that the reply must echo, so a reply answers this request and no other.
 */
char *hm_assign_request(uint32_t job_id, uint32_t step_id, const char *node,
			char nonce[HM_ASSIGN_NONCE_LEN + 1]);

/*
 * The register reply for a job that has a decision: {"ok":true,"job_id":..,
 * "scheduled":..} with "assignment" when scheduled, else "reason". New object.
 */
json_object *hm_assign_reply(uint32_t job_id, const hm_assignment_t *a);

/* Add the pending next assignment and its switch time ("next", "effective_us"). */
void hm_assign_reply_add_next(json_object *reply, const hm_assignment_t *next,
			      int64_t effective_us);

/*
 * Read a register reply (JSON text; from names the coordinator for messages) to
 * the request for job_id with nonce. HM_OK: the job is scheduled and *out holds
 * its assignment (policy "auto" when the reply names none). Otherwise *out is
 * cleared and err says why the step runs unscheduled: HM_ERR_PROTO for a reply
 * that is not JSON, lacks the assignment, or answers another request (job id or
 * nonce differ: a replayed or misrouted reply), HM_ERR_NOTFOUND when the
 * coordinator refused ("coordinator refused: ...") or did not schedule the job
 * ("not scheduled: ...").
 */
hm_rc_t hm_assign_reply_parse(const char *reply_json, const char *from, uint32_t job_id,
			      const char *nonce, hm_assign_reply_t *out, hm_err_t *err);

#endif
