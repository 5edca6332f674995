/*
 * The engine's side of the node agents and of the switch (contract C): what a
 * node's agent is told, when a changed decision takes effect, what happens to a
 * change decided while another is pending, how beats become applied epochs and
 * the measured profile the policy sees.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_coord_nodes.h"

#define T0_S 2000000000.0 /* a fixed "now", far from the fixture's origin */

/* Every job: period 400 ms, shift 0, class 0, but job 100's shift is shift100_ms.
   The policy records the measured profile it was given for job 100. */
static int shift100_ms;
static double seen_meas_iter_s, seen_meas_sd_s, seen_meas_comm_s, seen_meas_compute_s,
    seen_meas_compute_sd_s;

static hm_rc_t seeing_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	for (int k = 0; k < ctx->njobs; k++) {
		hm_decision_t *d = &ctx->jobs[k].dec;

		*d = (hm_decision_t){.period_s = 0.4, .origin_s = 1000.0, .guard_s = 0.002};
		if (ctx->jobs[k].id == 100) {
			d->shift_s = shift100_ms / 1000.0;
			seen_meas_iter_s = ctx->jobs[k].meas_iter_s;
			seen_meas_sd_s = ctx->jobs[k].meas_iter_sd_s;
			seen_meas_comm_s = ctx->jobs[k].meas_comm_s;
			seen_meas_compute_s = ctx->jobs[k].meas_compute_s;
			seen_meas_compute_sd_s = ctx->jobs[k].meas_compute_sd_s;
		}
	}
	return HM_OK;
}

static const hm_policy_ops_t seeing_policy = {
    .name = "script", .decide = seeing_decide, .uses_epochs = true};

static hm_coord_t *make(int lead_ms)
{
	hm_conf_t conf;
	hm_coord_t *c;

	fixture_conf(&conf);
	conf.update_lead_ms = lead_ms;
	c = fixture_coord_job100(&conf, &seeing_policy, "iter=250ms,comm=40%,bytes=1.2GB");
	assert_non_null(c);
	return c;
}

/* The assignment entry of job id for node (asserts it is listed). */
static hm_aw_job_assign_t entry(hm_coord_t *c, const char *node, double now_s, long id)
{
	hm_aw_node_assign_t na;
	hm_err_t err = {0};
	unsigned long gen;

	assert_int_equal(hm_coord_node_assign(c, node, now_s, &na, &gen, &err), HM_OK);
	for (int i = 0; i < na.njobs; i++)
		if (na.jobs[i].job_id == id)
			return na.jobs[i];
	fail_msg("job %ld not listed for %s", id, node);
	return na.jobs[0];
}

static void test_first_decision_applies_at_once(void **state)
{
	hm_coord_t *c = make(1000);
	hm_aw_job_assign_t e;

	shift100_ms = 100;
	fixture_decide_at(c, T0_S);
	e = entry(c, "n1", T0_S, 100);
	assert_true(e.scheduled);
	assert_int_equal(e.uid, 1000);
	assert_false(e.has_next);
	assert_int_equal(e.cur.period_us, 400000);
	/* Both nodes of the job get it; a node without the job does not list it. */
	e = entry(c, "n5", T0_S, 100);
	assert_int_equal(e.cur.period_us, 400000);
	{
		hm_aw_node_assign_t na;
		hm_err_t err = {0};

		assert_int_equal(hm_coord_node_assign(c, "n2", T0_S, &na, NULL, &err), HM_OK);
		assert_int_equal(na.njobs, 0);
		assert_int_equal(hm_coord_node_assign(c, "n99", T0_S, &na, NULL, &err),
				 HM_ERR_NOTFOUND);
		assert_non_null(strstr(err.msg, "n99"));
	}
	hm_coord_destroy(c);
}

/* A later change goes out with a switch time UpdateLead ahead, then settles. */
static void test_change_has_a_switch_time(void **state)
{
	hm_coord_t *c = make(1000);
	hm_aw_job_assign_t e;
	unsigned long g0;

	shift100_ms = 0;
	fixture_decide_at(c, T0_S);
	g0 = hm_coord_node_gen(c, "n1");
	shift100_ms = 100;
	fixture_decide_at(c, T0_S + 10);                      /* an epoch */
	assert_true(hm_coord_node_gen(c, "n1") > g0); /* the agent of n1 is to be told */
	assert_true(hm_coord_node_gen(c, "n5") > g0);
	e = entry(c, "n1", T0_S + 10.2, 100);
	assert_true(e.has_next);
	assert_int_equal(e.cur.shift_us, 0);
	assert_int_equal(e.next.shift_us, 100000);
	assert_int_equal(e.next_effective_us, (int64_t)((T0_S + 10) * 1e6) + 1000000);
	assert_true(e.next.epoch > e.cur.epoch);
	/* Still sent as next shortly past the switch; settled after max period + 1 s. */
	e = entry(c, "n1", T0_S + 11.1, 100);
	assert_true(e.has_next);
	e = entry(c, "n1", T0_S + 11 + 0.4 + 1.01, 100);
	assert_false(e.has_next);
	assert_int_equal(e.cur.shift_us, 100000);
	hm_coord_destroy(c);
}

/* A change decided while another is pending waits for it (never two pending). */
static void test_change_while_pending_is_deferred(void **state)
{
	hm_coord_t *c = make(5000); /* switch 5 s after a change */
	hm_coord_job_info_t j98 = {
	    .job_id = 98, .uid = 7, .nodes = "n4", .mode = "auto", .profile = "resnet50"};
	hm_err_t err = {0};
	hm_aw_job_assign_t e;

	shift100_ms = 0;
	fixture_decide_at(c, T0_S);
	shift100_ms = 100;
	fixture_decide_at(c, T0_S + 10); /* change 1: switch at T0 + 15 */
	shift100_ms = 200;
	assert_int_equal(hm_coord_job_upsert(c, &j98, &err), HM_OK); /* an arrival: decide */
	fixture_decide_at(c, T0_S + 12); /* change 2, decided before change 1's switch */
	e = entry(c, "n1", T0_S + 12.1, 100);
	assert_true(e.has_next);
	assert_int_equal(e.next.shift_us, 100000); /* the steps still hear change 1 only */
	assert_int_equal(e.next_effective_us, (int64_t)((T0_S + 15) * 1e6));
	/* Change 1 took effect: the next round releases change 2 with its own switch. */
	fixture_decide_at(c, T0_S + 15.2);
	e = entry(c, "n1", T0_S + 15.3, 100);
	assert_true(e.has_next);
	assert_int_equal(e.cur.shift_us, 100000);
	assert_int_equal(e.next.shift_us, 200000);
	assert_int_equal(e.next_effective_us, (int64_t)((T0_S + 15.2) * 1e6) + 5000000);
	hm_coord_destroy(c);
}

/* Beats: applied epochs per node (the job's is the oldest), measurements
   weighted by samples reach the policy as meas_*. */
static void test_beats(void **state)
{
	hm_coord_t *c = make(1000);
	hm_aw_node_state_t st;
	hm_coord_job_view_t v;
	hm_err_t err = {0};

	shift100_ms = 100;
	fixture_decide_at(c, T0_S);
	assert_int_equal(hm_coord_node_hello(c, "n1", NULL, T0_S, &err), HM_OK);
	memset(&st, 0, sizeof(st));
	snprintf(st.node, sizeof(st.node), "n1");
	st.njobs = 2;
	st.jobs[0] = (hm_aw_job_state_t){.job_id = 100,
					 .steps = 1,
					 .ranks = 1,
					 .applied_epoch = 3,
					 .has_meas = true,
					 .meas = {.samples = 30,
						  .iter_us = 300000,
						  .iter_sd_us = 0,
						  .compute_us = 150000,
						  .compute_sd_us = 20000,
						  .burst_us = 100000,
						  .slot_misses = 2}};
	st.jobs[1] = (hm_aw_job_state_t){.job_id = 555, .steps = 1, .applied_epoch = -1};
	assert_int_equal(hm_coord_node_beat(c, &st, T0_S + 1, &err), HM_OK); /* 555: ignored */
	snprintf(st.node, sizeof(st.node), "n5");
	st.njobs = 1;
	st.jobs[0].applied_epoch = 2;
	st.jobs[0].meas = (hm_aw_meas_t){.samples = 10,
					 .iter_us = 340000,
					 .iter_sd_us = 0,
					 .compute_us = -1,
					 .compute_sd_us = -1,
					 .burst_us = 140000,
					 .slot_misses = 1};
	assert_int_equal(hm_coord_node_beat(c, &st, T0_S + 1, &err), HM_OK);
	assert_int_equal(hm_coord_job(c, 100, &v), HM_OK);
	assert_int_equal(v.applied_epoch, 2);
	assert_int_equal(v.steps, 2);
	assert_int_equal(v.slot_misses, 3);
	/* The next decision sees the windows: mean 310 ms, sd sqrt(3/4 10^2 ... ) pooled. */
	fixture_decide_at(c, T0_S + 11);
	assert_true(fabs(seen_meas_iter_s - 0.310) < 1e-9);
	assert_true(fabs(seen_meas_sd_s -
			 sqrt((30.0 * 300 * 300 + 10.0 * 340 * 340) / 40 - 310.0 * 310) * 1e-3) <
		    1e-9);
	assert_true(fabs(seen_meas_compute_s - 0.150) < 1e-9); /* n5 measured none */
	assert_true(fabs(seen_meas_compute_sd_s - 0.020) < 1e-9);
	assert_true(fabs(seen_meas_comm_s - 0.110) < 1e-9);
	assert_int_equal(hm_coord_job(c, 100, &v), HM_OK);
	assert_true(fabs(v.measured_period_us - 310000) < 1e-3);
	/* The compute's spread pools the nodes' windows, their means' difference
	   included (100 and 200 ms, no spread within: 50 ms); a window whose spread
	   is unknown (an older agent) adds to the mean only. */
	st.jobs[0].meas = (hm_aw_meas_t){
	    .samples = 10, .iter_us = 300000, .compute_us = 200000, .compute_sd_us = 0, .burst_us = -1};
	assert_int_equal(hm_coord_node_beat(c, &st, T0_S + 12, &err), HM_OK); /* n5 */
	snprintf(st.node, sizeof(st.node), "n1");
	st.jobs[0].meas.compute_us = 100000;
	assert_int_equal(hm_coord_node_beat(c, &st, T0_S + 12, &err), HM_OK);
	st.jobs[0].meas.compute_sd_us = -1;
	st.jobs[0].meas.compute_us = 150000;
	assert_int_equal(hm_coord_node_beat(c, &st, T0_S + 12, &err), HM_OK);
	fixture_decide_at(c, T0_S + 21);
	assert_true(fabs(seen_meas_compute_s - 0.150) < 1e-9);
	assert_true(fabs(seen_meas_compute_sd_s - 0.050) < 1e-9);
	/* An unknown node is refused, naming it. */
	snprintf(st.node, sizeof(st.node), "x9");
	assert_int_equal(hm_coord_node_beat(c, &st, T0_S + 12, &err), HM_ERR_NOTFOUND);
	assert_non_null(strstr(err.msg, "x9"));
	hm_coord_destroy(c);
}

/* The agents table: up, lost, never seen; a reported GPU -> NIC map that fits. */
static void test_nodes_view(void **state)
{
	hm_coord_t *c = make(1000);
	hm_coord_node_view_t *v = NULL;
	hm_hwnode_t hw;
	hm_err_t err = {0};
	int n = 0;

	memset(&hw, 0, sizeof(hw));
	hw.ngpus = 8;
	hw.nnics = 1;
	snprintf(hw.nics[0].name, sizeof(hw.nics[0].name), "mlx5_0");
	assert_int_equal(hm_coord_node_hello(c, "n1", &hw, T0_S, &err), HM_OK);
	hw.nnics = 4; /* more NICs than the topology's one: the node is modelled with 4 */
	assert_int_equal(hm_coord_node_hello(c, "n2", &hw, T0_S, &err), HM_OK);
	hm_coord_node_lost(c, "n2", T0_S + 5);
	assert_int_equal(hm_coord_nodes(c, &v, &n), HM_OK);
	assert_int_equal(n, 8);
	assert_string_equal(v[0].node, "n1");
	assert_string_equal(v[0].state, "up");
	assert_true(v[0].has_topo);
	assert_string_equal(v[0].topo.nics[0].name, "mlx5_0");
	assert_int_equal(v[0].jobs, 1);
	assert_string_equal(v[0].topo_note, "");
	assert_string_equal(v[1].state, "lost");
	assert_string_equal(v[1].topo_note, "");
	assert_int_equal(c->topo->hosts[hm_topo_host_index(c->topo, "n2")].nics, 4);
	assert_string_equal(v[2].state, "none");
	free(v);
	hm_coord_destroy(c);
}

/* Jobs per node: a job counts once on each of its nodes, whatever its GPUs there. */
static void test_nodes_job_count(void **state)
{
	hm_coord_t *c = make(1000); /* job 100 on n[1,5] */
	hm_coord_job_info_t j = {.job_id = 101, .uid = 1, .nodes = "n[1-2]", .gpus_per_node = 4,
				 .mode = "auto", .profile = "resnet50"};
	hm_coord_node_view_t *v = NULL;
	hm_err_t err = {0};
	int n = 0;

	(void)state;
	assert_int_equal(hm_coord_job_upsert(c, &j, &err), HM_OK);
	assert_int_equal(hm_coord_nodes(c, &v, &n), HM_OK);
	assert_int_equal(n, 8);
	assert_string_equal(v[0].node, "n1");
	assert_int_equal(v[0].jobs, 2);
	assert_int_equal(v[1].jobs, 1); /* n2 */
	assert_int_equal(v[2].jobs, 0); /* n3 */
	assert_string_equal(v[4].node, "n5");
	assert_int_equal(v[4].jobs, 1);
	free(v);
	assert_int_equal(hm_coord_job_remove(c, 100), HM_OK);
	assert_int_equal(hm_coord_nodes(c, &v, &n), HM_OK);
	assert_int_equal(v[0].jobs, 1);
	assert_int_equal(v[4].jobs, 0);
	free(v);
	hm_coord_destroy(c);
}

/* A job that asked for another policy than the cluster's is not scheduled. */
static void test_other_policy_unscheduled(void **state)
{
	hm_coord_t *c = make(1000);
	hm_coord_job_info_t j = {
	    .job_id = 200, .uid = 1, .nodes = "n8", .mode = "cassini", .profile = "resnet50"};
	hm_coord_job_view_t v;
	hm_err_t err = {0};

	assert_int_equal(hm_coord_job_upsert(c, &j, &err), HM_ERR_INVAL);
	fixture_decide_at(c, T0_S);
	assert_int_equal(hm_coord_job(c, 200, &v), HM_OK);
	assert_false(v.a.scheduled);
	assert_string_equal(v.a.reason, "asked for cassini, the cluster runs fair");
	hm_coord_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_decision_applies_at_once),
	    cmocka_unit_test(test_nodes_job_count),
	    cmocka_unit_test(test_change_has_a_switch_time),
	    cmocka_unit_test(test_change_while_pending_is_deferred),
	    cmocka_unit_test(test_beats),
	    cmocka_unit_test(test_nodes_view),
	    cmocka_unit_test(test_other_policy_unscheduled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
