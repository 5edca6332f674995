/*
 * The coordinator's server with node agents (contract B) and under slow or
 * hostile clients: a real server on 127.0.0.1, real munge, agent frames made
 * with the agent's own codec. Hello -> welcome + assign, beats -> assign, a
 * push when a decision changes, a replayed seq, an unknown node, an agent of a
 * foreign uid (a forked child as nobody); a silent client and a parked register
 * delay nobody.
 */
#include <arpa/inet.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hm_agent_wire.h"
#include "hm_client.h"
#include "hm_clock.h"
#include "hm_coord_nodes.h"
#include "hm_harmonics_tier.h"
#include "hm_json.h"
#include "server_fixture.h"

static int shift_ms; /* job 100's shift in the policy below */

static hm_rc_t shift_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	for (int k = 0; k < ctx->njobs; k++) {
		hm_decision_t *d = &ctx->jobs[k].dec;

		*d = (hm_decision_t){.period_s = 0.4, .origin_s = 1000.0, .guard_s = 0.002};
		if (ctx->jobs[k].id == 100)
			d->shift_s = shift_ms / 1000.0;
	}
	return HM_OK;
}

static const hm_policy_ops_t shift_policy = {
    .name = "script", .decide = shift_decide, .uses_epochs = true};

static void decide_now(void)
{
	hm_err_t err = {0};
	bool changed;

	assert_int_equal(hm_coord_decide(coord, hm_real_s(), &changed, &err), HM_OK);
}

static int setup(void **state)
{
	hm_conf_t conf;
	hm_err_t err = {0};
	hm_coord_job_info_t j = {.job_id = 100,
				 .uid = OWNER,
				 .nodes = "n[1-2]",
				 .mode = "auto",
				 .profile = "iter=250ms,comm=40%,bytes=1.2GB"};
	bool changed;

	if (!srv_fixture_conf("test_server_agent", &conf))
		return 0;
	conf.conn_timeout_ms = 2000;
	conf.heartbeat_ms = 1000;
	conf.agent_valid_ms = 3000;
	conf.update_lead_ms = 1500;
	conf.rack_timeout_ms = 400;
	if (hm_coord_create(&conf, fixture_topo(), &coord, &err) != HM_OK ||
	    hm_coord_set_policy_ops(coord, &shift_policy, &err) != HM_OK ||
	    hm_coord_job_upsert(coord, &j, &err) != HM_OK ||
	    hm_coord_decide(coord, hm_real_s(), &changed, &err) != HM_OK) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return -1;
	}
	return srv_fixture_start(&conf, 64030);
}

static int dial(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Seal and send one agent message (any uid may read it: as the agent does). */
static void send_bound(int fd, const hm_aw_msg_t *m, const char *tag)
{
	char *json = NULL, *cred = NULL;
	hm_err_t err = {0};

	assert_int_equal(hm_aw_encode(m, &json, &err), HM_OK);
	if (tag)
		assert_int_equal(hm_proto_seal_bound(json, HM_PROTO_UID_ANY, tag, &cred, &err),
				 HM_OK);
	else
		assert_int_equal(hm_proto_seal(json, HM_PROTO_UID_ANY, &cred, &err), HM_OK);
	assert_int_equal(hm_proto_send(fd, cred, strlen(cred), hm_mono_ms() + 2000, &err), HM_OK);
	free(json);
	free(cred);
}

/* Bound to this connection, as the agent binds its frames. */
static void send_msg(int fd, const hm_aw_msg_t *m)
{
	char tag[HM_PROTO_BIND_MAX];
	hm_err_t err = {0};

	assert_int_equal(hm_proto_conn_tag(fd, "agent>coordinator", true, tag, sizeof(tag), &err),
			 HM_OK);
	send_bound(fd, m, tag);
}

/* Receive one message within timeout_ms: HM_OK with *m decoded, else the error. The
 * coordinator's frames must be bound to this connection ("coordinator>agent"). */
static hm_rc_t recv_msg(int fd, int timeout_ms, hm_aw_msg_t *m, uint32_t *sender)
{
	char *frame = NULL, *json = NULL, tag[HM_PROTO_BIND_MAX];
	size_t len;
	uint32_t gid;
	hm_err_t err = {0};
	hm_rc_t rc;

	memset(m, 0, sizeof(*m));
	rc = hm_proto_recv(fd, 65536, hm_mono_ms() + timeout_ms, &frame, &len, &err);
	bool bound = false;

	if (rc == HM_OK && (rc = hm_proto_unseal(frame, &json, sender, &gid, &err)) == HM_OK &&
	    (rc = hm_proto_conn_tag(fd, "coordinator>agent", false, tag, sizeof(tag), &err)) ==
		HM_OK &&
	    (rc = hm_proto_unbind(json, tag, &bound, &err)) == HM_OK)
		rc = bound ? hm_aw_decode(json, strlen(json), m, &err) : HM_ERR_AUTH;
	free(frame);
	free(json);
	return rc;
}

static void hello(hm_aw_msg_t *m, const char *node, int64_t seq)
{
	memset(m, 0, sizeof(*m));
	m->op = HM_AW_HELLO;
	m->seq = seq;
	snprintf(m->node, sizeof(m->node), "%s", node);
	snprintf(m->agent_version, sizeof(m->agent_version), "test");
	assert_int_equal(hm_aw_alloc_nodes(m, 1, NULL), HM_OK);
	snprintf(m->nodes[0].node, sizeof(m->nodes[0].node), "%s", node);
}

static const hm_aw_job_assign_t *find_job(const hm_aw_msg_t *m, long id)
{
	for (int i = 0; m->nassign == 1 && i < m->assign[0].njobs; i++)
		if (m->assign[0].jobs[i].job_id == id)
			return &m->assign[0].jobs[i];
	return NULL;
}

/* Welcome, assign for hello; assign for each beat; a push when job 100 changes. */
static void test_session(void **state)
{
	hm_aw_msg_t m, r;
	hm_coord_job_view_t v;
	const hm_aw_job_assign_t *e;
	uint32_t sender;
	int fd;

	NEED_SERVER();
	fd = dial();
	hello(&m, "n1", 1);
	send_msg(fd, &m);
	hm_aw_msg_free(&m);
	assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.op, HM_AW_WELCOME);
	assert_true(r.ok);
	assert_int_equal(r.re, 1);
	assert_int_equal(r.heartbeat_ms, 1000);
	assert_int_equal(r.valid_ms, 3000);
	assert_int_equal(sender, 0);
	hm_aw_msg_free(&r);
	assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.op, HM_AW_ASSIGN);
	assert_int_equal(r.re, 1);
	assert_string_equal(r.assign[0].node, "n1");
	assert_non_null(e = find_job(&r, 100));
	assert_int_equal(e->uid, OWNER);
	assert_true(e->scheduled);
	assert_int_equal(e->cur.period_us, 400000);
	hm_aw_msg_free(&r);

	/* A beat: the job's applied epoch and steps reach the engine. */
	memset(&m, 0, sizeof(m));
	m.op = HM_AW_BEAT;
	m.seq = 2;
	assert_int_equal(hm_aw_alloc_nodes(&m, 1, NULL), HM_OK);
	snprintf(m.nodes[0].node, sizeof(m.nodes[0].node), "n1");
	m.nodes[0].njobs = 1;
	m.nodes[0].jobs[0] =
	    (hm_aw_job_state_t){.job_id = 100, .steps = 1, .ranks = 2, .applied_epoch = 1};
	send_msg(fd, &m);
	assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.op, HM_AW_ASSIGN);
	assert_int_equal(r.re, 2);
	hm_aw_msg_free(&r);
	assert_int_equal(hm_coord_job(coord, 100, &v), HM_OK);
	assert_int_equal(v.applied_epoch, 1);
	assert_int_equal(v.steps, 1);

	/* A decision that changes job 100 is pushed (re 0) with its switch time. */
	shift_ms = 100;
	{
		hm_coord_job_info_t j = {
		    .job_id = 103, .uid = 1, .nodes = "n8", .mode = "auto", .profile = "resnet50"};
		hm_err_t err = {0};

		assert_int_equal(hm_coord_job_upsert(coord, &j, &err), HM_OK); /* an arrival */
	}
	decide_now();
	assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.op, HM_AW_ASSIGN);
	assert_int_equal(r.re, 0);
	assert_non_null(e = find_job(&r, 100));
	assert_true(e->has_next);
	assert_int_equal(e->next.shift_us, 100000);
	assert_true(e->next_effective_us >= hm_clock_us(CLOCK_REALTIME) + 1000000);
	hm_aw_msg_free(&r);

	/* The same seq again (a replay, or a reordered frame): error, then closed. */
	send_msg(fd, &m);
	hm_aw_msg_free(&m);
	assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.op, HM_AW_ERROR);
	assert_string_equal(r.code, "proto");
	assert_non_null(strstr(r.error, "seq 2"));
	hm_aw_msg_free(&r);
	assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_ERR_IO);
	close(fd);
	/* The node is known lost once its only connection closed. */
	for (int i = 0; i < 50; i++) {
		hm_coord_node_view_t *nv = NULL;
		int n = 0;
		bool lost;

		assert_int_equal(hm_coord_nodes(coord, &nv, &n), HM_OK);
		lost = strcmp(nv[0].state, "lost") == 0;
		free(nv);
		if (lost)
			return;
		usleep(20000);
	}
	fail_msg("node n1 not marked lost after its connection closed");
}

/* Hello on node, then its welcome; returns the assign that follows. */
/* Hello on node (an agent that solves rack rounds, or one from before them). */
static int agent_up_as(const char *node, bool rack_solver, hm_aw_msg_t *assign)
{
	hm_aw_msg_t m, r;
	uint32_t sender;
	int fd = dial();

	hello(&m, node, 1);
	m.rack_solver = rack_solver;
	send_msg(fd, &m);
	hm_aw_msg_free(&m);
	assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.op, HM_AW_WELCOME);
	hm_aw_msg_free(&r);
	assert_int_equal(recv_msg(fd, 3000, assign, &sender), HM_OK);
	assert_int_equal(assign->op, HM_AW_ASSIGN);
	assert_true(assign->has_rack);
	return fd;
}

static int agent_up(const char *node, hm_aw_msg_t *assign)
{
	return agent_up_as(node, true, assign);
}

static void assert_rack(const hm_aw_msg_t *m, const char *leader, const char *role, long term)
{
	assert_string_equal(m->rack.rack, "rack2");
	assert_string_equal(m->rack.leader, leader);
	assert_string_equal(m->rack.role, role);
	assert_int_equal(m->rack.term, term);
}

static void beat_on(int fd, const char *node, int64_t seq)
{
	hm_aw_msg_t m;

	memset(&m, 0, sizeof(m));
	m.op = HM_AW_BEAT;
	m.seq = seq;
	assert_int_equal(hm_aw_alloc_nodes(&m, 1, NULL), HM_OK);
	snprintf(m.nodes[0].node, sizeof(m.nodes[0].node), "%s", node);
	send_msg(fd, &m);
	hm_aw_msg_free(&m);
}

/* Rack members in every assign: no leader while the rack settles (AgentValidity),
   then the lowest-named agent leads and is pushed its role; its connection
   closes: the next agent is pushed; the old leader returns as a member, nobody
   is pushed. */
static void test_leader_push(void **state)
{
	hm_aw_msg_t r;
	uint32_t sender;
	int fd6, fd5;

	NEED_SERVER();
	fd6 = agent_up("n6", &r);
	assert_rack(&r, "", "member", 0);
	hm_aw_msg_free(&r);
	fd5 = agent_up("n5", &r);
	assert_rack(&r, "", "member", 0);
	hm_aw_msg_free(&r);
	usleep(1500 * 1000); /* both beat: healthy, the rack still settling */
	beat_on(fd5, "n5", 2);
	assert_int_equal(recv_msg(fd5, 3000, &r, &sender), HM_OK);
	assert_rack(&r, "", "member", 0);
	hm_aw_msg_free(&r);
	beat_on(fd6, "n6", 2);
	assert_int_equal(recv_msg(fd6, 3000, &r, &sender), HM_OK);
	hm_aw_msg_free(&r);
	usleep(1600 * 1000); /* n6 up for AgentValidity (3 s): its beat elects */
	beat_on(fd6, "n6", 3);
	assert_int_equal(recv_msg(fd6, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.re, 3);
	assert_rack(&r, "n5", "member", 1);
	hm_aw_msg_free(&r);
	assert_int_equal(recv_msg(fd5, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.re, 0);
	assert_rack(&r, "n5", "leader", 1);
	hm_aw_msg_free(&r);
	close(fd5);
	assert_int_equal(recv_msg(fd6, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.op, HM_AW_ASSIGN);
	assert_int_equal(r.re, 0);
	assert_rack(&r, "n6", "leader", 2);
	hm_aw_msg_free(&r);
	fd5 = agent_up("n5", &r);
	assert_rack(&r, "n6", "member", 2);
	hm_aw_msg_free(&r);
	assert_int_equal(recv_msg(fd6, 300, &r, &sender), HM_ERR_TIMEOUT);
	hm_aw_msg_free(&r);
	close(fd6);
	assert_int_equal(recv_msg(fd5, 3000, &r, &sender), HM_OK);
	assert_rack(&r, "n5", "leader", 3);
	hm_aw_msg_free(&r);
	close(fd5);
}

/* ---- rack rounds: a scripted policy sends rack2 one request per decision ---- */

static const hm_rack_transport_t *rack_tr; /* the coordinator's, given at create */
static hm_rack_rep_t rack_rep;             /* what the last exchange returned */
static int64_t rack_ms;                    /* how long it took */

static hm_rc_t rack_create(const hm_policy_cfg_t *cfg, void **st, hm_err_t *err)
{
	(void)err;
	*st = NULL;
	rack_tr = cfg->racks;
	return HM_OK;
}

static hm_rc_t rack_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	hm_rack_req_t q;
	int h = hm_topo_host_index(ctx->topo, "n7");
	int64_t t0 = hm_mono_ms();
	hm_rc_t rc;

	(void)st;
	memset(&q, 0, sizeof(q));
	if ((rc = hm_rack_req_alloc(&q, 2, 2, err)) != HM_OK)
		return rc;
	q.rack = ctx->topo->hosts[h].rack;
	q.round = (unsigned long)t0;
	q.shift_grid = 24;
	q.hold_min_gain = 0.5;
	for (int i = 0; i < 2; i++) /* two jobs on one link, both demands full */
		q.jobs[i] = (hm_rack_job_t){.idx = i,
					    .burst_s = 0.1,
					    .T_s = 0.4 + 0.1 * i,
					    .sd_s = 0.004,
					    .R_s = 0.41 + 0.1 * i,
					    .partnered = true,
					    .nlinks = 1,
					    .links = &q.link_pool[i],
					    .demand = &q.dbl_pool[i]};
	q.link_pool[0] = q.link_pool[1] = 3;
	q.dbl_pool[0] = q.dbl_pool[1] = 1.0;
	hm_rack_rep_free(&rack_rep);
	rc = rack_tr->exchange(rack_tr->arg, &q, &rack_rep, 1, err);
	rack_ms = hm_mono_ms() - t0;
	hm_rack_req_free(&q);
	return rc;
}

static const hm_policy_ops_t rack_policy = {
    .name = "racks", .create = rack_create, .decide = rack_decide, .uses_epochs = true};

static void *decide_thread(void *arg)
{
	static uint32_t next_job = 200;
	hm_coord_job_info_t j = {
	    .job_id = next_job++, .uid = 1, .nodes = "n8", .mode = "auto", .profile = "resnet50"};
	hm_err_t err = {0};

	(void)arg;
	assert_int_equal(hm_coord_job_upsert(coord, &j, &err), HM_OK); /* an arrival */
	decide_now();
	return NULL;
}

/* The next message of op on fd (assign pushes before it are skipped). */
static void recv_op(int fd, hm_aw_op_t op, hm_aw_msg_t *m)
{
	uint32_t sender;

	for (int i = 0; i < 10; i++) {
		assert_int_equal(recv_msg(fd, 3000, m, &sender), HM_OK);
		if (m->op == op)
			return;
		hm_aw_msg_free(m);
	}
	fail_msg("no %s", hm_aw_op_name(op));
}

static void rack2_view(hm_coord_rack_view_t *out)
{
	hm_coord_rack_view_t *v = NULL;
	int n = 0;

	assert_int_equal(hm_coord_racks(coord, &v, &n), HM_OK);
	assert_int_equal(n, 2);
	*out = v[1];
	free(v);
}

/*
 * rack2's leader gets the round's request, solves it as an agent does and
 * answers: the policy gets the decisions, the rack view counts a leader's
 * solve. Silent, the round ends after RackTimeout (400 ms) without them, and
 * the late reply is dropped; the leader's connection lives on.
 */
static void test_rack_round(void **state)
{
	hm_aw_msg_t r, res;
	hm_coord_rack_view_t v;
	hm_err_t err = {0};
	pthread_t t;
	int fd;

	NEED_SERVER();
	assert_int_equal(hm_coord_set_policy_ops(coord, &rack_policy, &err), HM_OK);
	fd = agent_up("n7", &r);
	hm_aw_msg_free(&r);
	usleep(3100 * 1000); /* up for AgentValidity: its beat elects it */
	beat_on(fd, "n7", 2);
	recv_op(fd, HM_AW_ASSIGN, &r);
	assert_rack(&r, "n7", "leader", 4);
	hm_aw_msg_free(&r);

	assert_int_equal(pthread_create(&t, NULL, decide_thread, NULL), 0);
	recv_op(fd, HM_AW_RACK_ROUND, &r);
	assert_int_equal(r.round.njobs, 2);
	memset(&res, 0, sizeof(res));
	res.op = HM_AW_RACK_RESULT;
	res.seq = 3;
	res.re = r.seq;
	assert_int_equal(hm_tier_rack_solve(&r.round, &res.result, &err), HM_OK);
	send_msg(fd, &res);
	pthread_join(t, NULL);
	assert_true(rack_rep.answered && rack_rep.by_leader);
	assert_int_equal(rack_rep.ndec, 2);
	assert_int_equal(rack_rep.dec[1].idx, 1);
	assert_true(rack_ms < 400);
	rack2_view(&v);
	assert_string_equal(v.solver, "leader");
	assert_int_equal(v.leader_solves, 1);
	assert_int_equal(v.silent, 0);
	hm_aw_msg_free(&r);

	/* Silent: the round ends at RackTimeout; the late reply is dropped. */
	assert_int_equal(pthread_create(&t, NULL, decide_thread, NULL), 0);
	recv_op(fd, HM_AW_RACK_ROUND, &r);
	pthread_join(t, NULL);
	assert_false(rack_rep.answered);
	assert_true(rack_ms >= 390 && rack_ms < 2000);
	rack2_view(&v);
	assert_int_equal(v.silent, 1);
	assert_int_equal(v.leader_solves, 1);
	res.seq = 4;
	res.re = r.seq;
	res.result.round = r.round.round;
	send_msg(fd, &res);
	hm_aw_msg_free(&r);
	beat_on(fd, "n7", 5);
	recv_op(fd, HM_AW_ASSIGN, &r);
	assert_int_equal(r.re, 5);
	hm_aw_msg_free(&r);
	hm_aw_msg_free(&res);
	close(fd);

	/* A leader whose agent predates rack rounds (no rack_solver in its hello):
	   never sent one, its rack is solved here. */
	fd = agent_up_as("n8", false, &r);
	hm_aw_msg_free(&r);
	usleep(3100 * 1000);
	beat_on(fd, "n8", 2);
	recv_op(fd, HM_AW_ASSIGN, &r);
	assert_rack(&r, "n8", "leader", 5);
	hm_aw_msg_free(&r);
	decide_thread(NULL);
	assert_true(rack_rep.answered);
	assert_false(rack_rep.by_leader);
	assert_int_equal(rack_rep.ndec, 2);
	rack2_view(&v);
	assert_string_equal(v.solver, "coordinator");
	assert_int_equal(v.coord_solves, 1);
	close(fd);
	assert_int_equal(hm_coord_set_policy_ops(coord, &shift_policy, &err), HM_OK);
}

static void test_unknown_node(void **state)
{
	hm_aw_msg_t m, r;
	uint32_t sender;
	int fd;

	NEED_SERVER();
	fd = dial();
	hello(&m, "n99", 1);
	send_msg(fd, &m);
	hm_aw_msg_free(&m);
	assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_OK);
	assert_int_equal(r.op, HM_AW_WELCOME);
	assert_false(r.ok);
	assert_string_equal(r.code, "node");
	assert_non_null(strstr(r.error, "n99"));
	hm_aw_msg_free(&r);
	assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_ERR_IO);
	close(fd);
}

/*
 * A frame bound elsewhere is refused before it is read: sealed for another
 * coordinator (another port), for another connection (another source port),
 * in the other direction, or not bound at all (issue 28). Each costs its own
 * connection only: an error "auth" and the close; the node never says hello.
 */
static void test_bound_elsewhere(void **state)
{
	char self[HM_PROTO_ADDR_MAX], peer[HM_PROTO_ADDR_MAX], other[HM_PROTO_ADDR_MAX],
	    tag[HM_PROTO_BIND_MAX];
	hm_coord_node_view_t *nv = NULL;
	hm_err_t err = {0};
	hm_aw_msg_t m, r;
	uint32_t sender;
	int nn = 0;

	NEED_SERVER();
	for (int k = 0; k < 4; k++) {
		int fd = dial();

		assert_int_equal(hm_proto_sock_addr(fd, false, self, sizeof(self), &err), HM_OK);
		assert_int_equal(hm_proto_sock_addr(fd, true, peer, sizeof(peer), &err), HM_OK);
		if (k == 0) /* the same host, another coordinator's port */
			snprintf(other, sizeof(other), "127.0.0.1:%d", port + 1);
		else /* this coordinator, another connection of the same host */
			snprintf(other, sizeof(other), "127.0.0.1:%d", port);
		switch (k) {
		case 0:
			assert_int_equal(hm_proto_bind_tag(tag, sizeof(tag), "agent>coordinator",
							   other, self, &err),
					 HM_OK);
			break;
		case 1:
			assert_int_equal(hm_proto_bind_tag(tag, sizeof(tag), "agent>coordinator",
							   peer, "127.0.0.1:1", &err),
					 HM_OK);
			break;
		case 2:
			assert_int_equal(hm_proto_bind_tag(tag, sizeof(tag), "coordinator>agent",
							   peer, self, &err),
					 HM_OK);
			break;
		}
		hello(&m, "n5", 1);
		send_bound(fd, &m, k == 3 ? NULL : tag);
		hm_aw_msg_free(&m);
		assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_OK);
		assert_int_equal(r.op, HM_AW_ERROR);
		assert_string_equal(r.code, "auth");
		assert_non_null(strstr(r.error, k == 3 ? "not bound" : "bound to"));
		hm_aw_msg_free(&r);
		assert_int_equal(recv_msg(fd, 3000, &r, &sender), HM_ERR_IO);
		close(fd);
	}
	assert_int_equal(hm_coord_nodes(coord, &nv, &nn), HM_OK);
	for (int i = 0; i < nn; i++)
		if (strcmp(nv[i].node, "n5") == 0)
			assert_string_not_equal(nv[i].state, "up");
	free(nv);
}

/* An agent must be root or SlurmUser: a hello sealed by nobody is refused. */
static void test_foreign_agent(void **state)
{
	pid_t pid;
	int st = 0;

	NEED_SERVER();
	pid = fork();
	if (pid == 0) {
		hm_aw_msg_t m, r;
		uint32_t sender;
		int fd;

		if (setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(3);
		fd = dial();
		hello(&m, "n2", 1);
		send_msg(fd, &m);
		if (recv_msg(fd, 3000, &r, &sender) != HM_OK)
			_exit(4);
		_exit(r.op == HM_AW_ERROR && strcmp(r.code, "auth") == 0 ? 0 : 5);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * A silent client and a register for a job not known yet (parked for
 * ConnectionTimeout / 2 = 1 s) hold nobody: a status request is answered
 * meanwhile, and the parked register is answered when its wait ends.
 */
static void test_nobody_waits(void **state)
{
	char nonce[HM_ASSIGN_NONCE_LEN + 1];
	char *req = hm_assign_request(999, 0, "n3", nonce), *cred = NULL, *reply = NULL;
	char *frame = NULL, *json = NULL;
	struct pollfd p;
	hm_err_t err = {0};
	uint32_t uid, gid;
	size_t len;
	int silent = dial(), reg = dial();
	json_object *o;

	NEED_SERVER();
	assert_int_equal(hm_proto_seal(req, HM_PROTO_UID_ANY, &cred, &err), HM_OK);
	assert_int_equal(hm_proto_send(reg, cred, strlen(cred), hm_mono_ms() + 2000, &err), HM_OK);
	assert_int_equal(
	    hm_client_call("127.0.0.1", port, "{\"op\":\"status\"}", 3000, &reply, &err), HM_OK);
	assert_non_null(strstr(reply, "\"ok\":true"));
	/* The register is still parked: nothing to read on its connection yet. */
	p = (struct pollfd){.fd = reg, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 0);
	/* ... and answered once its wait is over: the job is not known. */
	assert_int_equal(hm_proto_recv(reg, 65536, hm_mono_ms() + 3000, &frame, &len, &err), HM_OK);
	assert_int_equal(hm_proto_unseal(frame, &json, &uid, &gid, &err), HM_OK);
	o = json_tokener_parse(json);
	assert_false(hm_json_bool(o, "ok"));
	assert_string_equal(hm_json_str(o, "code"), "notfound");
	assert_string_equal(hm_json_str(o, "nonce"), nonce); /* bound to its request */
	json_object_put(o);
	free(req);
	free(cred);
	free(reply);
	free(frame);
	free(json);
	close(reg);
	close(silent);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_session),         cmocka_unit_test(test_leader_push),
	    cmocka_unit_test(test_unknown_node),    cmocka_unit_test(test_foreign_agent),
	    cmocka_unit_test(test_bound_elsewhere), cmocka_unit_test(test_nobody_waits),
	    cmocka_unit_test(test_rack_round),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
