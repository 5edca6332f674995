/*
 * The job's class as NCCL's network knobs (src/pace/nccl/nccl_class.c): the
 * DSCP / service-level tables, and ncclConfig_t.trafficClass chosen from the
 * node's RDMA link layers, read from a fake sysfs tree built here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "nccl_class.h"

static char root[] = "/tmp/test_nccl_class.XXXXXX";
static char ib[600];

/* Add device dev with port 1 of the given link layer ("Ethernet", "InfiniBand"). */
static void add_port(const char *dev, const char *port, const char *link_layer)
{
	char path[900];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", ib, dev);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/ports", ib, dev);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/ports/%s", ib, dev, port);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/ports/%s/link_layer", ib, dev, port);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", link_layer);
	fclose(f);
}

static void test_tables(void **state)
{
	/* No class on unmarked traffic's code points (DSCP 0, SL 0) by default. */
	static const int tc[8] = {184, 136, 104, 72, 40, 64, 32, 32};

	unsetenv("HARMONICS_CLASS_DSCP");
	unsetenv("HARMONICS_CLASS_SL");
	for (int c = 0; c < 8; c++) {
		assert_int_equal(hm_nccl_class_tc(c), tc[c]);
		assert_int_equal(hm_nccl_class_sl(c), c + 1);
	}
	/* harmonics.conf's tables, as the SPANK plugin exports them; a broken one is
	   the default. */
	setenv("HARMONICS_CLASS_DSCP", "46,34,26,18,10,0,8,8", 1);
	setenv("HARMONICS_CLASS_SL", "0,1,2,3,4,5,6,7", 1);
	assert_int_equal(hm_nccl_class_tc(5), 0);
	assert_int_equal(hm_nccl_class_sl(0), 0);
	setenv("HARMONICS_CLASS_DSCP", "46,34,26", 1);
	assert_int_equal(hm_nccl_class_tc(5), 64);
	unsetenv("HARMONICS_CLASS_DSCP");
	unsetenv("HARMONICS_CLASS_SL");
	assert_int_equal(hm_nccl_class_tc(8), -1);
	assert_int_equal(hm_nccl_class_sl(-1), -1);
	assert_int_equal(hm_nccl_config_traffic_class(8, ib), -1);
	assert_int_equal(hm_nccl_config_traffic_class(-1, ib), -1);
}

static void test_link_layers(void **state)
{
	/* No RDMA device at all (sockets): the service level, harmless. */
	assert_int_equal(hm_nccl_config_traffic_class(1, "/nonexistent/infiniband"), 2);
	assert_int_equal(mkdir(ib, 0755), 0);
	assert_int_equal(hm_nccl_config_traffic_class(1, ib), 2);
	/* Only RoCE ports: the traffic class (DSCP << 2). */
	add_port("mlx5_0", "1", "Ethernet");
	add_port("mlx5_1", "1", "Ethernet");
	assert_int_equal(hm_nccl_config_traffic_class(1, ib), 136);
	assert_int_equal(hm_nccl_config_traffic_class(0, ib), 184);
	/* One InfiniBand port: SL, since NCCL would take 136 as SL 8 there. */
	add_port("mlx5_2", "1", "InfiniBand");
	assert_int_equal(hm_nccl_config_traffic_class(1, ib), 2);
	assert_int_equal(hm_nccl_config_traffic_class(6, ib), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tables),
	    cmocka_unit_test(test_link_layers),
	};
	char cmd[700];
	int rc;

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(ib, sizeof(ib), "%s/infiniband", root);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		fprintf(stderr, "test_nccl_class: could not remove %s\n", root);
	return rc;
}
