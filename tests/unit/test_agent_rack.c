/*
 * The rack channel's pure parts (agent_rack.h): a cut round's decisions as a
 * rack_assign (held, free, cross-rack), through the wire and back, and how a
 * node merges them into the jobs it lists (contract C: a change becomes the
 * next schedule at the push's switch time; class kept; unknown jobs free).
 * The channel itself runs in tests/slurm/leaders.sh (slurmctld stopped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_jobs.h"
#include "agent_rack.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_push_build),
	    cmocka_unit_test(test_push_refusals),
	    cmocka_unit_test(test_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
