/*
 * hm_place_score.h - contention-aware placement (docs/placement.md): a view of
 * the link loads of the running jobs, candidate host sets for an arriving job,
 * and the one score that ranks them. select/harmonics_cons_tres and the
 * simulator (harmonics-sim --placement harmonics) call the same functions.
 *
 * Score of a candidate for job x: the iteration slowdown it is expected to
 * suffer plus the slowdown it adds to the running jobs, summed over jobs
 * (unitless: 0.1 = one job 10% slower). For each running job y that shares a
 * link with x, on the link where the pair costs most (a ring advances at its
 * slowest link, so a pair overlapping on several links loses time once):
 *
 *   tau_j = bits_j / C          full-link time job j needs per iteration
 *   a_j   = tau_j / M_j         share of the link j's burst wants (M_j: its burst)
 *   o_x   = M_x * min(1, M_y / P_y)   expected overlap of x's burst with y's
 *                                     (random relative phase, P_y: y's period)
 *   s_x   = max-min share of x against y on the link (a_x when a_x + a_y <= 1)
 *   dx    = o_x * (a_x / s_x - 1) / P_x      (dy the same with x and y swapped)
 *
 * When both jobs are scheduled (their bursts can be staggered by the policy)
 * and the link's utilisation with x stays at most 1, the pair's cost is
 * multiplied by HM_PLACE_SCHED_RESIDUAL: staggering removes most of the overlap,
 * not all (jitter, guards, drifting periods). Priority classes are not used:
 * the arriving job's class is decided after it starts.
 *
 * Thread safety: a built view is read-only; any number of threads may score
 * against it. Units: seconds (_s), bits.
 */
#ifndef HM_PLACE_SCORE_H
#define HM_PLACE_SCORE_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_error.h"
#include "hm_job.h"
#include "hm_topo.h"

/* Share of a staggerable pair's contention that remains under a scheduler. */
#define HM_PLACE_SCHED_RESIDUAL 0.25
/* Scores closer than this are equal (ties go to fewer racks, then cons_tres). */
#define HM_PLACE_SCORE_EPS 1e-4
/* Candidates of one placement at most (bounds the time per placement). */
#define HM_PLACE_MAX_CANDS 12

/* A job as placement sees it: running (in a view) or arriving (scored). */
typedef struct {
	uint32_t id;
	int gpus;
	double period_s;        /* iteration time: measured, else contention-free */
	double burst_s;         /* communication time per iteration, alone */
	bool scheduled;         /* its bursts may be staggered by the scheduler */
	const hm_traffic_t *tr; /* link loads on the path it uses (borrowed) */
} hm_lview_job_t;

/* One job's use of one link: bits per iteration. */
typedef struct {
	int job;
	double bits;
} hm_lview_use_t;

/*
 * The link loads of the running jobs on a topology, by link. Built once per
 * change, shared read-only. Jobs without traffic are kept (they use no link).
 */
typedef struct hm_lview {
	const hm_topo_t *topo; /* borrowed: must outlive the view */
	int njobs;
	hm_lview_job_t *jobs; /* copies; tr is NULL in them */
	int *use_off; /* [topo->nlinks + 1]: uses of link l are use[use_off[l]..use_off[l+1]) */
	hm_lview_use_t *use;
	double *link_util;    /* [nlinks] mean utilisation: sum over jobs of bits / (C * P) */
	double *rack_up_util; /* [nracks] mean link_util of the rack's ToR uplinks (both ways) */
	double *host_util;    /* [nhosts] largest link_util of the host's NIC links */
	/* More jobs on the same topology (NULL = none), scored as if in this view:
	   the select plugin's recent placements in front of the coordinator's view.
	   Borrowed; set by the caller after hm_lview_build. */
	const struct hm_lview *next;
} hm_lview_t;

/* Build a view of jobs[0..n) on t (n may be 0). */
hm_rc_t hm_lview_build(const hm_topo_t *t, const hm_lview_job_t *jobs, int n, hm_lview_t **out,
		       hm_err_t *err);
void hm_lview_free(hm_lview_t *v); /* NULL is fine */

/* Sums over v and the views chained after it (v may be NULL: 0). */
double hm_lview_link_util(const hm_lview_t *v, int link);
double hm_lview_rack_util(const hm_lview_t *v, int rack);
double hm_lview_host_util(const hm_lview_t *v, int host);
int hm_lview_njobs(const hm_lview_t *v);

/* Period and burst of a job from its profile and traffic (contention-free). */
void hm_lview_job_times(const hm_profile_t *prof, const hm_traffic_t *tr, double *period_s,
			double *burst_s);

/* What a candidate costs. */
typedef struct {
	double total;     /* self + others: what placement minimises */
	double self;      /* slowdown the job is expected to suffer */
	double others;    /* slowdown it adds to the running jobs, summed */
	int shared_jobs;  /* running jobs it shares a link with */
	int shared_links; /* its links that carry another job */
} hm_place_score_t;

/* Work space of hm_place_score, reused across the candidates of one placement. */
typedef struct hm_place_scratch hm_place_scratch_t;

hm_place_scratch_t *hm_place_scratch_new(void);    /* NULL when out of memory */
void hm_place_scratch_free(hm_place_scratch_t *s); /* NULL is fine */

/*
 * Score job x (x->tr: its link loads on the candidate) against the view.
 * s: work space (NULL = made and freed here). HM_ERR_INVAL for a NULL view,
 * job or traffic, or a link outside the view's topology.
 */
hm_rc_t hm_place_score(const hm_lview_t *v, const hm_lview_job_t *x, hm_place_scratch_t *s,
		       hm_place_score_t *out, hm_err_t *err);

/* A candidate host set, ring order (rack, then host index). */
typedef struct {
	int nhosts;
	int *hosts; /* owned */
	int *units; /* owned: units taken on each host */
	int nracks;
	const char *rule; /* generator rule that made it ("packed", "light", ...) */
} hm_place_cand_t;

void hm_place_cand_free(hm_place_cand_t *c);

/* What the arriving job needs, in units (GPUs in the simulator, nodes in Slurm). */
typedef struct {
	const int *avail; /* [nhosts] units each host can give now; 0 = none */
	int need;         /* units the job needs */
	int host_units;   /* units of a whole host: a job of at most this many goes to
			     one host (first fit in index order), no alternatives */
} hm_place_req_t;

/*
 * Candidates for req: at most max (<= HM_PLACE_MAX_CANDS) distinct host sets,
 * the first always the packed one, which is exactly hm_place_default's choice
 * (cons_tres with topology/tree: the single rack needing the fewest hosts,
 * tightest first; else the fewest racks, most free first). When a single rack
 * can hold the job, only single-rack candidates follow; else racks ordered by
 * their uplink load in the view (v may be NULL: packed rules only), within one
 * pod first on multi-level topologies. Returns how many were made (0 when the
 * units do not cover need), -1 when out of memory or on a bad argument.
 */
int hm_place_candidates(const hm_topo_t *t, const hm_lview_t *v, const hm_place_req_t *req,
			hm_place_cand_t *out, int max);

/*
 * A candidate as a placement. gpus_per_node < 0: its units are GPUs (the
 * simulator); else each host is a node giving gpus_per_node GPUs, or every GPU
 * it has when gpus_per_node is 0 or more than it has (the coordinator's rule).
 * ring_key (NULL = the candidate's order): hosts sorted by ring_key[host], as
 * Slurm lists a job's nodes by node index.
 */
hm_rc_t hm_place_cand_placement(const hm_topo_t *t, const hm_place_cand_t *c, int gpus_per_node,
				const int *ring_key, hm_placement_t *out, hm_err_t *err);

/* What hm_place_choose needs to know of the arriving job. */
typedef struct {
	uint32_t id;
	const hm_profile_t *profile;
	bool scheduled;    /* it asked for communication scheduling */
	int gpus_per_node; /* as hm_place_cand_placement */
	const int *ring_key;
	int max_paths; /* equal-cost paths scored per candidate (>= 1): the best counts */
	int plane;     /* the topology plane its traffic takes (its partition's topology,
			  hm_topo_plane_index); 0 = the cluster default */
} hm_place_job_t;

/*
 * Score cands[0..n) for job against v (NULL = nothing runs: every score 0) and
 * return the index of the best: the least total, ties (within
 * HM_PLACE_SCORE_EPS) to fewer racks, then to the earlier candidate (the packed
 * one is first). scores[n] (may be NULL) receives each candidate's score; a
 * candidate whose traffic cannot be derived gets total = INFINITY. Returns -1
 * (err set) on a bad argument or out of memory.
 */
int hm_place_choose(const hm_topo_t *t, const hm_lview_t *v, const hm_place_job_t *job,
		    const hm_place_cand_t *cands, int n, hm_place_score_t *scores, hm_err_t *err);

#endif
