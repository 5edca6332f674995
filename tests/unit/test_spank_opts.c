/* Unit tests for the SPANK plugin's Slurm-free option logic (hm_spank_opts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hm_spank_opts.h"

static void test_mode(void **state)
{
	hm_err_t err = {0};
	char canon[HM_SPANK_MODE_MAX];

	assert_int_equal(
	    hm_spank_mode_check("Harmonics", "--comm-sched", canon, sizeof(canon), &err), HM_OK);
	assert_string_equal(canon, "harmonics");
	assert_int_equal(hm_spank_mode_check("off", "x", canon, sizeof(canon), &err), HM_OK);
	assert_int_equal(hm_spank_mode_check("auto", "x", canon, sizeof(canon), &err), HM_OK);
	assert_int_equal(hm_spank_mode_check("HELP", "x", canon, sizeof(canon), &err), HM_OK);
	assert_string_equal(canon, "help");
	assert_int_equal(hm_spank_mode_check("cassini", "x", canon, sizeof(canon), &err), HM_OK);
	assert_int_equal(hm_spank_mode_check("crux", "x", canon, sizeof(canon), &err), HM_OK);

	assert_int_not_equal(
	    hm_spank_mode_check("bogus", "--comm-sched", canon, sizeof(canon), &err), HM_OK);
	/* Names the value, the origin and every accepted mode. */
	assert_non_null(strstr(err.msg, "'bogus'"));
	assert_non_null(strstr(err.msg, "--comm-sched"));
	assert_non_null(strstr(err.msg, "off,auto"));
	assert_non_null(strstr(err.msg, "harmonics"));
	assert_non_null(strstr(err.msg, "help"));
	assert_int_not_equal(hm_spank_mode_check("", "x", canon, sizeof(canon), &err), HM_OK);
	/* Too long to be a mode: refused, not truncated into a valid one. */
	assert_int_not_equal(hm_spank_mode_check("harmonicsharmonicsharmonicsharmonicsX", "x",
						 canon, sizeof(canon), &err),
			     HM_OK);
}

static void test_profile(void **state)
{
	hm_err_t err = {0};

	assert_int_equal(hm_spank_profile_check("iter=250ms,comm=40%,bytes=1.2GB", "p", &err),
			 HM_OK);
	assert_int_not_equal(
	    hm_spank_profile_check("iter=abc,comm=40%,bytes=1GB", "--comm-profile", &err), HM_OK);
	assert_non_null(strstr(err.msg, "--comm-profile"));
	assert_non_null(strstr(err.msg, "abc"));
	assert_int_not_equal(hm_spank_profile_check("no-such-model-xyz", "--comm-profile", &err),
			     HM_OK);
	assert_non_null(strstr(err.msg, "no-such-model-xyz"));
	assert_int_not_equal(hm_spank_profile_check("", "p", &err), HM_OK);
}

static void test_args(void **state)
{
	hm_spank_args_t a;
	hm_err_t err = {0};
	char *good[] = {"host=10.0.0.1", "port=7000", "timeout_ms=1500", "default_mode=auto",
			"default_profile=iter=100ms,comm=30%,bytes=100MB"};
	char *bad_key[] = {"colour=blue"};
	char *bad_port[] = {"port=70000"};
	char *bad_mode[] = {"default_mode=help"};
	char *no_eq[] = {"justaword"};

	hm_spank_args_defaults(&a);
	assert_string_equal(a.default_mode, "off");
	assert_int_equal(hm_spank_args_parse(5, good, &a, &err), HM_OK);
	assert_string_equal(a.host, "10.0.0.1");
	assert_int_equal(a.port, 7000);
	assert_int_equal(a.timeout_ms, 1500);
	assert_string_equal(a.default_mode, "auto");

	hm_spank_args_defaults(&a);
	assert_int_not_equal(hm_spank_args_parse(1, bad_key, &a, &err), HM_OK);
	assert_non_null(strstr(err.msg, "'colour'"));
	assert_non_null(strstr(err.msg, "timeout_ms"));
	assert_int_not_equal(hm_spank_args_parse(1, bad_port, &a, &err), HM_OK);
	assert_non_null(strstr(err.msg, "70000"));
	assert_int_not_equal(hm_spank_args_parse(1, bad_mode, &a, &err), HM_OK);
	assert_int_not_equal(hm_spank_args_parse(1, no_eq, &a, &err), HM_OK);
	assert_non_null(strstr(err.msg, "justaword"));
}

static void test_precedence(void **state)
{
	hm_spank_args_t a;
	hm_spank_choice_t c;
	hm_err_t err = {0};

	hm_spank_args_defaults(&a);
	assert_int_equal(hm_spank_resolve(&a, NULL, NULL, NULL, NULL, &c, &err), HM_OK);
	assert_string_equal(c.mode, "off");
	assert_int_equal(c.mode_src, HM_SRC_DEFAULT);

	snprintf(a.default_mode, sizeof(a.default_mode), "fair");
	assert_int_equal(hm_spank_resolve(&a, NULL, NULL, NULL, NULL, &c, &err), HM_OK);
	assert_string_equal(c.mode, "fair");
	assert_int_equal(c.mode_src, HM_SRC_PLUGSTACK);

	/* env over plugstack */
	assert_int_equal(hm_spank_resolve(&a, NULL, NULL, "CASSINI", NULL, &c, &err), HM_OK);
	assert_string_equal(c.mode, "cassini");
	assert_int_equal(c.mode_src, HM_SRC_ENV);

	/* command line over env */
	assert_int_equal(hm_spank_resolve(&a, "crux", NULL, "cassini", NULL, &c, &err), HM_OK);
	assert_string_equal(c.mode, "crux");
	assert_int_equal(c.mode_src, HM_SRC_CLI);
	assert_int_equal(hm_spank_resolve(&a, "off", NULL, "cassini", NULL, &c, &err), HM_OK);
	assert_string_equal(c.mode, "off");

	/* a bad env value is an error naming the variable even when the CLI is fine */
	assert_int_not_equal(hm_spank_resolve(&a, "crux", NULL, "wat", NULL, &c, &err), HM_OK);
	assert_non_null(strstr(err.msg, "HARMONICS_COMM_SCHED"));
	assert_non_null(strstr(err.msg, "'wat'"));

	/* profile: CLI over env; a profile alone turns scheduling on (auto) */
	hm_spank_args_defaults(&a);
	assert_int_equal(hm_spank_resolve(&a, NULL, "iter=1s,comm=10%,bytes=1GB", NULL,
					  "iter=2s,comm=20%,bytes=2GB", &c, &err),
			 HM_OK);
	assert_string_equal(c.profile, "iter=1s,comm=10%,bytes=1GB");
	assert_int_equal(c.profile_src, HM_SRC_CLI);
	assert_string_equal(c.mode, "auto");
	/* ... but not over an explicit off */
	assert_int_equal(
	    hm_spank_resolve(&a, "off", "iter=1s,comm=10%,bytes=1GB", NULL, NULL, &c, &err), HM_OK);
	assert_string_equal(c.mode, "off");
	assert_int_not_equal(hm_spank_resolve(&a, NULL, NULL, NULL, "iter=1s", &c, &err), HM_OK);
	assert_non_null(strstr(err.msg, "HARMONICS_COMM_PROFILE"));
}

static void test_help(void **state)
{
	const char *h = hm_spank_help_text();
	assert_non_null(strstr(h, "--comm-sched=MODE"));
	assert_non_null(strstr(h, "--no-comm-sched"));
	assert_non_null(strstr(h, "--comm-profile"));
	assert_non_null(strstr(h, "HARMONICS_COMM_SCHED"));
}

/* A bad harmonics.conf: a --comm-sched job is told once, a plain one hears nothing. */
static void test_disabled_notice(void **state)
{
	const char *why =
	    "/etc/slurm/harmonics.conf:3: unknown key 'Bogus' (accepted: Policy, ...)";
	char buf[640] = "untouched";

	(void)state;
	assert_true(hm_spank_disabled_notice("auto", why, buf, sizeof(buf)));
	assert_string_equal(buf, "harmonics: disabled (/etc/slurm/harmonics.conf:3: unknown key "
				 "'Bogus' (accepted: Policy, ...)); job runs unscheduled");
	strcpy(buf, "untouched");
	assert_false(hm_spank_disabled_notice("off", why, buf, sizeof(buf)));
	assert_false(hm_spank_disabled_notice("OFF", why, buf, sizeof(buf)));
	assert_false(hm_spank_disabled_notice("harmonics", "", buf, sizeof(buf)));
	assert_false(hm_spank_disabled_notice("harmonics", NULL, buf, sizeof(buf)));
	assert_string_equal(buf, "untouched");
	/* Cut to the buffer, still one terminated line. */
	assert_true(hm_spank_disabled_notice("crux", why, buf, 24));
	assert_string_equal(buf, "harmonics: disabled (/e");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mode), cmocka_unit_test(test_profile),
	    cmocka_unit_test(test_args), cmocka_unit_test(test_precedence),
	    cmocka_unit_test(test_help), cmocka_unit_test(test_disabled_notice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
