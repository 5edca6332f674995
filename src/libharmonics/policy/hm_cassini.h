/*
 * hm_cassini.h - the pieces of the Cassini policy (NSDI'24) exposed for tests:
 * the per-link unified circle and the affinity-graph shift propagation. The
 * policy itself is hm_policy_cassini (hm_policy.h registry).
 */
#ifndef HM_CASSINI_H
#define HM_CASSINI_H

#define HM_CASSINI_BINS    360
#define HM_CASSINI_LCM_CAP 8 /* unified circle at most 8 x the longest period */

/*
 * One link's unified circle: n jobs with iteration periods T_s[i], bursts of
 * burst_s[i] at the end of each iteration and demand[i] (fraction of the link
 * while bursting). The perimeter is the LCM of the periods (ms resolution),
 * capped at HM_CASSINI_LCM_CAP x the longest (then the longest period).
 * Rotations (seconds, in [0, T_s[i])) maximise the compatibility score
 * 1 - mean over the 360 angles of max(0, sum of demands - 1): job 0 stays at
 * 0, two jobs exhaustively, more by greedy insertion plus a coordinate-descent
 * sweep. Returns the score; rot_s[n] out. Returns -1 on allocation failure.
 */
double hm_cassini_link(int n, const double *T_s, const double *burst_s, const double *demand,
		       double *rot_s);

/* Score of given rotations on one link (same model). */
double hm_cassini_score(int n, const double *T_s, const double *burst_s, const double *demand,
			const double *rot_s);

/* Affinity-graph edge: job `job` has best rotation rot_s on link `link`. */
typedef struct {
	int job;
	int link; /* any id, 0 .. nlinks-1 */
	double rot_s;
} hm_cassini_edge_t;

/*
 * BFS shift propagation over the bipartite affinity graph. Roots are taken from
 * roots[] in order (the first unvisited one starts each component) with shift 0;
 * a job j reached from job i over link l gets
 *     t_j = (t_i - t_i^l + t_j^l) mod T_j.
 * A link closing a loop whose rotation disagrees with the assignment by more
 * than tol_s is a conflict: the first assignment is kept. comp[j] = root of j's
 * component (-1: no edge). Returns the number of conflicts, -1 on allocation
 * failure.
 */
int hm_cassini_propagate(int njobs, const double *T_s, int nlinks, int nedges,
			 const hm_cassini_edge_t *e, const int *roots, double tol_s,
			 double *shift_s, int *comp);

#endif
