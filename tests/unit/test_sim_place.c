/*
 * Unit tests of the simulator's placement option (hm_sim_opts_t.placement):
 * the Slurm cluster test's case in the simulator (4 racks x 3 single-GPU hosts,
 * uplinks as fast as a NIC): a heavy job across racks 1 and 2, two jobs that
 * fill two hosts each of racks 3 and 4, then a 2-GPU job arriving with one free
 * host in each rack. packed puts it on racks 1 and 2 (sharing the heavy job's
 * uplinks), harmonics on racks 3 and 4 (sharing nothing).
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

#define NJOBS 4

static hm_topo_t *make_topo_up(double uplink_bps)
{
	hm_topo_gen_t g = {.racks = 4,
			   .hosts_per_rack = 3,
			   .gpus_per_host = 1,
			   .nic_bps = 100e9,
			   .uplink_bps = uplink_bps};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	assert_int_equal(hm_topo_generate(&g, &t, &err), HM_OK);
	assert_int_equal(t->nhosts, 12);
	return t;
}

static hm_topo_t *make_topo(void)
{
	return make_topo_up(100e9);
}

/* compute 0.3 s, 1.25 GB all-reduce: 0.1 s bursts on 2 hosts at 100 Gbit/s. */
static void set_job(hm_job_t *j, int id, int gpus, double arrival_s, double iters,
		    const char *nodes)
{
	memset(j, 0, sizeof(*j));
	j->id = id;
	snprintf(j->name, sizeof(j->name), "job%d", id);
	j->gpus = gpus;
	j->arrival_s = arrival_s;
	snprintf(j->profile.model, sizeof(j->profile.model), "custom");
	j->profile.compute_s = 0.3;
	j->profile.nphases = 1;
	j->profile.phases[0].coll = HM_COLL_ALLREDUCE_RING;
	j->profile.phases[0].bytes = 1.25e9;
	j->iterations = iters;
	j->nodes = nodes ? strdup(nodes) : NULL;
}

static void make_jobs(hm_job_t *j)
{
	/* Generated host names are n0001..n0012, three per rack. */
	set_job(&j[0], 0, 4, 0, 400, "n[0001-0002,0004-0005]"); /* heavy, racks 1 and 2 */
	set_job(&j[1], 1, 2, 0, 400, "n[0007-0008]");           /* rack 3, its own NICs */
	set_job(&j[2], 2, 2, 0, 400, "n[0010-0011]");           /* rack 4 */
	set_job(&j[3], 3, 2, 1, 200, NULL); /* free: n0003, n0006, n0009, n0012 */
}

static hm_sim_result_t run(hm_sim_placement_t p, const hm_policy_ops_t *pol)
{
	hm_topo_t *t = make_topo();
	hm_job_t jobs[NJOBS];
	hm_workload_t w = {NJOBS, jobs};
	hm_sim_opts_t o;
	hm_sim_result_t r;
	hm_err_t err = {0};

	make_jobs(jobs);
	hm_sim_opts_defaults(&o);
	o.placement = p;
	if (hm_sim_run(t, &w, pol, NULL, &o, &r, &err) != HM_OK)
		fail_msg("hm_sim_run: %s", err.msg);
	for (int i = 0; i < NJOBS; i++)
		free(jobs[i].nodes);
	hm_topo_free(t);
	assert_int_equal(r.completed, NJOBS);
	return r;
}

static void test_harmonics_avoids_the_heavy_jobs_uplinks(void **state)
{
	hm_sim_result_t packed = run(HM_SIM_PLACE_PACKED, &hm_policy_fair);
	hm_sim_result_t def = run(HM_SIM_PLACE_DEFAULT, &hm_policy_fair);
	hm_sim_result_t harm = run(HM_SIM_PLACE_HARMONICS, &hm_policy_fair);

	(void)state;
	/* packed: job 3 and the heavy job 0 overlap on the uplinks of racks 1 and 2. */
	assert_true(packed.jobs[3].slowdown > 1.02);
	assert_true(packed.jobs[0].slowdown > 1.01);
	/* The default placement is packed (fair has no place() of its own). */
	assert_float_equal(def.mean_jct_s, packed.mean_jct_s, 1e-9);
	/* harmonics: job 3 on racks 3 and 4, whose uplinks nobody uses. */
	assert_float_equal(harm.jobs[3].slowdown, 1, 1e-9);
	assert_float_equal(harm.jobs[0].slowdown, 1, 1e-9);
	assert_true(harm.mean_jct_s < packed.mean_jct_s);
	hm_sim_result_free(&packed);
	hm_sim_result_free(&def);
	hm_sim_result_free(&harm);
}

/* cassini's compatibility and spread also place every job; names round-trip. */
static void test_other_placements(void **state)
{
	hm_sim_placement_t p;
	hm_err_t err = {0};

	(void)state;
	for (int k = HM_SIM_PLACE_PACKED; k <= HM_SIM_PLACE_CASSINI; k++) {
		hm_sim_result_t r = run((hm_sim_placement_t)k, &hm_policy_cassini);

		assert_int_equal(r.unplaced, 0);
		hm_sim_result_free(&r);
		assert_int_equal(hm_sim_placement_parse(hm_sim_placement_name(k), &p, &err), HM_OK);
		assert_int_equal(p, k);
	}
	assert_int_equal(hm_sim_placement_parse("tightest", &p, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "'tightest'"));
	assert_non_null(strstr(err.msg, "accepted: packed, spread, harmonics, cassini"));
	assert_int_equal(hm_sim_placement_parse("default", &p, &err), HM_ERR_INVAL);
}

/* spread scatters a job over racks where packed keeps it in one. */
static void test_spread_scatters(void **state)
{
	hm_topo_t *t = make_topo_up(25e9); /* a ring crossing racks is uplink-bound */
	hm_job_t jobs[1];
	hm_workload_t w = {1, jobs};
	hm_sim_opts_t o;
	hm_sim_result_t a, b;
	hm_err_t err = {0};

	(void)state;
	set_job(&jobs[0], 0, 3, 0, 50, NULL);
	hm_sim_opts_defaults(&o);
	o.jitter_cv = 0;
	o.placement = HM_SIM_PLACE_PACKED;
	assert_int_equal(hm_sim_run(t, &w, &hm_policy_fair, NULL, &o, &a, &err), HM_OK);
	o.placement = HM_SIM_PLACE_SPREAD;
	assert_int_equal(hm_sim_run(t, &w, &hm_policy_fair, NULL, &o, &b, &err), HM_OK);
	/* Packed: one rack, the ring on NICs only. Spread: 3 random hosts of 12 share a
	 * rack with probability 4 / C(12,3); seed 1 scatters them, and the ring then
	 * crosses a 25 Gbit/s uplink: alone, its burst takes 4 times as long. A 3-rank
	 * ring all-reduce sends 4/3 of the 1.25 GB per edge: 0.1333 s at 100 Gbit/s. */
	assert_float_equal(a.jobs[0].alone_iter_s, 0.3 + 4.0 / 3 * 0.1, 1e-9);
	assert_float_equal(b.jobs[0].alone_iter_s, 0.3 + 4 * 4.0 / 3 * 0.1, 1e-9);
	hm_sim_result_free(&b);
	assert_int_equal(hm_sim_run(t, &w, &hm_policy_fair, NULL, &o, &b, &err), HM_OK);
	assert_float_equal(b.jobs[0].alone_iter_s, 0.3 + 4 * 4.0 / 3 * 0.1, 1e-9); /* seeded */
	hm_sim_result_free(&b); /* a refused run clears its result */
	/* A bad placement value is refused. */
	o.placement = (hm_sim_placement_t)42;
	assert_int_equal(hm_sim_run(t, &w, &hm_policy_fair, NULL, &o, &b, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "placement 42"));
	hm_sim_result_free(&a);
	hm_sim_result_free(&b);
	free(jobs[0].nodes);
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_harmonics_avoids_the_heavy_jobs_uplinks),
	    cmocka_unit_test(test_other_placements),
	    cmocka_unit_test(test_spread_scatters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
