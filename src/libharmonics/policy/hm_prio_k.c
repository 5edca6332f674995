/*
 * hm_prio_k.c - Crux's k correction (P = k * I): both strict orders of a job
 * and the reference simulated on one link (hm_prio.h), and the memo of k per
 * job shape that the crux and harmonics policies share.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hm_prio.h"

#define K_MIN 0.1
#define K_MAX 10.0

/* A job's phase ends: compute -> burst -> compute (a job with nothing to send
 * goes straight back to compute). */
static inline void two_job_flip(int *comm, double *rem, double comp_s, double comm_s)
{
	*comm = !*comm;
	*rem = *comm ? comm_s : comp_s;
	if (*rem <= 0) {
		*comm = 0;
		*rem = comp_s;
	}
}

/*
 * After the warm-up the run is a map on (phases, remainders) alone, so it
 * comes back to an earlier state bit for bit; from there the events repeat,
 * and only the sums are left to add, in the same order. States are looked up
 * for this many events after the warm-up.
 */
#define TWO_CYCLE_MAX 16384

typedef struct {
	double r0, r1;
	int c0, c1;
} two_state_t;

/* One event: its step and what it adds to each job's busy time (dt or +0,
 * which leaves a non-negative sum as it was). */
typedef struct {
	double dt, d0, d1;
} two_ev_t;

typedef struct {
	two_ev_t *ev; /* every event since the warm-up */
	int nev, evcap;
	two_state_t *st; /* state where job 0 has just flipped */
	int *at;         /* its event index */
	int *slot;       /* hash of st: 1 + index into st, 0 empty; 2 * cap entries */
	int n, cap;
} two_cyc_t;

static bool two_same(const two_state_t *a, const two_state_t *b)
{
	return a->c0 == b->c0 && a->c1 == b->c1 && memcmp(&a->r0, &b->r0, sizeof(a->r0)) == 0 &&
	       memcmp(&a->r1, &b->r1, sizeof(a->r1)) == 0;
}

static size_t two_hash(const two_state_t *s, int cap)
{
	uint64_t x, y;

	memcpy(&x, &s->r0, sizeof(x));
	memcpy(&y, &s->r1, sizeof(y));
	x = (x ^ (y * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)(s->c0 * 2 + s->c1)) *
	    0xbf58476d1ce4e5b9ULL;
	return (size_t)(x ^ (x >> 31)) & (size_t)(2 * cap - 1);
}

/* Event index where state s was seen before, else s added at event nev: -1;
 * -2 when the search stops (too many states, no memory). */
static int two_seen(two_cyc_t *c, const two_state_t *s)
{
	size_t h;

	if (c->n == c->cap) {
		int nc = c->cap ? 2 * c->cap : 64;
		two_state_t *st =
		    nc <= TWO_CYCLE_MAX ? realloc(c->st, sizeof(*st) * (size_t)nc) : NULL;
		int *at = st ? realloc(c->at, sizeof(int) * (size_t)nc) : NULL;
		int *slot = at ? calloc(2 * (size_t)nc, sizeof(int)) : NULL;
		if (st)
			c->st = st;
		if (at)
			c->at = at;
		if (!slot)
			return -2;
		free(c->slot);
		c->slot = slot;
		c->cap = nc;
		for (int i = 0; i < c->n; i++) {
			for (h = two_hash(&c->st[i], nc); slot[h];
			     h = (h + 1) & (size_t)(2 * nc - 1))
				;
			slot[h] = i + 1;
		}
	}
	for (h = two_hash(s, c->cap); c->slot[h]; h = (h + 1) & (size_t)(2 * c->cap - 1))
		if (two_same(&c->st[c->slot[h] - 1], s))
			return c->at[c->slot[h] - 1];
	c->slot[h] = c->n + 1;
	c->at[c->n] = c->nev;
	c->st[c->n++] = *s;
	return -1;
}

/* Room for one more event; false when the search stops. */
static bool two_room(two_cyc_t *c)
{
	if (c->nev == c->evcap) {
		int nc = c->evcap ? 2 * c->evcap : 1024;
		two_ev_t *ev = nc <= 400000 ? realloc(c->ev, sizeof(*ev) * (size_t)nc) : NULL;
		if (!ev)
			return false;
		c->ev = ev;
		c->evcap = nc;
	}
	return true;
}

/* Both sending: only the first has the link; otherwise both progress. */
static inline bool two_moves0(int c0, int c1, int first)
{
	return !(c0 && c1 && first == 1);
}

static inline bool two_moves1(int c0, int c1, int first)
{
	return !(c0 && c1 && first == 0);
}

/* The event's step: the nearer end of a moving job's phase. */
static inline double two_dt(double r0, double r1, int c0, int c1, int first)
{
	double dt = INFINITY;

	if (two_moves0(c0, c1, first))
		dt = dt < r0 ? dt : r0;
	if (two_moves1(c0, c1, first))
		dt = dt < r1 ? dt : r1;
	return dt;
}

/* Phases that ended flip; true when job 0's did. */
static inline bool two_flips(double *r0, double *r1, int *c0, int *c1, const double comp_s[2],
			     const double comm_s[2], double done)
{
	bool f0 = *r0 <= done;

	if (f0)
		two_job_flip(c0, r0, comp_s[0], comm_s[0]);
	if (*r1 <= done)
		two_job_flip(c1, r1, comp_s[1], comm_s[1]);
	return f0;
}

void hm_prio_two_job_util(const double comp_s[2], const double comm_s[2], int first, double util[2])
{
	/*
	 * Fluid, preemptive strict priority on one link; warm up, then measure.
	 * Two jobs written out (no arrays, no fmin call: x < y ? x : y is what
	 * fmin gives on numbers), the warm-up and the measured part apart: the
	 * same steps and sums, a third of the instructions.
	 */
	double r0 = comp_s[0], r1 = comp_s[1], b0 = 0, b1 = 0, t = 0;
	int c0 = 0, c1 = 0, from = -1;
	double Tmax = fmax(comp_s[0] + comm_s[0], comp_s[1] + comm_s[1]);
	double warm = 10 * Tmax, end = warm + 100 * Tmax, done = 1e-12 * (1 + Tmax);
	long ev = 0;
	two_cyc_t cyc = {0};
	bool search = true, flipped0 = false, stop = false;

	while (t < warm && t < end && ev < 200000) {
		double dt = two_dt(r0, r1, c0, c1, first);
		if (!isfinite(dt)) {
			stop = true;
			break;
		}
		if (t + dt > warm)
			dt = warm - t;
		if (two_moves0(c0, c1, first))
			r0 -= dt;
		if (two_moves1(c0, c1, first))
			r1 -= dt;
		t += dt;
		flipped0 = two_flips(&r0, &r1, &c0, &c1, comp_s, comm_s, done);
		ev++;
	}
	/* The measured part runs about ten times the warm-up's events. */
	if (!stop && ev > 0) {
		cyc.evcap = ev < 20000 ? (int)(11 * ev + 64) : 220000;
		cyc.ev = malloc(sizeof(*cyc.ev) * (size_t)cyc.evcap);
		search = cyc.ev != NULL;
		if (!search)
			cyc.evcap = 0;
	}
	while (!stop && t < end && ev < 200000) {
		double dt;

		if (search && flipped0) {
			two_state_t now = {.r0 = r0, .r1 = r1, .c0 = c0, .c1 = c1};
			from = two_seen(&cyc, &now);
			if (from >= 0)
				break; /* events from[..nev) repeat from here */
			search = from == -1;
		}
		dt = two_dt(r0, r1, c0, c1, first);
		if (!isfinite(dt))
			break;
		if (two_moves0(c0, c1, first))
			r0 -= dt;
		if (two_moves1(c0, c1, first))
			r1 -= dt;
		if (!c0)
			b0 += dt;
		if (!c1)
			b1 += dt;
		if (search && (search = two_room(&cyc)))
			cyc.ev[cyc.nev++] = (two_ev_t){dt, c0 ? 0.0 : dt, c1 ? 0.0 : dt};
		t += dt;
		flipped0 = two_flips(&r0, &r1, &c0, &c1, comp_s, comm_s, done);
		ev++;
	}
	for (int k = from; from >= 0 && t < end && ev < 200000;
	     k = k + 1 == cyc.nev ? from : k + 1) {
		b0 += cyc.ev[k].d0;
		b1 += cyc.ev[k].d1;
		t += cyc.ev[k].dt;
		ev++;
	}
	free(cyc.ev);
	free(cyc.st);
	free(cyc.at);
	free(cyc.slot);
	util[0] = t > warm ? b0 / (t - warm) : 0;
	util[1] = t > warm ? b1 / (t - warm) : 0;
}

double hm_prio_k(double comp_ref_s, double comm_ref_s, int gpus_ref, double comp_j_s,
		 double comm_j_s, int gpus_j)
{
	double comp[2] = {comp_ref_s, comp_j_s}, comm[2] = {comm_ref_s, comm_j_s};
	double u_ref_first[2], u_j_first[2], alone[2], loss_j, loss_ref, k;

	if (comp_ref_s + comm_ref_s <= 0 || comp_j_s + comm_j_s <= 0)
		return 1.0;
	for (int i = 0; i < 2; i++)
		alone[i] = comp[i] / (comp[i] + comm[i]);
	hm_prio_two_job_util(comp, comm, 0, u_ref_first);
	hm_prio_two_job_util(comp, comm, 1, u_j_first);
	loss_j = gpus_j * (alone[1] - u_ref_first[1]);
	loss_ref = gpus_ref * (alone[0] - u_j_first[0]);
	if (loss_ref <= 1e-9)
		return loss_j <= 1e-9 ? 1.0 : K_MAX;
	k = loss_j / loss_ref;
	return k < K_MIN ? K_MIN : k > K_MAX ? K_MAX : k;
}

typedef struct {
	double comp_s, comm_s, k;
	int gpus; /* 0: empty slot */
} kslot_t;

struct hm_prio_kmemo {
	size_t cap;  /* power of 2 */
	size_t used; /* at most cap / 2: probes stay short and always end */
	kslot_t *slot;
};

hm_prio_kmemo_t *hm_prio_kmemo_new(int njobs)
{
	hm_prio_kmemo_t *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cap = 16;
	while (m->cap < 2 * (size_t)(njobs > 0 ? njobs : 1))
		m->cap *= 2;
	m->slot = calloc(m->cap, sizeof(*m->slot));
	if (!m->slot) {
		free(m);
		return NULL;
	}
	return m;
}

void hm_prio_kmemo_free(hm_prio_kmemo_t *m)
{
	if (m)
		free(m->slot);
	free(m);
}

double hm_prio_kmemo_k(hm_prio_kmemo_t *m, double comp_ref_s, double comm_ref_s, int gpus_ref,
		       double comp_j_s, double comm_j_s, int gpus_j)
{
	uint64_t h = 1469598103934665603ULL, b;
	size_t i;

	if (!m || gpus_j <= 0)
		return hm_prio_k(comp_ref_s, comm_ref_s, gpus_ref, comp_j_s, comm_j_s, gpus_j);
	memcpy(&b, &comp_j_s, sizeof(b));
	h = (h ^ b) * 1099511628211ULL;
	memcpy(&b, &comm_j_s, sizeof(b));
	h = (h ^ b) * 1099511628211ULL;
	h = (h ^ (uint64_t)gpus_j) * 1099511628211ULL;
	for (i = (size_t)(h ^ (h >> 29)) & (m->cap - 1); m->slot[i].gpus;
	     i = (i + 1) & (m->cap - 1))
		if (m->slot[i].gpus == gpus_j && m->slot[i].comp_s == comp_j_s &&
		    m->slot[i].comm_s == comm_j_s)
			return m->slot[i].k;
	if (2 * (m->used + 1) > m->cap) /* more shapes than sized for: not stored */
		return hm_prio_k(comp_ref_s, comm_ref_s, gpus_ref, comp_j_s, comm_j_s, gpus_j);
	m->used++;
	m->slot[i].gpus = gpus_j;
	m->slot[i].comp_s = comp_j_s;
	m->slot[i].comm_s = comm_j_s;
	m->slot[i].k = hm_prio_k(comp_ref_s, comm_ref_s, gpus_ref, comp_j_s, comm_j_s, gpus_j);
	return m->slot[i].k;
}
