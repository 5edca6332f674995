/* Unit tests for hm_hostlist: Slurm hostlist expressions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_hostlist.h"

/* Expand expr and compare with the space-separated expected names. */
static void expect_names(const char *expr, const char *expected)
{
	char **names = NULL;
	int n = -1, i = 0;
	hm_err_t err = {0};
	char *copy = strdup(expected), *save = NULL;

	assert_int_equal(hm_hostlist_expand(expr, &names, &n, &err), HM_OK);
	for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save), i++) {
		assert_true(i < n);
		assert_string_equal(names[i], tok);
	}
	assert_int_equal(i, n);
	hm_hostlist_free(names, n);
	free(copy);
}

static void expect_error(const char *expr, hm_rc_t rc, const char *needle)
{
	char **names = (char **)1;
	int n = -1;
	hm_err_t err = {0};

	assert_int_equal(hm_hostlist_expand(expr, &names, &n, &err), rc);
	assert_null(names);
	assert_int_equal(n, 0);
	if (!strstr(err.msg, needle))
		fail_msg("'%s': message '%s' lacks '%s'", expr, err.msg, needle);
}

static void test_simple(void **state)
{
	expect_names("login", "login");
	expect_names("n[1-3]", "n1 n2 n3");
	expect_names("n[01-03],gpu[1-2,7]", "n01 n02 n03 gpu1 gpu2 gpu7");
	expect_names("n[8-11]", "n8 n9 n10 n11");
	expect_names("n[098-101]", "n098 n099 n100 n101");
	expect_names(" a,b ", "a b");
	expect_names("rack[1-2]-ib", "rack1-ib rack2-ib");
	expect_names("[1-2]", "1 2");
}

static void test_cartesian(void **state)
{
	expect_names("a[1-2]b[3-4]", "a1b3 a1b4 a2b3 a2b4");
	expect_names("r[1-2]n[01-02],x", "r1n01 r1n02 r2n01 r2n02 x");
}

static void test_large(void **state)
{
	char **names = NULL;
	int n = 0;
	hm_err_t err = {0};

	assert_int_equal(hm_hostlist_expand("n[00001-16384]", &names, &n, &err), HM_OK);
	assert_int_equal(n, 16384);
	assert_string_equal(names[0], "n00001");
	assert_string_equal(names[16383], "n16384");
	hm_hostlist_free(names, n);
	hm_hostlist_free(NULL, 0);
}

static void test_errors(void **state)
{
	expect_error("n[1-3", HM_ERR_PARSE, "unterminated");
	expect_error("n[3-1]", HM_ERR_PARSE, "reversed range 3-1");
	expect_error("a,,b", HM_ERR_PARSE, "empty element");
	expect_error("a,", HM_ERR_PARSE, "empty element");
	expect_error(",a", HM_ERR_PARSE, "empty element");
	expect_error("", HM_ERR_PARSE, "empty expression");
	expect_error("n[]", HM_ERR_PARSE, "empty range");
	expect_error("n[1-]", HM_ERR_PARSE, "expected a number");
	expect_error("n[a-b]", HM_ERR_PARSE, "expected a number");
	expect_error("n[1[2]]", HM_ERR_PARSE, "'['");
	expect_error("n1]", HM_ERR_PARSE, "']' without '['");
	expect_error("n[1-2x]", HM_ERR_PARSE, "unexpected 'x'");
	expect_error("a b", HM_ERR_PARSE, "0x20");
	expect_error("n[0-2000000]", HM_ERR_RANGE, "expands past");
	expect_error("n[1-131073]", HM_ERR_RANGE, "expands past 131072 names");
	expect_error("n[1-65536],m[1-65537]", HM_ERR_RANGE, "expands past 131072 names");
	/* The fuzzer's slow unit: 4 x 8^6 names from seven small brackets. */
	expect_error("x[1-4]a[1-8]b[1-8]c[1-8]d[1-8]e[1-8]f[1-8]", HM_ERR_RANGE, "expands past");
	expect_error("a[1-1000]b[1-1000]c[1-1000]", HM_ERR_RANGE, "expands past");
	expect_error("n[1-9999999999]", HM_ERR_PARSE, "too large");
}

/* Random expressions over the syntax characters: a result or a clean error, never a crash. */
static void test_random(void **state)
{
	const char alphabet[] = "n[]-,0123456789x \t";
	unsigned seed = 4242;
	char expr[24];
	int ok = 0;

	for (int it = 0; it < 50000; it++) {
		size_t len = (size_t)(rand_r(&seed) % (sizeof(expr) - 1));
		char **names = NULL;
		int n = 0;
		hm_err_t err = {0};
		hm_rc_t rc;

		for (size_t i = 0; i < len; i++)
			expr[i] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
		expr[len] = '\0';
		rc = hm_hostlist_expand(expr, &names, &n, &err);
		if (rc == HM_OK) {
			assert_true(n >= 1);
			for (int i = 0; i < n; i++)
				assert_true(names[i][0] != '\0');
			ok++;
		} else {
			assert_true(rc == HM_ERR_PARSE || rc == HM_ERR_RANGE);
			assert_true(err.msg[0] != '\0');
			assert_null(names);
		}
		hm_hostlist_free(names, n);
	}
	assert_true(ok > 100); /* the generator does reach valid expressions */
}

/* Compress names (space-separated), expect text, and expand back to the same names. */
static void expect_compress(const char *names_sp, const char *expected)
{
	char *copy = strdup(names_sp), *save = NULL, *names[32], *got;
	int n = 0;

	for (char *tok = strtok_r(copy, " ", &save); tok && n < 32;
	     tok = strtok_r(NULL, " ", &save))
		names[n++] = tok;
	got = hm_hostlist_compress(names, n);
	assert_non_null(got);
	if (strcmp(got, expected) != 0)
		fail_msg("'%s' -> '%s', expected '%s'", names_sp, got, expected);
	expect_names(got, names_sp);
	free(got);
	free(copy);
}

static void test_compress(void **state)
{
	(void)state;
	expect_compress("n1 n2 n3 n5", "n[1-3,5]");
	expect_compress("n09 n10 n11 n12", "n[09-12]");
	expect_compress("n8 n9 n10", "n[8-10]");
	expect_compress("n1 n01", "n1,n01"); /* two widths: never merged */
	expect_compress("n001 n2", "n001,n2");
	expect_compress("login", "login");
	expect_compress("a1 b1 b2 x", "a1,b[1-2],x");
	expect_compress("n3 n1 n2", "n[3,1-2]"); /* order kept */
	expect_compress("tor1-a tor2-a", "tor1-a,tor2-a");
	assert_null(hm_hostlist_compress(NULL, 0));
}

/* Node names in hostlist order: numbers by value, a total order consistent with equality. */
static void test_name_order(void **state)
{
	const char *sorted[] = {"a",  "n",   "n00",  "n0",   "n01x", "n1",   "n1x",     "n2",
				"n9", "n10", "n10a", "n10b", "n11",  "n100", "rack2n1", "x"};
	size_t n = sizeof(sorted) / sizeof(sorted[0]);

	(void)state;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			int c = hm_hostname_cmp(sorted[i], sorted[j]);

			if (i < j)
				assert_true(c < 0);
			else if (i > j)
				assert_true(c > 0);
			else
				assert_int_equal(c, 0);
		}
	/* Leading zeros: equal value, the longer spelling first. */
	assert_true(hm_hostname_cmp("n007", "n7") < 0);
	assert_true(hm_hostname_cmp("n7", "n007") > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_simple),     cmocka_unit_test(test_cartesian),
	    cmocka_unit_test(test_large),      cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_random),     cmocka_unit_test(test_compress),
	    cmocka_unit_test(test_name_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
