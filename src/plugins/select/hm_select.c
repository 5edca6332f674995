/*
 * hm_select.c - select/harmonics_cons_tres' decisions without Slurm
 * (hm_select.h): plan, overlay of recent placements, AdminComment entry.
 */
#include "hm_select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

hm_rc_t hm_sel_recent_add(hm_sel_recent_list_t *l, const hm_lview_job_t *j, hm_traffic_t *tr,
			  unsigned long topo_gen, double now_s, hm_err_t *err)
{
	hm_sel_recent_t *r;

	if (l->n == HM_SEL_RECENT_MAX) { /* the oldest goes */
		hm_traffic_free(&l->v[0].tr);
		memmove(l->v, l->v + 1, sizeof(*l->v) * (size_t)(l->n - 1));
		l->n--;
	}
	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 8;
		hm_sel_recent_t *nv = realloc(l->v, sizeof(*nv) * (size_t)cap);

		if (!nv)
			return hm_err_set(err, HM_ERR_NOMEM, "recent placements: out of memory");
		l->v = nv;
		l->cap = cap;
	}
	r = &l->v[l->n++];
	memset(r, 0, sizeof(*r));
	r->job_id = j->id;
	r->topo_gen = topo_gen;
	r->placed_s = now_s;
	r->j = *j;
	r->j.tr = NULL;
	r->tr = *tr;
	memset(tr, 0, sizeof(*tr));
	return HM_OK;
}

void hm_sel_recent_free(hm_sel_recent_list_t *l)
{
	for (int i = 0; i < l->n; i++)
		hm_traffic_free(&l->v[i].tr);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void hm_sel_recent_forget(hm_sel_recent_list_t *l, uint32_t job_id)
{
	int kept = 0;

	for (int i = 0; i < l->n; i++) {
		if (l->v[i].job_id == job_id)
			hm_traffic_free(&l->v[i].tr);
		else
			l->v[kept++] = l->v[i];
	}
	l->n = kept;
}

static bool in_view(const hm_lview_t *v, uint32_t id)
{
	for (int i = 0; v && i < v->njobs; i++)
		if (v->jobs[i].id == id)
			return true;
	return false;
}

hm_rc_t hm_sel_overlay(hm_sel_recent_list_t *l, const hm_live_t *live, double view_s, double now_s,
		       hm_lview_t **out, hm_err_t *err)
{
	hm_lview_job_t *jobs = NULL;
	int kept = 0;
	hm_rc_t rc;

	*out = NULL;
	for (int i = 0; i < l->n; i++) {
		hm_sel_recent_t *r = &l->v[i];

		if (r->topo_gen != live->topo_gen || in_view(live->view, r->job_id) ||
		    view_s - r->placed_s >= HM_SEL_RECENT_GRACE_S ||
		    !(now_s - r->placed_s <= HM_SEL_RECENT_MAX_S)) {
			hm_traffic_free(&r->tr);
			continue;
		}
		l->v[kept++] = *r;
	}
	l->n = kept;
	if (!kept)
		return HM_OK;
	if (!(jobs = calloc((size_t)kept, sizeof(*jobs))))
		return hm_err_set(err, HM_ERR_NOMEM, "recent placements: out of memory");
	for (int i = 0; i < kept; i++) {
		jobs[i] = l->v[i].j;
		jobs[i].tr = &l->v[i].tr;
	}
	rc = hm_lview_build(live->topo, jobs, kept, out, err);
	if (rc == HM_OK)
		(*out)->next = live->view;
	free(jobs);
	return rc;
}

/* Candidate from cons_tres' hosts (any order): ring order, one unit each. */
static hm_rc_t ct_cand(const hm_topo_t *t, const int *hosts, int n, hm_place_cand_t *c,
		       hm_err_t *err)
{
	bool *seen = calloc((size_t)(t->nracks > 0 ? t->nracks : 1), sizeof(bool));

	memset(c, 0, sizeof(*c));
	c->hosts = malloc((size_t)n * sizeof(int));
	c->units = malloc((size_t)n * sizeof(int));
	if (!seen || !c->hosts || !c->units) {
		free(seen);
		hm_place_cand_free(c);
		return hm_err_set(err, HM_ERR_NOMEM, "placement plan: out of memory");
	}
	for (int i = 0; i < n; i++) {
		int h = hosts[i], j = c->nhosts;

		for (; j > 0 && (t->hosts[c->hosts[j - 1]].rack > t->hosts[h].rack ||
				 (t->hosts[c->hosts[j - 1]].rack == t->hosts[h].rack &&
				  c->hosts[j - 1] > h));
		     j--)
			c->hosts[j] = c->hosts[j - 1];
		c->hosts[j] = h;
		c->units[c->nhosts++] = 1;
		if (t->hosts[h].rack >= 0 && t->hosts[h].rack < t->nracks &&
		    !seen[t->hosts[h].rack]) {
			seen[t->hosts[h].rack] = true;
			c->nracks++;
		}
	}
	if (t->nracks < 1)
		c->nracks = 1;
	c->rule = "cons_tres";
	free(seen);
	return HM_OK;
}

static bool same_hosts(const hm_place_cand_t *a, const hm_place_cand_t *b)
{
	return a->nhosts == b->nhosts &&
	       memcmp(a->hosts, b->hosts, (size_t)a->nhosts * sizeof(int)) == 0;
}

hm_rc_t hm_sel_plan(const hm_live_t *live, const hm_lview_t *view, const hm_sel_job_t *job,
		    hm_sel_plan_t *out, hm_err_t *err)
{
	const hm_topo_t *t = live->topo;
	hm_place_cand_t gen[HM_PLACE_MAX_CANDS];
	hm_place_req_t req = {job->avail, job->need, 0};
	hm_place_job_t pj = {.id = job->job_id,
			     .profile = job->profile,
			     .scheduled = job->scheduled,
			     .gpus_per_node = job->gpus_per_node,
			     .ring_key = job->ring_key,
			     .max_paths = 1, /* the coordinator derives path 0 */
			     .plane = job->plane};
	int ng, best;
	hm_rc_t rc = HM_OK;

	memset(out, 0, sizeof(*out));
	out->cons_tres = -1;
	for (int i = 0; job->ct_hosts && i < job->ct_n; i++)
		if (job->ct_hosts[i] < 0 || job->ct_hosts[i] >= t->nhosts)
			return hm_err_set(err, HM_ERR_INVAL,
					  "cons_tres chose a node outside the "
					  "coordinator's topology");
	if (job->ct_hosts && job->ct_n > 0) {
		if ((rc = ct_cand(t, job->ct_hosts, job->ct_n, &out->c[0], err)) != HM_OK)
			return rc;
		out->cons_tres = 0;
		out->n = 1;
	}
	ng = hm_place_candidates(t, view, &req, gen, HM_PLACE_MAX_CANDS - out->n);
	if (ng < 0) {
		hm_sel_plan_free(out);
		return hm_err_set(err, HM_ERR_NOMEM, "placement candidates: out of memory");
	}
	for (int k = 0; k < ng; k++) {
		bool dup = false;

		for (int i = 0; i < out->n && !dup; i++)
			dup = same_hosts(&gen[k], &out->c[i]);
		if (dup)
			hm_place_cand_free(&gen[k]);
		else
			out->c[out->n++] = gen[k];
	}
	if (out->n == 0)
		return hm_err_set(err, HM_ERR_NOTFOUND, "no candidate node set");
	best = hm_place_choose(t, view, &pj, out->c, out->n, out->s, err);
	if (best < 0) {
		hm_sel_plan_free(out);
		return err && err->rc != HM_OK ? err->rc : HM_ERR_INVAL;
	}
	/* Best first, then by score, racks, generation order (insertion: few items). */
	out->order[0] = best;
	for (int k = 0, m = 1; k < out->n; k++) {
		int j = m;

		if (k == best)
			continue;
		for (; j > 1; j--) {
			int o = out->order[j - 1];
			double a = out->s[k].total, b = out->s[o].total;

			if (a > b - HM_PLACE_SCORE_EPS &&
			    !(a < b + HM_PLACE_SCORE_EPS && out->c[k].nracks < out->c[o].nracks))
				break;
			out->order[j] = o;
		}
		out->order[j] = k;
		m++;
	}
	return HM_OK;
}

void hm_sel_plan_free(hm_sel_plan_t *p)
{
	for (int k = 0; k < p->n; k++)
		hm_place_cand_free(&p->c[k]);
	p->n = 0;
}

void hm_sel_placed_entry(double now_s, double score, double cons_tres_score, int racks, int ncands,
			 char *buf, size_t len)
{
	char when[32] = "?", ct[32] = "?";
	time_t t = (time_t)now_s;
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (cons_tres_score >= 0 && isfinite(cons_tres_score))
		snprintf(ct, sizeof(ct), "%.4f", cons_tres_score);
	snprintf(buf, len, HM_SEL_PLACED_TAG "%s score=%.4f cons_tres=%s racks=%d candidates=%d;",
		 when, score, ct, racks, ncands);
}

bool hm_sel_admin_comment(const char *current, const char *entry, char *buf, size_t len)
{
	const char *old = current ? strstr(current, HM_SEL_PLACED_TAG) : NULL;
	const char *end = old ? strchr(old, ';') : NULL;
	size_t pre, post_off;
	int n;

	if (!current)
		current = "";
	if (old) {
		pre = (size_t)(old - current);
		post_off = end ? (size_t)(end + 1 - current) : strlen(current);
	} else {
		pre = post_off = strlen(current);
	}
	n = snprintf(buf, len, "%.*s%s%s", (int)pre, current, entry, current + post_off);
	return n >= 0 && (size_t)n < len;
}
