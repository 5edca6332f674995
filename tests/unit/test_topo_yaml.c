/* Unit tests for Slurm's topology.yaml (25.05+) and topology/block (23.11+):
 * the strict YAML subset, the schema, the topology a partition picks, block
 * aggregation as Slurm's block_record.c does it, and the topology.yaml writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hm_job.h"
#include "hm_topo.h"

static char *fixture(const char *name)
{
	static char path[4096];
	const char *top = getenv("top_srcdir");

	snprintf(path, sizeof(path), "%s/tests/fixtures/topo/%s", top ? top : "..", name);
	return path;
}

static hm_topo_t *load_named(const char *name, const char *topology)
{
	hm_topo_opts_t o = {.topology_name = topology};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	if (hm_topo_load_file(fixture(name), &o, &t, &err) != HM_OK)
		fail_msg("%s: %s", name, err.msg);
	return t;
}

static int sw_index(const hm_topo_t *t, const char *name)
{
	for (int i = 0; i < t->nswitches; i++)
		if (strcmp(t->switches[i].name, name) == 0)
			return i;
	fail_msg("no switch %s", name);
	return -1;
}

/* The single parent of switch `child` is `parent`. */
static void parent_is(const hm_topo_t *t, const char *child, const char *parent)
{
	const hm_switch_t *s = &t->switches[sw_index(t, child)];

	if (s->nparents != 1 || s->parents[0] != sw_index(t, parent))
		fail_msg("%s: %d parents, first %s; expected %s", child, s->nparents,
			 s->nparents ? t->switches[s->parents[0]].name : "-", parent);
}

/* YAML text through the loader: rc, and the message holds `line` and `needle`. */
static void yaml_case(const char *text, const char *topology, hm_rc_t rc, const char *line,
		      const char *needle)
{
	hm_topo_opts_t o = {.topology_name = topology};
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	hm_topo_t *t = NULL;
	hm_err_t err = {0};
	hm_rc_t got;

	assert_non_null(f);
	got = hm_topo_load_yaml(f, "t.yaml", &o, &t, &err);
	fclose(f);
	if (got != rc || (rc && (!strstr(err.msg, line) || !strstr(err.msg, needle))))
		fail_msg("rc %d (want %d), '%s' lacks '%s' or '%s' for:\n%s", got, rc, err.msg,
			 line, needle, text);
	if (rc)
		assert_null(t);
	else
		assert_non_null(t);
	hm_topo_free(t);
}

static void test_default_is_cluster_default(void **state)
{
	hm_topo_t *t = load_named("topology.yaml", NULL);

	(void)state;
	assert_int_equal(t->nhosts, 4);
	assert_int_equal(t->nracks, 2);
	assert_int_equal(t->nlevels, 2);
	parent_is(t, "s1", "sw_root");
	parent_is(t, "s2", "sw_root");
	assert_int_equal(t->hosts[hm_topo_host_index(t, "node03")].rack, sw_index(t, "s2"));
	hm_topo_free(t);
}

static void test_block_topology_by_name(void **state)
{
	hm_topo_t *t = load_named("topology.yaml", "topo2");

	(void)state;
	/* block_sizes 4, 16: base 4 nodes; 16 = 4 blocks, which covers all four. */
	assert_int_equal(t->nhosts, 16);
	assert_int_equal(t->nracks, 4);
	assert_int_equal(t->nswitches, 5);
	for (int b = 1; b <= 4; b++) {
		char name[8];

		snprintf(name, sizeof(name), "b%d", b);
		parent_is(t, name, "b1..b4");
	}
	assert_int_equal(
	    hm_topo_npaths(t, hm_topo_host_index(t, "node01"), hm_topo_host_index(t, "node16")), 1);
	hm_topo_free(t);
}

static void test_flat_and_unknown_names(void **state)
{
	hm_topo_opts_t o = {.topology_name = "topo3"};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_topo_load_file(fixture("topology.yaml"), &o, &t, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "topology 'topo3' is flat"));
	o.topology_name = "nope";
	assert_int_equal(hm_topo_load_file(fixture("topology.yaml"), &o, &t, &err),
			 HM_ERR_NOTFOUND);
	assert_non_null(strstr(err.msg, "no topology 'nope'; defined: topo1, topo2, topo3"));
	assert_null(t);
}

/* Five blocks, default sizes 1, 2, 4, 8 blocks: b5 is left to the size that covers it. */
static void test_block_conf_aggregation(void **state)
{
	hm_topo_t *t = load_named("block.conf", NULL);

	(void)state;
	assert_int_equal(t->nracks, 5);
	assert_int_equal(t->nhosts, 10);
	parent_is(t, "b1", "b1..b2");
	parent_is(t, "b3", "b3..b4");
	parent_is(t, "b1..b2", "b1..b4");
	parent_is(t, "b3..b4", "b1..b4");
	parent_is(t, "b1..b4", "b1..b5");
	parent_is(t, "b5", "b1..b5");
	assert_int_equal(t->switches[sw_index(t, "b1..b5")].nparents, 0);
	hm_topo_free(t);
}

static void test_block_conf_errors(void **state)
{
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_topo_load_file(fixture("bad_block_sizes.conf"), NULL, &t, &err),
			 HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "bad_block_sizes.conf:3: block size 6"));
	assert_null(t);
}

static void test_block_conf_inline(void **state)
{
	static const struct {
		const char *text, *line, *needle;
	} cases[] = {
	    {"SwitchName=s1 Nodes=n1\nBlockName=b1 Nodes=n2\n", "t.conf:2",
	     "a block line in a file of SwitchName lines (line 1)"},
	    {"BlockName=b1 Nodes=n1 Switches=x\n", "t.conf:1", "on one line"},
	    {"BlockName=b1 Nodes=n[1-2]\nBlockName=b1 Nodes=n3\n", "t.conf:2",
	     "block 'b1' already defined at line 1"},
	    {"BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n2\n", "t.conf:2",
	     "node 'n2' is in two blocks"},
	    {"BlockName=b1 Nodes=n1\nBlockSizes=1\nBlockSizes=2\n", "t.conf:3",
	     "BlockSizes given twice (first at line 2)"},
	    {"BlockName=b1 Nodes=n1\nBlockSizes=x\n", "t.conf:2", "BlockSizes"},
	    {"BlockSizes=2,4\n", "t.conf", "no switches or blocks"},
	    {"BlockName=b1\n", "t.conf", "no block has nodes"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fmemopen((void *)cases[i].text, strlen(cases[i].text), "r");
		hm_topo_t *t = NULL;
		hm_err_t err = {0};

		assert_int_equal(hm_topo_load_slurm(f, "t.conf", NULL, &t, &err), HM_ERR_PARSE);
		fclose(f);
		assert_null(t);
		if (!strstr(err.msg, cases[i].line) || !strstr(err.msg, cases[i].needle))
			fail_msg("case %zu: '%s' lacks '%s' or '%s'", i, err.msg, cases[i].line,
				 cases[i].needle);
	}
}

#define TREE1 "  tree:\n    switches:\n      - switch: s1\n        nodes: n[1-2]\n"

static void test_yaml_forms(void **state)
{
	(void)state;
	/* One topology as a mapping, not a list; quoted values; comments; "...". */
	yaml_case("topology: 'a'   # one\ntree:\n  switches:\n    - switch: \"s1\"\n"
		  "      nodes: n[1-2] # two\n...\n",
		  NULL, HM_OK, "", "");
	/* A list indented as far as its key; a single switch as a mapping. */
	yaml_case("- topology: a\n  tree:\n    switches:\n    - switch: s1\n      nodes: n1\n",
		  NULL, HM_OK, "", "");
	yaml_case("- topology: a\n  tree:\n    switches:\n      switch: s1\n      nodes: n1\n",
		  NULL, HM_OK, "", "");
	/* Flow list of block sizes, yes/no booleans; the default is the first
	   cluster_default. */
	yaml_case("- topology: a\n" TREE1 "- topology: b\n  cluster_default: yes\n  block:\n"
		  "    block_sizes: [2, 4]\n    blocks:\n      - block: b1\n        nodes: m[1-2]\n"
		  "      - {block: b2}\n",
		  NULL, HM_ERR_PARSE, "t.yaml:13", "flow mappings");
	yaml_case(
	    "- topology: a\n" TREE1 "- topology: b\n  cluster_default: yes\n  block:\n"
	    "    block_sizes: [2, 4]\n    blocks:\n      - block: b1\n        nodes: m[1-2]\n",
	    NULL, HM_OK, "", "");
}

static void test_yaml_errors(void **state)
{
	static const struct {
		const char *text, *line, *needle;
	} cases[] = {
	    {"- topology: a\n\ttree: x\n", "t.yaml:2", "tab in the indentation"},
	    {"- topology: &x a\n" TREE1, "t.yaml:1", "anchors"},
	    {"- topology: a\n  tree: *x\n", "t.yaml:2", "aliases"},
	    {"- topology: a\n  tree: !!map\n", "t.yaml:2", "tags"},
	    {"- topology: a\n  tree: |\n    x\n", "t.yaml:2", "block scalars"},
	    {"- topology: a\n  topology: b\n", "t.yaml:2",
	     "key 'topology' given twice (first at line 1)"},
	    {"- topology: a\n" TREE1 "        link_speed: 1\n", "t.yaml:6",
	     "unknown key 'link_speed' in a switch; accepted: switch, children, nodes"},
	    /* An empty key and parts of accepted names (the fuzzer found a read past the
	       accepted list on the empty one). */
	    {"- topology: a\n  \"\": x\n", "t.yaml:2", "unknown key '' in a topology"},
	    {"- topology: a\n  tre: x\n", "t.yaml:2", "unknown key 'tre' in a topology"},
	    {"- topology: a\n  ree: x\n", "t.yaml:2", "unknown key 'ree' in a topology"},
	    {"- topology: a\n  flat, tree: x\n", "t.yaml:2", "unknown key 'flat, tree'"},
	    {"- tree:\n    switches: []\n  topology: a\n", "t.yaml:1",
	     "'topology' must be the first key"},
	    {"- topology: a\n" TREE1 "  flat: true\n", "t.yaml:1",
	     "more than one of tree, block, flat"},
	    {"- topology: a\n  cluster_default: maybe\n" TREE1, "t.yaml:2",
	     "'maybe' is not a boolean"},
	    {"- topology: a\n" TREE1 "- topology: a\n  flat: true\n", "t.yaml:6",
	     "topology 'a' defined twice (first at line 1)"},
	    {"- topology: a\n  tree:\n    switches:\n      - switch: s1\n        nodes: n1\n"
	     "          n2\n",
	     "t.yaml:6", "multi-line values are not accepted"},
	    {"- topology: a\n  tree:\n    switches:\n      - nodes: n1\n", "t.yaml:4",
	     "a switch without 'switch'"},
	    {"- topology: a\n  tree:\n    switches:\n      - switch: s1\n        nodes: n1\n"
	     "      - switch: s1\n        nodes: n2\n",
	     "t.yaml:6", "switch 's1' already defined at line 4"},
	    {"- topology: a\n  tree:\n    switches:\n      - switch: s1\n        nodes: n1\n"
	     "      - switch: top\n        children: s9\n",
	     "t.yaml:6", "switch 's9' listed in Switches= of 'top' is not defined"},
	    {"- topology: a\n  block:\n    block_sizes: [4, 6]\n    blocks:\n      - block: b\n"
	     "        nodes: n[1-4]\n",
	     "t.yaml:3", "block size 6"},
	    {"- topology: a\n  block:\n    block_sizes: [4, x]\n", "t.yaml:3", "block_sizes"},
	    {"- topology: a\n  block:\n    block_sizes: [4,\n", "t.yaml:3", "no closing ']'"},
	    /* A bad item inside a flow list (the fuzzer found a NULL read there). */
	    {"- topology: a\n  block:\n    block_sizes: [\"4\n", "t.yaml:3",
	     "unterminated double-quoted value"},
	    {"- topology: a\n  block:\n    block_sizes: [&x 4]\n", "t.yaml:3", "anchors"},
	    {"- topology: a\n  tree: x\n", "t.yaml:2",
	     "tree is a scalar where a mapping is expected"},
	    {"- topology: a\n  tree:\n", "t.yaml:2", "tree is empty"},
	    {"- topology: \"a\n", "t.yaml:1", "unterminated double-quoted value"},
	    {"- topology: \"a\\q\"\n", "t.yaml:1", "escape '\\q'"},
	    {"- topology: a\n---\n- topology: b\n", "t.yaml:2", "one document is accepted"},
	    {"%YAML 1.1\n- topology: a\n", "t.yaml:1", "directives"},
	    {"- topology: a\n...\n- topology: b\n", "t.yaml:3", "content after the document end"},
	    {"- topology: a\n   x: 1\n", "t.yaml:2", "more indented than the key of line 1"},
	    {"- topology: a\n  b: c: d\n", "t.yaml:2", "cannot hold ': '"},
	    {"just text\n", "t.yaml:1", "the document is a scalar"},
	    {"# nothing\n", "t.yaml", "empty document"},
	    {"[]\n", "t.yaml:1", "no topologies"},
	    {"- topology: a\n  flat: true\n", "t.yaml:1", "topology 'a' is flat"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		yaml_case(cases[i].text, NULL, HM_ERR_PARSE, cases[i].line, cases[i].needle);
	/* Deep nesting is bounded. */
	{
		char deep[4096] = "";

		for (int d = 0; d < 40; d++) {
			size_t n = strlen(deep);

			snprintf(deep + n, sizeof(deep) - n, "%*sk%d:\n", 2 * d, "", d);
		}
		yaml_case(deep, NULL, HM_ERR_PARSE, "t.yaml:", "nested deeper than");
	}
}

static void test_fixture_prefixes(void **state)
{
	/* Every truncation of the fixture loads or fails cleanly (no crash, no leak). */
	FILE *f = fopen(fixture("topology.yaml"), "r");
	char buf[4096];
	size_t len;

	(void)state;
	assert_non_null(f);
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	for (size_t n = 1; n < len; n++) {
		FILE *m = fmemopen(buf, n, "r");
		hm_topo_t *t = NULL;
		hm_err_t err = {0};
		hm_rc_t rc = hm_topo_load_yaml(m, "p.yaml", NULL, &t, &err);

		fclose(m);
		assert_true(rc == HM_OK ? t != NULL : t == NULL && err.msg[0]);
		hm_topo_free(t);
	}
}

static void test_partition_topology(void **state)
{
	char path[] = "/tmp/hm_test_slurmconf_XXXXXX", name[64];
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	hm_err_t err = {0};

	(void)state;
	assert_non_null(f);
	fputs("ClusterName=c\nPartitionName=a Nodes=n1\nPartitionName=DEFAULT Topology=topo2 # d\n"
	      "partitionname=b Nodes=n2\nPartitionName=c Nodes=n3 Topology=topo1\n",
	      f);
	fclose(f);
	assert_int_equal(hm_topo_partition_topology(path, "a", name, sizeof(name), &err), HM_OK);
	assert_string_equal(name, "");
	assert_int_equal(hm_topo_partition_topology(path, "b", name, sizeof(name), &err), HM_OK);
	assert_string_equal(name, "topo2");
	assert_int_equal(hm_topo_partition_topology(path, "c", name, sizeof(name), &err), HM_OK);
	assert_string_equal(name, "topo1");
	assert_int_equal(hm_topo_partition_topology(path, "z", name, sizeof(name), &err),
			 HM_ERR_NOTFOUND);
	assert_non_null(strstr(err.msg, "no partition 'z'"));
	unlink(path);
}

/* Every topology as a plane of one link model (two_topologies.yaml). */
static hm_topo_t *load_all(const char *name)
{
	hm_topo_opts_t o = {.all_topologies = true, .topology_name = "ignored"};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	if (hm_topo_load_file(fixture(name), &o, &t, &err) != HM_OK)
		fail_msg("%s: %s", name, err.msg);
	return t;
}

/* The route's links as "a>b" names (switch or host:nic ends), ';'-separated. */
static void route_names(const hm_topo_t *t, int plane, const char *a, const char *b, char *buf,
			size_t len)
{
	int links[HM_MAX_ROUTE_LINKS],
	    n = hm_topo_route_plane(t, plane, hm_topo_host_index(t, a), 0, hm_topo_host_index(t, b),
				    0, 0, links);

	*buf = '\0';
	if (n < 0) {
		snprintf(buf, len, "none");
		return;
	}
	for (int i = 0; i < n; i++) {
		const hm_link_t *l = &t->links[links[i]];
		const char *lo = l->host >= 0 ? t->hosts[l->host].name : t->switches[l->lower].name;
		const char *up = l->host >= 0 ? "nic" : t->switches[l->upper].name;
		bool goes_up = l->kind == HM_LINK_NIC_UP || l->kind == HM_LINK_SW_UP;

		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s>%s", i ? ";" : "",
			 goes_up ? lo : up, goes_up ? up : lo);
	}
}

static void test_planes_load(void **state)
{
	hm_topo_t *t = load_all("two_topologies.yaml"), *c;
	char r[512];

	(void)state;
	/* Plane 0 is the cluster default: its racks, hosts and NIC links. */
	assert_int_equal(t->nplanes, 3);
	assert_int_equal(t->nhosts, 8);
	assert_int_equal(t->nracks, 2);
	assert_string_equal(t->planes[0].name, "fabric");
	assert_string_equal(t->planes[0].kind, "tree");
	assert_string_equal(t->planes[1].kind, "block");
	assert_string_equal(t->planes[2].kind, "flat");
	assert_int_equal(t->planes[1].nmissing, 2); /* n9, n10: not in fabric */
	assert_int_equal(hm_topo_plane_index(t, NULL), 0);
	assert_int_equal(hm_topo_plane_index(t, ""), 0);
	assert_int_equal(hm_topo_plane_index(t, "fabric"), 0);
	assert_int_equal(hm_topo_plane_index(t, "nvl"), 1);
	assert_int_equal(hm_topo_plane_index(t, "none"), 2);
	assert_int_equal(hm_topo_plane_index(t, "topo1"), -1);
	/* harmonicsctl topology --format list: nodes outside the default only when some are. */
	hm_topo_plane_describe(t, 1, r, sizeof(r));
	assert_string_equal(r, "nvl block: 8 nodes (2 more not in fabric: not modelled), "
			       "5 blocks, 8 switches");
	t->planes[1].nmissing = 0;
	hm_topo_plane_describe(t, 1, r, sizeof(r));
	assert_string_equal(r, "nvl block: 8 nodes, 5 blocks, 8 switches");
	t->planes[1].nmissing = 2;
	/* The same two hosts, routed in each topology: NICs shared, switches not. */
	route_names(t, 0, "n1", "n5", r, sizeof(r));
	assert_string_equal(r, "n1>nic;leaf1>spine;spine>leaf2;nic>n5");
	route_names(t, 1, "n1", "n5", r, sizeof(r));
	assert_string_equal(r, "n1>nic;nvl/nvl1>nvl/nvl1..nvl2;nvl/nvl1..nvl2>nvl/blocks;"
			       "nvl/blocks>nvl/nvl3..nvl4;nvl/nvl3..nvl4>nvl/nvl3;nic>n5");
	route_names(t, 1, "n1", "n2", r, sizeof(r));
	assert_string_equal(r, "n1>nic;nic>n2");
	route_names(t, 2, "n1", "n5", r, sizeof(r)); /* flat: the cluster default's links */
	assert_string_equal(r, "n1>nic;leaf1>spine;spine>leaf2;nic>n5");
	assert_int_equal(hm_topo_npaths_plane(t, 1, 0, 4), 1);
	assert_int_equal(hm_topo_npaths_plane(t, 3, 0, 4), 0);
	/* Links of the other planes belong to no rack (the Global Coordinator's). */
	for (int l = 0; l < t->nlinks; l++)
		if (t->links[l].lower >= t->planes[1].sw_first)
			assert_int_equal(t->links[l].rack, -1);
	/* A clone and a reshape keep the planes. */
	c = hm_topo_clone(t);
	assert_non_null(c);
	route_names(c, 1, "n3", "n8", r, sizeof(r));
	assert_non_null(strstr(r, "nvl/blocks"));
	hm_topo_free(c);
	{
		hm_host_t shape[8];
		hm_err_t err = {0};

		memcpy(shape, t->hosts, sizeof(shape));
		shape[0].nics = 2;
		assert_int_equal(hm_topo_reshape(t, shape, &c, &err), HM_OK);
		assert_int_equal(c->nplanes, 3);
		assert_int_equal(c->nswitches, t->nswitches);
		assert_int_equal(c->nlinks, t->nlinks + 2);
		route_names(c, 1, "n1", "n5", r, sizeof(r));
		assert_string_equal(r, "n1>nic;nvl/nvl1>nvl/nvl1..nvl2;nvl/nvl1..nvl2>nvl/blocks;"
				       "nvl/blocks>nvl/nvl3..nvl4;nvl/nvl3..nvl4>nvl/nvl3;nic>n5");
		hm_topo_free(c);
	}
	hm_topo_free(t);
	/* Without all_topologies the file gives one topology, no planes. */
	t = load_named("two_topologies.yaml", "nvl");
	assert_int_equal(t->nplanes, 0);
	assert_int_equal(t->nhosts, 10);
	assert_int_equal(hm_topo_plane_index(t, "anything"), 0);
	hm_topo_free(t);
}

/* A job in each partition is modelled on its own topology: its traffic uses
 * that plane's switch links, and two jobs of different topologies share only
 * NIC links. */
static void test_planes_traffic(void **state)
{
	char path[] = "/tmp/hm_test_slurmconf_XXXXXX", name[64];
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	hm_topo_t *t = load_all("two_topologies.yaml");
	hm_slot_t slots[2] = {{.host = 0, .gpus = 8}, {.host = 4, .gpus = 8}};
	hm_placement_t pl = {2, slots};
	hm_profile_t prof;
	hm_traffic_t tr[2];
	hm_err_t err = {0};
	const char *parts[2] = {"train", "nvl"};

	(void)state;
	assert_non_null(f);
	fputs("PartitionName=train Nodes=n[1-8] Topology=fabric Default=YES\n"
	      "PartitionName=nvl Nodes=n[1-8] Topology=nvl\n",
	      f);
	fclose(f);
	assert_int_equal(hm_profile_from_model("resnet50", &prof, &err), HM_OK);
	for (int j = 0; j < 2; j++) {
		int plane;

		assert_int_equal(
		    hm_topo_partition_topology(path, parts[j], name, sizeof(name), &err), HM_OK);
		plane = hm_topo_plane_index(t, name);
		assert_int_equal(plane, j);
		assert_int_equal(hm_traffic_derive_plane(t, plane, &prof, &pl, 0, &tr[j], &err),
				 HM_OK);
		for (int i = 0; i < tr[j].phases[0].nlinks; i++) {
			const hm_link_t *l = &t->links[tr[j].phases[0].links[i]];
			int sw = l->host >= 0 ? -1 : l->lower;

			/* Switch links of its own plane only. */
			if (sw >= 0)
				assert_true(j == 0 ? sw < t->planes[1].sw_first
						   : sw >= t->planes[1].sw_first);
		}
	}
	/* train: 2 NIC links per direction pair + 2 x (leaf-spine up and down) = 8;
	   nvl: 4 NIC links + 2 x 4 block links = 12; common: the 4 NIC links. */
	assert_int_equal(tr[0].phases[0].nlinks, 8);
	assert_int_equal(tr[1].phases[0].nlinks, 12);
	{
		int common = 0;

		for (int a = 0; a < tr[0].phases[0].nlinks; a++)
			for (int b = 0; b < tr[1].phases[0].nlinks; b++)
				common += tr[0].phases[0].links[a] == tr[1].phases[0].links[b];
		assert_int_equal(common, 4);
	}
	hm_traffic_free(&tr[0]);
	hm_traffic_free(&tr[1]);
	/* No such plane: no route, named. */
	slots[1].host = hm_topo_host_index(t, "n8");
	assert_int_equal(hm_traffic_derive_plane(t, 5, &prof, &pl, 0, &tr[1], &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "no route from host n1 to host n8"));
	unlink(path);
	hm_topo_free(t);
}

/* Written topology.yaml loads to the same racks, and writes the same text again. */
static void test_write_yaml_round_trip(void **state)
{
	hm_topo_t *t = load_named("tree.conf", NULL), *u = NULL;
	char *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	FILE *f = open_memstream(&a, &alen);
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_topo_write_yaml(t, "fabric", f, &err), HM_OK);
	fclose(f);
	f = fmemopen(a, alen, "r");
	if (hm_topo_load_yaml(f, "w.yaml", NULL, &u, &err) != HM_OK)
		fail_msg("%s\n%s", err.msg, a);
	fclose(f);
	assert_int_equal(u->nhosts, t->nhosts);
	assert_int_equal(u->nracks, t->nracks);
	assert_int_equal(u->nswitches, t->nswitches);
	for (int h = 0; h < t->nhosts; h++) {
		int uh = hm_topo_host_index(u, t->hosts[h].name);

		assert_true(uh >= 0);
		assert_string_equal(u->switches[u->hosts[uh].rack].name,
				    t->switches[t->hosts[h].rack].name);
	}
	f = open_memstream(&b, &blen);
	assert_int_equal(hm_topo_write_yaml(u, "fabric", f, &err), HM_OK);
	fclose(f);
	assert_string_equal(a, b);
	assert_non_null(strstr(a, "- topology: fabric\n  cluster_default: true\n  tree:\n"));
	assert_int_equal(hm_topo_write_yaml(t, "bad name", stdout, &err), HM_ERR_INVAL);
	free(a);
	free(b);
	hm_topo_free(t);
	hm_topo_free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_is_cluster_default),
	    cmocka_unit_test(test_block_topology_by_name),
	    cmocka_unit_test(test_flat_and_unknown_names),
	    cmocka_unit_test(test_block_conf_aggregation),
	    cmocka_unit_test(test_block_conf_errors),
	    cmocka_unit_test(test_block_conf_inline),
	    cmocka_unit_test(test_yaml_forms),
	    cmocka_unit_test(test_yaml_errors),
	    cmocka_unit_test(test_fixture_prefixes),
	    cmocka_unit_test(test_partition_topology),
	    cmocka_unit_test(test_write_yaml_round_trip),
	    cmocka_unit_test(test_planes_load),
	    cmocka_unit_test(test_planes_traffic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
