/*
 * hm_coord_live.c - the engine's running jobs as contention-aware placement
 * sees them (hm_place_score.h): a read-only export for the host (the sched
 * plugin), which hands it to select/harmonics_cons_tres.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hm_coord_int.h"
#include "hm_place_score.h"

/* Same hosts, links and racks: link ids of the engine's traffic mean the same. */
static bool same_topo(const hm_topo_t *a, const hm_topo_t *b)
{
	if (!a || !b || a->nhosts != b->nhosts || a->nlinks != b->nlinks ||
	    a->nswitches != b->nswitches || a->nracks != b->nracks)
		return false;
	if (memcmp(a->links, b->links, (size_t)a->nlinks * sizeof(*a->links)) != 0 ||
	    (a->nracks && memcmp(a->rack_switch, b->rack_switch, (size_t)a->nracks * sizeof(int))))
		return false;
	for (int h = 0; h < a->nhosts; h++)
		if (a->hosts[h].rack != b->hosts[h].rack || a->hosts[h].gpus != b->hosts[h].gpus ||
		    strcmp(a->hosts[h].name, b->hosts[h].name) != 0)
			return false;
	return true;
}

static unsigned long mix(unsigned long h, unsigned long v)
{
	return (h ^ v) * 1099511628211ul;
}

/* What placement reads of the table, hashed: an unchanged table rebuilds nothing. */
static unsigned long table_sig(const hm_coord_t *c)
{
	unsigned long h = 14695981039346656037ul;

	h = mix(h, (unsigned long)c->njobs);
	h = mix(h, (unsigned long)(uintptr_t)c->pol);
	for (int i = 0; i < c->njobs; i++) {
		const hm_cjob_t *j = &c->jobs[i];
		double period_us = j->measured ? j->meas.iter_s * 1e6 : 0;

		h = mix(h, j->job_id);
		h = mix(h, (unsigned long)(j->schedulable && j->have_tr) + 2ul * j->unpaced);
		h = mix(h, (unsigned long)llround(period_us));
		h = mix(h, (unsigned long)llround(j->burst.factor * 1e6)); /* its bytes */
		h = mix(h, (unsigned long)j->pl.nslots);
		for (int s = 0; s < j->pl.nslots; s++)
			h = mix(h, (unsigned long)j->pl.slots[s].host * 64 +
				       (unsigned)j->pl.slots[s].gpus);
		for (int s = 0; s < j->pl.nslots; s++) /* which GPUs: which NICs */
			h = mix(h, j->pl.slots[s].gpu_mask);
	}
	return h ? h : 1;
}

hm_rc_t hm_coord_live_view(hm_coord_t *c, const hm_topo_t *prev, hm_topo_t **fresh,
			   unsigned long *sig, hm_lview_t **view, hm_err_t *err)
{
	hm_lview_job_t *jv = NULL;
	const hm_topo_t *on;
	unsigned long now_sig;
	bool staggers;
	hm_rc_t rc = HM_OK;
	int n = 0;

	*fresh = NULL;
	*view = NULL;
	pthread_mutex_lock(&c->mu);
	now_sig = table_sig(c);
	on = prev && same_topo(prev, c->topo) ? prev : NULL;
	if (on && *sig == now_sig)
		goto out; /* nothing new */
	if (!on && !(on = *fresh = hm_topo_clone(c->topo))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "live view: out of memory");
		goto out;
	}
	if (!(jv = calloc((size_t)c->njobs + 1, sizeof(*jv)))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "live view: out of memory");
		goto out;
	}
	staggers = strcmp(c->pol->name, "fair") != 0;
	for (int i = 0; i < c->njobs; i++) {
		hm_cjob_t *j = &c->jobs[i];

		if (!j->schedulable || !j->have_tr)
			continue;
		jv[n] = (hm_lview_job_t){.id = j->job_id,
					 .gpus = j->job.gpus,
					 .scheduled =
					     staggers && !j->unpaced, /* nothing holds its bursts */
					 .tr = &j->tr};
		hm_lview_job_times(&j->job.profile, &j->tr, &jv[n].period_s, &jv[n].burst_s);
		if (j->measured && j->meas.iter_s > 0)
			jv[n].period_s = j->meas.iter_s;
		n++;
	}
	rc = hm_lview_build(on, jv, n, view, err);
	if (rc == HM_OK)
		*sig = now_sig;
out:
	pthread_mutex_unlock(&c->mu);
	free(jv);
	if (rc != HM_OK) {
		hm_topo_free(*fresh);
		*fresh = NULL;
	}
	return rc;
}
