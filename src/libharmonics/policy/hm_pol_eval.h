/*
 * hm_pol_eval.h - judging the decisions of a component of jobs in the
 * simulator's own model (evaluation runs, hm_sim.h), shared by optimal (its
 * whole search) and harmonics (its check against fair sharing).
 *
 * A component is a set of jobs of one context that can share a link. Its
 * score under decisions d[] (higher is better) is either its progress rate,
 * the mean over its jobs of contention-free iteration time / mean iteration
 * time over a short run from now, or, where every job's remaining iterations
 * are known (hm_pol_comp_to_end), its remaining work alone over the sum of its
 * jobs' projected completion times: a run until they end (an earlier end
 * gives the others the links, which the rate cannot see), each job still
 * running at the horizon projected at its mean iteration. Each job's next
 * iteration start is estimated from the context. A one-time delay counts only
 * where a decision differs from the one in force, as in the simulator. Not
 * part of the public API.
 */
#ifndef HM_POL_EVAL_H
#define HM_POL_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_policy.h"
#include "hm_sim.h"

typedef struct {
	const hm_sched_ctx_t *ctx;
	int n;                 /* members */
	const int *member;     /* ctx indexes */
	hm_sim_eval_job_t *ej; /* evaluation jobs (decisions rewritten per run) */
	double *T;             /* contention-free iteration per member */
	double *left;          /* iterations left per member in a run (to_end) */
	hm_sim_eval_out_t *out; /* scratch: one run's results */
	hm_decision_t *cur;    /* decisions in force */
	double horizon_s, cv;
	uint64_t seed;
	int seeds;         /* jitter draws per judgement (the same for every candidate) */
	bool random_phase; /* first iterations at seeded random phases, not the current ones */
	double warmup_s;   /* iterations ending before this are not judged (0: all) */
	bool to_end;       /* score: projected completion times (hm_pol_comp_to_end) */
	long runs;         /* judgements made */
} hm_pol_comp_t;

/*
 * Set up component member[0..n) of ctx: runs of `periods` periods of its
 * slowest job (at least 2 s), shortened so one run has about max_events
 * events at most; jitter cv; `seeds` draws from seed on.
 */
hm_rc_t hm_pol_comp_init(hm_pol_comp_t *c, const hm_sched_ctx_t *ctx, const int *member, int n,
			 double cv, uint64_t seed, int seeds, double periods, double max_events,
			 hm_err_t *err);
void hm_pol_comp_free(hm_pol_comp_t *c);

/*
 * Judge by projected completion times when every member's remaining
 * iterations are known (hm_sched_job_t.iters_left): runs then last until the
 * members end, shortened so one run has about max_events events at most (never
 * below the horizon set by init). Returns whether it switched.
 */
bool hm_pol_comp_to_end(hm_pol_comp_t *c, double max_events);

/* Score under d[] (one per member), > 0; -1 with *rc set on an error. */
double hm_pol_comp_score(hm_pol_comp_t *c, hm_sim_eval_t *ev, const hm_decision_t *d, hm_rc_t *rc,
			 hm_err_t *err);

/* Events one judgement of c costs, about (four per iteration of each job). */
double hm_pol_comp_events(const hm_pol_comp_t *c);

/* Decisions equal in everything the simulator applies (the epoch id aside). */
bool hm_pol_same_decision(const hm_decision_t *a, const hm_decision_t *b);

/*
 * The class neighbourhood of best[] (n jobs, K classes), shared by optimal's
 * local search and harmonics' check: hm_pol_class_steps(n, K) steps; step q
 * < n K moves job q / K to class q % K, the rest swap two jobs' classes (i <
 * j, in order). hm_pol_class_step writes best[] with step q applied into d[]
 * and returns false when the step changes nothing.
 */
long hm_pol_class_steps(int n, int K);
bool hm_pol_class_step(const hm_decision_t *best, int n, int K, long q, hm_decision_t *d);

/*
 * The score a change from ref[] to d[] (n jobs) must beat: base x (1 + keep x
 * the share of the jobs it changes). A change costs waits in proportion to the
 * jobs it touches; a flat margin on a large component kept out every change
 * to one arriving job.
 */
double hm_pol_keep_bar(double base, double keep, const hm_decision_t *d, const hm_decision_t *ref,
		       int n);

/*
 * Components: par[i] (union-find, resolve with hm_pol_comp_root) links jobs
 * that share a link on any of their paths (all_paths) or on the path in force.
 */
hm_rc_t hm_pol_components(const hm_sched_ctx_t *ctx, bool all_paths, int *par, hm_err_t *err);
int hm_pol_comp_root(int *par, int i);

#endif
