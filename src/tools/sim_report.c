/* Output formats of harmonics-sim. */
#include "sim_report.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "hm_fields.h"
#include "hm_sort.h"

#define PLOT_UTIL_WINDOW 12

double sim_report_bound(const hm_sim_result_t *res, int nres)
{
	double b = 0;

	for (int i = 0; i < nres; i++)
		if (res[i].completed > 0 && (b == 0 || res[i].bound_mean_jct_s < b))
			b = res[i].bound_mean_jct_s;
	return b;
}

/* Bound line: the bound and (fair - policy) / (fair - bound) for every policy. */
static void table_bound(FILE *out, const hm_sim_result_t *res, int nres)
{
	double b = sim_report_bound(res, nres), fair = -1;

	for (int i = 0; i < nres; i++)
		if (strcmp(res[i].policy, "fair") == 0)
			fair = res[i].mean_jct_s;
	fprintf(out,
		"\nbound: mean JCT >= %.2f s for every run above (link capacities, each run's start "
		"times and placements)\n",
		b);
	if (fair < 0) {
		fprintf(out, "share of the possible gain: needs a fair run (--policy fair,...)\n");
		return;
	}
	if (!(fair - b > 1e-9 * fair)) {
		fprintf(out, "share of the possible gain: none possible (fair is at the bound)\n");
		return;
	}
	fprintf(out, "share of the possible gain over fair, (fair - policy) / (fair - bound):");
	for (int i = 0; i < nres; i++)
		fprintf(out, " %s %.0f%%", res[i].policy,
			100.0 * (fair - res[i].mean_jct_s) / (fair - b));
	fputc('\n', out);
}

void sim_report_table(FILE *out, const sim_scenario_t *sc, const hm_sim_result_t *res, int nres,
		      bool per_job)
{
	fprintf(out, "topology: %s\nworkload: %s (%d jobs, seed %lu, jitter cv %.3g)\n\n",
		sc->topology, sc->workload, sc->njobs, sc->seed, sc->jitter_cv);
	fprintf(out, "%-10s %9s %10s %10s %10s %10s %9s %8s %9s %11s %9s\n", "policy", "done",
		"mean_jct_s", "p99_jct_s", "mean_iter", "p99_iter", "mean_comm", "gpu_util",
		"slowdown", "sched_time", "max_dec");
	for (int i = 0; i < nres; i++) {
		const hm_sim_result_t *r = &res[i];
		char done[24];

		snprintf(done, sizeof(done), "%d/%d", r->completed, r->njobs);
		fprintf(out, "%-10s %9s %10.2f %10.2f %10.4f %10.4f %9.4f %7.1f%% %9.3f %10.4fs %8.4fs%s\n",
			r->policy, done, r->mean_jct_s, r->p99_jct_s, r->mean_iter_s, r->p99_iter_s,
			r->mean_comm_s, 100.0 * r->gpu_util, r->mean_slowdown, r->sched_time_s,
			r->max_decision_s, r->budget_exhausted ? "  (budget hit)" : "");
	}
	if (sc->bound)
		table_bound(out, res, nres);
	for (int i = 0; i < nres && per_job; i++) {
		const hm_sim_result_t *r = &res[i];

		fprintf(out, "\n[%s] per job\n%-5s %-20s %5s %10s %10s %9s %9s %9s %8s  %s\n", r->policy,
			"id", "name", "gpus", "arrival_s", "jct_s", "mean_iter", "alone", "comm",
			"util", "note");
		for (int j = 0; j < r->njobs; j++) {
			const hm_sim_job_result_t *jr = &r->jobs[j];
			fprintf(out, "%-5d %-20s %5d %10.2f %10.2f %9.4f %9.4f %9.4f %7.1f%%  %s\n",
				jr->id, jr->name, jr->gpus, jr->arrival_s, jr->jct_s,
				jr->mean_iter_s, jr->alone_iter_s, jr->mean_comm_s,
				100.0 * jr->gpu_util,
				!jr->placed ? jr->note : (!jr->completed ? "not finished" : ""));
		}
	}
	/* Unplaceable jobs are reported, never dropped silently. */
	if (nres > 0 && res[0].unplaced > 0) {
		fprintf(out, "\n%d job(s) could not be placed:\n", res[0].unplaced);
		for (int j = 0; j < res[0].njobs; j++)
			if (!res[0].jobs[j].placed)
				fprintf(out, "  job %d (%s, %d GPUs): %s\n", res[0].jobs[j].id,
					res[0].jobs[j].name, res[0].jobs[j].gpus,
					res[0].jobs[j].note);
	}
}

/* The records of --json, in output order: the scenario, a run, a job's row. */
static const hm_field_t scenario_fields[] = {
    HM_FIELD(sim_scenario_t, topology, "topology", HM_F_STRP),
    HM_FIELD(sim_scenario_t, workload, "workload", HM_F_STRP),
    HM_FIELD(sim_scenario_t, njobs, "jobs", HM_F_INT),
    HM_FIELD(sim_scenario_t, seed, "seed", HM_F_ULONG),
    HM_FIELD(sim_scenario_t, jitter_cv, "jitter_cv", HM_F_DBL),
    HM_FIELD(sim_scenario_t, epoch_s, "epoch_s", HM_F_DBL),
};

static const hm_field_t result_fields[] = {
    HM_FIELD(hm_sim_result_t, policy, "name", HM_F_STR),
    HM_FIELD(hm_sim_result_t, njobs, "jobs", HM_F_INT),
    HM_FIELD(hm_sim_result_t, completed, "completed", HM_F_INT),
    HM_FIELD(hm_sim_result_t, unplaced, "unplaced", HM_F_INT),
    HM_FIELD(hm_sim_result_t, mean_jct_s, "mean_jct_s", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, p99_jct_s, "p99_jct_s", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, bound_mean_jct_s, "bound_mean_jct_s", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, mean_iter_s, "mean_iter_s", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, p99_iter_s, "p99_iter_s", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, mean_comm_s, "mean_comm_s", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, mean_slowdown, "mean_slowdown", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, gpu_util, "gpu_util", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, sched_time_s, "sched_time_s", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, max_decision_s, "max_decision_s", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, decisions, "decisions", HM_F_INT),
    HM_FIELD(hm_sim_result_t, budget_exhausted, "budget_exhausted", HM_F_BOOL),
    HM_FIELD(hm_sim_result_t, makespan_s, "makespan_s", HM_F_DBL),
    HM_FIELD(hm_sim_result_t, events, "events", HM_F_U64),
    HM_FIELD(hm_sim_result_t, sim_wall_s, "sim_wall_s", HM_F_DBL),
};

static const hm_field_t job_fields[] = {
    HM_FIELD(hm_sim_job_result_t, id, "id", HM_F_INT),
    HM_FIELD(hm_sim_job_result_t, name, "name", HM_F_STR),
    HM_FIELD(hm_sim_job_result_t, gpus, "gpus", HM_F_INT),
    HM_FIELD(hm_sim_job_result_t, placed, "placed", HM_F_BOOL),
    HM_FIELD(hm_sim_job_result_t, completed, "completed", HM_F_BOOL),
    HM_FIELD(hm_sim_job_result_t, arrival_s, "arrival_s", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, start_s, "start_s", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, end_s, "end_s", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, jct_s, "jct_s", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, iterations, "iterations", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, mean_iter_s, "mean_iter_s", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, p99_iter_s, "p99_iter_s", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, mean_comm_s, "mean_comm_s", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, alone_iter_s, "alone_iter_s", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, slowdown, "slowdown", HM_F_DBL),
    HM_FIELD(hm_sim_job_result_t, gpu_util, "gpu_util", HM_F_DBL),
    HM_FIELD_FL(hm_sim_job_result_t, note, "note", HM_F_STR, HM_F_NEG), /* only when set */
};

int sim_report_json(FILE *out, const sim_scenario_t *sc, const hm_sim_result_t *res, int nres,
		    bool per_job)
{
	json_object *root = json_object_new_object();
	json_object *scen = hm_fields_new(scenario_fields, HM_NFIELDS(scenario_fields), sc);
	json_object *pols = json_object_new_array();

	if (!root || !scen || !pols)
		return -1;
	json_object_object_add(root, "version", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(root, "scenario", scen);
	for (int i = 0; i < nres; i++) {
		const hm_sim_result_t *r = &res[i];
		json_object *p = hm_fields_new(result_fields, HM_NFIELDS(result_fields), r);

		if (per_job) {
			json_object *jobs = json_object_new_array();
			for (int j = 0; j < r->njobs; j++)
				json_object_array_add(
				    jobs,
				    hm_fields_new(job_fields, HM_NFIELDS(job_fields), &r->jobs[j]));
			/* The rows replace the count in its place (json-c keeps the key's slot). */
			json_object_object_add(p, "jobs", jobs);
		}
		json_object_array_add(pols, p);
	}
	json_object_object_add(root, "policies", pols);
	fprintf(out, "%s\n",
		json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
	return 0;
}

void sim_report_csv(FILE *out, const hm_sim_result_t *res, int nres, bool per_job)
{
	if (!per_job) {
		fprintf(out, "policy,jobs,completed,unplaced,mean_jct_s,p99_jct_s,mean_iter_s,"
			     "p99_iter_s,mean_comm_s,mean_slowdown,gpu_util,sched_time_s,"
			     "max_decision_s,decisions,budget_exhausted,bound_mean_jct_s\n");
		for (int i = 0; i < nres; i++) {
			const hm_sim_result_t *r = &res[i];
			fprintf(out, "%s,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%d,%d,%.6f\n",
				r->policy, r->njobs, r->completed, r->unplaced, r->mean_jct_s,
				r->p99_jct_s, r->mean_iter_s, r->p99_iter_s, r->mean_comm_s,
				r->mean_slowdown, r->gpu_util, r->sched_time_s, r->max_decision_s,
				r->decisions, r->budget_exhausted ? 1 : 0, r->bound_mean_jct_s);
		}
		return;
	}
	fprintf(out, "policy,id,name,gpus,placed,completed,arrival_s,start_s,end_s,jct_s,"
		     "iterations,mean_iter_s,p99_iter_s,mean_comm_s,alone_iter_s,slowdown,gpu_util\n");
	for (int i = 0; i < nres; i++) {
		for (int j = 0; j < res[i].njobs; j++) {
			const hm_sim_job_result_t *jr = &res[i].jobs[j];
			fprintf(out, "%s,%d,%s,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.1f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n",
				res[i].policy, jr->id, jr->name, jr->gpus, jr->placed, jr->completed,
				jr->arrival_s, jr->start_s, jr->end_s, jr->jct_s, jr->iterations,
				jr->mean_iter_s, jr->p99_iter_s, jr->mean_comm_s, jr->alone_iter_s,
				jr->slowdown, jr->gpu_util);
		}
	}
}

/* Writes a data file per policy: sorted samples with their CDF, and the timeline. */
static hm_rc_t write_data(const char *dir, const hm_sim_result_t *r, int idx, hm_err_t *err)
{
	char path[4096];
	FILE *f;
	double *s;
	int n = r->nsamples;

	snprintf(path, sizeof(path), "%s/cdf%d.dat", dir, idx);
	if (!(f = fopen(path, "w")))
		return hm_err_set(err, HM_ERR_IO, "%s: %s", path, strerror(errno));
	s = n > 0 ? malloc(sizeof(*s) * (size_t)n) : NULL;
	if (n > 0 && !s) {
		fclose(f);
		return hm_err_set(err, HM_ERR_NOMEM, "plot: out of memory");
	}
	if (n > 0) {
		memcpy(s, r->iter_slowdown_samples, sizeof(*s) * (size_t)n);
		qsort(s, (size_t)n, sizeof(*s), hm_cmp_double);
	}
	/* At most ~2000 points per curve keeps the SVG small. */
	int step = n > 2000 ? n / 2000 : 1;
	for (int i = 0; i < n; i += step)
		fprintf(f, "%.6f %.6f\n", s[i], (double)(i + 1) / n);
	if (n > 0)
		fprintf(f, "%.6f 1\n", s[n - 1]);
	else
		fprintf(f, "1 0\n1 1\n");
	free(s);
	fclose(f);

	snprintf(path, sizeof(path), "%s/util%d.dat", dir, idx);
	if (!(f = fopen(path, "w")))
		return hm_err_set(err, HM_ERR_IO, "%s: %s", path, strerror(errno));
	/* Samples are instantaneous (0 or 1 on a link between bursts): plot a
	 * moving average over PLOT_UTIL_WINDOW samples. */
	for (int i = 0; i < r->nt; i++) {
		int lo = i >= PLOT_UTIL_WINDOW - 1 ? i - PLOT_UTIL_WINDOW + 1 : 0;
		double b = 0, m = 0;
		for (int k = lo; k <= i; k++) {
			b += r->util_busiest[k];
			m += r->util_mean[k];
		}
		fprintf(f, "%.3f %.6f %.6f\n", r->t_s[i], b / (i - lo + 1), m / (i - lo + 1));
	}
	if (r->nt == 0) /* gnuplot refuses an empty data file */
		fprintf(f, "0 0 0\n");
	fclose(f);
	return HM_OK;
}

hm_rc_t sim_report_plot(const char *path, const hm_sim_result_t *res, int nres, hm_err_t *err)
{
	char dir[] = "/tmp/harmonics-plot-XXXXXX";
	char script[4096 + 64];
	const char *ext = strrchr(path, '.');
	const char *term;
	hm_rc_t rc = HM_OK;
	FILE *f = NULL;

	if (ext && strcmp(ext, ".svg") == 0)
		term = "svg size 1200,500 dynamic background rgb 'white'";
	else if (ext && strcmp(ext, ".png") == 0)
		term = "pngcairo size 1200,500";
	else
		return hm_err_set(err, HM_ERR_INVAL,
				  "--plot %s: unknown image type; accepted: FILE.svg, FILE.png", path);
	if (!GNUPLOT[0])
		return hm_err_set(err, HM_ERR_NOTFOUND,
				  "--plot needs gnuplot, which configure did not find (install gnuplot-nox)");
	if (!mkdtemp(dir))
		return hm_err_set(err, HM_ERR_IO, "plot: mkdtemp: %s", strerror(errno));
	for (int i = 0; i < nres && rc == HM_OK; i++)
		rc = write_data(dir, &res[i], i, err);
	if (rc != HM_OK)
		goto out;
	snprintf(script, sizeof(script), "%s/plot.gp", dir);
	if (!(f = fopen(script, "w"))) {
		rc = hm_err_set(err, HM_ERR_IO, "%s: %s", script, strerror(errno));
		goto out;
	}
	fprintf(f, "set terminal %s\nset output '%s'\nset multiplot layout 1,2\n", term, path);
	fprintf(f, "set title 'Iteration time / contention-free time (CDF)'\nset xlabel 'slowdown'\n"
		   "set ylabel 'fraction of iterations'\nset key bottom right\nset grid\n");
	fprintf(f, "plot ");
	for (int i = 0; i < nres; i++)
		fprintf(f, "%s'%s/cdf%d.dat' using 1:2 with lines lw 2 title '%s'", i ? ", " : "", dir,
			i, res[i].policy);
	fprintf(f, "\nset title 'Busiest link utilisation (moving average of 12 samples)'\nset xlabel 'time (s)'\n"
		   "set ylabel 'utilisation'\nset yrange [0:1.05]\nplot ");
	for (int i = 0; i < nres; i++)
		fprintf(f, "%s'%s/util%d.dat' using 1:2 with lines title '%s'", i ? ", " : "", dir, i,
			res[i].policy);
	fprintf(f, "\nunset multiplot\n");
	fclose(f);

	pid_t pid = fork();
	if (pid == 0) {
		execl(GNUPLOT, "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		rc = hm_err_set(err, HM_ERR_IO, "plot: gnuplot failed writing %s", path);
out:
	/* Remove the temporary data (at most 2 files per policy plus the script). */
	for (int i = 0; i < nres; i++) {
		char p[4096 + 32];
		snprintf(p, sizeof(p), "%s/cdf%d.dat", dir, i);
		unlink(p);
		snprintf(p, sizeof(p), "%s/util%d.dat", dir, i);
		unlink(p);
	}
	snprintf(script, sizeof(script), "%s/plot.gp", dir);
	unlink(script);
	rmdir(dir);
	return rc;
}
