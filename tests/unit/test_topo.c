/* Unit tests for hm_topo: generator, spec parser, routes, ECMP, rack ownership. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "hm_clock.h"
#include "hm_topo.h"

static hm_topo_t *gen(const char *spec)
{
	hm_topo_gen_t g;
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	if (hm_topo_gen_parse(spec, &g, &err) != HM_OK)
		fail_msg("spec '%s': %s", spec, err.msg);
	if (hm_topo_generate(&g, &t, &err) != HM_OK)
		fail_msg("generate '%s': %s", spec, err.msg);
	assert_non_null(t);
	return t;
}

/* A route must leave by the source NIC, climb, turn once, descend to the destination NIC. */
static void check_route(const hm_topo_t *t, int s, int sn, int d, int dn, const int *l, int n)
{
	int cur, i = 1;

	assert_true(n >= 2 && n <= HM_MAX_ROUTE_LINKS);
	assert_int_equal(l[0], t->hosts[s].nic_up_link[sn]);
	assert_int_equal(l[n - 1], t->hosts[d].nic_down_link[dn]);
	assert_int_equal(t->links[l[0]].kind, HM_LINK_NIC_UP);
	assert_int_equal(t->links[l[n - 1]].kind, HM_LINK_NIC_DOWN);
	cur = t->links[l[0]].upper;
	assert_int_equal(cur, t->rack_switch[t->hosts[s].rack]);
	for (; i < n - 1 && t->links[l[i]].kind == HM_LINK_SW_UP; i++) {
		assert_int_equal(t->links[l[i]].lower, cur);
		cur = t->links[l[i]].upper;
	}
	for (; i < n - 1; i++) {
		assert_int_equal(t->links[l[i]].kind, HM_LINK_SW_DOWN);
		assert_int_equal(t->links[l[i]].upper, cur);
		cur = t->links[l[i]].lower;
	}
	assert_int_equal(cur, t->rack_switch[t->hosts[d].rack]);
	assert_int_equal(t->links[l[n - 1]].upper, cur);
}

/* Route every equal-cost path between s and d; check each and that they are distinct. */
static int distinct_paths(const hm_topo_t *t, int s, int d, int expect_links)
{
	int np = hm_topo_npaths(t, s, d);
	int(*seen)[HM_MAX_ROUTE_LINKS] = calloc((size_t)np, sizeof(*seen));

	assert_non_null(seen);
	for (int p = 0; p < np; p++) {
		int n = hm_topo_route(t, s, 0, d, 0, p, seen[p]);

		assert_int_equal(n, expect_links);
		check_route(t, s, 0, d, 0, seen[p], n);
		for (int q = 0; q < p; q++)
			assert_memory_not_equal(seen[p], seen[q], sizeof(int) * (size_t)n);
	}
	/* path_idx wraps modulo npaths, negatives included */
	int again[HM_MAX_ROUTE_LINKS];
	assert_int_equal(hm_topo_route(t, s, 0, d, 0, np + 1, again), expect_links);
	assert_memory_equal(again, seen[1 % np], sizeof(int) * (size_t)expect_links);
	assert_int_equal(hm_topo_route(t, s, 0, d, 0, -1, again), expect_links);
	assert_memory_equal(again, seen[np - 1], sizeof(int) * (size_t)expect_links);
	free(seen);
	return np;
}

static void test_two_tier(void **state)
{
	hm_topo_t *t = gen("racks=4,hosts=2,gpus=8,nics=1,spines=2");
	int l[HM_MAX_ROUTE_LINKS];
	char buf[128];

	assert_int_equal(t->nracks, 4);
	assert_int_equal(t->nhosts, 8);
	assert_int_equal(t->nswitches, 6);
	assert_int_equal(t->nlevels, 2);
	assert_int_equal(t->nlinks, 8 * 2 + 4 * 2 * 2);
	assert_int_equal(hm_topo_gpus(t), 64);
	assert_string_equal(t->hosts[0].name, "n0001");
	assert_string_equal(t->hosts[7].name, "n0008");
	assert_int_equal(hm_topo_host_index(t, "n0005"), 4);
	assert_int_equal(hm_topo_host_index(t, "n0009"), -1);
	assert_int_equal(hm_topo_host_index(t, NULL), -1);
	for (int r = 0; r < t->nracks; r++) {
		assert_int_equal(t->switches[t->rack_switch[r]].level, 0);
		assert_int_equal(t->switches[t->rack_switch[r]].rack, r);
		assert_int_equal(t->switches[t->rack_switch[r]].nparents, 2);
	}
	/* same host: stays inside */
	assert_int_equal(hm_topo_route(t, 3, 0, 3, 0, 0, l), 0);
	assert_int_equal(hm_topo_npaths(t, 3, 3), 1);
	/* same rack: NIC up, NIC down */
	assert_int_equal(hm_topo_route(t, 0, 0, 1, 0, 5, l), 2);
	check_route(t, 0, 0, 1, 0, l, 2);
	assert_int_equal(hm_topo_npaths(t, 0, 1), 1);
	/* across racks: one spine each way, two spines = two paths */
	assert_int_equal(distinct_paths(t, 0, 7, 4), 2);
	/* bad arguments */
	assert_int_equal(hm_topo_route(t, 0, 1, 7, 0, 0, l), -1);
	assert_int_equal(hm_topo_route(t, -1, 0, 7, 0, 0, l), -1);
	assert_int_equal(hm_topo_route(t, 0, 0, 8, 0, 0, l), -1);
	assert_int_equal(hm_topo_npaths(t, 0, 99), 0);
	hm_topo_describe(t, buf, sizeof(buf));
	assert_string_equal(buf, "4 racks, 8 hosts, 64 GPUs, 2 levels, 6 switches, 32 links");
	hm_topo_free(t);
	hm_topo_free(NULL);
}

static void test_clos(void **state)
{
	hm_topo_t *t = gen("racks=8,hosts=2,pods=2,aggs=2,cores=3");
	int l[HM_MAX_ROUTE_LINKS];

	assert_int_equal(t->nlevels, 3);
	assert_int_equal(t->nswitches, 8 + 4 + 3);
	/* hosts 0,1 rack 0 (pod 1); hosts 2,3 rack 1 (pod 1); host 15 rack 7 (pod 2) */
	assert_int_equal(hm_topo_npaths(t, 0, 2), 2);
	assert_int_equal(distinct_paths(t, 0, 2, 4), 2);
	/* cross-pod: 2 aggs up x 3 cores x 2 aggs down */
	assert_int_equal(hm_topo_npaths(t, 0, 15), 12);
	assert_int_equal(distinct_paths(t, 0, 15, 6), 12);
	assert_int_equal(hm_topo_route(t, 15, 0, 0, 0, 3, l), 6);
	check_route(t, 15, 0, 0, 0, l, 6);
	/* levels of the links on a cross-pod route: 0 1 2 2 1 0 */
	hm_topo_route(t, 0, 0, 15, 0, 0, l);
	const int lv[] = {0, 1, 2, 2, 1, 0};
	for (int i = 0; i < 6; i++)
		assert_int_equal(t->links[l[i]].level, lv[i]);
	hm_topo_free(t);
}

/* A clone answers every query as the original, and owns all it points to. */
static void test_clone(void **state)
{
	hm_topo_t *t = gen("racks=8,hosts=2,pods=2,aggs=2,cores=3"), *c;
	int a[HM_MAX_ROUTE_LINKS], b[HM_MAX_ROUTE_LINKS];
	char da[256], db[256];

	(void)state;
	assert_null(hm_topo_clone(NULL));
	c = hm_topo_clone(t);
	assert_non_null(c);
	assert_ptr_not_equal(c->hosts, t->hosts);
	assert_ptr_not_equal(c->hosts[3].name, t->hosts[3].name);
	assert_ptr_not_equal(c->switches[0].parents, t->switches[0].parents);
	hm_topo_describe(t, da, sizeof(da));
	hm_topo_describe(c, db, sizeof(db));
	assert_string_equal(da, db);
	for (int h = 0; h < t->nhosts; h++)
		assert_int_equal(hm_topo_host_index(c, t->hosts[h].name), h);
	for (int p = 0; p < hm_topo_npaths(t, 0, 15); p++) {
		int n = hm_topo_route(t, 0, 0, 15, 0, p, a);

		assert_int_equal(hm_topo_route(c, 0, 0, 15, 0, p, b), n);
		assert_memory_equal(a, b, sizeof(int) * (size_t)n);
	}
	hm_topo_free(t); /* the clone stands alone */
	assert_int_equal(hm_topo_npaths(c, 0, 15), 12);
	assert_int_equal(hm_topo_host_index(c, c->hosts[15].name), 15);
	hm_topo_free(c);
}

static void test_ecmp_cap(void **state)
{
	/* 4 x 8 x 4 = 128 equal-cost paths between pods, capped at HM_MAX_PATHS */
	hm_topo_t *t = gen("racks=4,hosts=1,pods=2,aggs=4,cores=8");

	assert_int_equal(hm_topo_npaths(t, 0, 3), HM_MAX_PATHS);
	assert_int_equal(distinct_paths(t, 0, 3, 6), HM_MAX_PATHS);
	hm_topo_free(t);
}

static void test_rack_ownership(void **state)
{
	hm_topo_t *t = gen("racks=6,hosts=3,nics=2,pods=3,aggs=2,cores=2");
	int *owned = calloc((size_t)t->nracks, sizeof(int));
	int unowned = 0;

	for (int i = 0; i < t->nlinks; i++) {
		const hm_link_t *k = &t->links[i];

		if (k->kind == HM_LINK_NIC_UP || k->kind == HM_LINK_NIC_DOWN) {
			assert_int_equal(k->rack, t->hosts[k->host].rack);
			assert_int_equal(k->level, 0);
			assert_int_equal(k->lower, -1);
		} else if (t->switches[k->lower].level == 0) {
			assert_int_equal(k->rack, t->switches[k->lower].rack);
			assert_int_equal(k->host, -1);
		} else {
			assert_int_equal(k->rack, -1);
		}
		if (k->rack >= 0)
			owned[k->rack]++;
		else
			unowned++;
	}
	/* per rack: 3 hosts x 2 NICs x 2 directions + 2 uplinks x 2 directions */
	for (int r = 0; r < t->nracks; r++)
		assert_int_equal(owned[r], 3 * 2 * 2 + 2 * 2);
	/* agg <-> core: 6 aggs x 2 cores x 2 directions */
	assert_int_equal(unowned, 6 * 2 * 2);
	/* GPUs round robin over NICs, routes use the NIC asked for */
	for (int g = 0; g < 8; g++)
		assert_int_equal(t->hosts[0].gpu_nic[g], g % 2);
	int l[HM_MAX_ROUTE_LINKS];
	int n = hm_topo_route(t, 0, 1, 17, 1, 0, l);
	check_route(t, 0, 1, 17, 1, l, n);
	free(owned);
	hm_topo_free(t);
}

static double uplink_bps(const hm_topo_t *t, int sw, int k)
{
	return t->links[t->switches[sw].up_link[k]].capacity_bps;
}

static void test_oversubscription(void **state)
{
	hm_topo_t *t = gen("racks=4,hosts=8,nics=1,nic=100G,oversub=2,cores=2");
	double sum = 0;

	/* rack NIC bandwidth 800G / oversub 2 = 400G over 2 uplinks */
	for (int k = 0; k < 2; k++)
		sum += uplink_bps(t, t->rack_switch[0], k);
	assert_float_equal(uplink_bps(t, t->rack_switch[0], 0), 200e9, 1);
	assert_float_equal(sum, 8 * 100e9 / 2, 1);
	assert_float_equal(t->links[t->hosts[0].nic_up_link[0]].capacity_bps, 100e9, 1);
	hm_topo_free(t);

	t = gen("racks=4,hosts=8,nic=200G,uplink=400G,oversub=3:1,cores=2");
	assert_float_equal(uplink_bps(t, t->rack_switch[3], 1), 400e9, 1);
	assert_float_equal(t->links[t->hosts[0].nic_down_link[0]].capacity_bps, 200e9, 1);
	hm_topo_free(t);

	/* Clos: ToR 8x100G/4 over 2 aggs = 100G each; aggs non-blocking: 2 racks x 100G / 4 cores
	 */
	t = gen("racks=4,hosts=8,oversub=4,pods=2,aggs=2,cores=4");
	assert_float_equal(uplink_bps(t, t->rack_switch[0], 0), 100e9, 1);
	int agg = t->switches[t->rack_switch[0]].parents[0];
	assert_int_equal(t->switches[agg].level, 1);
	assert_int_equal(t->switches[agg].nparents, 4);
	assert_float_equal(uplink_bps(t, agg, 0), 2 * 100e9 / 4, 1);
	hm_topo_free(t);
}

static void test_gen_parse(void **state)
{
	hm_topo_gen_t g;
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	assert_int_equal(hm_topo_gen_parse("racks=4, hosts=8 ,nic=100Gbps,pods=2", &g, &err),
			 HM_OK);
	assert_int_equal(g.racks, 4);
	assert_int_equal(g.hosts_per_rack, 8);
	assert_int_equal(g.racks_per_pod, 2);
	assert_float_equal(g.nic_bps, 100e9, 1);
	assert_int_equal(hm_topo_gen_parse("racks=4,switches=3", &g, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "'switches'"));
	assert_non_null(strstr(err.msg, "accepted keys: racks"));
	assert_int_equal(hm_topo_gen_parse("racks=four", &g, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "'four'"));
	assert_int_equal(hm_topo_gen_parse("racks", &g, &err), HM_ERR_PARSE);
	assert_int_equal(hm_topo_gen_parse("racks=5,pods=2", &g, &err), HM_ERR_RANGE);
	assert_non_null(strstr(err.msg, "multiple of pods"));
	assert_int_equal(hm_topo_gen_parse("oversub=0.5", &g, &err), HM_ERR_RANGE);
	assert_int_equal(hm_topo_gen_parse("gpus=17", &g, &err), HM_ERR_RANGE);
	/* The topology's host cap, named by the generator before anything is built. */
	assert_int_equal(hm_topo_gen_parse("racks=4097,hosts=32", &g, &err), HM_OK);
	assert_int_equal(hm_topo_generate(&g, &t, &err), HM_ERR_RANGE);
	assert_null(t);
	assert_non_null(strstr(err.msg, "4097 racks x 32 hosts is too large"));
	assert_non_null(strstr(err.msg, "131072 hosts"));
	assert_int_equal(hm_topo_gen_parse("nic=fast", &g, &err), HM_ERR_PARSE);
	/* defaults: 4 racks of 8 hosts, 8 GPUs, one spine */
	assert_int_equal(hm_topo_gen_parse("", &g, &err), HM_OK);
	assert_int_equal(hm_topo_generate(&g, &t, &err), HM_OK);
	assert_int_equal(t->nhosts, 32);
	assert_int_equal(hm_topo_gpus(t), 256);
	assert_int_equal(t->nswitches, 5);
	hm_topo_free(t);
	/* one rack: no spine */
	assert_int_equal(hm_topo_gen_parse("racks=1,hosts=4", &g, &err), HM_OK);
	assert_int_equal(hm_topo_generate(&g, &t, &err), HM_OK);
	assert_int_equal(t->nswitches, 1);
	assert_int_equal(t->nlevels, 1);
	assert_int_equal(t->nlinks, 8);
	hm_topo_free(t);
	/* direct struct misuse */
	g = (hm_topo_gen_t){.racks = 5, .racks_per_pod = 2};
	assert_int_equal(hm_topo_generate(&g, &t, &err), HM_ERR_RANGE);
	assert_null(t);
}

/* 131,072 GPUs: generation and routing must stay fast (no O(hosts^2) work). */
static void test_scale(void **state)
{
	double a, b, c;
	hm_topo_t *t;
	int l[HM_MAX_ROUTE_LINKS];
	long total = 0;

	a = hm_mono_s();
	t = gen("racks=512,hosts=32,gpus=8,nics=1,pods=16,aggs=4,cores=16");
	b = hm_mono_s();
	assert_int_equal(hm_topo_gpus(t), 131072);
	assert_int_equal(t->nhosts, 16384);
	assert_string_equal(t->hosts[16383].name, "n16384");
	assert_int_equal(hm_topo_host_index(t, "n12345"), 12344);
	for (int i = 0; i < 100000; i++) {
		int s = (int)(((unsigned)i * 2654435761u) % 16384u), d = (i * 7919) % 16384;
		int n = hm_topo_route(t, s, 0, d, 0, i, l);

		assert_true(n >= 0);
		total += n;
	}
	c = hm_mono_s();
	double gen_s = b - a, route_s = c - b;
	printf("# scale: generate 16384 hosts in %.3f s, 100000 routes in %.3f s (%.2f us each, "
	       "%ld links)\n",
	       gen_s, route_s, route_s * 1e6 / 100000, total);
	assert_int_equal(hm_topo_npaths(t, 0, 16383),
			 4 * 16 * 4 > HM_MAX_PATHS ? HM_MAX_PATHS : 256);
	/* generous bounds: a quadratic algorithm would take minutes */
	assert_true(gen_s < 10);
	assert_true(route_s < 20);
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_tier),
	    cmocka_unit_test(test_clos),
	    cmocka_unit_test(test_clone),
	    cmocka_unit_test(test_ecmp_cap),
	    cmocka_unit_test(test_rack_ownership),
	    cmocka_unit_test(test_oversubscription),
	    cmocka_unit_test(test_gen_parse),
	    cmocka_unit_test(test_scale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
