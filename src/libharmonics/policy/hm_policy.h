/*
 * hm_policy.h - the one interface every scheduling policy implements.
 *
 * A policy sees the cluster and the running jobs (profiles, placements, link
 * loads, measured iteration and burst times) and decides for each job:
 *   - a time shift: the offset of the job's communication slot within its
 *     period (slot holding, period_s > 0: every burst waits for the next slot at
 *     origin_s + shift_s + k * period_s, and a burst later than guard_s after
 *     its slot waits for the following one), or, with period_s == 0, a one-time
 *     delay of the job's first iteration;
 *   - a priority class (0 = highest) for strict-priority sharing of links;
 *   - an equal-cost path index where the topology has several.
 * It is called on job arrival and departure and, when epoch_s > 0, at every
 * epoch boundary. The simulator and the Slurm coordinator call the same code.
 */
#ifndef HM_POLICY_H
#define HM_POLICY_H

#include <stdbool.h>

#include "hm_error.h"
#include "hm_job.h"
#include "hm_topo.h"
#include "hm_classes.h"

#define HM_DEFAULT_PRIO_LEVELS HM_PRIO_LEVELS_MAX

typedef struct {
	double shift_s;	 /* slot offset within period_s, or one-time delay when period_s == 0 */
	double period_s; /* slot period; 0 = no holding */
	double guard_s;	 /* how late a burst may start in its slot before skipping to the next */
	double origin_s; /* slot origin, absolute time */
	int prio;	 /* 0 = highest */
	int path;	 /* equal-cost path index */
	unsigned long epoch; /* decision epoch id */
} hm_decision_t;

typedef struct {
	int id;				 /* stable job id (workload index, Slurm job id) */
	const hm_job_t *job;		 /* spec and declared profile */
	const hm_placement_t *placement;
	const hm_traffic_t *traffic;	 /* loads on path 0 */
	const hm_traffic_t *path_traffic; /* loads per path choice [npaths], NULL if npaths == 1 */
	int npaths;
	double start_s;			 /* when the job started running */
	double iter_start_s;		 /* when its current iteration started (phase reference) */
	/* Measured over the last epoch; 0 when nothing is measured yet. */
	double meas_iter_s;    /* mean iteration time */
	double meas_compute_s; /* mean compute time (jitter included) */
	double meas_comm_s;    /* mean burst duration */
	double meas_iter_sd_s; /* standard deviation of the iteration time */
	double meas_compute_sd_s; /* standard deviation of the compute time (its jitter) */
	double iters_left;     /* iterations still to run, the current one included, where
				* known (the simulator, for optimal's reference); 0: unknown */
	hm_decision_t dec;     /* in: current decision; out: new decision */
	/* What its traffic does whatever is decided (the coordinator, from the runtime's
	 * reports; zero: it follows the decision). Evaluations judge every candidate
	 * with it (hm_pol_eval.c): a job whose steps never applied a decision runs
	 * free (no slot, no delay); NCCL communicators keep the class they were made
	 * with, so class_in_force is the class its packets carry. */
	bool unpaced;
	bool class_fixed;
	int class_in_force; /* when class_fixed: 0 = highest */
} hm_sched_job_t;

typedef enum { HM_EV_ARRIVAL, HM_EV_DEPARTURE, HM_EV_EPOCH } hm_sched_event_t;

typedef struct {
	const hm_topo_t *topo;
	double now_s;
	hm_sched_event_t event;
	int event_job; /* index into jobs[] of the arriving job; -1 otherwise */
	int njobs;
	hm_sched_job_t *jobs; /* running jobs, the arriving one included */
	/* Out. */
	bool budget_exhausted; /* the policy stopped early and returns its best found */
	char note[256];	       /* optional one-line note for logs */
} hm_sched_ctx_t;

typedef struct {
	double epoch_s;	      /* re-decision period; 0 = only on arrival/departure */
	int prio_levels;      /* hardware priority classes, default 8 */
	int reserved_levels;  /* classes kept for other traffic, default 1 */
	double budget_s;      /* wall-clock budget per decision (optimal), default 10 s */
	long budget_evals;    /* evaluations per decision (optimal); 0 = no cap. Unlike
			       * budget_s it does not depend on the machine's load */
	int shift_bins;	      /* shift discretisation per period, default policy-specific */
	double guard_s;	      /* late tolerance for slot holding, default policy-specific */
	unsigned long seed;
	int threads;	      /* worker threads for parallel parts, default 1 */
	bool plan_only;	      /* harmonics: apply the two tiers' plan without the check
			       * against fair sharing (tests of the tiers) */
	double jitter_cv;     /* compute jitter (coefficient of variation) the model may
			       * assume; 0 = unknown (optimal then assumes 2%) */
	/* harmonics: where the racks' Local Schedulers run (hm_rack_msg.h); NULL: in
	 * process. The caller keeps it alive as long as the policy. */
	const struct hm_rack_transport *racks;
} hm_policy_cfg_t;

/* Fill cfg with the documented defaults. */
void hm_policy_cfg_defaults(hm_policy_cfg_t *cfg);

typedef struct {
	const char *name;
	const char *description;
	/* Allocate state from cfg; *state may stay NULL for stateless policies. */
	hm_rc_t (*create)(const hm_policy_cfg_t *cfg, void **state, hm_err_t *err);
	/* Decide: rewrite jobs[i].dec for every job whose decision changes. */
	hm_rc_t (*decide)(void *state, hm_sched_ctx_t *ctx, hm_err_t *err);
	void (*destroy)(void *state); /* NULL state is fine */
	/*
	 * Optional: pick one of ncands placements for the arriving job
	 * ctx->jobs[ctx->event_job] (its placement is cands[0] while asked).
	 * Returns the index; NULL op = always the first (the default placement).
	 */
	int (*place)(void *state, hm_sched_ctx_t *ctx, const hm_placement_t *cands,
		     const hm_traffic_t *cand_traffic, int ncands);
	bool uses_epochs; /* re-decide at epoch boundaries */
} hm_policy_ops_t;

/* Registry: "fair", "optimal", "cassini", "crux", "harmonics". NULL if unknown. */
const hm_policy_ops_t *hm_policy_find(const char *name);
/* "fair,optimal,cassini,crux,harmonics" (static string). */
const char *hm_policy_names(void);
/* Number of registered policies and the i-th one. */
int hm_policy_count(void);
const hm_policy_ops_t *hm_policy_at(int i);

/* Policy implementations (each in its own file). */
extern const hm_policy_ops_t hm_policy_fair;
extern const hm_policy_ops_t hm_policy_optimal;
extern const hm_policy_ops_t hm_policy_cassini;
extern const hm_policy_ops_t hm_policy_crux;
extern const hm_policy_ops_t hm_policy_harmonics;

#endif
