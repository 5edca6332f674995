/*
 * hm_sim_int.h - internals shared by the simulator's files (not installed,
 * not part of any contract): the max-min workspace reused across solves.
 */
#ifndef HM_SIM_INT_H
#define HM_SIM_INT_H

#include "hm_sim.h"

/* Scratch for hm_mm_solve, sized for a topology; reused so solves never allocate. */
typedef struct {
	int nlinks;
	double *res;         /* residual capacity per link, bit/s */
	double *w;           /* unfrozen flows of the current class per link */
	unsigned char *mark; /* link is in the current list (all zero between solves) */
	unsigned char *sat;  /* link saturated in the current class */
	int *list;           /* links touched by the solve */
	int cap_ph;          /* capacity of the per-phase arrays below */
	int *order;          /* phases sorted by class */
	unsigned char *frozen;
} hm_mm_ws_t;

hm_rc_t hm_mm_ws_init(hm_mm_ws_t *ws, int nlinks, hm_err_t *err);
void hm_mm_ws_free(hm_mm_ws_t *ws); /* NULL is fine */

/*
 * Progressive filling over the links the phases touch (see hm_maxmin). Cost:
 * O(R * (L + F)) for R saturation rounds over L touched links and F phase-link
 * entries. A phase with no links gets HUGE_VAL. Capacities must be > 0.
 */
hm_rc_t hm_mm_solve(hm_mm_ws_t *ws, const double *capacity_bps, const hm_mm_phase_t *ph, int nph,
		    double *rate_bps, hm_err_t *err);

#endif
