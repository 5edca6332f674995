/*
 * bench_sim: speed of the flow-level simulator (prints numbers, no pass/fail).
 *
 * Headline (issue 2, item 10): 1 hour of a 1,024-GPU cluster (16 racks x 8
 * hosts x 8 GPUs, 100 Gbit/s NICs, oversubscription 2) with 200 concurrent
 * jobs under fair sharing. Then how the cost grows with jobs (50..400 on a
 * 32-rack cluster) and with links (8, 16, 32 racks, 200 jobs).
 *
 * Workload: all jobs start at t=0 and run past the horizon. Sizes follow a
 * fixed mix (1-32 GPUs; 45% of the jobs span 2-8 hosts) scaled by racks / 16,
 * placed on hosts in a seeded shuffled order (a fragmented cluster: multi-host
 * jobs cross racks), compute 0.1-0.6 s, buffers 0.1-2 GB, 5% jitter.
 *
 * Usage: bench_sim [--quick] [--seed N] [--check]
 *                  [--only packed|mixed|scattered [--horizon S]]
 *   --quick: 120 s horizons everywhere; --only: just that headline run (profiling),
 *   simulating S seconds (default: the headline's horizon); --check: every
 *   incremental max-min re-solve checked against a full solve (slow; a
 *   difference beyond 1e-9 relative fails the run).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hm_clock.h"
#include "hm_rng.h"
#include "hm_sim.h"

typedef struct {
	int gpus, hosts, count;
} mix_t;

/* 200 jobs, 1,024 GPUs at scale 1. */
static const mix_t MIX[] = {{1, 1, 60}, {2, 1, 30}, {4, 1, 20},  {4, 2, 30},
			    {8, 2, 24}, {8, 4, 20}, {16, 4, 10}, {32, 8, 6}};
#define NMIX (sizeof(MIX) / sizeof(MIX[0]))

static uint64_t rng_state;
static bool g_check; /* --check */
static int g_xrack;  /* multi-host jobs of the last workload spanning racks */

static double urand(void)
{
	return hm_rng_unit(&rng_state);
}

static void free_workload(hm_workload_t *w)
{
	for (int i = 0; w->jobs && i < w->njobs; i++)
		free(w->jobs[i].nodes);
	free(w->jobs);
	w->jobs = NULL;
}

/* njobs jobs drawn cyclically from the mix (sizes x scale), scattered over hosts. */
static int make_workload(const hm_topo_t *t, int njobs, double scale, unsigned long seed, int mode,
			 hm_workload_t *w)
{
	int *order = malloc((size_t)t->nhosts * sizeof(int));
	int *fr = malloc((size_t)t->nhosts * sizeof(int));
	int placed = 0;

	w->njobs = njobs;
	w->jobs = calloc((size_t)njobs, sizeof(hm_job_t));
	if (!order || !fr || !w->jobs) {
		free(order);
		free(fr);
		return -1;
	}
	rng_state = seed;
	g_xrack = 0;
	for (int h = 0; h < t->nhosts; h++) {
		order[h] = h;
		fr[h] = t->hosts[h].gpus;
	}
	/*
	 * Hosts are generated rack by rack. Packed: hosts shuffled inside each rack,
	 * a job starts at a rack and spills over to the next only when full.
	 * Scattered: a job takes hosts in one cluster-wide shuffled order (a
	 * fragmented cluster). Mixed: 3 jobs in 10 scattered, the rest packed.
	 */
	int *order2 = malloc((size_t)t->nhosts * sizeof(int));
	if (!order2) {
		free(order);
		free(fr);
		return -1;
	}
	int per_rack = t->nracks > 0 ? t->nhosts / t->nracks : t->nhosts;
	for (int h = t->nhosts - 1; h > 0; h--) {
		int base = h / per_rack * per_rack;
		if (h == base)
			continue;
		int k = base + (int)(urand() * (h - base + 1)), x = order[h];
		order[h] = order[k];
		order[k] = x;
	}
	for (int h = 0; h < t->nhosts; h++)
		order2[h] = h;
	for (int h = t->nhosts - 1; h > 0; h--) {
		int k = (int)(urand() * (h + 1)), x = order2[h];
		order2[h] = order2[k];
		order2[k] = x;
	}
	/* Largest first so that the scatter fits; the mix cycles to reach njobs. */
	int total = 0;
	for (size_t m = 0; m < NMIX; m++)
		total += MIX[m].count;
	for (int i = 0; i < njobs; i++) {
		int r = (i * total / njobs) % total, m = 0;
		for (int acc = 0; m < (int)NMIX; m++) {
			acc += MIX[NMIX - 1 - m].count;
			if (r < acc)
				break;
		}
		const mix_t *mx = &MIX[NMIX - 1 - (m < (int)NMIX ? m : (int)NMIX - 1)];
		hm_job_t *j = &w->jobs[i];
		int per = (int)lround(mx->gpus / mx->hosts * scale);
		int nh = mx->hosts;
		if (per < 1) {
			per = 1;
			nh = (int)lround(mx->gpus * scale) > 1 ? (int)lround(mx->gpus * scale) : 1;
			if (nh > mx->hosts)
				nh = mx->hosts;
		}
		j->id = i;
		snprintf(j->name, sizeof(j->name), "b%d", i);
		j->gpus = per * nh;
		snprintf(j->profile.model, sizeof(j->profile.model), "custom");
		j->profile.compute_s = 0.1 + 0.5 * urand();
		j->profile.nphases = 1;
		j->profile.phases[0].coll = HM_COLL_ALLREDUCE_RING;
		j->profile.phases[0].bytes = 1e8 + 1.9e9 * urand();
		j->iterations = 1e9; /* runs past the horizon */
		/* Scatter: the first hosts in the shuffled order with room. */
		char buf[4096];
		size_t len = 0;
		int got = 0;
		bool scatter = mode == 2 || (mode == 1 && i % 10 < 3);
		const int *ord = scatter ? order2 : order;
		int off = scatter ? i * 7 : (i * 5 % (t->nracks > 0 ? t->nracks : 1)) * per_rack;
		for (int k = 0; k < t->nhosts && got < nh; k++) {
			int h = ord[(k + off) % t->nhosts];
			if (fr[h] < per)
				continue;
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
						got ? "," : "", t->hosts[h].name);
			if (len >= sizeof(buf))
				break;
			got++;
		}
		if (got == nh && len < sizeof(buf)) {
			int r0 = -1;
			bool xr = false;
			for (int k = 0, g = 0; k < t->nhosts && g < nh; k++) {
				int h = ord[(k + off) % t->nhosts];
				if (fr[h] >= per) {
					fr[h] -= per;
					g++;
					xr |= r0 >= 0 && t->hosts[h].rack != r0;
					r0 = t->hosts[h].rack;
				}
			}
			g_xrack += xr;
			j->nodes = strdup(buf);
			placed++;
		} /* else: default placement, queued until GPUs free up */
	}
	free(order);
	free(order2);
	free(fr);
	return placed;
}

typedef struct {
	uint64_t events;
	double wall_s, sim_s;
	int running, multi, links, xrack;
	double cpu_s;
} point_t;

static int run_point(int racks, int njobs, double scale, double horizon_s, unsigned long seed,
		     int mode, point_t *pt)
{
	hm_topo_gen_t g = {0};
	hm_topo_t *t = NULL;
	hm_workload_t w = {0};
	hm_sim_opts_t o;
	hm_policy_cfg_t cfg;
	hm_sim_result_t r;
	hm_err_t err = {0};
	int rc = 1;

	g.racks = racks;
	g.hosts_per_rack = 8;
	g.gpus_per_host = 8;
	g.nic_bps = 100e9;
	g.oversubscription = 2;
	if (hm_topo_generate(&g, &t, &err) != HM_OK) {
		fprintf(stderr, "bench_sim: topology: %s\n", err.msg);
		return 1;
	}
	if (make_workload(t, njobs, scale, seed, mode, &w) < 0) {
		fprintf(stderr, "bench_sim: out of memory\n");
		goto out;
	}
	pt->multi = 0;
	pt->links = t->nlinks;
	for (int i = 0; i < w.njobs; i++)
		pt->multi += w.jobs[i].nodes && strchr(w.jobs[i].nodes, ',') != NULL;
	hm_sim_opts_defaults(&o);
	o.seed = seed;
	o.jitter_cv = 0.05;
	o.horizon_s = horizon_s;
	o.check_maxmin = g_check;
	hm_policy_cfg_defaults(&cfg);
	pt->xrack = g_xrack;
	double c0 = hm_clock_s(CLOCK_PROCESS_CPUTIME_ID);
	hm_rc_t src = hm_sim_run(t, &w, &hm_policy_fair, &cfg, &o, &r, &err);
	pt->cpu_s = hm_clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (src != HM_OK) {
		fprintf(stderr, "bench_sim: %s\n", err.msg);
		goto out;
	}
	pt->events = r.events;
	pt->wall_s = r.sim_wall_s;
	pt->sim_s = horizon_s;
	pt->running = 0;
	for (int i = 0; i < r.njobs; i++)
		pt->running += r.jobs[i].placed;
	hm_sim_result_free(&r);
	rc = 0;
out:
	free_workload(&w);
	hm_topo_free(t);
	return rc;
}

static void print_point(const char *label, int racks, int njobs, const point_t *p)
{
	printf(
	    "%-9s racks=%-3d gpus=%-5d links=%-4d jobs=%-4d running=%-4d multi-host=%-3d "
	    "cross-rack=%-3d sim=%4.0fs events=%-8llu cpu=%6.2fs wall=%6.2fs events/cpu-s=%.3g\n",
	    label, racks, racks * 64, p->links, njobs, p->running, p->multi, p->xrack, p->sim_s,
	    (unsigned long long)p->events, p->cpu_s, p->wall_s,
	    p->cpu_s > 0 ? p->events / p->cpu_s : 0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	bool quick = false;
	unsigned long seed = 1;
	int only = -1;
	double only_s = 0;
	point_t p;
	static const char *const names[3] = {"packed", "mixed", "scattered"};

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			quick = true;
		} else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
			char *end;
			seed = strtoul(argv[++i], &end, 10);
			if (*end) {
				fprintf(stderr, "bench_sim: bad --seed '%s' (accepted: integer)\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--check") == 0) {
			g_check = true;
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			i++;
			for (int m = 0; m < 3; m++)
				if (strcmp(argv[i], names[m]) == 0)
					only = m;
			if (only < 0) {
				fprintf(stderr,
					"bench_sim: bad --only '%s' (accepted: packed, mixed, "
					"scattered)\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--horizon") == 0 && i + 1 < argc) {
			char *end;
			only_s = strtod(argv[++i], &end);
			if (*end || !(only_s > 0) || only_s > 1e6) {
				fprintf(stderr,
					"bench_sim: bad --horizon '%s' (accepted: seconds, 0 < S "
					"<= 1e6)\n",
					argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: bench_sim [--quick] [--seed N] [--check] [--only "
					"packed|mixed|scattered [--horizon S]]\n");
			return 2;
		}
	}
	double sweep_s = quick ? 120 : 600, head_s = quick ? 120 : 3600;
	if (only >= 0) {
		double h = only_s > 0 ? only_s : head_s;
		if (run_point(16, 200, 1, h, seed, only, &p))
			return 1;
		print_point(names[only], 16, 200, &p);
		return 0;
	}
	if (only_s > 0) {
		fprintf(stderr, "bench_sim: --horizon needs --only\n");
		return 2;
	}
	printf("# headline: 16 racks x 8 hosts x 8 GPUs, oversubscription 2, 200 jobs, fair, "
	       "%g s simulated, one core (cpu = process CPU time; wall depends on machine load)\n",
	       head_s);
	for (int m = 0; m < 3; m++) {
		if (run_point(16, 200, 1, head_s, seed, m, &p))
			return 1;
		print_point(names[m], 16, 200, &p);
	}
	printf("# growth with jobs (32 racks, sizes as at 1,024 GPUs, %g s simulated)\n", sweep_s);
	for (int n = 50; n <= 400; n *= 2)
		for (int m = 0; m < 3; m += 2) {
			if (run_point(32, n, 1, sweep_s, seed, m, &p))
				return 1;
			print_point(names[m], 32, n, &p);
		}
	printf("# growth with links (200 jobs, sizes scaled by racks/16, %g s simulated)\n",
	       sweep_s);
	for (int r = 8; r <= 32; r *= 2)
		for (int m = 0; m < 3; m += 2) {
			if (run_point(r, 200, r / 16.0, sweep_s, seed, m, &p))
				return 1;
			print_point(names[m], r, 200, &p);
		}
	return 0;
}
