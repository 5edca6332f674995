/*
 * Unit tests for the plugins' shared contract: the job-control environment
 * lookup and the PluginDir loader (a directory list with a missing directory, a
 * file that does not load, and then the module built for this test).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <dlfcn.h>

#include "hm_plugin.h"

static void test_env_get(void **state)
{
	char *env[] = {"HARMONICS_COMM_SCHEDX=1",        NULL,
		       "HARMONICS_COMM_SCHED",           "PATH=/bin",
		       "HARMONICS_COMM_SCHED=harmonics", "HARMONICS_COMM_PROFILE=resnet50",
		       "HARMONICS_COMM_SCHED=late"};

	assert_string_equal(hm_plugin_env_get(env, 7, HM_SPANK_ENV_MODE), "harmonics");
	assert_string_equal(hm_plugin_env_get(env, 7, HM_SPANK_ENV_PROFILE), "resnet50");
	assert_null(hm_plugin_env_get(env, 4, HM_SPANK_ENV_MODE)); /* only within n */
	assert_null(hm_plugin_env_get(env, 7, "HARMONICS"));
	assert_null(hm_plugin_env_get(NULL, 7, HM_SPANK_ENV_MODE));
	assert_null(hm_plugin_env_get(env, 7, ""));
}

static int nfail;
static char fail_path[4096];

static void on_fail(const char *path, const char *why)
{
	nfail++;
	snprintf(fail_path, sizeof(fail_path), "%s", path);
	assert_non_null(why);
}

static void test_dlopen(void **state)
{
	const char *build = getenv("top_builddir");
	char bad[] = "/tmp/hm_plugin_test_XXXXXX", dirs[8192], junk[4096];
	void *h;
	int (*probe)(void);
	FILE *f;

	assert_non_null(build);
	assert_non_null(mkdtemp(bad));
	snprintf(junk, sizeof(junk), "%s/plugin_probe.so", bad);
	f = fopen(junk, "w");
	assert_non_null(f);
	fputs("not an ELF file\n", f);
	fclose(f);

	/* Missing directory, then one whose file does not load, then the real one. */
	snprintf(dirs, sizeof(dirs), "/nonexistent/hm:%s::%s/tests/unit/.libs", bad, build);
	nfail = 0;
	h = hm_plugin_dlopen(dirs, "plugin_probe.so", on_fail);
	assert_non_null(h);
	assert_int_equal(nfail, 1);
	assert_string_equal(fail_path, junk);
	*(void **)&probe = dlsym(h, "hm_probe_value");
	assert_non_null(probe);
	assert_int_equal(probe(), 42);

	/* Loaded already: found without loading, by the same directory list. */
	assert_ptr_equal(hm_plugin_find_loaded(dirs, "plugin_probe.so"), h);
	assert_null(hm_plugin_find_loaded(dirs, "libnot_loaded_here.so"));
	assert_null(hm_plugin_find_loaded("/nonexistent/a", "plugin_probe.so"));

	/* Nowhere to be found: NULL, and nothing failed to load. */
	nfail = 0;
	assert_null(hm_plugin_dlopen("/nonexistent/a:/nonexistent/b", "plugin_probe.so", on_fail));
	assert_null(hm_plugin_dlopen(bad, "plugin_probe.so", NULL));
	assert_null(hm_plugin_dlopen(NULL, "plugin_probe.so", on_fail));
	assert_null(hm_plugin_dlopen("", "plugin_probe.so", on_fail));
	assert_int_equal(nfail, 0);

	unlink(junk);
	rmdir(bad);
}

static void test_gpus_per_node(void **state)
{
	(void)state;
	assert_int_equal(hm_plugin_gpus_per_node("gres/gpu:4"), 4);
	assert_int_equal(hm_plugin_gpus_per_node("gres:gpu:8"), 8);
	assert_int_equal(hm_plugin_gpus_per_node("gres/gpu:a100:2"), 2);
	assert_int_equal(hm_plugin_gpus_per_node("gres/gpu:a100:2,gres/nic:1"), 2);
	assert_int_equal(hm_plugin_gpus_per_node("gres/nic:1,gres/gpu:3"), 3);
	assert_int_equal(hm_plugin_gpus_per_node("gres/gpu"), 0); /* no count: all */
	assert_int_equal(hm_plugin_gpus_per_node("gres/gpu:a100"), 0);
	assert_int_equal(hm_plugin_gpus_per_node("gres/gpu:4x"), 0);
	assert_int_equal(hm_plugin_gpus_per_node("gres/gpu:4096"), 0);
	assert_int_equal(hm_plugin_gpus_per_node("gres/nic:2"), 0);
	assert_int_equal(hm_plugin_gpus_per_node(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_env_get),
	    cmocka_unit_test(test_gpus_per_node),
	    cmocka_unit_test(test_dlopen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
