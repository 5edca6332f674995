/*
 * Contract A's safety rules on the agent's side: planted links named like the
 * temporary or the assign file are never followed, a job directory or report
 * with the wrong owner or mode is refused, a FIFO does not block, names are
 * strict, and a finished job's directory goes without following anything.
 * Owner checks need root (chown); they are skipped with a message otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_files.h"
#include "pace_report_read.h"

static char g_top[256];    /* a fresh directory per test */
static char g_run[300];    /* g_top/run = RunDir */
static char g_victim[300]; /* a file outside that nothing may touch */

static int setup(void **state)
{
	snprintf(g_top, sizeof(g_top), "/tmp/hm_agent_files_XXXXXX");
	if (!mkdtemp(g_top))
		return -1;
	snprintf(g_run, sizeof(g_run), "%s/run", g_top);
	snprintf(g_victim, sizeof(g_victim), "%s/victim", g_top);
	FILE *f = fopen(g_victim, "w");
	if (!f)
		return -1;
	fputs("precious\n", f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_top);
	return system(cmd) == 0 ? 0 : -1;
}

static void assert_victim_intact(void)
{
	char buf[64] = "";
	FILE *f = fopen(g_victim, "r");
	struct stat st;

	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "precious\n");
	assert_int_equal(lstat(g_victim, &st), 0);
	assert_true(S_ISREG(st.st_mode));
}

static int node_dir(void)
{
	hm_err_t err = {0};
	int fd = agent_node_dir_open(g_run, "n1", &err);

	if (fd < 0)
		fail_msg("node dir: %s", err.msg);
	return fd;
}

/* A job directory job.<id> under the node directory, owned by uid, with mode. */
static int make_job(int node_fd, long id, uid_t uid, mode_t mode)
{
	char name[32];
	int fd;

	snprintf(name, sizeof(name), "job.%ld", id);
	assert_int_equal(mkdirat(node_fd, name, 0700), 0);
	fd = openat(node_fd, name, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, mode), 0);
	if (uid != geteuid())
		assert_int_equal(fchown(fd, uid, (gid_t)-1), 0);
	return fd;
}

static char *read_at(int dir_fd, const char *name, char *buf, size_t len)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void test_node_dir(void **state)
{
	char path[400];
	struct stat st;
	hm_err_t err = {0};
	int fd;

	umask(077); /* the node directory must still be traversable by the steps' users */
	fd = node_dir();
	umask(022);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	close(fd);
	fd = node_dir(); /* existing: accepted again */
	close(fd);
	/* A link in place of the node directory is refused, not followed. */
	snprintf(path, sizeof(path), "%s/n2", g_run);
	assert_int_equal(symlink(g_top, path), 0);
	assert_int_equal(agent_node_dir_open(g_run, "n2", &err), -1);
	assert_int_equal(err.rc, HM_ERR_AUTH);
	assert_non_null(strstr(err.msg, "n2"));
	/* Writable by others: refused. */
	snprintf(path, sizeof(path), "%s/n3", g_run);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(chmod(path, 0777), 0);
	assert_int_equal(agent_node_dir_open(g_run, "n3", &err), -1);
	assert_int_equal(err.rc, HM_ERR_AUTH);
	assert_non_null(strstr(err.msg, "0777"));
}

static void test_job_dir_rules(void **state)
{
	int node = node_dir(), fd;
	hm_err_t err = {0};
	uint32_t owner = 99;

	assert_int_equal(agent_job_dir_open(node, 7, AGENT_ANY_UID, NULL, &err), -1);
	assert_int_equal(err.rc, HM_ERR_NOTFOUND);
	/* A link named like a job directory: refused (not followed to the victim's dir). */
	assert_int_equal(symlinkat(g_top, node, "job.8"), 0);
	assert_int_equal(agent_job_dir_open(node, 8, AGENT_ANY_UID, NULL, &err), -1);
	assert_int_equal(err.rc, HM_ERR_AUTH);
	if (!strstr(err.msg, "symbolic link"))
		fail_msg("%s", err.msg);
	/* Group or other bits: refused. */
	close(make_job(node, 9, geteuid(), 0750));
	assert_int_equal(agent_job_dir_open(node, 9, AGENT_ANY_UID, NULL, &err), -1);
	assert_int_equal(err.rc, HM_ERR_AUTH);
	assert_non_null(strstr(err.msg, "0750"));
	/* Good. */
	close(make_job(node, 10, geteuid(), 0700));
	fd = agent_job_dir_open(node, 10, geteuid(), &owner, &err);
	assert_true(fd >= 0);
	assert_int_equal(owner, geteuid());
	close(fd);
	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: wrong-owner checks need root (chown)\n");
		close(node);
		return;
	}
	/* Owned by another user than the coordinator says: refused. */
	close(make_job(node, 11, 4242, 0700));
	assert_int_equal(agent_job_dir_open(node, 11, 0, NULL, &err), -1);
	assert_int_equal(err.rc, HM_ERR_AUTH);
	assert_non_null(strstr(err.msg, "uid 4242"));
	assert_non_null(strstr(err.msg, "uid 0"));
	fd = agent_job_dir_open(node, 11, 4242, &owner, &err);
	assert_true(fd >= 0);
	assert_int_equal(owner, 4242);
	close(fd);
	close(node);
}

static void test_assign_planted_links(void **state)
{
	int node = node_dir(), job = make_job(node, 20, geteuid(), 0700);
	char tmp[64], buf[256];
	struct stat st;
	bool planted = false;
	hm_err_t err = {0};

	/* A link at the temporary name: removed, never written through. */
	snprintf(tmp, sizeof(tmp), "assign.tmp.%ld", (long)getpid());
	assert_int_equal(symlinkat(g_victim, job, tmp), 0);
	umask(077);
	assert_int_equal(agent_write_assign(job, "HARMONICS_MODE=off\n", 19, &planted, &err),
			 HM_OK);
	umask(022);
	assert_true(planted);
	assert_victim_intact();
	assert_string_equal(read_at(job, "assign", buf, sizeof(buf)), "HARMONICS_MODE=off\n");
	assert_int_equal(fstatat(job, "assign", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0644); /* readable by the job's user whatever umask */
	assert_int_equal(fstatat(job, tmp, &st, AT_SYMLINK_NOFOLLOW), -1);
	/* A link at the assign name: replaced by the file, the target untouched. */
	assert_int_equal(unlinkat(job, "assign", 0), 0);
	assert_int_equal(symlinkat(g_victim, job, "assign"), 0);
	assert_int_equal(agent_write_assign(job, "HARMONICS_MODE=off\n", 19, &planted, &err),
			 HM_OK);
	assert_false(planted);
	assert_victim_intact();
	assert_int_equal(fstatat(job, "assign", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	/* A directory at the temporary name: refused cleanly, nothing followed. */
	assert_int_equal(mkdirat(job, tmp, 0700), 0);
	assert_int_not_equal(agent_write_assign(job, "X=1\n", 4, &planted, &err), HM_OK);
	assert_non_null(strstr(err.msg, tmp));
	assert_string_equal(read_at(job, "assign", buf, sizeof(buf)), "HARMONICS_MODE=off\n");
	/* A FIFO at the temporary name: removed (an open for writing would block). */
	assert_int_equal(unlinkat(job, tmp, AT_REMOVEDIR), 0);
	assert_int_equal(mkfifoat(job, tmp, 0600), 0);
	assert_int_equal(agent_write_assign(job, "HARMONICS_MODE=off\n", 19, &planted, &err),
			 HM_OK);
	assert_true(planted);
	close(job);
	close(node);
}

static void write_file_at(int dir_fd, const char *name, const char *text)
{
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_report_reading(void **state)
{
	int node = node_dir(), job = make_job(node, 30, geteuid(), 0700);
	char buf[PACE_REPORT_MAX_BYTES + 1];
	size_t len;
	struct stat st;
	hm_err_t err = {0};
	char *big;

	write_file_at(job, "report.0.0", "HARMONICS_REPORT_VERSION=2\n");
	assert_int_equal(
	    agent_read_report(job, "report.0.0", geteuid(), buf, sizeof(buf), &len, &st, &err),
	    HM_OK);
	assert_int_equal(len, 27);
	/* Gone. */
	assert_int_equal(
	    agent_read_report(job, "report.0.9", geteuid(), buf, sizeof(buf), &len, &st, &err),
	    HM_ERR_NOTFOUND);
	/* A link to a file the agent (root) could read: refused, not followed. */
	assert_int_equal(symlinkat(g_victim, job, "report.0.1"), 0);
	assert_int_equal(
	    agent_read_report(job, "report.0.1", geteuid(), buf, sizeof(buf), &len, &st, &err),
	    HM_ERR_AUTH);
	assert_int_equal(len, 0);
	assert_null(strstr(buf, "precious"));
	/* A FIFO with no writer: refused at once, does not block. */
	assert_int_equal(mkfifoat(job, "report.0.2", 0600), 0);
	assert_int_equal(
	    agent_read_report(job, "report.0.2", geteuid(), buf, sizeof(buf), &len, &st, &err),
	    HM_ERR_AUTH);
	assert_non_null(strstr(err.msg, "not a regular file"));
	/* Too large. */
	big = malloc(70000);
	assert_non_null(big);
	memset(big, 'A', 69999);
	big[69999] = '\0';
	write_file_at(job, "report.0.3", big);
	free(big);
	assert_int_equal(
	    agent_read_report(job, "report.0.3", geteuid(), buf, sizeof(buf), &len, &st, &err),
	    HM_ERR_RANGE);
	assert_non_null(strstr(err.msg, "65536"));
	/* Owned by someone else than the job's user. */
	assert_int_equal(
	    agent_read_report(job, "report.0.0", geteuid() + 1, buf, sizeof(buf), &len, &st, &err),
	    HM_ERR_AUTH);
	assert_non_null(strstr(err.msg, "owned by uid"));
	close(job);
	close(node);
}

static void test_report_names(void **state)
{
	static const char *good[] = {"report.0.0", "report.12.3", "report.batch.0",
				     "report.extern.15"};
	static const char *bad[] = {"report.0.0.tmp.123", "report..0",   "report.0.",
				    "report.0.x",         "report.0.-1", "report.0.99999999",
				    "report.a-b.0",       "assign",      "report.0",
				    "Report.0.0",         "report.0.0 "};
	char step[32];
	int rank = -1;
	int node = node_dir(), job = make_job(node, 40, geteuid(), 0700);
	char names[8][AGENT_REPORT_NAME];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!agent_report_name(good[i], step, sizeof(step), &rank))
			fail_msg("refused '%s'", good[i]);
	assert_true(agent_report_name("report.12.3", step, sizeof(step), &rank));
	assert_string_equal(step, "12");
	assert_int_equal(rank, 3);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (agent_report_name(bad[i], step, sizeof(step), &rank))
			fail_msg("accepted '%s'", bad[i]);
	write_file_at(job, "report.0.0", "x");
	write_file_at(job, "report.0.0.tmp.77", "x");
	write_file_at(job, "assign", "x");
	write_file_at(job, "notes", "x");
	assert_int_equal(agent_list_reports(job, names, 8), 1);
	assert_string_equal(names[0], "report.0.0");
	close(job);
	close(node);
}

static void test_remove_job_dir(void **state)
{
	int node = node_dir(), job = make_job(node, 50, geteuid(), 0700), sub;
	long ids[8];
	hm_err_t err = {0};
	struct stat st;

	write_file_at(job, "report.0.0", "x");
	assert_int_equal(symlinkat(g_victim, job, "link"), 0);
	assert_int_equal(symlinkat(g_top, job, "dirlink"), 0);
	assert_int_equal(mkfifoat(job, "fifo", 0600), 0);
	assert_int_equal(mkdirat(job, "sub", 0700), 0);
	sub = openat(job, "sub", O_RDONLY | O_DIRECTORY);
	write_file_at(sub, "deep", "x");
	close(sub);
	close(job);
	close(make_job(node, 51, geteuid(), 0700));
	assert_int_equal(agent_list_jobs(node, ids, 8), 2);
	assert_int_equal(agent_remove_job_dir(node, 50, &err), HM_OK);
	assert_int_equal(fstatat(node, "job.50", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_victim_intact();
	assert_int_equal(stat(g_top, &st), 0); /* the linked directory is still there */
	assert_int_equal(agent_list_jobs(node, ids, 8), 1);
	assert_int_equal(ids[0], 51);
	/* Absent: nothing to do. A link named like a job directory: the link goes. */
	assert_int_equal(agent_remove_job_dir(node, 50, &err), HM_OK);
	assert_int_equal(symlinkat(g_top, node, "job.52"), 0);
	assert_int_equal(agent_remove_job_dir(node, 52, &err), HM_OK);
	assert_int_equal(stat(g_top, &st), 0);
	close(node);
}

/* A tree of any depth or width goes, a bounded part per call, links not followed
   (the cleanup kept a tree deeper than 4 levels for ever). */
static void test_remove_deep_and_wide(void **state)
{
	int node = node_dir(), job = make_job(node, 60, geteuid(), 0700), fd, calls = 0;
	hm_err_t err = {0};
	struct stat st;
	hm_rc_t rc;

	fd = dup(job);
	for (int d = 0; d < 1500; d++) { /* 1,500 levels, a link to outside at each 100th */
		int sub;

		assert_int_equal(mkdirat(fd, "d", 0700), 0);
		if (d % 100 == 0)
			assert_int_equal(symlinkat(g_top, fd, "out"), 0);
		assert_true((sub = openat(fd, "d", O_RDONLY | O_DIRECTORY)) >= 0);
		close(fd);
		fd = sub;
	}
	write_file_at(fd, "bottom", "x");
	close(fd);
	for (int k = 0; k < 30000; k++) { /* wider than one call looks at */
		char name[32];

		snprintf(name, sizeof(name), "f%d", k);
		assert_true((fd = openat(job, name, O_WRONLY | O_CREAT, 0600)) >= 0);
		close(fd);
	}
	close(job);
	do
		rc = agent_remove_job_dir(node, 60, &err);
	while (rc == HM_ERR_BUDGET && ++calls < 20);
	if (rc != HM_OK)
		fail_msg("after %d calls: %s", calls, err.msg);
	assert_true(calls >= 1); /* it took more than one call */
	assert_int_equal(fstatat(node, "job.60", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_victim_intact();
	assert_int_equal(stat(g_top, &st), 0);
	close(node);
}

/* A chain of depth directories below dir_fd, named name then "d". */
static void make_chain(int dir_fd, const char *name, int depth)
{
	int fd = dup(dir_fd), sub;

	for (int d = 0; d < depth; d++) {
		const char *n = d == 0 ? name : "d";

		assert_int_equal(mkdirat(fd, n, 0700), 0);
		assert_true((sub = openat(fd, n, O_RDONLY | O_DIRECTORY)) >= 0);
		close(fd);
		fd = sub;
	}
	close(fd);
}

/* A removal cut short (its slice ran out) leaves a moved-up directory at the
   top, .hm-rm.0, still deeper than a call opens; the next call (or a restarted
   agent) moves its deep part up under a name not taken (it reused .hm-rm.0, its
   own ancestor, at every call: "cannot remove: an entry stays" for ever, and in
   the 256 hostile directories' fault the directories stayed until RunDir was full). */
static void test_remove_after_cut_short(void **state)
{
	int node = node_dir(), job = make_job(node, 61, geteuid(), 0700), calls = 0;
	hm_err_t err = {0};
	struct stat st;
	hm_rc_t rc;

	make_chain(job, ".hm-rm.0", 40); /* what the cut-short call left */
	close(job);
	do
		rc = agent_remove_job_dir(node, 61, &err);
	while (rc == HM_ERR_BUDGET && ++calls < 20);
	if (rc != HM_OK)
		fail_msg("after %d calls: %s", calls, err.msg);
	assert_int_equal(fstatat(node, "job.61", &st, AT_SYMLINK_NOFOLLOW), -1);
	close(node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_node_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_job_dir_rules, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_assign_planted_links, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_reading, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_names, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove_job_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove_deep_and_wide, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove_after_cut_short, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
