/*
 * hm_harmonics_global.h - the Global Coordinator engine: jobs that span racks.
 *
 * It owns only the consistency of cross-rack jobs (one period and shift for the
 * whole job, whichever racks it crosses) and the links above the racks. Jobs are
 * taken in decreasing load; for each, the racks it crosses report a cost per
 * candidate (period, shift) (hm_local_report) and the coordinator adds the cost
 * on links above the racks, then fixes the cheapest, or free running when that
 * is cheaper. Work: O(cross-rack jobs x candidates x (racks crossed + partners)).
 */
#ifndef HM_HARMONICS_GLOBAL_H
#define HM_HARMONICS_GLOBAL_H

#include "hm_harmonics_model.h"

/* Decide every cross-rack job of m (writes only those). */
hm_rc_t hm_global_solve(hm_hmodel_t *m, hm_err_t *err);

#endif
