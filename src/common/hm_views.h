/*
 * hm_views.h - the records of the coordinator's status views: the engine fills
 * them (hm_coord.h, hm_coord_nodes.h), the server writes them as JSON and
 * harmonicsctl reads them back (hm_coord_json.h, hm_node_json.h), and the state
 * file keeps the measurements. Plain values, no pointers.
 */
#ifndef HM_VIEWS_H
#define HM_VIEWS_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_agent_wire.h"
#include "hm_assign.h"
#include "hm_conf.h"
#include "hm_hwnode.h"
#include "hm_job.h"

/* Measured profile reported by a step's pacing runtime (zeros = not measured). */
typedef struct {
	double iter_s;
	double compute_s;
	double comm_s;
	double iter_sd_s;
	double bytes; /* bytes per burst, 0 = unknown */
	double compute_sd_s; /* the compute's standard deviation (its jitter, waits and
			      * contention excluded), 0 = not measured */
} hm_coord_measure_t;

/* A Slurm account name as the coordinator keeps it (longer ones are kept as "":
   no account coordinator then sees the job, hm_server.h). */
#define HM_ACCOUNT_MAX 128

/* One line of the jobs table (status queries). */
typedef struct {
	uint32_t job_id;
	uint32_t uid;
	char account[HM_ACCOUNT_MAX]; /* its Slurm account, "" = none known */
	char name[HM_NAME_MAX];
	char nodes[256]; /* hostlist as given (truncated for display) */
	char mode[HM_CONF_NAME_MAX];
	char profile[128]; /* effective profile spec ("" = none) */
	int gpus;          /* total GPUs */
	int nracks;        /* racks it touches */
	double start_s;
	hm_assignment_t a;    /* the latest decision (its epoch: the decided epoch) */
	bool has_prev;        /* a is pending: prev is in force until effective_us */
	int64_t effective_us; /* when a replaces prev on every step */
	int registered_steps; /* steps that registered so far */
	long applied_epoch;   /* the oldest epoch its nodes' steps report running; -1 none */
	int steps;            /* steps the node agents see (summed over its nodes) */
	bool measured;        /* measured numbers exist (a step or the node agents) */
	double measured_period_us; /* last measured window: mean iteration, -1 = none */
	double measured_burst_us;  /* mean burst length, -1 = none */
	long slot_misses;          /* skipped or late slots since the job started, -1 = none */
	/* What its traffic does (hm_coord_pace.c): the class its NCCL communicators
	   carry (-1 none reported; it may differ from a.prio), and whether no step
	   reported an applied epoch for UnpacedAfter (modelled free running). */
	int class_in_force;
	bool unpaced;
	/* The topology.yaml topology it is modelled on: its partition's (a flat
	   one on the default's links), the cluster default when the file lacks
	   that name; "" when the topology is a single one. */
	char topology[HM_NAME_MAX];
} hm_coord_job_view_t;

/* Engine-wide counters (status queries). */
typedef struct {
	char policy[HM_CONF_NAME_MAX];
	double epoch_s;
	unsigned long epoch;       /* global decision counter */
	double last_decide_s;      /* when the policy last ran (0 = never) */
	double last_decide_wall_s; /* how long it took */
	int njobs, nscheduled;
	int nracks, nhosts, ngpus;
	unsigned long requests, refused;
	double started_s;
} hm_coord_stats_t;

/* Per-rack summary (harmonicsctl racks). */
typedef struct {
	int rack;
	char name[HM_NAME_MAX]; /* ToR switch name */
	int nhosts, ngpus;
	int njobs;   /* jobs with at least one node in this rack */
	int ncross;  /* of those, jobs that span several racks */
	double load; /* max over the rack's links of summed alone-traffic utilisation */
	char leader[HM_NAME_MAX]; /* node of the leading agent, "" = none */
	char leader_addr[72];     /* its rack channel (host:port), "" = none */
	char state[8];            /* "up" (led), "lost" (no leader now, one before), "none" */
	unsigned long term;       /* leaders elected in this rack since the coordinator started */
	double leader_since_s;    /* when the current leader was elected, -1 = none */
	long last_epoch;          /* rack round that last got its decisions, -1 none */
	double solve_ms;          /* that round's Local Scheduler time where it ran, -1 none */
	char solver[12];          /* who solved that round: "leader", "coordinator", "" none */
	unsigned long leader_solves, coord_solves; /* rounds solved on its leader / in slurmctld */
	unsigned long silent; /* rounds its leader did not answer (local jobs ran free) */
} hm_coord_rack_view_t;

/* One node agent (harmonicsctl nodes). */
typedef struct {
	char node[HM_AW_NODE_MAX];
	char state[8];      /* "up", "lost" (was up, connection gone), "none" (never seen) */
	double last_seen_s; /* last hello or beat, 0 = never */
	int steps, ranks;   /* what its last beat saw */
	int jobs;           /* jobs of the coordinator on this node */
	bool has_topo;      /* the agent reported its hardware */
	hm_hwnode_t topo;
	char topo_note[128]; /* why the reported GPU -> NIC map is not used, "" when it is */
	bool has_clock;      /* its agent reported a clock offset */
	bool clock_skewed;   /* beyond ClockSkewMax: its steps run free */
	int64_t clock_offset_us; /* the node's clock minus the coordinator's */
} hm_coord_node_view_t;
/* One link as the model sees it (metrics, harmonicsctl job --explain). */
#define HM_LINK_NAME_MAX 96
typedef struct {
	char name[HM_LINK_NAME_MAX]; /* "n1:nic0->s1" up, "s1->n1:nic0" down, "s1->s9" */
	int level;                   /* 0 host<->ToR, 1 ToR<->next level, ... */
	char dir[8];                 /* "up" (towards the core) or "down" */
	char rack[HM_NAME_MAX];      /* owning rack's switch, "" above the racks */
	double capacity_bps;
	double util; /* predicted: summed contention-free utilisation of its jobs */
	int njobs;   /* scheduled or not, jobs whose traffic crosses it */
} hm_coord_link_view_t;

/* A link of an explained job: the link, the job's own part, who else is on it. */
#define HM_EXPLAIN_MAX_LINKS  16
#define HM_EXPLAIN_MAX_OTHERS 8
typedef struct {
	hm_coord_link_view_t link;
	double own_util; /* this job's part of link.util */
	double share;    /* predicted max-min share of the link this job gets, 0..1 */
	int nothers;     /* other jobs on it (all of them) */
	char others[96]; /* their ids, comma-separated, the first HM_EXPLAIN_MAX_OTHERS */
} hm_coord_explain_link_t;

/* Why a job runs as it does (harmonicsctl job ID --explain). */
typedef struct {
	hm_coord_job_view_t job;
	int nlinks_total; /* links its traffic crosses */
	int nlinks;       /* of those, listed: shared ones first, busiest first */
	hm_coord_explain_link_t links[HM_EXPLAIN_MAX_LINKS];
	int nshared;      /* links it shares with another job */
	double share;     /* its bottleneck share if bursts overlapped, 1 = alone */
	double slowdown;  /* predicted burst slowdown if they overlapped (1/share), 1 alone */
	char decision[8]; /* "slot", "class" (class only, no stagger) or "free" */
	char why[192];    /* the reason in words */
	char gpus[128];   /* GPUs modelled per node ("n1:0-7 n2:0-3") */
	/* Its burst alone as the model has it (hm_coord_burst.c); -1 = not modelled. */
	double burst_declared_us; /* from the declared bytes */
	double burst_model_us;    /* the declared bytes x burst_factor: what the policy sees */
	double burst_factor;      /* learnt from the measured bursts; 1 = declared */
	double burst_samples;     /* measured bursts folded in */
} hm_coord_explain_t;

#endif
