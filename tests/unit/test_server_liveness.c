/*
 * When the coordinator counts a node agent lost (docs/protocol.md "The
 * coordinator's side", silence): a real server on 127.0.0.1 with real munge
 * and an agent that goes silent after its welcome (a packet-dropping partition
 * looks like this to the coordinator: nothing arrives, nothing closes); and the
 * engine's grace after the coordinator itself was stalled (stale hellos and
 * closed connections read after SIGCONT of slurmctld).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "hm_agent_wire.h"
#include "hm_clock.h"
#include "hm_coord_nodes.h"
#include "server_fixture.h"

/* Short beats and a long ConnectionTimeout: the silence limit must follow the
   former (AgentValidity + HeartbeatInterval = 300 ms), not the latter. */
#define HB_MS 100
#define AV_MS 200
#define CT_MS 3000

static int setup(void **state)
{
	hm_conf_t conf;
	hm_err_t err = {0};

	(void)state;
	if (!srv_fixture_conf("test_server_liveness", &conf))
		return 0;
	conf.conn_timeout_ms = CT_MS;
	conf.heartbeat_ms = HB_MS;
	conf.agent_valid_ms = AV_MS;
	if (hm_coord_create(&conf, fixture_topo(), &coord, &err) != HM_OK) {
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

static void send_hello(int fd, const char *node)
{
	hm_aw_msg_t m;
	char *json = NULL, *cred = NULL, tag[HM_PROTO_BIND_MAX];
	hm_err_t err = {0};

	memset(&m, 0, sizeof(m));
	m.op = HM_AW_HELLO;
	m.seq = 1;
	snprintf(m.node, sizeof(m.node), "%s", node);
	snprintf(m.agent_version, sizeof(m.agent_version), "test");
	assert_int_equal(hm_aw_alloc_nodes(&m, 1, NULL), HM_OK);
	snprintf(m.nodes[0].node, sizeof(m.nodes[0].node), "%s", node);
	assert_int_equal(hm_aw_encode(&m, &json, &err), HM_OK);
	assert_int_equal(hm_proto_conn_tag(fd, "agent>coordinator", true, tag, sizeof(tag), &err),
			 HM_OK);
	assert_int_equal(hm_proto_seal_bound(json, HM_PROTO_UID_ANY, tag, &cred, &err), HM_OK);
	assert_int_equal(hm_proto_send(fd, cred, strlen(cred), hm_mono_ms() + 2000, &err), HM_OK);
	hm_aw_msg_free(&m);
	free(json);
	free(cred);
}

static const char *node_state(const char *node, char *buf, size_t len)
{
	hm_coord_node_view_t *v = NULL;
	int n = 0;

	snprintf(buf, len, "-");
	assert_int_equal(hm_coord_nodes(coord, &v, &n), HM_OK);
	for (int i = 0; i < n; i++)
		if (strcmp(v[i].node, node) == 0)
			snprintf(buf, len, "%s", v[i].state);
	free(v);
	return buf;
}

/* An agent silent after its welcome is closed and its node lost within
   AgentValidity + HeartbeatInterval (300 ms here; the limit was 3 x
   HeartbeatInterval + ConnectionTimeout = 3,300 ms): 1,500 ms allowed. */
static void test_silent_agent_lost(void **state)
{
	char buf[4096], st[32];
	int fd;
	int64_t t0, closed_ms = -1;

	(void)state;
	NEED_SERVER();
	fd = dial();
	send_hello(fd, "n3");
	t0 = hm_mono_ms();
	while (hm_mono_ms() - t0 < 1500) { /* read (welcome, assign) until it closes */
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&p, 1, 50) <= 0)
			continue;
		if ((r = read(fd, buf, sizeof(buf))) <= 0) {
			closed_ms = hm_mono_ms() - t0;
			break;
		}
	}
	if (closed_ms < 0)
		fail_msg("a silent agent still connected %d ms after its hello (silence limit "
			 "AgentValidity + HeartbeatInterval = %d ms)",
			 1500, AV_MS + HB_MS);
	assert_true(closed_ms >= AV_MS); /* not before its files could lapse */
	assert_string_equal(node_state("n3", st, sizeof(st)), "lost");
	close(fd);
}

static const char *state_of(hm_coord_t *c, const char *node)
{
	static char st[32];
	hm_coord_node_view_t *v = NULL;
	int n = 0;

	snprintf(st, sizeof(st), "-");
	assert_int_equal(hm_coord_nodes(c, &v, &n), HM_OK);
	for (int i = 0; i < n; i++)
		if (strcmp(v[i].node, node) == 0)
			snprintf(st, sizeof(st), "%s", v[i].state);
	free(v);
	return st;
}

/*
 * After a stall of the coordinator (slurmctld stopped for 4 s): the agents'
 * connections that closed meanwhile and the queued hellos' closed sockets do
 * not make live nodes lost; a node whose agent says hello again within the
 * grace (AgentValidity + HeartbeatInterval) stays up throughout, one that does
 * not is lost when the grace ends; its rack's leader is not voted out for a
 * silence that was the coordinator's own. Engine only (no server, no munge).
 */
static void test_stall_grace(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_err_t err = {0};
	hm_aw_rack_t rk;
	const double t0 = 1000.0, stall = 4.0, t1 = t0 + 0.2 + stall;

	(void)state;
	fixture_conf(&conf);
	conf.heartbeat_ms = HB_MS * 2;   /* 200 ms */
	conf.agent_valid_ms = AV_MS * 5; /* 1,000 ms: grace 1.2 s */
	assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
	assert_int_equal(hm_coord_node_hello(c, "n1", NULL, t0, &err), HM_OK);
	assert_int_equal(hm_coord_node_hello(c, "n2", NULL, t0, &err), HM_OK);
	hm_coord_leaders_check(c, t0 + 1.0); /* the rack elects once an agent was up 1 s */
	assert_true(hm_coord_node_rack(c, "n1", &rk));
	assert_string_equal(rk.leader, "n1");

	/* Stopped from t0 + 0.2 to t1: the server sees a late wake-up. */
	hm_coord_nodes_stalled(c, t1, stall);
	hm_coord_leaders_check(c, t1 + 0.01);
	assert_true(hm_coord_node_rack(c, "n1", &rk));
	assert_string_equal(rk.leader, "n1"); /* not silent: we were */
	/* Both agents had given up on us: their old connections read closed now. */
	hm_coord_node_lost(c, "n1", t1 + 0.02);
	hm_coord_node_lost(c, "n2", t1 + 0.02);
	assert_string_equal(state_of(c, "n1"), "up");
	assert_string_equal(state_of(c, "n2"), "up");
	/* n1's queued hello, then its stale connection closed, then its current hello. */
	assert_int_equal(hm_coord_node_hello(c, "n1", NULL, t1 + 0.05, &err), HM_OK);
	hm_coord_node_lost(c, "n1", t1 + 0.06);
	assert_int_equal(hm_coord_node_hello(c, "n1", NULL, t1 + 0.3, &err), HM_OK);
	hm_coord_leaders_check(c, t1 + 0.5);
	assert_string_equal(state_of(c, "n1"), "up");
	assert_string_equal(state_of(c, "n2"), "up"); /* still within the grace */
	/* The grace is over: n2 never came back, n1 did. */
	hm_coord_leaders_check(c, t1 + 1.3);
	assert_string_equal(state_of(c, "n1"), "up");
	assert_string_equal(state_of(c, "n2"), "lost");
	/* Outside a grace, a closed connection is a loss at once, as before. */
	hm_coord_node_lost(c, "n1", t1 + 1.4);
	assert_string_equal(state_of(c, "n1"), "lost");
	hm_coord_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_silent_agent_lost),
	    cmocka_unit_test(test_stall_grace),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
