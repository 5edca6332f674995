/*
 * hm_live.h - the coordinator's live view, as sched/harmonics lends it to
 * select/harmonics_cons_tres inside slurmctld (docs/placement.md).
 *
 * Slurm loads plugins RTLD_LOCAL, so the select plugin finds the two accessors
 * exported by the coordinator's host (sched_harmonics.so, else
 * job_submit_harmonics.so) with hm_plugin_find_loaded and dlsym. A view is
 * immutable once published; acquire takes a reference (a short mutex, never a
 * slurmctld lock, never the engine's), release drops it. No host, another
 * version of it, or no view yet: the select plugin places as cons_tres.
 */
#ifndef HM_LIVE_H
#define HM_LIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "hm_error.h"
#include "hm_job.h"
#include "hm_place_score.h"
#include "hm_topo.h"

#define HM_LIVE_ABI         1
#define HM_LIVE_ACQUIRE_SYM "hm_sched_live_acquire_v1"
#define HM_LIVE_RELEASE_SYM "hm_sched_live_release_v1"
#define HM_LIVE_PLUGIN_FILE "sched_harmonics.so"
/* Where SchedulerType stays sched/backfill (heterogeneous jobs). */
#define HM_LIVE_PLUGIN_FILE_JOB_SUBMIT "job_submit_harmonics.so"
/* A view not confirmed for this long means the coordinator's thread is stuck. */
#define HM_LIVE_STALE_S 30.0

typedef struct hm_live {
	int abi;                   /* HM_LIVE_ABI */
	size_t size;               /* sizeof(hm_live_t) where it was built */
	const hm_topo_t *topo;     /* the coordinator's topology (a copy the view keeps) */
	unsigned long topo_gen;    /* changes with topo */
	const hm_lview_t *view;    /* the running jobs' link loads on topo */
	double built_s;            /* CLOCK_REALTIME when built */
	bool staggers;             /* the policy staggers bursts (any policy but fair) */
	char policy[64];           /* HM_CONF_NAME_MAX */
	char default_profile[256]; /* harmonics.conf DefaultProfile ("" = none) */
	/* The coordinator's profile parser (--comm-profile specs and catalogue names). */
	hm_rc_t (*profile_parse)(const char *spec, hm_profile_t *out, hm_err_t *err);
} hm_live_t;

/* The accessors' types: acquire returns NULL when there is no view; *fresh_s is
 * when the coordinator's thread last confirmed it (CLOCK_REALTIME). */
typedef const hm_live_t *(*hm_live_acquire_fn)(double *fresh_s);
typedef void (*hm_live_release_fn)(const hm_live_t *live);

#endif
