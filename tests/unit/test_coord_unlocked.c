/*
 * hm_coord_decide runs the policy with the engine's mutex released: queries,
 * reports and step registrations are answered during a long run (10,000 jobs:
 * 1-2 s), while changes to the table wait for its end and are decided next.
 * The policy here blocks until the test lets it go, or 5 s pass.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_clock.h"

#define NOW 1.8e9
#define GATE_WAIT_MS 5000

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool in_policy, let_go, timed_out;

static hm_rc_t gate_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += GATE_WAIT_MS / 1000;
	pthread_mutex_lock(&gate_mu);
	in_policy = true;
	pthread_cond_broadcast(&gate_cv);
	while (!let_go && pthread_cond_timedwait(&gate_cv, &gate_mu, &until) != ETIMEDOUT)
		;
	timed_out = !let_go;
	in_policy = false;
	pthread_mutex_unlock(&gate_mu);
	return script_decide(st, ctx, err);
}

static const hm_policy_ops_t gate_policy = {
    .name = "gate",
    .description = "blocks until let go",
    .decide = gate_decide,
    .uses_epochs = true,
};

static void gate_reset(void)
{
	in_policy = let_go = timed_out = false;
}

static void wait_in_policy(void)
{
	pthread_mutex_lock(&gate_mu);
	while (!in_policy)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

static void release_policy(void)
{
	pthread_mutex_lock(&gate_mu);
	let_go = true;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

static void *decide_main(void *arg)
{
	fixture_decide_at(arg, NOW);
	return NULL;
}

static hm_coord_t *gated_coord(void)
{
	hm_conf_t conf;

	fixture_conf(&conf);
	gate_reset();
	return fixture_coord_job100(&conf, &gate_policy, "resnet50");
}

/* Queries and reports go on while the policy runs; its result lands after. */
static void test_queries_during_run(void **state)
{
	hm_coord_t *c = gated_coord();
	hm_coord_stats_t st;
	hm_assignment_t a;
	hm_coord_measure_t m = {.iter_s = 0.3, .compute_s = 0.2, .comm_s = 0.1, .bytes = 5e8};
	hm_err_t err = {0};
	pthread_t t;
	bool was_in;

	(void)state;
	assert_non_null(c);
	assert_int_equal(pthread_create(&t, NULL, decide_main, c), 0);
	wait_in_policy();
	hm_coord_stats(c, &st);
	assert_int_equal(st.njobs, 1);
	assert_int_equal(hm_coord_assignment(c, 100, &a), HM_ERR_NOTFOUND); /* not yet */
	assert_int_equal(hm_coord_job_measure(c, 100, &m, &err), HM_OK);
	pthread_mutex_lock(&gate_mu);
	was_in = in_policy; /* all of the above answered before the policy's end */
	pthread_mutex_unlock(&gate_mu);
	release_policy();
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(was_in);
	assert_false(timed_out);
	assert_int_equal(hm_coord_assignment(c, 100, &a), HM_OK);
	assert_true(a.scheduled);
	assert_int_equal(a.period_us, 400000);
	hm_coord_destroy(c);
}

static hm_coord_t *upsert_coord;
static bool upsert_done_in_policy;

static void *upsert_main(void *arg)
{
	hm_coord_job_info_t j = {
	    .job_id = 101, .uid = 1000, .nodes = "n[2,6]", .mode = "auto", .profile = "resnet50"};
	hm_err_t err = {0};

	(void)arg;
	assert_int_equal(hm_coord_job_upsert(upsert_coord, &j, &err), HM_OK);
	pthread_mutex_lock(&gate_mu);
	upsert_done_in_policy = in_policy;
	pthread_mutex_unlock(&gate_mu);
	return NULL;
}

/* A new job waits for the run (the policy holds pointers into the table), then is
   decided by the next round although no epoch is due. */
static void test_change_waits_for_run(void **state)
{
	hm_assignment_t a;
	pthread_t td, tu;

	(void)state;
	assert_non_null(upsert_coord = gated_coord());
	upsert_done_in_policy = true;
	assert_int_equal(pthread_create(&td, NULL, decide_main, upsert_coord), 0);
	wait_in_policy();
	assert_int_equal(pthread_create(&tu, NULL, upsert_main, NULL), 0);
	usleep(100 * 1000); /* time to get wrongly in */
	release_policy();
	assert_int_equal(pthread_join(td, NULL), 0);
	assert_int_equal(pthread_join(tu, NULL), 0);
	assert_false(upsert_done_in_policy);
	assert_int_equal(hm_coord_assignment(upsert_coord, 101, &a), HM_ERR_NOTFOUND);
	let_go = true; /* the next run passes the gate */
	fixture_decide_at(upsert_coord, NOW + 1);
	assert_int_equal(hm_coord_assignment(upsert_coord, 101, &a), HM_OK);
	assert_true(a.scheduled);
	hm_coord_destroy(upsert_coord);
}

/* A job that gets its profile from a report during a run is an arrival for the
   next round: the run must not clear that request when it ends. */
static void test_profile_during_run(void **state)
{
	hm_coord_t *c = gated_coord();
	hm_coord_job_info_t j = {.job_id = 102, .uid = 1000, .nodes = "n3", .mode = "auto"};
	hm_coord_measure_t m = {.iter_s = 0.3, .compute_s = 0.2, .comm_s = 0.1, .bytes = 5e8};
	hm_assignment_t a;
	hm_err_t err = {0};
	pthread_t t;

	(void)state;
	assert_non_null(c);
	/* Kept, and said to run unscheduled. */
	assert_int_equal(hm_coord_job_upsert(c, &j, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "no profile"));
	assert_int_equal(pthread_create(&t, NULL, decide_main, c), 0);
	wait_in_policy();
	assert_int_equal(hm_coord_job_measure(c, 102, &m, &err), HM_OK);
	release_policy();
	assert_int_equal(pthread_join(t, NULL), 0);
	/* Not in the run that was going on: no decision yet. */
	assert_int_equal(hm_coord_assignment(c, 102, &a), HM_ERR_NOTFOUND);
	fixture_decide_at(c, NOW + 1); /* no epoch due: only the arrival runs it */
	assert_int_equal(hm_coord_assignment(c, 102, &a), HM_OK);
	assert_true(a.scheduled);
	hm_coord_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_queries_during_run),
	    cmocka_unit_test(test_change_waits_for_run),
	    cmocka_unit_test(test_profile_during_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
