/*
 * hm_harmonics_tier.h - the two tiers' round as messages: the Global
 * Coordinator, once it has decided the cross-rack jobs, sends each rack with
 * work one request (hm_rack_msg.h); the rack's Local Scheduler solves it
 * wherever it runs (its leader's node agent, or this process) and replies
 * with its local jobs' decisions. The simulator, harmonics-bench and the
 * coordinator run this same code; only the transport differs (in process
 * here, sockets in the cluster). A rack that does not answer runs its local
 * jobs free for the round (fail-open).
 */
#ifndef HM_HARMONICS_TIER_H
#define HM_HARMONICS_TIER_H

#include "hm_harmonics_model.h"
#include "hm_rack_msg.h"

typedef struct {
	int racks_asked;    /* requests sent (racks with partnered local jobs) */
	int racks_answered; /* replies applied */
	int racks_by_leader;
} hm_tier_stats_t;

/*
 * The round's requests: one per rack with a partnered local job, with every
 * job on its links (cross-rack jobs as decided by now). The local jobs of the
 * other racks are decided here (free running: no partner to stagger with).
 * *reqs is malloc'd (free each with hm_rack_req_free, then the array).
 */
hm_rc_t hm_tier_requests(hm_hmodel_t *m, unsigned long round, hm_rack_req_t **reqs, int *n,
			 hm_err_t *err);

/* A rack's Local Scheduler on one request (the leader's side); fills rep. */
hm_rc_t hm_tier_rack_solve(const hm_rack_req_t *q, hm_rack_rep_t *rep, hm_err_t *err);

/* The in-process transport: solves every request here; arg points to an int,
   the worker threads (<= 1: this thread). */
hm_rc_t hm_tier_inproc_exchange(void *arg, const hm_rack_req_t *reqs, hm_rack_rep_t *reps, int n,
				hm_err_t *err);

/*
 * Write rep's decisions into m's local jobs of q's rack. A reply that did not
 * come, or that does not answer every local job of q with a valid decision,
 * leaves them all free running (false).
 */
bool hm_tier_apply(hm_hmodel_t *m, const hm_rack_req_t *q, const hm_rack_rep_t *rep);

/*
 * A whole round through t (NULL: in process with threads): requests, exchange,
 * apply. silent (m->nracks entries, or NULL) gets 1 for each rack asked that
 * gave no valid answer (its local jobs run free this round), else 0.
 */
hm_rc_t hm_tier_round(hm_hmodel_t *m, unsigned long round, const hm_rack_transport_t *t,
		      int threads, hm_tier_stats_t *st, unsigned char *silent, hm_err_t *err);

/*
 * Cross-rack jobs that touch a rack marked in silent[0..nsilent) run free,
 * decided before the Global Coordinator's solve (which then works around
 * them): a rack that did not answer the last round may be cut off, its steps
 * free. Returns how many jobs it set.
 */
int hm_tier_pin_silent(hm_hmodel_t *m, const unsigned char *silent, int nsilent);

#endif
