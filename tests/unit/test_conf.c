/* Unit tests for harmonics.conf: every key, defaults, and every kind of bad line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_conf.h"
#include "hm_policy.h"

static void fixture_path(char *buf, size_t len, const char *name)
{
	const char *top = getenv("top_srcdir");

	snprintf(buf, len, "%s/tests/fixtures/coord/%s", top ? top : ".", name);
}

static void test_defaults(void **state)
{
	hm_conf_t c;

	hm_conf_defaults(&c);
	assert_non_null(hm_policy_find(c.policy));
	assert_string_equal(c.default_mode, "off");
	assert_string_equal(c.listen_addr, ""); /* the controller's SlurmctldHost address */
	assert_int_equal(c.listen_port, HM_CONF_DEFAULT_PORT);
	assert_true(c.fail_open);
	assert_int_equal(c.request_timeout_ms, 2000);
	assert_int_equal(c.admin_comment_max_bytes, 512);
	assert_string_equal(c.run_dir, "/run/harmonics");
	assert_int_equal(c.heartbeat_ms, 1000);
	assert_int_equal(c.agent_valid_ms, 3000);
	assert_int_equal(c.update_lead_ms, 1000);
	assert_true(c.rack_solve_leaders);
	assert_int_equal(c.rack_timeout_ms, 1000);
	assert_float_equal(c.clock_skew_max_s, 0.001, 1e-12);
}

/* The agent's timing keys: derived from HeartbeatInterval when not given. */
static void test_agent_keys(void **state)
{
	hm_conf_t c;
	hm_err_t err = {0};

	assert_int_equal(hm_conf_load_string("HeartbeatInterval=2s\n", "a.conf", &c, &err), HM_OK);
	assert_int_equal(c.heartbeat_ms, 2000);
	assert_int_equal(c.agent_valid_ms, 6000);
	assert_int_equal(c.update_lead_ms, 2200);
	assert_int_equal(hm_conf_load_string("HeartbeatInterval=200ms AgentValidity=600ms "
					     "UpdateLead=400ms RunDir=/tmp/hm.run/x\n",
					     "a.conf", &c, &err),
			 HM_OK);
	assert_int_equal(c.heartbeat_ms, 200);
	assert_int_equal(c.agent_valid_ms, 600);
	assert_int_equal(c.update_lead_ms, 400);
	assert_string_equal(c.run_dir, "/tmp/hm.run/x");
	assert_int_equal(hm_conf_load_string("HeartbeatInterval=100ms\n", "a.conf", &c, &err),
			 HM_OK);
	assert_int_equal(c.agent_valid_ms, 300);
	assert_int_equal(c.update_lead_ms, 1000);
}

/* UnpacedAfter: three epochs unless given, never under three heartbeats; 0 = never. */
static void test_unpaced_after(void **state)
{
	hm_conf_t c;
	hm_err_t err = {0};

	assert_int_equal(hm_conf_load_string("", "a.conf", &c, &err), HM_OK);
	assert_float_equal(c.unpaced_after_s, 30, 1e-9);
	assert_int_equal(hm_conf_load_string("EpochLength=2m\n", "a.conf", &c, &err), HM_OK);
	assert_float_equal(c.unpaced_after_s, 360, 1e-9);
	assert_int_equal(hm_conf_load_string("EpochLength=0\n", "a.conf", &c, &err), HM_OK);
	assert_float_equal(c.unpaced_after_s, 30, 1e-9);
	assert_int_equal(
	    hm_conf_load_string("EpochLength=100ms HeartbeatInterval=2s\n", "a.conf", &c, &err),
	    HM_OK);
	assert_float_equal(c.unpaced_after_s, 6, 1e-9);
	assert_int_equal(hm_conf_load_string("UnpacedAfter=0\n", "a.conf", &c, &err), HM_OK);
	assert_float_equal(c.unpaced_after_s, 0, 0);
	assert_int_equal(hm_conf_load_string("UnpacedAfter=90s\n", "a.conf", &c, &err), HM_OK);
	assert_float_equal(c.unpaced_after_s, 90, 1e-9);
	assert_int_equal(hm_conf_load_string("\nUnpacedAfter=2s\n", "a.conf", &c, &err),
			 HM_ERR_RANGE);
	assert_non_null(strstr(err.msg, "a.conf:2: UnpacedAfter=2s is shorter than three "
					"heartbeats"));
	assert_non_null(strstr(err.msg, "accepted: 0 = never, or UnpacedAfter >= 3s"));
	assert_int_equal(hm_conf_load_string("UnpacedAfter=soon\n", "a.conf", &c, &err),
			 HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "UnpacedAfter"));
	assert_int_equal(hm_conf_load_string("UnpacedAfter=100000s\n", "a.conf", &c, &err),
			 HM_ERR_RANGE);
}

static void test_full_file(void **state)
{
	char path[4096];
	hm_conf_t c;
	hm_err_t err = {0};

	fixture_path(path, sizeof(path), "harmonics.conf");
	assert_int_equal(hm_conf_load(path, &c, &err), HM_OK);
	assert_string_equal(c.policy, "fair");
	assert_string_equal(c.default_mode, "auto");
	assert_string_equal(c.default_profile, "iter=250ms,comm=40%,bytes=1.2GB");
	assert_float_equal(c.epoch_s, 30, 1e-9);
	assert_int_equal(c.prio_levels, 4);
	assert_int_equal(c.reserved_levels, 1);
	assert_float_equal(c.decision_budget_s, 0.25, 1e-9);
	assert_float_equal(c.guard_s, 0.002, 1e-12);
	assert_float_equal(c.valid_s, 300, 1e-9);
	assert_string_equal(c.topology, "/etc/slurm/topology.conf");
	assert_int_equal(c.gpus_per_node, 4);
	assert_float_equal(c.nic_bps, 200e9, 1);
	assert_float_equal(c.uplink_bps, 800e9, 1);
	assert_string_equal(c.listen_addr, "0.0.0.0");
	assert_int_equal(c.listen_port, 7000);
	assert_string_equal(c.coordinator_host, "ctl-1.example");
	assert_int_equal(c.request_timeout_ms, 1500);
	assert_int_equal(c.conn_timeout_ms, 2000);
	assert_int_equal(c.max_message_bytes, 128 * 1024);
	assert_string_equal(c.run_dir, "/var/run/harmonics-test");
	assert_int_equal(c.heartbeat_ms, 500);
	assert_int_equal(c.agent_valid_ms, 2000);
	assert_int_equal(c.update_lead_ms, 1500);
	assert_false(c.fail_open);
	assert_int_equal(c.log_level, HM_LOG_VERBOSE);
	assert_string_equal(c.state_file, "/var/spool/slurmctld/harmonics.state");
	assert_int_equal(c.admin_comment_max_bytes, 256);
	assert_false(c.rack_solve_leaders);
	assert_int_equal(c.rack_timeout_ms, 250);
	assert_string_equal(c.source, path);
}

/* Round trip: the formatted configuration loads back to the same values. */
static void test_format_roundtrip(void **state)
{
	char path[4096], text[4096];
	hm_conf_t a, b;
	hm_err_t err = {0};

	fixture_path(path, sizeof(path), "harmonics.conf");
	assert_int_equal(hm_conf_load(path, &a, &err), HM_OK);
	hm_conf_format(&a, text, sizeof(text));
	assert_int_equal(hm_conf_load_string(text, "formatted", &b, &err), HM_OK);
	assert_string_equal(a.policy, b.policy);
	assert_float_equal(a.epoch_s, b.epoch_s, 1e-9);
	assert_int_equal(a.request_timeout_ms, b.request_timeout_ms);
	assert_int_equal(a.max_message_bytes, b.max_message_bytes);
	assert_float_equal(a.nic_bps, b.nic_bps, 1);
	assert_int_equal(a.fail_open, b.fail_open);
	assert_string_equal(a.default_profile, b.default_profile);
	assert_string_equal(a.run_dir, b.run_dir);
	assert_float_equal(a.clock_skew_max_s, b.clock_skew_max_s, 1e-12);
	assert_int_equal(a.heartbeat_ms, b.heartbeat_ms);
	assert_int_equal(a.agent_valid_ms, b.agent_valid_ms);
	assert_int_equal(a.update_lead_ms, b.update_lead_ms);
}

/* Each bad line must be refused, naming file:line, the bad text and what is accepted. */
static const struct {
	const char *text;
	int line;
	const char *value;  /* must appear in the message */
	const char *accept; /* must appear in the message */
} bad[] = {
    {"Policy=fair\nBogus=1\n", 2, "Bogus", "accepted"},
    {"Policy=nonesuch\n", 1, "nonesuch", "fair"},
    {"# c\n\nDefaultMode=sometimes\n", 3, "sometimes", "off,auto"},
    {"DefaultProfile=gpt-17\n", 1, "gpt-17", "iter="},
    {"DefaultProfile=iter=250ms,comm=40%\n", 1, "bytes=", "iter="},
    {"DefaultProfile=iter=250ms,comm=140%,bytes=1GB\n", 1, "140%", "accepted"},
    {"EpochLength=10 parsecs\n", 1, "parsecs", "accepted"},
    {"EpochLength=ten\n", 1, "ten", "accepted"},
    {"EpochLength=10ms\n", 1, "10ms", "100ms"},
    {"PriorityLevels=0\n", 1, "0", "1"},
    {"PriorityLevels=8x\n", 1, "8x", "[1, 8]"},
    {"PriorityLevels=16\n", 1, "16", "[1, 8]"},
    {"PriorityLevels=4\nReservedLevels=4\n", 2, "ReservedLevels=4", "accepted"},
    {"DecisionBudget=-1s\n", 1, "-1s", "600"},
    {"Guard=1h\n", 1, "1h", "60"},
    {"GpusPerNode=17\n", 1, "17", "16"},
    {"NicSpeed=fast\n", 1, "fast", "accepted"},
    {"ListenAddress=localhost\n", 1, "localhost", "IPv4"},
    {"ListenAddress=300.1.1.1\n", 1, "300.1.1.1", "a.b.c.d"},
    {"ListenPort=65536\n", 1, "65536", "65535"},
    {"ListenPort=http\n", 1, "http", "65535"},
    {"CoordinatorHost=a/b\n", 1, "a/b", "accepted"},
    {"CoordinatorHost=ctl1,,ctl2\n", 1, "ctl1,,ctl2", "separated by ','"},
    {"CoordinatorHost=ctl1,ctl1\n", 1, "ctl1", "twice"},
    {"CoordinatorHost=a,b,c,d,e,f,g,h,i\n", 1, "a,b,c,d,e,f,g,h,i", "1-8"},
    {"RequestTimeout=0\n", 1, "0", "60"},
    {"ConnectionTimeout=2days\n", 1, "2days", "accepted"},
    {"MaxMessageSize=12\n", 1, "12", "1024"},
    {"FailOpen=perhaps\n", 1, "perhaps", "accepted"},
    {"LogLevel=loud\n", 1, "loud", "debug"},
    {"StateFile=relative/path\n", 1, "relative/path", "absolute"},
    {"AdminCommentMaxBytes=10\n", 1, "10", "64"},
    {"ListenPort=7000\nlistenport=7001\n", 2, "ListenPort", "line 1"},
    {"RunDir=run/harmonics\n", 1, "run/harmonics", "absolute"},
    {"RunDir=/\n", 1, "'/'", "other than /"},
    {"RunDir=/run/../etc\n", 1, "/run/../etc", "'..'"},
    {"RunDir=/run/./h\n", 1, "/run/./h", "'..'"},
    {"HeartbeatInterval=50ms\n", 1, "50ms", "60"},
    {"HeartbeatInterval=2min\n", 1, "2min", "60"},
    {"AgentValidity=forever\n", 1, "forever", "accepted"},
    {"HeartbeatInterval=1s\nAgentValidity=1500ms\n", 2, "AgentValidity=1500ms", ">= 2000ms"},
    {"AgentValidity=1s\n", 1, "AgentValidity=1000ms", ">= 2000ms"},
    {"UpdateLead=1s\nHeartbeatInterval=2s\n", 1, "UpdateLead=1000ms", ">= 2200ms"},
    {"UpdateLead=100ms\n", 1, "100ms", "600"},
    {"RackSolve=everywhere\n", 1, "everywhere", "leaders, coordinator"},
    {"RackTimeout=5ms\n", 1, "5ms", "60"},
    {"Policy\n", 1, "Policy", "Key=Value"},
    {"=fair\n", 1, "=fair", "Key=Value"},
};

static void test_bad_values(void **state)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hm_conf_t c;
		hm_err_t err = {0};
		char where[64];

		hm_conf_defaults(&c);
		c.listen_port = 4242; /* must be untouched on error */
		snprintf(where, sizeof(where), "bad.conf:%d:", bad[i].line);
		if (hm_conf_load_string(bad[i].text, "bad.conf", &c, &err) == HM_OK)
			fail_msg("accepted bad config #%zu: %s", i, bad[i].text);
		if (!strstr(err.msg, where) || !strstr(err.msg, bad[i].value) ||
		    !strstr(err.msg, bad[i].accept))
			fail_msg("config #%zu (%s): message '%s' lacks '%s', '%s' or '%s'", i,
				 bad[i].text, err.msg, where, bad[i].value, bad[i].accept);
		assert_int_equal(c.listen_port, 4242);
	}
}

static void test_missing_file(void **state)
{
	hm_conf_t c;
	hm_err_t err = {0};

	assert_int_equal(hm_conf_load("/nonexistent/harmonics.conf", &c, &err), HM_ERR_IO);
	assert_non_null(strstr(err.msg, "/nonexistent/harmonics.conf"));
}

static void test_paths(void **state)
{
	char buf[4096];
	hm_conf_t c;

	unsetenv("HARMONICS_CONF");
	setenv("SLURM_CONF", "/tmp/cluster/etc/slurm.conf", 1);
	hm_conf_default_path(buf, sizeof(buf));
	assert_string_equal(buf, "/tmp/cluster/etc/harmonics.conf");
	setenv("HARMONICS_CONF", "/x/h.conf", 1);
	hm_conf_default_path(buf, sizeof(buf));
	assert_string_equal(buf, "/x/h.conf");
	unsetenv("HARMONICS_CONF");

	hm_conf_defaults(&c);
	snprintf(c.source, sizeof(c.source), "/srv/etc/harmonics.conf");
	hm_conf_topology_path(&c, buf, sizeof(buf));
	assert_string_equal(buf, "/srv/etc/topology.conf");
	snprintf(c.topology, sizeof(c.topology), "/a/topo.conf");
	hm_conf_topology_path(&c, buf, sizeof(buf));
	assert_string_equal(buf, "/a/topo.conf");
}

/* The key table: every key listed in the messages and in the man-page writer. */
static void test_key_table(void **state)
{
	size_t n = hm_conf_key_count(), need;
	char list[1024], *man = NULL;
	size_t man_len = 0;
	FILE *f = open_memstream(&man, &man_len);
	hm_conf_t c;
	hm_err_t err = {0};

	assert_true(n > 0);
	assert_null(hm_conf_key_info(n));
	need = hm_conf_accepted_keys(list, sizeof(list));
	assert_true(need < sizeof(list));
	assert_int_equal(strlen(list), need);
	assert_int_not_equal(hm_conf_load_string("Bogus=1\n", "k.conf", &c, &err), HM_OK);
	assert_non_null(f);
	hm_conf_keys_man(f);
	fclose(f);
	for (size_t i = 0; i < n; i++) {
		const hm_conf_key_info_t *k = hm_conf_key_info(i);
		char entry[128];

		assert_non_null(k);
		assert_non_null(k->name);
		assert_non_null(k->arg);
		assert_non_null(k->doc);
		if (!strstr(list, k->name) || !strstr(err.msg, k->name))
			fail_msg("key %s missing from the accepted list '%s' or message '%s'",
				 k->name, list, err.msg);
		snprintf(entry, sizeof(entry), ".TP\n.BI %s= ", k->name);
		if (!strstr(man, entry))
			fail_msg("key %s missing from hm_conf_keys_man's output", k->name);
	}
	free(man);
}

/* Index of key name in the table (exact spelling, as the man page writes it), or -1. */
static int table_key(const char *name)
{
	for (size_t i = 0; i < hm_conf_key_count(); i++)
		if (strcmp(hm_conf_key_info(i)->name, name) == 0)
			return (int)i;
	return -1;
}

/*
 * harmonics.conf(5) documents exactly the table's keys, each once: an entry is a
 * ".TP" line followed by ".BI Key= ARG".
 */
static void test_man_page_keys(void **state)
{
	const char *top = getenv("top_srcdir");
	char path[4096], line[1024], prev[1024] = "";
	int seen[64] = {0};
	FILE *f;

	assert_true(hm_conf_key_count() <= sizeof(seen) / sizeof(seen[0]));
	snprintf(path, sizeof(path), "%s/docs/man/harmonics.conf.5", top ? top : ".");
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s (set top_srcdir to the source tree)", path);
	while (fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line + 4, "= \n");
		int k;

		if (strncmp(prev, ".TP", 3) == 0 && strncmp(line, ".BI ", 4) == 0 &&
		    line[4 + len] == '=') {
			line[4 + len] = '\0';
			if ((k = table_key(line + 4)) < 0)
				fail_msg("%s documents %s, which is not a key", path, line + 4);
			seen[k]++;
		}
		snprintf(prev, sizeof(prev), "%s", line);
	}
	fclose(f);
	for (size_t i = 0; i < hm_conf_key_count(); i++)
		if (seen[i] != 1)
			fail_msg("%s documents %s %d times (accepted: once)", path,
				 hm_conf_key_info(i)->name, seen[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),         cmocka_unit_test(test_full_file),
	    cmocka_unit_test(test_format_roundtrip), cmocka_unit_test(test_bad_values),
	    cmocka_unit_test(test_missing_file),     cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_agent_keys),       cmocka_unit_test(test_key_table),
	    cmocka_unit_test(test_unpaced_after),    cmocka_unit_test(test_man_page_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
