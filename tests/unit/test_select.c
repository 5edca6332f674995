/*
 * Unit tests for select/harmonics_cons_tres' decisions without Slurm
 * (hm_select.h): the plan ranks cons_tres' own choice first on ties and the
 * uncontended candidate first otherwise; recent placements overlay the view
 * until it shows them; the AdminComment entry is replaced, not repeated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_select.h"
#include "job_topo_fixture.h"

/* 4 racks x 3 single-GPU nodes, uplinks as fast as a NIC (the Slurm test cluster). */
#define SPEC "racks=4,hosts=3,gpus=1,nic=100G,uplink=100G"

static hm_rc_t parse_fixed(const char *spec, hm_profile_t *p, hm_err_t *err)
{
	(void)spec;
	(void)err;
	memset(p, 0, sizeof(*p));
	snprintf(p->model, sizeof(p->model), "custom");
	p->compute_s = 0.3;
	p->nphases = 1;
	p->phases[0].coll = HM_COLL_ALLREDUCE_RING;
	p->phases[0].bytes = 1.25e9;
	return HM_OK;
}

typedef struct {
	hm_topo_t *t;
	hm_placement_t pl;
	hm_traffic_t tr;
	hm_lview_job_t heavy;
	hm_lview_t *v;
	hm_live_t live;
	hm_profile_t prof;
} fx_t;

/* The heavy job on hosts 0,1 (rack 1) and 3,4 (rack 2). */
static void fx_up(fx_t *f, bool with_heavy)
{
	hm_err_t err = {0};

	memset(f, 0, sizeof(*f));
	f->t = fixture_topo(SPEC);
	parse_fixed(NULL, &f->prof, &err);
	f->pl.slots = calloc(4, sizeof(hm_slot_t));
	assert_non_null(f->pl.slots);
	f->pl.nslots = 4;
	f->pl.slots[0] = (hm_slot_t){0, 1, 0};
	f->pl.slots[1] = (hm_slot_t){1, 1, 0};
	f->pl.slots[2] = (hm_slot_t){3, 1, 0};
	f->pl.slots[3] = (hm_slot_t){4, 1, 0};
	assert_int_equal(hm_traffic_derive(f->t, &f->prof, &f->pl, 0, &f->tr, &err), HM_OK);
	f->heavy = (hm_lview_job_t){.id = 100, .gpus = 4, .scheduled = true, .tr = &f->tr};
	hm_lview_job_times(&f->prof, &f->tr, &f->heavy.period_s, &f->heavy.burst_s);
	assert_int_equal(hm_lview_build(f->t, &f->heavy, with_heavy ? 1 : 0, &f->v, &err), HM_OK);
	f->live = (hm_live_t){.abi = HM_LIVE_ABI,
			      .size = sizeof(hm_live_t),
			      .topo = f->t,
			      .topo_gen = 1,
			      .view = f->v,
			      .staggers = true,
			      .profile_parse = parse_fixed};
}

static void fx_down(fx_t *f)
{
	hm_lview_free(f->v);
	hm_traffic_free(&f->tr);
	hm_placement_free(&f->pl);
	hm_topo_free(f->t);
}

/* One free node in each rack: 2, 5, 8, 11; cons_tres picks racks 1 and 2. */
static const int avail[12] = {0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1};
static const int ct_hosts[2] = {5, 2}; /* any order */
static const int ring_key[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

static hm_sel_job_t job2(const fx_t *f)
{
	return (hm_sel_job_t){.job_id = 7,
			      .profile = &f->prof,
			      .scheduled = true,
			      .gpus_per_node = 1,
			      .need = 2,
			      .avail = avail,
			      .ring_key = ring_key,
			      .ct_hosts = ct_hosts,
			      .ct_n = 2};
}

static void test_plan_avoids_heavy_uplinks(void **state)
{
	fx_t f;
	hm_sel_plan_t p;
	hm_err_t err = {0};
	hm_sel_job_t j;

	(void)state;
	fx_up(&f, true);
	j = job2(&f);
	assert_int_equal(hm_sel_plan(&f.live, f.v, &j, &p, &err), HM_OK);
	assert_int_equal(p.cons_tres, 0);
	assert_string_equal(p.c[0].rule, "cons_tres");
	assert_int_equal(p.c[0].hosts[0], 2); /* ring order */
	assert_int_equal(p.c[0].hosts[1], 5);
	assert_int_equal(p.c[0].nracks, 2);
	assert_true(p.s[0].total > 0.01); /* shares the heavy job's uplinks */
	/* The generator's packed candidate equals cons_tres' here: dropped as a duplicate. */
	for (int k = 1; k < p.n; k++)
		assert_false(p.c[k].hosts[0] == 2 && p.c[k].hosts[1] == 5);
	/* Best: racks 3 and 4, nothing shared. */
	assert_true(p.order[0] != 0);
	assert_int_equal(p.c[p.order[0]].hosts[0], 8);
	assert_int_equal(p.c[p.order[0]].hosts[1], 11);
	assert_float_equal(p.s[p.order[0]].total, 0, 0);
	/* The ranking is complete and ordered by score. */
	for (int r = 1; r < p.n; r++)
		assert_true(p.s[p.order[r]].total >=
			    p.s[p.order[r - 1]].total - HM_PLACE_SCORE_EPS);
	hm_sel_plan_free(&p);
	fx_down(&f);
}

static void test_plan_ties_go_to_cons_tres(void **state)
{
	fx_t f;
	hm_sel_plan_t p;
	hm_err_t err = {0};
	hm_sel_job_t j;

	(void)state;
	fx_up(&f, false); /* nothing runs: every candidate scores 0 */
	j = job2(&f);
	assert_int_equal(hm_sel_plan(&f.live, f.v, &j, &p, &err), HM_OK);
	assert_int_equal(p.order[0], p.cons_tres);
	hm_sel_plan_free(&p);
	/* Without cons_tres' choice, the generator's packed one leads. */
	j.ct_hosts = NULL;
	j.ct_n = 0;
	assert_int_equal(hm_sel_plan(&f.live, f.v, &j, &p, &err), HM_OK);
	assert_int_equal(p.cons_tres, -1);
	assert_int_equal(p.order[0], 0);
	assert_string_equal(p.c[0].rule, "packed");
	hm_sel_plan_free(&p);
	/* A node cons_tres chose outside the topology is refused. */
	j.ct_hosts = (int[]){2, 12};
	j.ct_n = 2;
	assert_int_equal(hm_sel_plan(&f.live, f.v, &j, &p, &err), HM_ERR_INVAL);
	/* Nothing free: nothing to rank. */
	j.ct_hosts = NULL;
	j.ct_n = 0;
	j.need = 5;
	assert_int_equal(hm_sel_plan(&f.live, f.v, &j, &p, &err), HM_ERR_NOTFOUND);
	fx_down(&f);
}

/* A placement the view does not show yet counts, until the view shows it. */
static void test_overlay(void **state)
{
	fx_t f;
	hm_sel_recent_list_t l = {0};
	hm_lview_t *ov = NULL;
	hm_traffic_t tr;
	hm_sel_plan_t p;
	hm_err_t err = {0};
	hm_sel_job_t j;

	(void)state;
	fx_up(&f, false);
	/* The heavy job was just placed by us; the view (empty) does not know it. */
	assert_int_equal(hm_traffic_derive(f.t, &f.prof, &f.pl, 0, &tr, &err), HM_OK);
	assert_int_equal(hm_sel_recent_add(&l, &f.heavy, &tr, 1, 1000, &err), HM_OK);
	assert_int_equal(tr.nphases, 0); /* moved */
	assert_int_equal(hm_sel_overlay(&l, &f.live, 1001, 1001, &ov, &err), HM_OK);
	assert_non_null(ov);
	assert_ptr_equal(ov->next, f.v);
	j = job2(&f);
	assert_int_equal(hm_sel_plan(&f.live, ov, &j, &p, &err), HM_OK);
	assert_true(p.order[0] != p.cons_tres); /* it avoids the heavy job again */
	assert_int_equal(p.c[p.order[0]].hosts[0], 8);
	hm_sel_plan_free(&p);
	hm_lview_free(ov);
	/* Too old: dropped. */
	assert_int_equal(
	    hm_sel_overlay(&l, &f.live, 1000, 1000 + HM_SEL_RECENT_MAX_S + 1, &ov, &err), HM_OK);
	assert_null(ov);
	assert_int_equal(l.n, 0);
	/* A view confirmed well after the placement that does not show it: it ended. */
	assert_int_equal(hm_traffic_derive(f.t, &f.prof, &f.pl, 0, &tr, &err), HM_OK);
	assert_int_equal(hm_sel_recent_add(&l, &f.heavy, &tr, 1, 1000, &err), HM_OK);
	assert_int_equal(
	    hm_sel_overlay(&l, &f.live, 1000 + HM_SEL_RECENT_GRACE_S - 0.5, 1010, &ov, &err),
	    HM_OK);
	assert_non_null(ov); /* not yet: the coordinator may not have seen it start */
	hm_lview_free(ov);
	assert_int_equal(hm_sel_overlay(&l, &f.live, 1000 + HM_SEL_RECENT_GRACE_S, 1010, &ov, &err),
			 HM_OK);
	assert_null(ov);
	assert_int_equal(l.n, 0);
	/* Shown by the view: dropped; another topology: dropped. */
	assert_int_equal(hm_traffic_derive(f.t, &f.prof, &f.pl, 0, &tr, &err), HM_OK);
	assert_int_equal(hm_sel_recent_add(&l, &f.heavy, &tr, 1, 1000, &err), HM_OK);
	hm_lview_t *shown = NULL;
	assert_int_equal(hm_lview_build(f.t, &f.heavy, 1, &shown, &err), HM_OK);
	hm_live_t live2 = f.live;
	live2.view = shown;
	assert_int_equal(hm_sel_overlay(&l, &live2, 1001, 1001, &ov, &err), HM_OK);
	assert_null(ov);
	assert_int_equal(l.n, 0);
	assert_int_equal(hm_traffic_derive(f.t, &f.prof, &f.pl, 0, &tr, &err), HM_OK);
	assert_int_equal(hm_sel_recent_add(&l, &f.heavy, &tr, 1, 1000, &err), HM_OK);
	live2 = f.live;
	live2.topo_gen = 2;
	assert_int_equal(hm_sel_overlay(&l, &live2, 1001, 1001, &ov, &err), HM_OK);
	assert_null(ov);
	/* Ended (select_p_job_fini): dropped at once, another job's kept. */
	assert_int_equal(hm_traffic_derive(f.t, &f.prof, &f.pl, 0, &tr, &err), HM_OK);
	assert_int_equal(hm_sel_recent_add(&l, &f.heavy, &tr, 1, 1000, &err), HM_OK);
	hm_sel_recent_forget(&l, f.heavy.id + 1);
	assert_int_equal(l.n, 1);
	hm_sel_recent_forget(&l, f.heavy.id);
	assert_int_equal(l.n, 0);
	hm_lview_free(shown);
	hm_sel_recent_free(&l);
	fx_down(&f);
}

static void test_admin_comment(void **state)
{
	char e1[192], e2[192], buf[512];

	(void)state;
	hm_sel_placed_entry(1.8e9, 0, 0.125, 2, 5, e1, sizeof(e1));
	assert_string_equal(e1, "harmonics:placed@2027-01-15T08:00:00Z score=0.0000 "
				"cons_tres=0.1250 racks=2 candidates=5;");
	hm_sel_placed_entry(1.8e9 + 60, 0.01, -1, 1, 3, e2, sizeof(e2));
	assert_non_null(strstr(e2, "cons_tres=? racks=1 candidates=3;"));
	/* Appended after others' text, then replaced in place, never repeated. */
	assert_true(hm_sel_admin_comment("ops: keep;", e1, buf, sizeof(buf)));
	assert_string_equal(buf, "ops: keep;harmonics:placed@2027-01-15T08:00:00Z score=0.0000 "
				 "cons_tres=0.1250 racks=2 candidates=5;");
	char cur[1024];
	snprintf(cur, sizeof(cur), "%.512sharmonics:e3@x p=harmonics free prio=0;", buf);
	assert_true(hm_sel_admin_comment(cur, e2, buf, sizeof(buf)));
	assert_non_null(
	    strstr(buf, "ops: keep;harmonics:placed@2027-01-15T08:01:00Z score=0.0100"));
	assert_non_null(strstr(buf, "candidates=3;harmonics:e3@x p=harmonics free prio=0;"));
	assert_null(strstr(strstr(buf, "placed@") + 1, "placed@"));
	assert_true(hm_sel_admin_comment(NULL, e1, buf, sizeof(buf)));
	assert_string_equal(buf, e1);
	assert_false(hm_sel_admin_comment("x", e1, buf, 10)); /* does not fit */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan_avoids_heavy_uplinks),
	    cmocka_unit_test(test_plan_ties_go_to_cons_tres),
	    cmocka_unit_test(test_overlay),
	    cmocka_unit_test(test_admin_comment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
