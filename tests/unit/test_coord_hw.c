/*
 * The model matches the machine: the coordinator takes each node's GPUs, NICs
 * and GPU -> NIC map from its agent's hwloc report (the recorded fixture
 * tests/fixtures/topo/dgx8.xml: 8 GPUs, 4 RDMA NICs, a NIC per GPU pair), and
 * models each job on the GPUs Slurm allocated. Two jobs on the same servers
 * with different GPUs, hence different NICs, are not modelled as contending;
 * two that share a NIC are (hm_coord_explain).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "coord_fixture.h"
#include "hm_coord_nodes.h"
#include "hm_hwnode.h"
#include "hm_log.h"

static hm_hwnode_t dgx8(void)
{
	char path[4096];
	const char *top = getenv("top_srcdir");
	hm_hwnode_t hw;
	hm_err_t err = {0};

	snprintf(path, sizeof(path), "%s/tests/fixtures/topo/dgx8.xml", top ? top : ".");
	if (hm_hwnode_read(path, NULL, &hw, &err) != HM_OK)
		fail_msg("%s: %s", path, err.msg);
	assert_int_equal(hw.ngpus, 8);
	assert_int_equal(hw.nnics, 4);
	return hw;
}

static hm_coord_t *coord(void)
{
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_err_t err = {0};

	fixture_conf(&conf);
	if (hm_coord_create(&conf, fixture_topo(), &c, &err) != HM_OK)
		fail_msg("%s", err.msg);
	return c;
}

static void add(hm_coord_t *c, uint32_t id, const char *gpu_ids)
{
	hm_coord_job_info_t j = {.job_id = id,
				 .nodes = "n[1-2]",
				 .gpu_ids = gpu_ids,
				 .mode = "auto",
				 .profile = "iter=250ms,comm=40%,bytes=1.2GB"};
	hm_err_t err = {0};

	if (hm_coord_job_upsert(c, &j, &err) != HM_OK)
		fail_msg("job %u: %s", id, err.msg);
}

/* Does job id's explanation list other as sharing one of its links? */
static bool contends(hm_coord_t *c, uint32_t id, const char *other, int *nshared)
{
	hm_coord_explain_t *e = calloc(1, sizeof(*e));
	bool found = false;

	assert_non_null(e);
	assert_int_equal(hm_coord_explain(c, id, e), HM_OK);
	for (int i = 0; i < e->nlinks; i++)
		found |= strstr(e->links[i].others, other) != NULL;
	*nshared = e->nshared;
	free(e);
	return found;
}

static void test_gpu_mask(void **state)
{
	uint32_t m;

	(void)state;
	assert_int_equal(hm_coord_gpu_mask(NULL, "n1", &m), 0);
	assert_int_equal(hm_coord_gpu_mask("", "n1", &m), 0);
	assert_int_equal(hm_coord_gpu_mask("0-3", "n1", &m), 1);
	assert_int_equal(m, 0xf);
	assert_int_equal(hm_coord_gpu_mask("0,2,4-5", "n7", &m), 1);
	assert_int_equal(m, 0x35);
	assert_int_equal(hm_coord_gpu_mask("n1:4-7 n2:0-3", "n2", &m), 1);
	assert_int_equal(m, 0xf);
	assert_int_equal(hm_coord_gpu_mask("n1:4-7 n2:0-3", "n3", &m), 0);
	assert_int_equal(hm_coord_gpu_mask("n1:6 0-1", "n1", &m), 1); /* its own wins */
	assert_int_equal(m, 0x40);
	assert_int_equal(hm_coord_gpu_mask("n1:6 0-1", "n2", &m), 1);
	assert_int_equal(m, 0x3);
	assert_int_equal(hm_coord_gpu_mask("3-1", "n1", &m), -1);
	assert_int_equal(hm_coord_gpu_mask("x", "n1", &m), -1);
	assert_int_equal(hm_coord_gpu_mask("0-40", "n1", &m), -1);
	assert_int_equal(hm_coord_gpu_mask("n1:", "n1", &m), -1);
}

static void test_gpu_ids_format(void **state)
{
	const char *nodes[] = {"n1", "n2", "n3"};
	uint32_t same[] = {0xf, 0xf, 0xf}, per[] = {0xf, 0x30, 0}, m;
	char buf[64], tiny[8];

	(void)state;
	assert_true(hm_coord_gpu_ids_format(nodes, same, 3, buf, sizeof(buf)));
	assert_string_equal(buf, "0-3");
	assert_true(hm_coord_gpu_ids_format(nodes, per, 3, buf, sizeof(buf)));
	assert_string_equal(buf, "n1:0-3 n2:4-5");
	/* What it writes, the engine reads back. */
	assert_int_equal(hm_coord_gpu_mask(buf, "n2", &m), 1);
	assert_int_equal(m, 0x30);
	assert_int_equal(hm_coord_gpu_mask(buf, "n3", &m), 0);
	assert_false(hm_coord_gpu_ids_format(nodes, per, 3, tiny, sizeof(tiny)));
	assert_string_equal(tiny, "");
	assert_false(hm_coord_gpu_ids_format(nodes, per + 2, 1, buf, sizeof(buf)));
}

static void test_nics_from_agents(void **state)
{
	hm_coord_t *c = coord();
	hm_hwnode_t hw = dgx8();
	hm_err_t err = {0};
	int shared, h;

	(void)state;
	add(c, 21, "0-3"); /* GPUs 0-3: NICs 0 and 1 of the dgx8 */
	add(c, 22, "4-7"); /* GPUs 4-7: NICs 2 and 3 */
	/* One NIC per node in topology.conf's model: they share it. */
	assert_true(contends(c, 21, "22", &shared));
	assert_true(shared > 0);
	/* The agents of n1 and n2 report the dgx8: 4 NICs, a GPU pair each. */
	assert_int_equal(hm_coord_node_hello(c, "n1", &hw, 1000.0, &err), HM_OK);
	assert_int_equal(hm_coord_node_hello(c, "n2", &hw, 1000.0, &err), HM_OK);
	h = hm_topo_host_index(c->topo, "n1");
	assert_int_equal(c->topo->hosts[h].nics, 4);
	assert_int_equal(c->topo->hosts[h].gpu_nic[5], 2);
	assert_int_equal(c->topo->hosts[hm_topo_host_index(c->topo, "n3")].nics, 1); /* no agent */
	/* Different GPUs, different NICs: not contending. */
	assert_false(contends(c, 21, "22", &shared));
	assert_int_equal(shared, 0);
	/* A third job on GPUs 0-1 shares NIC 0 with job 21. */
	add(c, 23, "0-1");
	assert_true(contends(c, 21, "23", &shared));
	assert_false(contends(c, 22, "23", &shared));
	assert_false(contends(c, 21, "22", &shared));
	/* A job without GPU indexes is modelled on the first GPUs (0-3 here). */
	add(c, 24, "");
	assert_true(contends(c, 24, "21", &shared));
	hm_coord_destroy(c);
}

static void test_unusable_report(void **state)
{
	hm_coord_t *c = coord();
	hm_hwnode_t hw;
	hm_coord_node_view_t *v = NULL;
	hm_err_t err = {0};
	int n = 0;

	(void)state;
	memset(&hw, 0, sizeof(hw)); /* a node without GPUs (this test machine) */
	hw.nnics = 1;
	assert_int_equal(hm_coord_node_hello(c, "n1", &hw, 1000.0, &err), HM_OK);
	assert_int_equal(c->topo->hosts[hm_topo_host_index(c->topo, "n1")].gpus, 8); /* kept */
	assert_int_equal(hm_coord_nodes(c, &v, &n), HM_OK);
	assert_non_null(strstr(v[0].topo_note, "reports 0 GPUs and 1 NICs"));
	assert_null(strstr(v[0].topo_note, "NicsPerNode/")); /* no key that does not exist */
	free(v);
	/* Indexes the host does not have: the job runs unscheduled, with the reason. */
	{
		hm_coord_job_info_t j = {.job_id = 31,
					 .nodes = "n3",
					 .gpu_ids = "8-9",
					 .mode = "auto",
					 .profile = "iter=250ms,comm=40%,bytes=1.2GB"};
		hm_coord_job_view_t jv;
		bool changed;

		assert_int_equal(hm_coord_job_upsert(c, &j, &err), HM_ERR_INVAL);
		assert_int_equal(hm_coord_decide(c, 1001.0, &changed, &err), HM_OK);
		assert_int_equal(hm_coord_job(c, 31, &jv), HM_OK);
		assert_non_null(strstr(jv.a.reason, "bad GPU indexes '8-9' on n3"));
	}
	hm_coord_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gpu_mask),
	    cmocka_unit_test(test_gpu_ids_format),
	    cmocka_unit_test(test_nics_from_agents),
	    cmocka_unit_test(test_unusable_report),
	};

	hm_log_set_level(HM_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
