/* Unit tests: a job is modelled on its partition's topology (Slurm 25.05+
 * topology.yaml with several topologies, docs/topology.md "Several
 * topologies"): the coordinator's engine over tests/fixtures/topo/
 * two_topologies.yaml (the tree "fabric", the default, and the blocks "nvl"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "coord_fixture.h"

static hm_coord_t *planes_coord(void)
{
	char path[4096];
	const char *top = getenv("top_srcdir");
	hm_topo_opts_t o = {.all_topologies = true};
	hm_topo_t *t = NULL;
	hm_coord_t *c = NULL;
	hm_conf_t conf;
	hm_err_t err = {0};

	snprintf(path, sizeof(path), "%s/tests/fixtures/topo/two_topologies.yaml", top ? top : ".");
	if (hm_topo_load_file(path, &o, &t, &err) != HM_OK)
		fail_msg("%s: %s", path, err.msg);
	fixture_conf(&conf);
	snprintf(conf.default_profile, sizeof(conf.default_profile), "resnet50");
	if (hm_coord_create(&conf, t, &c, &err) != HM_OK)
		fail_msg("create: %s", err.msg);
	return c;
}

static void upsert(hm_coord_t *c, uint32_t id, const char *topology)
{
	hm_coord_job_info_t j = {.job_id = id,
				 .uid = 1000,
				 .nodes = "n[1,5]",
				 .mode = "auto",
				 .profile = "resnet50",
				 .topology = topology};
	hm_err_t err = {0};

	if (hm_coord_job_upsert(c, &j, &err) != HM_OK)
		fail_msg("job %u: %s", id, err.msg);
}

/* The topology its status view (harmonicsctl jobs --json) says it is modelled on. */
static const char *view_topology(hm_coord_t *c, uint32_t id)
{
	static hm_coord_job_view_t v;

	assert_int_equal(hm_coord_job(c, id, &v), HM_OK);
	return v.topology;
}

/* Its links by name, ' '-joined, and whether any other job shares each. */
static void links_of(hm_coord_t *c, uint32_t id, char *buf, size_t len, int *nshared)
{
	hm_coord_explain_t *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	assert_int_equal(hm_coord_explain(c, id, x), HM_OK);
	*buf = '\0';
	for (int i = 0; i < x->nlinks; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), " %s", x->links[i].link.name);
	*nshared = x->nshared;
	free(x);
}

static void test_job_on_its_partitions_topology(void **state)
{
	hm_coord_t *c = planes_coord();
	char a[2048], b[2048], d[2048];
	int sa, sb, sd;
	bool changed;
	hm_err_t err = {0};

	(void)state;
	upsert(c, 1, "fabric"); /* PartitionName=train Topology=fabric */
	upsert(c, 2, "nvl");    /* PartitionName=nvl Topology=nvl */
	upsert(c, 3, NULL);     /* a partition without Topology=: the cluster default */
	assert_int_equal(hm_coord_decide(c, 1000.0, &changed, &err), HM_OK);
	assert_int_equal(hm_coord_find(c, 1)->plane, 0);
	assert_int_equal(hm_coord_find(c, 2)->plane, 1);
	assert_int_equal(hm_coord_find(c, 3)->plane, 0);
	assert_string_equal(view_topology(c, 1), "fabric");
	assert_string_equal(view_topology(c, 2), "nvl");
	assert_string_equal(view_topology(c, 3), "fabric");
	links_of(c, 1, a, sizeof(a), &sa);
	links_of(c, 2, b, sizeof(b), &sb);
	links_of(c, 3, d, sizeof(d), &sd);
	/* The tree's spine for 1 and 3, the blocks' switches for 2, never both. */
	assert_non_null(strstr(a, "leaf1->spine"));
	assert_null(strstr(a, "nvl/"));
	assert_non_null(strstr(b, "nvl/nvl1->nvl/nvl1..nvl2"));
	assert_non_null(strstr(b, "nvl/blocks"));
	assert_null(strstr(b, "spine"));
	assert_string_equal(a, d);
	/* 1 and 3 share all 8 links; 2 shares only the 4 NIC links with them. */
	assert_int_equal(sa, 8);
	assert_int_equal(sb, 4);
	/* A partition moved to the other topology (scontrol update): re-derived. */
	upsert(c, 3, "nvl");
	assert_int_equal(hm_coord_find(c, 3)->plane, 1);
	assert_string_equal(view_topology(c, 3), "nvl");
	links_of(c, 3, d, sizeof(d), &sd);
	assert_string_equal(b, d);
	hm_coord_destroy(c);
}

/* A name the file lacks, or a flat topology: the cluster default's links. */
static void test_unknown_and_flat_topologies(void **state)
{
	hm_coord_t *c = planes_coord();
	char a[2048], b[2048];
	int sa, sb;

	(void)state;
	upsert(c, 1, "bogus");
	upsert(c, 2, "none"); /* flat: true */
	assert_int_equal(hm_coord_find(c, 1)->plane, 0);
	assert_true(hm_coord_find(c, 1)->schedulable);
	assert_true(hm_coord_find(c, 2)->schedulable);
	/* The view names the topology it is modelled on: the default for a name the file lacks. */
	assert_string_equal(view_topology(c, 1), "fabric");
	assert_string_equal(view_topology(c, 2), "none"); /* flat: on fabric's links */
	links_of(c, 1, a, sizeof(a), &sa);
	links_of(c, 2, b, sizeof(b), &sb);
	assert_non_null(strstr(a, "leaf1->spine"));
	assert_string_equal(a, b);
	hm_coord_destroy(c);
}

/* scontrol reconfigure re-derives every job: on its own plane again. */
static void test_reconfigure_keeps_planes(void **state)
{
	hm_coord_t *c = planes_coord();
	char b[2048];
	int sb;
	hm_conf_t conf;
	hm_err_t err = {0};

	(void)state;
	upsert(c, 2, "nvl");
	fixture_conf(&conf);
	assert_int_equal(hm_coord_reconfigure(c, &conf, NULL, &err), HM_OK);
	assert_int_equal(hm_coord_find(c, 2)->plane, 1);
	links_of(c, 2, b, sizeof(b), &sb);
	assert_non_null(strstr(b, "nvl/blocks"));
	hm_coord_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_job_on_its_partitions_topology),
	    cmocka_unit_test(test_unknown_and_flat_topologies),
	    cmocka_unit_test(test_reconfigure_keeps_planes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
