/*
 * hm_bound.h - a lower bound on the sum of job completion times that no
 * communication schedule can beat, from link capacities (docs/algorithms.md,
 * "The bound", has the proof).
 *
 * Each job j cannot start before release_s and needs at least work_s of
 * running time (its iterations at the contention-free iteration time), so it
 * completes no earlier than e_j = release_s + work_s. On a link group (one
 * link, or the parallel uplinks a job may choose between) of capacity c, job j
 * must carry bits_j, i.e. bits_j / c seconds of the whole group. Whatever the
 * schedule, the number of jobs of a group done by time t is at most what
 * preemptive shortest-remaining-work-first on that group alone achieves
 * (Schrage 1968); so at most E(t) - max over groups of (E_g(t) - S_g(t))^+
 * jobs are done, with E counting jobs with e_j <= t and S_g the SRPT count.
 * The k-th completion is then no earlier than the first t where that count
 * reaches k. Components of jobs linked by shared groups are bounded apart and
 * added. Cost: O(P log P) for P = jobs + job-group entries.
 */
#ifndef HM_BOUND_H
#define HM_BOUND_H

#include "hm_error.h"
#include "hm_job.h"
#include "hm_topo.h"

typedef struct {
	double release_s;   /* earliest start */
	double work_s;      /* least running time alone */
	int ngroups;        /* link groups it loads */
	const int *group;   /* group ids, each once */
	const double *bits; /* bits it must carry on each group over its run */
} hm_bound_job_t;

/*
 * Sum over jobs of the lower bound on their completion times (absolute, not
 * minus arrival) into *sum_s. group_cap_bps[g] > 0 for every group used.
 */
hm_rc_t hm_bound_sum_completion(const double *group_cap_bps, int ngroups,
				const hm_bound_job_t *jobs, int njobs, double *sum_s,
				hm_err_t *err);

/*
 * Link groups of a topology: every NIC link is its own group; switch links
 * are grouped by direction, level and the racks below their lower switch,
 * so the uplinks among which equal-cost paths choose form one group (a
 * path choice moves bits between them, never out of the group). group[l]
 * for every link, capacities summed into cap_bps (caller frees both).
 */
hm_rc_t hm_bound_link_groups(const hm_topo_t *t, int **group, double **cap_bps, int *ngroups,
			     hm_err_t *err);

/*
 * Bits per iteration a job puts on each link group whatever path it takes:
 * the least over its npaths traffic descriptions (tr[0..npaths)). Writes up
 * to cap (group, bits) pairs, groups ascending; returns their count, or -1
 * when cap is too small.
 */
int hm_bound_job_groups(const hm_traffic_t *tr, int npaths, const int *group, int *out_group,
			double *out_bits, int cap);

#endif
