/*
 * hm_live_pub.h - sched/harmonics' side of the live view (hm_live.h): the
 * coordinator thread publishes a new view when what placement reads changed,
 * and confirms it every round; select/harmonics_cons_tres acquires and
 * releases it through the plugin's exported accessors. No Slurm here.
 *
 * Thread safety: one thread refreshes (the coordinator's); any thread may
 * acquire and release. The mutex is held only to swap pointers and counts:
 * never during a build, a free, or any other lock.
 */
#ifndef HM_LIVE_PUB_H
#define HM_LIVE_PUB_H

#include <pthread.h>

#include "hm_conf.h"
#include "hm_coord.h"
#include "hm_live.h"

struct hm_live_entry;
struct hm_live_topo;

/* Static storage: a reader may hold a view while slurmctld shuts the plugin down. */
typedef struct {
	pthread_mutex_t mu;
	struct hm_live_entry *cur; /* what acquire hands out; NULL = none */
	double fresh_s;            /* last round that confirmed cur */
	/* The refreshing thread's own. */
	struct hm_live_topo *topo; /* the topology copy new views are built on */
	unsigned long sig, topo_gen;
	int failures; /* builds that failed in a row (logged on the first) */
} hm_live_pub_t;

#define HM_LIVE_PUB_INIT                                                                           \
	{                                                                                          \
		.mu = PTHREAD_MUTEX_INITIALIZER                                                    \
	}

/*
 * One round of the coordinator thread at now_s: a new view when the jobs
 * placement reads, the topology or the configuration changed, else the current
 * one confirmed. Failures are logged (hm_log) and leave the last view, which
 * then ages until readers stop using it (HM_LIVE_STALE_S).
 */
void hm_live_pub_refresh(hm_live_pub_t *p, hm_coord_t *c, const hm_conf_t *conf, double now_s);
/* The configuration changed: the next refresh builds anew. */
void hm_live_pub_invalidate(hm_live_pub_t *p);
/* No view until the next refresh (coordinator stopping); readers keep theirs. */
void hm_live_pub_clear(hm_live_pub_t *p);

const hm_live_t *hm_live_pub_acquire(hm_live_pub_t *p, double *fresh_s);
void hm_live_pub_release(hm_live_pub_t *p, const hm_live_t *live); /* NULL is fine */

#endif
