/*
 * Rack leaders in the engine: the lowest-named healthy agent of a rack leads,
 * a leader whose connection closed or that went silent past AgentValidity
 * gives way to the next one in name order, a returning lower-named node does
 * not take the lead back, every change reaches the rack's agents (change
 * counter and notify), and the racks view carries it through its JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_coord_json.h"
#include "hm_coord_nodes.h"

#define T0_S 2000000000.0

static int notified;

static void count_notify(void *arg)
{
	(void)arg;
	notified++;
}

/* Fixture topology (rack1 = n[1-4], rack2 = n[5-8]), AgentValidity 3 s. */
static hm_coord_t *make(void)
{
	hm_conf_t conf;
	hm_err_t err = {0};
	hm_coord_t *c = NULL;

	fixture_conf(&conf);
	conf.heartbeat_ms = 1000;
	conf.agent_valid_ms = 3000;
	assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
	hm_coord_set_notify(c, count_notify, NULL);
	notified = 0;
	return c;
}

static void hello(hm_coord_t *c, const char *node, double now_s)
{
	hm_err_t err = {0};

	assert_int_equal(hm_coord_node_hello(c, node, NULL, now_s, &err), HM_OK);
}

static void beat(hm_coord_t *c, const char *node, double now_s)
{
	hm_aw_node_state_t st;
	hm_err_t err = {0};

	memset(&st, 0, sizeof(st));
	snprintf(st.node, sizeof(st.node), "%s", node);
	assert_int_equal(hm_coord_node_beat(c, &st, now_s, &err), HM_OK);
}

/* The leader node's agent is told ("" = none), checked from every node of the rack. */
static void assert_leader(hm_coord_t *c, const char *first_node, int nodes, const char *leader,
			  long term)
{
	int base = atoi(first_node + 1);

	for (int k = 0; k < nodes; k++) {
		char node[8];
		hm_aw_rack_t r;

		snprintf(node, sizeof(node), "n%d", base + k);
		assert_true(hm_coord_node_rack(c, node, &r));
		assert_string_equal(r.leader, leader);
		assert_string_equal(r.role, strcmp(node, leader) == 0 ? "leader" : "member");
		assert_int_equal(r.term, term);
	}
}

static void rack_view(hm_coord_t *c, int rack, hm_coord_rack_view_t *out)
{
	hm_coord_rack_view_t *v = NULL;
	int n = 0;

	assert_int_equal(hm_coord_racks(c, &v, &n), HM_OK);
	assert_int_equal(n, 2);
	*out = v[rack];
	free(v);
}

/* A rack without a leader waits AgentValidity (3 s) after its first agent,
   then the lowest-named one leads (not the first to connect); a lower-named
   node arriving later does not take over; on loss, the lowest-named connected
   one leads at once. */
static void test_election_order(void **state)
{
	hm_coord_t *c = make();
	hm_coord_rack_view_t v;
	hm_aw_rack_t r;

	(void)state;
	rack_view(c, 0, &v);
	assert_string_equal(v.state, "none");
	assert_string_equal(v.leader, "");
	assert_int_equal(v.last_epoch, -1);
	hello(c, "n4", T0_S);
	hello(c, "n3", T0_S + 0.2);
	beat(c, "n4", T0_S + 2.9);
	beat(c, "n3", T0_S + 2.9);
	assert_leader(c, "n1", 4, "", 0); /* still settling */
	assert_int_equal(notified, 0);
	beat(c, "n4", T0_S + 3.0);
	assert_leader(c, "n1", 4, "n3", 1);
	assert_int_equal(notified, 1);
	hello(c, "n2", T0_S + 3.1);
	beat(c, "n2", T0_S + 4.2);
	beat(c, "n3", T0_S + 4.2);
	beat(c, "n4", T0_S + 4.2);
	assert_leader(c, "n1", 4, "n3", 1);
	assert_int_equal(notified, 1); /* no change, no push */
	hm_coord_node_lost(c, "n3", T0_S + 4.3);
	assert_leader(c, "n1", 4, "n2", 2); /* n2 before n4, at once */
	assert_int_equal(notified, 2);
	rack_view(c, 0, &v);
	assert_string_equal(v.state, "up");
	assert_string_equal(v.leader, "n2");
	assert_int_equal(v.term, 2);
	assert_true(v.leader_since_s == T0_S + 4.3);
	/* The other rack is untouched: no agent, no leader. */
	assert_true(hm_coord_node_rack(c, "n5", &r));
	assert_string_equal(r.rack, "rack2");
	assert_string_equal(r.leader, "");
	assert_string_equal(r.role, "member");
	rack_view(c, 1, &v);
	assert_string_equal(v.state, "none");
	assert_false(hm_coord_node_rack(c, "n9", &r));
	hm_coord_destroy(c);
}

/* A silent leader gives way after AgentValidity, at the next beat of its rack,
   and the rack's agents are pushed (their change counters moved). */
static void test_takeover_silence(void **state)
{
	hm_coord_t *c = make();
	unsigned long g1, g5;

	(void)state;
	hello(c, "n1", T0_S);
	hello(c, "n2", T0_S);
	hello(c, "n5", T0_S);
	beat(c, "n1", T0_S + 2.0);
	beat(c, "n2", T0_S + 2.0);
	beat(c, "n1", T0_S + 3.0);
	assert_leader(c, "n1", 4, "n1", 1);
	g1 = hm_coord_node_gen(c, "n4");
	g5 = hm_coord_node_gen(c, "n5");
	beat(c, "n2", T0_S + 5.9); /* n1 silent 2.9 s: still within 3 s */
	assert_leader(c, "n1", 4, "n1", 1);
	beat(c, "n2", T0_S + 6.1);
	assert_leader(c, "n1", 4, "n2", 2);
	assert_true(hm_coord_node_gen(c, "n4") != g1);    /* every agent of rack1 is told */
	assert_int_equal(hm_coord_node_gen(c, "n5"), g5); /* rack2's are not */
	/* A rack with no other agent: the sweep elects, then finds its silent leader. */
	hm_coord_leaders_check(c, T0_S + 3.0);
	assert_leader(c, "n5", 4, "n5", 1);
	hm_coord_leaders_check(c, T0_S + 3.5);
	assert_leader(c, "n5", 4, "", 1);
	{
		hm_coord_rack_view_t v;

		rack_view(c, 1, &v);
		assert_string_equal(v.state, "lost");
		assert_true(v.leader_since_s < 0);
	}
	hm_coord_destroy(c);
}

/* A lower-named node that returns does not take the lead back while the
   leader is healthy; it leads again only when the leader goes. */
static void test_no_flap(void **state)
{
	hm_coord_t *c = make();
	double t = T0_S;

	(void)state;
	hello(c, "n1", t);
	hello(c, "n3", t);
	beat(c, "n1", t + 2.0);
	beat(c, "n3", t + 2.0);
	hm_coord_leaders_check(c, t + 3.0);
	assert_leader(c, "n1", 4, "n1", 1);
	hm_coord_node_lost(c, "n1", t + 3.5);
	assert_leader(c, "n1", 4, "n3", 2);
	hello(c, "n1", t + 4.0);
	for (t += 4.5; t < T0_S + 14; t += 0.5) { /* both beat for 10 s */
		beat(c, "n1", t);
		beat(c, "n3", t);
		hm_coord_leaders_check(c, t);
	}
	assert_leader(c, "n1", 4, "n3", 2);
	/* A silent leader that beats again after a takeover stays a member. */
	beat(c, "n1", t + 3.5);
	assert_leader(c, "n1", 4, "n1", 3);
	beat(c, "n3", t + 3.6);
	assert_leader(c, "n1", 4, "n1", 3);
	hm_coord_node_lost(c, "n1", t + 4);
	assert_leader(c, "n1", 4, "n3", 4);
	hm_coord_destroy(c);
}

/* A new topology keeps a rack's leader by rack and node name. */
static void test_reconfigure_keeps(void **state)
{
	hm_coord_t *c = make();
	hm_conf_t conf;
	hm_err_t err = {0};

	(void)state;
	hello(c, "n2", T0_S);
	hello(c, "n1", T0_S);
	beat(c, "n2", T0_S + 2.0);
	hm_coord_leaders_check(c, T0_S + 3.0);
	assert_leader(c, "n1", 4, "n1", 1);
	hm_coord_node_lost(c, "n1", T0_S + 3.1);
	assert_leader(c, "n1", 4, "n2", 2);
	fixture_conf(&conf);
	assert_int_equal(hm_coord_reconfigure(c, &conf, fixture_topo(), &err), HM_OK);
	assert_leader(c, "n1", 4, "n2", 2);
	hm_coord_destroy(c);
}

/* The racks view through its JSON and back; none is null, not "" or 0. */
static void test_racks_json(void **state)
{
	/* static: no uninitialised padding for the memory comparisons */
	static hm_coord_rack_view_t r = {.rack = 1,
					 .name = "rack2",
					 .nhosts = 4,
					 .ngpus = 32,
					 .njobs = 3,
					 .ncross = 1,
					 .load = 0.25,
					 .leader = "n5",
					 .state = "up",
					 .term = 4,
					 .leader_since_s = T0_S,
					 .last_epoch = 12,
					 .solve_ms = -1},
				    r2,
				    none = {.name = "rack1",
					    .state = "lost",
					    .term = 2,
					    .leader_since_s = -1,
					    .last_epoch = -1,
					    .solve_ms = 1.5};
	json_object *o, *v;

	(void)state;
	o = hm_json_rack_view(&r);
	assert_true(json_object_object_get_ex(o, "solve_ms", &v) && v == NULL);
	assert_string_equal(json_object_get_string(json_object_object_get(o, "leader")), "n5");
	hm_json_rack_view_parse(o, &r2);
	json_object_put(o);
	assert_memory_equal(&r, &r2, sizeof(r));
	o = hm_json_rack_view(&none);
	assert_true(json_object_object_get_ex(o, "leader", &v) && v == NULL);
	assert_true(json_object_object_get_ex(o, "last_epoch", &v) && v == NULL);
	assert_true(json_object_object_get_ex(o, "leader_since_s", &v) && v == NULL);
	hm_json_rack_view_parse(o, &r2);
	json_object_put(o);
	assert_memory_equal(&none, &r2, sizeof(none));
	/* A coordinator without leaders: nothing, read as not measured. */
	o = json_tokener_parse("{\"rack\":0,\"name\":\"rack1\"}");
	hm_json_rack_view_parse(o, &r2);
	json_object_put(o);
	assert_string_equal(r2.leader, "");
	assert_int_equal(r2.last_epoch, -1);
	assert_true(r2.solve_ms < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_election_order), cmocka_unit_test(test_takeover_silence),
	    cmocka_unit_test(test_no_flap),        cmocka_unit_test(test_reconfigure_keeps),
	    cmocka_unit_test(test_racks_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
