/*
 * hm_coord.h - the Global Coordinator engine (no Slurm, no sockets).
 *
 * Keeps the table of running jobs (what Slurm tells it: nodes, GPUs per node,
 * the --comm-sched mode and declared profile), places them on the topology,
 * derives their link loads (hm_traffic_derive) and runs the configured policy
 * from libharmonics on job start and end and at every epoch. Each job's decision
 * is turned into an assignment (what a step exports to its tasks) and into an
 * AdminComment entry.
 *
 * Thread safety: every function takes the engine's internal mutex, so the sched
 * plugin's thread (upsert/remove/decide/admin_comment/state) and the server thread
 * (assignment/status queries) may call concurrently. No function blocks on I/O
 * while holding the mutex except hm_coord_state_save (a small file write).
 * hm_coord_decide runs the policy with the mutex released: queries, beats and
 * reports go on meanwhile; changes to the table (upsert, remove, reconfigure,
 * a node's hello) wait for the run's end.
 *
 * Times: *_s are seconds, *_us microseconds, both on CLOCK_REALTIME (Unix epoch)
 * unless said otherwise; hm_real_s() (hm_clock.h) gives that clock.
 */
#ifndef HM_COORD_H
#define HM_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hm_assign.h"
#include "hm_conf.h"
#include "hm_error.h"
#include "hm_job.h"
#include "hm_topo.h"
#include "hm_views.h"

typedef struct hm_coord hm_coord_t;

/* What the sched plugin knows of a running job. Strings are copied. */
typedef struct {
	uint32_t job_id;
	uint32_t uid;        /* owner: only this uid, root and SlurmUser may ask about it */
	const char *account; /* its Slurm account: whoever coordinates it sees the job
				under PrivateData=jobs (hm_server.h); not a scheduling
				input. NULL = none; one of HM_ACCOUNT_MAX or more
				bytes is kept as none */
	const char *name;    /* job name for display; NULL = "" */
	const char *nodes;   /* Slurm hostlist of its nodes ("n[1-4]"), required */
	int gpus_per_node;   /* GPUs it uses per node; 0 = every GPU of the host (topology) */
	const char *gpu_ids; /* which GPUs Slurm allocated: GRES indexes "0-3" on every node,
				or per node "n1:0-3 n2:4,5"; NULL/"" = the first gpus_per_node */
	const char *mode;    /* --comm-sched: "off", "auto" or a policy name; NULL/"" = conf
				DefaultMode */
	const char *profile; /* --comm-profile: catalogue model or "iter=250ms,comm=40%,
				bytes=1.2GB"; NULL/"" = conf DefaultProfile */
	double start_s;      /* when it started running */
	const char *topology; /* its partition's topology (Slurm 25.05+ Topology=, a
				 topology.yaml name); NULL/"" = the cluster default.
				 A name the topology lacks, or a plane without one
				 of its nodes: modelled on the default (logged) */
} hm_coord_job_info_t;

/*
 * gpu_ids for hm_coord_job_info_t from the GPU masks of a job's nodes (bit g:
 * GPU g): one list when every node has the same ("0-3"), else "n1:0-3 n2:4,5"
 * (nodes without GPUs left out). false, with buf "", when there is none or it
 * does not fit len (the job is then modelled on its first GPUs).
 */
bool hm_coord_gpu_ids_format(const char *const *nodes, const uint32_t *masks, int n, char *buf,
			     size_t len);

/*
 * Create an engine. Takes ownership of topo (freed by hm_coord_destroy, also on
 * error). conf is copied. HM_ERR_NOTFOUND when conf->policy is unknown.
 */
hm_rc_t hm_coord_create(const hm_conf_t *conf, hm_topo_t *topo, hm_coord_t **out, hm_err_t *err);
void hm_coord_destroy(hm_coord_t *c); /* NULL is fine */

/*
 * Apply a new configuration keeping the job table and decisions
 * (scontrol reconfigure). topo: NULL keeps the current one, else ownership is
 * taken (also on error); jobs on nodes missing from the new topology become
 * unscheduled at the next decide. A policy change takes effect at the next decide.
 */
hm_rc_t hm_coord_reconfigure(hm_coord_t *c, const hm_conf_t *conf, hm_topo_t *topo, hm_err_t *err);

/*
 * Add or update a running job. An unchanged job is a no-op; a changed node list,
 * mode or profile marks it for re-decision. A bad profile or mode does not fail:
 * the job is kept unscheduled with the reason (returned as HM_ERR_INVAL in err too,
 * for logging).
 */
hm_rc_t hm_coord_job_upsert(hm_coord_t *c, const hm_coord_job_info_t *info, hm_err_t *err);

/* Forget a job that ended. HM_ERR_NOTFOUND when unknown. */
hm_rc_t hm_coord_job_remove(hm_coord_t *c, uint32_t job_id);

/* Ids of the jobs in the table (malloc'd array of *n, caller frees; NULL when 0). */
hm_rc_t hm_coord_job_ids(hm_coord_t *c, uint32_t **ids, int *n);

/* A step reported measured numbers; used from the next decision on. */
hm_rc_t hm_coord_job_measure(hm_coord_t *c, uint32_t job_id, const hm_coord_measure_t *m,
			     hm_err_t *err);

/*
 * Run the policy if anything changed since the last run (arrival, departure,
 * reconfigure) or an epoch boundary passed (now_s >= last + epoch_s). Sets
 * *changed when some job's assignment changed. Bounded by conf decision_budget_s.
 */
hm_rc_t hm_coord_decide(hm_coord_t *c, double now_s, bool *changed, hm_err_t *err);

/* Current assignment of a job. HM_ERR_NOTFOUND when unknown. */
hm_rc_t hm_coord_assignment(hm_coord_t *c, uint32_t job_id, hm_assignment_t *out);

/* Owner uid of a job. HM_ERR_NOTFOUND when unknown. */
hm_rc_t hm_coord_job_uid(hm_coord_t *c, uint32_t job_id, uint32_t *uid);

/* A job's owner uid and Slurm account (len bytes, at least HM_ACCOUNT_MAX; ""
   when none is known), in one look; either may be NULL. HM_ERR_NOTFOUND when
   the job is unknown. */
hm_rc_t hm_coord_job_owner(hm_coord_t *c, uint32_t job_id, uint32_t *uid, char *account,
			   size_t len);

/* Count a registered step (status display). */
void hm_coord_note_register(hm_coord_t *c, uint32_t job_id);
void hm_coord_note_request(hm_coord_t *c, bool refused);

/*
 * Wait up to timeout_ms for a job to appear with a decision (a step may register
 * before the sched thread has seen its job). Wakes the sched thread through
 * hm_coord_wait_work. Returns HM_OK, or HM_ERR_TIMEOUT / HM_ERR_NOTFOUND.
 */
hm_rc_t hm_coord_wait_job(hm_coord_t *c, uint32_t job_id, int timeout_ms);

/*
 * The sched thread's sleep: returns after timeout_ms, or early when a request is
 * waiting for an unknown job (returns true then) or hm_coord_wake was called.
 */
bool hm_coord_wait_work(hm_coord_t *c, int timeout_ms);
void hm_coord_wake(hm_coord_t *c); /* e.g. from fini or reconfigure */

/*
 * AdminComment for a job. current: the job's AdminComment now (NULL = none).
 * When the job's decision differs from the newest harmonics entry in current,
 * writes current + a new entry into buf and returns true; otherwise returns false
 * and leaves buf alone. Text not written by harmonics is kept in front; the
 * result is at most min(len - 1, conf admin_comment_max_bytes) bytes: the oldest
 * harmonics entries are dropped first; when text of others leaves no room for one
 * entry, nothing is written (returns false, logged). buf must not overlap current.
 * Jobs in mode "off" never get an entry. Entry format (see harmonics(8)):
 *   "harmonics:e<epoch>@<UTC ISO-8601> p=<policy> shift=<ms>ms/<period ms>ms prio=<n>;"
 *   "harmonics:e<epoch>@<time> off=<reason>;"   (unscheduled)
 */
bool hm_coord_admin_comment(hm_coord_t *c, uint32_t job_id, const char *current, char *buf,
			    size_t len);

/* Format one AdminComment entry for an assignment (no engine needed). */
void hm_coord_admin_entry(const hm_assignment_t *a, char *buf, size_t len);

/*
 * State file: the job table and decisions, JSON, written to path.tmp and renamed
 * (atomic). Load replaces the table (a restarted slurmctld then upserts its jobs:
 * unchanged jobs keep their decisions, jobs that ended are removed by the caller).
 * Load of a missing file is HM_ERR_NOTFOUND (first start).
 */
hm_rc_t hm_coord_state_save(hm_coord_t *c, const char *path, hm_err_t *err);
hm_rc_t hm_coord_state_load(hm_coord_t *c, const char *path, hm_err_t *err);

/* A running job as the host sees it in one round of its mirror. */
typedef struct {
	hm_coord_job_info_t info;
	const char *comment; /* its AdminComment now; NULL = none */
} hm_coord_sync_job_t;

/*
 * Store a job's new AdminComment. old is the comment the round started from, so
 * the host can skip the store when the job's comment changed meanwhile.
 */
typedef void (*hm_coord_comment_fn)(void *arg, uint32_t job_id, const char *old,
				    const char *new_comment);

typedef struct {
	int removed;  /* jobs in the table but not in the round: ended, removed */
	int comments; /* AdminComments handed to store */
	bool changed; /* the decision changed some job's assignment */
	bool saved;   /* the state file was written */
} hm_coord_sync_result_t;

/*
 * One round of the host's job mirror. jobs[0..n-1] are every running job the
 * coordinator should know: a job of the table that is not among them ended and
 * is removed; each of them is upserted; the policy runs (hm_coord_decide at
 * now_s); each job whose decision its AdminComment does not show yet gets a new
 * one through store (NULL: none); the state file (conf StateFile, when set) is
 * saved when a job ended, a decision changed or a comment was stored, and in
 * every round after a save failed until one succeeds. Problems are logged
 * (hm_log), never fatal. out (may be NULL) says what happened.
 */
void hm_coord_sync(hm_coord_t *c, const hm_coord_sync_job_t *jobs, int n, double now_s,
		   hm_coord_comment_fn store, void *arg, hm_coord_sync_result_t *out);

/*
 * Contention-aware placement's view of the running jobs (hm_place_score.h,
 * hm_coord_live.c): each scheduled job's link loads, its period (measured, else
 * contention-free) and burst, and whether the policy staggers bursts (any but
 * fair). Built on prev when that matches the engine's topology, else on a clone
 * returned in *fresh (the caller's, kept while a view on it lives). *sig: in,
 * the last view's signature; out, this one's. When prev matches and nothing
 * placement reads changed, *view is NULL. The caller frees the view.
 */
struct hm_lview;
hm_rc_t hm_coord_live_view(hm_coord_t *c, const hm_topo_t *prev, hm_topo_t **fresh,
			   unsigned long *sig, struct hm_lview **view, hm_err_t *err);

/* Snapshots for status queries (copies; no pointers into the engine). */
void hm_coord_stats(hm_coord_t *c, hm_coord_stats_t *out);
/* Jobs table: malloc'd array of *n views, sorted by job id; caller frees. */
hm_rc_t hm_coord_jobs(hm_coord_t *c, hm_coord_job_view_t **out, int *n);
/* One job. HM_ERR_NOTFOUND when unknown. */
hm_rc_t hm_coord_job(hm_coord_t *c, uint32_t job_id, hm_coord_job_view_t *out);
/* Racks: malloc'd array of *n; caller frees. */
hm_rc_t hm_coord_racks(hm_coord_t *c, hm_coord_rack_view_t **out, int *n);
/* Links between switches (every one) and host NICs that carry a job's traffic,
   in link order: malloc'd array of *n; caller frees (hm_coord_explain.c). */
hm_rc_t hm_coord_links(hm_coord_t *c, hm_coord_link_view_t **out, int *n);
/* Why job_id runs as it does. HM_ERR_NOTFOUND when unknown. */
hm_rc_t hm_coord_explain(hm_coord_t *c, uint32_t job_id, hm_coord_explain_t *out);


#endif
