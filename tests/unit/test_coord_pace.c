/*
 * Whether a job's traffic follows its decision (hm_coord_pace.c, issue 25): a
 * job none of whose steps reports an applied epoch is modelled unpaced after
 * UnpacedAfter and paced again at the first report; the class its NCCL
 * communicators carry reaches the policy, the views and AdminComment; and the
 * evaluation judges candidates with it (hm_pol_eval.c).
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
#include "hm_pol_eval.h"
#include "policies_fixture.h"

#define T0_S 2000000000.0 /* a fixed "now", far from the fixture's origin */

/* Job 100 gets class 1 in a 400 ms period; what the policy was told is recorded. */
static int seen_calls;
static hm_sched_job_t seen;

static hm_rc_t seeing_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	seen_calls++;
	for (int k = 0; k < ctx->njobs; k++) {
		hm_decision_t *d = &ctx->jobs[k].dec;

		*d = (hm_decision_t){.period_s = 0.4, .origin_s = 1000.0, .guard_s = 0.002};
		if (ctx->jobs[k].id == 100) {
			d->prio = 1;
			seen = ctx->jobs[k];
		}
	}
	return HM_OK;
}

static const hm_policy_ops_t seeing_policy = {
    .name = "script", .decide = seeing_decide, .uses_epochs = true};

/* Job 100 on n1 and n5; no epochs (a decision runs only when something changed). */
static hm_coord_t *make(double unpaced_after_s)
{
	hm_conf_t conf;
	hm_coord_t *c;

	fixture_conf(&conf);
	conf.epoch_s = 0;
	conf.unpaced_after_s = unpaced_after_s;
	c = fixture_coord_job100(&conf, &seeing_policy, "iter=250ms,comm=40%,bytes=1.2GB");
	assert_non_null(c);
	seen_calls = 0;
	return c;
}

/* A beat of node for job 100: its applied epoch (-1 none) and class (-1 none). */
static void beat(hm_coord_t *c, const char *node, long applied, int cls, double now_s)
{
	hm_aw_node_state_t st;
	hm_err_t err = {0};

	memset(&st, 0, sizeof(st));
	snprintf(st.node, sizeof(st.node), "%s", node);
	st.njobs = 1;
	st.jobs[0] = (hm_aw_job_state_t){.job_id = 100,
					 .steps = 1,
					 .ranks = 1,
					 .applied_epoch = applied,
					 .has_nccl_class = cls >= 0,
					 .nccl_class = cls >= 0 ? cls : 0};
	assert_int_equal(hm_coord_node_beat(c, &st, now_s, &err), HM_OK);
}

static hm_coord_job_view_t view(hm_coord_t *c)
{
	hm_coord_job_view_t v;

	assert_int_equal(hm_coord_job(c, 100, &v), HM_OK);
	return v;
}

static void comment(hm_coord_t *c, char *buf, size_t len)
{
	char cur[1024];

	snprintf(cur, sizeof(cur), "%s", buf);
	if (!hm_coord_admin_comment(c, 100, cur, buf, len))
		snprintf(buf, len, "%s", cur);
}

/* No applied epoch for UnpacedAfter: unpaced, decided again with it; a report:
   paced again. The views and AdminComment say so. */
static void test_unpaced_after_bound(void **state)
{
	hm_coord_t *c = make(30);
	char ac[1024] = "";

	fixture_decide_at(c, T0_S);
	assert_int_equal(seen_calls, 1);
	assert_false(seen.unpaced);
	beat(c, "n1", -1, -1, T0_S + 5); /* a step, but no burst applied */
	fixture_decide_at(c, T0_S + 29);
	assert_int_equal(seen_calls, 1); /* nothing changed within the bound */
	assert_false(view(c).unpaced);
	comment(c, ac, sizeof(ac));
	assert_null(strstr(ac, "harmonics:m"));
	fixture_decide_at(c, T0_S + 30.5);
	assert_int_equal(seen_calls, 2); /* the model changed: decided again */
	assert_true(seen.unpaced);
	assert_true(seen.class_fixed); /* unmarked traffic: the lowest class */
	assert_int_equal(seen.class_in_force, HM_DEFAULT_PRIO_LEVELS - 1);
	assert_true(view(c).unpaced);
	assert_true(view(c).a.scheduled); /* its decision still goes out */
	comment(c, ac, sizeof(ac));
	assert_non_null(strstr(ac, " unpaced;"));
	/* Reports arrive: paced at once, decided again at the next round. */
	beat(c, "n5", 1, -1, T0_S + 31);
	assert_false(view(c).unpaced);
	fixture_decide_at(c, T0_S + 31.5);
	assert_int_equal(seen_calls, 3);
	assert_false(seen.unpaced);
	assert_false(seen.class_fixed);
	comment(c, ac, sizeof(ac));
	assert_non_null(strstr(ac, " paced;"));
	/* Reports stop (the step ended): unpaced again UnpacedAfter after the last one. */
	beat(c, "n5", -1, -1, T0_S + 40);
	fixture_decide_at(c, T0_S + 60);
	assert_false(view(c).unpaced);
	fixture_decide_at(c, T0_S + 62);
	assert_true(view(c).unpaced);
	hm_coord_destroy(c);
}

/* No agent up on its nodes: no report is no evidence, the job stays paced. */
static void test_no_agent_no_verdict(void **state)
{
	hm_coord_t *c = make(30);

	fixture_decide_at(c, T0_S);
	fixture_decide_at(c, T0_S + 300);
	assert_false(view(c).unpaced);
	beat(c, "n1", -1, -1, T0_S + 301); /* an agent: the bound counts from about now */
	fixture_decide_at(c, T0_S + 329);
	assert_false(view(c).unpaced);
	fixture_decide_at(c, T0_S + 331.5);
	assert_true(view(c).unpaced);
	hm_coord_destroy(c);
}

/* UnpacedAfter=0: never. */
static void test_unpaced_never(void **state)
{
	hm_coord_t *c = make(0);

	fixture_decide_at(c, T0_S);
	fixture_decide_at(c, T0_S + 86400);
	assert_false(view(c).unpaced);
	assert_int_equal(seen_calls, 1);
	hm_coord_destroy(c);
}

/* The class its NCCL traffic carries: shown, modelled where it differs from the
   decision (the lowest priority over its nodes), noted in AdminComment. */
static void test_class_in_force(void **state)
{
	hm_coord_t *c = make(30);
	hm_coord_job_info_t j2 = {.job_id = 200,
				  .uid = 1000,
				  .nodes = "n2",
				  .mode = "auto",
				  .profile = "iter=250ms,comm=40%,bytes=1.2GB"};
	hm_err_t err = {0};
	char ac[1024] = "";

	fixture_decide_at(c, T0_S);
	assert_int_equal(view(c).class_in_force, -1);
	assert_int_equal(view(c).a.prio, 1);
	beat(c, "n1", 1, 1, T0_S + 1);
	beat(c, "n5", 1, 3, T0_S + 1);
	assert_int_equal(view(c).class_in_force, 3);
	comment(c, ac, sizeof(ac));
	assert_non_null(strstr(ac, " paced class=3;"));
	assert_int_equal(hm_coord_job_upsert(c, &j2, &err), HM_OK); /* a decision runs */
	fixture_decide_at(c, T0_S + 2);
	assert_int_equal(seen_calls, 2);
	assert_false(seen.unpaced);
	assert_true(seen.class_fixed);
	assert_int_equal(seen.class_in_force, 3);
	/* Its communicators follow the decision: nothing pinned, AdminComment says so. */
	beat(c, "n5", 1, 1, T0_S + 3);
	assert_int_equal(view(c).class_in_force, 1);
	assert_int_equal(hm_coord_job_remove(c, 200), HM_OK);
	fixture_decide_at(c, T0_S + 4);
	assert_int_equal(seen_calls, 3);
	assert_false(seen.class_fixed);
	comment(c, ac, sizeof(ac));
	assert_non_null(strstr(ac, " paced;"));
	hm_coord_destroy(c);
}

/*
 * The evaluation judges a candidate with what the job's traffic does: two jobs
 * on one link, strict classes; job 1's class pinned at 0 scores {0, 1} as {0,
 * 0}, and an unpaced job's slot is never held.
 */
static void test_eval_as_traffic_runs(void **state)
{
	static const int rack[1] = {-1}, link[1] = {0};
	fx_ctx_t *f = calloc(1, sizeof(*f));
	hm_decision_t d[2], same[2];
	int member[2] = {0, 1};
	hm_sim_eval_t *ev;
	hm_pol_comp_t pc;
	hm_err_t err = {0};
	hm_rc_t rc = HM_OK;
	double split, equal, pinned, held, unheld;

	assert_non_null(f);
	fx_ctx_init(f, 1, rack, 0);
	fx_ctx_job(f, 0, 0.1, 0.1, link, 1);
	fx_ctx_job(f, 1, 0.1, 0.1, link, 1);
	f->ctx.now_s = 0;
	assert_non_null(ev = hm_sim_eval_new(&f->topo, 2, &err));
	assert_int_equal(hm_pol_comp_init(&pc, &f->ctx, member, 2, 0, 1, 1, 20, 1e6, &err), HM_OK);
	memset(d, 0, sizeof(d));
	memset(same, 0, sizeof(same));
	d[1].prio = 1;
	split = hm_pol_comp_score(&pc, ev, d, &rc, &err);
	equal = hm_pol_comp_score(&pc, ev, same, &rc, &err);
	assert_int_equal(rc, HM_OK);
	assert_true(fabs(split - equal) > 1e-6); /* classes matter on this link */
	f->sj[1].class_fixed = true;
	f->sj[1].class_in_force = 0;
	pinned = hm_pol_comp_score(&pc, ev, d, &rc, &err);
	assert_true(fabs(pinned - equal) < 1e-12);
	f->sj[1].class_fixed = false;
	/* Job 1 held into the gaps of job 0 (free): unpaced, the two collide. */
	d[1].prio = 0;
	d[1].period_s = 0.2;
	held = hm_pol_comp_score(&pc, ev, d, &rc, &err);
	f->sj[1].unpaced = true;
	unheld = hm_pol_comp_score(&pc, ev, d, &rc, &err);
	assert_int_equal(rc, HM_OK);
	assert_true(fabs(held - unheld) > 1e-6);
	hm_pol_comp_free(&pc);
	hm_sim_eval_free(ev);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unpaced_after_bound),  cmocka_unit_test(test_unpaced_never),
	    cmocka_unit_test(test_no_agent_no_verdict),  cmocka_unit_test(test_class_in_force),
	    cmocka_unit_test(test_eval_as_traffic_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
