/*
 * The node agent's node_exporter textfile (agent_metrics.c): a running job's
 * counters summed over its tasks, labelled slurm_job_id and node; a job the
 * coordinator no longer lists is gone from the next write; the file appears
 * by rename and passes `promtool check metrics` when promtool is installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_metrics.h"

/* A job with two tasks that reported, listed by the coordinator. */
static agent_job_t *job_with_tasks(agent_jobs_t *js, long id)
{
	agent_job_t *j = agent_jobs_get(js, id, true);

	assert_non_null(j);
	j->listed = true;
	j->tasks = calloc(2, sizeof(*j->tasks));
	assert_non_null(j->tasks);
	j->ntasks = 2;
	for (int t = 0; t < 2; t++) {
		pace_report_t *r = &j->tasks[t].prev;

		j->tasks[t].have_prev = true;
		r->job_id = id;
		r->rank = t;
		r->bursts = 100;
		r->paced = 90;
		r->late = 6;
		r->skipped = 3;
		r->unpaced = 1;
		r->wait_us = 2000; /* 100 bursts x 2 ms = 0.2 s per task */
		r->iter_n = 100;
		r->iter_sum_us = 25000000; /* 250 ms each */
	}
	return j;
}

static void test_text(void **state)
{
	agent_jobs_t js;
	char *text;

	(void)state;
	memset(&js, 0, sizeof(js));
	job_with_tasks(&js, 77);
	agent_jobs_get(&js, 78, true); /* listed by nobody, no reports: not written */
	text = agent_metrics_text(&js, "n3");
	assert_non_null(text);
	assert_non_null(strstr(text, "# TYPE harmonics_job_bursts_total counter\n"));
	assert_non_null(strstr(
	    text, "harmonics_job_bursts_total{slurm_job_id=\"77\",node=\"n3\",outcome=\"on_time\"} "
		  "180\n"));
	assert_non_null(strstr(
	    text,
	    "harmonics_job_bursts_total{slurm_job_id=\"77\",node=\"n3\",outcome=\"late\"} 12\n"));
	assert_non_null(strstr(
	    text,
	    "harmonics_job_bursts_total{slurm_job_id=\"77\",node=\"n3\",outcome=\"skipped\"} 6\n"));
	assert_non_null(strstr(
	    text, "harmonics_job_hold_seconds_total{slurm_job_id=\"77\",node=\"n3\"} 0.400000\n"));
	assert_non_null(
	    strstr(text, "harmonics_job_iterations_total{slurm_job_id=\"77\",node=\"n3\"} 200\n"));
	assert_non_null(strstr(
	    text,
	    "harmonics_job_iteration_seconds_total{slurm_job_id=\"77\",node=\"n3\"} 50.000000\n"));
	assert_non_null(strstr(text, "harmonics_job_tasks{slurm_job_id=\"77\",node=\"n3\"} 2\n"));
	assert_null(strstr(text, "\"78\""));
	free(text);
	/* The job ended: the coordinator stopped listing it, its series go. */
	js.jobs[0]->listed = false;
	text = agent_metrics_text(&js, "n3");
	assert_null(strstr(text, "slurm_job_id"));
	free(text);
	agent_jobs_free(&js);
}

static void test_write(void **state)
{
	char dir[] = "/tmp/hm-agent-metrics-XXXXXX", path[128], tmp[160], cmd[256];
	agent_jobs_t js;
	hm_err_t err = {0};
	struct stat st;

	(void)state;
	memset(&js, 0, sizeof(js));
	assert_non_null(mkdtemp(dir));
	job_with_tasks(&js, 77);
	snprintf(path, sizeof(path), "%s/harmonics_n3.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s/.harmonics_n3.prom.tmp", dir);
	assert_int_equal(agent_metrics_write(&js, dir, "n3", &err), HM_OK);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_not_equal(stat(tmp, &st), 0); /* renamed, not left behind */
	if (system("command -v promtool >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
		assert_int_equal(system(cmd), 0);
	} else {
		printf("note: promtool not installed: the textfile format is not linted\n");
	}
	/* A directory that is not there: an error naming it, nothing written. */
	assert_int_equal(agent_metrics_write(&js, "/nonexistent/hm", "n3", &err), HM_ERR_IO);
	assert_non_null(strstr(err.msg, "/nonexistent/hm/.harmonics_n3.prom.tmp"));
	agent_metrics_remove(dir, "n3");
	assert_int_not_equal(stat(path, &st), 0);
	assert_int_equal(rmdir(dir), 0);
	agent_jobs_free(&js);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
