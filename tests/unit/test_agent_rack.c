/*
 * The rack channel's pure parts (agent_rack.h): a cut round's decisions as a
 * rack_assign (held, free, cross-rack), through the wire and back, and how a
 * node merges them into the jobs it lists (contract C: a change becomes the
 * next schedule at the push's switch time; class kept; unknown jobs free).
 * The channel itself runs in tests/slurm/leaders.sh (slurmctld stopped); its
 * admission (issue 28 item 3: bound to one address, only the rack's agents'
 * addresses, per-address caps, a short hello deadline, refusals logged a few
 * times a minute) runs here on loopback addresses.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_jobs.h"
#include "agent_rack.h"
#include "munge_fixture.h"

static hm_logger_t g_log = {.sink = NULL, .level = -1, .prefix = "test: "};

/* Jobs 11 (local, held), 12 (local, free), 13 (cross-rack), 15 (no job id). */
static void cut_round(hm_rack_req_t *q, hm_rack_rep_t *rep)
{
	static const struct {
		int idx;
		long job_id;
		bool cross;
	} jobs[] = {{2, 11, false}, {5, 12, false}, {7, 13, true}, {9, 0, false}};
	hm_err_t err = {0};

	memset(rep, 0, sizeof(*rep));
	assert_int_equal(hm_rack_req_alloc(q, 4, 4, &err), HM_OK);
	q->guard_s = 0.002;
	for (int i = 0; i < 4; i++) {
		q->jobs[i].idx = jobs[i].idx;
		q->jobs[i].job_id = jobs[i].job_id;
		q->jobs[i].cross = jobs[i].cross;
		q->jobs[i].T_s = 0.2;
		q->jobs[i].nlinks = 1;
		q->jobs[i].links = q->link_pool + i;
		q->jobs[i].demand = q->dbl_pool + i;
	}
	rep->ndec = 3;
	rep->dec = calloc(3, sizeof(*rep->dec));
	assert_non_null(rep->dec);
	/* s beyond P: the wire carries it modulo P. */
	rep->dec[0] =
	    (hm_rack_dec_t){.idx = 2, .hold = true, .P_s = 0.2, .s_s = 0.25, .guard_s = 0};
	rep->dec[1] = (hm_rack_dec_t){.idx = 5, .hold = false};
	rep->dec[2] = (hm_rack_dec_t){.idx = 9, .hold = true, .P_s = 0.4, .s_s = 0.1};
}

static const hm_aw_job_assign_t *entry(const hm_aw_msg_t *m, long job_id)
{
	for (int c = 0; c < m->nassign; c++)
		for (int k = 0; k < m->assign[c].njobs; k++)
			if (m->assign[c].jobs[k].job_id == job_id)
				return &m->assign[c].jobs[k];
	return NULL;
}

static void test_push_build(void **state)
{
	hm_rack_req_t q;
	hm_rack_rep_t rep;
	hm_aw_msg_t push, *back = calloc(1, sizeof(*back));
	hm_aw_rack_t rack = {.rack = "rack1", .leader = "n1", .role = "leader", .term = 4};
	const hm_aw_job_assign_t *e;
	hm_err_t err = {0};
	char *json = NULL;

	(void)state;
	cut_round(&q, &rep);
	assert_int_equal(
	    agent_rack_push_build(&q, &rep, "n2", &rack, 1700000000000000, &push, &err), HM_OK);
	assert_int_equal(push.op, HM_AW_RACK_ASSIGN);
	assert_int_equal(push.nassign, 1);
	assert_int_equal(push.assign[0].njobs, 3); /* the job without an id is left out */
	assert_string_equal(push.rack.leader, "n2");
	assert_string_equal(push.rack.role, "leader");
	e = entry(&push, 11);
	assert_non_null(e);
	assert_true(e->scheduled);
	assert_int_equal(e->cur.period_us, 200000);
	assert_int_equal(e->cur.shift_us, 50000);
	assert_int_equal(e->cur.guard_us,
			 2000); /* the request's guard when the decision has none */
	e = entry(&push, 12);
	assert_true(e->scheduled);
	assert_int_equal(e->cur.period_us, 0);
	e = entry(&push, 13);
	assert_false(e->scheduled);
	assert_non_null(strstr(e->reason, "cross-rack job runs free"));
	/* Through the wire: the same entries. */
	push.seq = 3;
	assert_int_equal(hm_aw_encode(&push, &json, &err), HM_OK);
	assert_non_null(strstr(json, "\"op\":\"rack_assign\""));
	assert_int_equal(hm_aw_decode(json, strlen(json), back, &err), HM_OK);
	assert_int_equal(back->effective_us, 1700000000000000);
	assert_int_equal(back->nassign, 1);
	assert_int_equal(back->assign[0].njobs, 3);
	for (int k = 0; k < 3; k++)
		assert_memory_equal(&back->assign[0].jobs[k], &push.assign[0].jobs[k],
				    sizeof(hm_aw_job_assign_t));
	assert_memory_equal(&back->rack, &push.rack, sizeof(push.rack));
	assert_false(back->reconnect);
	free(json);
	hm_aw_msg_free(back);
	/* The end of a cut: no decisions, "connect now". */
	push.reconnect = true;
	assert_int_equal(hm_aw_encode(&push, &json, &err), HM_OK);
	assert_int_equal(hm_aw_decode(json, strlen(json), back, &err), HM_OK);
	assert_true(back->reconnect);
	free(json);
	hm_aw_msg_free(back);
	free(back);
	hm_aw_msg_free(&push);
	hm_rack_req_free(&q);
	hm_rack_rep_free(&rep);
}

static void test_push_refusals(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
	    {"{\"v\":1,\"op\":\"rack_assign\",\"seq\":2,\"nodes\":[],\"rack\":\"rack1\","
	     "\"leader\":\"n1\",\"role\":\"leader\",\"term\":1}",
	     "rack_assign.effective_us"},
	    {"{\"v\":1,\"op\":\"rack_assign\",\"seq\":2,\"effective_us\":5,\"nodes\":[],"
	     "\"rack\":\"rack1\",\"leader\":\"n1\",\"role\":\"member\",\"term\":1}",
	     "rack_assign.role: 'member'"},
	    {"{\"v\":1,\"op\":\"rack_assign\",\"seq\":2,\"effective_us\":5,\"nodes\":[]}",
	     "rack_assign.role: 'absent'"},
	    {"{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[],\"rack\":\"r\","
	     "\"leader\":\"n1\",\"role\":\"member\",\"term\":1,\"leader_addr\":\"1.2.3.4:5 6\"}",
	     "leader_addr"},
	    {"{\"v\":1,\"op\":\"agent_hello\",\"seq\":1,\"node\":\"n1\",\"agent_version\":\"1\","
	     "\"topo\":null,\"jobs\":[],\"rack_port\":70000}",
	     "rack_port: 70000 is not in"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hm_aw_msg_t m;
		hm_err_t err = {0};

		if (hm_aw_decode(bad[i].text, strlen(bad[i].text), &m, &err) == HM_OK)
			fail_msg("accepted #%zu: %s", i, bad[i].text);
		if (err.rc != HM_ERR_PROTO || !strstr(err.msg, bad[i].why))
			fail_msg("#%zu: '%s' lacks '%s'", i, err.msg, bad[i].why);
		hm_aw_msg_free(&m);
	}
}

static void sched(hm_aw_job_assign_t *e, long job_id, int64_t period_us, int prio, long epoch)
{
	memset(e, 0, sizeof(*e));
	e->job_id = job_id;
	e->uid = 1000;
	e->scheduled = true;
	snprintf(e->cur.policy, sizeof(e->cur.policy), "harmonics");
	e->cur.period_us = period_us;
	e->cur.prio = prio;
	e->cur.epoch = epoch;
}

static void test_merge(void **state)
{
	agent_jobs_t js;
	hm_aw_node_assign_t *na = calloc(1, sizeof(*na)), *out = calloc(1, sizeof(*out));
	hm_rack_req_t q;
	hm_rack_rep_t rep;
	hm_aw_msg_t push;
	hm_aw_rack_t rack = {.rack = "rack1", .role = "leader", .term = 1};
	const int64_t eff_us = 1700000000500000;
	hm_err_t err = {0};

	(void)state;
	memset(&js, 0, sizeof(js));
	/* What the coordinator had decided for this node's jobs before the cut. */
	snprintf(na->node, sizeof(na->node), "n3");
	sched(&na->jobs[0], 11, 100000, 3, 7); /* will change: next at the switch time */
	na->jobs[1].job_id = 12;               /* unscheduled: scheduled at once */
	na->jobs[1].uid = 1000;
	snprintf(na->jobs[1].reason, sizeof(na->jobs[1].reason), "awaiting decision");
	sched(&na->jobs[2], 13, 300000, 1, 7); /* cross-rack: free */
	sched(&na->jobs[3], 14, 300000, 2, 7); /* not in the leader's request: free */
	na->njobs = 4;
	agent_jobs_apply(&js, na, 0, &g_log);
	cut_round(&q, &rep);
	assert_int_equal(agent_rack_push_build(&q, &rep, "n2", &rack, eff_us, &push, &err), HM_OK);
	agent_rack_merge(&js, &push, "n3", out);
	assert_string_equal(out->node, "n3");
	assert_int_equal(out->njobs, 4);
	for (int k = 0; k < 4; k++)
		assert_int_equal(out->jobs[k].uid, 1000); /* the job's user stays */
	/* 11: in force until the switch, then the leader's slot with its class kept. */
	assert_true(out->jobs[0].scheduled);
	assert_int_equal(out->jobs[0].cur.period_us, 100000);
	assert_true(out->jobs[0].has_next);
	assert_int_equal(out->jobs[0].next_effective_us, eff_us);
	assert_int_equal(out->jobs[0].next.period_us, 200000);
	assert_int_equal(out->jobs[0].next.shift_us, 50000);
	assert_int_equal(out->jobs[0].next.prio, 3);
	assert_int_equal(out->jobs[0].next.epoch, 8);
	/* 12: from unscheduled at once, free running. */
	assert_true(out->jobs[1].scheduled);
	assert_false(out->jobs[1].has_next);
	assert_int_equal(out->jobs[1].cur.period_us, 0);
	assert_string_equal(out->jobs[1].reason, "");
	/* 13 and 14 run free, each with its reason. */
	assert_false(out->jobs[2].scheduled);
	assert_non_null(strstr(out->jobs[2].reason, "cross-rack job runs free"));
	assert_false(out->jobs[3].scheduled);
	assert_non_null(strstr(out->jobs[3].reason, "not among its leader's jobs"));
	/* The same push again (every heartbeat) changes nothing. */
	agent_jobs_apply(&js, out, 0, &g_log);
	memcpy(na, out, sizeof(*na));
	agent_rack_merge(&js, &push, "n3", out);
	assert_memory_equal(out, na, sizeof(*na));
	agent_jobs_free(&js);
	hm_aw_msg_free(&push);
	hm_rack_req_free(&q);
	hm_rack_rep_free(&rep);
	free(na);
	free(out);
}

static uint32_t ip4(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

/* A leader's role with the coordinator's list of its rack's agents. */
static void leader_role(agent_role_t *role, const char *const *members, int n)
{
	memset(role, 0, sizeof(*role));
	role->known = true;
	snprintf(role->last.rack, sizeof(role->last.rack), "rack1");
	snprintf(role->last.leader, sizeof(role->last.leader), "n1");
	snprintf(role->last.role, sizeof(role->last.role), "leader");
	role->last.has_members = members != NULL;
	for (int i = 0; i < n; i++)
		role->last.member_ip[role->last.nmembers++] = ip4(members[i]);
}

/* Who may take a slot: a leader only, the listed addresses only, one more than
   listed per address; without a list, AGENT_RACK_PER_ADDR_MAX per address. */
static void test_admit(void **state)
{
	static const char *const members[] = {"10.0.0.2", "10.0.0.3", "10.0.0.3"};
	agent_rack_t r;
	agent_role_t role;
	char why[128];

	(void)state;
	agent_rack_init(&r, "n1", 65536, &g_log);
	leader_role(&role, members, 3);
	assert_null(agent_rack_admit(&r, &role, ip4("10.0.0.2"), why, sizeof(why)));
	assert_non_null(agent_rack_admit(&r, &role, ip4("10.0.0.9"), why, sizeof(why)));
	assert_non_null(strstr(why, "not the address of an agent of rack rack1"));
	/* Two open from 10.0.0.2 (one node): full; 10.0.0.3 (two nodes) takes three. */
	for (int k = 0; k < 2; k++) {
		r.peers[k].fd = 100 + k; /* a slot in use; never touched */
		r.peer_ip[k] = ip4("10.0.0.2");
	}
	assert_non_null(agent_rack_admit(&r, &role, ip4("10.0.0.2"), why, sizeof(why)));
	assert_non_null(strstr(why, "2 connections from that address already (at most 2)"));
	assert_null(agent_rack_admit(&r, &role, ip4("10.0.0.3"), why, sizeof(why)));
	/* No list (an older coordinator): per address only. */
	leader_role(&role, NULL, 0);
	assert_null(agent_rack_admit(&r, &role, ip4("10.0.0.9"), why, sizeof(why)));
	for (int k = 0; k < AGENT_RACK_PER_ADDR_MAX; k++) {
		r.peers[k].fd = 100 + k;
		r.peer_ip[k] = ip4("10.0.0.9");
	}
	assert_non_null(agent_rack_admit(&r, &role, ip4("10.0.0.9"), why, sizeof(why)));
	/* A member takes nobody. */
	snprintf(role.last.role, sizeof(role.last.role), "member");
	assert_non_null(agent_rack_admit(&r, &role, ip4("10.0.0.2"), why, sizeof(why)));
	assert_non_null(strstr(why, "does not lead"));
	for (int k = 0; k < AGENT_RACK_PEERS_MAX; k++)
		r.peers[k].fd = -1;
	agent_rack_free(&r);
}

static int connect_from(const char *src, const char *dst, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = ip4(src)},
			   b = {.sin_family = AF_INET, .sin_addr.s_addr = ip4(dst)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	b.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&b, sizeof(b)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Run the channel's poll once (up to 500 ms for something to happen). */
static void pump(agent_rack_t *r, const agent_rack_ctx_t *x, int64_t now_ms)
{
	struct pollfd pfd[2 + AGENT_RACK_PEERS_MAX];
	int n = agent_rack_pollfds(r, pfd, 2 + AGENT_RACK_PEERS_MAX);

	assert_true(poll(pfd, (nfds_t)n, 500) >= 0);
	agent_rack_events(r, x, pfd, n, now_ms);
}

static bool closed_by_peer(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	return poll(&p, 1, 500) == 1 && read(fd, &c, 1) <= 0;
}

static int lines;

static void count_sink(int level, const char *msg)
{
	(void)level;
	(void)msg;
	lines++;
}

/* r follows a coordinator connection whose local end is src (the channel binds
   that address): a real listener on 127.0.7.1 and a connection from src. */
static void follow_coordinator_from(agent_rack_t *r, const char *src)
{
	int lfd = socket(AF_INET, SOCK_STREAM, 0), c;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = ip4("127.0.7.1")};
	socklen_t sl = sizeof(sa);
	hm_err_t err = {0};

	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	c = connect_from(src, "127.0.7.1", ntohs(sa.sin_port));
	assert_true(c >= 0);
	assert_int_equal(agent_rack_follow(r, c, 0, &err), HM_OK);
	close(c);
	close(lfd);
}

/* A real listener: bound to one address; strangers are closed before a slot;
   a member that does not say hello goes after AGENT_RACK_HELLO_MS; refusals are
   logged REFUSE_BURST times, not once each. */
static void test_channel_admission(void **state)
{
	static const char *const members[] = {"127.0.7.2"};
	hm_logger_t lg = {.sink = count_sink, .level = HM_LOG_INFO, .prefix = "test: "};
	agent_rack_t r;
	agent_role_t role;
	agent_rack_ctx_t x = {.role = &role, .heartbeat_ms = 1000, .conn_timeout_ms = 1000};
	int fd, m1, m2, m3, held = 0;

	(void)state;
	agent_rack_init(&r, "n1", 65536, &lg);
	leader_role(&role, members, 1);
	/* Bound to the coordinator connection's local address, not every interface. */
	follow_coordinator_from(&r, "127.0.7.9");
	assert_int_equal(r.listen_ip, ip4("127.0.7.9"));
	assert_int_equal(connect_from("127.0.7.2", "127.0.0.1", r.port), -1);
	assert_int_equal(errno, ECONNREFUSED);
	/* A stranger: closed at once, no slot, a line. */
	fd = connect_from("127.0.7.3", "127.0.7.9", r.port);
	pump(&r, &x, 1000);
	for (int k = 0; k < AGENT_RACK_PEERS_MAX; k++)
		held += r.peers[k].fd >= 0;
	assert_int_equal(held, 0);
	assert_true(closed_by_peer(fd));
	close(fd);
	assert_int_equal(lines, 1);
	/* The rack's agent: a slot, two at most from its address (one listed). */
	m1 = connect_from("127.0.7.2", "127.0.7.9", r.port);
	m2 = connect_from("127.0.7.2", "127.0.7.9", r.port);
	pump(&r, &x, 1000);
	m3 = connect_from("127.0.7.2", "127.0.7.9", r.port);
	pump(&r, &x, 1000);
	held = 0;
	for (int k = 0; k < AGENT_RACK_PEERS_MAX; k++)
		held += r.peers[k].fd >= 0;
	assert_int_equal(held, 2);
	assert_true(closed_by_peer(m3));
	close(m3);
	/* Silent: their slots go once the hello deadline passed. */
	agent_rack_tick(&r, &x, 1000 + AGENT_RACK_HELLO_MS - 1);
	assert_true(r.peers[0].fd >= 0 || r.peers[1].fd >= 0);
	agent_rack_tick(&r, &x, 1000 + AGENT_RACK_HELLO_MS);
	for (int k = 0; k < AGENT_RACK_PEERS_MAX; k++)
		assert_int_equal(r.peers[k].fd, -1);
	close(m1);
	close(m2);
	/* Twenty strangers within the minute: a few lines, every one refused. */
	lines = 0;
	for (int i = 0; i < 20; i++) {
		fd = connect_from("127.0.7.4", "127.0.7.9", r.port);
		pump(&r, &x, 2000 + i);
		close(fd);
	}
	assert_true(lines <= 5);
	assert_int_equal(r.refused, 22);
	agent_rack_free(&r);
}

/* A member's hello on fd, bound to tag (NULL: to fd's connection, member>leader). */
static void member_hello(int fd, const char *tag)
{
	hm_aw_msg_t m = {.op = HM_AW_HELLO, .seq = 1};
	char *json = NULL, *cred = NULL, own[HM_PROTO_BIND_MAX];
	hm_err_t err = {0};

	snprintf(m.node, sizeof(m.node), "n2");
	snprintf(m.agent_version, sizeof(m.agent_version), "test");
	if (!tag) {
		assert_int_equal(
		    hm_proto_conn_tag(fd, "member>leader", true, own, sizeof(own), &err), HM_OK);
		tag = own;
	}
	assert_int_equal(hm_aw_encode(&m, &json, &err), HM_OK);
	assert_int_equal(hm_proto_seal_bound(json, HM_PROTO_UID_ANY, tag, &cred, &err), HM_OK);
	assert_int_equal(hm_proto_send(fd, cred, strlen(cred), hm_proto_now_ms() + 1000, &err),
			 HM_OK);
	free(json);
	free(cred);
}

/*
 * The rack channel's frames are bound (issue 28): a member's hello sealed for
 * another leader (another port of the same address) or in the leader's own
 * direction is refused and its connection closed, no welcome; one bound to
 * this leader is welcomed with a frame bound "leader>member" to the member.
 */
static void test_channel_bound(void **state)
{
	static const char *const members[] = {"127.0.7.2"};
	hm_logger_t lg = {.sink = count_sink, .level = HM_LOG_INFO, .prefix = "test: "};
	uint32_t trusted[1] = {(uint32_t)getuid()};
	agent_rack_t r;
	agent_role_t role;
	agent_rack_ctx_t x = {.role = &role,
			      .heartbeat_ms = 1000,
			      .conn_timeout_ms = 1000,
			      .trusted = trusted,
			      .ntrusted = 1};
	char tag[HM_PROTO_BIND_MAX], self[HM_PROTO_ADDR_MAX], other[HM_PROTO_ADDR_MAX];
	hm_err_t err = {0};

	(void)state;
	if (!munge_up())
		skip();
	agent_rack_init(&r, "n1", 65536, &lg);
	leader_role(&role, members, 1);
	follow_coordinator_from(&r, "127.0.7.9");
	for (int k = 0; k < 3; k++) {
		int m = connect_from("127.0.7.2", "127.0.7.9", r.port);
		char *frame = NULL, *json = NULL;
		size_t len;
		uint32_t uid, gid;
		bool bound = false;

		assert_true(m >= 0);
		assert_int_equal(hm_proto_sock_addr(m, false, self, sizeof(self), &err), HM_OK);
		snprintf(other, sizeof(other), "127.0.7.9:%d", r.port + 1);
		if (k == 0) /* sealed for another leader */
			assert_int_equal(
			    hm_proto_bind_tag(tag, sizeof(tag), "member>leader", other, self, &err),
			    HM_OK);
		else if (k == 1) /* the leader's direction, replayed back at it */
			assert_int_equal(
			    hm_proto_conn_tag(m, "leader>member", true, tag, sizeof(tag), &err),
			    HM_OK);
		pump(&r, &x, 1000); /* accept */
		member_hello(m, k < 2 ? tag : NULL);
		pump(&r, &x, 1000); /* its hello */
		if (k < 2) {
			assert_true(closed_by_peer(m));
		} else {
			assert_int_equal(
			    hm_proto_recv(m, 65536, hm_proto_now_ms() + 1000, &frame, &len, &err),
			    HM_OK);
			assert_int_equal(hm_proto_unseal(frame, &json, &uid, &gid, &err), HM_OK);
			assert_int_equal(
			    hm_proto_conn_tag(m, "leader>member", false, tag, sizeof(tag), &err),
			    HM_OK);
			assert_int_equal(hm_proto_unbind(json, tag, &bound, &err), HM_OK);
			assert_true(bound);
			assert_non_null(strstr(json, "\"agent_welcome\""));
		}
		free(frame);
		free(json);
		close(m);
	}
	agent_rack_free(&r);
}

/* A leader's "members" through the wire and back; a bad address is refused. */
static void test_members_wire(void **state)
{
	hm_aw_msg_t m, d;
	hm_err_t err = {0};
	char *json = NULL, *bad;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.op = HM_AW_ASSIGN;
	m.seq = 3;
	m.has_rack = true;
	snprintf(m.rack.rack, sizeof(m.rack.rack), "rack1");
	snprintf(m.rack.leader, sizeof(m.rack.leader), "n1");
	snprintf(m.rack.role, sizeof(m.rack.role), "leader");
	m.rack.has_members = true;
	m.rack.member_ip[m.rack.nmembers++] = ip4("10.1.2.3");
	m.rack.member_ip[m.rack.nmembers++] = ip4("10.1.2.3");
	m.rack.member_ip[m.rack.nmembers++] = ip4("10.1.2.4");
	assert_int_equal(hm_aw_encode(&m, &json, &err), HM_OK);
	assert_non_null(strstr(json, "\"members\":[\"10.1.2.3\",\"10.1.2.3\",\"10.1.2.4\"]"));
	assert_int_equal(hm_aw_decode(json, strlen(json), &d, &err), HM_OK);
	assert_true(d.rack.has_members);
	assert_int_equal(d.rack.nmembers, 3);
	assert_memory_equal(d.rack.member_ip, m.rack.member_ip, 3 * sizeof(uint32_t));
	hm_aw_msg_free(&d);
	bad = strdup(json);
	memcpy(strstr(bad, "10.1.2.4"), "10.1.2.x", 8);
	assert_int_equal(hm_aw_decode(bad, strlen(bad), &d, &err), HM_ERR_PROTO);
	assert_non_null(strstr(err.msg, "members[2]: not an IPv4 address"));
	hm_aw_msg_free(&d);
	/* A coordinator that lists none: no list, per-address caps only. */
	m.rack.has_members = false;
	free(json);
	assert_int_equal(hm_aw_encode(&m, &json, &err), HM_OK);
	assert_null(strstr(json, "members"));
	assert_int_equal(hm_aw_decode(json, strlen(json), &d, &err), HM_OK);
	assert_false(d.rack.has_members);
	hm_aw_msg_free(&d);
	free(json);
	free(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_push_build),    cmocka_unit_test(test_push_refusals),
	    cmocka_unit_test(test_merge),         cmocka_unit_test(test_admit),
	    cmocka_unit_test(test_channel_bound), cmocka_unit_test(test_channel_admission),
	    cmocka_unit_test(test_members_wire),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
