/*
 * hm_coord_explain.c - the links as the model sees them (metrics) and one
 * job's contention explained (harmonicsctl job ID --explain): its links, who
 * else is on them, its share if bursts overlapped, and the decision with why.
 * Copies made under the engine's mutex, held for one pass over jobs and links.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_coord_int.h"

/* The rack's switch name, "" when r is none. */
static const char *rack_name(const hm_topo_t *t, int r)
{
	int sw = r >= 0 && r < t->nracks && t->rack_switch ? t->rack_switch[r] : -1;

	return sw >= 0 && sw < t->nswitches ? t->switches[sw].name : "";
}

/* "n1:nic0->s1", "s1->n1:nic0", "s1->s9" (lower->upper going up). */
static void link_name(const hm_topo_t *t, int l, char *buf, size_t len)
{
	const hm_link_t *k = &t->links[l];
	const char *low, *up;
	char nic[HM_LINK_NAME_MAX];

	if (k->kind == HM_LINK_NIC_UP || k->kind == HM_LINK_NIC_DOWN) {
		const hm_host_t *h = &t->hosts[k->host];
		int n = 0;

		for (int i = 0; i < h->nics; i++)
			if (h->nic_up_link[i] == l || h->nic_down_link[i] == l)
				n = i;
		snprintf(nic, sizeof(nic), "%.60s:nic%d", h->name, n);
		low = nic;
		up = rack_name(t, h->rack);
	} else {
		low = t->switches[k->lower].name;
		up = t->switches[k->upper].name;
	}
	if (k->kind == HM_LINK_NIC_UP || k->kind == HM_LINK_SW_UP)
		snprintf(buf, len, "%.46s->%.46s", low, up);
	else
		snprintf(buf, len, "%.46s->%.46s", up, low);
}

static void link_view(const hm_topo_t *t, int l, const double *util, const int *njobs,
		      hm_coord_link_view_t *v)
{
	const hm_link_t *k = &t->links[l];

	memset(v, 0, sizeof(*v));
	link_name(t, l, v->name, sizeof(v->name));
	v->level = k->level;
	snprintf(v->dir, sizeof(v->dir), "%s",
		 k->kind == HM_LINK_NIC_UP || k->kind == HM_LINK_SW_UP ? "up" : "down");
	snprintf(v->rack, sizeof(v->rack), "%s", rack_name(t, k->rack));
	v->capacity_bps = k->capacity_bps;
	v->util = util[l];
	v->njobs = njobs[l];
}

/* Count each job once on every link its traffic crosses (any phase). */
static void count_jobs(const hm_topo_t *t, const hm_cjob_t *j, int *njobs, int *mark, int stamp)
{
	if (!j->have_tr)
		return;
	for (int p = 0; p < j->tr.nphases; p++)
		for (int k = 0; k < j->tr.phases[p].nlinks; k++) {
			int l = j->tr.phases[p].links[k];

			if (l >= 0 && l < t->nlinks && mark[l] != stamp) {
				mark[l] = stamp;
				njobs[l]++;
			}
		}
}

hm_rc_t hm_coord_links(hm_coord_t *c, hm_coord_link_view_t **out, int *n)
{
	const hm_topo_t *t;
	double *util = NULL, *ju = NULL;
	int *njobs = NULL, *mark = NULL, m = 0;
	hm_rc_t rc = HM_OK;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&c->mu);
	t = c->topo;
	util = calloc((size_t)t->nlinks + 1, sizeof(*util));
	ju = calloc((size_t)t->nlinks + 1, sizeof(*ju));
	njobs = calloc((size_t)t->nlinks + 1, sizeof(*njobs));
	mark = calloc((size_t)t->nlinks + 1, sizeof(*mark));
	if (!util || !ju || !njobs || !mark ||
	    !(*out = calloc((size_t)t->nlinks + 1, sizeof(**out)))) {
		rc = HM_ERR_NOMEM;
		goto out;
	}
	for (int i = 0; i < c->njobs; i++) {
		hm_coord_job_link_util(t, &c->jobs[i], util, ju);
		count_jobs(t, &c->jobs[i], njobs, mark, i + 1);
	}
	for (int l = 0; l < t->nlinks; l++) {
		bool nic =
		    t->links[l].kind == HM_LINK_NIC_UP || t->links[l].kind == HM_LINK_NIC_DOWN;

		if (!nic || njobs[l] > 0) /* every NIC would be a series per node and direction */
			link_view(t, l, util, njobs, &(*out)[m++]);
	}
	*n = m;
out:
	pthread_mutex_unlock(&c->mu);
	if (rc != HM_OK) {
		free(*out);
		*out = NULL;
	}
	free(util);
	free(ju);
	free(njobs);
	free(mark);
	return rc;
}

/* Flows of j on link l in its busiest phase (0 when it does not cross l). */
static int job_flows(const hm_cjob_t *j, int l)
{
	int best = 0;

	if (!j->have_tr)
		return 0;
	for (int p = 0; p < j->tr.nphases; p++) {
		const hm_phase_load_t *pl = &j->tr.phases[p];

		for (int k = 0; k < pl->nlinks; k++)
			if (pl->links[k] == l && pl->flows[k] > best)
				best = pl->flows[k];
	}
	return best;
}

/* Listed first: shared links, then the busier; then link order. */
static int by_interest(const void *a, const void *b)
{
	const hm_coord_explain_link_t *x = a, *y = b;

	if ((x->nothers > 0) != (y->nothers > 0))
		return x->nothers > 0 ? -1 : 1;
	if (x->share != y->share)
		return x->share < y->share ? -1 : 1;
	return x->link.util > y->link.util ? -1 : x->link.util < y->link.util;
}

/* The decision in one word and the reason in words. */
static void decision_words(const hm_cjob_t *j, hm_coord_explain_t *e)
{
	const hm_assignment_t *a = &e->job.a;

	if (!a->scheduled) {
		snprintf(e->decision, sizeof(e->decision), "free");
		snprintf(e->why, sizeof(e->why), "runs unpaced: %s", a->reason);
	} else if (a->period_us > 0) {
		snprintf(e->decision, sizeof(e->decision), "slot");
		snprintf(e->why, sizeof(e->why),
			 "%s staggers it: bursts start %.1f ms into each %.1f ms period (guard "
			 "%.1f ms), class %d, against %d shared link%s",
			 a->policy, a->shift_us / 1e3, a->period_us / 1e3, a->guard_us / 1e3,
			 a->prio, e->nshared, e->nshared == 1 ? "" : "s");
	} else {
		snprintf(e->decision, sizeof(e->decision), "%s", e->nshared ? "class" : "free");
		snprintf(e->why, sizeof(e->why),
			 e->nshared ? "%s ranks it (class %d, no stagger) on %d shared link%s"
				    : "%s: no link shared with another job (class %d), nothing to "
				      "stagger",
			 a->policy, a->prio, e->nshared, e->nshared == 1 ? "" : "s");
	}
	/* What the model takes instead where its traffic does not follow (hm_coord_pace.c). */
	if (a->scheduled && j->unpaced) {
		snprintf(e->decision, sizeof(e->decision), "free");
		snprintf(e->why, sizeof(e->why),
			 "modelled unpaced: no step reported an applied epoch (the pacing runtime "
			 "is not loaded, opted out or broken); %s decided class %d",
			 a->policy, a->prio);
	} else if (a->scheduled && e->job.class_in_force >= 0 && e->job.class_in_force != a->prio) {
		size_t n = strlen(e->why);

		snprintf(e->why + n, sizeof(e->why) - n,
			 "; its NCCL traffic still carries class %d (modelled so)",
			 e->job.class_in_force);
	}
}

/* Its burst alone from the declared bytes and as the policy sees it (hm_coord_burst.c). */
static void burst_words(const hm_cjob_t *j, hm_coord_explain_t *e)
{
	double f = j->burst.factor > 0 ? j->burst.factor : 1;
	hm_traffic_t declared;

	e->burst_declared_us = e->burst_model_us = -1;
	e->burst_factor = f;
	e->burst_samples = j->burst.total;
	if (!j->have_tr || j->tr.nphases < 1)
		return;
	/* Alone times are linear in the bytes; where phases start is not. */
	declared = j->tr;
	for (int p = 0; p < declared.nphases && p < HM_MAX_PHASES; p++)
		declared.alone_comm_s[p] /= f;
	e->burst_model_us = hm_traffic_alone_burst_s(&j->job.profile, &j->tr) * 1e6;
	e->burst_declared_us = hm_traffic_alone_burst_s(&j->job.profile, &declared) * 1e6;
}

/* A slot's GPUs: "0-3,6" from its mask, else "0-<gpus-1>" (the first ones). */
static void slot_gpus(const hm_slot_t *sl, char *buf, size_t len)
{
	uint32_t m = sl->gpu_mask ? sl->gpu_mask : (sl->gpus >= 32 ? ~0u : (1u << sl->gpus) - 1);
	size_t used = 0;

	buf[0] = '\0';
	for (int g = 0; g < 32 && used + 1 < len; g++) {
		int e = g;

		if (!(m >> g & 1u))
			continue;
		while (e + 1 < 32 && (m >> (e + 1) & 1u))
			e++;
		used += (size_t)snprintf(buf + used, len - used, e > g ? "%s%d-%d" : "%s%d",
					 used ? "," : "", g, e);
		g = e;
	}
}

/* GPUs modelled per node: "n1:0-7 n2:0-3" (cut to fit). */
static void gpus_words(const hm_topo_t *t, const hm_cjob_t *j, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int s = 0; s < j->pl.nslots && used + 1 < len; s++) {
		char ids[48];
		int w;

		slot_gpus(&j->pl.slots[s], ids, sizeof(ids));
		w = snprintf(buf + used, len - used, "%s%s:%s", s ? " " : "",
			     t->hosts[j->pl.slots[s].host].name, ids);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

hm_rc_t hm_coord_explain(hm_coord_t *c, uint32_t job_id, hm_coord_explain_t *out)
{
	const hm_topo_t *t;
	hm_coord_explain_link_t *all = NULL;
	double *util = NULL, *ju = NULL, *own = NULL, worst = 1;
	int *njobs = NULL, *mark = NULL, nall = 0;
	hm_cjob_t *j;
	hm_rc_t rc = HM_OK;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->mu);
	t = c->topo;
	if (!(j = hm_coord_find(c, job_id))) {
		rc = HM_ERR_NOTFOUND;
		goto out;
	}
	util = calloc((size_t)t->nlinks + 1, sizeof(*util));
	ju = calloc((size_t)t->nlinks + 1, sizeof(*ju));
	own = calloc((size_t)t->nlinks + 1, sizeof(*own));
	njobs = calloc((size_t)t->nlinks + 1, sizeof(*njobs));
	mark = calloc((size_t)t->nlinks + 1, sizeof(*mark));
	all = calloc((size_t)t->nlinks + 1, sizeof(*all));
	if (!util || !ju || !own || !njobs || !mark || !all) {
		rc = HM_ERR_NOMEM;
		goto out;
	}
	hm_coord_view_of(t, j, &out->job);
	gpus_words(t, j, out->gpus, sizeof(out->gpus));
	hm_coord_job_link_util(t, j, own, ju);
	for (int i = 0; i < c->njobs; i++) {
		hm_coord_job_link_util(t, &c->jobs[i], util, ju);
		count_jobs(t, &c->jobs[i], njobs, mark, i + 1);
	}
	for (int l = 0; l < t->nlinks; l++) {
		int mine = job_flows(j, l), theirs = 0;
		hm_coord_explain_link_t *x;

		if (!mine)
			continue;
		x = &all[nall++];
		link_view(t, l, util, njobs, &x->link);
		x->own_util = own[l];
		for (int i = 0; i < c->njobs; i++) {
			const hm_cjob_t *o = &c->jobs[i];
			int f = o == j ? 0 : job_flows(o, l);
			size_t used = strlen(x->others);

			if (!f)
				continue;
			theirs += f;
			if (x->nothers++ < HM_EXPLAIN_MAX_OTHERS)
				snprintf(x->others + used, sizeof(x->others) - used, "%s%u",
					 used ? "," : "", o->job_id);
		}
		/* Max-min over flows: a ring's flows move together, each gets an equal part. */
		x->share = (double)mine / (mine + theirs);
		out->nshared += x->nothers > 0;
		if (x->share < worst)
			worst = x->share;
	}
	qsort(all, (size_t)nall, sizeof(*all), by_interest);
	out->nlinks_total = nall;
	out->nlinks = nall < HM_EXPLAIN_MAX_LINKS ? nall : HM_EXPLAIN_MAX_LINKS;
	memcpy(out->links, all, (size_t)out->nlinks * sizeof(*all));
	out->share = worst;
	out->slowdown = worst > 0 ? 1 / worst : 0;
	decision_words(j, out);
	burst_words(j, out);
out:
	pthread_mutex_unlock(&c->mu);
	free(util);
	free(ju);
	free(own);
	free(njobs);
	free(mark);
	free(all);
	return rc;
}
