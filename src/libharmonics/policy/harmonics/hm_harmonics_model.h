/*
 * hm_harmonics_model.h - the problem both Harmonics tiers work on.
 *
 * Built once per decision from the scheduler context: every job with network
 * traffic, its robust slot period R = T + z * sd (T: contention-free iteration
 * from measured compute, sd: measured iteration spread), the racks it touches
 * and whether it is local to one rack or spans racks (links above the racks or
 * links of several racks). The Global Coordinator (hm_harmonics_global.h) fixes
 * the decisions of cross-rack jobs; then each rack's Local Scheduler
 * (hm_harmonics_local.h) decides its own jobs around them. A rack's Local
 * Scheduler writes only the decisions of jobs local to that rack, so racks can
 * be solved in parallel threads.
 *
 * Ownership: hm_hmodel_t owns every array in it (hm_hmodel_free, NULL is fine);
 * topo and ctx stay the caller's. Units: seconds.
 */
#ifndef HM_HARMONICS_MODEL_H
#define HM_HARMONICS_MODEL_H

#include <stdbool.h>

#include "hm_pol_common.h"
#include "hm_policy.h"

#define HM_HJOB_NONET (-2) /* job without network traffic */
/* Jobs that contend get different classes, so an overlap delays only the lower
 * one: a pair's loss is the overlap itself. */
#define HM_PAIR_LOSS 1.0
/* Largest modelled overlap (fraction of time) a held job may keep. */
#define HM_HOLD_MAX_OVERLAP 0.005
/* Edge weight (as an excess) of two jobs on a contended link whose own
 * demands fit in it: classes still order them (docs/algorithms.md). */
#define HM_CLASS_MIN_EXCESS 0.01
/* Periods this close (relative) count as equal for self-staggering classes. */
#define HM_SAME_PERIOD 0.01
#define HM_HJOB_CROSS  (-1) /* job spanning racks: owned by the Global Coordinator */

typedef struct {
	double z_sd;          /* slot period margin in iteration standard deviations (2) */
	double max_stretch;   /* largest harmonic period / robust period considered (1.5) */
	int shift_grid;       /* uniform shift candidates per period (cfg.shift_bins or 24) */
	double guard_s;       /* fixed guard, 0 = derived per job */
	int classes;          /* usable priority classes: prio_levels - reserved_levels */
	int max_link_scan;    /* jobs scanned per link when looking for partners (32) */
	double hold_min_gain; /* holding must beat free running by this relative margin */
} hm_hcfg_t;

void hm_hcfg_from_policy(const hm_policy_cfg_t *pc, hm_hcfg_t *hc);

typedef struct {
	hm_pjob_t *pj;   /* view entry: period, burst, links */
	int id;          /* stable job id */
	int rack;        /* home rack, HM_HJOB_CROSS or HM_HJOB_NONET */
	int nracks;      /* racks whose links it loads */
	int *racks;      /* ascending, points into the model's pool */
	double R_s;      /* robust slot period T + z sd */
	bool partnered;  /* shares a link with another job where their demands exceed it */
	double prev_P_s; /* current decision (0 = none / no holding) */
	double prev_s_s;
	int prev_prio; /* current class: keeps near-ties stable across epochs */
	/* Decision. */
	bool decided; /* written by its tier */
	bool hold;    /* slot holding (else free running, period 0) */
	double P_s, s_s, guard_s;
	int prio;
	bool prio_set;
	bool grp;   /* scratch: member of the group being assigned classes */
	double key; /* class order key (set by hm_hmodel_classes), ascending */
} hm_hjob_t;

typedef struct {
	const hm_topo_t *topo;
	hm_hcfg_t cfg;
	hm_pview_t view;
	int njobs;
	hm_hjob_t *jobs;
	int nracks;
	int *rstart, *rjobs; /* jobs touching rack r: rjobs[rstart[r] .. rstart[r+1]) */
	int ncross;
	int *cross; /* cross-rack jobs, in job order */
	int *rack_pool;
	/* hm_hmodel_classes' first grouping pass (union-find parents and sizes),
	 * made in the same sweep over pairs as the group margins; NULL: not made. */
	int *grp_parent, *grp_size;
	int *lrack; /* per link: topo->links[l].rack, read per job and link (NULL: topo's) */
} hm_hmodel_t;

/* Rack of link l (-1 above the racks). */
static inline int hm_hmodel_link_rack(const hm_hmodel_t *m, int l)
{
	return m->lrack ? m->lrack[l] : m->topo->links[l].rack;
}

/*
 * Range [*lo, *hi) of view.ljobs[] to scan for the partners of a job on link l:
 * false when l is not contended; at most cfg.max_link_scan entries.
 */
static inline bool hm_hmodel_link_scan(const hm_hmodel_t *m, int l, int *lo, int *hi)
{
	if (!hm_pview_link_contended(&m->view, l))
		return false;
	*lo = m->view.lstart[l];
	*hi = m->view.lstart[l + 1];
	if (*hi - *lo > m->cfg.max_link_scan)
		*hi = *lo + m->cfg.max_link_scan;
	return true;
}

hm_rc_t hm_hmodel_build(const hm_sched_ctx_t *ctx, const hm_hcfg_t *cfg, hm_hmodel_t *m,
			hm_err_t *err);
void hm_hmodel_free(hm_hmodel_t *m);

/* Free running: no holding, no period, shift or guard (decided stays as it is). */
static inline void hm_hjob_run_free(hm_hjob_t *j)
{
	j->hold = false;
	j->P_s = j->s_s = j->guard_s = 0;
}

/* The job's bursts under its current (or tentative) decision. */
hm_burst_t hm_hjob_burst(const hm_hjob_t *j);

/*
 * Fraction of time the bursts of a and b overlap when both run free. Equal
 * periods with room for both bursts: strict classes stagger them by themselves
 * (the lower waits once, then follows), so only jitter makes them meet again.
 */
double hm_hjob_free_rate(const hm_hjob_t *a, const hm_hjob_t *b);
/* The same under their current decisions (held or free). */
double hm_hjob_pair_rate(const hm_hjob_t *a, const hm_hjob_t *b);

/* Smallest harmonic of base (base / n or base * n, n >= 1) that is >= R_s. */
double hm_harmonic_period(double base_s, double R_s);

/*
 * Excess demand of a and b restricted to links of rack r (r = -1: links above
 * racks). Holding decisions judge a pair by its own two demands: the mean load
 * of the other jobs (view.lload) is not there when those jobs hold staggered
 * slots, and counting it would make every pair on a busy link look blocked.
 * Classes (hm_hmodel_classes) do count it: free-running bursts meet it.
 */
double hm_hjob_excess_on(const hm_hmodel_t *m, const hm_hjob_t *a, const hm_hjob_t *b, int r);

/* Guard for a holding job (cfg.guard_s or derived from its spread and period). */
double hm_hjob_guard(const hm_hmodel_t *m, const hm_hjob_t *j);

/*
 * Priority classes for jobs[0..n): order by (burst / compute, index), i.e. the
 * job that loses the most GPU time per second of waiting first. A group of up
 * to 256 jobs is compressed to the classes with Crux's DAG compression over
 * its contention edges (weight: expected overlap the separation avoids);
 * larger groups are layered (each job one class below the lowest contending
 * job before it). Neighbours outside the group that already have a class
 * (prio_set, e.g. cross-rack jobs in a rack's call) push a job down below them.
 * sc: scratch sized to the model (hm_hmodel_classes owns one).
 */
typedef struct {
	int *seen;          /* per job; no entry equal to a member of jobs[] on entry */
	int *tmp;           /* per job: sort space */
	int *apos;          /* per link, 0 on entry: one job's links (hm_pjob_excess_at) */
	unsigned char *set; /* per job: jobs[].prio_set, a byte read per neighbour */
} hm_prio_scratch_t;

void hm_prio_layer(hm_hmodel_t *m, int *jobs, int n, hm_prio_scratch_t *sc);

/*
 * Classes of every networked job, after both tiers decided holding: the keys
 * of the jobs in groups of two or more, then one hm_prio_layer call per
 * contention group (jobs linked by links where they exceed the capacity).
 * Linear in the links scanned; in the Slurm coordinator the Global
 * Coordinator runs it from the keys the racks report.
 */
hm_rc_t hm_hmodel_classes(hm_hmodel_t *m, hm_err_t *err);

#endif
