/*
 * The agent's helpers: slurmd's command line (node name, -D) parsed as slurmd's
 * getopt does, node names, the reconnect back-off, and contract B's codec
 * (round trips of every message, the documented examples, strict refusals).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_conn.h"
#include "hm_agent_wire.h"

/* argv as /proc/self/cmdline holds it: each argument NUL-terminated. */
static size_t cmdline(char *buf, size_t len, const char *const *argv)
{
	size_t off = 0;

	for (; *argv; argv++) {
		size_t n = strlen(*argv) + 1;

		assert_true(off + n <= len);
		memcpy(buf + off, *argv, n);
		off += n;
	}
	return off;
}

static void test_slurmd_args(void **state)
{
	static const struct {
		const char *argv[8];
		const char *node;
		bool fg, slurmd;
	} cases[] = {
	    {{"/usr/sbin/slurmd", "-D", "-N", "n1", "-f", "/etc/slurm.conf"}, "n1", true, true},
	    {{"slurmd", "-Nn2", "-D"}, "n2", true, true},
	    {{"slurmd", "-DN", "n3"}, "n3", true, true},    /* clustered flags */
	    {{"slurmd", "-f", "-N", "-D"}, "", true, true}, /* -N is -f's argument */
	    {{"slurmd", "-Ln1.log", "-N", "x", "-N", "y"}, "y", false, true}, /* last wins */
	    {{"slurmd", "--conf", "-N z", "-N", "n4"}, "n4", false, true},    /* --conf takes one */
	    {{"slurmd", "--conf-s=-N", "-N", "n5", "-sD"}, "n5", true, true},
	    {{"slurmd", "-F", "n6", "-N", "n7"}, "n7", false, true}, /* -F's argument is optional */
	    {{"slurmd", "--", "-N", "n8"}, "", false, true},
	    {{"/usr/bin/harmonics-agent", "-N", "n9"}, "n9", false, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[512], node[64];
		bool fg = true, is_slurmd;
		size_t len = cmdline(buf, sizeof(buf), cases[i].argv);

		is_slurmd = agent_slurmd_args(buf, len, node, sizeof(node), &fg);
		if (strcmp(node, cases[i].node) != 0 || fg != cases[i].fg ||
		    is_slurmd != cases[i].slurmd)
			fail_msg("case %zu: node '%s' fg %d slurmd %d", i, node, fg, is_slurmd);
	}
}

/* The last argument cut (no final NUL), as a truncated read of /proc/self/cmdline gives. */
static void test_slurmd_args_cut(void **state)
{
	static const char buf[] = {'s', 'l', 'u', 'r', 'm', 'd', 0, '-', 'N', 0, 'n', '1'};
	char node[64];
	bool fg;

	assert_true(agent_slurmd_args(buf, sizeof(buf), node, sizeof(node), &fg));
	assert_string_equal(node, "n1");
	assert_true(agent_slurmd_args(buf, 8, node, sizeof(node), &fg)); /* "slurmd\0-" */
	assert_string_equal(node, "");
}

static void test_node_names(void **state)
{
	char name[64];
	bool daemonizes = true;
	hm_err_t err = {0};

	assert_true(agent_node_valid("n1"));
	assert_true(agent_node_valid("gpu-node_07.rack2"));
	assert_false(agent_node_valid(""));
	assert_false(agent_node_valid("n 1"));
	assert_false(agent_node_valid("n1/../x"));
	assert_false(
	    agent_node_valid("a123456789012345678901234567890123456789012345678901234567890123"));
	/* This test is not slurmd: the host name, never "daemonizes". */
	assert_int_equal(agent_node_name(name, sizeof(name), &daemonizes, &err), HM_OK);
	assert_false(daemonizes);
	assert_null(strchr(name, '.'));
	assert_true(agent_node_valid(name));
}

static void test_backoff(void **state)
{
	agent_backoff_t b;
	const int nominal[] = {500, 1000, 2000, 4000, 8000, 16000, 30000, 30000};

	agent_backoff_reset(&b);
	for (size_t i = 0; i < sizeof(nominal) / sizeof(nominal[0]); i++)
		assert_int_equal(agent_backoff_next(&b, 0.0), nominal[i]);
	agent_backoff_reset(&b);
	assert_int_equal(agent_backoff_next(&b, 0.999), 500 - (int)(500 * 0.2 * 0.999));
	/* Jitter only shortens, by at most 20%: retries never bunch above the cap. */
	for (int i = 0; i < 1000; i++) {
		int d = agent_backoff_next(&b, (double)i / 1000);

		assert_true(d <= 30000);
		assert_true(d >= 400);
	}
	assert_int_equal(agent_backoff_next(&b, 1.5), 30000); /* r out of range: no jitter */
}

/* ---- the coordinator's addresses: a round from the one that answered last ------ */

static void nolog(int level, const char *msg)
{
	(void)level;
	(void)msg;
}

static void test_conn_rounds(void **state)
{
	hm_logger_t lg = {.sink = nolog, .level = HM_LOG_DEBUG};
	hm_coord_addrs_t addrs = {.n = 2, .host = {"127.0.0.1", "127.0.0.2"}};
	agent_conn_t c;

	(void)state;
	agent_conn_init(&c, 65536, &lg);
	c.addrs = &addrs;
	/* The first refuses: the second is tried at once, no back-off. */
	c.state = CONN_CONNECTING;
	agent_conn_fail(&c, 1000, false, HM_LOG_ERROR, "connect: refused");
	assert_int_equal(c.addr_i, 1);
	assert_int_equal(c.retry_at_ms, 1000);
	/* Both refused: the round is over, the back-off comes, from the first again. */
	c.state = CONN_HELLO;
	agent_conn_fail(&c, 1000, false, HM_LOG_ERROR, "no agent_welcome");
	assert_int_equal(c.addr_i, 0);
	assert_true(c.retry_at_ms >= 1000 + 400);
	/* The second answers, later drops: the next round starts at the second. */
	c.state = CONN_CONNECTING;
	agent_conn_fail(&c, 5000, false, HM_LOG_ERROR, "connect: refused");
	assert_int_equal(c.addr_i, 1);
	c.state = CONN_READY;
	agent_conn_fail(&c, 9000, true, HM_LOG_ERROR, "connection closed by the peer");
	assert_int_equal(c.addr_i, 1);
	assert_true(c.retry_at_ms >= 9000 + 400 && c.retry_at_ms <= 9000 + 500);
	c.state = CONN_CONNECTING;
	agent_conn_fail(&c, 9500, false, HM_LOG_ERROR, "connect: refused");
	assert_int_equal(c.addr_i, 0); /* then the first, at once */
	assert_int_equal(c.retry_at_ms, 9500);
	/* Without a list (the rack channel) every failure waits its back-off. */
	c.addrs = NULL;
	c.state = CONN_CONNECTING;
	agent_conn_fail(&c, 20000, false, HM_LOG_ERROR, "connect: refused");
	assert_true(c.retry_at_ms > 20000);
	agent_conn_free(&c);
}

/* ---- contract B ---------------------------------------------------------------- */

static hm_aw_msg_t *decode_ok(const char *json)
{
	hm_aw_msg_t *m = calloc(1, sizeof(*m));
	hm_err_t err = {0};

	assert_non_null(m);
	if (hm_aw_decode(json, strlen(json), m, &err) != HM_OK)
		fail_msg("%s\n%s", err.msg, json);
	return m;
}

static void free_msg(hm_aw_msg_t *m)
{
	hm_aw_msg_free(m);
	free(m);
}

static void test_wire_examples(void **state)
{
	/* The messages as docs/protocol.md shows them. */
	hm_aw_msg_t *m = decode_ok(
	    "{\"v\":1,\"op\":\"agent_hello\",\"seq\":1,\"node\":\"n1\",\"agent_version\":\"0.1.0\","
	    "\"topo\":{\"gpus\":4,\"nics\":[{\"name\":\"mlx5_0\",\"pci\":\"0000:14:00.0\","
	    "\"numa\":0,\"speed_bps\":200000000000},{\"name\":\"mlx5_1\",\"pci\":\"0000:34:00.0\","
	    "\"numa\":1,\"speed_bps\":0}],\"gpu_nic\":[0,0,1,1]},"
	    "\"jobs\":[{\"job_id\":42,\"steps\":1,\"ranks\":2,\"applied_epoch\":null}]}");

	assert_int_equal(m->op, HM_AW_HELLO);
	assert_string_equal(m->node, "n1");
	assert_true(m->has_topo);
	assert_int_equal(m->topo.ngpus, 4);
	assert_int_equal(m->topo.nnics, 2);
	assert_int_equal(m->topo.nics[0].speed_bps, 200000000000);
	assert_int_equal(m->topo.gpu_nic[3], 1);
	assert_int_equal(m->nodes[0].jobs[0].applied_epoch, -1);
	free_msg(m);
	m = decode_ok("{\"v\":1,\"op\":\"agent_welcome\",\"seq\":1,\"re\":1,\"ok\":true,"
		      "\"heartbeat_ms\":1000,\"valid_ms\":3000,\"lead_ms\":1000}");
	assert_true(m->ok);
	assert_int_equal(m->valid_ms, 3000);
	free_msg(m);
	m = decode_ok("{\"v\":1,\"op\":\"agent_welcome\",\"seq\":1,\"re\":1,\"ok\":false,"
		      "\"error\":\"node n9 is not in the cluster's topology\",\"code\":\"node\"}");
	assert_false(m->ok);
	assert_string_equal(m->code, "node");
	free_msg(m);
	m = decode_ok("{\"v\":1,\"op\":\"agent_beat\",\"seq\":7,\"nodes\":[{\"node\":\"n1\","
		      "\"jobs\":[{\"job_id\":42,\"steps\":1,\"ranks\":2,\"applied_epoch\":7,"
		      "\"meas\":{\"samples\":20,\"iter_us\":250000.5,\"iter_sd_us\":1200.0,"
		      "\"compute_us\":150000,\"slot_misses\":1}}]}]}");
	assert_true(m->nodes[0].jobs[0].has_meas);
	assert_float_equal(m->nodes[0].jobs[0].meas.iter_us, 250000.5, 1e-9);
	assert_float_equal(m->nodes[0].jobs[0].meas.burst_us, -1, 0); /* absent: not measured */
	free_msg(m);
	m = decode_ok(
	    "{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[{\"node\":\"n1\","
	    "\"jobs\":[{\"job_id\":42,\"uid\":1000,\"scheduled\":true,\"policy\":\"harmonics\","
	    "\"epoch\":7,\"period_us\":250000,\"shift_us\":125000,\"origin_us\":1700000000000000,"
	    "\"guard_us\":10000,\"prio\":1,\"next\":{\"effective_us\":1700000001000000,"
	    "\"epoch\":8,\"policy\":\"harmonics\",\"period_us\":250000,\"shift_us\":0,"
	    "\"origin_us\":1700000000000000,\"guard_us\":10000,\"prio\":2}},"
	    "{\"job_id\":43,\"uid\":1001,\"scheduled\":false,\"reason\":\"comm-sched off\"}]}],"
	    "\"future_member\":[1,2,3]}");
	assert_int_equal(m->nassign, 1);
	assert_int_equal(m->assign[0].njobs, 2);
	assert_true(m->assign[0].jobs[0].has_next);
	assert_int_equal(m->assign[0].jobs[0].next.epoch, 8);
	assert_int_equal(m->assign[0].jobs[0].next_effective_us, 1700000001000000);
	assert_false(m->assign[0].jobs[1].scheduled);
	assert_string_equal(m->assign[0].jobs[1].reason, "comm-sched off");
	free_msg(m);
}

/* Encoding then decoding gives the same records. */
static void test_wire_roundtrip(void **state)
{
	hm_aw_msg_t in, *out;
	char *json = NULL;
	hm_err_t err = {0};

	memset(&in, 0, sizeof(in));
	in.op = HM_AW_BEAT;
	in.seq = 9;
	assert_int_equal(hm_aw_alloc_nodes(&in, 1, &err), HM_OK);
	snprintf(in.nodes[0].node, sizeof(in.nodes[0].node), "n1");
	in.nodes[0].njobs = 2;
	in.nodes[0].jobs[0] = (hm_aw_job_state_t){.job_id = 5,
						  .steps = 2,
						  .ranks = 8,
						  .applied_epoch = 3,
						  .has_meas = true,
						  .meas = {.samples = 40,
							   .iter_us = 1234.5,
							   .iter_sd_us = 7.25,
							   .compute_us = 1000,
							   .burst_us = -1,
							   .slot_misses = 2}};
	in.nodes[0].jobs[0].has_nccl_class = true;
	in.nodes[0].jobs[0].nccl_class = 5;
	in.nodes[0].jobs[1] = (hm_aw_job_state_t){.job_id = 6, .applied_epoch = -1};
	assert_int_equal(hm_aw_encode(&in, &json, &err), HM_OK);
	assert_non_null(strstr(json, "\"applied_epoch\":null"));
	assert_non_null(strstr(json, "\"nccl_class\":5"));
	assert_null(strstr(strstr(json, "nccl_class") + 1, "nccl_class")); /* job 6 has none */
	assert_null(strstr(json, "burst_us"));
	out = decode_ok(json);
	assert_int_equal(out->op, HM_AW_BEAT);
	assert_int_equal(out->seq, 9);
	assert_int_equal(out->nodes[0].njobs, 2);
	assert_int_equal(out->nodes[0].jobs[0].ranks, 8);
	assert_true(out->nodes[0].jobs[0].has_meas);
	assert_float_equal(out->nodes[0].jobs[0].meas.iter_sd_us, 7.25, 0);
	assert_float_equal(out->nodes[0].jobs[0].meas.burst_us, -1, 0);
	assert_int_equal(out->nodes[0].jobs[1].applied_epoch, -1);
	assert_false(out->nodes[0].jobs[1].has_meas);
	assert_true(out->nodes[0].jobs[0].has_nccl_class);
	assert_int_equal(out->nodes[0].jobs[0].nccl_class, 5);
	assert_false(out->nodes[0].jobs[1].has_nccl_class);
	free_msg(out);
	free(json);
	hm_aw_msg_free(&in);

	memset(&in, 0, sizeof(in));
	in.op = HM_AW_ASSIGN;
	in.seq = 3;
	in.re = 0;
	assert_int_equal(hm_aw_alloc_assign(&in, 1, &err), HM_OK);
	snprintf(in.assign[0].node, sizeof(in.assign[0].node), "n1");
	in.assign[0].njobs = 1;
	in.assign[0].jobs[0] = (hm_aw_job_assign_t){
	    .job_id = 42,
	    .uid = 1000,
	    .scheduled = true,
	    .cur = {.policy = "cassini", .epoch = 4, .shift_us = 300000, .origin_us = 1},
	    .has_next = true,
	    .next_effective_us = 99,
	    .next = {.policy = "off", .epoch = 5}};
	assert_int_equal(hm_aw_encode(&in, &json, &err), HM_OK);
	out = decode_ok(json);
	assert_int_equal(out->re, 0);
	assert_string_equal(out->assign[0].jobs[0].cur.policy, "cassini");
	assert_int_equal(out->assign[0].jobs[0].cur.shift_us, 300000);
	assert_string_equal(out->assign[0].jobs[0].next.policy, "off");
	assert_int_equal(out->assign[0].jobs[0].next_effective_us, 99);
	free_msg(out);
	free(json);
	hm_aw_msg_free(&in);
}

/* A measurement out of range (from a user's report file) costs its own entry,
   never the beat: the other job's window and the node's jobs are kept. */
static void test_wire_bad_meas_costs_its_entry(void **state)
{
	hm_aw_msg_t *m = decode_ok(
	    "{\"v\":1,\"op\":\"agent_beat\",\"seq\":7,\"nodes\":[{\"node\":\"n1\",\"jobs\":["
	    "{\"job_id\":42,\"steps\":1,\"ranks\":1,\"applied_epoch\":3,\"meas\":{\"samples\":1,"
	    "\"iter_us\":9.2e18,\"iter_sd_us\":0,"
	    "\"slot_misses\":0}},"
	    "{\"job_id\":43,\"steps\":1,\"ranks\":2,\"applied_epoch\":3,\"meas\":{\"samples\":4,"
	    "\"iter_us\":250000,\"iter_sd_us\":10,"
	    "\"slot_misses\":1}}]}]}");
	hm_aw_meas_t bad = {.samples = 1, .iter_us = 9.2e18, .compute_us = -1, .burst_us = -1};
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(m->nnodes, 1);
	assert_int_equal(m->nodes[0].njobs, 2);
	assert_false(m->nodes[0].jobs[0].has_meas);
	assert_int_equal(m->nodes[0].jobs[0].applied_epoch, 3);
	assert_non_null(strstr(m->nodes[0].jobs[0].meas_refused, "jobs[0].meas.iter_us"));
	assert_true(m->nodes[0].jobs[1].has_meas);
	assert_string_equal(m->nodes[0].jobs[1].meas_refused, "");
	assert_float_equal(m->nodes[0].jobs[1].meas.iter_us, 250000, 1e-9);
	free_msg(m);
	/* The agent's check is the decoder's table. */
	assert_int_equal(hm_aw_meas_check(&bad, &err), HM_ERR_PROTO);
	assert_non_null(strstr(err.msg, "iter_us"));
	bad.iter_us = 1e5;
	assert_int_equal(hm_aw_meas_check(&bad, &err), HM_OK);
}

static void test_wire_refusals(void **state)
{
	static const struct {
		const char *json;
		const char *why; /* must appear in the message */
	} bad[] = {
	    {"{\"v\":2,\"op\":\"agent_beat\",\"seq\":1,\"nodes\":[]}", "version 2"},
	    {"{\"v\":1,\"op\":\"agent_sing\",\"seq\":1}", "agent_sing"},
	    {"{\"v\":1,\"op\":\"agent_beat\",\"seq\":0,\"nodes\":[]}", "seq"},
	    {"{\"v\":1,\"op\":\"agent_beat\",\"seq\":\"1\",\"nodes\":[]}", "not an integer"},
	    {"{\"v\":1,\"op\":\"agent_beat\",\"seq\":1,\"nodes\":[]} x", "one JSON text"},
	    {"[1,2]", "JSON object"},
	    {"{\"v\":1,\"op\":\"agent_welcome\",\"seq\":1,\"ok\":true,\"heartbeat_ms\":1000,"
	     "\"valid_ms\":3000,\"lead_ms\":1000}",
	     "re: missing"},
	    {"{\"v\":1,\"op\":\"agent_welcome\",\"seq\":1,\"re\":1,\"ok\":true,\"heartbeat_ms\":5,"
	     "\"valid_ms\":3000,\"lead_ms\":1000}",
	     "heartbeat_ms: 5 is not in [100, 60000]"},
	    {"{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[{\"node\":\"n1\","
	     "\"jobs\":[{\"job_id\":42,\"uid\":0,\"scheduled\":true,\"policy\":\"harmonics\","
	     "\"epoch\":7,\"period_us\":250000,\"shift_us\":0,\"origin_us\":0,\"guard_us\":0,"
	     "\"prio\":9}]}]}",
	     "nodes[0].jobs[0].prio: 9 is not in [0, 7]"},
	    {"{\"v\":1,\"op\":\"agent_beat\",\"seq\":7,\"nodes\":[{\"node\":\"n1\","
	     "\"jobs\":[{\"job_id\":42,\"steps\":1,\"ranks\":2,\"applied_epoch\":7,"
	     "\"nccl_class\":8}]}]}",
	     "nodes[0].jobs[0].nccl_class: 8 is not in [0, 7]"},
	    {"{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[{\"node\":\"n1\","
	     "\"jobs\":[{\"job_id\":42,\"uid\":0,\"scheduled\":true,\"policy\":\"Bad Name\","
	     "\"epoch\":7,\"period_us\":250000,\"shift_us\":0,\"origin_us\":0,\"guard_us\":0,"
	     "\"prio\":1}]}]}",
	     "policy: 'Bad Name'"},
	    {"{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[{\"node\":\"n1\","
	     "\"jobs\":[{\"job_id\":42,\"uid\":0,\"scheduled\":true,\"policy\":\"harmonics\","
	     "\"epoch\":7,\"period_us\":2.5e5,\"shift_us\":0,\"origin_us\":0,\"guard_us\":0,"
	     "\"prio\":1}]}]}",
	     "period_us: '2.5e5' is not an integer"},
	    {"{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[{\"node\":\"n1\","
	     "\"jobs\":[{\"job_id\":42,\"scheduled\":false}]}]}",
	     "uid: missing"},
	    {"{\"v\":1,\"op\":\"agent_hello\",\"seq\":1,\"node\":\"n1/..\",\"agent_version\":\"x\","
	     "\"topo\":null,\"jobs\":[]}",
	     "node: 'n1/..'"},
	    {"{\"v\":1,\"op\":\"agent_hello\",\"seq\":1,\"node\":\"n1\",\"agent_version\":\"x\","
	     "\"topo\":{\"gpus\":2,\"nics\":[],\"gpu_nic\":[0,0]},\"jobs\":[]}",
	     "gpu_nic[0]"},
	};
	char many[16384];
	size_t off;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hm_aw_msg_t m;
		hm_err_t err = {0};

		if (hm_aw_decode(bad[i].json, strlen(bad[i].json), &m, &err) == HM_OK)
			fail_msg("accepted #%zu: %s", i, bad[i].json);
		if (err.rc != HM_ERR_PROTO || !strstr(err.msg, bad[i].why))
			fail_msg("#%zu: '%s' lacks '%s'", i, err.msg, bad[i].why);
		hm_aw_msg_free(&m);
	}
	/* More jobs than a message may carry for one node. */
	off = (size_t)snprintf(many, sizeof(many),
			       "{\"v\":1,\"op\":\"agent_beat\",\"seq\":1,\"nodes\":[{\"node\":"
			       "\"n1\",\"jobs\":[");
	for (int j = 0; j <= HM_AW_MAX_JOBS; j++)
		off += (size_t)snprintf(many + off, sizeof(many) - off,
					"%s{\"job_id\":%d,\"steps\":0,\"ranks\":0}", j ? "," : "",
					j + 1);
	snprintf(many + off, sizeof(many) - off, "]}]}");
	{
		hm_aw_msg_t m;
		hm_err_t err = {0};

		assert_int_equal(hm_aw_decode(many, strlen(many), &m, &err), HM_ERR_PROTO);
		assert_non_null(strstr(err.msg, "at most 64"));
		hm_aw_msg_free(&m);
	}
}

/* agent_assign's rack members: decoded, encoded only when there, all-or-none checks. */
static void test_wire_rack(void **state)
{
	hm_aw_msg_t in, *out;
	char *json = NULL;
	hm_err_t err = {0};
	static const struct {
		const char *members, *why;
	} bad[] = {
	    {"\"rack\":\"rack1\",\"leader\":\"n1\",\"role\":\"boss\",\"term\":1",
	     "role: 'boss' is not accepted (leader, member)"},
	    {"\"rack\":\"rack1\",\"leader\":null,\"role\":\"leader\",\"term\":1", "leader is null"},
	    {"\"rack\":\"rack1\",\"leader\":\"n1\",\"term\":1", "role: '' is not accepted"},
	    {"\"rack\":\"\",\"leader\":\"n1\",\"role\":\"member\",\"term\":1", "rack: ''"},
	    {"\"rack\":\"rack1\",\"leader\":\"n/1\",\"role\":\"member\",\"term\":1",
	     "leader: 'n/1'"},
	    {"\"rack\":\"rack1\",\"leader\":\"n1\",\"role\":\"member\",\"term\":-1",
	     "term: -1 is not in"},
	};

	(void)state;
	out = decode_ok("{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[],"
			"\"rack\":\"rack1\",\"leader\":null,\"role\":\"member\",\"term\":0}");
	assert_true(out->has_rack);
	assert_string_equal(out->rack.rack, "rack1");
	assert_string_equal(out->rack.leader, "");
	assert_string_equal(out->rack.role, "member");
	free_msg(out);
	/* A coordinator without leaders: no rack members, nothing known. */
	out = decode_ok("{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[],"
			"\"role\":\"leader\"}");
	assert_false(out->has_rack);
	assert_string_equal(out->rack.role, "");
	free_msg(out);
	memset(&in, 0, sizeof(in));
	in.op = HM_AW_ASSIGN;
	in.seq = 4;
	in.has_rack = true;
	in.rack = (hm_aw_rack_t){.rack = "rack2", .leader = "n5", .role = "leader", .term = 3};
	assert_int_equal(hm_aw_encode(&in, &json, &err), HM_OK);
	out = decode_ok(json);
	assert_true(out->has_rack);
	assert_memory_equal(&out->rack, &in.rack, sizeof(in.rack));
	free_msg(out);
	free(json);
	in.has_rack = false;
	assert_int_equal(hm_aw_encode(&in, &json, &err), HM_OK);
	assert_null(strstr(json, "rack"));
	assert_null(strstr(json, "role"));
	free(json);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[512];
		hm_aw_msg_t m;

		snprintf(text, sizeof(text),
			 "{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[],%s}",
			 bad[i].members);
		memset(&err, 0, sizeof(err));
		if (hm_aw_decode(text, strlen(text), &m, &err) == HM_OK)
			fail_msg("accepted #%zu: %s", i, text);
		if (err.rc != HM_ERR_PROTO || !strstr(err.msg, bad[i].why))
			fail_msg("#%zu: '%s' lacks '%s'", i, err.msg, bad[i].why);
		hm_aw_msg_free(&m);
	}
}

static int role_lines;
static char role_last[256];

static void role_log(int level, const char *msg)
{
	assert_int_equal(level, HM_LOG_INFO);
	role_lines++;
	snprintf(role_last, sizeof(role_last), "%s", msg);
}

/* Role changes are logged once each; repeats and term-only changes are not. */
static void test_role_note(void **state)
{
	hm_logger_t lg = {.sink = role_log, .level = HM_LOG_DEBUG, .prefix = ""};
	agent_role_t r = {0};
	hm_aw_msg_t m;

	(void)state;
	memset(&m, 0, sizeof(m));
	role_lines = 0;
	assert_false(agent_role_note(&r, &m, &lg)); /* no rack members: nothing */
	assert_false(r.known);
	m.has_rack = true;
	m.rack = (hm_aw_rack_t){.rack = "rack1", .leader = "n2", .role = "member", .term = 1};
	assert_true(agent_role_note(&r, &m, &lg));
	assert_non_null(strstr(role_last, "rack rack1: member, n2 leads (term 1)"));
	assert_false(agent_role_note(&r, &m, &lg));
	m.rack.term = 2; /* the same leader again (it came back after none): no line */
	assert_false(agent_role_note(&r, &m, &lg));
	assert_int_equal(r.last.term, 2);
	m.rack = (hm_aw_rack_t){.rack = "rack1", .leader = "n1", .role = "leader", .term = 3};
	assert_true(agent_role_note(&r, &m, &lg));
	assert_non_null(strstr(role_last, "rack rack1: this node leads (term 3)"));
	m.rack = (hm_aw_rack_t){.rack = "rack1", .role = "member", .term = 3};
	assert_true(agent_role_note(&r, &m, &lg));
	assert_non_null(strstr(role_last, "rack rack1: member, no leader"));
	assert_int_equal(role_lines, 3);
}

/* Clocks: the beat's offset and the reply's coord_us travel, are range-checked and optional. */
static void test_wire_clock(void **state)
{
	hm_aw_msg_t in, out;
	hm_err_t err = {0};
	char *json = NULL;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.op = HM_AW_BEAT;
	in.seq = 3;
	in.has_clock = true;
	in.clock_offset_us = -2000123;
	in.clock_rtt_us = 850;
	assert_int_equal(hm_aw_encode(&in, &json, &err), HM_OK);
	assert_non_null(strstr(json, "\"clock_offset_us\":-2000123"));
	assert_int_equal(hm_aw_decode(json, strlen(json), &out, &err), HM_OK);
	assert_true(out.has_clock);
	assert_int_equal(out.clock_offset_us, -2000123);
	assert_int_equal(out.clock_rtt_us, 850);
	hm_aw_msg_free(&out);
	free(json);

	/* An agent without clocks sends neither member; a coordinator without them no coord_us. */
	in.has_clock = false;
	assert_int_equal(hm_aw_encode(&in, &json, &err), HM_OK);
	assert_null(strstr(json, "clock_"));
	assert_int_equal(hm_aw_decode(json, strlen(json), &out, &err), HM_OK);
	assert_false(out.has_clock);
	hm_aw_msg_free(&out);
	free(json);

	memset(&in, 0, sizeof(in));
	in.op = HM_AW_ASSIGN;
	in.seq = 4;
	in.re = 3;
	in.coord_us = 1796449231878666;
	assert_int_equal(hm_aw_encode(&in, &json, &err), HM_OK);
	assert_int_equal(hm_aw_decode(json, strlen(json), &out, &err), HM_OK);
	assert_int_equal(out.coord_us, 1796449231878666);
	hm_aw_msg_free(&out);
	free(json);

	static const struct {
		const char *json, *why;
	} bad[] = {
	    {"{\"v\":1,\"op\":\"agent_beat\",\"seq\":1,\"nodes\":[],\"clock_offset_us\":"
	     "-3600000001,\"clock_rtt_us\":5}",
	     "clock_offset_us: -3600000001 is not in"},
	    {"{\"v\":1,\"op\":\"agent_beat\",\"seq\":1,\"nodes\":[],\"clock_offset_us\":5}",
	     "clock_rtt_us: missing"},
	    {"{\"v\":1,\"op\":\"agent_beat\",\"seq\":1,\"nodes\":[],\"clock_offset_us\":5,"
	     "\"clock_rtt_us\":-1}",
	     "clock_rtt_us: -1 is not in"},
	    {"{\"v\":1,\"op\":\"agent_assign\",\"seq\":2,\"re\":1,\"nodes\":[],\"coord_us\":-5}",
	     "coord_us: -5 is not in"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(hm_aw_decode(bad[i].json, strlen(bad[i].json), &out, &err),
				 HM_ERR_PROTO);
		if (!strstr(err.msg, bad[i].why))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].why);
		hm_aw_msg_free(&out);
	}
}

/* The offset estimate: midpoint of the round trip, long round trips ignored, skew by margin. */
static void test_clock_sample(void **state)
{
	agent_clock_t c;
	const int64_t t = 1796449231000000, m = 5000000, bound = 1000;

	(void)state;
	memset(&c, 0, sizeof(c));
	/* In step: coordinator stamped the midpoint of a 400 us round trip. */
	assert_int_equal(agent_clock_sample(&c, t, m, t + 200, t + 400, m + 400, bound), 0);
	assert_true(c.has);
	assert_int_equal(c.offset_us, 0);
	assert_int_equal(c.rtt_us, 400);
	assert_false(c.skewed);
	/* This node 2 s ahead (a forward step): skewed, once. */
	assert_int_equal(
	    agent_clock_sample(&c, t + 2000000, m, t + 200, t + 2000400, m + 400, bound), 1);
	assert_int_equal(c.offset_us, -2000000);
	assert_true(c.skewed);
	assert_int_equal(
	    agent_clock_sample(&c, t + 2000000, m, t + 200, t + 2000400, m + 400, bound), 0);
	/* A round trip over the maximum is ignored: the state stays. */
	assert_int_equal(agent_clock_sample(&c, t, m, t + 30000, t + 60000,
					    m + AGENT_CLOCK_RTT_MAX_US + 1, bound),
			 0);
	assert_int_equal(c.offset_us, -2000000);
	/* 1.2 ms off with a 600 us round trip: within bound + half the round trip, not skewed. */
	assert_int_equal(agent_clock_sample(&c, t, m, t + 1500, t + 600, m + 600, bound), -1);
	assert_int_equal(c.offset_us, 1200);
	assert_false(c.skewed);
	/* Behind by 1.5 ms with 200 us round trip: skewed; a bound of 0 never is. */
	assert_int_equal(agent_clock_sample(&c, t, m, t + 1600, t + 200, m + 200, bound), 1);
	assert_int_equal(agent_clock_sample(&c, t, m, t + 1600, t + 200, m + 200, 0), -1);
	/* No coord_us (an older coordinator): nothing. */
	assert_int_equal(agent_clock_sample(&c, t, m, 0, t + 200, m + 200, bound), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slurmd_args),
	    cmocka_unit_test(test_slurmd_args_cut),
	    cmocka_unit_test(test_node_names),
	    cmocka_unit_test(test_backoff),
	    cmocka_unit_test(test_conn_rounds),
	    cmocka_unit_test(test_wire_examples),
	    cmocka_unit_test(test_wire_roundtrip),
	    cmocka_unit_test(test_wire_refusals),
	    cmocka_unit_test(test_wire_rack),
	    cmocka_unit_test(test_wire_bad_meas_costs_its_entry),
	    cmocka_unit_test(test_role_note),
	    cmocka_unit_test(test_wire_clock),
	    cmocka_unit_test(test_clock_sample),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
