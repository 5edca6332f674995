/*
 * Unit tests for the flow-level simulator on hand-computable cases.
 *
 * Topology for most cases: 2 racks x 2 hosts x 1 GPU, 100 Gbit/s NICs, one
 * spine, oversubscription 2, so each ToR uplink has 2 * 100 / 2 = 100 Gbit/s.
 * Job A runs on host 1 of each rack, job B on host 2 of each rack: their
 * 2-rank rings cross the same ToR uplinks (one flow per job per direction).
 * A 2-rank ring all-reduce sends 2(N-1)/N = 1 x the buffer per rank, so with
 * bytes = 1.25e9 the burst alone takes M = 1.25e9 * 8 / 100e9 = 0.1 s.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_sim.h"

#define C_S   0.3
#define M_S   0.1
#define BYTES 1.25e9

static hm_topo_t *make_topo(void)
{
	hm_topo_gen_t g = {0};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	g.racks = 2;
	g.hosts_per_rack = 2;
	g.gpus_per_host = 1;
	g.nic_bps = 100e9;
	g.oversubscription = 2;
	assert_int_equal(hm_topo_generate(&g, &t, &err), HM_OK);
	assert_int_equal(t->nhosts, 4);
	return t;
}

/* A job of `gpus` GPUs on the given hosts (NULL = default placement). */
static void set_job(hm_job_t *j, int id, const hm_topo_t *t, int h1, int h2, double iters)
{
	memset(j, 0, sizeof(*j));
	j->id = id;
	snprintf(j->name, sizeof(j->name), "job%d", id);
	j->gpus = h1 >= 0 ? 2 : 1;
	snprintf(j->profile.model, sizeof(j->profile.model), "custom");
	j->profile.compute_s = C_S;
	j->profile.nphases = 1;
	j->profile.phases[0].coll = HM_COLL_ALLREDUCE_RING;
	j->profile.phases[0].bytes = BYTES;
	j->iterations = iters;
	if (h1 >= 0) {
		size_t n = strlen(t->hosts[h1].name) + strlen(t->hosts[h2].name) + 2;
		j->nodes = malloc(n);
		assert_non_null(j->nodes);
		snprintf(j->nodes, n, "%s,%s", t->hosts[h1].name, t->hosts[h2].name);
	}
}

static void free_jobs(hm_job_t *jobs, int n)
{
	for (int i = 0; i < n; i++)
		free(jobs[i].nodes);
}

static hm_sim_result_t run(const hm_topo_t *t, hm_job_t *jobs, int n, const hm_policy_ops_t *pol,
			   double jitter, unsigned long seed)
{
	hm_workload_t w = {n, jobs};
	hm_sim_opts_t o;
	hm_policy_cfg_t cfg;
	hm_sim_result_t r;
	hm_err_t err = {0};

	hm_sim_opts_defaults(&o);
	o.jitter_cv = jitter;
	o.seed = seed;
	o.sample_s = 0.05;
	hm_policy_cfg_defaults(&cfg);
	hm_rc_t rc = hm_sim_run(t, &w, pol, &cfg, &o, &r, &err);
	if (rc != HM_OK)
		fprintf(stderr, "hm_sim_run: %s\n", err.msg);
	assert_int_equal(rc, HM_OK);
	return r;
}

/* One job alone: every iteration is exactly C + M, its contention-free time. */
static void test_alone(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[1];

	set_job(&j[0], 0, t, 0, 2, 50);
	hm_sim_result_t r = run(t, j, 1, &hm_policy_fair, 0, 1);
	assert_int_equal(r.completed, 1);
	assert_float_equal(r.jobs[0].alone_iter_s, C_S + M_S, 1e-9);
	assert_float_equal(r.jobs[0].mean_iter_s, C_S + M_S, 1e-9);
	assert_float_equal(r.jobs[0].p99_iter_s, C_S + M_S, 1e-9);
	assert_float_equal(r.jobs[0].mean_comm_s, M_S, 1e-9);
	assert_float_equal(r.jobs[0].slowdown, 1, 1e-9);
	assert_float_equal(r.jobs[0].jct_s, 50 * (C_S + M_S), 1e-6);
	assert_float_equal(r.jobs[0].gpu_util, C_S / (C_S + M_S), 1e-9);
	/* Utilisation samples: the busiest link is either idle or full. */
	assert_true(r.nt > 10);
	for (int i = 0; i < r.nt; i++)
		assert_true(r.util_busiest[i] < 1e-9 || r.util_busiest[i] > 1 - 1e-9);
	hm_sim_result_free(&r);
	free_jobs(j, 1);
	hm_topo_free(t);
}

/*
 * Closed form: two identical jobs started together sharing one uplink, with
 * compute C and communication M alone. Their bursts overlap fully forever, each
 * gets half the uplink, so every burst takes 2M: iteration time C + 2M.
 */
static void test_two_jobs_fair(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[2];

	set_job(&j[0], 0, t, 0, 2, 40);
	set_job(&j[1], 1, t, 1, 3, 40);
	hm_sim_result_t r = run(t, j, 2, &hm_policy_fair, 0, 1);
	assert_int_equal(r.completed, 2);
	for (int i = 0; i < 2; i++) {
		assert_float_equal(r.jobs[i].mean_iter_s, C_S + 2 * M_S, 1e-9);
		assert_float_equal(r.jobs[i].mean_comm_s, 2 * M_S, 1e-9);
		assert_float_equal(r.jobs[i].slowdown, (C_S + 2 * M_S) / (C_S + M_S), 1e-9);
	}
	assert_float_equal(r.mean_iter_s, C_S + 2 * M_S, 1e-9);
	/* During the bursts the shared uplink is full. */
	double best = 0;
	for (int i = 0; i < r.nt; i++)
		best = r.util_busiest[i] > best ? r.util_busiest[i] : best;
	assert_float_equal(best, 1, 1e-9);
	hm_sim_result_free(&r);
	free_jobs(j, 2);
	hm_topo_free(t);
}

/* Test policies: fixed decisions for jobs by workload id. */
static hm_decision_t g_dec[16];

static hm_rc_t fixed_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	(void)st;
	(void)err;
	for (int i = 0; i < ctx->njobs; i++)
		ctx->jobs[i].dec = g_dec[ctx->jobs[i].id];
	return HM_OK;
}

static const hm_policy_ops_t fixed = {.name = "fixed", .decide = fixed_decide};

/*
 * Strict priority: A in class 0, B in class 1, started together. A never
 * shares: its iteration is exactly C + M. B's first burst waits for A's:
 * it ends at C + 2M.
 */
static void test_priority(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[2];

	memset(g_dec, 0, sizeof(g_dec));
	g_dec[1].prio = 1;
	set_job(&j[0], 0, t, 0, 2, 30);
	set_job(&j[1], 1, t, 1, 3, 1);
	hm_sim_result_t r = run(t, j, 2, &fixed, 0, 1);
	assert_int_equal(r.completed, 2);
	assert_float_equal(r.jobs[0].mean_iter_s, C_S + M_S, 1e-9);
	assert_float_equal(r.jobs[1].mean_iter_s, C_S + 2 * M_S, 1e-9);
	assert_int_equal(r.decisions, 3); /* two arrivals, one departure */
	hm_sim_result_free(&r);
	free_jobs(j, 2);
	hm_topo_free(t);
}

/*
 * Slot holding (skip to the next slot): one job, period P = 0.5, shift 0,
 * guard 0, origin 0. The first burst is ready at C = 0.3 and waits for 0.5;
 * it ends at 0.6 and the next one is ready at 0.9, waits for 1.0, and so on:
 * the first iteration takes 0.6 and every later one exactly P.
 * Mean over n: (0.6 + 0.5 (n - 1)) / n.
 */
static void test_slot_holding(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[1];
	int n = 20;

	memset(g_dec, 0, sizeof(g_dec));
	g_dec[0].period_s = 0.5;
	set_job(&j[0], 0, t, 0, 2, n);
	hm_sim_result_t r = run(t, j, 1, &fixed, 0, 1);
	assert_float_equal(r.jobs[0].mean_iter_s, (0.6 + 0.5 * (n - 1)) / n, 1e-9);
	assert_float_equal(r.jobs[0].jct_s, 0.6 + 0.5 * (n - 1), 1e-9);
	/* Period C + M and a guard of 0.35 s: every burst is ready 0.3 s after its
	 * slot start, within the guard, so it never waits: each iteration is C + M. */
	g_dec[0].period_s = C_S + M_S;
	g_dec[0].guard_s = 0.35;
	hm_sim_result_free(&r);
	r = run(t, j, 1, &fixed, 0, 1);
	assert_float_equal(r.jobs[0].mean_iter_s, C_S + M_S, 1e-9);
	hm_sim_result_free(&r);
	free_jobs(j, 1);
	hm_topo_free(t);
}

/* One-time shift (period 0): the first iteration starts shift_s late, once. */
static void test_one_time_shift(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[1];

	memset(g_dec, 0, sizeof(g_dec));
	g_dec[0].shift_s = 0.25;
	set_job(&j[0], 0, t, 0, 2, 10);
	hm_sim_result_t r = run(t, j, 1, &fixed, 0, 1);
	assert_float_equal(r.jobs[0].jct_s, 0.25 + 10 * (C_S + M_S), 1e-9);
	assert_float_equal(r.jobs[0].mean_iter_s, C_S + M_S, 1e-9);
	hm_sim_result_free(&r);
	free_jobs(j, 1);
	hm_topo_free(t);
}

/* Job 0's decision: g_dec[0] alone, g_next once job 1 runs too (job 1: g_dec[1]). */
static hm_decision_t g_next;

static hm_rc_t switch_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	(void)st;
	(void)err;
	for (int i = 0; i < ctx->njobs; i++)
		ctx->jobs[i].dec =
		    ctx->jobs[i].id == 0 && ctx->njobs > 1 ? g_next : g_dec[ctx->jobs[i].id];
	return HM_OK;
}

static const hm_policy_ops_t switcher = {.name = "switch", .decide = switch_decide};

/* Job 0's JCT (10 iterations on hosts 0 and 2) when job 1 (1 GPU, no network,
 * longer) arrives at 1.0 s and changes job 0's decision, with an update lead. */
static double lead_jct(const hm_topo_t *t, double lead_s)
{
	hm_job_t j[2];
	hm_workload_t w = {2, j};
	hm_sim_opts_t o;
	hm_sim_result_t r;
	hm_err_t err = {0};
	double jct;

	set_job(&j[0], 0, t, 0, 2, 10);
	set_job(&j[1], 1, t, -1, -1, 30);
	j[1].arrival_s = 1.0;
	hm_sim_opts_defaults(&o);
	o.update_lead_s = lead_s;
	assert_int_equal(hm_sim_run(t, &w, &switcher, NULL, &o, &r, &err), HM_OK);
	assert_int_equal(r.completed, 2);
	jct = r.jobs[0].jct_s;
	hm_sim_result_free(&r);
	free_jobs(j, 2);
	return jct;
}

/*
 * The live loop's update lead: a changed decision reaches a running job at
 * T = decided + lead (docs/pacing.md, contract C).
 * 1. Free -> slots of P = 0.5 (shift 0), decided at 1.0. Lead 0: iteration 2
 *    (ready 1.1) waits for 1.5, every later one takes P: 0.8 + 0.8 + 7 x 0.5 =
 *    5.1. Lead 0.6 (T = 1.6): iterations 2 and 3 still run free (0.4 each), the
 *    burst of iteration 4 (ready 1.9) takes slot 2.0: 1.6 + 6 x 0.5 = 4.6.
 * 2. Slots shift 0 -> shift 0.4, decided at 1.0, lead 0.45 (T = 1.45).
 *    Iterations 0-1 end at 0.6 and 1.1; iteration 2 is ready at 1.4 < T, but
 *    its slot 1.5 is after T: it takes the new grid's first slot at or after T,
 *    1.9 (not 1.5), ends at 2.0; then one per period: 2.0 + 7 x 0.5 = 5.5.
 *    Lead 0: the new grid at once, iteration 2 takes 1.4 (ready then), ends
 *    1.5: 1.5 + 7 x 0.5 = 5.0.
 */
static void test_update_lead(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();

	memset(g_dec, 0, sizeof(g_dec));
	memset(&g_next, 0, sizeof(g_next));
	g_next.period_s = 0.5;
	g_next.epoch = 1;
	assert_float_equal(lead_jct(t, 0), 5.1, 1e-9);
	assert_float_equal(lead_jct(t, 0.6), 4.6, 1e-9);
	g_dec[0].period_s = 0.5;
	g_next.shift_s = 0.4;
	assert_float_equal(lead_jct(t, 0.45), 5.5, 1e-9);
	assert_float_equal(lead_jct(t, 0), 5.0, 1e-9);
	hm_topo_free(t);
}

/*
 * Queueing and unplaceable jobs: two 4-GPU jobs on the 4-GPU cluster run one
 * after the other (the second's JCT includes its wait: 2x the first's); a
 * 5-GPU job can never fit and is reported, not dropped.
 */
static void test_queue_and_unplaced(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[3];

	for (int i = 0; i < 3; i++) {
		set_job(&j[i], i, t, -1, -1, 10);
		j[i].gpus = i == 1 ? 5 : 4;
	}
	hm_sim_result_t r = run(t, j, 3, &hm_policy_fair, 0, 1);
	assert_int_equal(r.completed, 2);
	assert_int_equal(r.unplaced, 1);
	assert_false(r.jobs[1].placed);
	assert_non_null(strstr(r.jobs[1].note, "5"));
	assert_true(r.jobs[0].completed && r.jobs[2].completed);
	assert_float_equal(r.jobs[2].start_s, r.jobs[0].end_s, 1e-12);
	assert_float_equal(r.jobs[2].jct_s, 2 * r.jobs[0].jct_s, 1e-9);
	hm_sim_result_free(&r);
	free_jobs(j, 3);
	hm_topo_free(t);
}

/* Recording policy: placement candidates, chosen host, epochs and measurements. */
static int g_ncands, g_cand_rack1, g_host, g_epochs;
static double g_meas_iter, g_meas_compute, g_meas_comm;

static int rec_place(void *st, hm_sched_ctx_t *ctx, const hm_placement_t *cands,
		     const hm_traffic_t *tr, int n)
{
	(void)st;
	(void)tr;
	assert_true(ctx->event_job >= 0 && ctx->event_job < ctx->njobs);
	assert_ptr_equal(ctx->jobs[ctx->event_job].placement, &cands[0]);
	g_ncands = n;
	g_cand_rack1 = -1;
	for (int i = 0; i < n; i++)
		if (ctx->topo->hosts[cands[i].slots[0].host].rack == 1)
			g_cand_rack1 = i;
	return g_cand_rack1 >= 0 ? g_cand_rack1 : 0;
}

static hm_rc_t rec_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	(void)st;
	(void)err;
	if (ctx->event == HM_EV_ARRIVAL && ctx->jobs[ctx->event_job].id == 0)
		g_host = ctx->jobs[ctx->event_job].placement->slots[0].host;
	if (ctx->event == HM_EV_EPOCH) {
		g_epochs++;
		g_meas_iter = ctx->jobs[0].meas_iter_s;
		g_meas_compute = ctx->jobs[0].meas_compute_s;
		g_meas_comm = ctx->jobs[0].meas_comm_s;
	}
	return HM_OK;
}

static const hm_policy_ops_t recorder = {
    .name = "rec", .decide = rec_decide, .place = rec_place, .uses_epochs = true};

/*
 * place() gets the default placement first plus rack-rotated alternatives; the
 * choice is honoured. Epochs every 1 s over a 10.2 s horizon: 10 epoch calls,
 * measuring a lone 2-host job at exactly C + M, C and M.
 */
static void test_place_and_epochs(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[2];
	hm_workload_t w = {2, j};
	hm_sim_opts_t o;
	hm_policy_cfg_t cfg;
	hm_sim_result_t r;
	hm_err_t err = {0};

	set_job(&j[0], 0, t, -1, -1, 1e6); /* 1 GPU: default host 0 in rack 0 */
	set_job(&j[1], 1, t, 1, 3, 1e6);
	j[1].arrival_s = 0.5;
	hm_sim_opts_defaults(&o);
	o.horizon_s = 10.2;
	hm_policy_cfg_defaults(&cfg);
	cfg.epoch_s = 1;
	g_epochs = 0;
	assert_int_equal(hm_sim_run(t, &w, &recorder, &cfg, &o, &r, &err), HM_OK);
	assert_true(g_ncands >= 2);
	assert_int_equal(t->hosts[g_host].rack, 1);
	assert_int_equal(g_epochs, 10);
	assert_int_equal(r.decisions, 12); /* two arrivals + ten epochs */
	/* The epoch context lists jobs in start order: job 0 is the 1-GPU job (no
	 * network), job 1 the 2-host ring. Job 0 measures C per iteration. */
	assert_float_equal(g_meas_iter, C_S, 1e-9);
	assert_float_equal(g_meas_compute, C_S, 1e-9);
	assert_float_equal(g_meas_comm, 0, 1e-12);
	hm_sim_result_free(&r);
	free_jobs(j, 2);
	hm_topo_free(t);
}

/* A job whose iterations take no time (no compute, traffic inside one host) is
 * reported instead of looping forever at one instant. */
static void test_zero_length_iterations(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[1];

	set_job(&j[0], 0, t, -1, -1, 1e9);
	j[0].profile.compute_s = 0;
	hm_sim_result_t r = run(t, j, 1, &hm_policy_fair, 0, 1);
	assert_int_equal(r.unplaced, 1);
	assert_false(r.jobs[0].placed);
	assert_non_null(strstr(r.jobs[0].note, "iteration time 0"));
	hm_sim_result_free(&r);
	hm_topo_free(t);
}

/* Jitter: same seed, same result; another seed differs; horizon stops the run. */
static void test_jitter_and_horizon(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[2];

	set_job(&j[0], 0, t, 0, 2, 200);
	set_job(&j[1], 1, t, 1, 3, 200);
	hm_sim_result_t a = run(t, j, 2, &hm_policy_fair, 0.2, 7);
	hm_sim_result_t b = run(t, j, 2, &hm_policy_fair, 0.2, 7);
	hm_sim_result_t c = run(t, j, 2, &hm_policy_fair, 0.2, 8);
	assert_float_equal(a.mean_iter_s, b.mean_iter_s, 0);
	assert_int_equal(a.events, b.events);
	assert_true(a.mean_iter_s != c.mean_iter_s);
	/* Jittered jobs drift apart: the mean lies between the two closed forms. */
	assert_true(a.mean_iter_s > C_S + M_S && a.mean_iter_s < C_S + 2 * M_S + 0.05);
	assert_true(a.jobs[0].p99_iter_s > a.jobs[0].mean_iter_s);
	hm_sim_result_free(&a);
	hm_sim_result_free(&b);
	hm_sim_result_free(&c);

	hm_workload_t w = {2, j};
	hm_sim_opts_t o;
	hm_sim_result_t r;
	hm_err_t err = {0};
	hm_sim_opts_defaults(&o);
	o.horizon_s = 10.2;
	assert_int_equal(hm_sim_run(t, &w, &hm_policy_fair, NULL, &o, &r, &err), HM_OK);
	assert_int_equal(r.completed, 0);
	assert_true(r.jobs[0].placed && !r.jobs[0].completed);
	assert_float_equal(r.jobs[0].iterations, 20, 1e-9); /* floor(10.2 s / (C + 2M)) */
	hm_sim_result_free(&r);
	o.horizon_s = -1;
	assert_int_equal(hm_sim_run(t, &w, &hm_policy_fair, NULL, &o, &r, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "horizon -1"));
	free_jobs(j, 2);
	hm_topo_free(t);
}

/*
 * The evaluator (hm_sim_eval_run) is the simulator: two jobs on the shared
 * uplinks under the same fixed decisions (fair, strict classes, held slots)
 * and the same jitter draws give job 0 the same 50 iterations, to the last
 * bit of its end time.
 */
static void test_eval_matches_sim(void **state)
{
	(void)state;
	hm_topo_t *t = make_topo();
	hm_job_t j[2];
	hm_err_t err = {0};
	hm_cluster_state_t cs;
	hm_placement_t pl[2];
	hm_traffic_t tr[2];
	hm_sim_eval_t *ev = hm_sim_eval_new(t, 4, &err);

	assert_non_null(ev);
	set_job(&j[0], 0, t, 0, 2, 50);
	set_job(&j[1], 1, t, 1, 3, 1000);
	assert_int_equal(hm_cluster_state_init(&cs, t), HM_OK);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(hm_place_default(&cs, &j[i], &pl[i], &err), HM_OK);
		assert_int_equal(hm_traffic_derive(t, &j[i].profile, &pl[i], 0, &tr[i], &err),
				 HM_OK);
	}
	for (int c = 0; c < 3; c++) {
		memset(g_dec, 0, sizeof(g_dec));
		if (c == 1)
			g_dec[1].prio = 1;
		if (c == 2)
			for (int i = 0; i < 2; i++) {
				g_dec[i].period_s = 0.41;
				g_dec[i].shift_s = 0.3 + 0.1 * i;
				g_dec[i].guard_s = 0.01;
				g_dec[i].prio = i;
			}
		for (double jit = 0; jit <= 0.02; jit += 0.02) {
			hm_workload_t w = {2, j};
			hm_sim_opts_t o;
			hm_sim_result_t r;
			hm_sim_eval_job_t ej[2];
			hm_sim_eval_out_t out[2];

			hm_sim_opts_defaults(&o);
			o.jitter_cv = jit;
			o.seed = 5;
			assert_int_equal(hm_sim_run(t, &w, &fixed, NULL, &o, &r, &err), HM_OK);
			for (int i = 0; i < 2; i++) {
				memset(&ej[i], 0, sizeof(ej[i]));
				ej[i].job = &j[i];
				ej[i].tr = &tr[i];
				ej[i].npaths = 1;
				ej[i].dec = g_dec[i];
				ej[i].jitter_cv = -1; /* the run's */
			}
			assert_int_equal(hm_sim_eval_run(ev, ej, 2, r.jobs[0].end_s + 1e-9, 0, jit,
							 5, out, &err),
					 HM_OK);
			assert_float_equal(out[0].mean_iter_s * 50, r.jobs[0].end_s, 1e-9);
			assert_true(out[0].iters == 50 && out[0].end_s < 0);
			/* Told how many iterations each has left, both end as in the
			 * simulator: job 1 alone on the links after job 0. */
			ej[0].iters_left = 50;
			ej[1].iters_left = 1000;
			assert_int_equal(hm_sim_eval_run(ev, ej, 2, 1e9, 0, jit, 5, out, &err),
					 HM_OK);
			for (int i = 0; i < 2; i++) {
				assert_float_equal(out[i].end_s, r.jobs[i].end_s, 1e-9);
				assert_true(out[i].iters == (i ? 1000 : 50));
			}
			hm_sim_result_free(&r);
		}
	}
	assert_true(hm_sim_eval_events(ev) > 0);
	/* Bad windows are refused with the values. */
	assert_int_equal(hm_sim_eval_run(ev, NULL, 0, 1, 2, 0, 1, NULL, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "[2, 1]"));
	for (int i = 0; i < 2; i++) {
		hm_traffic_free(&tr[i]);
		hm_placement_free(&pl[i]);
	}
	hm_cluster_state_free(&cs);
	hm_sim_eval_free(ev);
	free_jobs(j, 2);
	hm_topo_free(t);
}

/*
 * The incremental max-min (only the bottleneck-connected part around a change
 * is re-solved, less the phases frozen below the change's level; a link whose
 * reverse carries the same load joins once) against a full solve after every
 * change: scattered jobs of 2-4 hosts on a Clos with two paths per pod,
 * nclasses classes (by id), 5% jitter; with one class, as many of the 16 jobs
 * as fit (denser: a starting phase's level bound is tested where it is used).
 * mixed: every collective (rings load both directions of each cut alike,
 * broadcast and all-to-all need not) and a second, overlapping phase.
 */
static void run_incremental_maxmin(bool mixed, int nclasses)
{
	hm_topo_gen_t g = {0};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};
	hm_job_t j[16];
	uint64_t x = 7;

	g.racks = 4;
	g.hosts_per_rack = 4;
	g.gpus_per_host = 2;
	g.nic_bps = 100e9;
	g.oversubscription = 2;
	g.racks_per_pod = 2;
	g.aggs_per_pod = 2;
	g.cores = 2;
	assert_int_equal(hm_topo_generate(&g, &t, &err), HM_OK);
	for (int i = 0; i < 16; i++) {
		char nodes[256] = "";
		int nh = 2 + (int)((x = x * 6364136223846793005ULL + 1) >> 62) % 3, used[16] = {0};
		memset(&j[i], 0, sizeof(j[i]));
		j[i].id = i;
		snprintf(j[i].name, sizeof(j[i].name), "r%d", i);
		snprintf(j[i].profile.model, sizeof(j[i].profile.model), "custom");
		j[i].profile.compute_s = 0.05 + 0.01 * (i % 7);
		j[i].profile.nphases = 1;
		j[i].profile.phases[0].coll = HM_COLL_ALLREDUCE_RING;
		j[i].profile.phases[0].bytes = 2e8 + 1e8 * (i % 5);
		if (mixed) {
			j[i].profile.nphases = 2;
			j[i].profile.phases[0].coll = (hm_coll_t)(i % HM_COLL__COUNT);
			j[i].profile.phases[1].coll = (hm_coll_t)((i + 2) % HM_COLL__COUNT);
			j[i].profile.phases[1].bytes = 1e8 + 5e7 * (i % 3);
			j[i].profile.phases[1].overlap = 0.5 * (i % 2);
		}
		j[i].iterations = 1e9;
		j[i].gpus = nh;
		for (int k = 0; k < nh; k++) {
			int h;
			do
				h = (int)((x = x * 6364136223846793005ULL + 1) >> 33) % 16;
			while (used[h]);
			used[h] = 1;
			snprintf(nodes + strlen(nodes), sizeof(nodes) - strlen(nodes), "%s%s",
				 k ? "," : "", t->hosts[h].name);
		}
		j[i].nodes = strdup(nodes);
	}
	memset(g_dec, 0, sizeof(g_dec));
	for (int i = 0; i < 16; i++)
		g_dec[i].prio = i % nclasses;
	{
		hm_workload_t w = {nclasses == 1 ? 16 : 8, j};
		hm_sim_opts_t o;
		hm_sim_result_t r;
		hm_sim_opts_defaults(&o);
		o.jitter_cv = 0.05;
		o.horizon_s = 30;
		o.check_maxmin = true;
		/* Two GPUs per host: 8 jobs of 2-4 GPUs fit; classes by id. */
		hm_rc_t rc = hm_sim_run(t, &w, &fixed, NULL, &o, &r, &err);
		if (rc != HM_OK)
			fprintf(stderr, "%s\n", err.msg);
		assert_int_equal(rc, HM_OK);
		assert_true(r.events > 1000);
		hm_sim_result_free(&r);
	}
	free_jobs(j, 16);
	hm_topo_free(t);
}

static void test_incremental_maxmin(void **state)
{
	(void)state;
	run_incremental_maxmin(false, 3);
}

/* One class: a starting phase's lower bound decides which phases keep. */
static void test_incremental_maxmin_fair(void **state)
{
	(void)state;
	run_incremental_maxmin(false, 1);
}

static void test_incremental_maxmin_mixed(void **state)
{
	(void)state;
	run_incremental_maxmin(true, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_alone),
	    cmocka_unit_test(test_eval_matches_sim),
	    cmocka_unit_test(test_incremental_maxmin),
	    cmocka_unit_test(test_incremental_maxmin_fair),
	    cmocka_unit_test(test_incremental_maxmin_mixed),
	    cmocka_unit_test(test_two_jobs_fair),
	    cmocka_unit_test(test_priority),
	    cmocka_unit_test(test_slot_holding),
	    cmocka_unit_test(test_one_time_shift),
	    cmocka_unit_test(test_update_lead),
	    cmocka_unit_test(test_queue_and_unplaced),
	    cmocka_unit_test(test_place_and_epochs),
	    cmocka_unit_test(test_zero_length_iterations),
	    cmocka_unit_test(test_jitter_and_horizon),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
