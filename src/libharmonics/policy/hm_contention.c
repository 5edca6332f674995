/*
 * Analytical contention model (hm_contention.h): burst windows on a discretised
 * hyperperiod, strict classes and proportional sharing per link and bin.
 */
#include "hm_contention.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CM_MAX_STRETCH 100.0 /* a starved burst counts as 100x longer, not infinite */

typedef struct {
	double period_s, comm_s, alone_s, load_bps;
	int nl;
	int *lk;     /* local link indexes */
	double *dem; /* demand per link during the burst, bit/s */
} cm_job_t;

struct hm_cm {
	int n;
	double origin_s, hyper_s, bin_s;
	int nbins;
	bool commensurate;
	int nlinks;  /* local links (loaded by some job) */
	double *cap; /* per local link */
	cm_job_t *jobs;
	unsigned char *share; /* n x n */
	int *lk_njobs;        /* jobs per local link (all jobs of the model) */
};

void hm_cm_opts_defaults(hm_cm_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->use_path = true;
}

void hm_cm_free(hm_cm_t *m)
{
	if (!m)
		return;
	for (int j = 0; m->jobs && j < m->n; j++) {
		free(m->jobs[j].lk);
		free(m->jobs[j].dem);
	}
	free(m->jobs);
	free(m->cap);
	free(m->share);
	free(m->lk_njobs);
	free(m);
}

static long long gcdll(long long a, long long b)
{
	while (b) {
		long long t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Hyperperiod and bins from the periods (see hm_contention.h). */
static void layout(hm_cm_t *m, const hm_cm_opts_t *o)
{
	int bpp = o->bins_per_period > 0 ? o->bins_per_period : 96;
	int maxh = o->max_hyper_periods > 0 ? o->max_hyper_periods : 8;
	int maxb = o->max_bins > 0 ? o->max_bins : 4096;
	double pmin = HUGE_VAL, pmax = 0;

	for (int j = 0; j < m->n; j++) {
		if (m->jobs[j].period_s < pmin)
			pmin = m->jobs[j].period_s;
		if (m->jobs[j].period_s > pmax)
			pmax = m->jobs[j].period_s;
	}
	if (m->n == 0) {
		m->hyper_s = 1;
		m->nbins = 1;
		m->bin_s = 1;
		return;
	}
	double q = pmin / bpp;
	long long l = 1, cap = (long long)ceil(maxh * pmax / q);
	bool ok = true;
	for (int j = 0; j < m->n && ok; j++) {
		long long k = llround(m->jobs[j].period_s / q);
		if (k < 1)
			k = 1;
		if (fabs(k * q - m->jobs[j].period_s) > 1e-6 * m->jobs[j].period_s + q * 0.02)
			ok = false; /* not a multiple of the quantum: not commensurate */
		else {
			l = l / gcdll(l, k) * k;
			if (l > cap)
				ok = false;
		}
	}
	m->commensurate = ok;
	if (ok) {
		m->hyper_s = l * q;
		m->nbins = l > maxb ? maxb : (int)l;
	} else {
		m->hyper_s = maxh * pmax;
		double nb = ceil(m->hyper_s / q);
		m->nbins = nb > maxb ? maxb : (int)nb;
	}
	if (m->nbins < 1)
		m->nbins = 1;
	m->bin_s = m->hyper_s / m->nbins;
}

hm_rc_t hm_cm_build(const hm_sched_ctx_t *ctx, const hm_cm_opts_t *opts, hm_cm_t **out,
		    hm_err_t *err)
{
	hm_cm_opts_t o;
	hm_cm_t *m = NULL;
	int *lmap = NULL, nl = 0;
	hm_rc_t rc = HM_OK;

	if (!out || !ctx || !ctx->topo || (ctx->njobs > 0 && !ctx->jobs))
		return hm_err_set(err, HM_ERR_INVAL, "contention model: NULL context or output");
	*out = NULL;
	if (opts)
		o = *opts;
	else
		hm_cm_opts_defaults(&o);
	const hm_topo_t *t = ctx->topo;
	m = calloc(1, sizeof(*m));
	lmap = malloc((size_t)(t->nlinks > 0 ? t->nlinks : 1) * sizeof(*lmap));
	if (!m || !lmap) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "contention model: out of memory");
		goto out;
	}
	for (int l = 0; l < t->nlinks; l++)
		lmap[l] = -1;
	m->n = ctx->njobs;
	m->origin_s = ctx->now_s;
	m->jobs = calloc((size_t)(m->n > 0 ? m->n : 1), sizeof(*m->jobs));
	m->cap = malloc((size_t)(t->nlinks > 0 ? t->nlinks : 1) * sizeof(*m->cap));
	m->lk_njobs = calloc((size_t)(t->nlinks > 0 ? t->nlinks : 1), sizeof(*m->lk_njobs));
	m->share = calloc((size_t)(m->n > 0 ? m->n * m->n : 1), 1);
	if (!m->jobs || !m->cap || !m->lk_njobs || !m->share) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "contention model: out of memory");
		goto out;
	}
	for (int j = 0; j < m->n; j++) {
		const hm_sched_job_t *sj = &ctx->jobs[j];
		const hm_traffic_t *tr = sj->traffic;
		cm_job_t *cj = &m->jobs[j];
		if (o.use_path && sj->path_traffic && sj->npaths > 1 && sj->dec.path > 0 &&
		    sj->dec.path < sj->npaths)
			tr = &sj->path_traffic[sj->dec.path];
		if (!tr) {
			rc = hm_err_set(err, HM_ERR_INVAL,
					"contention model: job %d has no traffic", sj->id);
			goto out;
		}
		cj->alone_s = tr->alone_iter_s;
		cj->period_s = sj->meas_iter_s > 0 ? sj->meas_iter_s : tr->alone_iter_s;
		if (!(cj->period_s > 0) || !isfinite(cj->period_s)) {
			rc = hm_err_set(err, HM_ERR_INVAL,
					"contention model: job %d has period %g s (accepted: > 0)",
					sj->id, cj->period_s);
			goto out;
		}
		for (int p = 0; p < tr->nphases && p < HM_MAX_PHASES; p++)
			cj->comm_s += tr->alone_comm_s[p];
		if (!(cj->comm_s > 0))
			continue; /* no network traffic: no links */
		int cnt = 0;
		for (int p = 0; p < tr->nphases && p < HM_MAX_PHASES; p++)
			cnt += tr->phases[p].nlinks;
		cj->lk = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof(*cj->lk));
		cj->dem = calloc((size_t)(cnt > 0 ? cnt : 1), sizeof(*cj->dem));
		if (!cj->lk || !cj->dem) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "contention model: out of memory");
			goto out;
		}
		for (int p = 0; p < tr->nphases && p < HM_MAX_PHASES; p++) {
			const hm_phase_load_t *ld = &tr->phases[p];
			for (int k = 0; k < ld->nlinks; k++) {
				int g = ld->links[k];
				if (g < 0 || g >= t->nlinks) {
					rc = hm_err_set(
					    err, HM_ERR_INVAL,
					    "contention model: job %d uses link %d (of %d)", sj->id,
					    g, t->nlinks);
					goto out;
				}
				if (lmap[g] < 0) {
					lmap[g] = nl;
					m->cap[nl++] = t->links[g].capacity_bps;
				}
				int l = lmap[g], i = 0;
				while (i < cj->nl && cj->lk[i] != l)
					i++;
				if (i == cj->nl) {
					cj->lk[cj->nl++] = l;
					m->lk_njobs[l]++;
				}
				cj->dem[i] += ld->flows[k] * ld->flow_bytes * 8 / cj->comm_s;
			}
		}
		for (int i = 0; i < cj->nl; i++)
			cj->load_bps += cj->dem[i];
	}
	m->nlinks = nl;
	for (int a = 0; a < m->n; a++)
		for (int b = a + 1; b < m->n; b++) {
			bool s = false;
			for (int i = 0; i < m->jobs[a].nl && !s; i++)
				for (int k = 0; k < m->jobs[b].nl && !s; k++)
					s = m->jobs[a].lk[i] == m->jobs[b].lk[k];
			m->share[a * m->n + b] = m->share[b * m->n + a] = s;
		}
	layout(m, &o);
out:
	free(lmap);
	if (rc != HM_OK)
		hm_cm_free(m);
	else
		*out = m;
	return rc;
}

int hm_cm_njobs(const hm_cm_t *m)
{
	return m ? m->n : 0;
}

double hm_cm_origin_s(const hm_cm_t *m)
{
	return m->origin_s;
}

double hm_cm_hyperperiod_s(const hm_cm_t *m)
{
	return m->hyper_s;
}

static bool bad(const hm_cm_t *m, int j)
{
	return !m || j < 0 || j >= m->n;
}

double hm_cm_period_s(const hm_cm_t *m, int j)
{
	return bad(m, j) ? 0 : m->jobs[j].period_s;
}

double hm_cm_comm_s(const hm_cm_t *m, int j)
{
	return bad(m, j) ? 0 : m->jobs[j].comm_s;
}

double hm_cm_alone_iter_s(const hm_cm_t *m, int j)
{
	return bad(m, j) ? 0 : m->jobs[j].alone_s;
}

double hm_cm_load_bps(const hm_cm_t *m, int j)
{
	return bad(m, j) ? 0 : m->jobs[j].load_bps;
}

bool hm_cm_shares_link(const hm_cm_t *m, int a, int b)
{
	return !bad(m, a) && !bad(m, b) && a != b && m->share[a * m->n + b];
}

bool hm_cm_contended(const hm_cm_t *m, int j)
{
	if (bad(m, j))
		return false;
	for (int i = 0; i < m->jobs[j].nl; i++)
		if (m->lk_njobs[m->jobs[j].lk[i]] > 1)
			return true;
	return false;
}

hm_rc_t hm_cm_set_period(hm_cm_t *m, int j, double period_s, hm_err_t *err)
{
	if (bad(m, j) || !(period_s > 0) || !isfinite(period_s))
		return hm_err_set(err, HM_ERR_INVAL,
				  "contention model: period %g s for job %d (accepted: > 0, job "
				  "0..%d)",
				  period_s, j, m ? m->n - 1 : -1);
	m->jobs[j].period_s = period_s;
	hm_cm_opts_t o;
	hm_cm_opts_defaults(&o);
	layout(m, &o);
	return HM_OK;
}

/* Add the window [a, a + len) (seconds, a in [0, H)) to occ[], wrapping when commensurate. */
static void add_window(const hm_cm_t *m, double *occ, double a, double len)
{
	double end = a + len, H = m->hyper_s, w = m->bin_s;

	if (end > H && m->commensurate) {
		add_window(m, occ, 0, end - H);
		end = H;
	}
	if (end > H)
		end = H;
	int b = (int)(a / w);
	while (b < m->nbins && a < end) {
		double be = (b + 1) * w, e = end < be ? end : be;
		occ[b] += (e - a) / w;
		a = e;
		b++;
	}
}

/* Growth of one burst window [a, a + len) from the per-bin stretch of its job. */
static double window_growth(const hm_cm_t *m, const double *str, double a, double len)
{
	double end = a + len, H = m->hyper_s, w = m->bin_s, g = 0;

	if (end > H && m->commensurate) {
		g += window_growth(m, str, 0, end - H);
		end = H;
	}
	if (end > H)
		end = H;
	int b = (int)(a / w);
	while (b < m->nbins && a < end) {
		double be = (b + 1) * w, e = end < be ? end : be;
		g += (e - a) * (str[b] - 1);
		a = e;
		b++;
	}
	return g;
}

/* Held iteration after a burst grown by g: see hm_cm_eval_held(). */
static double held_iter(double alone, double P, double g)
{
	return alone + g <= P * (1 + 1e-9) ? P : P * ceil((alone + g) / P - 1e-9);
}

static double eval_core(const hm_cm_t *m, const int *idx, int n, const double *shift_s,
			const int *prio, bool held, double *iter_s)
{
	int B;
	double *occ = NULL, *str = NULL, total = 0;
	int *on = NULL;

	if (!m || n <= 0 || !idx || !shift_s)
		return 0;
	B = m->nbins;
	occ = calloc((size_t)n * B, sizeof(*occ));
	str = malloc((size_t)n * B * sizeof(*str));
	on = malloc((size_t)n * sizeof(*on));
	if (!occ || !str || !on) {
		total = HUGE_VAL;
		goto out;
	}
	for (int i = 0; i < n * B; i++)
		str[i] = 1;
	for (int i = 0; i < n; i++) {
		if (bad(m, idx[i]))
			continue;
		const cm_job_t *cj = &m->jobs[idx[i]];
		if (!(cj->comm_s > 0))
			continue;
		double P = cj->period_s, s = fmod(shift_s[i], P);
		if (s < 0)
			s += P;
		if (m->commensurate) /* the quantised period repeats exactly in H */
			P = m->hyper_s / llround(m->hyper_s / P);
		for (double a = s; a < m->hyper_s - 1e-12; a += P)
			add_window(m, &occ[(size_t)i * B], a, cj->comm_s < P ? cj->comm_s : P);
	}
	/* Per local link shared by two jobs of the subset: serve classes per bin. */
	for (int l = 0; l < m->nlinks; l++) {
		int non = 0;
		for (int i = 0; i < n; i++) {
			if (bad(m, idx[i]))
				continue;
			const cm_job_t *cj = &m->jobs[idx[i]];
			for (int k = 0; k < cj->nl; k++) {
				if (cj->lk[k] == l) {
					on[non++] = i; /* links are unique per job */
					break;
				}
			}
		}
		if (non < 2)
			continue;
		for (int b = 0; b < B; b++) {
			double res = m->cap[l];
			int done = 0, cls = -1;
			while (done < non) {
				/* Next class present on this link. */
				int c = INT32_MAX;
				for (int x = 0; x < non; x++) {
					int p = prio ? prio[on[x]] : 0;
					if (p > cls && p < c)
						c = p;
				}
				double D = 0;
				for (int x = 0; x < non; x++) {
					int i = on[x];
					if ((prio ? prio[i] : 0) != c)
						continue;
					const cm_job_t *cj = &m->jobs[idx[i]];
					for (int k = 0; k < cj->nl; k++)
						if (cj->lk[k] == l)
							D += occ[(size_t)i * B + b] * cj->dem[k];
					done++;
				}
				double a = D > res ? (res > 0 ? res / D : 0) : 1;
				double sf = a > 1.0 / CM_MAX_STRETCH ? 1 / a : CM_MAX_STRETCH;
				res -= a * D;
				if (sf > 1)
					for (int x = 0; x < non; x++) {
						int i = on[x];
						if ((prio ? prio[i] : 0) == c &&
						    occ[(size_t)i * B + b] > 0 &&
						    str[(size_t)i * B + b] < sf)
							str[(size_t)i * B + b] = sf;
					}
				cls = c;
			}
		}
	}
	for (int i = 0; i < n; i++) {
		if (bad(m, idx[i])) {
			if (iter_s)
				iter_s[i] = 0;
			continue;
		}
		const cm_job_t *cj = &m->jobs[idx[i]];
		double it;
		if (!held || !(cj->comm_s > 0)) {
			double grow = 0;
			for (int b = 0; b < B; b++)
				grow += occ[(size_t)i * B + b] * (str[(size_t)i * B + b] - 1);
			grow *= m->bin_s / (m->hyper_s / cj->period_s); /* per burst */
			it = cj->alone_s + grow;
			if (held && it < cj->period_s)
				it = cj->period_s;
		} else {
			/* Burst by burst: one that outgrows the slack loses whole periods. */
			double P = cj->period_s, s0 = fmod(shift_s[i], P), sum = 0;
			int nb = 0;
			if (s0 < 0)
				s0 += P;
			if (m->commensurate)
				P = m->hyper_s / llround(m->hyper_s / P);
			for (double a = s0; a < m->hyper_s - 1e-12; a += P, nb++) {
				double g = window_growth(m, &str[(size_t)i * B], a,
							 cj->comm_s < P ? cj->comm_s : P);
				sum += held_iter(cj->alone_s, cj->period_s, g);
			}
			it = nb > 0 ? sum / nb : cj->period_s;
		}
		if (iter_s)
			iter_s[i] = it;
		total += cj->alone_s > 0 ? it / cj->alone_s : 1;
	}
	total /= n;
out:
	free(occ);
	free(str);
	free(on);
	return total;
}

double hm_cm_eval(const hm_cm_t *m, const int *idx, int n, const double *shift_s, const int *prio,
		  double *iter_s)
{
	return eval_core(m, idx, n, shift_s, prio, false, iter_s);
}

double hm_cm_eval_held(const hm_cm_t *m, const int *idx, int n, const double *shift_s,
		       const int *prio, double *iter_s)
{
	return eval_core(m, idx, n, shift_s, prio, true, iter_s);
}
