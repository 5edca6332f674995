/* Unit tests for the topology loaders: Slurm topology.conf, host CSV, format
 * detection, and robustness against truncated, binary and huge input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hm_topo.h"

static char *fixture(const char *name)
{
	static char path[4096];
	const char *top = getenv("top_srcdir");

	snprintf(path, sizeof(path), "%s/tests/fixtures/topo/%s", top ? top : "..", name);
	return path;
}

static hm_topo_t *load_ok(const char *name, const hm_topo_opts_t *opts)
{
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	if (hm_topo_load_file(fixture(name), opts, &t, &err) != HM_OK)
		fail_msg("%s: %s", name, err.msg);
	assert_non_null(t);
	return t;
}

/* Loading must fail with rc, and the message must name the place and the bad part. */
static void load_bad(const char *name, hm_rc_t rc, const char *where, const char *needle)
{
	hm_topo_t *t = (hm_topo_t *)1;
	hm_err_t err = {0};

	assert_int_equal(hm_topo_load_file(fixture(name), NULL, &t, &err), rc);
	assert_null(t);
	if (!strstr(err.msg, where) || !strstr(err.msg, needle))
		fail_msg("%s: message '%s' lacks '%s' or '%s'", name, err.msg, where, needle);
}

static int sw_index(const hm_topo_t *t, const char *name)
{
	for (int i = 0; i < t->nswitches; i++)
		if (strcmp(t->switches[i].name, name) == 0)
			return i;
	fail_msg("no switch %s", name);
	return -1;
}

static double up_bps(const hm_topo_t *t, const char *sw)
{
	const hm_switch_t *s = &t->switches[sw_index(t, sw)];

	assert_int_equal(s->nparents, 1);
	return t->links[s->up_link[0]].capacity_bps;
}

static void test_slurm_tree(void **state)
{
	hm_topo_t *t = load_ok("tree.conf", NULL);
	int l[HM_MAX_ROUTE_LINKS], a = hm_topo_host_index(t, "n01"),
				   b = hm_topo_host_index(t, "n05"),
				   c = hm_topo_host_index(t, "n16");

	assert_int_equal(t->nracks, 4);
	assert_int_equal(t->nhosts, 16);
	assert_int_equal(t->nswitches, 7);
	assert_int_equal(t->nlevels, 3);
	assert_int_equal(hm_topo_gpus(t), 16 * HM_DEFAULT_GPUS_PER_HOST);
	assert_int_equal(t->switches[sw_index(t, "s3")].level, 0);
	assert_int_equal(t->switches[sw_index(t, "m2")].level, 1);
	assert_int_equal(t->switches[sw_index(t, "top")].level, 2);
	assert_int_equal(t->switches[sw_index(t, "top")].nparents, 0);
	/* LinkSpeed in Gbit/s, units accepted, default for s4 */
	assert_float_equal(up_bps(t, "s1"), 200e9, 1);
	assert_float_equal(up_bps(t, "s3"), 100e9, 1);
	assert_float_equal(up_bps(t, "s4"), HM_DEFAULT_UPLINK_BPS, 1);
	assert_float_equal(up_bps(t, "m1"), 800e9, 1);
	assert_float_equal(t->links[t->hosts[a].nic_up_link[0]].capacity_bps, HM_DEFAULT_NIC_BPS,
			   1);
	/* n01 (s1) and n05 (s2) meet at m1; n16 (s4) only at top */
	assert_int_equal(hm_topo_route(t, a, 0, b, 0, 0, l), 4);
	assert_int_equal(t->links[l[1]].lower, sw_index(t, "s1"));
	assert_int_equal(t->links[l[1]].upper, sw_index(t, "m1"));
	assert_int_equal(t->links[l[1]].rack, t->hosts[a].rack);
	assert_int_equal(t->links[l[2]].rack, t->hosts[b].rack);
	assert_int_equal(hm_topo_route(t, a, 0, c, 0, 0, l), 6);
	assert_int_equal(t->links[l[2]].rack, -1); /* m1 -> top: above the racks */
	assert_int_equal(t->links[l[2]].upper, sw_index(t, "top"));
	assert_int_equal(hm_topo_npaths(t, a, c), 1);
	hm_topo_free(t);

	/* loader options: NIC speed, default uplink, GPUs and NICs per host */
	hm_topo_opts_t o = {
	    .nic_bps = 25e9, .uplink_bps = 50e9, .gpus_per_host = 4, .nics_per_host = 2};
	t = load_ok("tree.conf", &o);
	assert_float_equal(up_bps(t, "s4"), 50e9, 1);
	assert_float_equal(up_bps(t, "s1"), 200e9, 1);
	assert_int_equal(hm_topo_gpus(t), 64);
	assert_int_equal(t->hosts[0].nics, 2);
	assert_float_equal(t->links[t->hosts[0].nic_up_link[1]].capacity_bps, 25e9, 1);
	hm_topo_free(t);
}

static void test_slurm_flat(void **state)
{
	hm_topo_t *t = load_ok("flat.conf", NULL);
	int l[HM_MAX_ROUTE_LINKS];

	assert_int_equal(t->nracks, 1);
	assert_int_equal(t->nhosts, 5);
	assert_int_equal(t->nlevels, 1);
	assert_int_equal(t->nlinks, 10);
	assert_int_equal(hm_topo_route(t, hm_topo_host_index(t, "gpu1"), 0,
				       hm_topo_host_index(t, "login"), 0, 0, l),
			 2);
	hm_topo_free(t);
}

static void test_slurm_errors(void **state)
{
	load_bad("bad_unknown_key.conf", HM_ERR_PARSE, "bad_unknown_key.conf:2", "'Speed'");
	load_bad("bad_unknown_key.conf", HM_ERR_PARSE, ":2", "accepted keys: SwitchName");
	load_bad("bad_undefined_switch.conf", HM_ERR_PARSE, "bad_undefined_switch.conf:2",
		 "'s2' listed in Switches= of 'top' is not defined");
	load_bad("bad_two_racks.conf", HM_ERR_PARSE, "bad_two_racks.conf:2",
		 "node 'n4' is in two racks: switch 's1' (line 1)");
	load_bad("bad_loop.conf", HM_ERR_PARSE, "bad_loop.conf:", "loop");
	load_bad("bad_missing_name.conf", HM_ERR_PARSE, "bad_missing_name.conf:2",
		 "missing SwitchName");
	load_bad("bad_hostlist.conf", HM_ERR_PARSE, "bad_hostlist.conf:2", "unterminated '['");
	load_bad("bad_linkspeed.conf", HM_ERR_PARSE, "bad_linkspeed.conf:1", "'fast'");
	load_bad("bad_disconnected.conf", HM_ERR_PARSE, "bad_disconnected.conf", "not connected");
	load_bad("empty.conf", HM_ERR_PARSE, "empty.conf:3", "empty file");
}

static void test_csv(void **state)
{
	hm_topo_t *t = load_ok("hosts.csv", NULL);
	int tor2 = sw_index(t, "tor2");
	int h1 = hm_topo_host_index(t, "h01"), h3 = hm_topo_host_index(t, "h03"),
	    h5 = hm_topo_host_index(t, "h05");

	assert_int_equal(t->nhosts, 6);
	assert_int_equal(t->nracks, 3);
	assert_int_equal(t->nlevels, 3);
	assert_int_equal(t->switches[tor2].nparents, 2); /* under agg1 and agg2 */
	assert_int_equal(t->switches[sw_index(t, "agg3")].level, 1);
	assert_int_equal(t->switches[sw_index(t, "core1")].level, 2);
	/* tor1 and tor2 share agg1: one path through level 1 */
	assert_int_equal(hm_topo_npaths(t, h1, h3), 1);
	/* tor2 -> tor3 meet only at core1, reached through agg1 or agg2 */
	assert_int_equal(hm_topo_npaths(t, h3, h5), 2);
	int l0[HM_MAX_ROUTE_LINKS], l1[HM_MAX_ROUTE_LINKS];
	assert_int_equal(hm_topo_route(t, h3, 0, h5, 0, 0, l0), 6);
	assert_int_equal(hm_topo_route(t, h3, 0, h5, 0, 1, l1), 6);
	assert_int_not_equal(t->links[l0[2]].lower, t->links[l1[2]].lower);
	assert_int_equal(t->links[l0[1]].rack, t->hosts[h3].rack);
	hm_topo_free(t);

	t = load_ok("hosts_2level.csv", NULL);
	assert_int_equal(t->nlevels, 1);
	assert_int_equal(t->nhosts, 3);
	hm_topo_free(t);
}

static void test_csv_columns(void **state)
{
	char spec[] = "host=ip, tor=ASW,agg=PSW,core=DSW";
	char bad1[] = "host=ip,rack=ASW";
	char bad2[] = "host";
	char bad3[] = "host=a,host=b";
	hm_topo_opts_t o = {0};
	hm_err_t err = {0};
	hm_topo_t *t;

	assert_int_equal(hm_topo_csv_columns_parse(spec, &o, &err), HM_OK);
	assert_string_equal(o.col_host, "ip");
	assert_string_equal(o.col_core, "DSW");
	t = load_ok("hosts_named.csv", &o);
	assert_int_equal(t->nhosts, 4);
	assert_int_equal(t->nracks, 2);
	assert_int_equal(t->nlevels, 3);
	assert_true(hm_topo_host_index(t, "10.1.0.3") >= 0);
	hm_topo_free(t);
	/* the default column names are not in that file */
	load_bad("hosts_named.csv", HM_ERR_PARSE, "hosts_named.csv:1", "CSV header with a 'host'");

	hm_topo_opts_t o2 = {0};
	assert_int_equal(hm_topo_csv_columns_parse(bad1, &o2, &err), HM_ERR_PARSE);
	assert_non_null(
	    strstr(err.msg, "unknown role 'rack'; accepted roles: host, tor, agg, core"));
	assert_int_equal(hm_topo_csv_columns_parse(bad2, &o2, &err), HM_ERR_PARSE);
	assert_int_equal(hm_topo_csv_columns_parse(bad3, &o2, &err), HM_ERR_PARSE);

	/* an explicitly named optional column must exist */
	char spec2[] = "agg=PSW";
	hm_topo_opts_t o3 = {0};
	FILE *f = fmemopen((void *)"host,tor\nh1,t1\n", 15, "r");
	assert_int_equal(hm_topo_csv_columns_parse(spec2, &o3, &err), HM_OK);
	assert_int_equal(hm_topo_load_csv(f, "mem.csv", &o3, &t, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "mem.csv:1: the header has no 'PSW' column"));
	fclose(f);
}

static void test_csv_errors(void **state)
{
	load_bad("bad_fields.csv", HM_ERR_PARSE, "bad_fields.csv:3", "2 fields, the header has 3");
	load_bad("bad_empty_host.csv", HM_ERR_PARSE, "bad_empty_host.csv:3", "empty host");
	load_bad("bad_dup_host.csv", HM_ERR_PARSE, "bad_dup_host.csv:4",
		 "'h1' already listed at line 2");
	load_bad("bad_role.csv", HM_ERR_PARSE, "bad_role.csv:3",
		 "'a1' is used as tor here but as agg");
	load_bad("bad_header.csv", HM_ERR_PARSE, "bad_header.csv:1", "not a Slurm topology.conf");
	load_bad("no_such_file.conf", HM_ERR_IO, "no_such_file.conf", "cannot open");
}

/* Write bytes to a temporary file and load it through the format detection. */
static hm_rc_t load_bytes(const void *data, size_t len, hm_err_t *err, char *path)
{
	hm_topo_t *t = NULL;
	hm_rc_t rc;
	int fd;

	strcpy(path, "/tmp/hm_topo_test_XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	rc = hm_topo_load_file(path, NULL, &t, err);
	unlink(path);
	hm_topo_free(t);
	if (rc == HM_OK)
		assert_non_null(t);
	else
		assert_null(t);
	return rc;
}

static char *slurp(const char *name, size_t *len)
{
	FILE *f = fopen(fixture(name), "rb");
	char *buf = malloc(65536);

	assert_non_null(f);
	*len = fread(buf, 1, 65536, f);
	fclose(f);
	return buf;
}

static void test_robustness(void **state)
{
	hm_err_t err = {0};
	char path[64];
	size_t len, big = (1 << 20) + 100;
	char *huge = malloc(big + 32);
	unsigned seed = 12345;

	/* empty file */
	assert_int_equal(load_bytes("", 0, &err, path), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "empty file"));
	/* binary garbage, NUL bytes included */
	const unsigned char bin[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 0xff, '\n', 0x00, 0x10};
	assert_int_equal(load_bytes(bin, sizeof(bin), &err, path), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, ":1: byte 0x7f"));
	/* a 1 MiB line of one name */
	strcpy(huge, "SwitchName=s1 Nodes=");
	memset(huge + 20, 'a', big - 20);
	huge[big] = '\n';
	assert_int_equal(load_bytes(huge, big + 1, &err, path), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, ":1: line of"));
	/* just under the limit: a name that is too long */
	assert_int_equal(load_bytes(huge, 1000000, &err, path), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, ":1:"));
	assert_non_null(strstr(err.msg, "longer than 255"));
	/* a huge CSV row */
	memcpy(huge, "host,tor\nh1,", 12);
	memset(huge + 12, 'b', 900000);
	assert_int_equal(load_bytes(huge, 900012, &err, path), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, ":2:"));
	free(huge);

	/* every truncation of the fixtures: a clean result or a clean parse error */
	const char *files[] = {"tree.conf", "hosts.csv"};
	for (int fi = 0; fi < 2; fi++) {
		char *buf = slurp(files[fi], &len);

		for (size_t cut = 0; cut <= len; cut++) {
			hm_rc_t rc = load_bytes(buf, cut, &err, path);

			assert_true(rc == HM_OK || rc == HM_ERR_PARSE);
			if (rc)
				assert_non_null(strstr(err.msg, path));
		}
		/* random byte changes */
		for (int it = 0; it < 300; it++) {
			char *m = malloc(len);
			memcpy(m, buf, len);
			for (int k = 0; k < 3; k++)
				m[rand_r(&seed) % len] = (char)(rand_r(&seed) & 0xff);
			hm_rc_t rc = load_bytes(m, len, &err, path);
			assert_true(rc == HM_OK || rc == HM_ERR_PARSE || rc == HM_ERR_RANGE);
			free(m);
		}
		free(buf);
	}
}

/* 16,384 hosts (131,072 GPUs) in 512 racks under 16 aggregation switches. */
static void test_large_conf(void **state)
{
	size_t cap = 1 << 16, len = 0;
	char *text = malloc(cap);
	hm_topo_t *t = NULL;
	hm_err_t err = {0};
	FILE *f;

	for (int r = 0; r < 512; r++)
		len += (size_t)snprintf(text + len, cap - len,
					"SwitchName=tor%03d Nodes=n[%05d-%05d] LinkSpeed=400\n",
					r + 1, r * 32 + 1, r * 32 + 32);
	for (int p = 0; p < 16; p++)
		len += (size_t)snprintf(text + len, cap - len,
					"SwitchName=agg%02d Switches=tor[%03d-%03d]\n", p + 1,
					p * 32 + 1, p * 32 + 32);
	len += (size_t)snprintf(text + len, cap - len, "SwitchName=top Switches=agg[01-16]\n");
	assert_true(len < cap);
	f = fmemopen(text, len, "r");
	assert_int_equal(hm_topo_load_slurm(f, NULL, NULL, &t, &err), HM_OK);
	fclose(f);
	assert_int_equal(t->nhosts, 16384);
	assert_int_equal(hm_topo_gpus(t), 131072);
	assert_int_equal(t->nracks, 512);
	assert_int_equal(t->nlevels, 3);
	assert_int_equal(hm_topo_host_index(t, "n16384"), 16383);
	assert_int_equal(t->hosts[16383].rack, 511);
	int l[HM_MAX_ROUTE_LINKS];
	assert_int_equal(hm_topo_route(t, 0, 0, 16383, 0, 0, l), 6);
	assert_int_equal(hm_topo_route(t, 0, 0, 40, 0, 0, l), 4);
	hm_topo_free(t);
	free(text);
}

/* The host cap: two racks of 65,537 hosts each (each expression within the
   hostlist cap) exceed the topology's 131,072 hosts, named on the rack's line. */
static void test_host_cap(void **state)
{
	static const char text[] = "SwitchName=r1 Nodes=a[1-65537]\n"
				   "SwitchName=r2 Nodes=b[1-65537]\n"
				   "SwitchName=top Switches=r[1-2]\n";
	hm_topo_t *t = NULL;
	hm_err_t err = {0};
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");

	(void)state;
	assert_int_equal(hm_topo_load_slurm(f, "cap.conf", NULL, &t, &err), HM_ERR_RANGE);
	fclose(f);
	assert_null(t);
	assert_non_null(strstr(err.msg, "cap.conf:2"));
	assert_non_null(strstr(err.msg, "host 'b65536': more than 131072 hosts in the topology; "
					"accepted up to 131072"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slurm_tree),   cmocka_unit_test(test_slurm_flat),
	    cmocka_unit_test(test_slurm_errors), cmocka_unit_test(test_csv),
	    cmocka_unit_test(test_csv_columns),  cmocka_unit_test(test_csv_errors),
	    cmocka_unit_test(test_robustness),   cmocka_unit_test(test_large_conf),
	    cmocka_unit_test(test_host_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
