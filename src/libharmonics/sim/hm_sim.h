/*
 * hm_sim.h - event-driven flow-level simulator of training jobs on a topology.
 *
 * Each job iterates: compute (with optional seeded jitter), then its
 * communication phases; a phase's flows are coupled (a ring advances at its
 * slowest flow). Links are shared per-flow max-min fairly within a priority
 * class, and strictly by class across classes. Rates are recomputed only when
 * the set of active phases changes (event-driven, never time-stepped).
 * Decisions come from a policy (hm_policy.h) on arrival, departure and epochs.
 */
#ifndef HM_SIM_H
#define HM_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_error.h"
#include "hm_job.h"
#include "hm_policy.h"
#include "hm_topo.h"

/*
 * Where arriving jobs go (docs/placement.md). DEFAULT: packed, and a policy with
 * its own place() (cassini) chooses among packed and rack-rotated alternatives.
 */
typedef enum {
	HM_SIM_PLACE_DEFAULT = 0,
	HM_SIM_PLACE_PACKED,	/* hm_place_default: cons_tres with topology/tree */
	HM_SIM_PLACE_SPREAD,	/* a fragmented cluster: free GPUs in a random order */
	HM_SIM_PLACE_HARMONICS, /* hm_place_choose: select/harmonics_cons_tres' rule */
	HM_SIM_PLACE_CASSINI	/* the same candidates, Cassini's compatibility choice */
} hm_sim_placement_t;

/* "packed", "spread", "harmonics", "cassini" ("default" for 0). */
const char *hm_sim_placement_name(hm_sim_placement_t p);
hm_rc_t hm_sim_placement_parse(const char *name, hm_sim_placement_t *out, hm_err_t *err);

typedef struct {
	unsigned long seed;
	double jitter_cv;   /* coefficient of variation of per-iteration compute, 0 = none */
	double horizon_s;   /* stop at this simulated time; 0 = when every job finishes */
	double sample_s;    /* link-utilisation sampling period for plots; 0 = off */
	/* A changed decision reaches a running job this much later (the live loop's
	 * UpdateLead); 0 = at once. A job's first decision is always at once. */
	double update_lead_s;
	int max_iter_samples; /* iteration-time samples kept for CDFs (0 = 100000) */
	hm_sim_placement_t placement; /* where arriving jobs go (0 = default) */
	bool check_maxmin;    /* tests: every incremental re-solve against a full one */
	/* Progress callback (fraction done in [0,1]); may be NULL. */
	void (*progress)(double frac, void *arg);
	void *progress_arg;
} hm_sim_opts_t;

typedef struct {
	int id;
	char name[HM_NAME_MAX];
	int gpus;
	bool placed;	 /* false: could never be placed (reason in note) */
	bool completed;
	char note[128];
	double arrival_s, start_s, end_s;
	double jct_s;	   /* end - arrival (queueing included) */
	double iterations; /* completed iterations */
	double mean_iter_s, p99_iter_s;
	double mean_comm_s;  /* communication time per iteration (burst start to end) */
	double alone_iter_s; /* contention-free bound: alone on an idle cluster */
	double slowdown;     /* mean_iter_s / alone_iter_s */
	double gpu_util;     /* compute time / wall time while running */
} hm_sim_job_result_t;

typedef struct {
	char policy[32];
	int njobs;
	hm_sim_job_result_t *jobs; /* owned */
	int completed, unplaced;
	double mean_jct_s, p99_jct_s;
	/* Lower bound on mean_jct_s that no communication schedule beats with
	 * this run's start times and placements (hm_bound.h); 0 when none completed. */
	double bound_mean_jct_s;
	double mean_iter_s, p99_iter_s, mean_comm_s;
	double mean_slowdown;
	double gpu_util;	 /* GPU-weighted compute time / GPU-weighted running time */
	double sched_time_s;	 /* wall-clock seconds spent in policy decisions, total */
	double max_decision_s;	 /* longest single decision */
	int decisions;
	bool budget_exhausted;	 /* some decision ran out of its time budget */
	double makespan_s;
	uint64_t events;
	double sim_wall_s;	 /* wall-clock time of the whole run */
	/* Iteration-time samples normalised by each job's alone time (CDF plots). */
	int nsamples;
	double *iter_slowdown_samples; /* owned */
	/* Link utilisation timeline: nt samples of mean utilisation of the busiest links. */
	int nt;
	double *t_s;		/* owned */
	double *util_busiest;	/* owned: utilisation of the most loaded link at t */
	double *util_mean;	/* owned: mean utilisation over links with traffic */
} hm_sim_result_t;

void hm_sim_opts_defaults(hm_sim_opts_t *o);

hm_rc_t hm_sim_run(const hm_topo_t *t, const hm_workload_t *w, const hm_policy_ops_t *policy,
		   const hm_policy_cfg_t *pcfg, const hm_sim_opts_t *opts, hm_sim_result_t *out,
		   hm_err_t *err);

void hm_sim_result_free(hm_sim_result_t *r);

/*
 * Evaluation runs for policies that search (optimal): the same iteration,
 * slot and sharing semantics as hm_sim_run on a set of jobs already placed,
 * each under a fixed decision, for a horizon, with seeded compute jitter.
 * Nothing is placed and no policy is called; a job given iters_left ends
 * after that many iterations (its flows leave the links, as in hm_sim_run).
 * Returns per job its mean iteration time over the iterations that end in
 * [measure_from_s, horizon_s] (a job with none gets the window's length),
 * the iterations it ended and when it ended.
 */
typedef struct {
	const hm_job_t *job;	  /* profile (compute, phases) */
	const hm_traffic_t *tr;	  /* [npaths], borrowed, not copied */
	int npaths;
	hm_decision_t dec;	  /* origin_s on the evaluation's clock (0 = its start) */
	double first_s;		  /* its first iteration starts then (>= 0) */
	double jitter_cv;	  /* its compute jitter; < 0: the run's jitter_cv */
	double iters_left;	  /* it ends after these iterations; <= 0: it runs on */
} hm_sim_eval_job_t;

typedef struct {
	double mean_iter_s; /* over the iterations that end in the window */
	double iters;	    /* iterations ended in the whole run */
	double end_s;	    /* its last iteration's end; -1: still running at the horizon */
} hm_sim_eval_out_t;

typedef struct hm_sim_eval hm_sim_eval_t;

/* A reusable evaluator for up to max_jobs jobs on t (NULL when out of memory). */
hm_sim_eval_t *hm_sim_eval_new(const hm_topo_t *t, int max_jobs, hm_err_t *err);
hm_rc_t hm_sim_eval_run(hm_sim_eval_t *e, const hm_sim_eval_job_t *jobs, int n, double horizon_s,
			double measure_from_s, double jitter_cv, uint64_t seed,
			hm_sim_eval_out_t *out, hm_err_t *err);
/* Events handled by the evaluator so far (its cost). */
uint64_t hm_sim_eval_events(const hm_sim_eval_t *e);
void hm_sim_eval_free(hm_sim_eval_t *e); /* NULL is fine */

/* Per-flow max-min rates with coupled phases and strict priority (exposed for tests).
 * nph phases; phase i has weight flows[i][k] on link links[i][k] (nl[i] entries) and
 * class prio[i]; returns per-flow rate_bps[i]. */
typedef struct {
	int nl;
	const int *links;
	const int *flows;
	int prio;
} hm_mm_phase_t;

hm_rc_t hm_maxmin(const double *capacity_bps, int nlinks, const hm_mm_phase_t *ph, int nph,
		  double *rate_bps, hm_err_t *err);

#endif
