/*
 * Contract B codec. Flat records are described once, by field tables that drive
 * both encoding and decoding (type, range, required or optional); the lists and
 * nesting of each message are written out below.
 */
#include "hm_agent_wire.h"
#include "hm_classes.h"

#include <arpa/inet.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_fields.h"
#include "hm_rack_wire.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))
#define US_MAX       3600000000.0          /* one hour, the runtime's bound of periods and shifts */
#define TIME_US_MAX  4611686018427387904.0 /* 2^62 */
#define COUNT_MAX    9007199254740992.0    /* 2^53: exact in every JSON reader */

static const char *const op_names[HM_AW__COUNT] = {
    [HM_AW_HELLO] = "agent_hello",
    [HM_AW_WELCOME] = "agent_welcome",
    [HM_AW_BEAT] = "agent_beat",
    [HM_AW_ASSIGN] = "agent_assign",
    [HM_AW_ERROR] = "error",
    [HM_AW_RACK_ROUND] = "rack_round",
    [HM_AW_RACK_RESULT] = "rack_result",
    [HM_AW_RACK_ASSIGN] = "rack_assign",
};

const char *hm_aw_op_name(hm_aw_op_t op)
{
	return op >= 0 && op < HM_AW__COUNT ? op_names[op] : NULL;
}

/* ---- field tables ---------------------------------------------------------------- */

#define NAME_CHARS   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define POLICY_CHARS "abcdefghijklmnopqrstuvwxyz0123456789_-"
#define DEV_CHARS    NAME_CHARS ":"
#define ADDR_CHARS   NAME_CHARS ":[]"

static const hm_field_t sched_fields[] = {
    HM_FIELD_CHECKED(hm_aw_sched_t, policy, "policy", HM_F_STR, 1, 0, HM_F_REQ, POLICY_CHARS),
    HM_FIELD_CHECKED(hm_aw_sched_t, epoch, "epoch", HM_F_LONG, 0, HM_AW_EPOCH_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_sched_t, period_us, "period_us", HM_F_I64, 0, US_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_sched_t, shift_us, "shift_us", HM_F_I64, 0, US_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_sched_t, origin_us, "origin_us", HM_F_I64, 0, TIME_US_MAX, HM_F_REQ,
		     NULL),
    HM_FIELD_CHECKED(hm_aw_sched_t, guard_us, "guard_us", HM_F_I64, 0, US_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_sched_t, prio, "prio", HM_F_INT, 0, HM_PRIO_MAX, HM_F_REQ, NULL),
};

static const hm_field_t job_assign_fields[] = {
    HM_FIELD_CHECKED(hm_aw_job_assign_t, job_id, "job_id", HM_F_LONG, 1, HM_AW_JOB_ID_MAX, HM_F_REQ,
		     NULL),
    HM_FIELD_CHECKED(hm_aw_job_assign_t, uid, "uid", HM_F_U32, 0, 4294967294.0, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_job_assign_t, scheduled, "scheduled", HM_F_BOOL, 0, 1, HM_F_REQ, NULL),
};

static const hm_field_t next_fields[] = {
    HM_FIELD_CHECKED(hm_aw_job_assign_t, next_effective_us, "effective_us", HM_F_I64, 0,
		     TIME_US_MAX, HM_F_REQ, NULL),
};

static const hm_field_t job_state_fields[] = {
    HM_FIELD_CHECKED(hm_aw_job_state_t, job_id, "job_id", HM_F_LONG, 1, HM_AW_JOB_ID_MAX, HM_F_REQ,
		     NULL),
    HM_FIELD_CHECKED(hm_aw_job_state_t, steps, "steps", HM_F_INT, 0, 1e6, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_job_state_t, ranks, "ranks", HM_F_INT, 0, 1e6, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_job_state_t, applied_epoch, "applied_epoch", HM_F_LONG, 0,
		     HM_AW_EPOCH_MAX, HM_F_NULL, NULL),
    /* Absent (none reported, or an older agent): the decision's class is assumed. */
    {"nccl_class", HM_F_INT, offsetof(hm_aw_job_state_t, nccl_class), sizeof(int), 0, HM_PRIO_MAX,
     HM_F_IF, NULL, NULL, 0, offsetof(hm_aw_job_state_t, has_nccl_class)},
};

static const hm_field_t meas_fields[] = {
    HM_FIELD_CHECKED(hm_aw_meas_t, samples, "samples", HM_F_U64, 1, COUNT_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_meas_t, iter_us, "iter_us", HM_F_DBL, 0, 1e12, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_meas_t, iter_sd_us, "iter_sd_us", HM_F_DBL, 0, 1e12, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_meas_t, compute_us, "compute_us", HM_F_DBL, 0, 1e12, HM_F_NEG, NULL),
    HM_FIELD_CHECKED(hm_aw_meas_t, compute_sd_us, "compute_sd_us", HM_F_DBL, 0, 1e12, HM_F_NEG,
		     NULL),
    HM_FIELD_CHECKED(hm_aw_meas_t, burst_us, "burst_us", HM_F_DBL, 0, 1e12, HM_F_NEG, NULL),
    HM_FIELD_CHECKED(hm_aw_meas_t, slot_misses, "slot_misses", HM_F_U64, 0, COUNT_MAX, HM_F_REQ,
		     NULL),
};

static const hm_field_t nic_fields[] = {
    HM_FIELD_CHECKED(hm_hwnic_t, name, "name", HM_F_STR, 1, 0, HM_F_REQ, DEV_CHARS),
    HM_FIELD_CHECKED(hm_hwnic_t, pci, "pci", HM_F_STR, 0, 0, HM_F_REQ, DEV_CHARS),
    HM_FIELD_CHECKED(hm_hwnic_t, numa, "numa", HM_F_INT, -1, 65535, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_hwnic_t, speed_bps, "speed_bps", HM_F_I64, 0, 1e15, HM_F_REQ, NULL),
};

static const hm_field_t welcome_fields[] = {
    HM_FIELD_CHECKED(hm_aw_msg_t, ok, "ok", HM_F_BOOL, 0, 1, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_msg_t, heartbeat_ms, "heartbeat_ms", HM_F_INT, 100, 60000, HM_F_REQ,
		     NULL),
    HM_FIELD_CHECKED(hm_aw_msg_t, valid_ms, "valid_ms", HM_F_INT, 200, 3600000, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_msg_t, lead_ms, "lead_ms", HM_F_INT, 200, 600000, HM_F_REQ, NULL),
};

static const hm_field_t refusal_fields[] = {
    HM_FIELD_CHECKED(hm_aw_msg_t, ok, "ok", HM_F_BOOL, 0, 1, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_msg_t, error, "error", HM_F_STR, 0, 0, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_aw_msg_t, code, "code", HM_F_STR, 0, 0, 0, POLICY_CHARS),
};

static const hm_field_t hello_fields[] = {
    HM_FIELD_CHECKED(hm_aw_msg_t, node, "node", HM_F_STR, 1, 0, HM_F_REQ, NAME_CHARS),
    HM_FIELD_CHECKED(hm_aw_msg_t, agent_version, "agent_version", HM_F_STR, 1, 0, HM_F_REQ, NULL),
    /* Absent (an agent from before rack rounds): it is never sent a rack_round. */
    HM_FIELD_CHECKED(hm_aw_msg_t, rack_solver, "rack_solver", HM_F_BOOL, 0, 1, 0, NULL),
    /* Absent or 0: it has no rack channel (its rack's agents cannot reach it). */
    HM_FIELD_CHECKED(hm_aw_msg_t, rack_port, "rack_port", HM_F_INT, 0, 65535, 0, NULL),
};

/* agent_assign's rack members; "rack" present means the coordinator elects leaders. */
static const hm_field_t rack_fields[] = {
    {"rack", HM_F_STR, offsetof(hm_aw_msg_t, rack.rack), HM_AW_NODE_MAX, 1, 0, HM_F_IF, NULL, NULL,
     0, offsetof(hm_aw_msg_t, has_rack)},
    {"leader", HM_F_STR, offsetof(hm_aw_msg_t, rack.leader), HM_AW_NODE_MAX, 1, 0, HM_F_NULL,
     NAME_CHARS, NULL, 0, 0},
    {"role", HM_F_STR, offsetof(hm_aw_msg_t, rack.role), HM_AW_ROLE_MAX, 1, 0, 0, POLICY_CHARS,
     NULL, 0, 0},
    {"term", HM_F_LONG, offsetof(hm_aw_msg_t, rack.term), sizeof(long), 0, HM_AW_EPOCH_MAX, 0, NULL,
     NULL, 0, 0},
    {"leader_addr", HM_F_STR, offsetof(hm_aw_msg_t, rack.leader_addr), HM_AW_ADDR_MAX, 1, 0,
     HM_F_NULL, ADDR_CHARS, NULL, 0, 0},
};

static const hm_field_t push_fields[] = {
    HM_FIELD_CHECKED(hm_aw_msg_t, effective_us, "effective_us", HM_F_I64, 0, TIME_US_MAX, HM_F_REQ,
		     NULL),
    /* The leader reached the coordinator again: connect now, apply nothing. */
    HM_FIELD_CHECKED(hm_aw_msg_t, reconnect, "reconnect", HM_F_BOOL, 0, 1, 0, NULL),
};

/* agent_assign: the coordinator's clock; agent_beat: the agent's estimate of the offset. */
static const hm_field_t coord_clock_fields[] = {
    HM_FIELD_CHECKED(hm_aw_msg_t, coord_us, "coord_us", HM_F_I64, 0, TIME_US_MAX, 0, NULL),
};
static const hm_field_t beat_clock_fields[] = {
    {"clock_offset_us", HM_F_I64, offsetof(hm_aw_msg_t, clock_offset_us), sizeof(int64_t), -US_MAX,
     US_MAX, HM_F_IF, NULL, NULL, 0, offsetof(hm_aw_msg_t, has_clock)},
    {"clock_rtt_us", HM_F_I64, offsetof(hm_aw_msg_t, clock_rtt_us), sizeof(int64_t), 0, US_MAX,
     HM_F_IF, NULL, NULL, 0, offsetof(hm_aw_msg_t, has_clock)},
};

static const hm_field_t node_fields[] = {
    {"node", HM_F_STR, 0, HM_AW_NODE_MAX, 1, 0, HM_F_REQ, NAME_CHARS, NULL, 0, 0},
};

/* ---- lists ------------------------------------------------------------------------- */

/* The array member key of o with 0..max entries (absent: required ? error : 0 entries). */
hm_rc_t hm_aw_get_array(json_object *o, const char *key, size_t max, bool required,
			json_object **arr, size_t *n, const char *path, hm_err_t *err)
{
	json_object *a = NULL;

	*arr = NULL;
	*n = 0;
	if (!json_object_object_get_ex(o, key, &a)) {
		if (required)
			return hm_err_set(err, HM_ERR_PROTO, "%s.%s: missing", path, key);
		return HM_OK;
	}
	if (!json_object_is_type(a, json_type_array))
		return hm_err_set(err, HM_ERR_PROTO, "%s.%s: not a JSON array", path, key);
	if (json_object_array_length(a) > max)
		return hm_err_set(err, HM_ERR_PROTO, "%s.%s: %zu entries (accepted: at most %zu)",
				  path, key, json_object_array_length(a), max);
	*arr = a;
	*n = json_object_array_length(a);
	return HM_OK;
}

static json_object *encode_job_state(const hm_aw_job_state_t *j, bool with_meas)
{
	json_object *o = json_object_new_object();

	hm_fields_encode(o, job_state_fields, HM_NFIELDS(job_state_fields), j);
	if (with_meas && j->has_meas) {
		json_object *m = json_object_new_object();

		hm_fields_encode(m, meas_fields, HM_NFIELDS(meas_fields), &j->meas);
		ADD(o, "meas", m);
	}
	return o;
}

static hm_rc_t decode_job_state(json_object *o, hm_aw_job_state_t *j, const char *path,
				hm_err_t *err)
{
	json_object *m = NULL;
	char sub[128];
	hm_rc_t rc =
	    hm_fields_decode(o, job_state_fields, HM_NFIELDS(job_state_fields), j, path, err);

	if (rc == HM_OK && json_object_object_get_ex(o, "meas", &m) && m) {
		hm_err_t me = {0};

		snprintf(sub, sizeof(sub), "%.80s.meas", path);
		/* The values come from a user's report file: a bad one drops this
		   entry's meas, never the frame (and with it the node's connection). */
		j->has_meas = hm_fields_decode(m, meas_fields, HM_NFIELDS(meas_fields), &j->meas,
					       sub, &me) == HM_OK;
		if (!j->has_meas) {
			memset(&j->meas, 0, sizeof(j->meas));
			snprintf(j->meas_refused, sizeof(j->meas_refused), "%.159s", me.msg);
		}
	}
	return rc;
}

hm_rc_t hm_aw_meas_check(const hm_aw_meas_t *m, hm_err_t *err)
{
	json_object *o = hm_fields_new(meas_fields, HM_NFIELDS(meas_fields), m);
	hm_aw_meas_t back;
	hm_rc_t rc;

	if (!o)
		return hm_err_set(err, HM_ERR_NOMEM, "meas: out of memory");
	rc = hm_fields_decode(o, meas_fields, HM_NFIELDS(meas_fields), &back, "meas", err);
	json_object_put(o);
	return rc;
}

static json_object *encode_state_jobs(const hm_aw_node_state_t *ns, bool with_meas)
{
	json_object *a = json_object_new_array();

	for (int i = 0; i < ns->njobs; i++)
		json_object_array_add(a, encode_job_state(&ns->jobs[i], with_meas));
	return a;
}

static hm_rc_t decode_state_jobs(json_object *o, hm_aw_node_state_t *ns, const char *path,
				 hm_err_t *err)
{
	json_object *a;
	size_t n;
	char sub[128];
	hm_rc_t rc = hm_aw_get_array(o, "jobs", HM_AW_MAX_JOBS, true, &a, &n, path, err);

	for (size_t i = 0; rc == HM_OK && i < n; i++) {
		snprintf(sub, sizeof(sub), "%.80s.jobs[%zu]", path, i);
		rc = decode_job_state(json_object_array_get_idx(a, i), &ns->jobs[i], sub, err);
	}
	ns->njobs = (int)n;
	return rc;
}

void hm_aw_topo_encode(json_object *o, const hm_hwnode_t *t)
{
	json_object *nics = json_object_new_array();
	json_object *map = json_object_new_array();

	ADD(o, "gpus", json_object_new_int(t->ngpus));
	for (int i = 0; i < t->nnics; i++) {
		json_object *n = json_object_new_object();

		hm_fields_encode(n, nic_fields, HM_NFIELDS(nic_fields), &t->nics[i]);
		json_object_array_add(nics, n);
	}
	ADD(o, "nics", nics);
	for (int g = 0; g < t->ngpus; g++)
		json_object_array_add(map, json_object_new_int(t->nnics ? t->gpu_nic[g] : -1));
	ADD(o, "gpu_nic", map);
}

static json_object *encode_topo(const hm_hwnode_t *t)
{
	json_object *o = json_object_new_object();

	hm_aw_topo_encode(o, t);
	return o;
}

hm_rc_t hm_aw_topo_decode(json_object *o, hm_hwnode_t *t, const char *path, hm_err_t *err)
{
	static const hm_field_t gpus_field = HM_FIELD_CHECKED(
	    hm_hwnode_t, ngpus, "gpus", HM_F_INT, 0, HM_MAX_GPUS_PER_HOST, HM_F_REQ, NULL);
	json_object *nics, *map;
	size_t n, ng;
	char sub[128];
	hm_rc_t rc = hm_fields_decode(o, &gpus_field, 1, t, path, err);

	if (rc == HM_OK)
		rc = hm_aw_get_array(o, "nics", HM_MAX_NICS_PER_HOST, true, &nics, &n, path, err);
	for (size_t i = 0; rc == HM_OK && i < n; i++) {
		snprintf(sub, sizeof(sub), "%.100s.nics[%zu]", path, i);
		rc = hm_fields_decode(json_object_array_get_idx(nics, i), nic_fields,
				      HM_NFIELDS(nic_fields), &t->nics[i], sub, err);
	}
	if (rc != HM_OK)
		return rc;
	t->nnics = (int)n;
	if ((rc = hm_aw_get_array(o, "gpu_nic", HM_MAX_GPUS_PER_HOST, true, &map, &ng, path,
				  err)) != HM_OK)
		return rc;
	if (ng != (size_t)t->ngpus)
		return hm_err_set(err, HM_ERR_PROTO, "%s.gpu_nic: %zu entries for %d GPUs", path,
				  ng, t->ngpus);
	for (size_t g = 0; g < ng; g++) {
		json_object *v = json_object_array_get_idx(map, g);
		int64_t x = json_object_get_int64(v);
		int64_t lo = t->nnics ? 0 : -1, hi = t->nnics ? t->nnics - 1 : -1;

		if (!json_object_is_type(v, json_type_int) || x < lo || x > hi)
			return hm_err_set(err, HM_ERR_PROTO,
					  "%s.gpu_nic[%zu]: '%s' is not a NIC index "
					  "(accepted: %lld..%lld)",
					  path, g, json_object_to_json_string(v), (long long)lo,
					  (long long)hi);
		t->gpu_nic[g] = (int)x;
	}
	return HM_OK;
}

static json_object *encode_members(const hm_aw_rack_t *k)
{
	json_object *a = json_object_new_array();

	for (int i = 0; i < k->nmembers && i < HM_AW_MAX_NODES; i++) {
		char ip[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &k->member_ip[i], ip, sizeof(ip));
		json_object_array_add(a, json_object_new_string(ip));
	}
	return a;
}

static json_object *encode_job_assign(const hm_aw_job_assign_t *j)
{
	json_object *o = json_object_new_object();

	hm_fields_encode(o, job_assign_fields, HM_NFIELDS(job_assign_fields), j);
	if (!j->scheduled) {
		ADD(o, "reason", json_object_new_string(j->reason));
		return o;
	}
	hm_fields_encode(o, sched_fields, HM_NFIELDS(sched_fields), &j->cur);
	if (j->has_next) {
		json_object *n = json_object_new_object();

		hm_fields_encode(n, next_fields, HM_NFIELDS(next_fields), j);
		hm_fields_encode(n, sched_fields, HM_NFIELDS(sched_fields), &j->next);
		ADD(o, "next", n);
	}
	return o;
}

static hm_rc_t decode_job_assign(json_object *o, hm_aw_job_assign_t *j, const char *path,
				 hm_err_t *err)
{
	static const hm_field_t reason_field =
	    HM_FIELD_CHECKED(hm_aw_job_assign_t, reason, "reason", HM_F_STR, 0, 0, 0, NULL);
	json_object *n = NULL;
	char sub[160];
	hm_rc_t rc =
	    hm_fields_decode(o, job_assign_fields, HM_NFIELDS(job_assign_fields), j, path, err);

	if (rc != HM_OK)
		return rc;
	if (!j->scheduled)
		return hm_fields_decode(o, &reason_field, 1, j, path, err);
	if ((rc = hm_fields_decode(o, sched_fields, HM_NFIELDS(sched_fields), &j->cur, path,
				   err)) != HM_OK)
		return rc;
	if (!json_object_object_get_ex(o, "next", &n) || !n)
		return HM_OK;
	snprintf(sub, sizeof(sub), "%.120s.next", path);
	j->has_next = true;
	if ((rc = hm_fields_decode(n, next_fields, HM_NFIELDS(next_fields), j, sub, err)) != HM_OK)
		return rc;
	return hm_fields_decode(n, sched_fields, HM_NFIELDS(sched_fields), &j->next, sub, err);
}

/* ---- messages ---------------------------------------------------------------------- */

/* A zeroed array of n entries of size bytes in place of old (freed); NULL when n <= 0. */
static void *new_entries(void *old, int n, size_t size, int *count, hm_rc_t *rc, hm_err_t *err)
{
	void *p = NULL;

	free(old);
	*count = 0;
	*rc = HM_OK;
	if (n > 0 && !(p = calloc((size_t)n, size)))
		*rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory for %d nodes", n);
	else if (n > 0)
		*count = n;
	return p;
}

hm_rc_t hm_aw_alloc_nodes(hm_aw_msg_t *m, int n, hm_err_t *err)
{
	hm_rc_t rc;

	m->nodes = new_entries(m->nodes, n, sizeof(*m->nodes), &m->nnodes, &rc, err);
	return rc;
}

hm_rc_t hm_aw_alloc_assign(hm_aw_msg_t *m, int n, hm_err_t *err)
{
	hm_rc_t rc;

	m->assign = new_entries(m->assign, n, sizeof(*m->assign), &m->nassign, &rc, err);
	return rc;
}

void hm_aw_msg_free(hm_aw_msg_t *m)
{
	hm_rc_t rc;

	if (!m)
		return;
	m->nodes = new_entries(m->nodes, 0, sizeof(*m->nodes), &m->nnodes, &rc, NULL);
	m->assign = new_entries(m->assign, 0, sizeof(*m->assign), &m->nassign, &rc, NULL);
	hm_rack_req_free(&m->round);
	hm_rack_rep_free(&m->result);
}

static void encode_body(const hm_aw_msg_t *m, json_object *o)
{
	json_object *a;

	switch (m->op) {
	case HM_AW_HELLO:
		hm_fields_encode(o, hello_fields, HM_NFIELDS(hello_fields), m);
		ADD(o, "topo", m->has_topo ? encode_topo(&m->topo) : NULL);
		ADD(o, "jobs",
		    m->nnodes ? encode_state_jobs(&m->nodes[0], false) : json_object_new_array());
		break;
	case HM_AW_WELCOME:
		if (m->ok)
			hm_fields_encode(o, welcome_fields, HM_NFIELDS(welcome_fields), m);
		else
			hm_fields_encode(o, refusal_fields, HM_NFIELDS(refusal_fields), m);
		break;
	case HM_AW_ERROR:
		hm_fields_encode(o, refusal_fields, HM_NFIELDS(refusal_fields), m);
		break;
	case HM_AW_BEAT:
		a = json_object_new_array();
		for (int i = 0; i < m->nnodes; i++) {
			json_object *n = json_object_new_object();

			hm_fields_encode(n, node_fields, 1, m->nodes[i].node);
			ADD(n, "jobs", encode_state_jobs(&m->nodes[i], true));
			json_object_array_add(a, n);
		}
		ADD(o, "nodes", a);
		hm_fields_encode(o, beat_clock_fields, HM_NFIELDS(beat_clock_fields), m);
		break;
	case HM_AW_RACK_ASSIGN:
		hm_fields_encode(o, push_fields, HM_NFIELDS(push_fields), m);
		/* the decisions and the rack as in agent_assign */
		__attribute__((fallthrough));
	case HM_AW_ASSIGN:
		a = json_object_new_array();
		for (int i = 0; i < m->nassign; i++) {
			json_object *n = json_object_new_object(), *jobs = json_object_new_array();

			hm_fields_encode(n, node_fields, 1, m->assign[i].node);
			for (int j = 0; j < m->assign[i].njobs; j++)
				json_object_array_add(jobs,
						      encode_job_assign(&m->assign[i].jobs[j]));
			ADD(n, "jobs", jobs);
			json_object_array_add(a, n);
		}
		ADD(o, "nodes", a);
		if (m->has_rack)
			hm_fields_encode(o, rack_fields, HM_NFIELDS(rack_fields), m);
		if (m->op == HM_AW_ASSIGN && m->coord_us > 0)
			hm_fields_encode(o, coord_clock_fields, 1, m);
		if (m->has_rack && m->rack.has_members)
			ADD(o, "members", encode_members(&m->rack));
		break;
	case HM_AW_RACK_ROUND:
		hm_rw_round_encode(o, &m->round);
		break;
	case HM_AW_RACK_RESULT:
		hm_rw_result_encode(o, &m->result);
		break;
	default:
		break;
	}
}

hm_rc_t hm_aw_encode(const hm_aw_msg_t *m, char **json, hm_err_t *err)
{
	json_object *o;
	hm_rc_t rc = HM_OK;

	*json = NULL;
	if (!hm_aw_op_name(m->op) || m->seq < 1 || m->nnodes < 0 || m->nnodes > HM_AW_MAX_NODES ||
	    m->nassign < 0 || m->nassign > HM_AW_MAX_NODES || (m->nnodes && !m->nodes) ||
	    (m->nassign && !m->assign) || (m->op == HM_AW_HELLO && m->nnodes > 1))
		return hm_err_set(err, HM_ERR_INVAL, "cannot encode: op %d, seq %lld, %d/%d nodes",
				  (int)m->op, (long long)m->seq, m->nnodes, m->nassign);
	for (int i = 0; i < m->nnodes; i++)
		if (m->nodes[i].njobs < 0 || m->nodes[i].njobs > HM_AW_MAX_JOBS)
			return hm_err_set(err, HM_ERR_INVAL, "cannot encode %d jobs of node '%s'",
					  m->nodes[i].njobs, m->nodes[i].node);
	for (int i = 0; i < m->nassign; i++)
		if (m->assign[i].njobs < 0 || m->assign[i].njobs > HM_AW_MAX_JOBS)
			return hm_err_set(err, HM_ERR_INVAL, "cannot encode %d jobs of node '%s'",
					  m->assign[i].njobs, m->assign[i].node);
	o = json_object_new_object();
	ADD(o, "v", json_object_new_int(HM_AW_VERSION));
	ADD(o, "op", json_object_new_string(op_names[m->op]));
	ADD(o, "seq", json_object_new_int64(m->seq));
	if (m->op == HM_AW_WELCOME || m->op == HM_AW_ASSIGN || m->op == HM_AW_ERROR ||
	    m->op == HM_AW_RACK_RESULT)
		ADD(o, "re", json_object_new_int64(m->re));
	encode_body(m, o);
	if (!(*json = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN))))
		rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
	json_object_put(o);
	return rc;
}

static hm_rc_t decode_nodes_state(json_object *o, hm_aw_msg_t *m, hm_err_t *err)
{
	json_object *a;
	size_t n;
	char sub[64];
	hm_rc_t rc = hm_aw_get_array(o, "nodes", HM_AW_MAX_NODES, true, &a, &n, "agent_beat", err);

	if (rc == HM_OK)
		rc = hm_aw_alloc_nodes(m, (int)n, err);
	for (size_t i = 0; rc == HM_OK && i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);

		snprintf(sub, sizeof(sub), "agent_beat.nodes[%zu]", i);
		if ((rc = hm_fields_decode(e, node_fields, 1, m->nodes[i].node, sub, err)) == HM_OK)
			rc = decode_state_jobs(e, &m->nodes[i], sub, err);
	}
	return rc;
}

static hm_rc_t decode_nodes_assign(json_object *o, hm_aw_msg_t *m, hm_err_t *err)
{
	json_object *a, *jobs;
	size_t n, nj;
	char sub[96];
	const char *op = op_names[m->op];
	hm_rc_t rc = hm_aw_get_array(o, "nodes", HM_AW_MAX_NODES, true, &a, &n, op, err);

	if (rc == HM_OK)
		rc = hm_aw_alloc_assign(m, (int)n, err);
	for (size_t i = 0; rc == HM_OK && i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		hm_aw_node_assign_t *na = &m->assign[i];

		snprintf(sub, sizeof(sub), "%s.nodes[%zu]", op, i);
		if ((rc = hm_fields_decode(e, node_fields, 1, na->node, sub, err)) != HM_OK ||
		    (rc = hm_aw_get_array(e, "jobs", HM_AW_MAX_JOBS, true, &jobs, &nj, sub, err)) !=
			HM_OK)
			break;
		for (size_t j = 0; rc == HM_OK && j < nj; j++) {
			snprintf(sub, sizeof(sub), "%s.nodes[%zu].jobs[%zu]", op, i, j);
			rc = decode_job_assign(json_object_array_get_idx(jobs, j), &na->jobs[j],
					       sub, err);
		}
		na->njobs = (int)nj;
	}
	return rc;
}

/* A leader's "members": its rack's agents' IPv4 addresses, dotted, one per node. */
static hm_rc_t decode_members(json_object *o, hm_aw_rack_t *k, const char *op, hm_err_t *err)
{
	json_object *a;
	size_t n;
	char path[48];
	hm_rc_t rc;

	if (!json_object_object_get_ex(o, "members", NULL))
		return HM_OK; /* an older coordinator: the leader caps per address only */
	snprintf(path, sizeof(path), "%s", op);
	if ((rc = hm_aw_get_array(o, "members", HM_AW_MAX_NODES, true, &a, &n, path, err)) != HM_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		struct in_addr ip;

		if (!json_object_is_type(e, json_type_string) ||
		    inet_pton(AF_INET, json_object_get_string(e), &ip) != 1)
			return hm_err_set(err, HM_ERR_PROTO,
					  "%s.members[%zu]: not an IPv4 address (accepted: "
					  "\"A.B.C.D\")",
					  op, i);
		k->member_ip[i] = ip.s_addr;
	}
	k->nmembers = (int)n;
	k->has_members = true;
	return HM_OK;
}

/* The rack members of agent_assign: all or none (a coordinator without leaders). */
static hm_rc_t decode_rack(json_object *o, hm_aw_msg_t *m, hm_err_t *err)
{
	const char *op = op_names[m->op];
	hm_rc_t rc = hm_fields_decode(o, rack_fields, HM_NFIELDS(rack_fields), m, op, err);

	if (rc == HM_OK && m->has_rack)
		rc = decode_members(o, &m->rack, op, err);
	if (rc != HM_OK || !m->has_rack) {
		memset(&m->rack, 0, sizeof(m->rack));
		return rc;
	}
	if (strcmp(m->rack.role, "leader") != 0 && strcmp(m->rack.role, "member") != 0)
		return hm_err_set(err, HM_ERR_PROTO,
				  "%s.role: '%s' is not accepted (leader, member)", op,
				  m->rack.role);
	if (strcmp(m->rack.role, "leader") == 0 && !m->rack.leader[0])
		return hm_err_set(err, HM_ERR_PROTO, "%s.role: leader, but %s.leader is null", op,
				  op);
	return HM_OK;
}

static hm_rc_t decode_body(json_object *o, hm_aw_msg_t *m, hm_err_t *err)
{
	json_object *v = NULL;
	hm_rc_t rc;

	switch (m->op) {
	case HM_AW_HELLO:
		if ((rc = hm_fields_decode(o, hello_fields, HM_NFIELDS(hello_fields), m,
					   "agent_hello", err)) != HM_OK ||
		    (rc = hm_aw_alloc_nodes(m, 1, err)) != HM_OK)
			return rc;
		memcpy(m->nodes[0].node, m->node, sizeof(m->node));
		if (json_object_object_get_ex(o, "topo", &v) && v) {
			m->has_topo = true;
			if ((rc = hm_aw_topo_decode(v, &m->topo, "agent_hello.topo", err)) != HM_OK)
				return rc;
		}
		return decode_state_jobs(o, &m->nodes[0], "agent_hello", err);
	case HM_AW_WELCOME:
		if (json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v))
			return hm_fields_decode(o, welcome_fields, HM_NFIELDS(welcome_fields), m,
						"agent_welcome", err);
		return hm_fields_decode(o, refusal_fields, HM_NFIELDS(refusal_fields), m,
					"agent_welcome", err);
	case HM_AW_ERROR:
		return hm_fields_decode(o, refusal_fields, HM_NFIELDS(refusal_fields), m, "error",
					err);
	case HM_AW_BEAT:
		if ((rc = decode_nodes_state(o, m, err)) != HM_OK)
			return rc;
		if ((rc = hm_fields_decode(o, beat_clock_fields, HM_NFIELDS(beat_clock_fields), m,
					   "agent_beat", err)) != HM_OK)
			return rc;
		if (m->has_clock && !json_object_object_get_ex(o, "clock_rtt_us", NULL))
			return hm_err_set(
			    err, HM_ERR_PROTO,
			    "agent_beat.clock_rtt_us: missing (clock_offset_us needs it)");
		return HM_OK;
	case HM_AW_ASSIGN:
		if ((rc = decode_nodes_assign(o, m, err)) != HM_OK ||
		    (rc = hm_fields_decode(o, coord_clock_fields, 1, m, "agent_assign", err)) !=
			HM_OK)
			return rc;
		return decode_rack(o, m, err);
	case HM_AW_RACK_ASSIGN:
		if ((rc = hm_fields_decode(o, push_fields, HM_NFIELDS(push_fields), m,
					   "rack_assign", err)) != HM_OK ||
		    (rc = decode_nodes_assign(o, m, err)) != HM_OK ||
		    (rc = decode_rack(o, m, err)) != HM_OK)
			return rc;
		if (!m->has_rack || strcmp(m->rack.role, "leader") != 0)
			return hm_err_set(err, HM_ERR_PROTO,
					  "rack_assign.role: '%s' (accepted: leader, the sender's)",
					  m->has_rack ? m->rack.role : "absent");
		return HM_OK;
	case HM_AW_RACK_ROUND:
		return hm_rw_round_decode(o, &m->round, err);
	case HM_AW_RACK_RESULT:
		return hm_rw_result_decode(o, &m->result, err);
	default:
		return hm_err_set(err, HM_ERR_PROTO, "internal: op %d", (int)m->op);
	}
}

hm_rc_t hm_aw_decode(const char *json, size_t len, hm_aw_msg_t *m, hm_err_t *err)
{
	static const hm_field_t head[] = {
	    {"v", HM_F_INT, 0, 0, 0, 1000000, HM_F_REQ, NULL, NULL, 0, 0},
	    {"seq", HM_F_I64, offsetof(hm_aw_msg_t, seq), 0, 1, COUNT_MAX, HM_F_REQ, NULL, NULL, 0,
	     0},
	    {"re", HM_F_I64, offsetof(hm_aw_msg_t, re), 0, 0, COUNT_MAX, HM_F_REQ, NULL, NULL, 0,
	     0},
	};
	json_tokener *tok = NULL;
	json_object *o = NULL, *op = NULL;
	int version = 0;
	hm_rc_t rc = HM_OK;

	memset(m, 0, sizeof(*m));
	m->op = HM_AW__COUNT;
	if (!(tok = json_tokener_new_ex(16))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		goto out;
	}
	o = json_tokener_parse_ex(tok, json, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		rc = hm_err_set(err, HM_ERR_PROTO, "message is not one JSON text (%s)",
				o ? "trailing bytes"
				  : json_tokener_error_desc(json_tokener_get_error(tok)));
		goto out;
	}
	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "op", &op) ||
	    !json_object_is_type(op, json_type_string)) {
		rc = hm_err_set(err, HM_ERR_PROTO, "message is not a JSON object with an \"op\"");
		goto out;
	}
	for (int i = 0; i < HM_AW__COUNT; i++)
		if (strcmp(json_object_get_string(op), op_names[i]) == 0)
			m->op = (hm_aw_op_t)i;
	if (m->op == HM_AW__COUNT) {
		rc = hm_err_set(err, HM_ERR_PROTO,
				"op '%.40s' is not known (accepted: agent_hello, agent_welcome, "
				"agent_beat, agent_assign, error, rack_round, rack_result, "
				"rack_assign)",
				json_object_get_string(op));
		goto out;
	}
	if ((rc = hm_fields_decode(o, head, 1, &version, op_names[m->op], err)) != HM_OK)
		goto out;
	if (version != HM_AW_VERSION) {
		rc = hm_err_set(err, HM_ERR_PROTO, "%s: protocol version %d (accepted: %d)",
				op_names[m->op], version, HM_AW_VERSION);
		goto out;
	}
	if ((rc = hm_fields_decode(o, head + 1, 1, m, op_names[m->op], err)) != HM_OK)
		goto out;
	if ((m->op == HM_AW_WELCOME || m->op == HM_AW_ASSIGN || m->op == HM_AW_ERROR ||
	     m->op == HM_AW_RACK_RESULT) &&
	    (rc = hm_fields_decode(o, head + 2, 1, m, op_names[m->op], err)) != HM_OK)
		goto out;
	rc = decode_body(o, m, err);
out:
	json_object_put(o);
	if (tok)
		json_tokener_free(tok);
	return rc;
}
