/*
 * Unit tests for hm_traffic: link loads and alone times on hand-computed cases.
 * Expected links are read from the topology's own fields (a host's NIC links, a
 * ToR's uplinks), never from hm_topo_route, so a wrong route shows up here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_job.h"
#include "job_topo_fixture.h"

static hm_profile_t profile(double compute_s, hm_coll_t coll, double bytes, double overlap)
{
	hm_profile_t p;

	memset(&p, 0, sizeof(p));
	snprintf(p.model, sizeof(p.model), "test");
	p.compute_s = compute_s;
	p.nphases = 1;
	p.phases[0].coll = coll;
	p.phases[0].bytes = bytes;
	p.phases[0].overlap = overlap;
	return p;
}

/* Flows the phase puts on link l (0 when absent); also checks ascending order. */
static int flows_on(const hm_phase_load_t *ph, int l)
{
	for (int i = 1; i < ph->nlinks; i++)
		assert_true(ph->links[i - 1] < ph->links[i]);
	for (int i = 0; i < ph->nlinks; i++)
		if (ph->links[i] == l)
			return ph->flows[i];
	return 0;
}

static int tor_of(const hm_topo_t *t, int host)
{
	return t->rack_switch[t->hosts[host].rack];
}

/* Two 4-GPU hosts in two racks under one spine: a ring of two edges. */
static void test_two_racks(void **state)
{
	hm_topo_t *t = fixture_topo("racks=2,hosts=1,gpus=4,nics=1,nic=100G,uplink=50G");
	hm_slot_t slots[] = {{0, 4, 0}, {1, 4, 0}};
	hm_placement_t pl = {2, slots};
	hm_profile_t p = profile(0.1, HM_COLL_ALLREDUCE_RING, 1e9, 0);
	hm_traffic_t tr;
	hm_err_t err = {0};
	const hm_phase_load_t *ph;
	const hm_switch_t *tor0, *tor1;
	double edge_bytes = 2.0 * 7 / 8 * 1e9; /* N = 8 */

	(void)state;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_int_equal(tr.nphases, 1);
	ph = &tr.phases[0];
	assert_int_equal(ph->nflows, 2);
	assert_float_equal(ph->flow_bytes, edge_bytes, 1e-3);
	/* Each direction: NIC up, ToR up, spine down to the other ToR, NIC down. */
	assert_int_equal(ph->nlinks, 8);
	tor0 = &t->switches[tor_of(t, 0)];
	tor1 = &t->switches[tor_of(t, 1)];
	assert_int_equal(tor0->nparents, 1);
	assert_int_equal(flows_on(ph, t->hosts[0].nic_up_link[0]), 1);
	assert_int_equal(flows_on(ph, t->hosts[0].nic_down_link[0]), 1);
	assert_int_equal(flows_on(ph, t->hosts[1].nic_up_link[0]), 1);
	assert_int_equal(flows_on(ph, t->hosts[1].nic_down_link[0]), 1);
	assert_int_equal(flows_on(ph, tor0->up_link[0]), 1);
	assert_int_equal(flows_on(ph, tor0->down_link[0]), 1);
	assert_int_equal(flows_on(ph, tor1->up_link[0]), 1);
	assert_int_equal(flows_on(ph, tor1->down_link[0]), 1);
	/* The 50 Gbit/s uplinks are the bottleneck: 1.75 GB * 8 / 50e9 = 0.28 s. */
	assert_float_equal(tr.alone_comm_s[0], edge_bytes * 8 / 50e9, 1e-12);
	assert_float_equal(tr.alone_iter_s, 0.1 + edge_bytes * 8 / 50e9, 1e-12);
	assert_float_equal(hm_traffic_alone_iter_s(t, &p, &tr), tr.alone_iter_s, 1e-12);
	hm_traffic_free(&tr);
	hm_traffic_free(&tr); /* idempotent */
	hm_topo_free(t);
}

/* One host: everything stays inside it. */
static void test_single_host(void **state)
{
	hm_topo_t *t = fixture_topo("racks=1,hosts=2,gpus=8");
	hm_slot_t slots[] = {{1, 8, 0}};
	hm_placement_t pl = {1, slots};
	hm_profile_t p = profile(0.3, HM_COLL_ALLREDUCE_RING, 5e9, 0);
	hm_traffic_t tr;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_int_equal(tr.nphases, 1);
	assert_int_equal(tr.phases[0].nlinks, 0);
	assert_int_equal(tr.phases[0].nflows, 0);
	assert_true(tr.alone_comm_s[0] == 0);
	assert_float_equal(tr.alone_iter_s, 0.3, 1e-12);
	hm_traffic_free(&tr);
	hm_topo_free(t);
}

/* Three hosts in one rack: a ring of three edges, one flow on each NIC link. */
static void test_ring_in_rack(void **state)
{
	hm_topo_t *t = fixture_topo("racks=1,hosts=3,gpus=2,nic=100G");
	hm_slot_t slots[] = {{2, 2, 0}, {0, 2, 0}, {1, 2, 0}};
	hm_placement_t pl = {3, slots};
	hm_profile_t p = profile(0.5, HM_COLL_REDUCESCATTER_RING, 6e8, 0);
	hm_traffic_t tr;
	hm_err_t err = {0};

	(void)state;
	p.nphases = 2;
	p.phases[1].coll = HM_COLL_ALLGATHER_RING;
	p.phases[1].bytes = 6e8;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_int_equal(tr.nphases, 2);
	for (int ph = 0; ph < 2; ph++) {
		assert_int_equal(tr.phases[ph].nflows, 3);
		assert_int_equal(tr.phases[ph].nlinks, 6);
		assert_float_equal(tr.phases[ph].flow_bytes, 5.0 / 6 * 6e8, 1e-3);
		for (int h = 0; h < 3; h++) {
			assert_int_equal(flows_on(&tr.phases[ph], t->hosts[h].nic_up_link[0]), 1);
			assert_int_equal(flows_on(&tr.phases[ph], t->hosts[h].nic_down_link[0]), 1);
		}
		assert_float_equal(tr.alone_comm_s[ph], 5e8 * 8 / 100e9, 1e-12);
	}
	/* Phases run one after the other after compute. */
	assert_float_equal(tr.alone_iter_s, 0.5 + 2 * 0.04, 1e-12);
	hm_traffic_free(&tr);
	hm_topo_free(t);
}

/* Two NICs per host: two parallel flows per edge, unless a host uses one NIC. */
static void test_multi_nic(void **state)
{
	hm_topo_t *t = fixture_topo("racks=1,hosts=2,gpus=4,nics=2,nic=100G");
	hm_slot_t slots[] = {{0, 4, 0}, {1, 4, 0}};
	hm_placement_t pl = {2, slots};
	hm_profile_t p = profile(0, HM_COLL_BROADCAST_RING, 1e9, 0);
	hm_traffic_t tr;
	hm_err_t err = {0};
	const hm_phase_load_t *ph = &tr.phases[0];

	(void)state;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_int_equal(ph->nflows, 4); /* 2 edges x 2 rails */
	assert_float_equal(ph->flow_bytes, 0.5e9, 1e-3);
	assert_int_equal(ph->nlinks, 8);
	for (int h = 0; h < 2; h++)
		for (int n = 0; n < 2; n++) {
			assert_int_equal(flows_on(ph, t->hosts[h].nic_up_link[n]), 1);
			assert_int_equal(flows_on(ph, t->hosts[h].nic_down_link[n]), 1);
		}
	assert_float_equal(tr.alone_comm_s[0], 0.5e9 * 8 / 100e9, 1e-12);
	hm_traffic_free(&tr);

	/* One GPU on host 1 uses only NIC 0: k = 1, the whole edge on one flow. */
	slots[1].gpus = 1;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_int_equal(ph->nflows, 2);
	assert_float_equal(ph->flow_bytes, 1e9, 1e-3);
	assert_int_equal(flows_on(ph, t->hosts[1].nic_up_link[1]), 0);
	assert_int_equal(flows_on(ph, t->hosts[0].nic_up_link[0]), 1);
	assert_float_equal(tr.alone_comm_s[0], 1e9 * 8 / 100e9, 1e-12);
	hm_traffic_free(&tr);

	/* Host 0's GPUs all bound to NIC 1 (hwloc affinity): rail 0 leaves by NIC 1. */
	slots[1].gpus = 4;
	for (int g = 0; g < 4; g++)
		t->hosts[0].gpu_nic[g] = 1;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_int_equal(ph->nflows, 2);
	assert_int_equal(flows_on(ph, t->hosts[0].nic_up_link[1]), 1);
	assert_int_equal(flows_on(ph, t->hosts[0].nic_up_link[0]), 0);
	assert_int_equal(flows_on(ph, t->hosts[1].nic_down_link[0]), 1);
	hm_traffic_free(&tr);
	hm_topo_free(t);
}

/* All-to-all with uneven hosts: host a sends g_a * g_b * S / N to host b. */
static void test_alltoall(void **state)
{
	hm_topo_t *t = fixture_topo("racks=1,hosts=3,gpus=8,nic=100G");
	hm_slot_t slots[] = {{0, 2, 0}, {1, 6, 0}};
	hm_placement_t pl = {2, slots};
	hm_profile_t p = profile(0, HM_COLL_ALLTOALL, 8e8, 0);
	hm_traffic_t tr;
	hm_err_t err = {0};
	const hm_phase_load_t *ph = &tr.phases[0];

	(void)state;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_float_equal(ph->flow_bytes, 8e8 / 8, 1e-3);
	assert_int_equal(ph->nflows, 24);
	assert_int_equal(flows_on(ph, t->hosts[0].nic_up_link[0]), 12);
	assert_int_equal(flows_on(ph, t->hosts[1].nic_down_link[0]), 12);
	/* 2 * 6 * 8e8 / 8 = 1.2 GB each way over 100 Gbit/s. */
	assert_float_equal(tr.alone_comm_s[0], 1.2e9 * 8 / 100e9, 1e-12);
	hm_traffic_free(&tr);
	hm_topo_free(t);
}

/* Overlap: the phase may start overlap * compute before compute ends. */
static void test_overlap(void **state)
{
	hm_topo_t *t = fixture_topo("racks=1,hosts=2,gpus=1,nic=100G");
	hm_slot_t slots[] = {{0, 1, 0}, {1, 1, 0}};
	hm_placement_t pl = {2, slots};
	hm_profile_t p = profile(0.2, HM_COLL_ALLREDUCE_RING, 1.75e9, 0.5);
	hm_traffic_t tr;
	hm_err_t err = {0};
	double comm_s = 1.75e9 * 8 / 100e9; /* N = 2: 2(N-1)/N = 1 */

	(void)state;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_float_equal(tr.alone_comm_s[0], comm_s, 1e-12);
	assert_float_equal(tr.alone_iter_s, 0.1 + comm_s, 1e-12);
	hm_traffic_free(&tr);
	p.phases[0].overlap = 1; /* fully hidden when comm < compute */
	p.phases[0].bytes = 1e8;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_float_equal(tr.alone_iter_s, 0.2, 1e-12);
	/* The iteration model from hm_job.h with a second phase that cannot overlap. */
	p.nphases = 2;
	p.phases[1] = p.phases[0];
	p.phases[1].overlap = 0;
	hm_traffic_free(&tr);
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_OK);
	assert_float_equal(tr.alone_iter_s, 0.2 + 1e8 * 8 / 100e9, 1e-12);
	assert_float_equal(hm_traffic_alone_iter_s(t, &p, &tr), tr.alone_iter_s, 1e-12);
	hm_traffic_free(&tr);
	hm_topo_free(t);
}

/* Equal-cost paths: two spines give two different routes between racks. */
static void test_paths(void **state)
{
	hm_topo_t *t = fixture_topo("racks=2,hosts=1,gpus=1,spines=2");
	hm_slot_t slots[] = {{0, 1, 0}, {1, 1, 0}};
	hm_placement_t pl = {2, slots};
	hm_profile_t p = profile(0.1, HM_COLL_ALLREDUCE_RING, 1e9, 0);
	hm_traffic_t a, b;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_topo_npaths(t, 0, 1), 2);
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &a, &err), HM_OK);
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 1, &b, &err), HM_OK);
	assert_int_equal(a.phases[0].nlinks, 8);
	assert_int_equal(b.phases[0].nlinks, 8);
	assert_memory_not_equal(a.phases[0].links, b.phases[0].links, 8 * sizeof(int));
	/* Host NIC links are on every path. */
	assert_int_equal(flows_on(&a.phases[0], t->hosts[0].nic_up_link[0]), 1);
	assert_int_equal(flows_on(&b.phases[0], t->hosts[0].nic_up_link[0]), 1);
	hm_traffic_free(&a);
	hm_traffic_free(&b);
	hm_topo_free(t);
}

/* Three tiers: a ring across pods climbs ToR -> agg -> core and back down. */
static void test_clos_across_pods(void **state)
{
	hm_topo_t *t = fixture_topo("racks=4,hosts=1,gpus=2,racks_per_pod=2,aggs=2,cores=2");
	hm_slot_t slots[] = {{0, 2, 0}, {3, 2, 0}};
	hm_placement_t pl = {2, slots};
	hm_profile_t p = profile(0.1, HM_COLL_ALLREDUCE_RING, 1e9, 0);
	hm_traffic_t tr;
	hm_err_t err = {0};
	int per_level[3] = {0};

	(void)state;
	assert_int_not_equal(t->hosts[0].rack, t->hosts[3].rack);
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 5, &tr, &err), HM_OK);
	/* Per direction: NIC up, ToR->agg, agg->core, core->agg, agg->ToR, NIC down. */
	assert_int_equal(tr.phases[0].nlinks, 12);
	for (int i = 0; i < tr.phases[0].nlinks; i++) {
		const hm_link_t *l = &t->links[tr.phases[0].links[i]];

		assert_int_equal(tr.phases[0].flows[i], 1);
		assert_true(l->level >= 0 && l->level < 3);
		per_level[l->level]++;
	}
	assert_int_equal(per_level[0], 4);
	assert_int_equal(per_level[1], 4);
	assert_int_equal(per_level[2], 4);
	hm_traffic_free(&tr);
	hm_topo_free(t);
}

static void test_errors(void **state)
{
	hm_topo_t *t = fixture_topo("racks=1,hosts=2,gpus=4");
	hm_slot_t slots[] = {{0, 4, 0}, {0, 2, 0}};
	hm_placement_t pl = {2, slots};
	hm_profile_t p = profile(0.1, HM_COLL_ALLREDUCE_RING, 1e9, 0);
	hm_traffic_t tr;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "twice"));
	slots[1].host = 1;
	slots[1].gpus = 5;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "5 GPUs"));
	slots[1].gpus = 4;
	slots[1].host = 7;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "host index 7"));
	slots[1].host = 1;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, -1, &tr, &err), HM_ERR_INVAL);
	p.phases[0].overlap = 1.5;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "overlap"));
	p.phases[0].overlap = 0;
	p.nphases = HM_MAX_PHASES + 1;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_ERR_INVAL);
	p.nphases = 1;
	pl.nslots = 0;
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, &tr, &err), HM_ERR_INVAL);
	assert_int_equal(tr.nphases, 0); /* nothing left allocated on failure */
	assert_int_equal(hm_traffic_derive(t, &p, &pl, 0, NULL, &err), HM_ERR_INVAL);
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_racks),    cmocka_unit_test(test_single_host),
	    cmocka_unit_test(test_ring_in_rack), cmocka_unit_test(test_multi_nic),
	    cmocka_unit_test(test_alltoall),     cmocka_unit_test(test_overlap),
	    cmocka_unit_test(test_paths),        cmocka_unit_test(test_clos_across_pods),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
