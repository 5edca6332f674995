/*
 * hm_select.h - select/harmonics_cons_tres' decisions without Slurm
 * (docs/placement.md): the ranked plan of candidates for one job, the overlay of
 * its own recent placements that the coordinator's view does not show yet, and
 * the AdminComment entry that records a decision. select_place.c turns Slurm's
 * bitmaps into these arrays and asks cons_tres to allocate.
 */
#ifndef HM_SELECT_H
#define HM_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hm_live.h"
#include "hm_place_score.h"

/* Recent placements are kept until the view shows them, at most this long. */
#define HM_SEL_RECENT_MAX_S 120.0
/* A view confirmed this long after a placement and without the job: it ended
   (or never started); the coordinator learns of a start within a round. */
#define HM_SEL_RECENT_GRACE_S 5.0
#define HM_SEL_RECENT_MAX     256
#define HM_SEL_PLACED_TAG     "harmonics:placed@"

typedef struct {
	uint32_t job_id;
	unsigned long topo_gen;
	double placed_s;
	hm_traffic_t tr;
	hm_lview_job_t j; /* j.tr is set when an overlay is built */
} hm_sel_recent_t;

typedef struct {
	hm_sel_recent_t *v;
	int n, cap;
} hm_sel_recent_list_t;

/* Remember a placement (tr is moved into the list; *tr is emptied). */
hm_rc_t hm_sel_recent_add(hm_sel_recent_list_t *l, const hm_lview_job_t *j, hm_traffic_t *tr,
			  unsigned long topo_gen, double now_s, hm_err_t *err);
void hm_sel_recent_free(hm_sel_recent_list_t *l);
/* The job ended: its placement goes (nothing when it has none). */
void hm_sel_recent_forget(hm_sel_recent_list_t *l, uint32_t job_id);

/*
 * Drop the placements the live view shows, made on another topology, missing
 * from a view confirmed (view_s) HM_SEL_RECENT_GRACE_S after them, or older
 * than HM_SEL_RECENT_MAX_S; *out = a view of the rest chained in front of
 * live->view (NULL when none remain; then score against live->view). The caller
 * frees *out with hm_lview_free, before the list changes.
 */
hm_rc_t hm_sel_overlay(hm_sel_recent_list_t *l, const hm_live_t *live, double view_s, double now_s,
		       hm_lview_t **out, hm_err_t *err);

/* What the plan needs to know of the job and of the cluster, per topology host. */
typedef struct {
	uint32_t job_id;
	const hm_profile_t *profile;
	bool scheduled;      /* it asked, and the policy staggers bursts */
	int gpus_per_node;   /* 0 = every GPU of a node */
	int need;            /* nodes */
	const int *avail;    /* [topo->nhosts] 1 = the node can take the job now */
	const int *ring_key; /* [topo->nhosts] Slurm's node index (ring order) */
	const int *ct_hosts; /* cons_tres' own choice (topology hosts), NULL = unknown */
	int ct_n;
	int plane; /* its partition's topology plane (hm_topo_plane_index), 0 = default */
} hm_sel_job_t;

typedef struct {
	int n;
	hm_place_cand_t c[HM_PLACE_MAX_CANDS + 1]; /* c[0]: cons_tres' own choice, when given */
	hm_place_score_t s[HM_PLACE_MAX_CANDS + 1];
	int order[HM_PLACE_MAX_CANDS + 1]; /* best first; candidates that cannot be scored last */
	int cons_tres;                     /* index of cons_tres' own choice, -1 none */
} hm_sel_plan_t;

/*
 * Rank candidates for job on live (view = live->view or an overlay chained in
 * front of it): cons_tres' own choice first, then hm_place_candidates'; the
 * best by hm_place_choose (ties to fewer racks, then to cons_tres), the rest by
 * score. HM_ERR_NOTFOUND when there is nothing to rank (no candidate).
 */
hm_rc_t hm_sel_plan(const hm_live_t *live, const hm_lview_t *view, const hm_sel_job_t *job,
		    hm_sel_plan_t *out, hm_err_t *err);
void hm_sel_plan_free(hm_sel_plan_t *p);

/*
 * The decision's AdminComment entry:
 *   harmonics:placed@<UTC time> score=<chosen> cons_tres=<its choice's score>
 *   racks=<n> candidates=<n>;
 * cons_tres_score < 0: unknown (written as cons_tres=?).
 */
void hm_sel_placed_entry(double now_s, double score, double cons_tres_score, int racks, int ncands,
			 char *buf, size_t len);

/*
 * current (NULL = "") with its placed entry replaced by entry (appended when it
 * had none): a job placed again after a failed start keeps one entry. Writes
 * buf; false when it does not fit in len.
 */
bool hm_sel_admin_comment(const char *current, const char *entry, char *buf, size_t len);

#endif
