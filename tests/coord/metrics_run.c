/*
 * metrics_run: the coordinator's metrics over a short run outside Slurm (not a
 * test: prints a table for scripts/metrics-plot.sh). The two-rack fixture
 * under the harmonics policy; a job arrives every 2 simulated seconds on
 * overlapping nodes (n1-n2, n2-n3, ...), then they end one by one; after each
 * round (hm_coord_sync, as the sched plugin runs it) the metrics are rendered
 * with hm_metrics_render and a few series read back from the text.
 *   metrics_run [ROUNDS]     columns: t_s jobs_slot jobs_class jobs_free
 *                            decisions_total decision_seconds_sum max_link_util
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/coord_fixture.h"
#include "hm_log.h"
#include "hm_metrics.h"

/* The value of the first series of text starting with prefix (-1: none). */
static double series(const char *text, const char *prefix)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			return atof(strchr(p, ' ') + 1);
	return -1;
}

/* Highest harmonics_link_predicted_utilisation_ratio. */
static double max_util(const char *text)
{
	const char *name = "harmonics_link_predicted_utilisation_ratio{";
	double best = 0;

	for (const char *p = strstr(text, name); p; p = strstr(p + 1, name))
		best = fmax(best, atof(strchr(strchr(p, '}'), ' ') + 1));
	return best;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 30;
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_err_t err = {0};
	static char names[8][16], nodes[8][16];
	hm_coord_sync_job_t jobs[8];

	hm_log_set_level(HM_LOG_ERROR);
	fixture_conf(&conf);
	snprintf(conf.policy, sizeof(conf.policy), "harmonics");
	conf.epoch_s = 2;
	if (hm_coord_create(&conf, fixture_topo(), &c, &err) != HM_OK) {
		fprintf(stderr, "metrics_run: %s\n", err.msg);
		return 1;
	}
	printf("t_s jobs_slot jobs_class jobs_free decisions_total decision_seconds_sum "
	       "max_link_util\n");
	for (int r = 0; r < rounds; r++) {
		double t_s = 1000.0 + r;
		/* Jobs 1..6 arrive every 2 s from t = 0, the first ones end from t = 20 s. */
		int first = r >= 20 ? (r - 20) / 2 + 1 : 0, last = r / 2 + 1 < 6 ? r / 2 + 1 : 6,
		    n = 0;
		char *text = NULL;
		size_t len;

		for (int k = first; k < last; k++) {
			snprintf(names[n], sizeof(names[n]), "train%d", k + 1);
			snprintf(nodes[n], sizeof(nodes[n]), "n[%d-%d]", k % 7 + 1, k % 7 + 2);
			jobs[n] = (hm_coord_sync_job_t){
			    .info = {.job_id = (uint32_t)(100 + k),
				     .name = names[n],
				     .nodes = nodes[n],
				     .mode = "auto",
				     .profile = "iter=250ms,comm=40%,bytes=1.2GB",
				     .start_s = t_s},
			};
			n++;
		}
		hm_coord_sync(c, jobs, n, t_s, NULL, NULL, NULL);
		if (hm_metrics_render(c, "none", &text, &len, &err) != HM_OK) {
			fprintf(stderr, "metrics_run: %s\n", err.msg);
			break;
		}
		printf("%d %g %g %g %g %.6f %.4f\n", r,
		       fmax(series(text, "harmonics_jobs{mode=\"auto\",state=\"slot\"}"), 0),
		       fmax(series(text, "harmonics_jobs{mode=\"auto\",state=\"class\"}"), 0),
		       fmax(series(text, "harmonics_jobs{mode=\"auto\",state=\"free\"}"), 0),
		       series(text, "harmonics_decisions_total "),
		       series(text, "harmonics_decision_duration_seconds_sum "), max_util(text));
		free(text);
	}
	hm_coord_destroy(c);
	return 0;
}
