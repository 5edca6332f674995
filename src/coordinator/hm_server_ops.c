/*
 * The coordinator's request handlers, run by the server's workers: unseal
 * (authenticate) first, then authorise and answer. One-shot requests (steps,
 * harmonicsctl) get one sealed reply; node agents (contract B,
 * docs/protocol.md) keep their connection and get agent_welcome/agent_assign.
 */
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_clock.h"
#include "hm_coord_json.h"
#include "hm_fields.h"
#include "hm_coord_nodes.h"
#include "hm_node_json.h"
#include "hm_json.h"
#include "hm_log.h"
#include "hm_proto.h"
#include "hm_server_int.h"

/* One authenticated request. */
typedef struct {
	hm_server_t *srv;
	hm_srv_task_t *t;
	uint32_t uid, gid;
} req_t;

static json_object *error_reply(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static json_object *error_reply(const char *code, const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap); /* a longer message is cut: it is for people */
	va_end(ap);
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

static json_object *ok_reply(void)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}

/* Job id member: a positive integer below 2^32. */
static bool get_job_id(json_object *req, uint32_t *job_id)
{
	json_object *v;
	int64_t id;

	if (!json_object_object_get_ex(req, "job_id", &v) || !json_object_is_type(v, json_type_int))
		return false;
	id = json_object_get_int64(v);
	if (id <= 0 || id > UINT32_MAX)
		return false;
	*job_id = (uint32_t)id;
	return true;
}

static bool trusted(const req_t *r)
{
	return r->uid == 0 || r->uid == hm_srv_slurm_uid(r->srv);
}

/* What a query ("job", "explain") admits beside the owner, root and SlurmUser:
   the host's operators and the coordinators of the job's account (squeue's
   rule, hm_server.h). */
static bool may_query(req_t *r, const char *account)
{
	return hm_srv_is_operator(r->srv, r->uid) || hm_srv_coordinates(r->srv, r->uid, account);
}

/* Owner, root or SlurmUser may act on a job, and a query (op "query") may also
   come from may_query's: NULL when allowed, else the refusal. */
static json_object *authorise(req_t *r, const char *op, uint32_t job_id)
{
	bool query = strcmp(op, "query") == 0;
	char account[HM_ACCOUNT_MAX];
	uint32_t owner;

	if (hm_coord_job_owner(hm_srv_coord(r->srv), job_id, &owner, account, sizeof(account)) !=
	    HM_OK)
		return error_reply("notfound", "job %u is not known to the coordinator", job_id);
	if (trusted(r) || r->uid == owner || (query && may_query(r, account)))
		return NULL;
	hm_srv_log_refusal(r->srv,
			   "refused %s for job %u from %s: uid %u is not the owner (uid %u), %s",
			   op, job_id, r->t->peer, r->uid, owner,
			   query ? "root, SlurmUser, an operator or a coordinator of its account"
				 : "root or SlurmUser");
	return error_reply("auth", "uid %u may not %s job %u (%s only)", r->uid, op, job_id,
			   query
			       ? "owner, root, SlurmUser, operators and its account's coordinators"
			       : "owner, root or SlurmUser");
}

/* The request's nonce and job id go back in the reply: a reply answers one request. */
static void bind_reply(json_object *reply, json_object *req)
{
	json_object *v;

	if (json_object_object_get_ex(req, "nonce", &v) && json_object_is_type(v, json_type_string))
		json_object_object_add(reply, "nonce", json_object_get(v));
	if (!json_object_object_get_ex(reply, "job_id", NULL) &&
	    json_object_object_get_ex(req, "job_id", &v))
		json_object_object_add(reply, "job_id", json_object_get(v));
}

/*
 * A step registers. A job the sched thread has not seen yet is parked (no
 * worker waits) until a decision or ConnectionTimeout / 2, authenticated
 * already; a job the owner may not see is refused before anything waits.
 */
static json_object *op_register(req_t *r, json_object *req, bool *park)
{
	hm_coord_t *c = hm_srv_coord(r->srv);
	hm_assignment_t cur, next;
	bool has_next = false;
	int64_t eff_us = 0;
	uint32_t job_id, owner;
	json_object *out;

	if (!get_job_id(req, &job_id))
		return error_reply("proto", "register needs \"job_id\": a positive integer");
	if (hm_coord_job_uid(c, job_id, &owner) == HM_OK &&
	    (out = authorise(r, "register", job_id)))
		return out;
	if (hm_coord_assignment_now(c, job_id, hm_real_s(), &cur, &next, &has_next, &eff_us) !=
	    HM_OK) {
		if (!r->t->final) {
			*park = true;
			hm_srv_wake_sched(r->srv); /* the sched thread looks at Slurm's jobs */
			return NULL;
		}
		if (hm_coord_job_uid(c, job_id, &owner) != HM_OK)
			return error_reply("notfound", "job %u is not known to the coordinator",
					   job_id);
		if ((out = authorise(r, "register", job_id)))
			return out;
		/* The unscheduled reply: ok, job_id, scheduled, reason. */
		memset(&cur, 0, sizeof(cur));
		snprintf(cur.reason, sizeof(cur.reason), "awaiting decision");
		return hm_assign_reply(job_id, &cur);
	}
	if ((out = authorise(r, "register", job_id)))
		return out;
	hm_coord_note_register(c, job_id);
	hm_log(HM_LOG_VERBOSE, "job %u step %lld on %s registered: %s", job_id,
	       (long long)hm_json_i64(req, "step_id"), hm_json_str(req, "node"),
	       cur.scheduled ? "scheduled" : cur.reason);
	out = hm_assign_reply(job_id, &cur);
	if (has_next)
		hm_assign_reply_add_next(out, &next, eff_us);
	return out;
}

static json_object *op_report(req_t *r, json_object *req)
{
	uint32_t job_id;
	hm_coord_measure_t m;
	hm_err_t e = {0};
	json_object *out;

	if (!get_job_id(req, &job_id))
		return error_reply("proto", "report needs \"job_id\": a positive integer");
	if ((out = authorise(r, "report", job_id)))
		return out;
	memset(&m, 0, sizeof(m));
	(void)hm_fields_read(req, hm_measure_fields, HM_MEASURE_NFIELDS, &m); /* no strings */
	if (hm_coord_job_measure(hm_srv_coord(r->srv), job_id, &m, &e) != HM_OK)
		return error_reply(e.rc == HM_ERR_NOTFOUND ? "notfound" : "inval", "%s", e.msg);
	return ok_reply();
}

static json_object *op_status(req_t *r)
{
	const hm_conf_t *conf = hm_srv_conf(r->srv);
	hm_coord_stats_t st;
	json_object *out = ok_reply(), *c;

	hm_coord_stats(hm_srv_coord(r->srv), &st);
	json_object_object_add(out, "status", hm_json_stats(&st));
	c = json_object_new_object();
	json_object_object_add(c, "source", json_object_new_string(conf->source));
	json_object_object_add(c, "listen", json_object_new_string(conf->listen_addr));
	json_object_object_add(c, "port", json_object_new_int(hm_srv_port(r->srv)));
	json_object_object_add(c, "default_mode", json_object_new_string(conf->default_mode));
	json_object_object_add(c, "fail_open", json_object_new_boolean(conf->fail_open));
	json_object_object_add(out, "config", c);
	return out;
}

/* The configuration in force as harmonics.conf text, for the nodes of a
   configless cluster (harmonics.so in slurmd writes it beside slurm.conf). */
static json_object *op_conf(req_t *r)
{
	char text[8192];
	json_object *out = ok_reply();

	hm_conf_format(hm_srv_conf(r->srv), text, sizeof(text));
	json_object_object_add(out, "conf", json_object_new_string(text));
	return out;
}

/* A list of views as {"ok":true,key:[...]}; views freed. */
#define LIST_REPLY(key, arr_fn, view_t, to_json)                                                   \
	do {                                                                                       \
		view_t *v = NULL;                                                                  \
		int n = 0;                                                                         \
		json_object *out, *arr;                                                            \
		if (arr_fn(hm_srv_coord(r->srv), &v, &n) != HM_OK)                                 \
			return error_reply("nomem", "out of memory");                              \
		out = ok_reply();                                                                  \
		arr = json_object_new_array();                                                     \
		for (int i = 0; i < n; i++)                                                        \
			json_object_array_add(arr, to_json(&v[i]));                                \
		json_object_object_add(out, key, arr);                                             \
		free(v);                                                                           \
		return out;                                                                        \
	} while (0)

/* The accounts whose answer one request keeps; more are asked per job. */
#define SEEN_ACCOUNTS 64

/* Whose jobs one request may see (squeue's rule under PrivateData=jobs). */
typedef struct {
	req_t *r;
	bool all; /* no PrivateData=jobs, or root, SlurmUser, an operator */
	int n;
	struct {
		char account[HM_ACCOUNT_MAX];
		bool coordinates;
	} seen[SEEN_ACCOUNTS];
} jobs_filter_t;

/* A filter for r (calloc'd, the caller frees; NULL: out of memory). */
static jobs_filter_t *filter_new(req_t *r)
{
	jobs_filter_t *f = calloc(1, sizeof(*f));

	if (f) {
		f->r = r;
		f->all = !hm_srv_private_jobs(r->srv) || trusted(r) ||
			 hm_srv_is_operator(r->srv, r->uid);
	}
	return f;
}

/* Whether the request may see a job of uid in account ("" none). */
static bool sees(jobs_filter_t *f, uint32_t uid, const char *account)
{
	bool yes;

	if (f->all || uid == f->r->uid)
		return true;
	if (!account[0])
		return false;
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->seen[i].account, account) == 0)
			return f->seen[i].coordinates;
	yes = hm_srv_coordinates(f->r->srv, f->r->uid, account);
	if (f->n < SEEN_ACCOUNTS) {
		snprintf(f->seen[f->n].account, sizeof(f->seen[f->n].account), "%s", account);
		f->seen[f->n++].coordinates = yes;
	}
	return yes;
}

/* PrivateData=jobs: a user sees its own jobs and those of the accounts it
   coordinates; root, SlurmUser and the host's operators and administrators
   every one (squeue's rule). */
static json_object *op_jobs(req_t *r)
{
	hm_coord_job_view_t *v = NULL;
	int n = 0;
	jobs_filter_t *f = filter_new(r);
	json_object *out, *arr;

	if (!f || hm_coord_jobs(hm_srv_coord(r->srv), &v, &n) != HM_OK) {
		free(f);
		return error_reply("nomem", "out of memory");
	}
	out = ok_reply();
	arr = json_object_new_array();
	for (int i = 0; i < n; i++)
		if (sees(f, v[i].uid, v[i].account))
			json_object_array_add(arr, hm_json_job_view(&v[i]));
	json_object_object_add(out, "jobs", arr);
	free(v);
	free(f);
	return out;
}

static json_object *op_racks(req_t *r)
{
	LIST_REPLY("racks", hm_coord_racks, hm_coord_rack_view_t, hm_json_rack_view);
}

static json_object *op_nodes(req_t *r)
{
	LIST_REPLY("nodes", hm_coord_nodes, hm_coord_node_view_t, hm_json_node_view);
}

static json_object *op_job(req_t *r, json_object *req)
{
	uint32_t job_id;
	hm_coord_job_view_t v;
	json_object *out;

	if (!get_job_id(req, &job_id))
		return error_reply("proto", "job needs \"job_id\": a positive integer");
	if ((out = authorise(r, "query", job_id)))
		return out;
	if (hm_coord_job(hm_srv_coord(r->srv), job_id, &v) != HM_OK)
		return error_reply("notfound", "job %u is not known to the coordinator", job_id);
	out = ok_reply();
	json_object_object_add(out, "job", hm_json_job_view(&v));
	return out;
}

/* The other jobs on an explained job's links that the request may not see
   ("jobs"' rule) become "*": their number stays, their ids go. */
static void hide_others(jobs_filter_t *f, hm_coord_explain_t *e)
{
	hm_coord_t *c = hm_srv_coord(f->r->srv);

	for (int l = 0; !f->all && l < e->nlinks; l++) {
		char ids[sizeof(e->links[l].others)], *save = NULL;
		char *out = e->links[l].others;
		size_t used = 0;

		snprintf(ids, sizeof(ids), "%s", out); /* the engine's own ids: "12,15" */
		out[0] = '\0';
		for (char *id = strtok_r(ids, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
			uint32_t job_id = (uint32_t)strtoul(id, NULL, 10), uid;
			char account[HM_ACCOUNT_MAX];
			bool seen = hm_coord_job_owner(c, job_id, &uid, account, sizeof(account)) ==
					HM_OK &&
				    sees(f, uid, account);
			int w = snprintf(out + used, sizeof(e->links[l].others) - used, "%s%s",
					 used ? "," : "", seen ? id : "*");

			if (w > 0 && used + (size_t)w < sizeof(e->links[l].others))
				used += (size_t)w;
		}
	}
}

/* A job's contention explained (hm_coord_explain.c); same rights as "job". */
static json_object *op_explain(req_t *r, json_object *req)
{
	uint32_t job_id;
	hm_coord_explain_t *e = NULL;
	jobs_filter_t *f = NULL;
	json_object *out;
	hm_rc_t rc;

	if (!get_job_id(req, &job_id))
		return error_reply("proto", "explain needs \"job_id\": a positive integer");
	if ((out = authorise(r, "query", job_id)))
		return out;
	if (!(e = malloc(sizeof(*e))) || !(f = filter_new(r)))
		rc = HM_ERR_NOMEM;
	else if ((rc = hm_coord_explain(hm_srv_coord(r->srv), job_id, e)) == HM_OK)
		hide_others(f, e);
	if (rc == HM_ERR_NOTFOUND)
		out = error_reply("notfound", "job %u is not known to the coordinator", job_id);
	else if (rc != HM_OK)
		out = error_reply("nomem", "out of memory");
	else
		json_object_object_add(out = ok_reply(), "explain", hm_json_explain(e));
	free(f);
	free(e);
	return out;
}

/* Seal json for uid (HM_PROTO_UID_ANY: anyone) into the task's next output frame. */
static void emit(hm_srv_task_t *t, const char *json, uint32_t uid)
{
	hm_err_t e = {0};
	char *cred = NULL;

	char tag[HM_PROTO_BIND_MAX];
	hm_rc_t rc;

	if (t->nout >= HM_SRV_MAX_OUT)
		return;
	/* To an agent: bound to its connection, so no other agent or port takes it. */
	if (t->ses.agent || t->to_agent)
		rc = hm_proto_bind_tag(tag, sizeof(tag), "coordinator>agent", t->peer, t->local,
				       &e) == HM_OK
			 ? hm_proto_seal_bound(json, uid, tag, &cred, &e)
			 : e.rc;
	else
		rc = hm_proto_seal(json, uid, &cred, &e);
	if (rc != HM_OK) {
		hm_log(HM_LOG_ERROR, "reply to %s: %s", t->peer, e.msg);
		t->close_after = true;
		return;
	}
	t->out[t->nout++] = cred;
}

static void emit_obj(hm_srv_task_t *t, json_object *o, uint32_t uid)
{
	emit(t, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), uid);
	json_object_put(o);
}

/* ---- node agents (contract B) ------------------------------------------------- */

static void emit_msg(hm_srv_task_t *t, const hm_aw_msg_t *m, uint32_t uid)
{
	hm_err_t e = {0};
	char *json = NULL;

	if (hm_aw_encode(m, &json, &e) != HM_OK) {
		hm_log(HM_LOG_ERROR, "agent %s: %s", t->ses.node[0] ? t->ses.node : t->peer, e.msg);
		t->close_after = true;
		return;
	}
	emit(t, json, uid);
	free(json);
}

/* An error frame, then the connection closes (contract B). */
static void agent_error(hm_server_t *s, hm_srv_task_t *t, uint32_t uid, int64_t re,
			const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void agent_error(hm_server_t *s, hm_srv_task_t *t, uint32_t uid, int64_t re,
			const char *code, const char *fmt, ...)
{
	hm_aw_msg_t m = {.op = HM_AW_ERROR, .re = re};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.error, sizeof(m.error), fmt, ap); /* cut to the wire's limit */
	va_end(ap);
	snprintf(m.code, sizeof(m.code), "%s", code);
	m.seq = ++t->ses.out_seq;
	hm_srv_log_refusal(s, "agent %s (%s): %s", t->ses.node[0] ? t->ses.node : "?", t->peer,
			   m.error);
	emit_msg(t, &m, uid);
	t->close_after = true;
	t->refused = true;
}

/* agent_assign for the session's node: re = the frame answered, 0 for a push. */
static void emit_assign(hm_server_t *s, hm_srv_task_t *t, int64_t re)
{
	hm_aw_msg_t m = {.op = HM_AW_ASSIGN, .re = re};
	hm_err_t e = {0};
	unsigned long gen = 0;
	hm_rc_t rc;

	if (hm_aw_alloc_assign(&m, 1, &e) != HM_OK) {
		hm_log(HM_LOG_ERROR, "agent %s: %s", t->ses.node, e.msg);
		t->close_after = true;
		return;
	}
	rc =
	    hm_coord_node_assign(hm_srv_coord(s), t->ses.node, hm_real_s(), &m.assign[0], &gen, &e);
	if (rc == HM_ERR_RANGE)
		hm_log(HM_LOG_ERROR, "agent %s: %s", t->ses.node, e.msg);
	else if (rc != HM_OK)
		m.nassign = 0; /* the node left the topology: renew nothing, list nothing */
	/* After the assignments: a leader change after the counter was read pushes again. */
	m.has_rack = hm_coord_node_rack(hm_srv_coord(s), t->ses.node, &m.rack);
	m.seq = ++t->ses.out_seq;
	t->ses.pushed_gen = gen;
	m.coord_us = hm_clock_us(CLOCK_REALTIME); /* the agents' clock offset (beat replies) */
	emit_msg(t, &m, t->ses.agent_uid);
	hm_aw_msg_free(&m);
}

/* The agent's rack channel: the address its connection comes from, its port ("" = none). */
static const char *rack_addr(const char *peer, int port, char *out, size_t len)
{
	const char *colon = strrchr(peer, ':');

	if (port <= 0 || !colon)
		return "";
	snprintf(out, len, "%.*s:%d", (int)(colon - peer), peer, port);
	return out;
}

static void agent_hello(hm_server_t *s, hm_srv_task_t *t, uint32_t uid, const hm_aw_msg_t *m)
{
	const hm_conf_t *conf = hm_srv_conf(s);
	char addr[HM_AW_ADDR_MAX];
	hm_aw_msg_t w = {.op = HM_AW_WELCOME, .re = m->seq};
	hm_err_t e = {0};

	if (hm_coord_node_hello(hm_srv_coord(s), m->node, m->has_topo ? &m->topo : NULL,
				hm_real_s(), &e) != HM_OK) {
		w.seq = ++t->ses.out_seq;
		snprintf(w.error, sizeof(w.error), "%.*s", (int)sizeof(w.error) - 1, e.msg);
		snprintf(w.code, sizeof(w.code), "node");
		hm_log(HM_LOG_INFO, "refused agent %s from %s: %s", m->node, t->peer, e.msg);
		emit_msg(t, &w, uid);
		t->close_after = true;
		t->refused = true;
		return;
	}
	hm_coord_node_caps(hm_srv_coord(s), m->node, m->rack_solver,
			   rack_addr(t->peer, m->rack_port, addr, sizeof(addr)));
	t->ses.agent = true;
	t->ses.agent_uid = uid;
	t->ses.in_seq = m->seq;
	snprintf(t->ses.node, sizeof(t->ses.node), "%s", m->node);
	w.ok = true;
	w.seq = ++t->ses.out_seq;
	w.heartbeat_ms = conf->heartbeat_ms;
	w.valid_ms = conf->agent_valid_ms;
	w.lead_ms = conf->update_lead_ms;
	emit_msg(t, &w, uid);
	emit_assign(s, t, m->seq);
	hm_log(HM_LOG_INFO, "agent %s connected from %s (%s)", m->node, t->peer, m->agent_version);
}

static void agent_beat(hm_server_t *s, hm_srv_task_t *t, const hm_aw_msg_t *m)
{
	hm_err_t e = {0};

	for (int i = 0; i < m->nnodes; i++) {
		if (strcmp(m->nodes[i].node, t->ses.node) != 0) {
			agent_error(s, t, t->ses.agent_uid, m->seq, "proto",
				    "agent_beat: nodes[%d]: %s, but this connection is node %s's",
				    i, m->nodes[i].node, t->ses.node);
			return;
		}
		if (hm_coord_node_beat(hm_srv_coord(s), &m->nodes[i], hm_real_s(), &e) != HM_OK) {
			agent_error(s, t, t->ses.agent_uid, m->seq, "node", "%s", e.msg);
			return;
		}
	}
	if (m->has_clock)
		hm_coord_node_clock(hm_srv_coord(s), t->ses.node, m->clock_offset_us,
				    m->clock_rtt_us);
	t->ses.in_seq = m->seq;
	emit_assign(s, t, m->seq);
}

/* A rack_round for the session's node, its rack's leader (hm_coord_tier_take). */
static void rack_round(hm_server_t *s, hm_srv_task_t *t)
{
	hm_err_t e = {0};
	char *json = NULL;
	int nout = t->nout;

	if (hm_coord_tier_encode(hm_srv_coord(s), t->rack_idx, t->rack_round, t->ses.out_seq + 1,
				 &json, &e) == HM_OK) {
		t->ses.out_seq++;
		emit(t, json, t->ses.agent_uid);
	} else if (e.rc != HM_ERR_NOTFOUND) { /* NOTFOUND: the round is over, nothing to send */
		hm_log(HM_LOG_ERROR, "rack round to %s: %s", t->ses.node, e.msg);
	}
	if (t->nout == nout)
		hm_coord_tier_fail(hm_srv_coord(s), t->rack_idx, t->rack_round);
	free(json);
}

/* A leader's rack_result: into the open round, or dropped (late or unasked). */
static void rack_result(hm_server_t *s, hm_srv_task_t *t, hm_aw_msg_t *m)
{
	t->ses.in_seq = m->seq;
	if (!hm_coord_tier_result(hm_srv_coord(s), t->ses.node, &m->result))
		hm_log(HM_LOG_VERBOSE,
		       "agent %s: rack_result for rack %d round %lu dropped: no such "
		       "request open (late, or not asked of it)",
		       t->ses.node, m->result.rack, m->result.round);
}

/* A frame from a node agent (or a hello that makes one): text is authenticated. */
static void agent_frame(hm_server_t *s, hm_srv_task_t *t, uint32_t uid, const char *text,
			bool bound)
{
	hm_aw_msg_t m;
	hm_err_t e = {0};

	t->to_agent = true;
	if (!(uid == 0 || uid == hm_srv_slurm_uid(s))) {
		agent_error(s, t, uid, 0, "auth",
			    "frame sealed by uid %u: node agents run as root or SlurmUser", uid);
		return;
	}
	if (!bound) {
		agent_error(s, t, uid, 0, "auth",
			    "frame not bound to a destination (expected \"bind\": "
			    "\"agent>coordinator %s %s\"): an agent older than this coordinator?",
			    t->local, t->peer);
		return;
	}
	if (hm_aw_decode(text, strlen(text), &m, &e) != HM_OK) {
		agent_error(s, t, uid, 0, "proto", "%s", e.msg);
		goto out;
	}
	if (m.seq <= t->ses.in_seq) {
		agent_error(s, t, uid, m.seq, "proto",
			    "%s: seq %lld is not above the last one (%lld): replayed or reordered",
			    hm_aw_op_name(m.op), (long long)m.seq, (long long)t->ses.in_seq);
		goto out;
	}
	if (m.op == HM_AW_HELLO && !t->ses.agent)
		agent_hello(s, t, uid, &m);
	else if (m.op == HM_AW_BEAT && t->ses.agent && uid == t->ses.agent_uid)
		agent_beat(s, t, &m);
	else if (m.op == HM_AW_RACK_RESULT && t->ses.agent && uid == t->ses.agent_uid)
		rack_result(s, t, &m);
	else
		agent_error(s, t, uid, m.seq, "proto", "%s is not expected %s", hm_aw_op_name(m.op),
			    t->ses.agent ? "after agent_hello" : "before agent_hello");
out:
	hm_aw_msg_free(&m);
}

/* ---- dispatch ------------------------------------------------------------------ */

/* text is authenticated (uid/gid), its binding checked (bound: it had one); the task owns
 * it. */
static void handle(hm_server_t *s, hm_srv_task_t *t, uint32_t uid, uint32_t gid, char *text,
		   bool bound)
{
	req_t r = {.srv = s, .t = t, .uid = uid, .gid = gid};
	enum json_tokener_error jerr;
	json_object *req = json_tokener_parse_verbose(text, &jerr), *out = NULL;
	const char *op;
	bool park = false;

	if (!req || !json_object_is_type(req, json_type_object)) {
		hm_srv_log_refusal(s, "refused request from %s uid %u: not a JSON object (%s)",
				   t->peer, uid,
				   req ? "wrong type" : json_tokener_error_desc(jerr));
		out = error_reply("proto", "request is not a JSON object");
		goto reply;
	}
	op = hm_json_str(req, "op");
	if (strncmp(op, "agent_", 6) == 0 || t->ses.agent || bound) {
		json_object_put(req);
		agent_frame(s, t, uid, text, bound);
		free(text);
		return;
	}
	/* One user's requests in progress are capped (a parked one keeps its count). */
	if (t->kind != HM_TASK_DECODED && uid != 0 && uid != hm_srv_slurm_uid(s)) {
		if (!hm_srv_uid_take(s, uid)) {
			hm_srv_log_refusal(s,
					   "refused %.40s from %s: uid %u has %d requests in "
					   "progress (MaxRequestsPerUser)",
					   op, t->peer, uid, hm_srv_conf(s)->max_requests_per_user);
			out =
			    error_reply("busy",
					"uid %u has %d requests in progress (MaxRequestsPerUser); "
					"try again later",
					uid, hm_srv_conf(s)->max_requests_per_user);
			goto reply;
		}
		t->uid_held = true;
		t->uid = uid;
	}
	if (strcmp(op, "register") == 0)
		out = op_register(&r, req, &park);
	else if (strcmp(op, "report") == 0)
		out = op_report(&r, req);
	else if (strcmp(op, "status") == 0)
		out = op_status(&r);
	else if (strcmp(op, "jobs") == 0)
		out = op_jobs(&r);
	else if (strcmp(op, "racks") == 0)
		out = op_racks(&r);
	else if (strcmp(op, "nodes") == 0)
		out = op_nodes(&r);
	else if (strcmp(op, "job") == 0)
		out = op_job(&r, req);
	else if (strcmp(op, "conf") == 0)
		out = op_conf(&r);
	else if (strcmp(op, "explain") == 0)
		out = op_explain(&r, req);
	else
		out = error_reply("proto",
				  "unknown op '%.40s' (accepted: register, report, status, jobs, "
				  "racks, nodes, job, explain, conf, agent_hello)",
				  op);
	if (park) {
		json_object_put(req);
		t->park = true;
		t->data = text; /* kept, authenticated, for the second look */
		t->uid = uid;
		t->gid = gid;
		return;
	}
	bind_reply(out, req);
reply:
	t->refused = !hm_json_bool(out, "ok");
	emit_obj(t, out, uid);
	t->close_after = true; /* one request per connection */
	json_object_put(req);
	free(text);
}

/*
 * A bound frame must be bound to this connection as an agent's ("agent>coordinator
 * LOCAL PEER"): checked before the text is parsed. False: refused (answered, closed).
 */
static bool bind_check(hm_server_t *s, hm_srv_task_t *t, uint32_t uid, char *text, bool *bound)
{
	char tag[HM_PROTO_BIND_MAX];
	hm_err_t e = {0};

	if (strncmp(text, "{\"bind\"", 7) != 0)
		return true; /* a client's request; agent_frame refuses an unbound agent op */
	t->to_agent = true;
	if (hm_proto_bind_tag(tag, sizeof(tag), "agent>coordinator", t->local, t->peer, &e) !=
		HM_OK ||
	    hm_proto_unbind(text, tag, bound, &e) != HM_OK) {
		agent_error(s, t, uid, 0, "auth", "%s", e.msg);
		return false;
	}
	return true;
}

void hm_srv_run_task(hm_server_t *s, hm_srv_task_t *t)
{
	char *text = NULL, *data = t->data;
	uint32_t uid = 0, gid = 0;
	hm_err_t e = {0};
	bool bound = false;

	t->data = NULL;
	switch (t->kind) {
	case HM_TASK_PUSH:
		emit_assign(s, t, 0);
		break;
	case HM_TASK_RACK:
		rack_round(s, t);
		break;
	case HM_TASK_DECODED:
		handle(s, t, t->uid, t->gid, data, false);
		break;
	case HM_TASK_REFUSE:
		t->refused = true;
		t->close_after = true;
		if (t->ses.agent)
			agent_error(s, t, t->ses.agent_uid, 0, "proto", "%s",
				    data ? data : "refused");
		else
			emit_obj(t, error_reply("proto", "%s", data ? data : "refused"),
				 HM_PROTO_UID_ANY);
		free(data);
		break;
	case HM_TASK_FRAME:
		/* Authentication before anything else, and before any wait. */
		if (hm_proto_unseal(data, &text, &uid, &gid, &e) != HM_OK) {
			hm_srv_log_refusal(s, "refused request from %s: %s", t->peer, e.msg);
			t->refused = true;
			if (t->ses.agent)
				agent_error(s, t, t->ses.agent_uid, 0, "auth", "%s", e.msg);
			else
				emit_obj(t,
					 error_reply(e.rc == HM_ERR_AUTH ? "auth" : "proto", "%s",
						     e.msg),
					 HM_PROTO_UID_ANY);
			t->close_after = true;
		} else if (!bind_check(s, t, uid, text, &bound)) {
			free(text);
		} else {
			handle(s, t, uid, gid, text, bound);
		}
		free(data);
		break;
	}
}
