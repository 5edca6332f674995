/* Unit tests for the engine's export to placement (hm_coord_live_view). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_place_score.h"
#include "hm_spec.h"

#define NOW  1.8e9
#define PROF "iter=250ms,comm=40%,bytes=1.2GB"

/* The fixture's two racks with uplinks as fast as a NIC (100 Gbit/s), so that two
 * jobs crossing them contend (the default 400 Gbit/s carries both). */
static hm_topo_t *narrow_topo(void)
{
	char path[4096];
	const char *top = getenv("top_srcdir");
	hm_topo_opts_t opts = {.uplink_bps = 100e9};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	snprintf(path, sizeof(path), "%s/tests/fixtures/coord/topology.conf", top ? top : ".");
	if (hm_topo_load_file(path, &opts, &t, &err) != HM_OK)
		fail_msg("topology %s: %s", path, err.msg);
	return t;
}

static void add_job(hm_coord_t *c, uint32_t id, const char *nodes, const char *mode,
		    const char *profile)
{
	hm_coord_job_info_t info = {.job_id = id,
				    .name = "train",
				    .nodes = nodes,
				    .mode = mode,
				    .profile = profile,
				    .start_s = NOW - 60};
	hm_err_t err = {0};

	(void)hm_coord_job_upsert(c, &info, &err); /* unscheduled jobs say why: not a failure */
}

/* x on hosts a and b (names), scored against v. */
static double score_on(const hm_lview_t *v, const char *a, const char *b)
{
	const hm_topo_t *t = v->topo;
	hm_profile_t prof;
	hm_placement_t pl = {0};
	hm_traffic_t tr = {0};
	hm_lview_job_t x = {.id = 99, .scheduled = true, .tr = &tr};
	hm_place_score_t sc;
	hm_err_t err = {0};

	assert_int_equal(hm_spec_profile_parse(PROF, &prof, &err), HM_OK);
	pl.slots = calloc(2, sizeof(*pl.slots));
	assert_non_null(pl.slots);
	pl.slots[0] = (hm_slot_t){hm_topo_host_index(t, a), 8, 0};
	pl.slots[1] = (hm_slot_t){hm_topo_host_index(t, b), 8, 0};
	pl.nslots = 2;
	assert_int_equal(hm_traffic_derive(t, &prof, &pl, 0, &tr, &err), HM_OK);
	hm_lview_job_times(&prof, &tr, &x.period_s, &x.burst_s);
	assert_int_equal(hm_place_score(v, &x, NULL, &sc, &err), HM_OK);
	hm_traffic_free(&tr);
	hm_placement_free(&pl);
	return sc.total;
}

static void test_live_view(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_topo_t *fresh = NULL, *topo = NULL, *other = NULL;
	hm_lview_t *v = NULL;
	hm_coord_measure_t m = {.iter_s = 0.5, .compute_s = 0.15, .comm_s = 0.3};
	unsigned long sig = 0, sig1;
	bool changed;
	hm_err_t err = {0};

	(void)state;
	fixture_conf(&conf);
	assert_int_equal(hm_coord_create(&conf, narrow_topo(), &c, &err), HM_OK);
	assert_int_equal(hm_coord_set_policy_ops(c, &script_policy, &err), HM_OK);

	/* Empty table: a view of nothing on a clone of the engine's topology. */
	assert_int_equal(hm_coord_live_view(c, NULL, &fresh, &sig, &v, &err), HM_OK);
	assert_non_null(fresh);
	assert_non_null(v);
	assert_int_equal(v->njobs, 0);
	assert_ptr_equal(v->topo, fresh);
	assert_int_equal(fresh->nhosts, 8);
	topo = fresh;
	hm_lview_free(v);
	/* Nothing changed: nothing new. */
	sig1 = sig;
	assert_int_equal(hm_coord_live_view(c, topo, &fresh, &sig, &v, &err), HM_OK);
	assert_null(fresh);
	assert_null(v);
	assert_int_equal(sig, sig1);

	/* One scheduled job across the racks; one that did not ask; one without a profile. */
	add_job(c, 1, "n[4-5]", "auto", PROF);
	add_job(c, 2, "n[1-2]", "off", PROF);
	add_job(c, 3, "n[6-7]", "auto", "");
	assert_int_equal(hm_coord_decide(c, NOW, &changed, &err), HM_OK);
	assert_int_equal(hm_coord_live_view(c, topo, &fresh, &sig, &v, &err), HM_OK);
	assert_null(fresh); /* same topology: reused */
	assert_non_null(v);
	assert_int_not_equal(sig, sig1);
	assert_int_equal(v->njobs, 1);
	assert_int_equal(v->jobs[0].id, 1);
	assert_true(v->jobs[0].scheduled); /* the script policy staggers; fair would not */
	/* 250 ms declared: contention-free compute 150 ms + 1.2 GB ring at 100 Gbit/s. */
	assert_true(v->jobs[0].period_s > 0.15 && v->jobs[0].period_s < 0.5);
	assert_true(v->rack_up_util[0] > 0 && v->rack_up_util[1] > 0);
	/* A job across the racks shares the uplinks; one inside rack 1 does not. */
	assert_true(score_on(v, "n1", "n8") > 0.01);
	assert_float_equal(score_on(v, "n2", "n3"), 0, 0);
	hm_lview_free(v);

	/* A measured period replaces the contention-free one. */
	assert_int_equal(hm_coord_job_measure(c, 1, &m, &err), HM_OK);
	assert_int_equal(hm_coord_decide(c, NOW + 20, &changed, &err), HM_OK);
	assert_int_equal(hm_coord_live_view(c, topo, &fresh, &sig, &v, &err), HM_OK);
	assert_non_null(v);
	assert_float_equal(v->jobs[0].period_s, 0.5, 1e-12);
	hm_lview_free(v);

	/* Another topology than the engine's: a fresh clone again. */
	other = hm_topo_clone(topo);
	assert_non_null(other);
	other->links[0].capacity_bps *= 2;
	assert_int_equal(hm_coord_live_view(c, other, &fresh, &sig, &v, &err), HM_OK);
	assert_non_null(fresh);
	assert_ptr_equal(v->topo, fresh);
	hm_lview_free(v);
	hm_topo_free(fresh);
	hm_topo_free(other);
	hm_topo_free(topo);
	hm_coord_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_live_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
