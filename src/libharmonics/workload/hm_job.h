/*
 * hm_job.h - training jobs: iteration profiles, the model catalogue, placement,
 * the traffic a job puts on each link, and workloads (trace CSV, generator).
 *
 * Iteration model: an iteration computes for compute_s; its communication
 * phases run one after another. A phase with overlap f may start f * compute_s
 * before compute ends (f = 0: after compute; f = 1: at iteration start). The
 * iteration ends when both compute and the last phase are done.
 *
 * Units: seconds (_s), bytes (_bytes), bit/s (_bps).
 */
#ifndef HM_JOB_H
#define HM_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hm_error.h"
#include "hm_topo.h"

#define HM_MAX_PHASES 4
#define HM_NAME_MAX 64

typedef enum {
	HM_COLL_ALLREDUCE_RING,	    /* each participant sends 2(N-1)/N of the buffer */
	HM_COLL_REDUCESCATTER_RING, /* (N-1)/N */
	HM_COLL_ALLGATHER_RING,	    /* (N-1)/N */
	HM_COLL_BROADCAST_RING,	    /* the whole buffer along the ring (pipelined) */
	HM_COLL_ALLTOALL,	    /* (N-1)/N spread over all peers */
	HM_COLL__COUNT
} hm_coll_t;

typedef struct {
	hm_coll_t coll;
	double bytes;	/* collective buffer size (e.g. the gradient), bytes */
	double overlap; /* fraction of compute this phase may overlap, [0, 1] */
} hm_phase_t;

typedef struct {
	char model[HM_NAME_MAX]; /* catalogue name or "custom" */
	double compute_s;	 /* isolated compute per iteration */
	int nphases;
	hm_phase_t phases[HM_MAX_PHASES];
} hm_profile_t;

/* Catalogue entry: a public model with a per-GPU-count profile rule. */
typedef struct {
	const char *name;
	double params;	       /* parameters */
	double bytes_per_param; /* 4 fp32, 2 bf16/fp16 */
	double compute_s;      /* per iteration, per-GPU mini-batch, from public numbers */
	const char *source;    /* where the numbers come from */
} hm_model_t;

/* The built-in catalogue; NULL-name terminated. */
const hm_model_t *hm_catalogue(void);
const hm_model_t *hm_catalogue_find(const char *name); /* case-insensitive, NULL if unknown */
/* Comma-separated list of catalogue names, for error messages ("accepted: ..."). */
const char *hm_catalogue_names(void);
/* Profile of a catalogue model (one ring all-reduce of the gradient, no overlap). */
hm_rc_t hm_profile_from_model(const char *name, hm_profile_t *out, hm_err_t *err);

/* One host's share of a job: `gpus` GPUs (the first ones free) on host `host`. */
typedef struct {
	int host;
	int gpus;
	uint32_t gpu_mask; /* the GPUs it uses (bit g: GPU g of the host, gpus bits set);
			      0 = GPUs 0..gpus-1 */
} hm_slot_t;

typedef struct {
	int id;			/* index in the workload */
	char name[HM_NAME_MAX];
	double arrival_s;
	int gpus;
	hm_profile_t profile;
	double iterations;	/* > 0, or 0 when duration_s is used */
	double duration_s;	/* isolated run time when given instead of iterations */
	char *nodes;		/* fixed placement (Slurm hostlist), NULL = default placement */
} hm_job_t;

/* Placement: hosts in ring order with GPU counts. */
typedef struct {
	int nslots;
	hm_slot_t *slots; /* owned */
} hm_placement_t;

void hm_placement_free(hm_placement_t *p);

/*
 * Per-link load of one communication phase on one path choice. Flows of a phase
 * are coupled (a ring advances at its slowest edge): every flow of the phase
 * carries flow_bytes, and link links[i] carries flows[i] of them.
 */
typedef struct {
	double flow_bytes; /* bytes each flow carries per iteration */
	int nflows;	   /* total flows of the phase (host-to-host NIC pairs) */
	int nlinks;
	int *links;  /* link ids, ascending, owned */
	int *flows;  /* flows crossing each link, owned */
} hm_phase_load_t;

typedef struct {
	int nphases;
	hm_phase_load_t phases[HM_MAX_PHASES];
	double alone_comm_s[HM_MAX_PHASES]; /* phase time alone on an idle cluster */
	double alone_iter_s;		     /* contention-free iteration time */
} hm_traffic_t;

/* Derive the link loads of a placed job on equal-cost path path_idx. */
hm_rc_t hm_traffic_derive(const hm_topo_t *t, const hm_profile_t *prof, const hm_placement_t *pl,
			  int path_idx, hm_traffic_t *out, hm_err_t *err);
/* The same over plane `plane` of t (a named topology, hm_topo.h): its switch
 * links, the hosts' NIC links. A host outside the plane: HM_ERR_INVAL naming it. */
hm_rc_t hm_traffic_derive_plane(const hm_topo_t *t, int plane, const hm_profile_t *prof,
				const hm_placement_t *pl, int path_idx, hm_traffic_t *out,
				hm_err_t *err);
void hm_traffic_free(hm_traffic_t *tr);

/* Contention-free iteration time of a profile under traffic (max-min of its own flows). */
double hm_traffic_alone_iter_s(const hm_topo_t *t, const hm_profile_t *prof, const hm_traffic_t *tr);

/*
 * A burst as the runtime measures it, alone: first phase start -> last phase
 * end with each phase's alone time (compute gaps between overlapped phases
 * included); 0 without phases.
 */
double hm_traffic_alone_burst_s(const hm_profile_t *prof, const hm_traffic_t *tr);

/* Workload: jobs sorted by arrival. */
typedef struct {
	int njobs;
	hm_job_t *jobs;
} hm_workload_t;

void hm_workload_free(hm_workload_t *w);

/* Trace CSV (README: columns arrival_s, gpus, model | compute_s+comm_bytes[,overlap],
 * iterations | duration_s, optional name, nodes). */
hm_rc_t hm_workload_load_csv(FILE *f, const char *fname, hm_workload_t *out, hm_err_t *err);

/* Seeded generator: "jobs=40,arrival=poisson:30s,gpus=mix,models=all,iters=1000". */
hm_rc_t hm_workload_generate(const char *spec, const hm_topo_t *t, unsigned long seed,
			     hm_workload_t *out, hm_err_t *err);

/*
 * Placement state of a cluster: free GPUs per host. The default placement packs
 * hosts and racks in order (as Slurm cons_tres with topology/tree): the smallest
 * single rack that fits, else the fewest racks, hosts in index order, filling a host
 * before the next. A job with a fixed nodes list spreads its GPUs evenly over them.
 */
typedef struct {
	const hm_topo_t *topo;
	int *free_gpus; /* per host, owned */
} hm_cluster_state_t;

hm_rc_t hm_cluster_state_init(hm_cluster_state_t *cs, const hm_topo_t *t);
void hm_cluster_state_free(hm_cluster_state_t *cs);
/* HM_ERR_PLACE when it does not fit now; HM_ERR_INVAL when it can never fit. */
hm_rc_t hm_place_default(hm_cluster_state_t *cs, const hm_job_t *job, hm_placement_t *out,
			 hm_err_t *err);
void hm_place_release(hm_cluster_state_t *cs, const hm_placement_t *p);

#endif
