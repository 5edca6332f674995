/*
 * The two tiers' round as messages (hm_harmonics_tier.h): the same simulated
 * run gives identical results whether the racks are solved in process or
 * through contract B's rack_round / rack_result JSON (encode, decode, solve,
 * encode, decode: what a leader's node agent does), the wire keeps every
 * double bit for bit, and bad requests or replies are refused by name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>

#include "hm_agent_wire.h"
#include "hm_harmonics_tier.h"
#include "policies_fixture.h"

extern const hm_policy_ops_t hm_policy_harmonics;

typedef struct {
	int exchanges, racks, jobs;
	size_t bytes;
} wire_t;

/* A transport through the wire codec: what travels is JSON text only. */
static hm_rc_t wire_exchange(void *arg, const hm_rack_req_t *reqs, hm_rack_rep_t *reps, int n,
			     hm_err_t *err)
{
	wire_t *w = arg;

	w->exchanges++;
	for (int i = 0; i < n; i++) {
		hm_aw_msg_t out = {.op = HM_AW_RACK_ROUND, .seq = 1}, in, res, back;
		char *json = NULL, *json2 = NULL;

		out.round = reqs[i]; /* borrowed */
		assert_int_equal(hm_aw_encode(&out, &json, err), HM_OK);
		assert_int_equal(hm_aw_decode(json, strlen(json), &in, err), HM_OK);
		assert_int_equal(in.op, HM_AW_RACK_ROUND);
		memset(&res, 0, sizeof(res));
		res.op = HM_AW_RACK_RESULT;
		res.seq = 2;
		res.re = 1;
		assert_int_equal(hm_tier_rack_solve(&in.round, &res.result, err), HM_OK);
		assert_int_equal(hm_aw_encode(&res, &json2, err), HM_OK);
		assert_int_equal(hm_aw_decode(json2, strlen(json2), &back, err), HM_OK);
		reps[i] = back.result; /* moved */
		memset(&back.result, 0, sizeof(back.result));
		w->racks++;
		w->jobs += reqs[i].njobs;
		w->bytes += strlen(json) + strlen(json2);
		hm_aw_msg_free(&in);
		hm_aw_msg_free(&res);
		hm_aw_msg_free(&back);
		free(json);
		free(json2);
	}
	return HM_OK;
}

/* 3 racks of 4 hosts with 2 GPUs: local pairs on shared NICs, cross-rack jobs. */
static int scenario(hm_topo_t **t, hm_job_t *jobs)
{
	static const int h[][2] = {{0, 1}, {0, 1}, {2, 4}, {2, 5}, {5, 6}, {8, 9}, {8, 9}, {3, 10}};
	static const double c[] = {0.10, 0.12, 0.2, 0.15, 0.09, 0.3, 0.25, 0.11};
	int n = (int)(sizeof(c) / sizeof(c[0]));

	*t = fx_topo(3, 4, 2, 2.0);
	for (int i = 0; i < n; i++)
		fx_job(&jobs[i], i, *t, h[i], 2, c[i], 1.2e9, 150, 0.5 * i);
	return n;
}

static void run(const hm_rack_transport_t *tr, int threads, hm_sim_result_t *r)
{
	hm_topo_t *t;
	hm_job_t jobs[8];
	int n = scenario(&t, jobs);
	hm_workload_t w = {n, jobs};
	hm_sim_opts_t o;
	hm_policy_cfg_t cfg;
	hm_err_t err = {0};

	hm_sim_opts_defaults(&o);
	o.jitter_cv = 0.03;
	o.seed = 11;
	hm_policy_cfg_defaults(&cfg);
	cfg.epoch_s = 2;
	cfg.seed = 11;
	cfg.threads = threads;
	cfg.racks = tr;
	assert_int_equal(hm_sim_run(t, &w, &hm_policy_harmonics, &cfg, &o, r, &err), HM_OK);
	fx_free_jobs(jobs, n);
	hm_topo_free(t);
}

static void same_results(const hm_sim_result_t *a, const hm_sim_result_t *b)
{
	assert_int_equal(a->njobs, b->njobs);
	for (int i = 0; i < a->njobs; i++) {
		assert_true(a->jobs[i].jct_s == b->jobs[i].jct_s);
		assert_true(a->jobs[i].mean_iter_s == b->jobs[i].mean_iter_s);
	}
	assert_true(a->mean_jct_s == b->mean_jct_s);
}

static void test_wire_equals_in_process(void **state)
{
	wire_t w = {0};
	hm_rack_transport_t tr = {wire_exchange, &w};
	hm_sim_result_t here, wire, threaded;

	(void)state;
	run(NULL, 1, &here);
	run(&tr, 1, &wire);
	run(NULL, 3, &threaded);
	/* The racks were asked through the wire, with local work in them. */
	assert_true(w.exchanges > 0);
	assert_true(w.racks > 0);
	assert_true(w.jobs > w.racks);
	same_results(&here, &wire);
	same_results(&here, &threaded);
	hm_sim_result_free(&here);
	hm_sim_result_free(&wire);
	hm_sim_result_free(&threaded);
}

static void one_request(hm_rack_req_t *q)
{
	hm_err_t err = {0};

	memset(q, 0, sizeof(*q));
	assert_int_equal(hm_rack_req_alloc(q, 2, 3, &err), HM_OK);
	q->rack = 1;
	q->round = 7;
	q->shift_grid = 24;
	q->hold_min_gain = 0.5;
	for (int i = 0; i < 2; i++) {
		hm_rack_job_t *j = &q->jobs[i];
		j->idx = 3 + 2 * i;
		j->burst_s = 0.1 + 1.0 / 3.0;
		j->T_s = 1.0 + i / 7.0;
		j->sd_s = 0.01;
		j->R_s = j->T_s + j->sd_s;
		j->partnered = true;
		j->links = q->link_pool + i;
		j->demand = q->dbl_pool + i;
		j->nlinks = i + 1;
	}
	q->link_pool[0] = 5;
	q->link_pool[1] = 5;
	q->link_pool[2] = 9;
	q->dbl_pool[0] = 0.7;
	q->dbl_pool[1] = 0.6000000000000001;
	q->dbl_pool[2] = 1.0 / 3.0;
}

static void test_round_bits(void **state)
{
	hm_aw_msg_t out = {.op = HM_AW_RACK_ROUND, .seq = 4}, in;
	hm_err_t err = {0};
	char *json = NULL;

	(void)state;
	one_request(&out.round);
	assert_int_equal(hm_aw_encode(&out, &json, &err), HM_OK);
	assert_int_equal(hm_aw_decode(json, strlen(json), &in, &err), HM_OK);
	assert_int_equal(in.round.njobs, 2);
	assert_int_equal(in.round.round, 7);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(in.round.jobs[i].idx, out.round.jobs[i].idx);
		assert_int_equal(in.round.jobs[i].nlinks, out.round.jobs[i].nlinks);
		assert_memory_equal(&in.round.jobs[i].T_s, &out.round.jobs[i].T_s, sizeof(double));
		assert_memory_equal(&in.round.jobs[i].burst_s, &out.round.jobs[i].burst_s,
				    sizeof(double));
		for (int k = 0; k < in.round.jobs[i].nlinks; k++)
			assert_memory_equal(&in.round.jobs[i].demand[k],
					    &out.round.jobs[i].demand[k], sizeof(double));
	}
	free(json);
	hm_aw_msg_free(&in);
	hm_aw_msg_free(&out);
}

#define JOB                                                                                        \
	"{\"i\":%d,\"cross\":false,\"burst_s\":0.1,\"T_s\":%s,\"sd_s\":0.01,\"R_s\":0.5,"          \
	"\"partnered\":true,\"prev_P_s\":0,\"prev_s_s\":0,\"hold\":false,\"P_s\":0,\"s_s\":0,"     \
	"\"links\":%s,\"demand\":%s}"

static void expect_refused(const char *json, const char *what)
{
	hm_aw_msg_t m;
	hm_err_t err = {0};

	assert_int_equal(hm_aw_decode(json, strlen(json), &m, &err), HM_ERR_PROTO);
	if (!strstr(err.msg, what))
		fail_msg("'%s' does not name '%s'", err.msg, what);
	hm_aw_msg_free(&m);
}

static void test_bad_requests(void **state)
{
	const char *head = "{\"v\":1,\"op\":\"rack_round\",\"seq\":3,\"rack_idx\":0,\"round\":2,"
			   "\"shift_grid\":24,\"hold_min_gain\":0.5,\"guard_s\":0,\"jobs\":[";
	static const struct {
		int i1;
		const char *T, *links, *demand; /* the first job's */
		int i2;                         /* a second job's index, -1 none */
		const char *what;               /* the message must name it */
	} bad[] = {
	    {1, "-0.4", "[1]", "[0.5]", -1, "rack_round.jobs[0].T_s"},
	    {1, "0.4", "[4,2]", "[0.5,0.5]", -1, "jobs[0].l[1]: 2 after 4"},
	    {1, "0.4", "[1]", "[1.5]", -1, "jobs[0].d[0]: 1.5"},
	    {1, "0.4", "[1,2]", "[0.5]", -1, "2 links but 1 demands"},
	    {4, "0.4", "[1]", "[0.5]", 2, "jobs[1].i: 2 after 4"},
	};
	char buf[2048], j1[512], j2[512];

	(void)state;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		snprintf(j1, sizeof(j1), JOB, bad[k].i1, bad[k].T, bad[k].links, bad[k].demand);
		j2[0] = 0;
		if (bad[k].i2 >= 0)
			snprintf(j2, sizeof(j2), "," JOB, bad[k].i2, "0.4", "[1]", "[0.5]");
		snprintf(buf, sizeof(buf), "%s%s%s]}", head, j1, j2);
		expect_refused(buf, bad[k].what);
	}
	expect_refused("{\"v\":1,\"op\":\"rack_result\",\"seq\":3,\"re\":1,\"rack_idx\":0,"
		       "\"round\":2,\"solve_ms\":1,\"jobs\":[{\"i\":1,\"hold\":true,\"P_s\":-1,"
		       "\"s_s\":0,\"guard_s\":0}]}",
		       "rack_result.jobs[0].P_s");
}

/* A reply that does not answer the request exactly leaves its local jobs free. */
static void test_apply_checks(void **state)
{
	hm_rack_req_t q;
	hm_rack_rep_t p = {0};
	hm_hmodel_t m;
	hm_hjob_t jobs[6];
	hm_pjob_t pj[6];
	hm_err_t err = {0};

	(void)state;
	one_request(&q);
	memset(&m, 0, sizeof(m));
	memset(jobs, 0, sizeof(jobs));
	memset(pj, 0, sizeof(pj));
	m.njobs = 6;
	m.jobs = jobs;
	for (int i = 0; i < 6; i++) {
		jobs[i].pj = &pj[i];
		jobs[i].R_s = 1.0;
	}
	assert_int_equal(hm_tier_rack_solve(&q, &p, &err), HM_OK);
	assert_int_equal(p.ndec, 2);
	/* As solved: applied. */
	p.dec[0].hold = true;
	p.dec[0].P_s = 2.0;
	p.dec[0].s_s = 0.5;
	assert_true(hm_tier_apply(&m, &q, &p));
	assert_true(jobs[3].hold && jobs[3].P_s == 2.0 && jobs[3].decided);
	/* A period below the robust period, a wrong round, a missing job, an extra one. */
	p.dec[0].P_s = 0.5;
	assert_false(hm_tier_apply(&m, &q, &p));
	assert_false(jobs[3].hold);
	assert_true(jobs[3].decided);
	p.dec[0].P_s = 2.0;
	p.round = 8;
	assert_false(hm_tier_apply(&m, &q, &p));
	p.round = 7;
	p.ndec = 1;
	assert_false(hm_tier_apply(&m, &q, &p));
	p.ndec = 2;
	p.dec[1].idx = 4;
	assert_false(hm_tier_apply(&m, &q, &p));
	p.dec[1].idx = 5;
	p.answered = false;
	assert_false(hm_tier_apply(&m, &q, &p));
	assert_false(jobs[3].hold || jobs[5].hold);
	hm_rack_rep_free(&p);
	hm_rack_req_free(&q);
}

/* In process, except that the racks in `mute` give no answer. */
typedef struct {
	unsigned mute; /* bit r: rack r silent */
	int threads;
} muted_t;

static hm_rc_t muted_exchange(void *arg, const hm_rack_req_t *reqs, hm_rack_rep_t *reps, int n,
			      hm_err_t *err)
{
	muted_t *mu = arg;

	assert_int_equal(hm_tier_inproc_exchange(&mu->threads, reqs, reps, n, err), HM_OK);
	for (int i = 0; i < n; i++)
		if (mu->mute & (1u << reqs[i].rack))
			reps[i].answered = false;
	return HM_OK;
}

/*
 * Two cross-rack jobs (0, 1: racks 0 and 1 and the link above) and a local
 * pair in rack 0 (2, 3), as test_harmonics' test_cross_rack. Rack 0 silent
 * for two rounds: its local jobs run free in those rounds, and from the round
 * after the first silence the cross-rack jobs touching it run free too; once
 * it answers again its local jobs are decided by it at once and the
 * cross-rack jobs hold again one round later. (The local pair's own decisions
 * from round to round are the Local Scheduler's: not checked here.)
 */
static void test_silent_rack(void **state)
{
	fx_ctx_t f;
	int rack[4] = {0, 1, -1, 0}, lx[3] = {0, 1, 2}, l3[1] = {3};
	muted_t mu = {.mute = 1u, .threads = 1};
	hm_rack_transport_t tr = {muted_exchange, &mu};
	hm_policy_cfg_t cfg;
	void *st = NULL;
	hm_err_t err = {0};
	/* Per round: cross-rack jobs held, local jobs forced free, the note's words. */
	const struct {
		bool cross_held, local_free;
		const char *note;
	} want[4] = {
	    {true, true, "(0 free: a rack silent)"},
	    {false, true, "(2 free: a rack silent)"},
	    {false, false, "1 asked, 1 answered"},
	    {true, false, "(0 free: a rack silent)"},
	};

	(void)state;
	fx_ctx_init(&f, 4, rack, 2);
	fx_ctx_job(&f, 0, 0.3, 0.1, lx, 3);
	fx_ctx_job(&f, 1, 0.65, 0.15, lx, 3);
	fx_ctx_job(&f, 2, 0.6, 0.2, l3, 1);
	fx_ctx_job(&f, 3, 1.4, 0.2, l3, 1);
	for (int i = 0; i < 4; i++)
		fx_ctx_measured(&f, i, 1e-3);
	hm_policy_cfg_defaults(&cfg);
	cfg.plan_only = true;
	cfg.racks = &tr;
	assert_int_equal(hm_policy_harmonics.create(&cfg, &st, &err), HM_OK);
	for (int round = 0; round < 4; round++) {
		mu.mute = round < 2 ? 1u : 0u;
		f.ctx.event = HM_EV_EPOCH;
		assert_int_equal(hm_policy_harmonics.decide(st, &f.ctx, &err), HM_OK);
		for (int i = 0; i < 2; i++)
			if ((f.sj[i].dec.period_s > 0) != want[round].cross_held)
				fail_msg("round %d: cross-rack job %d period %g", round, i,
					 f.sj[i].dec.period_s);
		for (int i = 2; i < 4 && want[round].local_free; i++)
			if (f.sj[i].dec.period_s > 0)
				fail_msg("round %d: job %d of the silent rack holds", round, i);
		if (!strstr(f.ctx.note, want[round].note))
			fail_msg("round %d: '%s' lacks '%s'", round, f.ctx.note, want[round].note);
	}
	hm_policy_harmonics.destroy(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wire_equals_in_process),
	    cmocka_unit_test(test_round_bits),
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_apply_checks),
	    cmocka_unit_test(test_silent_rack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
