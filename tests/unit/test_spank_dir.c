/*
 * hm_spank_job_dir, the step side of the local channel (contract A): the
 * RunDir/<node> directory must be root's and writable by root only, and an
 * existing job directory must be a real directory of the job's uid, mode 0700;
 * anything a user planted is refused by name (issue 28: "RunDir's owner is not
 * checked by the SPANK side"). Needs root (chown), as slurmstepd has; skipped
 * otherwise.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "hm_spank_dir.h"

#define USER_UID 65534
#define USER_GID 65534

static char top[] = "/tmp/hm_spank_dir_XXXXXX";
static char run_dir[64], node_dir[128], job_dir[192];

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	if (!mkdtemp(top))
		return -1;
	snprintf(run_dir, sizeof(run_dir), "%s/run", top);
	snprintf(node_dir, sizeof(node_dir), "%s/n1", run_dir);
	snprintf(job_dir, sizeof(job_dir), "%s/job.7", node_dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[4200];

	(void)state;
	if (geteuid() != 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

static void need_root(void)
{
	if (geteuid() != 0)
		skip(); /* chown needs root, as slurmstepd has */
}

static hm_rc_t job_dir_of(uint32_t job, hm_err_t *err)
{
	char path[4096];

	memset(err, 0, sizeof(*err));
	return hm_spank_job_dir(run_dir, "n1", job, USER_UID, USER_GID, path, sizeof(path), err);
}

static void assert_refused(hm_rc_t rc, const hm_err_t *err, const char *says)
{
	assert_int_equal(rc, HM_ERR_AUTH);
	if (!strstr(err->msg, says))
		fail_msg("message '%s' does not say '%s'", err->msg, says);
}

/* Made where missing: RunDir and the node's directory root's 0755, the job's the user's 0700. */
static void test_made(void **state)
{
	char path[4096];
	hm_err_t err = {0};
	struct stat st;

	(void)state;
	need_root();
	assert_int_equal(hm_spank_job_dir(run_dir, "n1", 7, USER_UID, USER_GID, path, sizeof(path),
					  &err),
			 HM_OK);
	assert_string_equal(path, job_dir);
	assert_int_equal(lstat(node_dir, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(lstat(job_dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, USER_UID);
	assert_int_equal(st.st_gid, USER_GID);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* A later step of the same job finds it as it should be. */
	assert_int_equal(job_dir_of(7, &err), HM_OK);
}

/* The node's directory: another owner, group or world write, or a link: refused. */
static void test_node_dir_checked(void **state)
{
	char elsewhere[4200];
	hm_err_t err;

	(void)state;
	need_root();
	assert_int_equal(job_dir_of(7, &err), HM_OK);
	assert_int_equal(chown(node_dir, USER_UID, USER_GID), 0);
	assert_refused(job_dir_of(8, &err), &err, "not a root-owned directory");
	assert_int_equal(chown(node_dir, 0, 0), 0);
	assert_int_equal(chmod(node_dir, 0777), 0);
	assert_refused(job_dir_of(8, &err), &err, "writable by root only");
	assert_int_equal(chmod(node_dir, 0775), 0);
	assert_refused(job_dir_of(8, &err), &err, "writable by root only");
	assert_int_equal(chmod(node_dir, 0755), 0);
	assert_int_equal(job_dir_of(8, &err), HM_OK);
	/* A link in its place (to a directory root owns): not followed. */
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", top);
	assert_int_equal(rename(node_dir, elsewhere), 0);
	assert_int_equal(symlink(elsewhere, node_dir), 0);
	assert_refused(job_dir_of(9, &err), &err, "not a root-owned directory");
	assert_int_equal(unlink(node_dir), 0);
	assert_int_equal(rename(elsewhere, node_dir), 0);
}

/* A job directory someone made before the step: wrong owner, mode or kind: refused. */
static void test_planted_job_dir(void **state)
{
	char target[4200], msg_uid[64];
	hm_err_t err;
	struct stat st;

	(void)state;
	need_root();
	assert_int_equal(job_dir_of(7, &err), HM_OK);
	assert_int_equal(chown(job_dir, 1, 1), 0); /* another user's */
	snprintf(msg_uid, sizeof(msg_uid), "owned by uid 1 ");
	assert_refused(job_dir_of(7, &err), &err, msg_uid);
	assert_int_equal(chown(job_dir, USER_UID, USER_GID), 0);
	assert_int_equal(chmod(job_dir, 0755), 0); /* readable by all */
	assert_refused(job_dir_of(7, &err), &err, "mode 0755");
	assert_int_equal(chmod(job_dir, 0700), 0);
	assert_int_equal(job_dir_of(7, &err), HM_OK);
	/* A link to a directory of the user's: refused, its target left as it was. */
	snprintf(target, sizeof(target), "%s/target", top);
	assert_int_equal(mkdir(target, 0700), 0);
	assert_int_equal(chown(target, USER_UID, USER_GID), 0);
	snprintf(job_dir, sizeof(job_dir), "%s/job.10", node_dir);
	assert_int_equal(symlink(target, job_dir), 0);
	assert_refused(job_dir_of(10, &err), &err, "is not a directory");
	assert_int_equal(lstat(target, &st), 0);
	assert_int_equal(st.st_uid, USER_UID);
	assert_int_equal(st.st_mode & 07777, 0700);
	snprintf(job_dir, sizeof(job_dir), "%s/job.7", node_dir);
}

/* What becomes a path component is checked first. */
static void test_bad_names(void **state)
{
	char path[4096], long_dir[4096];
	hm_err_t err = {0};
	const char *bad[] = {"", ".", "..", "../n1", "n1/x", "n 1",
			     "a234567890123456789012345678901234567890123456789012345678901234"};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(hm_spank_job_dir("/nonexistent", bad[i], 1, USER_UID, USER_GID,
						  path, sizeof(path), &err),
				 HM_ERR_INVAL);
		assert_non_null(strstr(err.msg, "accepted"));
	}
	memset(long_dir, 'x', sizeof(long_dir) - 1);
	long_dir[0] = '/';
	long_dir[sizeof(long_dir) - 1] = '\0';
	assert_int_equal(hm_spank_job_dir(long_dir, "n1", 1, USER_UID, USER_GID, path,
					  sizeof(path), &err),
			 HM_ERR_RANGE);
	assert_non_null(strstr(err.msg, "too long"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_made),
	    cmocka_unit_test(test_node_dir_checked),
	    cmocka_unit_test(test_planted_job_dir),
	    cmocka_unit_test(test_bad_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
