/* Unit tests for hm_parse: strict numbers with units. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hm_parse.h"

static void test_long(void **state)
{
	hm_err_t err = {0};
	long v = 0;

	assert_int_equal(hm_parse_long("42", 0, 100, &v, "n", &err), HM_OK);
	assert_int_equal(v, 42);
	assert_int_equal(hm_parse_long("42x", 0, 100, &v, "n", &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "'42x'"));
	assert_int_equal(hm_parse_long("101", 0, 100, &v, "n", &err), HM_ERR_RANGE);
	assert_int_equal(hm_parse_long("", 0, 100, &v, "n", &err), HM_ERR_PARSE);
	assert_int_equal(hm_parse_long(" 1", 0, 100, &v, "n", &err), HM_ERR_PARSE);
	assert_int_equal(hm_parse_long("99999999999999999999999", 0, 100, &v, "n", &err),
			 HM_ERR_PARSE);
}

static void test_units(void **state)
{
	hm_err_t err = {0};
	double v = 0;

	assert_int_equal(hm_parse_duration_s("250ms", 0, 10, &v, "iter", &err), HM_OK);
	assert_float_equal(v, 0.25, 1e-12);
	assert_int_equal(hm_parse_duration_s("2min", 0, 1000, &v, "iter", &err), HM_OK);
	assert_float_equal(v, 120, 1e-9);
	assert_int_equal(hm_parse_duration_s("3 parsecs", 0, 10, &v, "iter", &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "accepted"));
	assert_int_equal(hm_parse_bytes("1.2GB", 0, 1e15, &v, "bytes", &err), HM_OK);
	assert_float_equal(v, 1.2e9, 1);
	assert_int_equal(hm_parse_bytes("1MiB", 0, 1e15, &v, "bytes", &err), HM_OK);
	assert_float_equal(v, 1048576.0, 1e-6);
	assert_int_equal(hm_parse_bandwidth_bps("100Gbps", 0, 1e15, &v, "bw", &err), HM_OK);
	assert_float_equal(v, 1e11, 1);
	assert_int_equal(hm_parse_bandwidth_bps("25", 0, 1e15, &v, "bw", &err), HM_OK);
	assert_float_equal(v, 25e9, 1);
	assert_int_equal(hm_parse_bandwidth_bps("nan", 0, 1e15, &v, "bw", &err), HM_ERR_PARSE);
	assert_int_equal(hm_parse_fraction("40%", &v, "comm", &err), HM_OK);
	assert_float_equal(v, 0.4, 1e-12);
	assert_int_equal(hm_parse_fraction("140%", &v, "comm", &err), HM_ERR_RANGE);
}

static void test_kv(void **state)
{
	char buf[] = "  Policy = harmonics ";
	char *k, *v;
	bool b;
	hm_err_t err = {0};

	assert_true(hm_split_kv(buf, &k, &v));
	assert_string_equal(k, "Policy");
	assert_string_equal(v, "harmonics");
	char bad[] = "=x";
	assert_false(hm_split_kv(bad, &k, &v));
	assert_int_equal(hm_parse_bool("Yes", &b, "flag", &err), HM_OK);
	assert_true(b);
	assert_int_equal(hm_parse_bool("maybe", &b, "flag", &err), HM_ERR_PARSE);
}

/* Whole names of a comma list, with or without blanks; never a part, never empty. */
static void test_name_in_list(void **state)
{
	(void)state;
	assert_true(hm_name_in_list("tree", "topology, cluster_default, tree, block, flat"));
	assert_true(hm_name_in_list("flat", "topology, cluster_default, tree, block, flat"));
	assert_true(hm_name_in_list("topology", "topology, cluster_default, tree"));
	assert_true(hm_name_in_list("crux", "fair,optimal,cassini,crux,harmonics"));
	assert_false(hm_name_in_list("tre", "topology, tree, block"));
	assert_false(hm_name_in_list("ree", "topology, tree, block"));
	assert_false(hm_name_in_list("tree, block", "topology, tree, block"));
	assert_false(hm_name_in_list("", "topology, tree, block"));
	assert_false(hm_name_in_list(NULL, "topology, tree"));
	assert_false(hm_name_in_list(" tree", "topology, tree"));
	assert_false(hm_name_in_list("x", ""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_kv),
		cmocka_unit_test(test_name_in_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
