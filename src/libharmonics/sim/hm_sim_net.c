/*
 * Simulator network state: the event heap, the set of active phases on each
 * link and the bandwidth they use, and incremental max-min: a starting or
 * ending phase that moves nobody else's rate costs no solve, otherwise only
 * the bottleneck-connected part around it is re-solved.
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

hm_rc_t sim_heap_push(sim_heap_t *h, double t, int type, int job, hm_err_t *err)
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
	sim_ev_t ev = {t, h->seq++, type, job};
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

static bool sim_heap_pop(sim_heap_t *h, sim_ev_t *ev)
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

/* ---- phase ends: a binary heap of one entry per job, keys moved in place ---- */

static bool end_less(const sim_end_t *a, const sim_end_t *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void end_put(sim_ends_t *e, int i, sim_end_t v)
{
	e->a[i] = v;
	e->pos[v.job] = i;
}

/* Entry v belongs at i or below or above it: move it there. */
static void end_sift(sim_ends_t *e, int i, sim_end_t v)
{
	while (i > 0 && end_less(&v, &e->a[(i - 1) / 2])) {
		end_put(e, i, e->a[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	for (;;) {
		int c = 2 * i + 1;
		if (c >= e->n)
			break;
		if (c + 1 < e->n && end_less(&e->a[c + 1], &e->a[c]))
			c++;
		if (!end_less(&e->a[c], &v))
			break;
		end_put(e, i, e->a[c]);
		i = c;
	}
	end_put(e, i, v);
}

/* The same order as one heap whose stale entries are skipped: the sequence
 * number comes from the main heap's counter at each (re)scheduling. */
void sim_end_set(sim_t *s, int j, double t)
{
	sim_ends_t *e = &s->ends;
	sim_end_t v = {t, s->heap.seq++, j};

	end_sift(e, e->pos[j] >= 0 ? e->pos[j] : e->n++, v);
}

void sim_end_del(sim_t *s, int j)
{
	sim_ends_t *e = &s->ends;
	int i = e->pos[j];

	if (i < 0)
		return;
	e->pos[j] = -1;
	if (i < --e->n)
		end_sift(e, i, e->a[e->n]);
}

bool sim_next(sim_t *s, sim_ev_t *ev)
{
	sim_ends_t *e = &s->ends;

	if (e->n > 0 && (s->heap.n == 0 || e->a[0].t < s->heap.a[0].t ||
			 (e->a[0].t == s->heap.a[0].t && e->a[0].seq < s->heap.a[0].seq))) {
		*ev = (sim_ev_t){e->a[0].t, e->a[0].seq, SEV_PHASE_END, e->a[0].job};
		sim_end_del(s, e->a[0].job);
		return true;
	}
	return sim_heap_pop(&s->heap, ev);
}

/* ---- network ---- */

/* A link is a bottleneck when its residual is below this share of its capacity. */
#define SAT_SLACK 1e-7

/* Links a and b are one cable's two directions: twins when loaded alike. */
static void pair(sim_t *s, int a, int b)
{
	int nl = s->topo->nlinks;

	if (a >= 0 && b >= 0 && a < nl && b < nl && a != b && s->cap_bps[a] == s->cap_bps[b]) {
		s->rev[a] = b;
		s->rev[b] = a;
	}
}

hm_rc_t sim_net_init(sim_t *s, hm_err_t *err)
{
	int nl = s->topo->nlinks, nj = s->nj > 0 ? s->nj : 1;
	size_t nls = nl > 0 ? (size_t)nl : 1;
	hm_rc_t rc;
	memset(&s->ws, 0, sizeof(s->ws));
	s->cap_bps = calloc(nls, sizeof(*s->cap_bps));
	s->cap_sat = calloc(nls, sizeof(*s->cap_sat));
	s->lk_jobs = calloc(nls, sizeof(*s->lk_jobs));
	s->lk_n = calloc(nls, sizeof(*s->lk_n));
	s->lk_cap = calloc(nls, sizeof(*s->lk_cap));
	s->lvis = calloc(nls, sizeof(*s->lvis));
	s->ltouch = calloc(nls, sizeof(*s->ltouch));
	s->lkeep = calloc(nls, sizeof(*s->lkeep));
	s->lkept = calloc(nls, sizeof(*s->lkept));
	s->lflows = calloc(nls, sizeof(*s->lflows));
	s->lout = calloc(nls, sizeof(*s->lout));
	s->lused = calloc(nls, sizeof(*s->lused));
	s->lloc = calloc(nls, sizeof(*s->lloc));
	s->rev = malloc(nls * sizeof(*s->rev));
	s->asym = calloc(nls, sizeof(*s->asym));
	s->lcode = calloc(nls, sizeof(*s->lcode));
	s->lflow = calloc(nls, sizeof(*s->lflow));
	s->seed = calloc(nls, sizeof(*s->seed));
	s->stack = calloc(nls, sizeof(*s->stack));
	s->load = calloc(nls, sizeof(*s->load));
	s->jvis = calloc((size_t)nj, sizeof(*s->jvis));
	s->active = calloc((size_t)nj, sizeof(*s->active));
	s->comp = calloc((size_t)nj, sizeof(*s->comp));
	s->mm_rate = calloc((size_t)nj, sizeof(*s->mm_rate));
	s->ends.a = calloc((size_t)nj, sizeof(*s->ends.a));
	s->ends.pos = malloc((size_t)nj * sizeof(*s->ends.pos));
	if (!s->cap_bps || !s->cap_sat || !s->lk_jobs || !s->lk_n || !s->lk_cap || !s->lvis ||
	    !s->ltouch || !s->lout || !s->lused || !s->lloc || !s->rev || !s->asym || !s->lcode ||
	    !s->lflow || !s->lkeep || !s->lkept || !s->lflows || !s->seed || !s->stack ||
	    !s->load || !s->jvis || !s->active || !s->comp || !s->mm_rate || !s->ends.a ||
	    !s->ends.pos)
		return hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory for %d links", nl);
	for (int j = 0; j < nj; j++)
		s->ends.pos[j] = -1;
	rc = hm_mm_reserve(&s->ws, nl + nj, nj, 1024, err); /* a folded link per phase */
	if (rc != HM_OK)
		return rc;
	for (int l = 0; l < nl; l++) {
		s->cap_bps[l] = s->topo->links[l].capacity_bps;
		if (!(s->cap_bps[l] > 0) || !isfinite(s->cap_bps[l]))
			return hm_err_set(err, HM_ERR_INVAL,
					  "simulator: link %d has capacity %g bit/s (accepted: "
					  "finite > 0)",
					  l, s->cap_bps[l]);
		s->cap_sat[l] = s->cap_bps[l] * (1 - SAT_SLACK);
		s->rev[l] = -1;
	}
	/* Each link's reverse (the other direction of the same cable). */
	const hm_topo_t *t = s->topo;
	for (int h = 0; h < t->nhosts; h++)
		for (int n = 0; n < t->hosts[h].nics && n < HM_MAX_NICS_PER_HOST; n++)
			pair(s, t->hosts[h].nic_up_link[n], t->hosts[h].nic_down_link[n]);
	for (int w = 0; w < t->nswitches; w++)
		for (int i = 0; i < t->switches[w].nparents; i++)
			pair(s, t->switches[w].up_link[i], t->switches[w].down_link[i]);
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
	free(s->cap_sat);
	free(s->lk_n);
	free(s->lk_cap);
	free(s->lvis);
	free(s->ltouch);
	free(s->lkeep);
	free(s->lkept);
	free(s->lflows);
	free(s->lout);
	free(s->lused);
	free(s->lloc);
	free(s->rev);
	free(s->asym);
	free(s->lcode);
	free(s->lflow);
	free(s->seed);
	free(s->stack);
	free(s->load);
	free(s->jvis);
	free(s->active);
	free(s->comp);
	free(s->mm_rate);
	free(s->heap.a);
	free(s->ends.a);
	free(s->ends.pos);
}

static bool saturated(const sim_t *s, int l)
{
	return s->lused[l] >= s->cap_sat[l];
}

/* Job j's phase at rate r: keep the links' used bandwidth in step. */
static void set_rate(sim_t *s, sim_job_t *sj, double r)
{
	const hm_phase_load_t *ld = sj->ld;
	double old = sj->rate_bps < HUGE_VAL ? sj->rate_bps : 0, nr = r < HUGE_VAL ? r : 0;

	if (ld && nr != old)
		for (int k = 0; k < ld->nlinks; k++)
			s->lused[ld->links[k]] += (nr - old) * ld->flows[k];
	sj->rate_bps = r;
}

/* The load of phases outside the solve on expanded link m: those it keeps. */
static double kept(const sim_t *s, int m, unsigned g)
{
	return s->lkeep[m] == g ? s->lkept[m] : 0;
}

/*
 * Is shared link m (first seen in this round's problem) the twin of its reverse,
 * already in it? When every phase on both is symmetric, both carry the same
 * phases with the same flows; with equal capacities, loads (the same additions
 * in the same order) and expansion, their residuals in the problem are equal
 * to the bit, so the second constraint repeats the first: left out, it changes
 * no level (the first always saturates first or together, freezing the same
 * phases). Its residual after the solve is its reverse's.
 */
static bool twin(const sim_t *s, int m, unsigned g)
{
	int r = s->rev[m];

	return r >= 0 && s->ltouch[r] == s->lround && s->lcode[r] >= 0 && s->asym[m] == 0 &&
	       s->asym[r] == 0 && s->lused[m] == s->lused[r] &&
	       (s->lvis[m] == g) == (s->lvis[r] == g) && kept(s, m, g) == kept(s, r, g);
}

/*
 * Shared link m's first sight in this round's problem: a local index (lloc,
 * stack: local -> global) and lcode = 2 * local + (not expanded: the load of
 * all phases is external, the solve's own shares are added back), or -1 when
 * its reverse's twin (lloc: the reverse's index). An expanded link has its
 * capacity less the load of the phases it keeps, summed afresh: the running
 * total lused carries the rounding of every change since the link was idle.
 */
static void number(sim_t *s, int m, unsigned g, int *nl, int *nout)
{
	bool ext = s->lvis[m] != g;

	s->ltouch[m] = s->lround;
	if (ext)
		s->lout[(*nout)++] = m;
	if (twin(s, m, g)) {
		/* Its reverse's constraint, to the bit: one is enough. */
		s->lloc[m] = s->lloc[s->rev[m]];
		s->lcode[m] = -1;
		return;
	}
	s->lloc[m] = *nl;
	s->lcode[m] = 2 * *nl + ext;
	s->stack[*nl] = m;
	s->ws.res[(*nl)++] = s->cap_bps[m] - (ext ? s->lused[m] : kept(s, m, g));
}

/*
 * Does phase o keep its rate through this change (class pr_class, level
 * pr_level; see resolve)? Classes above the change's never see it.
 */
static bool keeps(const sim_t *s, const sim_job_t *o)
{
	return o->prio < s->pr_class || (o->prio == s->pr_class && o->rate_bps < s->pr_level);
}

/* Collect job j's phase into the solve; its bottleneck links join the breadth. */
static void collect(sim_t *s, int j, unsigned g, int *nstack, int *nc)
{
	const hm_phase_load_t *ld = s->jobs[j].ld;

	s->jvis[j] = g;
	s->comp[(*nc)++] = j;
	for (int k = 0; k < ld->nlinks; k++) {
		int m = ld->links[k];
		if (s->lvis[m] != g && saturated(s, m)) {
			s->lvis[m] = g;
			s->stack[(*nstack)++] = m;
		}
	}
}

/*
 * Incremental max-min: a change re-solves only the phases it can affect.
 * Breadth from the change (a starting phase, or the links an ending phase
 * saturated) over phases and their links, but onwards only through links that
 * are bottlenecks (saturated) now: a phase whose other links all keep slack is
 * limited by a bottleneck of its own that the change does not reach. Links of
 * the collected phases that are not expanded keep the bandwidth of the phases
 * outside as a fixed load. If the solve saturates such a link, it is expanded
 * and the solve repeated; so every phase left outside keeps a bottleneck the
 * solve never touched, and the result is the max-min of the whole network.
 * An ending phase's links that kept slack free bandwidth nobody was limited
 * by, and a starting phase's such links are loaded as fixed links (expanded
 * if it fills them), so neither seeds the breadth.
 * Levels: the water-filling of the change's class c freezes every phase below
 * level L at the same links and rates with and without the change, where L is
 * the ending phase's rate, or a lower bound on the starting phase's new rate
 * (below L its links saturate in neither filling, and every other link carries
 * the same load). Such phases, and those of classes above c, keep their rates:
 * the breadth passes them by and their load stays fixed where it meets them.
 * Cost: the bottleneck-connected part around the change, not the component.
 */
static hm_rc_t resolve(sim_t *s, const int *seed, int nseed, int self, hm_err_t *err)
{
	int nstack = 0, nc = 0, nl = 0, nent = 0, nout = 0;
	unsigned g = ++s->gen;
	hm_mm_ws_t *ws = &s->ws;
	hm_rc_t rc;

	if (g == 0) { /* wrapped: clear the marks once */
		memset(s->lvis, 0, (size_t)s->topo->nlinks * sizeof(*s->lvis));
		memset(s->jvis, 0, (size_t)s->nj * sizeof(*s->jvis));
		memset(s->lkeep, 0, (size_t)s->topo->nlinks * sizeof(*s->lkeep));
		g = ++s->gen;
	}
	for (int k = 0; k < nseed; k++) {
		int l = seed[k];
		if (s->lvis[l] != g) {
			s->lvis[l] = g;
			s->stack[nstack++] = l;
		}
	}
	int nc0 = 0;
	if (self >= 0)
		collect(s, self, g, &nstack, &nc);
	for (;;) {
		while (nstack > 0) {
			int l = s->stack[--nstack];
			for (int i = 0; i < s->lk_n[l]; i++) {
				const sim_lk_t *e = &s->lk_jobs[l][i];
				const sim_job_t *o = &s->jobs[e->job];
				if (s->jvis[e->job] == g)
					continue;
				if (!keeps(s, o)) {
					collect(s, e->job, g, &nstack, &nc);
					continue;
				}
				if (s->lkeep[l] != g) { /* its load stays fixed here */
					s->lkeep[l] = g;
					s->lkept[l] = 0;
				}
				s->lkept[l] += o->rate_bps * e->flows;
			}
		}
		if (nc == nc0)
			break; /* nothing (new) joined: nothing (more) to solve */
		/* The problem of the collected phases, links numbered on first sight;
		 * a link not expanded has its capacity less the load of phases outside. */
		if (++s->lround == 0) {
			memset(s->ltouch, 0, (size_t)s->topo->nlinks * sizeof(*s->ltouch));
			s->lround = 1;
		}
		nl = 0;
		nent = 0;
		nout = 0;
		for (int i = 0; i < nc; i++) {
			const sim_job_t *sj = &s->jobs[s->comp[i]];
			const hm_phase_load_t *ld = sj->ld;
			double r = sj->rate_bps < HUGE_VAL ? sj->rate_bps : 0;
			if (nent + ld->nlinks + 2 > ws->cap_ent) {
				rc = hm_mm_reserve(ws, s->topo->nlinks + s->nj, s->nj,
						   2 * (nent + ld->nlinks + 2), err);
				if (rc != HM_OK)
					return rc;
			}
			ws->pstart[i] = nent;
			ws->prio[i] = sj->prio;
			double own = HUGE_VAL; /* its links nobody else uses, folded into one */
			for (int k = 0; k < ld->nlinks; k++) {
				int m = ld->links[k], f = ld->flows[k], code;
				if (s->lk_n[m] == 1) {
					double x = f > 0 ? s->cap_bps[m] / f : HUGE_VAL;
					if (x < own)
						own = x;
					continue;
				}
				if (s->ltouch[m] != s->lround)
					number(s, m, g, &nl, &nout);
				code = s->lcode[m];
				if (code < 0)
					continue; /* its reverse's twin */
				if (code & 1)     /* its own share is not external */
					ws->res[code >> 1] += r * f;
				if (f > 0) {
					ws->elink[nent] = code >> 1;
					ws->eflow[nent++] = f;
				}
			}
			if (own < HUGE_VAL) {
				s->stack[nl] = -1;
				ws->res[nl] = own;
				ws->elink[nent] = nl++;
				ws->eflow[nent++] = 1;
			}
		}
		ws->pstart[nc] = nent;
		/* Rounding of the loads kept apart: a full link is full, not 1e-16 free. */
		for (int i = 0; i < nl; i++)
			if (s->stack[i] >= 0 && ws->res[i] < s->cap_bps[s->stack[i]] * 1e-12)
				ws->res[i] = 0;
		hm_mm_solve(ws, nl, nc, s->mm_rate);
		/* A link left out that the solve saturated: expand it and solve again. */
		for (int i = 0; i < nout; i++) {
			int m = s->lout[i];
			if (ws->res[s->lloc[m]] <= s->cap_bps[m] * SAT_SLACK) {
				s->lvis[m] = g;
				s->stack[nstack++] = m;
			}
		}
		if (nstack == 0)
			break;
		nc0 = nc;
	}
	for (int i = 0; i < nc; i++) {
		sim_job_t *sj = &s->jobs[s->comp[i]];
		double r = s->mm_rate[i];
		if (r == sj->rate_bps)
			continue; /* its end event stays valid */
		sj->rem_bits -= sj->rate_bps * (s->now - sj->t_last_s);
		if (sj->rem_bits < 0)
			sj->rem_bits = 0;
		sj->t_last_s = s->now;
		set_rate(s, sj, r);
		if (r > 0 && r < HUGE_VAL)
			sim_end_set(s, s->comp[i], s->now + sj->rem_bits / r);
		else
			sim_end_del(s, s->comp[i]);
	}
	return HM_OK;
}

static hm_rc_t link_add(sim_t *s, int l, int j, int flows, hm_err_t *err)
{
	s->lflows[l] += flows;
	if (s->lk_n[l] == s->lk_cap[l]) {
		int cap = s->lk_cap[l] ? s->lk_cap[l] * 2 : 4;
		sim_lk_t *a = realloc(s->lk_jobs[l], (size_t)cap * sizeof(*a));
		if (!a)
			return hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory");
		s->lk_jobs[l] = a;
		s->lk_cap[l] = cap;
	}
	s->lk_jobs[l][s->lk_n[l]++] = (sim_lk_t){j, flows};
	return HM_OK;
}

static void link_del(sim_t *s, int l, int j, int flows)
{
	s->lflows[l] -= flows;
	for (int i = 0; i < s->lk_n[l]; i++) {
		if (s->lk_jobs[l][i].job == j) {
			s->lk_jobs[l][i] = s->lk_jobs[l][--s->lk_n[l]];
			if (s->lk_n[l] == 0)
				s->lused[l] = 0; /* no rounding carried over */
			return;
		}
	}
}

/*
 * opts.check_maxmin (tests): the incremental rates against one max-min solve of
 * every active phase; a difference beyond 1e-9 relative fails the run.
 */
static hm_rc_t check_full(sim_t *s, hm_err_t *err)
{
	int n = s->nactive;
	hm_mm_phase_t *ph = calloc((size_t)n + 1, sizeof(*ph));
	double *r = malloc(sizeof(double) * ((size_t)n + 1));
	hm_rc_t rc = HM_OK;

	if (!ph || !r) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "simulator: out of memory (max-min check)");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		const sim_job_t *sj = &s->jobs[s->active[i]];
		ph[i].nl = sj->ld->nlinks;
		ph[i].links = sj->ld->links;
		ph[i].flows = sj->ld->flows;
		ph[i].prio = sj->prio;
	}
	rc = hm_maxmin(s->cap_bps, s->topo->nlinks, ph, n, r, err);
	for (int i = 0; i < n && rc == HM_OK; i++) {
		double a = s->jobs[s->active[i]].rate_bps;
		if (fabs(a - r[i]) > 1e-9 * fabs(r[i]) + 1e-6)
			rc = hm_err_set(
			    err, HM_ERR_INVAL,
			    "simulator: max-min check at t=%.9f s: job %d at %.9g bit/s, "
			    "a full solve gives %.9g",
			    s->now, s->active[i], a, r[i]);
	}
out:
	free(ph);
	free(r);
	return rc;
}

/*
 * A starting phase that changes nobody's rate needs no solve: at the rate the
 * residual capacity leaves it (r = least residual / flows over its links),
 * every link it fills must carry only phases of higher classes or of its class
 * at no more than r (max-min: it has the largest rate on its bottleneck, and
 * nobody slower is squeezed). Links it does not fill keep slack, so nobody
 * else is affected. Then its rate is r and nothing else moves.
 */
static bool start_alone(sim_t *s, int j)
{
	sim_job_t *sj = &s->jobs[j];
	const hm_phase_load_t *ld = sj->ld;
	double r = HUGE_VAL;

	for (int k = 0; k < ld->nlinks; k++) {
		int m = ld->links[k];
		double res = s->cap_bps[m] - s->lused[m];
		if (ld->flows[k] > 0)
			r = fmin(r, (res > 0 ? res : 0) / ld->flows[k]);
	}
	if (!(r > 0) || r == HUGE_VAL)
		return false;
	for (int k = 0; k < ld->nlinks; k++) {
		int m = ld->links[k];
		if (ld->flows[k] <= 0 ||
		    s->lused[m] + r * ld->flows[k] < s->cap_bps[m] * (1 - SAT_SLACK))
			continue; /* keeps slack */
		for (int i = 0; i < s->lk_n[m]; i++) {
			const sim_job_t *o = &s->jobs[s->lk_jobs[m][i].job];
			if (o == sj || o->prio < sj->prio)
				continue;
			if (o->prio > sj->prio || o->rate_bps > r * (1 + SAT_SLACK))
				return false;
		}
	}
	set_rate(s, sj, r);
	sj->t_last_s = s->now;
	sim_end_set(s, j, s->now + sj->rem_bits / r);
	return true;
}

/* The links an ending phase fills and shares (the seeds of its re-solve, in
 * s->seed): none frees bandwidth anybody was waiting for, so no solve. */
static int stop_seeds(sim_t *s, const sim_job_t *sj)
{
	const hm_phase_load_t *ld = sj->ld;
	int n = 0;

	for (int k = 0; k < ld->nlinks; k++) {
		int m = ld->links[k];
		if (s->lk_n[m] > 1 && saturated(s, m))
			s->seed[n++] = m;
	}
	return n;
}

/* Does phase ld put as many flows on each link's reverse as on the link (a
 * ring's every cut is crossed as often both ways)? */
static bool symmetric(sim_t *s, const hm_phase_load_t *ld)
{
	bool sym = true;

	for (int k = 0; k < ld->nlinks; k++)
		s->lflow[ld->links[k]] = ld->flows[k] + 1;
	for (int k = 0; k < ld->nlinks && sym; k++) {
		int r = s->rev[ld->links[k]];
		sym = r >= 0 && s->lflow[r] == ld->flows[k] + 1;
	}
	for (int k = 0; k < ld->nlinks; k++)
		s->lflow[ld->links[k]] = 0;
	return sym;
}

/*
 * The level of a starting phase (class 0; below, no bound: only higher classes
 * keep): a link saturates at level x when its flows, none above x, fill it, so
 * the phase gets at least lam0 = the least capacity / flows over its links.
 * Phases below lam0 keep their rates, so a link saturates no lower than its
 * capacity less their load over its other flows: the least of that over the
 * phase's links is a bound too, and higher (2.4% fewer instructions on
 * bench_sim's scattered hour; more rounds gained nothing).
 */
static void start_level(sim_t *s, int j)
{
	const sim_job_t *sj = &s->jobs[j];
	const hm_phase_load_t *ld = sj->ld;
	double lam0 = HUGE_VAL, lam = HUGE_VAL;

	s->pr_class = sj->prio;
	s->pr_level = 0;
	if (sj->prio != 0)
		return;
	for (int k = 0; k < ld->nlinks; k++)
		if (ld->flows[k] > 0)
			lam0 = fmin(lam0, s->cap_bps[ld->links[k]] / s->lflows[ld->links[k]]);
	if (lam0 == HUGE_VAL)
		return;
	for (int k = 0; k < ld->nlinks; k++) {
		int m = ld->links[k], f = s->lflows[m];
		double load = 0;
		if (ld->flows[k] <= 0)
			continue;
		for (int i = 0; i < s->lk_n[m]; i++) {
			const sim_lk_t *e = &s->lk_jobs[m][i];
			const sim_job_t *o = &s->jobs[e->job];
			if (e->job != j && o->prio == 0 && o->rate_bps < lam0 * (1 - SAT_SLACK)) {
				load += o->rate_bps * e->flows;
				f -= e->flows;
			}
		}
		lam = fmin(lam, (s->cap_bps[m] - load) / f);
	}
	s->pr_level = fmax(lam0, lam) * (1 - SAT_SLACK);
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
		rc = link_add(s, ld->links[k], j, ld->flows[k], err);
		if (rc != HM_OK)
			return rc;
	}
	sj->sym = symmetric(s, ld);
	for (int k = 0; k < ld->nlinks && !sj->sym; k++)
		s->asym[ld->links[k]]++;
	if (!start_alone(s, j)) {
		start_level(s, j);
		rc = resolve(s, NULL, 0, j, err);
	}
	if (rc == HM_OK && s->o.check_maxmin)
		rc = check_full(s, err);
	return rc;
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
	int nseed = stop_seeds(s, sj);
	s->pr_class = sj->prio; /* margin: rates are rounded */
	s->pr_level = sj->rate_bps * (1 - SAT_SLACK);
	set_rate(s, sj, 0);
	for (int k = 0; k < ld->nlinks; k++) {
		link_del(s, ld->links[k], j, ld->flows[k]);
		s->asym[ld->links[k]] -= !sj->sym;
	}
	sj->ld = NULL;
	hm_rc_t rc = nseed == 0 ? HM_OK : resolve(s, s->seed, nseed, -1, err);
	if (rc == HM_OK && s->o.check_maxmin)
		rc = check_full(s, err);
	return rc;
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
