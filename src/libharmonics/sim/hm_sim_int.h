/*
 * hm_sim_int.h - internals shared by the simulator's files (not installed,
 * not part of any contract): the max-min workspace reused across solves.
 */
#ifndef HM_SIM_INT_H
#define HM_SIM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_sim.h"

/* Heap entry of the water-filling: the level at which a link saturates. */
typedef struct {
	double key;
	int l;        /* local link */
	unsigned ver; /* the key is exact when equal to the link's version */
} hm_mm_hent_t;

/*
 * A max-min problem in local numbering plus the solver's scratch. The caller
 * reserves sizes with hm_mm_reserve(), fills res (capacities of local links
 * 0..nl-1), pstart/elink/eflow (phase i's entries are pstart[i]..pstart[i+1]-1:
 * local link and flows > 0) and prio, then calls hm_mm_solve(). Arrays grow
 * and are reused, so steady-state solves never allocate.
 */
typedef struct {
	int cap_l, cap_ph, cap_ent, cap_heap;
	/* Problem. */
	double *res; /* [nl] capacities in, residuals out, bit/s */
	int *pstart; /* [nph + 1] */
	int *elink;  /* [nent] */
	int *eflow;  /* [nent] */
	int *prio;   /* [nph] */
	/* Scratch. */
	double *fixed;         /* [nl] load of this class's frozen phases */
	int *w;                /* [nl] unfrozen flows of the current class */
	unsigned *ver;         /* [nl] bumped when w changes */
	int *lstart, *lfill;   /* [nl + 1] phases per link (CSR) */
	int *lph;              /* [nent] */
	int *order;            /* [nph] phases by class */
	unsigned char *frozen; /* [nph] */
	hm_mm_hent_t *heap;    /* [nl] */
	double *pcap;          /* [nph] scan fill: the least key of its one-phase links ... */
	int *pcapl;            /* [nph] ... and that link (-1: none) */
	int *capq;             /* [nph] scan fill: capped phases by (pcap, pcapl) */
	double *key;           /* [nl] scan fill: saturation level of each link */
	int *live;             /* [nl] scan fill: links with unfrozen phases */
} hm_mm_ws_t;

hm_rc_t hm_mm_reserve(hm_mm_ws_t *ws, int nl, int nph, int nent, hm_err_t *err);
void hm_mm_ws_free(hm_mm_ws_t *ws); /* NULL is fine */

/*
 * Per-flow max-min with coupled phases and strict classes (see hm_maxmin) as an
 * event-driven water-filling: a heap holds each link's saturation level, so a
 * solve costs O(F + L log L) per class for L links and F phase-link entries.
 * A phase without entries gets HUGE_VAL. Capacities must be > 0 (not checked).
 */
void hm_mm_solve(hm_mm_ws_t *ws, int nl, int nph, double *rate_bps);

/* ---- simulator state shared by hm_sim*.c ---- */

typedef enum {
	SEV_ARRIVAL,
	SEV_ITER_START,
	SEV_COMPUTE_END,
	SEV_PHASE_READY,
	SEV_PHASE_START, /* a held burst's slot begins */
	SEV_PHASE_END,
	SEV_EPOCH,
	SEV_SAMPLE,
} sim_ev_type_t;

typedef struct {
	double t;
	uint64_t seq; /* FIFO among equal times: runs are deterministic */
	int type;
	int job;
} sim_ev_t;

typedef struct {
	sim_ev_t *a;
	int n, cap;
	uint64_t seq;
} sim_heap_t;

/* A scheduled phase end (SEV_PHASE_END) in the heap of phase ends. */
typedef struct {
	double t;
	uint64_t seq; /* from sim_heap_t's counter: one order over both heaps */
	int job;
} sim_end_t;

/*
 * Phase ends, at most one per job, moved in place when a rate changes (pos:
 * each job's entry or -1): a re-solve moves many of them, and events left
 * behind in the main heap outnumbered the live ones 3 to 1.
 */
typedef struct {
	sim_end_t *a;
	int *pos;
	int n;
} sim_ends_t;

/* An active phase on a link: its job and how many of its flows cross the link. */
typedef struct {
	int job, flows;
} sim_lk_t;

typedef enum { SJ_PENDING, SJ_QUEUED, SJ_RUNNING, SJ_DONE, SJ_UNPLACED } sim_job_state_t;

typedef struct {
	const hm_job_t *job;
	int state;
	hm_placement_t pl;
	hm_traffic_t *tr; /* [npaths] */
	int npaths;
	bool network; /* some phase crosses a link */
	double alone_iter_s, target_iters;
	hm_decision_t dec;
	double pending_delay_s; /* one-time shift for the next iteration start */
	double cv;              /* evaluation runs: its own jitter (< 0: the run's) */
	uint64_t rng[2];        /* jitter stream, seeded per job */
	int run_pos;            /* index in the running list, -1 when not running */
	/* With an update lead: the next decision from next_at_s, one decided while
	 * it was pending (sim_dec_promote); decided: a first decision was taken. */
	bool decided, has_next, has_deferred;
	hm_decision_t next, deferred;
	double next_at_s;

	/* Current iteration. */
	double iter_start_s, compute_s, compute_end_s, burst_start_s;
	double burst_s; /* this iteration's burst, counted at its end */
	bool compute_done, ready_pending, slot_wait;
	int next_phase, cur_phase;

	/* Active network phase (act_pos >= 0 while its flows are on links). */
	int act_pos;
	const hm_phase_load_t *ld;
	int prio;
	bool sym; /* as many flows on each link's reverse (see rev) */
	double rem_bits, rate_bps, t_last_s;

	/* Statistics. */
	double start_s, end_s;
	double iters, sum_iter_s, sum_comm_s, sum_compute_s;
	double ep_n, ep_iter_s, ep_iter2_s, ep_compute_s, ep_compute2_s,
	    ep_comm_s; /* since last epoch */
	double meas_iter_s, meas_compute_s, meas_comm_s, meas_sd_s, meas_compute_sd_s;
	double *samp; /* reservoir of iteration times */
	int nsamp, cap_samp;
	char note[128];
} sim_job_t;

typedef struct {
	const hm_topo_t *topo;
	const hm_workload_t *w;
	const hm_policy_ops_t *pol;
	hm_policy_cfg_t pcfg;
	void *pstate;
	hm_sim_opts_t o;
	hm_sim_result_t *res;

	int nj;
	sim_job_t *jobs;
	sim_heap_t heap;
	sim_ends_t ends;
	double now;
	uint64_t events;
	uint64_t rng[2]; /* reservoir sampling */

	hm_cluster_state_t cs;
	bool cs_init;
	int *queue; /* waiting jobs in arrival order */
	int nqueue;
	int *running; /* running jobs in start order */
	int nrunning;
	int remaining; /* jobs not done or unplaced */

	/* Network. */
	double *cap_bps;
	double *cap_sat; /* above this use a link is saturated (cap_bps less SAT_SLACK) */
	hm_mm_ws_t ws;
	int *lloc;   /* global link -> local index of the current solve (valid when lvis == gen) */
	int *active; /* jobs with an active network phase */
	int nactive;
	sim_lk_t **lk_jobs; /* per link: active phases crossing it */
	int *lk_n, *lk_cap;
	unsigned *lvis, *jvis, gen;
	unsigned *ltouch, lround; /* links numbered in the current solve round (== lround) */
	double *lused;            /* bit/s the active phases put on each link */
	int *lout;                /* shared links of the solve that are not expanded */
	int *seed;                /* links an ending phase fills (its re-solve's seeds) */
	int *rev;                 /* the link's other direction (same capacity), or -1 */
	int *asym;                /* active phases on it that are not symmetric */
	int *lcode;               /* its place in this round's problem (see number()) */
	int *lflow;               /* scratch: flows + 1 of the phase being checked */
	int *lflows;              /* flows of the active phases on each link */
	unsigned *lkeep;          /* == gen: a phase on it keeps its rate outside the solve */
	double *lkept;            /* ... and their load on it, bit/s (valid when lkeep == gen) */
	int pr_class;             /* the changing phase's class ... */
	double pr_level;          /* ... and the level below which its class keeps rates */
	int *stack, *comp;
	double *mm_rate;
	double *load; /* sampling scratch */

	/* Policy. */
	hm_sched_job_t *sched;
	int *sched_map;

	/* Global iteration samples (reservoir). */
	double seen_samples;
	int cap_samples;
	double *samp_raw, *samp_norm;
	int nt, cap_t;

	/* Evaluation runs (hm_sim_eval.c): jobs are given placed, end after
	 * target_iters iterations of the run (ep_n counts them), and only
	 * iterations ending at or after measure_from_s are measured. */
	bool eval;
	double measure_from_s;
} sim_t;

/* hm_sim_net.c */
hm_rc_t sim_heap_push(sim_heap_t *h, double t, int type, int job, hm_err_t *err);
/* Job j's phase ends at t (replacing the end scheduled before) / ends at no set time. */
void sim_end_set(sim_t *s, int j, double t);
void sim_end_del(sim_t *s, int j);
/* The next event of either heap, taken off it. */
bool sim_next(sim_t *s, sim_ev_t *ev);
hm_rc_t sim_net_init(sim_t *s, hm_err_t *err);
void sim_net_free(sim_t *s);
/* Put job j's phase ld on the links (class prio) / take it off; re-solve its component. */
hm_rc_t sim_net_start(sim_t *s, int j, const hm_phase_load_t *ld, int prio, hm_err_t *err);
hm_rc_t sim_net_stop(sim_t *s, int j, hm_err_t *err);
/* Utilisation of the busiest link and mean over loaded links, now. */
void sim_net_util(sim_t *s, double *busiest, double *mean);

/* hm_sim.c: one event through the iteration state machine. */
hm_rc_t sim_handle(sim_t *s, const sim_ev_t *ev, hm_err_t *err);

/* hm_sim_sched.c */
hm_rc_t sim_policy_call(sim_t *s, hm_sched_event_t ev, int event_job, hm_err_t *err);
/* A pending decision whose switch time has come is put in force. */
void sim_dec_promote(sim_t *s, sim_job_t *sj);
/*
 * Try to place job j now (placement, paths, traffic, iteration target): PLACED
 * (the engine starts it), QUEUED (no room now) or NEVER (sj->note says why).
 * Placement never starts a job, so the engine calls placement, not the reverse.
 */
typedef enum { SIM_PLACE_PLACED, SIM_PLACE_QUEUED, SIM_PLACE_NEVER } sim_place_t;
hm_rc_t sim_place(sim_t *s, int j, sim_place_t *out, hm_err_t *err);
/* Job j's entry of a policy context (what decide() sees of it). */
void sim_fill_job(sim_t *s, hm_sched_job_t *o, int j);

/* hm_sim_place.c: the hosts of job j under opts.placement, taken from the free
 * GPUs (as hm_place_default: HM_ERR_PLACE not now, HM_ERR_INVAL never). */
hm_rc_t sim_place_job(sim_t *s, int j, hm_placement_t *out, hm_err_t *err);

/* hm_sim_out.c */
void sim_record_iter(sim_t *s, sim_job_t *sj, double iter_s);
hm_rc_t sim_sample_util(sim_t *s, hm_err_t *err);
hm_rc_t sim_results(sim_t *s, hm_err_t *err);
double sim_rand01(uint64_t st[2]);

#endif
