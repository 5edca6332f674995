/*
 * Unit tests for sched/harmonics' publication of the live view (hm_live_pub.h):
 * references, confirmation, rebuilds, a reader keeping an old view, clear.
 * Run under the sanitizer tier, a use after free or a leak fails it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_live_pub.h"

#define NOW 1.8e9

static void add_job(hm_coord_t *c, uint32_t id, const char *nodes)
{
	hm_coord_job_info_t info = {.job_id = id,
				    .name = "train",
				    .nodes = nodes,
				    .mode = "auto",
				    .profile = "iter=250ms,comm=40%,bytes=1.2GB",
				    .start_s = NOW - 60};
	hm_err_t err = {0};

	assert_int_equal(hm_coord_job_upsert(c, &info, &err), HM_OK);
}

static void test_publish(void **state)
{
	static hm_live_pub_t pub = HM_LIVE_PUB_INIT;
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	const hm_live_t *a, *b, *d;
	hm_profile_t prof;
	double fresh = 0;
	bool changed;
	hm_err_t err = {0};

	(void)state;
	fixture_conf(&conf); /* policy fair */
	assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
	/* Nothing published yet. */
	assert_null(hm_live_pub_acquire(&pub, &fresh));
	hm_live_pub_release(&pub, NULL);

	hm_live_pub_refresh(&pub, c, &conf, NOW);
	a = hm_live_pub_acquire(&pub, &fresh);
	assert_non_null(a);
	assert_int_equal(a->abi, HM_LIVE_ABI);
	assert_int_equal(a->size, sizeof(hm_live_t));
	assert_float_equal(fresh, NOW, 0);
	assert_false(a->staggers); /* fair */
	assert_string_equal(a->policy, "fair");
	assert_int_equal(a->view->njobs, 0);
	assert_ptr_equal(a->view->topo, a->topo);
	assert_int_equal(a->topo->nhosts, 8);
	assert_int_equal(a->profile_parse("resnet50", &prof, &err), HM_OK);

	/* Unchanged: the same view, confirmed later. */
	hm_live_pub_refresh(&pub, c, &conf, NOW + 1);
	b = hm_live_pub_acquire(&pub, &fresh);
	assert_ptr_equal(b, a);
	assert_float_equal(fresh, NOW + 1, 0);
	hm_live_pub_release(&pub, b);

	/* A job starts: a new view; the reader of the old one still reads it. */
	add_job(c, 7, "n[4-5]");
	assert_int_equal(hm_coord_decide(c, NOW + 2, &changed, &err), HM_OK);
	hm_live_pub_refresh(&pub, c, &conf, NOW + 2);
	b = hm_live_pub_acquire(&pub, &fresh);
	assert_ptr_not_equal(b, a);
	assert_int_equal(b->view->njobs, 1);
	assert_int_equal(b->view->jobs[0].id, 7);
	assert_ptr_equal(b->topo, a->topo); /* same topology copy, shared */
	assert_int_equal(b->topo_gen, a->topo_gen);
	assert_int_equal(a->view->njobs, 0);
	hm_live_pub_release(&pub, a); /* the last reference: freed */

	/* A configuration change rebuilds even when the jobs did not change. */
	snprintf(conf.policy, sizeof(conf.policy), "harmonics");
	hm_live_pub_invalidate(&pub);
	hm_live_pub_refresh(&pub, c, &conf, NOW + 3);
	d = hm_live_pub_acquire(&pub, NULL);
	assert_ptr_not_equal(d, b);
	assert_true(d->staggers);
	hm_live_pub_release(&pub, d);

	/* Cleared: nothing to acquire; readers keep theirs. */
	hm_live_pub_clear(&pub);
	assert_null(hm_live_pub_acquire(&pub, &fresh));
	assert_int_equal(b->view->njobs, 1);
	hm_live_pub_release(&pub, b);
	/* The next round publishes again, on a new topology copy. */
	hm_live_pub_refresh(&pub, c, &conf, NOW + 4);
	d = hm_live_pub_acquire(&pub, NULL);
	assert_non_null(d);
	assert_int_equal(d->view->njobs, 1);
	hm_live_pub_release(&pub, d);
	hm_live_pub_clear(&pub);
	hm_coord_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_publish),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
