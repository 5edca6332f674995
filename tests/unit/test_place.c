/* Unit tests for the default placement and the cluster state (hm_place.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_job.h"
#include "job_topo_fixture.h"

/* 2 racks x 4 hosts x 8 GPUs = 64 GPUs; hosts 0-3 in rack 0, 4-7 in rack 1. */
#define SPEC "racks=2,hosts=4,gpus=8"

static hm_job_t job_of(int gpus, const char *nodes)
{
	hm_job_t j;

	memset(&j, 0, sizeof(j));
	snprintf(j.name, sizeof(j.name), "j%d", gpus);
	j.gpus = gpus;
	j.nodes = (char *)nodes;
	return j;
}

static int total_free(const hm_cluster_state_t *cs)
{
	int n = 0;

	for (int h = 0; h < cs->topo->nhosts; h++)
		n += cs->free_gpus[h];
	return n;
}

static void expect_slots(const hm_placement_t *p, const hm_slot_t *want, int n)
{
	assert_int_equal(p->nslots, n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(p->slots[i].host, want[i].host);
		assert_int_equal(p->slots[i].gpus, want[i].gpus);
	}
}

static void test_single_host_first_fit(void **state)
{
	hm_topo_t *t = fixture_topo(SPEC);
	hm_cluster_state_t cs;
	hm_placement_t p[9];
	hm_job_t one = job_of(1, NULL), four = job_of(4, NULL);
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(t->hosts[3].rack, t->hosts[0].rack);
	assert_int_not_equal(t->hosts[4].rack, t->hosts[0].rack);
	assert_int_equal(hm_cluster_state_init(&cs, t), HM_OK);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(hm_place_default(&cs, &one, &p[i], &err), HM_OK);
		expect_slots(&p[i], (hm_slot_t[]){{0, 1, 0}}, 1);
	}
	assert_int_equal(cs.free_gpus[0], 0);
	assert_int_equal(hm_place_default(&cs, &one, &p[8], &err), HM_OK);
	expect_slots(&p[8], (hm_slot_t[]){{1, 1, 0}}, 1);
	/* Host 0 gets one GPU back: the next 1-GPU job takes it (index order), but a
	 * 4-GPU job goes to host 1, the first host with 4 free. */
	hm_place_release(&cs, &p[3]);
	hm_placement_free(&p[3]);
	assert_int_equal(cs.free_gpus[0], 1);
	assert_int_equal(hm_place_default(&cs, &four, &p[3], &err), HM_OK);
	expect_slots(&p[3], (hm_slot_t[]){{1, 4, 0}}, 1);
	assert_int_equal(cs.free_gpus[1], 3);
	assert_int_equal(cs.free_gpus[0], 1);
	hm_place_release(&cs, &p[3]);
	hm_placement_free(&p[3]);
	assert_int_equal(hm_place_default(&cs, &one, &p[3], &err), HM_OK);
	expect_slots(&p[3], (hm_slot_t[]){{0, 1, 0}}, 1);
	for (int i = 0; i < 9; i++)
		hm_placement_free(&p[i]);
	hm_cluster_state_free(&cs);
	hm_cluster_state_free(&cs); /* idempotent */
	hm_topo_free(t);
}

static void test_rack_packing(void **state)
{
	hm_topo_t *t = fixture_topo(SPEC);
	hm_cluster_state_t cs;
	hm_placement_t a, b, c;
	hm_job_t j16 = job_of(16, NULL), j4 = job_of(4, NULL), j40 = job_of(40, NULL);
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_cluster_state_init(&cs, t), HM_OK);
	/* Empty cluster: the first rack, two whole hosts. */
	assert_int_equal(hm_place_default(&cs, &j16, &a, &err), HM_OK);
	expect_slots(&a, (hm_slot_t[]){{0, 8, 0}, {1, 8, 0}}, 2);
	hm_place_release(&cs, &a);
	hm_placement_free(&a);

	/* Host 0 half used: fewest hosts is 1 and 2 (8 free each), not 0 and 1 and 2. */
	assert_int_equal(hm_place_default(&cs, &j4, &a, &err), HM_OK);
	expect_slots(&a, (hm_slot_t[]){{0, 4, 0}}, 1);
	assert_int_equal(hm_place_default(&cs, &j16, &b, &err), HM_OK);
	expect_slots(&b, (hm_slot_t[]){{1, 8, 0}, {2, 8, 0}}, 2);
	/* Rack 0 has 12 free (4 + 8), rack 1 has 32: a 16-GPU job goes to rack 1. */
	assert_int_equal(hm_place_default(&cs, &j16, &c, &err), HM_OK);
	expect_slots(&c, (hm_slot_t[]){{4, 8, 0}, {5, 8, 0}}, 2);
	hm_place_release(&cs, &c);
	hm_placement_free(&c);
	/* 40 GPUs: no rack holds it; racks most-free first (rack 1: 32, rack 0: 12),
	 * hosts most-free first, ring order rack then index. */
	assert_int_equal(hm_place_default(&cs, &j40, &c, &err), HM_OK);
	expect_slots(&c, (hm_slot_t[]){{3, 8, 0}, {4, 8, 0}, {5, 8, 0}, {6, 8, 0}, {7, 8, 0}}, 5);
	assert_int_equal(total_free(&cs), 64 - 4 - 16 - 40);
	hm_place_release(&cs, &a);
	hm_place_release(&cs, &b);
	hm_place_release(&cs, &c);
	assert_int_equal(total_free(&cs), 64);
	hm_placement_free(&a);
	hm_placement_free(&b);
	hm_placement_free(&c);
	hm_cluster_state_free(&cs);
	hm_topo_free(t);
}

/* Best fit between racks needing the same number of hosts: the tighter rack. */
static void test_best_fit_rack(void **state)
{
	hm_topo_t *t = fixture_topo(SPEC);
	hm_cluster_state_t cs;
	hm_placement_t p;
	hm_job_t j12 = job_of(12, NULL);
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_cluster_state_init(&cs, t), HM_OK);
	/* Rack 0: 8+8+0+0 free; rack 1: 8+8+8+8. Both need two hosts; rack 0 is tighter. */
	cs.free_gpus[2] = cs.free_gpus[3] = 0;
	cs.free_gpus[0] = 4;
	assert_int_equal(hm_place_default(&cs, &j12, &p, &err), HM_OK);
	expect_slots(&p, (hm_slot_t[]){{0, 4, 0}, {1, 8, 0}}, 2);
	hm_placement_free(&p);
	/* Rack 0: 4 free on each host (3 hosts for 12), rack 1 whole (2 hosts): fewer
	 * hosts wins over the tighter rack. */
	for (int h = 0; h < 4; h++)
		cs.free_gpus[h] = 4;
	for (int h = 4; h < 8; h++)
		cs.free_gpus[h] = 8;
	assert_int_equal(hm_place_default(&cs, &j12, &p, &err), HM_OK);
	expect_slots(&p, (hm_slot_t[]){{4, 8, 0}, {5, 4, 0}}, 2);
	hm_placement_free(&p);
	hm_cluster_state_free(&cs);
	hm_topo_free(t);
}

static void test_queue_and_never(void **state)
{
	hm_topo_t *t = fixture_topo(SPEC);
	hm_cluster_state_t cs;
	hm_placement_t big, p;
	hm_job_t j60 = job_of(60, NULL), j8 = job_of(8, NULL), j65 = job_of(65, NULL),
		 j0 = job_of(0, NULL);
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_cluster_state_init(&cs, t), HM_OK);
	assert_int_equal(hm_place_default(&cs, &j65, &p, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "65"));
	assert_non_null(strstr(err.msg, "64"));
	assert_null(p.slots);
	assert_int_equal(hm_place_default(&cs, &j0, &p, &err), HM_ERR_INVAL);
	assert_int_equal(hm_place_default(&cs, &j60, &big, &err), HM_OK);
	assert_int_equal(total_free(&cs), 4);
	/* Fits the cluster, not now: queue. The state is unchanged. */
	assert_int_equal(hm_place_default(&cs, &j8, &p, &err), HM_ERR_PLACE);
	assert_int_equal(hm_place_default(&cs, &j60, &p, &err), HM_ERR_PLACE);
	assert_int_equal(total_free(&cs), 4);
	hm_place_release(&cs, &big);
	hm_placement_free(&big);
	assert_int_equal(hm_place_default(&cs, &j8, &p, &err), HM_OK);
	hm_placement_free(&p);

	/* Every host 7 free: 56 free GPUs, but an 8-GPU (single-host) job waits. */
	for (int h = 0; h < t->nhosts; h++)
		cs.free_gpus[h] = 7;
	assert_int_equal(hm_place_default(&cs, &j8, &p, &err), HM_ERR_PLACE);
	assert_non_null(strstr(err.msg, "j8"));
	hm_cluster_state_free(&cs);
	hm_topo_free(t);
}

static void test_fixed_nodes(void **state)
{
	hm_topo_t *t = fixture_topo(SPEC);
	hm_cluster_state_t cs;
	hm_placement_t p, q;
	char nodes[256];
	hm_job_t j;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_cluster_state_init(&cs, t), HM_OK);
	/* Listed order is the ring order; 6 GPUs over 4 hosts: 2, 2, 1, 1. */
	snprintf(nodes, sizeof(nodes), "%s,%s,%s,%s", t->hosts[5].name, t->hosts[0].name,
		 t->hosts[1].name, t->hosts[7].name);
	j = job_of(6, nodes);
	assert_int_equal(hm_place_default(&cs, &j, &p, &err), HM_OK);
	expect_slots(&p, (hm_slot_t[]){{5, 2, 0}, {0, 2, 0}, {1, 1, 0}, {7, 1, 0}}, 4);
	assert_int_equal(cs.free_gpus[5], 6);

	/* The same list again needs 2 on host 5 (6 free) ... fits; 16 on 2 hosts does not now. */
	snprintf(nodes, sizeof(nodes), "%s,%s", t->hosts[5].name, t->hosts[6].name);
	j = job_of(16, nodes);
	assert_int_equal(hm_place_default(&cs, &j, &q, &err), HM_ERR_PLACE);
	assert_non_null(strstr(err.msg, t->hosts[5].name));
	/* More GPUs than the hosts have: never. */
	j = job_of(20, nodes);
	assert_int_equal(hm_place_default(&cs, &j, &q, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "10 GPUs"));
	/* Unknown host: the error names it. */
	j = job_of(2, "nosuchhost");
	assert_int_equal(hm_place_default(&cs, &j, &q, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "'nosuchhost'"));
	/* Bad hostlist syntax, and more hosts than GPUs. */
	j = job_of(2, "n[0001-");
	assert_int_equal(hm_place_default(&cs, &j, &q, &err), HM_ERR_INVAL);
	snprintf(nodes, sizeof(nodes), "%s,%s,%s", t->hosts[2].name, t->hosts[3].name,
		 t->hosts[4].name);
	j = job_of(2, nodes);
	assert_int_equal(hm_place_default(&cs, &j, &q, &err), HM_ERR_INVAL);
	/* Duplicate host. */
	snprintf(nodes, sizeof(nodes), "%s,%s", t->hosts[2].name, t->hosts[2].name);
	j = job_of(2, nodes);
	assert_int_equal(hm_place_default(&cs, &j, &q, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "twice"));
	assert_int_equal(total_free(&cs), 58);
	hm_place_release(&cs, &p);
	assert_int_equal(total_free(&cs), 64);
	hm_placement_free(&p);
	hm_cluster_state_free(&cs);
	hm_topo_free(t);
}

/* A hand-built topology without switches (nracks 0): hosts still pack. */
static void test_no_racks(void **state)
{
	hm_host_t hosts[3];
	hm_topo_t t;
	hm_cluster_state_t cs;
	hm_placement_t p;
	hm_job_t j = job_of(12, NULL);
	hm_err_t err = {0};

	(void)state;
	memset(hosts, 0, sizeof(hosts));
	memset(&t, 0, sizeof(t));
	for (int h = 0; h < 3; h++) {
		hosts[h].gpus = 8;
		hosts[h].nics = 1;
		hosts[h].rack = -1;
	}
	t.nhosts = 3;
	t.hosts = hosts;
	assert_int_equal(hm_cluster_state_init(&cs, &t), HM_OK);
	cs.free_gpus[0] = 2;
	assert_int_equal(hm_place_default(&cs, &j, &p, &err), HM_OK);
	expect_slots(&p, (hm_slot_t[]){{1, 8, 0}, {2, 4, 0}}, 2);
	hm_placement_free(&p);
	j.gpus = 20;
	assert_int_equal(hm_place_default(&cs, &j, &p, &err), HM_ERR_PLACE);
	j.gpus = 25;
	assert_int_equal(hm_place_default(&cs, &j, &p, &err), HM_ERR_INVAL);
	hm_cluster_state_free(&cs);
}

/* Placements feed hm_traffic_derive: a job spanning racks crosses ToR uplinks. */
static void test_place_then_traffic(void **state)
{
	hm_topo_t *t = fixture_topo(SPEC);
	hm_cluster_state_t cs;
	hm_placement_t p;
	hm_job_t j = job_of(40, NULL);
	hm_traffic_t tr;
	hm_err_t err = {0};
	int uplinks = 0;

	(void)state;
	assert_int_equal(hm_profile_from_model("bert-large", &j.profile, &err), HM_OK);
	assert_int_equal(hm_cluster_state_init(&cs, t), HM_OK);
	assert_int_equal(hm_place_default(&cs, &j, &p, &err), HM_OK);
	assert_int_equal(p.nslots, 5);
	assert_int_equal(hm_traffic_derive(t, &j.profile, &p, 0, &tr, &err), HM_OK);
	/* The ring crosses between the racks once each way: 2 ToR up + 2 ToR down links. */
	for (int i = 0; i < tr.phases[0].nlinks; i++)
		uplinks += t->links[tr.phases[0].links[i]].kind == HM_LINK_SW_UP ||
			   t->links[tr.phases[0].links[i]].kind == HM_LINK_SW_DOWN;
	assert_int_equal(uplinks, 4);
	assert_true(tr.alone_iter_s > j.profile.compute_s);
	hm_traffic_free(&tr);
	hm_placement_free(&p);
	hm_cluster_state_free(&cs);
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_single_host_first_fit), cmocka_unit_test(test_rack_packing),
	    cmocka_unit_test(test_best_fit_rack),         cmocka_unit_test(test_queue_and_never),
	    cmocka_unit_test(test_fixed_nodes),           cmocka_unit_test(test_no_racks),
	    cmocka_unit_test(test_place_then_traffic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
