/*
 * agent_metrics.c - the node's pacing counters as a node_exporter textfile
 * (MetricsDir=, docs/metrics.md): per running job, summed over its tasks'
 * latest reports, labelled slurm_job_id and node as NCCL's inspector labels
 * its series. Written to a hidden temporary file and renamed over
 * harmonics_<node>.prom, so node_exporter never reads half a file. A job's
 * series are written while the coordinator lists it on this node (it runs)
 * and one of its tasks has reported; they go with the next write after that.
 */
#include "agent_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One job's counters, summed over its tasks. */
typedef struct {
	long bursts[4]; /* on_time, late, skipped, unpaced */
	double hold_s, iter_s;
	uint64_t iter_n;
	int tasks;
} job_sum_t;

static const char *const outcomes[4] = {"on_time", "late", "skipped", "unpaced"};

static bool job_sum(const agent_job_t *j, job_sum_t *s)
{
	memset(s, 0, sizeof(*s));
	if (!j->listed)
		return false;
	for (int t = 0; t < j->ntasks; t++) {
		const pace_report_t *r = &j->tasks[t].prev;

		if (!j->tasks[t].have_prev)
			continue;
		s->tasks++;
		s->bursts[0] += r->paced;
		s->bursts[1] += r->late;
		s->bursts[2] += r->skipped;
		s->bursts[3] += r->unpaced;
		/* WAIT_US is the mean over BURSTS, rounded to a microsecond. */
		s->hold_s += (double)r->wait_us * (double)r->bursts / 1e6;
		s->iter_n += r->iter_n;
		s->iter_s += (double)r->iter_sum_us / 1e6;
	}
	return s->tasks > 0;
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The families in order, each with every running job's series. */
static void write_families(FILE *f, const agent_jobs_t *js, const char *node)
{
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
	    {"harmonics_job_bursts_total", "counter",
	     "Communication bursts by outcome (on_time: released in its slot; late: after the "
	     "guard; skipped: waited a slot more; unpaced: no slot in force)."},
	    {"harmonics_job_hold_seconds_total", "counter",
	     "Time bursts were held for their slot (mean hold x bursts)."},
	    {"harmonics_job_iterations_total", "counter", "Iterations measured."},
	    {"harmonics_job_iteration_seconds_total", "counter",
	     "Sum of the measured iteration periods (divide by iterations for the mean)."},
	    {"harmonics_job_tasks", "gauge", "Tasks of the job on this node that report."},
	};

	for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		family(f, fam[k].name, fam[k].type, fam[k].help);
		for (int i = 0; i < js->njobs; i++) {
			job_sum_t s;

			if (!job_sum(js->jobs[i], &s))
				continue;
			if (k == 0) {
				for (int o = 0; o < 4; o++)
					fprintf(
					    f,
					    "%s{slurm_job_id=\"%ld\",node=\"%s\",outcome=\"%s\"} "
					    "%ld\n",
					    fam[k].name, js->jobs[i]->job_id, node, outcomes[o],
					    s.bursts[o]);
				continue;
			}
			fprintf(f, "%s{slurm_job_id=\"%ld\",node=\"%s\"} ", fam[k].name,
				js->jobs[i]->job_id, node);
			if (k == 1)
				fprintf(f, "%.6f\n", s.hold_s);
			else if (k == 2)
				fprintf(f, "%llu\n", (unsigned long long)s.iter_n);
			else if (k == 3)
				fprintf(f, "%.6f\n", s.iter_s);
			else
				fprintf(f, "%d\n", s.tasks);
		}
	}
}

char *agent_metrics_text(const agent_jobs_t *js, const char *node)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	write_families(f, js, node);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* dir/name from its parts; false when it does not fit. */
static bool path_of(char *buf, size_t len, const char *dir, const char *pre, const char *node,
		    const char *suf)
{
	int n = snprintf(buf, len, "%s/%s%s%s", dir, pre, node, suf);

	return n > 0 && (size_t)n < len;
}

hm_rc_t agent_metrics_write(const agent_jobs_t *js, const char *dir, const char *node,
			    hm_err_t *err)
{
	char path[4352], tmp[4352];
	char *text = agent_metrics_text(js, node);
	size_t len, off = 0;
	int fd = -1;
	hm_rc_t rc = HM_OK;

	if (!text)
		return hm_err_set(err, HM_ERR_NOMEM, "metrics: out of memory");
	if (!path_of(path, sizeof(path), dir, "harmonics_", node, ".prom") ||
	    !path_of(tmp, sizeof(tmp), dir, ".harmonics_", node, ".prom.tmp")) {
		rc = hm_err_set(err, HM_ERR_RANGE, "metrics: MetricsDir=%s is too long", dir);
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = hm_err_set(err, HM_ERR_IO, "metrics: %s: %s", tmp, strerror(errno));
		goto out;
	}
	len = strlen(text);
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = hm_err_set(err, HM_ERR_IO, "metrics: %s: %s", tmp, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = hm_err_set(err, HM_ERR_IO, "metrics: %s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		rc = hm_err_set(err, HM_ERR_IO, "metrics: %s: %s", path, strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	if (rc != HM_OK)
		unlink(tmp);
	free(text);
	return rc;
}

void agent_metrics_remove(const char *dir, const char *node)
{
	char path[4352];

	if (dir[0] && path_of(path, sizeof(path), dir, "harmonics_", node, ".prom"))
		unlink(path);
}
