/* Unit tests for the SPANK plugin's Slurm-free option logic (hm_spank_opts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <stdlib.h>
#include <unistd.h>

#include "hm_spank_opts.h"
#include "hm_spank_slurmuser.h"

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
	char *hosts[] = {"host=ctl1,ctl2"};
	char *bad_hosts[] = {"host=ctl1,,ctl2"};

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
	/* host=: the coordinator's addresses, tried in order (hm_coord_addr.h). */
	assert_int_equal(hm_spank_args_parse(1, hosts, &a, &err), HM_OK);
	assert_string_equal(a.host, "ctl1,ctl2");
	assert_int_not_equal(hm_spank_args_parse(1, bad_hosts, &a, &err), HM_OK);
	assert_non_null(strstr(err.msg, "ctl1,,ctl2"));
	assert_non_null(strstr(err.msg, "host"));
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

/* The NCCL runtime in the tasks' LD_PRELOAD: plugstack.conf preload=, the user's
 * opt-out, and the new value (appended, never replacing, never twice). */
static void test_preload(void **state)
{
	hm_spank_args_t a;
	hm_err_t err = {0};
	char out[HM_SPANK_PRELOAD_MAX], small[32];
	const char *lib = "/usr/lib/x86_64-linux-gnu/libharmonics-nccl.so";
	char *no[] = {"preload=no"}, *yes[] = {"preload=YES"},
	     *path[] = {"preload=/opt/h/libharmonics-nccl.so"};
	char *bad[] = {"preload=maybe"}, *rel[] = {"preload=lib/libharmonics-nccl.so"};
	char *colon[] = {"preload=/a:/b"}, *blank[] = {"preload=/a b"}, *empty[] = {"preload="};
	char *unknown[] = {"preloads=no"};
	bool on;

	/* plugstack.conf: on by default (the installed runtime), no, or a path. */
	hm_spank_args_defaults(&a);
	assert_string_equal(a.preload, "");
	assert_string_equal(hm_spank_preload_lib(a.preload, lib), lib);
	assert_string_equal(hm_spank_preload_lib(a.preload, ""), ""); /* not built */
	assert_int_equal(hm_spank_args_parse(1, no, &a, &err), HM_OK);
	assert_null(hm_spank_preload_lib(a.preload, lib));
	assert_int_equal(hm_spank_args_parse(1, yes, &a, &err), HM_OK);
	assert_string_equal(hm_spank_preload_lib(a.preload, lib), lib);
	assert_int_equal(hm_spank_args_parse(1, path, &a, &err), HM_OK);
	assert_string_equal(hm_spank_preload_lib(a.preload, lib), "/opt/h/libharmonics-nccl.so");
	/* Strict: anything else is refused, naming the value and what is accepted. */
	assert_int_not_equal(hm_spank_args_parse(1, bad, &a, &err), HM_OK);
	assert_non_null(strstr(err.msg, "preload=maybe"));
	assert_non_null(strstr(err.msg, "accepted: yes, no, or an absolute path"));
	assert_non_null(strstr(err.msg, "plugstack.conf"));
	assert_int_not_equal(hm_spank_args_parse(1, rel, &a, &err), HM_OK);
	assert_int_not_equal(hm_spank_args_parse(1, colon, &a, &err), HM_OK);
	assert_int_not_equal(hm_spank_args_parse(1, blank, &a, &err), HM_OK);
	assert_int_not_equal(hm_spank_args_parse(1, empty, &a, &err), HM_OK);
	/* An unknown key names preload among the accepted ones. */
	assert_int_not_equal(hm_spank_args_parse(1, unknown, &a, &err), HM_OK);
	assert_non_null(strstr(err.msg, "'preloads'"));
	assert_non_null(strstr(err.msg, "agent, preload)"));

	/* The user: --no-comm-preload over HARMONICS_COMM_PRELOAD over yes. */
	assert_int_equal(hm_spank_preload_wanted(false, NULL, &on, &err), HM_OK);
	assert_true(on);
	assert_int_equal(hm_spank_preload_wanted(false, "", &on, &err), HM_OK);
	assert_true(on);
	assert_int_equal(hm_spank_preload_wanted(false, "no", &on, &err), HM_OK);
	assert_false(on);
	assert_int_equal(hm_spank_preload_wanted(false, "Yes", &on, &err), HM_OK);
	assert_true(on);
	assert_int_equal(hm_spank_preload_wanted(true, "yes", &on, &err), HM_OK);
	assert_false(on);
	assert_int_equal(hm_spank_preload_wanted(true, NULL, &on, &err), HM_OK);
	assert_false(on);
	assert_int_not_equal(hm_spank_preload_wanted(false, "nope", &on, &err), HM_OK);
	assert_non_null(strstr(err.msg, "HARMONICS_COMM_PRELOAD"));
	assert_non_null(strstr(err.msg, "'nope'"));
	assert_non_null(strstr(err.msg, "yes/no"));

	/* LD_PRELOAD: unset or empty -> the runtime alone. */
	assert_int_equal(hm_spank_preload_append(NULL, lib, out, sizeof(out), &err), 1);
	assert_string_equal(out, lib);
	assert_int_equal(hm_spank_preload_append("", lib, out, sizeof(out), &err), 1);
	assert_string_equal(out, lib);
	/* The user's entries stay first and unchanged, colons or blanks. */
	assert_int_equal(hm_spank_preload_append("/home/u/libmine.so", lib, out, sizeof(out), &err),
			 1);
	assert_string_equal(out,
			    "/home/u/libmine.so:/usr/lib/x86_64-linux-gnu/libharmonics-nccl.so");
	assert_int_equal(hm_spank_preload_append("libA.so libB.so", lib, out, sizeof(out), &err),
			 1);
	assert_string_equal(out, "libA.so libB.so:/usr/lib/x86_64-linux-gnu/libharmonics-nccl.so");
	assert_int_equal(hm_spank_preload_append("libA.so:", lib, out, sizeof(out), &err), 1);
	assert_string_equal(out, "libA.so:/usr/lib/x86_64-linux-gnu/libharmonics-nccl.so");
	/* Never twice: ours already there (nested step) or the user's own copy. */
	snprintf(out, sizeof(out), "untouched");
	assert_int_equal(hm_spank_preload_append(lib, lib, out, sizeof(out), &err), 0);
	assert_int_equal(
	    hm_spank_preload_append("libA.so:/usr/lib/x86_64-linux-gnu/libharmonics-nccl.so "
				    "libB.so",
				    lib, out, sizeof(out), &err),
	    0);
	assert_int_equal(hm_spank_preload_append("/home/u/build/libharmonics-nccl.so", lib, out,
						 sizeof(out), &err),
			 0);
	assert_int_equal(
	    hm_spank_preload_append("libharmonics-nccl.so", lib, out, sizeof(out), &err), 0);
	assert_string_equal(out, "untouched");
	/* Names that only resemble it are someone else's library. */
	assert_int_equal(
	    hm_spank_preload_append("/x/libharmonics-nccl.so.bak:/x/my-libharmonics-nccl.so", lib,
				    out, sizeof(out), &err),
	    1);
	assert_string_equal(out, "/x/libharmonics-nccl.so.bak:/x/my-libharmonics-nccl.so:"
				 "/usr/lib/x86_64-linux-gnu/libharmonics-nccl.so");
	/* Too long: refused, the user's value left as it is. */
	assert_int_equal(hm_spank_preload_append("/a/b.so", lib, small, sizeof(small), &err), -1);
	assert_non_null(strstr(err.msg, "LD_PRELOAD"));
	assert_non_null(strstr(err.msg, "left as the user set it"));
}

static void test_help(void **state)
{
	const char *h = hm_spank_help_text();
	assert_non_null(strstr(h, "--comm-sched=MODE"));
	assert_non_null(strstr(h, "--no-comm-sched"));
	assert_non_null(strstr(h, "--comm-profile"));
	assert_non_null(strstr(h, "HARMONICS_COMM_SCHED"));
	assert_non_null(strstr(h, "--no-comm-preload"));
	assert_non_null(strstr(h, "HARMONICS_COMM_PRELOAD=no"));
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

/* The trusted account is slurm.conf's SlurmUser, not a literal name. */
static void test_slurm_user(void **state)
{
	char path[] = "/tmp/hm_slurmconf_XXXXXX", why[512];
	uint32_t uid = 12345;
	FILE *f;
	int fd;

	(void)state;
	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(f = fdopen(fd, "w"));
	fputs("# SlurmUser=ignored\nClusterName=c SlurmUser=nobody # a comment\n"
	      "slurmuser=daemon\nNodeName=n1 CPUs=4\n",
	      f);
	fclose(f);
	assert_int_equal(hm_spank_slurm_user(path, &uid, why, sizeof(why)), 0);
	assert_int_equal(uid, 1); /* the last one, any case: daemon */
	assert_non_null(f = fopen(path, "w"));
	fputs("ClusterName=c\n", f);
	fclose(f);
	assert_int_equal(hm_spank_slurm_user(path, &uid, why, sizeof(why)), 0);
	assert_int_equal(uid, 0); /* none: root, Slurm's default */
	assert_non_null(f = fopen(path, "w"));
	fputs("SlurmUser=no_such_account_hm\n", f);
	fclose(f);
	assert_int_equal(hm_spank_slurm_user(path, &uid, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "no_such_account_hm"));
	setenv("SLURM_CONF", path, 1);
	assert_non_null(f = fopen(path, "w"));
	fputs("SlurmUser=4242\n", f);
	fclose(f);
	assert_int_equal(hm_spank_slurm_user(NULL, &uid, why, sizeof(why)), 0);
	assert_int_equal(uid, 4242);
	unsetenv("SLURM_CONF");
	unlink(path);
	assert_int_equal(hm_spank_slurm_user(path, &uid, why, sizeof(why)), -1);
	assert_non_null(strstr(why, path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mode),    cmocka_unit_test(test_profile),
	    cmocka_unit_test(test_args),    cmocka_unit_test(test_precedence),
	    cmocka_unit_test(test_preload), cmocka_unit_test(test_help),
	    cmocka_unit_test(test_disabled_notice), cmocka_unit_test(test_slurm_user),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
