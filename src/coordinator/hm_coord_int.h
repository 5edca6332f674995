/* hm_coord_int.h - the engine's private state, shared by its source files. */
#ifndef HM_COORD_INT_H
#define HM_COORD_INT_H

#include <pthread.h>

#include "hm_coord.h"
#include "hm_coord_nodes.h"
#include "hm_burst_est.h"
#include "hm_hwnode.h"
#include "hm_metrics.h"
#include "hm_policy.h"
#include "hm_rack_msg.h"

/* Job id -> slot in hm_coord.jobs (hm_coord_index.c). */
typedef struct {
	uint64_t *keys; /* job id + 1; 0 = empty */
	int *slots;
	size_t cap, n;
} hm_coord_index_t;

/* 0, or -1 out of memory (the entry is then absent). */
int hm_coord_index_put(hm_coord_index_t *x, uint32_t job_id, int slot);
int hm_coord_index_get(const hm_coord_index_t *x, uint32_t job_id); /* -1: absent */
void hm_coord_index_del(hm_coord_index_t *x, uint32_t job_id);
void hm_coord_index_clear(hm_coord_index_t *x);

typedef struct {
	/* What Slurm said (compared on upsert). */
	uint32_t job_id, uid;
	char account[HM_ACCOUNT_MAX]; /* kept up to date, never compared: not an input */
	char name[HM_NAME_MAX];
	char *nodes;
	int gpus_per_node;
	char gpu_ids[256]; /* the GPUs Slurm allocated (hm_coord_job_info_t.gpu_ids) */
	char mode[HM_CONF_NAME_MAX];
	char profile_spec[256];
	char topology[HM_NAME_MAX]; /* its partition's topology.yaml topology, "" = default */
	double start_s;

	/* Derived from the above, the topology and the configuration. */
	bool schedulable; /* placed, profiled and mode != off */
	char reason[128]; /* why not, when !schedulable */
	char eff_profile[128];
	hm_job_t job;
	hm_placement_t pl;
	hm_traffic_t tr;
	bool have_tr;
	int nracks;
	int plane; /* the topology plane its traffic was derived on (hm_topo_plane_t) */

	hm_coord_measure_t meas;
	bool measured;

	hm_decision_t dec; /* the policy's last decision */
	bool decided;      /* a decision (or an unscheduled verdict) exists */
	bool arrived;      /* not yet seen by the policy as an arrival */
	hm_assignment_t a; /* the latest decision */
	/* A changed decision reaches every step at one switch time (contract C):
	   until effective_us the steps keep prev. */
	hm_assignment_t prev;
	bool has_prev;
	int64_t effective_us;
	/* A change decided while another was pending: goes out once that one took effect. */
	hm_assignment_t deferred;
	bool has_deferred;
	int registered_steps;

	/* What the node agents report, per placement slot (NULL until derived). */
	long *node_applied; /* epoch the node's steps applied, -1 none */
	int *node_steps;
	/* Measurement window of the agents' beats, folded into meas at each decide. */
	double acc_n, acc_iter_us, acc_iter_sq_us2; /* samples, sum, sum of squares */
	double acc_compute_n, acc_compute_us, acc_burst_n, acc_burst_us;
	double acc_csd_n, acc_csd_us, acc_csd_sq_us2; /* compute where its spread is known */
	long slot_misses; /* since the job started, -1 = never reported */
	/* The measured burst in the model (hm_coord_burst.c): its estimator and the
	   bursts of the window folded at the last decide. */
	hm_burst_est_t burst;
	double burst_win_n;

	/* Whether its traffic follows the decision (issue 25; hm_coord_pace.c). */
	int *node_class;     /* per slot: NCCL class its tasks carry, -1 none (with node_applied) */
	double pace_since_s; /* first scheduled decision, or last applied epoch seen; 0 = none */
	bool unpaced;        /* no applied epoch for UnpacedAfter: modelled free running */
} hm_cjob_t;

/* A node agent as the coordinator knows it (one per topology host). */
typedef struct {
	bool seen;      /* an agent said hello once */
	bool up;        /* its connection is open */
	double last_s;  /* last hello or beat */
	double up_s;    /* its connection's hello */
	int steps, ranks;
	bool has_topo;
	hm_hwnode_t topo;
	bool rack_solver; /* its agent answers rack_round (said in its hello) */
	char rack_addr[HM_AW_ADDR_MAX]; /* its rack channel, "host:port"; "" = none */
	unsigned long gen; /* c->gen when something of its jobs' assignments last changed */
	double refused_log_s; /* last log of a refused measurement from this node (rate limit) */
	bool has_clock;       /* its agent reported a clock offset (beat) */
	bool clock_skewed;    /* beyond ClockSkewMax: its agent runs its steps free */
	int64_t clock_offset_us; /* the coordinator's clock minus the node's */
	int64_t clock_rtt_us;    /* that sample's round trip */
	bool loss_pending;       /* closed during a stall's grace: lost at its end (no hello) */
} hm_cnode_t;

enum { HM_RACK_BY_NONE, HM_RACK_BY_LEADER, HM_RACK_BY_COORD };

/* A rack's leader election (hm_coord_leaders.c) and its rounds (hm_coord_tier.c). */
typedef struct {
	int leader;         /* host index of the leading agent, -1 none */
	bool had_leader;    /* a leader was elected once ("lost" rather than "none") */
	unsigned long term; /* leaders elected in this rack since the coordinator started */
	double since_s;     /* when the current leader (or the lack of one) began */
	/* Rounds: who solved it last, how long that took where it ran, counters. */
	int solver;      /* HM_RACK_BY_* of the last answered round */
	long last_round; /* rack round that last got its decisions, 0 = none */
	double solve_ms; /* that round's Local Scheduler time */
	unsigned long leader_solves, coord_solves, silent;
} hm_crack_t;

/* One rack's request in the round in flight. */
enum { HM_SLOT_HERE, HM_SLOT_WAITING, HM_SLOT_SENT, HM_SLOT_DONE, HM_SLOT_FAILED };
typedef struct {
	int state;              /* HM_SLOT_* */
	char node[HM_NAME_MAX]; /* the leader asked */
} hm_tier_slot_t;

/* The round with the leaders: its own mutex (the server delivers without c->mu). */
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* pending reached 0 */
	unsigned long round; /* rounds so far; the open one while n > 0 */
	int n, cap, pending;
	int next; /* first slot hm_coord_tier_take has not looked at */
	const hm_rack_req_t *reqs; /* the open round's, borrowed from the policy */
	hm_rack_rep_t *reps;
	hm_tier_slot_t *slot;    /* [cap] */
	void (*send)(void *arg); /* the server: requests are waiting */
	void *send_arg;
} hm_tier_box_t;

struct hm_coord {
	pthread_mutex_t mu;
	pthread_cond_t cv_job;  /* a decision was made: wake register waiters */
	pthread_cond_t cv_work; /* a request or a wake for the sched thread */
	bool work_requested;

	hm_conf_t conf;
	hm_topo_t *topo;
	const hm_policy_ops_t *pol;
	void *pol_state;

	hm_cjob_t *jobs;
	int njobs, cap;
	hm_coord_index_t index; /* job id -> slot in jobs */

	bool need_decide; /* arrival, departure, reconfigure since the last run */
	bool had_departure;
	unsigned long epoch; /* global decision counter */
	double last_decide_s, last_decide_wall_s, started_s;
	unsigned long requests, refused;

	hm_cnode_t *nodes; /* [topo->nhosts] */
	unsigned long gen; /* change counter of assignments and node job lists */
	void (*notify)(void *arg); /* called (mutex held) when assignments changed */
	void *notify_arg;

	hm_crack_t *racks; /* [topo->nracks] */
	/* Jobs on each host in table order, CSR: jobs[hj_list[hj_start[h] ..
	   hj_start[h + 1])] (hm_coord_nodes.c); rebuilt when hj_stale. */
	int *hj_start, *hj_list;
	bool hj_stale;
	hm_tier_box_t tier;
	hm_rack_transport_t rack_tr; /* the policy's way to the racks (hm_coord_exchange) */
	bool deciding;               /* mutex released while the policy runs: no changes */
	pthread_cond_t cv_idle;      /* deciding went false */
	/* Hosts of each rack in name order (hm_hostname_cmp): rack r's are
	   rack_hosts[rack_first[r] .. rack_first[r + 1] - 1]. */
	int *rack_hosts, *rack_first;
	hm_coord_mx_t mx; /* counters for the metrics (hm_metrics.c) */
	double stall_grace_until_s; /* after the server was stalled: no loss before (nodes) */
	bool state_unsaved; /* the last hm_coord_state_save failed: sync retries it */
};

/* Lock mu for a change of jobs, nodes or configuration: waits out a policy run
   (hm_coord_decide releases mu with deciding set while the policy runs). */
static inline void hm_coord_lock_mut(hm_coord_t *c)
{
	pthread_mutex_lock(&c->mu);
	while (c->deciding)
		pthread_cond_wait(&c->cv_idle, &c->mu);
}
hm_rc_t hm_coord_tier_init(hm_coord_t *c);
void hm_coord_tier_fini(hm_coord_t *c);
/* The rack transport's exchange (hm_rack_msg.h): called by the policy during
   hm_coord_decide's run (mu not held, deciding set); takes mu itself. */
hm_rc_t hm_coord_exchange(void *arg, const hm_rack_req_t *reqs, hm_rack_rep_t *reps, int n,
			  hm_err_t *err);
/* Name of rack r ("" when the topology has none). */
const char *hm_coord_rack_name(const hm_coord_t *c, int r);

/* Bump the change counter for every node of j (caller holds mu). */
void hm_coord_touch_nodes(hm_coord_t *c, const hm_cjob_t *j);
/* Fold the agents' measurement windows of j into j->meas (caller holds mu). */
void hm_coord_fold_measures(hm_cjob_t *j);
/*
 * Fold each job's window of measured bursts into its estimator against what the
 * model predicted for it (hm_burst_est.h); a job whose factor moved is derived
 * again, so the policy about to run sees its new traffic (caller holds mu).
 */
void hm_coord_fold_bursts(hm_coord_t *c);
/* (Re)allocate the per-slot agent reports of j after derive (caller holds mu). */
void hm_coord_node_reports_reset(hm_cjob_t *j);

/*
 * Whether j's traffic follows its decision (hm_coord_pace.c, caller holds mu).
 * class_in_force: the class its NCCL communicators carry (the lowest priority
 * over its nodes), -1 when none reported. pace_update: j's paced/unpaced state
 * at now_s; true when it changed (the model changed: decide again). pace_model:
 * what the policy must judge j with (hm_sched_job_t's unpaced and class_fixed).
 */
int hm_coord_class_in_force(const hm_cjob_t *j);
bool hm_coord_pace_update(hm_coord_t *c, hm_cjob_t *j, double now_s);
void hm_coord_pace_model(const hm_coord_t *c, const hm_cjob_t *j, hm_sched_job_t *sj);
/* Node table for the current topology, keeping what is known by name. */
hm_rc_t hm_coord_nodes_rebuild(hm_coord_t *c, const hm_topo_t *old_topo);

/* Rack table for the current topology, keeping leaders by rack and node name
   (called by hm_coord_nodes_rebuild, the nodes already rebuilt). */
hm_rc_t hm_coord_racks_rebuild(hm_coord_t *c, const hm_topo_t *old_topo, hm_crack_t *old_racks);
void hm_coord_racks_free(hm_coord_t *c);
/* Re-elect host h's rack after an agent event (caller holds mu); notifies on a change. */
void hm_coord_elect_host(hm_coord_t *c, int h, double now_s);
/* Fill the leader members of rack r's view (caller holds mu). */
void hm_coord_rack_leader_view(const hm_coord_t *c, int r, hm_coord_rack_view_t *v);

/*
 * Add the utilisation job j's contention-free traffic puts on each of its
 * links (summed over phases) to util[]; ju[] is zero on entry and on return.
 */
void hm_coord_job_link_util(const hm_topo_t *t, const hm_cjob_t *j, double *util, double *ju);

/*
 * The GPUs of node in a job's gpu_ids spec ("0-3" for every node, "n1:0-3
 * n2:4-7" per node; a node's own list wins): 1 with *mask set, 0 when the spec
 * names none for it (NULL or ""), -1 when the spec is not such a list.
 */
int hm_coord_gpu_mask(const char *spec, const char *node, uint32_t *mask);

/* Job j as the status views show it, on topology t (caller holds mu). */
void hm_coord_view_of(const hm_topo_t *t, const hm_cjob_t *j, hm_coord_job_view_t *v);

/* Find a job (caller holds mu); NULL when absent. */
hm_cjob_t *hm_coord_find(hm_coord_t *c, uint32_t job_id);
/* Recompute placement, profile and traffic of j (caller holds mu). */
void hm_coord_derive(hm_coord_t *c, hm_cjob_t *j);
/* j's traffic on its partition's topology plane (j->plane set; hm_coord.c). */
hm_rc_t hm_coord_derive_plane(hm_coord_t *c, hm_cjob_t *j, const hm_profile_t *prof,
			      hm_err_t *err);
/* Release what derive allocated. */
void hm_cjob_clear_derived(hm_cjob_t *j);
/* Append a job with the given info (caller holds mu); NULL on OOM. */
hm_cjob_t *hm_coord_add(hm_coord_t *c, const hm_coord_job_info_t *info);
/* Assignment of an unschedulable job. */
void hm_coord_set_unscheduled(hm_coord_t *c, hm_cjob_t *j, double now_s);

/*
 * Replace the policy by ops (tests drive the engine with a scripted policy; the
 * name in assignments becomes ops->name). The old policy state is destroyed.
 */
hm_rc_t hm_coord_set_policy_ops(hm_coord_t *c, const hm_policy_ops_t *ops, hm_err_t *err);

#endif
