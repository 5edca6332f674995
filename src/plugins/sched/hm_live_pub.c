/*
 * hm_live_pub.c - publishing the coordinator's live view (hm_live_pub.h):
 * reference-counted views, each keeping the topology copy it was built on.
 */
#include "hm_live_pub.h"

#include <stdlib.h>
#include <string.h>

#include "hm_log.h"
#include "hm_spec.h"

typedef struct hm_live_topo {
	hm_topo_t *t;
	int refs; /* the publisher's (while current) + one per entry */
} live_topo_t;

typedef struct hm_live_entry {
	hm_live_t pub; /* first: readers get &pub */
	hm_lview_t *view;
	live_topo_t *topo;
	int refs; /* the publisher's (while current) + one per reader */
} entry_t;

/* Drop a reference (caller holds mu); what is no longer referenced goes to *gone. */
static void topo_drop(live_topo_t *t, live_topo_t **gone)
{
	if (t && --t->refs == 0)
		*gone = t;
}

static void entry_drop(entry_t *e, entry_t **gone, live_topo_t **gone_topo)
{
	if (e && --e->refs == 0) {
		*gone = e;
		topo_drop(e->topo, gone_topo);
	}
}

/* Free what was dropped (outside mu). */
static void release_gone(entry_t *e, live_topo_t *t)
{
	if (e) {
		hm_lview_free(e->view);
		free(e);
	}
	if (t) {
		hm_topo_free(t->t);
		free(t);
	}
}

void hm_live_pub_refresh(hm_live_pub_t *p, hm_coord_t *c, const hm_conf_t *conf, double now_s)
{
	hm_topo_t *fresh = NULL;
	hm_lview_t *view = NULL;
	unsigned long sig = p->sig;
	live_topo_t *nt = NULL, *gone_t = NULL, *gone_t2 = NULL;
	entry_t *e = NULL, *gone = NULL;
	hm_err_t err = {0};

	if (hm_coord_live_view(c, p->topo ? p->topo->t : NULL, &fresh, &sig, &view, &err) != HM_OK)
		goto fail;
	if (!view) { /* unchanged: confirm it */
		pthread_mutex_lock(&p->mu);
		p->fresh_s = now_s;
		pthread_mutex_unlock(&p->mu);
		p->failures = 0;
		return;
	}
	if (fresh && !(nt = calloc(1, sizeof(*nt)))) {
		hm_err_set(&err, HM_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if (!(e = calloc(1, sizeof(*e)))) {
		hm_err_set(&err, HM_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if (nt) {
		nt->t = fresh;
		nt->refs = 1; /* the publisher's */
		fresh = NULL;
		p->topo_gen++;
	}
	e->view = view;
	view = NULL;
	e->topo = nt ? nt : p->topo;
	e->refs = 1;
	e->pub = (hm_live_t){.abi = HM_LIVE_ABI,
			     .size = sizeof(hm_live_t),
			     .topo = e->topo->t,
			     .topo_gen = p->topo_gen,
			     .view = e->view,
			     .built_s = now_s,
			     .staggers = strcmp(conf->policy, "fair") != 0,
			     .profile_parse = hm_spec_profile_parse};
	snprintf(e->pub.policy, sizeof(e->pub.policy), "%s", conf->policy);
	snprintf(e->pub.default_profile, sizeof(e->pub.default_profile), "%s",
		 conf->default_profile);
	pthread_mutex_lock(&p->mu);
	e->topo->refs++;
	entry_drop(p->cur, &gone, &gone_t);
	p->cur = e;
	if (nt) {
		topo_drop(p->topo, &gone_t2);
		p->topo = nt;
	}
	p->sig = sig;
	p->fresh_s = now_s;
	pthread_mutex_unlock(&p->mu);
	release_gone(gone, gone_t);
	release_gone(NULL, gone_t2);
	if (p->failures)
		hm_log(HM_LOG_INFO, "live view for placement rebuilt after %d failures",
		       p->failures);
	p->failures = 0;
	return;
fail:
	if (!p->failures++)
		hm_log(HM_LOG_ERROR,
		       "live view for placement: %s (placement as cons_tres once "
		       "the last view is stale)",
		       err.msg);
	hm_lview_free(view);
	hm_topo_free(fresh);
	free(nt);
	free(e);
}

void hm_live_pub_invalidate(hm_live_pub_t *p)
{
	p->sig = 0;
}

void hm_live_pub_clear(hm_live_pub_t *p)
{
	entry_t *gone = NULL;
	live_topo_t *gone_t = NULL, *gone_t2 = NULL;

	pthread_mutex_lock(&p->mu);
	entry_drop(p->cur, &gone, &gone_t);
	p->cur = NULL;
	topo_drop(p->topo, &gone_t2);
	p->topo = NULL;
	p->sig = 0;
	pthread_mutex_unlock(&p->mu);
	release_gone(gone, gone_t);
	release_gone(NULL, gone_t2);
}

const hm_live_t *hm_live_pub_acquire(hm_live_pub_t *p, double *fresh_s)
{
	entry_t *e;

	pthread_mutex_lock(&p->mu);
	e = p->cur;
	if (e)
		e->refs++;
	if (fresh_s)
		*fresh_s = p->fresh_s;
	pthread_mutex_unlock(&p->mu);
	return e ? &e->pub : NULL;
}

void hm_live_pub_release(hm_live_pub_t *p, const hm_live_t *live)
{
	entry_t *gone = NULL;
	live_topo_t *gone_t = NULL;

	if (!live)
		return;
	pthread_mutex_lock(&p->mu);
	entry_drop((entry_t *)(void *)live, &gone, &gone_t);
	pthread_mutex_unlock(&p->mu);
	release_gone(gone, gone_t);
}
