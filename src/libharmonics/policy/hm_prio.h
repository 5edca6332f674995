/*
 * hm_prio.h - priority pieces from Crux (SIGCOMM'24) that the crux and harmonics
 * policies share, in libhmmodel: the k correction of P = k * I and the DAG
 * priority compression into hardware classes. The Crux policy itself is
 * hm_policy_crux (hm_policy.h registry), above them in libhmpolicy.
 */
#ifndef HM_PRIO_H
#define HM_PRIO_H

#include <stdint.h>

#include "hm_error.h"

/*
 * k correction of job j against the reference job (the most-traffic one, k = 1):
 * both alternate compute and a communication burst on one shared bottleneck;
 * the two strict-priority orders are simulated (fluid, preemptive) and
 * k_j = (GPU work j loses when the reference goes first) /
 *       (GPU work the reference loses when j goes first),
 * i.e. the factor by which j's intensity must be scaled so that the order by
 * k * I is the order that loses less GPU work. Clamped to [0.1, 10].
 * Paper's example: equal intensity, iterations 2 s and 1 s -> k = 1.5.
 */
double hm_prio_k(double comp_ref_s, double comm_ref_s, int gpus_ref, double comp_j_s,
		 double comm_j_s, int gpus_j);

/*
 * Memo of k per job shape (compute, burst, gpus) against one reference job:
 * jobs of one shape share k, so a decision runs one two-job simulation per
 * shape, not per job. Sized for njobs distinct shapes (more are computed, not
 * stored); NULL when out of memory, and hm_prio_kmemo_k(NULL, ...) simply
 * computes k.
 */
typedef struct hm_prio_kmemo hm_prio_kmemo_t;

hm_prio_kmemo_t *hm_prio_kmemo_new(int njobs);
double hm_prio_kmemo_k(hm_prio_kmemo_t *memo, double comp_ref_s, double comm_ref_s, int gpus_ref,
		       double comp_j_s, double comm_j_s, int gpus_j);
void hm_prio_kmemo_free(hm_prio_kmemo_t *memo);

/* GPU utilisation of the two jobs (compute time / wall time) with job `first`
 * (0 or 1) having strict priority on their shared link; util[2] out. */
void hm_prio_two_job_util(const double comp_s[2], const double comm_s[2], int first,
			  double util[2]);

/*
 * Priority compression: n jobs with priorities prio[] (higher = more important)
 * and contention edges (a[e], b[e]) between jobs that share a link. The DAG
 * orients each edge from the higher to the lower priority (ties: lower index
 * first), weight = w[e] (Crux: the higher job's intensity). Assigns level[i] in
 * [0, K) (0 = highest) keeping every edge's order (level of the higher job <=
 * level of the lower one) and maximising the weight of edges cut across levels:
 * `orders` random topological orders (seeded) each solved by the DP
 * f(i, k) = max_j f(j, k - 1) + C(j, i). Returns the cut weight, or -1 on
 * allocation failure. deadline_s > 0 stops sampling orders at that monotonic
 * time (at least one order is always solved); *cut_short says so.
 */
double hm_prio_compress(int n, const double *prio, int nedges, const int *a, const int *b,
			const double *w, int K, int orders, uint64_t seed, double deadline_s,
			int *level, int *cut_short);

#endif
