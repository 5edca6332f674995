/*
 * hm_harmonics_check.h - the check that keeps harmonics from losing to fair
 * sharing: a small component's plan is run in the simulator's model against
 * fair sharing and against strict classes in another order, and the best is
 * applied (docs/algorithms.md, "The check").
 */
#ifndef HM_HARMONICS_CHECK_H
#define HM_HARMONICS_CHECK_H

#include "hm_harmonics_model.h"
#include "hm_sim.h"

#define HM_CHECK_MAX_JOBS      16    /* larger components keep the plan */
#define HM_CHECK_MAX_EVENTS    3e5   /* evaluation events per decision */
#define HM_CHECK_SEARCH_EVENTS 3e4   /* of which the class search's, at most */
#define HM_CHECK_KEEP          0.003 /* what the plan, and each step, is preferred by */

typedef struct {
	int max_jobs;         /* components larger than this keep the plan */
	double max_events;    /* evaluation events per decision, all components together */
	double search_events; /* of which the class search may spend, all components together */
	double keep;          /* what another candidate, and each step, must gain (relative) */
	int checked, changed; /* out: components checked, components whose plan was replaced */
	int moves, taken;     /* out: class moves evaluated, taken */
	long events;          /* out: evaluation events spent, the search's included */
	double search_spent;  /* out: the search's evaluation events */
} hm_hcheck_cfg_t;

/*
 * plan[i] is the decision harmonics made for ctx job i (model m); per
 * component of at most max_jobs jobs sharing links (on the paths in force),
 * replaced by the best of: the plan, fair sharing, one class per job in
 * Smith's order for progress (shortest burst x period first) and in the
 * model's class order (Crux's), and the decisions in force, each run in the
 * simulator's model from random phases; another than the plan must beat it by
 * keep. Then, while search_events last, a search from the best moves one job
 * to another class or swaps two jobs' classes, taking each step that gains
 * keep, from a place in its cycle of steps that changes with ctx->now_s. *ev
 * is created on first use (the caller frees it with hm_sim_eval_free).
 */
hm_rc_t hm_hcheck(const hm_sched_ctx_t *ctx, const hm_hmodel_t *m, hm_decision_t *plan,
		  hm_sim_eval_t **ev, int *ev_cap, hm_hcheck_cfg_t *cfg, hm_err_t *err);

#endif
