/*
 * hm_pol_common.h - internal helpers shared by the cassini, crux and harmonics
 * policies: a compact per-job view of what a policy needs (iteration period,
 * burst, the links it loads and how hard), a link -> jobs index, union-find,
 * a seeded generator and the periodic-burst overlap used by the cost models.
 *
 * Not part of the public API. Ownership: hm_pview_t owns every array in it;
 * release with hm_pview_free() (NULL is fine). Units: seconds, bits.
 */
#ifndef HM_POL_COMMON_H
#define HM_POL_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_error.h"
#include "hm_policy.h"

/* Assumed compute jitter (coefficient of variation) before anything is measured. */
#define HM_POL_DEFAULT_CV 0.05

typedef struct {
	int idx; /* index into ctx->jobs */
	int gpus;
	double comp_s;  /* compute per iteration (measured when available) */
	double burst_s; /* communication burst alone on an idle cluster */
	double T_s;     /* contention-free iteration: compute + burst (overlap honoured) */
	double sd_s;    /* iteration-time standard deviation (measured or assumed) */
	double bits;    /* bits per iteration over all its links (traffic volume) */
	double bneck_s; /* per-iteration transfer time on its most loaded link */
	int nlinks;     /* links it loads, ascending ids */
	int *links;     /* points into hm_pview_t.link_pool */
	double *demand; /* per link: fraction of capacity while bursting, (0, 1] */
	double *lbits;  /* per link: bits per iteration */
} hm_pjob_t;

typedef struct {
	int njobs;
	hm_pjob_t *jobs;
	int nlinks;           /* topology links */
	int *lstart;          /* CSR: jobs loading link l are ljobs[lstart[l] .. lstart[l+1]) */
	int *ljobs;           /* indexes into jobs[] */
	double *lload;        /* per link: mean demand, sum of demand x burst / period */
	double *lmaxd;        /* per link: largest demand of a job on it */
	unsigned char *lcont; /* per link: 1 when two jobs on it can exceed it (lmaxd, lload) */
	int *link_pool;       /* owned storage behind jobs[].links */
	double *dbl_pool;     /* owned storage behind jobs[].demand and .lbits */
} hm_pview_t;

/*
 * Build the view of ctx's jobs; job i uses traffic trs[i] when trs is non-NULL
 * (a path choice), else ctx->jobs[i].traffic. Jobs without network traffic get
 * nlinks == 0.
 */
hm_rc_t hm_pview_build(const hm_sched_ctx_t *ctx, const hm_traffic_t *const *trs, hm_pview_t *v,
		       hm_err_t *err);
void hm_pview_free(hm_pview_t *v);

/* An index sorted by key (ties by index): qsort(o, n, sizeof(*o), hm_pol_ord_cmp). */
typedef struct {
	double key;
	int i;
} hm_pol_ord_t;
int hm_pol_ord_cmp(const void *x, const void *y);

/* Traffic of job j on path p (path_traffic when there are several). */
const hm_traffic_t *hm_pol_traffic(const hm_sched_job_t *j, int path);

/* Per-link bits of one traffic description, merged across phases into (links, bits). */
int hm_pol_traffic_links(const hm_traffic_t *tr, int *links, double *bits, int cap);

/*
 * Path choice over equal-cost paths (Crux's): jobs in descending key[] each
 * take the path whose most loaded link, with the job's mean load added, is
 * least utilised (loads: bits per iteration over T_s[i], its iteration time). keep > 0 keeps
 * a job's current path unless another is better by more than keep (relative);
 * keep == 0 takes the first best. path[] gets one index per ctx job.
 */
hm_rc_t hm_pol_choose_paths(const hm_sched_ctx_t *ctx, const double *T_s, const double *key,
			    double keep, int *path, hm_err_t *err);

/* Union-find over n elements. */
typedef struct {
	int *parent;
	int n;
} hm_uf_t;
hm_rc_t hm_uf_init(hm_uf_t *u, int n);
/* Inline: the class and component passes call it per pair. */
static inline int hm_uf_find(hm_uf_t *u, int a)
{
	while (u->parent[a] != a) {
		u->parent[a] = u->parent[u->parent[a]];
		a = u->parent[a];
	}
	return a;
}
bool hm_uf_union(hm_uf_t *u, int a, int b); /* true when a and b were apart */
void hm_uf_free(hm_uf_t *u);

/*
 * Periodic bursts: job a bursts on [s + k P, s + k P + b). overlap per unit
 * time of two such patterns. free (P == 0 / unknown phase) or incommensurate
 * periods give the expectation over independent phases, (b_a/P_a)(b_b/P_b).
 */
typedef struct {
	double P_s; /* period (slot period, or iteration time when free) */
	double s_s; /* burst start phase, absolute mod P */
	double b_s; /* burst length */
	bool free;  /* phase unknown / drifting */
} hm_burst_t;

double hm_burst_overlap_rate(const hm_burst_t *a, const hm_burst_t *b);

/*
 * Excess demand of two jobs on the links they share: max over shared links of
 * d_a + d_b + (mean load of the other jobs on the link) - 1, clamped to
 * [0, 1]; 0 when they share nothing. lload (hm_pview_t.lload) may be NULL:
 * the pair alone. The background term catches links that many light jobs
 * congest together although no two of them would.
 */
double hm_pjob_excess(const hm_pjob_t *a, const hm_pjob_t *b, const double *lload);
/*
 * The same for many b against one a, in the time of b's links (the galloping
 * merge when b's are over 4 times a's): apos[l] is 1 + the position of link l
 * in a->links, 0 for links a does not load.
 */
double hm_pjob_excess_at(const hm_pjob_t *a, const int *apos, const hm_pjob_t *b,
			 const double *lload);

/* False when no two jobs on link l can exceed it (cheap filter before pairs):
 * a byte per link, as the pair passes ask once per job and link. */
static inline bool hm_pview_link_contended(const hm_pview_t *v, int l)
{
	return v->lcont[l];
}

#endif
