/*
 * Simulator network state: the event heap, the set of active phases on each
 * link, and incremental max-min re-solves of the connected component of links
 * that a starting or ending phase touches.
 */
#include "hm_sim_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- binary heap ordered by (t, seq) ---- */

static bool ev_less(const sim_ev_t *a, const sim_ev_t *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

hm_rc_t sim_heap_push(sim_heap_t *h, double t, int type, int job, unsigned ver, hm_err_t *err)
{
	if (h->n == h->cap) {
		int cap = h->cap ? h->cap * 2 : 1024;
		sim_ev_t *a = realloc(h->a, (size_t)cap * sizeof(*a));
		if (!a)
			return hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory (%d events)",
					  cap);
		h->a = a;
		h->cap = cap;
	}
	sim_ev_t ev = {t, h->seq++, type, job, ver};
	int i = h->n++;
	while (i > 0) {
		int p = (i - 1) / 2;
		if (!ev_less(&ev, &h->a[p]))
			break;
		h->a[i] = h->a[p];
		i = p;
	}
	h->a[i] = ev;
	return HM_OK;
}

bool sim_heap_pop(sim_heap_t *h, sim_ev_t *ev)
{
	if (h->n == 0)
		return false;
	*ev = h->a[0];
	sim_ev_t last = h->a[--h->n];
	int i = 0, n = h->n;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && ev_less(&h->a[c + 1], &h->a[c]))
			c++;
		if (!ev_less(&h->a[c], &last))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (n > 0)
		h->a[i] = last;
	return true;
}

/* ---- network ---- */

hm_rc_t sim_net_init(sim_t *s, hm_err_t *err)
{
	int nl = s->topo->nlinks, nj = s->nj > 0 ? s->nj : 1;
	size_t nls = nl > 0 ? (size_t)nl : 1;
	hm_rc_t rc;
	memset(&s->ws, 0, sizeof(s->ws));
	s->cap_bps = calloc(nls, sizeof(*s->cap_bps));
	s->lk_jobs = calloc(nls, sizeof(*s->lk_jobs));
	s->lk_n = calloc(nls, sizeof(*s->lk_n));
	s->lk_cap = calloc(nls, sizeof(*s->lk_cap));
	s->lvis = calloc(nls, sizeof(*s->lvis));
	s->lloc = calloc(nls, sizeof(*s->lloc));
	s->stack = calloc(nls, sizeof(*s->stack));
	s->load = calloc(nls, sizeof(*s->load));
	s->jvis = calloc((size_t)nj, sizeof(*s->jvis));
	s->active = calloc((size_t)nj, sizeof(*s->active));
	s->comp = calloc((size_t)nj, sizeof(*s->comp));
	s->mm_rate = calloc((size_t)nj, sizeof(*s->mm_rate));
	if (!s->cap_bps || !s->lk_jobs || !s->lk_n || !s->lk_cap || !s->lvis || !s->lloc ||
	    !s->stack || !s->load || !s->jvis || !s->active || !s->comp || !s->mm_rate)
		return hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory for %d links", nl);
	rc = hm_mm_reserve(&s->ws, nl, nj, 1024, err);
	if (rc != HM_OK)
		return rc;
	for (int l = 0; l < nl; l++) {
		s->cap_bps[l] = s->topo->links[l].capacity_bps;
		if (!(s->cap_bps[l] > 0) || !isfinite(s->cap_bps[l]))
			return hm_err_set(err, HM_ERR_INVAL,
					  "simulator: link %d has capacity %g bit/s (accepted: "
					  "finite > 0)",
					  l, s->cap_bps[l]);
	}
	return HM_OK;
}

void sim_net_free(sim_t *s)
{
	hm_mm_ws_free(&s->ws);
	if (s->lk_jobs)
		for (int l = 0; l < s->topo->nlinks; l++)
			free(s->lk_jobs[l]);
	free(s->lk_jobs);
	free(s->cap_bps);
	free(s->lk_n);
	free(s->lk_cap);
	free(s->lvis);
	free(s->lloc);
	free(s->stack);
	free(s->load);
	free(s->jvis);
	free(s->active);
	free(s->comp);
	free(s->mm_rate);
	free(s->heap.a);
}

/*
 * Collect the active phases connected to the seed links through shared links
 * (breadth over links and phases; each visited once thanks to generation marks),
 * re-solve max-min over them and reschedule the ends whose rate changed.
 * Cost: O(size of the component) plus the solve; untouched phases keep their
 * rates and their pending end events.
 */
static hm_rc_t resolve(sim_t *s, const hm_phase_load_t *seed, hm_err_t *err)
{
	int nstack = 0, nc = 0, nl = 0, nent = 0;
	unsigned g = ++s->gen;
	hm_mm_ws_t *ws = &s->ws;
	hm_rc_t rc;

	if (g == 0) { /* wrapped: clear the marks once */
		memset(s->lvis, 0, (size_t)s->topo->nlinks * sizeof(*s->lvis));
		memset(s->jvis, 0, (size_t)s->nj * sizeof(*s->jvis));
		g = ++s->gen;
	}
	/*
	 * Breadth over links and phases; links get local numbers and phases their
	 * entries as they are found (one pass builds the max-min problem).
	 */
	for (int k = 0; k < seed->nlinks; k++) {
		int l = seed->links[k];
		if (s->lvis[l] != g) {
			s->lvis[l] = g;
			s->lloc[l] = nl;
			ws->res[nl++] = s->cap_bps[l];
			s->stack[nstack++] = l;
		}
	}
	while (nstack > 0) {
		int l = s->stack[--nstack];
		for (int i = 0; i < s->lk_n[l]; i++) {
			int j = s->lk_jobs[l][i];
			if (s->jvis[j] == g)
				continue;
			s->jvis[j] = g;
			const sim_job_t *sj = &s->jobs[j];
			const hm_phase_load_t *ld = sj->ld;
			if (nent + ld->nlinks + 1 > ws->cap_ent) {
				rc = hm_mm_reserve(ws, s->topo->nlinks, s->nj,
						   2 * (nent + ld->nlinks), err);
				if (rc != HM_OK)
					return rc;
			}
			ws->pstart[nc] = nent;
			ws->prio[nc] = sj->prio;
			s->comp[nc++] = j;
			for (int k = 0; k < ld->nlinks; k++) {
				int m = ld->links[k];
				if (s->lvis[m] != g) {
					s->lvis[m] = g;
					s->lloc[m] = nl;
					ws->res[nl++] = s->cap_bps[m];
					s->stack[nstack++] = m;
				}
				if (ld->flows[k] > 0) {
					ws->elink[nent] = s->lloc[m];
					ws->eflow[nent++] = ld->flows[k];
				}
			}
		}
	}
	ws->pstart[nc] = nent;
	hm_mm_solve(ws, nl, nc, s->mm_rate);
	for (int i = 0; i < nc; i++) {
		sim_job_t *sj = &s->jobs[s->comp[i]];
		double r = s->mm_rate[i];
		if (r == sj->rate_bps)
			continue; /* its end event stays valid */
		sj->rem_bits -= sj->rate_bps * (s->now - sj->t_last_s);
		if (sj->rem_bits < 0)
			sj->rem_bits = 0;
		sj->t_last_s = s->now;
		sj->rate_bps = r;
		sj->ph_ver++;
		if (r > 0 && r < HUGE_VAL) {
			rc = sim_heap_push(&s->heap, s->now + sj->rem_bits / r, SEV_PHASE_END,
					   s->comp[i], sj->ph_ver, err);
			if (rc != HM_OK)
				return rc;
		}
	}
	return HM_OK;
}

static hm_rc_t link_add(sim_t *s, int l, int j, hm_err_t *err)
{
	if (s->lk_n[l] == s->lk_cap[l]) {
		int cap = s->lk_cap[l] ? s->lk_cap[l] * 2 : 4;
		int *a = realloc(s->lk_jobs[l], (size_t)cap * sizeof(*a));
		if (!a)
			return hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory");
		s->lk_jobs[l] = a;
		s->lk_cap[l] = cap;
	}
	s->lk_jobs[l][s->lk_n[l]++] = j;
	return HM_OK;
}

static void link_del(sim_t *s, int l, int j)
{
	for (int i = 0; i < s->lk_n[l]; i++) {
		if (s->lk_jobs[l][i] == j) {
			s->lk_jobs[l][i] = s->lk_jobs[l][--s->lk_n[l]];
			return;
		}
	}
}

hm_rc_t sim_net_start(sim_t *s, int j, const hm_phase_load_t *ld, int prio, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	hm_rc_t rc;

	sj->ld = ld;
	sj->prio = prio;
	sj->rem_bits = ld->flow_bytes * 8;
	sj->rate_bps = 0;
	sj->t_last_s = s->now;
	sj->act_pos = s->nactive;
	s->active[s->nactive++] = j;
	for (int k = 0; k < ld->nlinks; k++) {
		if (ld->links[k] < 0 || ld->links[k] >= s->topo->nlinks)
			return hm_err_set(err, HM_ERR_INVAL,
					  "simulator: job %d uses link %d (of %d)", j, ld->links[k],
					  s->topo->nlinks);
		rc = link_add(s, ld->links[k], j, err);
		if (rc != HM_OK)
			return rc;
	}
	return resolve(s, ld, err);
}

hm_rc_t sim_net_stop(sim_t *s, int j, hm_err_t *err)
{
	sim_job_t *sj = &s->jobs[j];
	const hm_phase_load_t *ld = sj->ld;

	if (sj->act_pos < 0)
		return HM_OK;
	int last = s->active[--s->nactive];
	s->active[sj->act_pos] = last;
	s->jobs[last].act_pos = sj->act_pos;
	sj->act_pos = -1;
	for (int k = 0; k < ld->nlinks; k++)
		link_del(s, ld->links[k], j);
	sj->rate_bps = 0;
	sj->ld = NULL;
	return resolve(s, ld, err);
}

void sim_net_util(sim_t *s, double *busiest, double *mean)
{
	int ntouched = 0;
	double best = 0, sum = 0;

	for (int i = 0; i < s->nactive; i++) {
		const sim_job_t *sj = &s->jobs[s->active[i]];
		for (int k = 0; k < sj->ld->nlinks; k++) {
			int l = sj->ld->links[k];
			if (s->load[l] == 0)
				s->stack[ntouched++] = l;
			s->load[l] += sj->ld->flows[k] * sj->rate_bps + 1e-300;
		}
	}
	for (int i = 0; i < ntouched; i++) {
		int l = s->stack[i];
		double u = s->load[l] / s->cap_bps[l];
		if (u > best)
			best = u;
		sum += u;
		s->load[l] = 0;
	}
	*busiest = best;
	*mean = ntouched ? sum / ntouched : 0;
}
