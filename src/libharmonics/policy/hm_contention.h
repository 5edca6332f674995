/*
 * hm_contention.h - fast analytical contention model (estimator) for policies.
 *
 * Prefix hm_cm_ ("contention model"; hm_model_t is the job catalogue entry).
 *
 * Built once per decision from an hm_sched_ctx_t, then evaluated many times
 * for candidate shifts and priority classes (microseconds for a handful of
 * jobs). It is a first-order fluid estimate, not a simulation:
 *
 *   - Job j repeats with period P_j = its measured iteration time when known
 *     (meas_iter_s > 0), else its contention-free iteration time
 *     (traffic->alone_iter_s). Its communication burst is one window of length
 *     M_j = sum of its phases' alone times (alone_comm_s[]), starting at the
 *     job's shift: window [shift_j + k P_j, shift_j + k P_j + M_j). Shifts are
 *     offsets in seconds within the period, measured from a common origin
 *     (hm_cm_origin_s(); the simulator and the policies use ctx->now_s).
 *   - During its window job j loads link l at its alone rate:
 *       demand_jl = sum over phases of (flows on l * flow_bytes * 8) / M_j  [bit/s].
 *   - Time is discretised into bins over a hyperperiod H: the LCM of the
 *     periods rounded to a quantum (P_min / bins_per_period) when it is at most
 *     max_hyper_periods * P_max, else H = max_hyper_periods * P_max and the
 *     non-commensurate windows are simply laid out over [0, H).
 *   - In each bin, on each link shared by at least two jobs of the evaluated
 *     subset, classes are served strictly (0 first): a class gets
 *     min(1, residual / class demand) of its demand, proportionally within the
 *     class; lower classes absorb the stretch first. A job's stretch in a bin
 *     is the max over its links of demand / allocation; its burst grows by
 *     bin_width * (stretch - 1), averaged over its H / P_j bursts.
 *   - Estimated iteration time: iter_j = alone_iter_s_j + mean burst growth
 *     (the measured period only places the windows, so contention already in a
 *     measurement is not counted twice). Two identical jobs fully overlapped on
 *     one saturated link: each burst doubles, iter = C + 2M; staggered: C + M.
 *
 * Links not shared by two evaluated jobs cost nothing (a job alone on its
 * links runs at its alone time by construction).
 *
 * Ownership: hm_cm_build() copies what it needs from ctx (the ctx and its
 * traffic may be freed afterwards); free with hm_cm_free() (NULL is fine).
 * The model is read-only after build, so one model may be evaluated from
 * several threads at once.
 */
#ifndef HM_MODEL_H
#define HM_MODEL_H

#include <stdbool.h>

#include "hm_error.h"
#include "hm_policy.h"

typedef struct hm_cm hm_cm_t; /* opaque */

typedef struct {
	int bins_per_period;   /* resolution per shortest period; 0 = 96 */
	int max_hyper_periods; /* hyperperiod cap in units of the longest period; 0 = 8 */
	int max_bins;          /* hard cap on bins per hyperperiod; 0 = 4096 */
	bool use_path;         /* true: each job's loads come from path_traffic[dec.path] */
} hm_cm_opts_t;

/* Defaults above (all zero, use_path true). */
void hm_cm_opts_defaults(hm_cm_opts_t *o);

/*
 * Build the model for ctx->jobs[0 .. ctx->njobs). Job indexes in every other
 * call are indexes into ctx->jobs. opts may be NULL (defaults).
 * HM_ERR_INVAL when a job lacks traffic or has a non-positive period.
 */
hm_rc_t hm_cm_build(const hm_sched_ctx_t *ctx, const hm_cm_opts_t *opts, hm_cm_t **out,
		    hm_err_t *err);
void hm_cm_free(hm_cm_t *m);

int hm_cm_njobs(const hm_cm_t *m);
double hm_cm_origin_s(const hm_cm_t *m);            /* ctx->now_s at build */
double hm_cm_hyperperiod_s(const hm_cm_t *m);       /* H */
double hm_cm_period_s(const hm_cm_t *m, int j);     /* P_j */
double hm_cm_comm_s(const hm_cm_t *m, int j);       /* M_j, burst window length */
double hm_cm_alone_iter_s(const hm_cm_t *m, int j); /* contention-free iteration time */
/*
 * Override P_j (e.g. a slot period chosen by the policy). Call before any
 * evaluation; not thread-safe. HM_ERR_INVAL when period_s <= 0 or j is bad.
 */
hm_rc_t hm_cm_set_period(hm_cm_t *m, int j, double period_s, hm_err_t *err);
/* Total demand of job j over all its links during its burst (bit/s), a load measure. */
double hm_cm_load_bps(const hm_cm_t *m, int j);
/* True when jobs a and b load at least one common link. */
bool hm_cm_shares_link(const hm_cm_t *m, int a, int b);
/* True when job j shares a link with any other job of the model. */
bool hm_cm_contended(const hm_cm_t *m, int j);

/*
 * Estimate the iteration time of the n jobs idx[0..n) evaluated together (jobs
 * outside the subset are ignored, as in a rack-local subproblem), job idx[i]
 * having shift shift_s[i] (seconds, any real; taken modulo its period) and
 * priority class prio[i] (0 = highest; prio may be NULL = all class 0).
 * Writes iter_s[i] when iter_s is not NULL. Returns the mean estimated
 * slowdown, mean over i of iter_s[i] / alone_iter_s(idx[i]) (>= 1 when nothing
 * is measured). n == 0 returns 0. Bad indexes are skipped; returns HUGE_VAL only
 * when scratch memory cannot be allocated. Cost: O(n * bins + shared links * bins * n).
 */
double hm_cm_eval(const hm_cm_t *m, const int *idx, int n, const double *shift_s, const int *prio,
		  double *iter_s);

/*
 * As hm_cm_eval, for jobs held to slots (hm_policy.h) with slot period
 * P = hm_cm_period_s(). Burst by burst: a burst grown by g makes the next one
 * ready alone + g after its slot start; within P it costs P, beyond it is
 * taken to skip to a later slot (a whole number of periods). Pessimistic on
 * purpose: a late start within the guard pushes later bursts into their
 * neighbours' slots, so only schedules whose bursts keep their slack are
 * cheap. iter_s[i] is the mean over the job's bursts in the hyperperiod
 * (>= P); a job without network traffic costs max(P, alone).
 */
double hm_cm_eval_held(const hm_cm_t *m, const int *idx, int n, const double *shift_s,
		       const int *prio, double *iter_s);

#endif
