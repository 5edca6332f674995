/*
 * hm_rack_msg.h - the exchange between the Global Coordinator and a rack's
 * Local Scheduler, as plain records: one request and one reply per rack per
 * round (docs/protocol.md, rack_round / rack_result). Types only: the tier
 * engine (hm_harmonics_tier.h) fills and reads them, the wire codec
 * (hm_agent_wire.h) turns them into JSON, a transport carries them.
 *
 * A request is self-contained: the jobs that load the rack's links, each with
 * only the links of that rack, in the coordinator's model order. Jobs local to
 * the rack are to be decided; cross-rack jobs carry the coordinator's decision
 * as a fixed input. A leader keeps no state between rounds, so a new leader
 * needs nothing from the old one. Units: seconds.
 */
#ifndef HM_RACK_MSG_H
#define HM_RACK_MSG_H

#include <stdbool.h>

#include "hm_error.h"

#define HM_RACK_MAX_JOBS  4096 /* jobs in one request (bounds the message) */
#define HM_RACK_MAX_LINKS 64   /* links of one job in one rack */

typedef struct {
	int idx;     /* the job's index in the coordinator's model: the reply's key */
	long job_id; /* its stable id (Slurm's job id): a leader cut off from the coordinator
			pushes its own decisions to the rack's agents by it */
	bool cross;  /* spans racks: decided by the coordinator, a fixed input */
	double burst_s, T_s, sd_s;
	int nlinks;     /* its links in this rack, ascending ids */
	int *links;     /* into the request's pool */
	double *demand; /* per link: fraction of capacity while bursting, (0, 1] */
	/* Local jobs: what the Local Scheduler starts from. */
	double R_s;      /* robust slot period */
	bool partnered;  /* shares a link where the two demands exceed it */
	double prev_P_s; /* decision in force, 0 = free running */
	double prev_s_s;
	/* Cross-rack jobs: the coordinator's decision. */
	bool hold;
	double P_s, s_s;
} hm_rack_job_t;

typedef struct {
	int rack;            /* the coordinator's rack index */
	unsigned long round; /* the coordinator's decision round; echoed in the reply */
	int shift_grid;      /* the Local Scheduler's settings (hm_hcfg_t) */
	double hold_min_gain, guard_s;
	int njobs;
	hm_rack_job_t *jobs; /* owned */
	int *link_pool;      /* owned: behind jobs[].links */
	double *dbl_pool;    /* owned: behind jobs[].demand */
} hm_rack_req_t;

/* The decision of one local job. */
typedef struct {
	int idx;
	bool hold; /* slot holding; false: free running (the rest 0) */
	double P_s, s_s, guard_s;
} hm_rack_dec_t;

typedef struct {
	bool answered;  /* false: the rack did not answer this round (transport's verdict) */
	bool by_leader; /* solved on the rack's leader (false: in the caller's process) */
	int rack;
	unsigned long round;
	double solve_ms; /* the Local Scheduler's time, measured where it ran */
	int ndec;
	hm_rack_dec_t *dec; /* owned: one per local job of the request, request order */
} hm_rack_rep_t;

/* Release what a request or reply owns and zero it (NULL fine). */
void hm_rack_req_free(hm_rack_req_t *q);
void hm_rack_rep_free(hm_rack_rep_t *p);

/* Allocate a request's jobs and pools (zeroed): HM_ERR_NOMEM. */
hm_rc_t hm_rack_req_alloc(hm_rack_req_t *q, int njobs, int nlinks_total, hm_err_t *err);

/* A deep copy of src into dst (a leader keeps its last request): HM_ERR_NOMEM. */
hm_rc_t hm_rack_req_copy(hm_rack_req_t *dst, const hm_rack_req_t *src, hm_err_t *err);

/*
 * Check a request's structure as a leader must before solving (a decoded
 * request is range-checked member by member; this checks what spans members):
 * links ascending and unique per job, demand in (0, 1], periods positive,
 * indexes unique. HM_ERR_PROTO names the job.
 */
hm_rc_t hm_rack_req_check(const hm_rack_req_t *q, hm_err_t *err);

/*
 * Where a round's rack problems are solved. exchange() gets the round's
 * requests (one per rack with work) and fills reps[i] for reqs[i]; a rack
 * that does not answer keeps reps[i].answered false. It returns an error
 * only when nothing could be tried (the caller then solves in process).
 */
typedef struct hm_rack_transport {
	hm_rc_t (*exchange)(void *arg, const hm_rack_req_t *reqs, hm_rack_rep_t *reps, int n,
			    hm_err_t *err);
	void *arg;
} hm_rack_transport_t;

#endif
