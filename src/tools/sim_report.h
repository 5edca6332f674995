/*
 * sim_report.h - output of harmonics-sim: a human table, JSON, CSV and plots.
 * Results are read-only here; the caller owns them.
 */
#ifndef SIM_REPORT_H
#define SIM_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "hm_sim.h"

typedef struct {
	const char *topology; /* one-line description */
	const char *workload; /* where jobs came from */
	int njobs;
	unsigned long seed;
	double jitter_cv;
	double epoch_s;
	bool bound; /* show the bound and each policy's share of the possible gain */
} sim_scenario_t;

void sim_report_table(FILE *out, const sim_scenario_t *sc, const hm_sim_result_t *res, int nres,
		      bool per_job);
/* Returns 0, or -1 when JSON could not be built. */
int sim_report_json(FILE *out, const sim_scenario_t *sc, const hm_sim_result_t *res, int nres,
		    bool per_job);
void sim_report_csv(FILE *out, const hm_sim_result_t *res, int nres, bool per_job);
/* The lowest per-run bound on mean JCT over the runs (valid for each of them). */
double sim_report_bound(const hm_sim_result_t *res, int nres);
/* Plot iteration-time CDFs and link utilisation to path (.svg or .png) with gnuplot. */
hm_rc_t sim_report_plot(const char *path, const hm_sim_result_t *res, int nres, hm_err_t *err);

#endif
