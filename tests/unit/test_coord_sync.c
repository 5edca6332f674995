/*
 * Unit tests for hm_coord_sync, the Slurm-free half of the sched plugin's job
 * mirror: ended jobs leave, the rest is upserted and decided, AdminComments go
 * to the host's store, and the state file is written only when something changed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_log.h"

#define NOW 1.8e9

/* What slurmctld would hold: each job's AdminComment, as store left it. */
static char comments[8][512];
static int nstored;

static void store(void *arg, uint32_t job_id, const char *old, const char *new_comment)
{
	assert_ptr_equal(arg, comments);
	assert_true(job_id < 8);
	assert_string_equal(old ? old : "", comments[job_id]);
	snprintf(comments[job_id], sizeof(comments[job_id]), "%s", new_comment);
	nstored++;
}

static char logged[4096];

static void sink(int level, const char *msg)
{
	size_t len = strlen(logged);

	snprintf(logged + len, sizeof(logged) - len, "%s\n", msg);
}

static hm_coord_sync_job_t job(uint32_t id, const char *nodes, const char *mode,
			       const char *profile)
{
	hm_coord_sync_job_t j = {.info = {.job_id = id,
					  .uid = 1000,
					  .name = "train",
					  .nodes = nodes,
					  .mode = mode,
					  .profile = profile,
					  .start_s = NOW - 60},
				 .comment = comments[id][0] ? comments[id] : NULL};
	return j;
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static void test_rounds(void **state)
{
	char dir[] = "/tmp/hm_sync_test_XXXXXX", path[4096];
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_coord_sync_result_t r;
	hm_coord_sync_job_t jobs[3];
	hm_err_t err = {0};
	uint32_t *ids = NULL;
	int nids = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/harmonics.state", dir);
	memset(comments, 0, sizeof(comments));
	hm_log_set_sink(sink);
	hm_log_set_level(HM_LOG_VERBOSE);
	fixture_conf(&conf);
	snprintf(conf.state_file, sizeof(conf.state_file), "%s", path);
	assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
	assert_int_equal(hm_coord_set_policy_ops(c, &script_policy, &err), HM_OK);

	/* Round 1: three jobs arrive; the one with a bad profile stays unscheduled. */
	jobs[0] = job(1, "n[1-2]", "auto", "iter=250ms,comm=40%,bytes=1.2GB");
	jobs[1] = job(2, "n3", "off", NULL);
	jobs[2] = job(3, "n[5-6]", "auto", "iter=1s");
	nstored = 0;
	hm_coord_sync(c, jobs, 3, NOW, store, comments, &r);
	assert_int_equal(r.removed, 0);
	assert_true(r.changed);
	assert_int_equal(r.comments, 2); /* job 1 scheduled, job 3 off=reason; job 2 asked off */
	assert_int_equal(nstored, 2);
	assert_true(r.saved);
	assert_true(exists(path));
	assert_non_null(strstr(comments[1], "harmonics:e"));
	assert_non_null(strstr(comments[1], "p=script"));
	assert_non_null(strstr(comments[3], "off="));
	assert_string_equal(comments[2], "");
	assert_non_null(strstr(logged, "job 3: "));

	/* Round 2: nothing new; comments already show the decisions: no store, no save. */
	unlink(path);
	for (int i = 0; i < 3; i++)
		jobs[i] = job(jobs[i].info.job_id, jobs[i].info.nodes, jobs[i].info.mode,
			      jobs[i].info.profile);
	nstored = 0;
	hm_coord_sync(c, jobs, 3, NOW + 1, store, comments, &r);
	assert_int_equal(r.removed, 0);
	assert_false(r.changed);
	assert_int_equal(r.comments, 0);
	assert_int_equal(nstored, 0);
	assert_false(r.saved);
	assert_false(exists(path));

	/* Round 3: job 2 ended: it leaves the table and the state is saved. */
	jobs[1] = jobs[2];
	hm_coord_sync(c, jobs, 2, NOW + 2, store, comments, &r);
	assert_int_equal(r.removed, 1);
	assert_true(r.saved);
	assert_true(exists(path));
	assert_non_null(strstr(logged, "job 2 ended"));
	assert_int_equal(hm_coord_job_ids(c, &ids, &nids), HM_OK);
	assert_int_equal(nids, 2);
	assert_true((ids[0] == 1 && ids[1] == 3) || (ids[0] == 3 && ids[1] == 1));
	free(ids);

	/* Round 4: every job ended, no store: the table empties, out may be NULL. */
	hm_coord_sync(c, NULL, 0, NOW + 3, NULL, NULL, NULL);
	assert_int_equal(hm_coord_job_ids(c, &ids, &nids), HM_OK);
	assert_int_equal(nids, 0);
	free(ids);

	hm_coord_destroy(c);
	hm_log_set_sink(NULL);
	hm_log_set_level(HM_LOG_INFO);
	unlink(path);
	rmdir(dir);
}

/* Without a StateFile nothing is written, and a new decision still goes to store. */
static void test_no_state_file(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_coord_sync_result_t r;
	hm_coord_sync_job_t j;
	hm_err_t err = {0};

	memset(comments, 0, sizeof(comments));
	fixture_conf(&conf);
	conf.state_file[0] = '\0';
	assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
	assert_int_equal(hm_coord_set_policy_ops(c, &script_policy, &err), HM_OK);
	j = job(4, "n[7-8]", "fair", "resnet50");
	hm_coord_sync(c, &j, 1, NOW, store, comments, &r);
	assert_true(r.changed);
	assert_int_equal(r.comments, 1);
	assert_false(r.saved);
	hm_coord_destroy(c);
}

/* Many jobs in no order: those Slurm no longer lists leave, the others stay. */
static void test_many_jobs_leave(void **state)
{
	enum { N = 300 };
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_coord_sync_result_t r;
	hm_coord_sync_job_t js[N];
	hm_err_t err = {0};
	uint32_t *ids = NULL;
	int nids = 0, k = 0;

	(void)state;
	fixture_conf(&conf);
	conf.state_file[0] = '\0';
	assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
	assert_int_equal(hm_coord_set_policy_ops(c, &script_policy, &err), HM_OK);
	for (int i = 0; i < N; i++) { /* ids 1000..1299 scrambled (7 is prime to 300) */
		js[i] = job(0, "n1", "off", NULL);
		js[i].info.job_id = 1000 + (uint32_t)(i * 7 % N);
	}
	hm_coord_sync(c, js, N, NOW, NULL, NULL, &r);
	assert_int_equal(r.removed, 0);
	for (int i = N - 1; i >= 0; i--) { /* Slurm now lists the odd ids, in another order */
		uint32_t id = 1000 + (uint32_t)(i * 7 % N);

		if (id % 2) {
			js[k] = job(0, "n1", "off", NULL);
			js[k++].info.job_id = id;
		}
	}
	assert_int_equal(k, N / 2);
	hm_coord_sync(c, js, k, NOW + 1, NULL, NULL, &r);
	assert_int_equal(r.removed, N / 2);
	assert_int_equal(hm_coord_job_ids(c, &ids, &nids), HM_OK);
	assert_int_equal(nids, N / 2);
	for (int i = 0; i < nids; i++)
		assert_int_equal(ids[i] % 2, 1);
	free(ids);
	hm_coord_destroy(c);
}

/* A failed save (StateSaveLocation full, here missing) is retried by every round,
   logged once, and succeeds once it can, with nothing changed meanwhile. */
static void test_save_retried(void **state)
{
	char dir[] = "/tmp/hm_sync_retry_XXXXXX", sub[64], path[128];
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_coord_sync_result_t r;
	hm_coord_sync_job_t j;
	hm_err_t err = {0};
	const char *p;
	int lines = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/state", dir);
	snprintf(path, sizeof(path), "%s/harmonics.state", sub);
	memset(comments, 0, sizeof(comments));
	logged[0] = '\0';
	hm_log_set_sink(sink);
	fixture_conf(&conf);
	snprintf(conf.state_file, sizeof(conf.state_file), "%s", path);
	assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
	assert_int_equal(hm_coord_set_policy_ops(c, &script_policy, &err), HM_OK);
	j = job(1, "n[1-2]", "auto", "iter=250ms,comm=40%,bytes=1.2GB");
	hm_coord_sync(c, &j, 1, NOW, store, comments, &r);
	assert_true(r.changed);
	assert_false(r.saved);
	j = job(1, "n[1-2]", "auto", "iter=250ms,comm=40%,bytes=1.2GB");
	hm_coord_sync(c, &j, 1, NOW + 1, store, comments, &r); /* nothing new: retried */
	assert_false(r.changed);
	assert_false(r.saved);
	for (p = logged; (p = strstr(p, "state: ")); p++)
		lines++;
	assert_int_equal(lines, 1); /* one line for the outage */
	assert_int_equal(mkdir(sub, 0700), 0);
	hm_coord_sync(c, &j, 1, NOW + 2, store, comments, &r); /* space is back */
	assert_false(r.changed);
	assert_true(r.saved);
	assert_true(exists(path));
	assert_non_null(strstr(logged, "written again"));
	hm_coord_sync(c, &j, 1, NOW + 3, store, comments, &r); /* and no more */
	assert_false(r.saved);
	hm_coord_destroy(c);
	hm_log_set_sink(NULL);
	unlink(path);
	rmdir(sub);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rounds),
	    cmocka_unit_test(test_save_retried),
	    cmocka_unit_test(test_no_state_file),
	    cmocka_unit_test(test_many_jobs_leave),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
