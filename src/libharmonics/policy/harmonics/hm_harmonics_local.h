/*
 * hm_harmonics_local.h - the Local Scheduler engine: one rack's problem.
 *
 * A rack owns its hosts' NIC links and its ToR uplinks. Its Local Scheduler
 * decides the jobs local to the rack (every link they load belongs to it):
 * per contention group it tries slot holding on harmonic periods (each job's
 * period the smallest base/n or base*n >= its robust period, for a few bases)
 * with shifts from a greedy pass plus coordinate descent over boundary and grid
 * candidates, and free running; it keeps the cheapest by the cost model
 * (stretch + overlap x excess demand). Cross-rack jobs are fixed inputs here:
 * the Global Coordinator decided them, the rack works around them.
 *
 * It also reports, for the Global Coordinator, what a cross-rack job would cost
 * in this rack for each candidate (period, shift) against the rack's already
 * fixed cross-rack jobs, and what leaving it free would cost its local partners.
 *
 * Thread safety: hm_local_solve(m, r, ...) writes only jobs whose home rack is
 * r; calls for different racks may run concurrently. hm_local_t is per thread.
 */
#ifndef HM_HARMONICS_LOCAL_H
#define HM_HARMONICS_LOCAL_H

#include "hm_harmonics_model.h"

typedef struct hm_local hm_local_t;

/* Scratch for one thread; NULL on allocation failure. Free with hm_local_free (NULL ok). */
hm_local_t *hm_local_create(const hm_hmodel_t *m);
void hm_local_free(hm_local_t *ls);

/* Decide every job local to rack r (cross-rack jobs must be decided already). */
hm_rc_t hm_local_solve(hm_local_t *ls, hm_hmodel_t *m, int r, hm_err_t *err);

/*
 * Rack r's report for cross-rack job x: adds to cost[i] the overlap cost of x
 * with period P_s (0: running free) and shift shifts[i] against the rack's
 * cross-rack jobs decided so far; adds to *undecided_pen what x running free
 * costs the rack's cross-rack jobs not decided yet (they could stagger around
 * a held x); returns what x running free costs its local partners in r.
 */
double hm_local_report(const hm_hmodel_t *m, int r, int x, double P_s, const double *shifts, int n,
		       double *cost, double *undecided_pen);

/* Cost-model helpers shared with the Global Coordinator. */
double hm_stretch_cost(const hm_hjob_t *j, double P_s);

#endif
