/* Unit tests for GPU -> NIC affinity from hwloc XML fixtures of GPU servers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hm_hwnode.h"
#include "hm_topo.h"

static char *fixture(const char *name)
{
	static char path[4096];
	const char *top = getenv("top_srcdir");

	snprintf(path, sizeof(path), "%s/tests/fixtures/topo/%s", top ? top : "..", name);
	return path;
}

static hm_topo_t *gen(const char *spec)
{
	hm_topo_gen_t g;
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	assert_int_equal(hm_topo_gen_parse(spec, &g, &err), HM_OK);
	assert_int_equal(hm_topo_generate(&g, &t, &err), HM_OK);
	return t;
}

static void apply_ok(hm_topo_t *t, int host, const char *xml)
{
	hm_err_t err = {0};

	if (hm_topo_apply_hwloc_xml(t, host, fixture(xml), &err) != HM_OK)
		fail_msg("%s: %s", xml, err.msg);
}

static void test_dgx8(void **state)
{
	/* 8 GPUs, 4 RDMA NICs: one per PCIe switch of 2 GPUs; the i210 and the BMC VGA don't count
	 */
	hm_topo_t *t = gen("racks=1,hosts=2,gpus=8,nics=4");
	const int want[8] = {0, 0, 1, 1, 2, 2, 3, 3};

	apply_ok(t, 1, "dgx8.xml");
	for (int g = 0; g < 8; g++) {
		assert_int_equal(t->hosts[1].gpu_nic[g], want[g]);
		assert_int_equal(t->hosts[0].gpu_nic[g], g % 4); /* other host untouched */
	}
	hm_topo_free(t);
}

static void test_gpu4(void **state)
{
	hm_topo_t *t = gen("racks=1,hosts=1,gpus=4,nics=1");

	apply_ok(t, 0, "gpu4.xml");
	for (int g = 0; g < 4; g++)
		assert_int_equal(t->hosts[0].gpu_nic[g], 0);
	hm_topo_free(t);
}

static void test_eth_fallback(void **state)
{
	hm_topo_t *t = gen("racks=1,hosts=1,gpus=2,nics=2");

	assert_int_equal(t->hosts[0].gpu_nic[0], 0);
	apply_ok(t, 0, "eth2.xml");
	assert_int_equal(t->hosts[0].gpu_nic[0], 1); /* same PCIe switch */
	assert_int_equal(t->hosts[0].gpu_nic[1],
			 0); /* other socket: nearest is the root-complex NIC */
	hm_topo_free(t);
}

static void test_errors(void **state)
{
	hm_topo_t *t = gen("racks=1,hosts=1,gpus=8,nics=1");
	hm_err_t err = {0};
	char path[] = "/tmp/hm_hwloc_test_XXXXXX";
	int fd;

	/* counts disagree: nothing changes */
	assert_int_equal(hm_topo_apply_hwloc_xml(t, 0, fixture("dgx8.xml"), &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "8 GPUs and 4 NICs found"));
	assert_non_null(strstr(err.msg, "'n0001' has 8 GPUs and 1 NICs"));
	assert_int_equal(t->hosts[0].gpu_nic[5], 0);
	assert_int_equal(hm_topo_apply_hwloc_xml(t, 3, fixture("dgx8.xml"), &err), HM_ERR_INVAL);
	/* not XML */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd,
			       "\x7f"
			       "ELF garbage <topology",
			       22),
			 22);
	close(fd);
	assert_int_not_equal(hm_topo_apply_hwloc_xml(t, 0, path, &err), HM_OK);
	assert_non_null(strstr(err.msg, path));
	unlink(path);
	assert_int_not_equal(hm_topo_apply_hwloc_xml(t, 0, "/nonexistent/x.xml", &err), HM_OK);
	assert_non_null(strstr(err.msg, "/nonexistent/x.xml"));
	hm_topo_free(t);
}

/* The node as the agent reports it: NIC names, PCI ids, NUMA, speeds from (fake) sysfs. */
static void test_hwnode_dgx8(void **state)
{
	char sys[] = "/tmp/hm_hwnode_sys_XXXXXX", path[512];
	const char *ib[4] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
	hm_hwnode_t hw;
	hm_err_t err = {0};
	FILE *f;

	assert_non_null(mkdtemp(sys));
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "mkdir -p %s/class/infiniband/%s/ports/1", sys, ib[i]);
		assert_int_equal(system(path), 0);
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/1/rate", sys, ib[i]);
		assert_non_null(f = fopen(path, "w"));
		fprintf(f, i == 3 ? "garbage\n" : "%d Gb/sec (4X NDR)\n", 400 - 100 * i);
		fclose(f);
	}
	if (hm_hwnode_read(fixture("dgx8.xml"), sys, &hw, &err) != HM_OK)
		fail_msg("%s", err.msg);
	assert_int_equal(hw.ngpus, 8);
	assert_int_equal(hw.nnics, 4);
	assert_int_equal(hw.this_system, 0);
	for (int g = 0; g < 8; g++)
		assert_int_equal(hw.gpu_nic[g], g / 2);
	for (int n = 0; n < 4; n++) {
		assert_string_equal(hw.nics[n].name, ib[n]);
		assert_int_equal(hw.nics[n].numa, n / 2); /* two PCIe switches per socket */
		assert_int_equal(hw.nics[n].speed_bps,
				 n == 3 ? 0 : (int64_t)(400 - 100 * n) * 1000000000);
	}
	assert_string_equal(hw.nics[0].pci, "0000:14:00.0");
	/* Not this machine and no sysfs given: no speeds. */
	assert_int_equal(hm_hwnode_read(fixture("dgx8.xml"), NULL, &hw, &err), HM_OK);
	assert_int_equal(hw.nics[0].speed_bps, 0);
	snprintf(path, sizeof(path), "rm -rf %s", sys);
	assert_int_equal(system(path), 0);
}

/* xml_path NULL reads "this machine", where hwloc honours HWLOC_XMLFILE. */
static void test_hwnode_env(void **state)
{
	hm_hwnode_t hw;
	hm_err_t err = {0};

	setenv("HWLOC_XMLFILE", fixture("eth2.xml"), 1);
	assert_int_equal(hm_hwnode_read(NULL, NULL, &hw, &err), HM_OK);
	unsetenv("HWLOC_XMLFILE");
	assert_int_equal(hw.ngpus, 2);
	assert_int_equal(hw.nnics, 2);
	assert_int_equal(hw.gpu_nic[0], 1);
	assert_int_equal(hw.gpu_nic[1], 0);
	assert_int_equal(hw.this_system, 0);
	assert_true(hw.nics[0].name[0] != '\0');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dgx8),         cmocka_unit_test(test_gpu4),
	    cmocka_unit_test(test_eth_fallback), cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_hwnode_dgx8),  cmocka_unit_test(test_hwnode_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
