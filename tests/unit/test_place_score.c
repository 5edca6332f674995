/*
 * Unit tests of contention-aware placement (hm_place_score.h): the link-load
 * view, the score on hand-computed cases, candidates (the first is exactly
 * hm_place_default's choice) and the choice among them.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_job.h"
#include "hm_place_score.h"
#include "job_topo_fixture.h"

/* Two racks of two single-GPU hosts, 100 Gbit/s NICs and ToR uplinks. */
#define PAIR_SPEC "racks=2,hosts=2,gpus=1,nic=100G,uplink=100G"

/* compute 0.3 s, one ring all-reduce of 1.25 GB: on 2 hosts each ring edge
 * carries 1.25 GB = 1e10 bit, 0.1 s at 100 Gbit/s. Period 0.4 s, burst 0.1 s. */
static hm_profile_t pair_profile(void)
{
	hm_profile_t p;

	memset(&p, 0, sizeof(p));
	snprintf(p.model, sizeof(p.model), "custom");
	p.compute_s = 0.3;
	p.nphases = 1;
	p.phases[0].coll = HM_COLL_ALLREDUCE_RING;
	p.phases[0].bytes = 1.25e9;
	return p;
}

typedef struct {
	hm_placement_t pl;
	hm_traffic_t tr;
	hm_lview_job_t j;
} placed_t;

static void place(const hm_topo_t *t, const hm_profile_t *prof, const int *hosts, int n,
		  bool scheduled, uint32_t id, placed_t *out)
{
	hm_err_t err = {0};

	memset(out, 0, sizeof(*out));
	out->pl.slots = calloc((size_t)n, sizeof(hm_slot_t));
	assert_non_null(out->pl.slots);
	for (int i = 0; i < n; i++)
		out->pl.slots[out->pl.nslots++] = (hm_slot_t){hosts[i], 1, 0};
	assert_int_equal(hm_traffic_derive(t, prof, &out->pl, 0, &out->tr, &err), HM_OK);
	out->j.id = id;
	out->j.gpus = n;
	out->j.scheduled = scheduled;
	out->j.tr = &out->tr;
	hm_lview_job_times(prof, &out->tr, &out->j.period_s, &out->j.burst_s);
}

static void placed_free(placed_t *p)
{
	hm_traffic_free(&p->tr);
	hm_placement_free(&p->pl);
}

static void test_view_build(void **state)
{
	hm_topo_t *t = fixture_topo(PAIR_SPEC);
	hm_profile_t prof = pair_profile();
	placed_t y;
	hm_lview_t *v = NULL;
	hm_err_t err = {0};
	int uses = 0;

	(void)state;
	place(t, &prof, (int[]){0, 2}, 2, false, 7, &y);
	assert_float_equal(y.j.period_s, 0.4, 1e-12);
	assert_float_equal(y.j.burst_s, 0.1, 1e-12);
	assert_int_equal(hm_lview_build(t, &y.j, 1, &v, &err), HM_OK);
	assert_int_equal(v->njobs, 1);
	assert_null(v->jobs[0].tr);
	assert_int_equal(v->jobs[0].id, 7);
	/* The ring 0 -> 2 -> 0 crosses 8 links, 1e10 bit each per iteration:
	 * utilisation 1e10 / (1e11 * 0.4) = 0.25 on each. */
	for (int l = 0; l < t->nlinks; l++) {
		int n = v->use_off[l + 1] - v->use_off[l];

		assert_true(n == 0 || n == 1);
		if (n) {
			assert_int_equal(v->use[v->use_off[l]].job, 0);
			assert_float_equal(v->use[v->use_off[l]].bits, 1e10, 1);
			assert_float_equal(v->link_util[l], 0.25, 1e-12);
		} else {
			assert_float_equal(v->link_util[l], 0, 0);
		}
		uses += n;
	}
	assert_int_equal(uses, 8);
	/* Each rack's uplink pair (up and down) carries it: mean 0.25. */
	assert_float_equal(v->rack_up_util[0], 0.25, 1e-12);
	assert_float_equal(v->rack_up_util[1], 0.25, 1e-12);
	assert_float_equal(v->host_util[0], 0.25, 1e-12);
	assert_float_equal(v->host_util[1], 0, 0);
	assert_float_equal(v->host_util[2], 0.25, 1e-12);
	hm_lview_free(v);
	/* An empty view is fine; a NULL output is not. */
	assert_int_equal(hm_lview_build(t, NULL, 0, &v, &err), HM_OK);
	assert_int_equal(v->njobs, 0);
	hm_lview_free(v);
	assert_int_equal(hm_lview_build(t, NULL, 0, NULL, &err), HM_ERR_INVAL);
	placed_free(&y);
	hm_topo_free(t);
}

/*
 * Two identical jobs crossing the same two ToR uplinks, by hand:
 * a = 1 each (each burst wants the whole link), shares 1/2 each during overlap;
 * expected overlap o = M * M / P = 0.1 * 0.25 = 0.025 s; slowdown each
 * o * (1 / 0.5 - 1) / P = 0.025 / 0.4 = 0.0625. The pair shares 4 links but
 * counts once: total 0.125. Both scheduled, utilisation 0.5 <= 1: x 0.25.
 */
static void test_score_pair_on_uplinks(void **state)
{
	hm_topo_t *t = fixture_topo(PAIR_SPEC);
	hm_profile_t prof = pair_profile();
	placed_t y, x, z;
	hm_lview_t *v = NULL;
	hm_place_score_t sc;
	hm_err_t err = {0};

	(void)state;
	place(t, &prof, (int[]){0, 2}, 2, false, 1, &y);
	place(t, &prof, (int[]){1, 3}, 2, false, 2, &x);
	assert_int_equal(hm_lview_build(t, &y.j, 1, &v, &err), HM_OK);
	assert_int_equal(hm_place_score(v, &x.j, NULL, &sc, &err), HM_OK);
	assert_float_equal(sc.self, 0.0625, 1e-12);
	assert_float_equal(sc.others, 0.0625, 1e-12);
	assert_float_equal(sc.total, 0.125, 1e-12);
	assert_int_equal(sc.shared_jobs, 1);
	assert_int_equal(sc.shared_links, 4);
	hm_lview_free(v);

	y.j.scheduled = x.j.scheduled = true;
	assert_int_equal(hm_lview_build(t, &y.j, 1, &v, &err), HM_OK);
	assert_int_equal(hm_place_score(v, &x.j, NULL, &sc, &err), HM_OK);
	assert_float_equal(sc.total, 0.125 * HM_PLACE_SCHED_RESIDUAL, 1e-12);
	/* Only one of them scheduled: nothing to stagger with. */
	x.j.scheduled = false;
	assert_int_equal(hm_place_score(v, &x.j, NULL, &sc, &err), HM_OK);
	assert_float_equal(sc.total, 0.125, 1e-12);
	hm_lview_free(v);

	/* Inside rack 1 (hosts 2 and 3): only host 2's NIC links are shared with y. */
	place(t, &prof, (int[]){2, 3}, 2, false, 3, &z);
	assert_int_equal(hm_lview_build(t, &y.j, 1, &v, &err), HM_OK);
	assert_int_equal(hm_place_score(v, &z.j, NULL, &sc, &err), HM_OK);
	assert_int_equal(sc.shared_links, 2);
	assert_float_equal(sc.total, 0.125, 1e-12);
	/* A bad argument is refused. */
	assert_int_equal(hm_place_score(v, NULL, NULL, &sc, &err), HM_ERR_INVAL);
	assert_int_equal(hm_place_score(NULL, &z.j, NULL, &sc, &err), HM_ERR_INVAL);
	hm_lview_free(v);
	placed_free(&y);
	placed_free(&x);
	placed_free(&z);
	hm_topo_free(t);
}

/* A view chained after another scores as one view of both jobs' sets. */
static void test_score_chained_views(void **state)
{
	hm_topo_t *t = fixture_topo("racks=3,hosts=2,gpus=1,nic=100G,uplink=100G");
	hm_profile_t prof = pair_profile();
	placed_t y, z, x;
	hm_lview_job_t both[2];
	hm_lview_t *vy = NULL, *vz = NULL, *vall = NULL;
	hm_place_score_t a, b;
	hm_err_t err = {0};

	(void)state;
	place(t, &prof, (int[]){0, 2}, 2, true, 1, &y); /* racks 0 and 1 */
	place(t, &prof, (int[]){3, 4}, 2, true, 2, &z); /* racks 1 and 2 */
	place(t, &prof, (int[]){1, 5}, 2, true, 3, &x); /* racks 0 and 2 */
	both[0] = y.j;
	both[1] = z.j;
	assert_int_equal(hm_lview_build(t, &y.j, 1, &vy, &err), HM_OK);
	assert_int_equal(hm_lview_build(t, &z.j, 1, &vz, &err), HM_OK);
	assert_int_equal(hm_lview_build(t, both, 2, &vall, &err), HM_OK);
	vz->next = vy;
	assert_int_equal(hm_lview_njobs(vz), 2);
	assert_int_equal(hm_place_score(vall, &x.j, NULL, &a, &err), HM_OK);
	assert_int_equal(hm_place_score(vz, &x.j, NULL, &b, &err), HM_OK);
	assert_int_equal(a.shared_jobs, 2);
	assert_int_equal(b.shared_jobs, 2);
	assert_float_equal(a.total, b.total, 1e-12);
	assert_float_equal(a.total, 2 * 0.125 * HM_PLACE_SCHED_RESIDUAL, 1e-12);
	for (int r = 0; r < t->nracks; r++)
		assert_float_equal(hm_lview_rack_util(vz, r), vall->rack_up_util[r], 1e-12);
	hm_lview_free(vall);
	hm_lview_free(vz);
	hm_lview_free(vy);
	placed_free(&y);
	placed_free(&z);
	placed_free(&x);
	hm_topo_free(t);
}

/* Uplinks twice the NICs: each burst wants half of the uplink, both fit: no cost
 * there; only NIC sharing would cost, and there is none. */
static void test_score_wide_uplink_free(void **state)
{
	hm_topo_t *t = fixture_topo("racks=2,hosts=2,gpus=1,nic=100G,uplink=200G");
	hm_profile_t prof = pair_profile();
	placed_t y, x;
	hm_lview_t *v = NULL;
	hm_place_score_t sc;
	hm_err_t err = {0};

	(void)state;
	place(t, &prof, (int[]){0, 2}, 2, false, 1, &y);
	place(t, &prof, (int[]){1, 3}, 2, false, 2, &x);
	assert_int_equal(hm_lview_build(t, &y.j, 1, &v, &err), HM_OK);
	assert_int_equal(hm_place_score(v, &x.j, NULL, &sc, &err), HM_OK);
	assert_int_equal(sc.shared_links, 4);
	assert_float_equal(sc.total, 0, 0);
	hm_lview_free(v);
	placed_free(&y);
	placed_free(&x);
	hm_topo_free(t);
}

/* One link by hand: traffic built field by field. */
static void one_link_traffic(hm_traffic_t *tr, int *link, int *flows, double bytes)
{
	memset(tr, 0, sizeof(*tr));
	tr->nphases = 1;
	tr->phases[0].flow_bytes = bytes;
	tr->phases[0].nflows = 1;
	tr->phases[0].nlinks = 1;
	tr->phases[0].links = link;
	tr->phases[0].flows = flows;
}

/*
 * Asymmetric pair on one 100 Gbit/s link: x wants the whole link (tau 0.1 s,
 * burst 0.1 s, period 0.4 s), y 40% of it (tau 0.1 s over a 0.25 s burst,
 * period 1 s). Max-min during overlap: y keeps 0.4, x gets 0.6.
 * o_x = 0.1 * min(1, 0.25 / 1) = 0.025; dx = 0.025 * (1 / 0.6 - 1) / 0.4
 * = 0.041666..; dy = 0 (y keeps its rate).
 */
static void test_score_asymmetric_shares(void **state)
{
	hm_topo_t *t = fixture_topo(PAIR_SPEC);
	int link = 0, flows = 1;
	hm_traffic_t ty, tx;
	hm_lview_job_t y = {.id = 1, .period_s = 1.0, .burst_s = 0.25, .tr = &ty};
	hm_lview_job_t x = {.id = 2, .period_s = 0.4, .burst_s = 0.1, .tr = &tx};
	hm_lview_t *v = NULL;
	hm_place_score_t sc;
	hm_err_t err = {0};

	(void)state;
	assert_float_equal(t->links[0].capacity_bps, 100e9, 0);
	one_link_traffic(&ty, &link, &flows, 1.25e9);
	one_link_traffic(&tx, &link, &flows, 1.25e9);
	assert_int_equal(hm_lview_build(t, &y, 1, &v, &err), HM_OK);
	assert_int_equal(hm_place_score(v, &x, NULL, &sc, &err), HM_OK);
	assert_float_equal(sc.self, 0.025 * (1 / 0.6 - 1) / 0.4, 1e-12);
	assert_float_equal(sc.others, 0, 1e-15);
	hm_lview_free(v);
	/* A link outside the topology is refused. */
	link = t->nlinks;
	assert_int_equal(hm_lview_build(t, &y, 1, &v, &err), HM_ERR_INVAL);
	assert_null(v);
	hm_topo_free(t);
}

/*
 * Four jobs each using a quarter of one link (tau 0.1 s per 0.4 s period): the
 * link is full; x makes it 1.25, so staggering cannot help and the pairs cost in
 * full though all are scheduled: 4 pairs * (0.0625 + 0.0625) = 0.5.
 */
static void test_score_overloaded_link_no_residual(void **state)
{
	hm_topo_t *t = fixture_topo(PAIR_SPEC);
	int link = 0, flows = 1;
	hm_traffic_t tr;
	hm_lview_job_t ys[4],
	    x = {.id = 9, .period_s = 0.4, .burst_s = 0.1, .scheduled = true, .tr = &tr};
	hm_lview_t *v = NULL;
	hm_place_score_t sc;
	hm_err_t err = {0};

	(void)state;
	one_link_traffic(&tr, &link, &flows, 1.25e9);
	for (int i = 0; i < 4; i++)
		ys[i] = (hm_lview_job_t){.id = (uint32_t)i,
					 .period_s = 0.4,
					 .burst_s = 0.1,
					 .scheduled = true,
					 .tr = &tr};
	assert_int_equal(hm_lview_build(t, ys, 4, &v, &err), HM_OK);
	assert_float_equal(v->link_util[0], 1.0, 1e-12);
	assert_int_equal(hm_place_score(v, &x, NULL, &sc, &err), HM_OK);
	assert_float_equal(sc.total, 0.5, 1e-12);
	assert_int_equal(sc.shared_jobs, 4);
	hm_lview_free(v);
	/* Three of them: utilisation 1.0 with x, staggerable: a quarter of 0.375. */
	assert_int_equal(hm_lview_build(t, ys, 3, &v, &err), HM_OK);
	assert_int_equal(hm_place_score(v, &x, NULL, &sc, &err), HM_OK);
	assert_float_equal(sc.total, 0.375 * HM_PLACE_SCHED_RESIDUAL, 1e-12);
	hm_lview_free(v);
	hm_topo_free(t);
}

static void expect_same(const hm_place_cand_t *c, const hm_placement_t *p)
{
	assert_int_equal(c->nhosts, p->nslots);
	for (int i = 0; i < p->nslots; i++) {
		assert_int_equal(c->hosts[i], p->slots[i].host);
		assert_int_equal(c->units[i], p->slots[i].gpus);
	}
}

/* The first candidate is hm_place_default's choice, on random free states. */
static void test_first_candidate_is_default(void **state)
{
	const char *specs[] = {"racks=4,hosts=4,gpus=8", "racks=3,hosts=5,gpus=4",
			       "racks=6,hosts=3,gpus=8,racks_per_pod=2,aggs=2"};
	unsigned seed = 12345;

	(void)state;
	for (int si = 0; si < 3; si++) {
		hm_topo_t *t = fixture_topo(specs[si]);
		int total = hm_topo_gpus(t), checked = 0;

		for (int round = 0; round < 300; round++) {
			hm_cluster_state_t cs;
			hm_job_t job;
			hm_placement_t p;
			hm_place_cand_t c[HM_PLACE_MAX_CANDS];
			hm_err_t err = {0};
			hm_rc_t rc;
			int n;

			assert_int_equal(hm_cluster_state_init(&cs, t), HM_OK);
			for (int h = 0; h < t->nhosts; h++)
				cs.free_gpus[h] = (int)(rand_r(&seed) % (t->hosts[h].gpus + 1));
			memset(&job, 0, sizeof(job));
			job.gpus = 1 + (int)(rand_r(&seed) % (total / 2));
			hm_place_req_t req = {cs.free_gpus, job.gpus, t->hosts[0].gpus};
			n = hm_place_candidates(t, NULL, &req, c, HM_PLACE_MAX_CANDS);
			rc = hm_place_default(&cs, &job, &p, &err);
			if (rc == HM_OK) {
				assert_true(n >= 1);
				assert_string_equal(c[0].rule, "packed");
				expect_same(&c[0], &p);
				hm_placement_free(&p);
				checked++;
			} else {
				assert_int_equal(rc, HM_ERR_PLACE);
				assert_int_equal(n, 0);
			}
			for (int k = 0; k < n; k++)
				hm_place_cand_free(&c[k]);
			hm_cluster_state_free(&cs);
		}
		assert_true(checked > 50);
		hm_topo_free(t);
	}
}

/*
 * The cluster test's case: 4 racks x 3 nodes, one node unit each; a heavy job
 * runs across racks 1 and 2 (hosts 0,1 | 3,4), each rack has one free node
 * left (2, 5, 8, 11). A 2-node job: packed takes racks 1 and 2 (equal free
 * units, lowest index), the score sends it to racks 3 and 4.
 */
static void test_choose_avoids_loaded_uplinks(void **state)
{
	hm_topo_t *t = fixture_topo("racks=4,hosts=3,gpus=1,nic=100G,uplink=100G");
	hm_profile_t prof = pair_profile();
	int avail[12] = {0}, ring_key[12];
	placed_t y;
	hm_lview_t *v = NULL;
	hm_place_cand_t c[HM_PLACE_MAX_CANDS];
	hm_place_score_t sc[HM_PLACE_MAX_CANDS];
	hm_err_t err = {0};
	int n, best;

	(void)state;
	place(t, &prof, (int[]){0, 1, 3, 4}, 4, true, 1, &y);
	assert_int_equal(hm_lview_build(t, &y.j, 1, &v, &err), HM_OK);
	avail[2] = avail[5] = avail[8] = avail[11] = 1;
	for (int h = 0; h < 12; h++)
		ring_key[h] = 11 - h; /* Slurm's node order, reversed to see it applied */
	hm_place_req_t req = {avail, 2, 0};
	n = hm_place_candidates(t, v, &req, c, HM_PLACE_MAX_CANDS);
	assert_true(n >= 2);
	assert_string_equal(c[0].rule, "packed");
	assert_int_equal(c[0].nhosts, 2);
	assert_int_equal(c[0].hosts[0], 2);
	assert_int_equal(c[0].hosts[1], 5);
	hm_place_job_t job = {.id = 2,
			      .profile = &prof,
			      .scheduled = true,
			      .gpus_per_node = 1,
			      .ring_key = ring_key,
			      .max_paths = 1};
	best = hm_place_choose(t, v, &job, c, n, sc, &err);
	assert_true(best > 0);
	assert_int_equal(c[best].hosts[0], 8);
	assert_int_equal(c[best].hosts[1], 11);
	assert_float_equal(sc[best].total, 0, 0);
	assert_true(sc[0].total > 0.01);
	/* The ring key orders the placement's slots. */
	hm_placement_t pl;
	assert_int_equal(hm_place_cand_placement(t, &c[best], 1, ring_key, &pl, &err), HM_OK);
	assert_int_equal(pl.slots[0].host, 11);
	assert_int_equal(pl.slots[1].host, 8);
	hm_placement_free(&pl);
	/* Without a view every candidate scores 0: the packed one wins the tie. */
	assert_int_equal(hm_place_choose(t, NULL, &job, c, n, sc, &err), 0);
	for (int k = 0; k < n; k++)
		hm_place_cand_free(&c[k]);
	/* Not enough units: no candidate; a bad request: -1. */
	req.need = 5;
	assert_int_equal(hm_place_candidates(t, v, &req, c, HM_PLACE_MAX_CANDS), 0);
	req.need = 0;
	assert_int_equal(hm_place_candidates(t, v, &req, c, HM_PLACE_MAX_CANDS), -1);
	hm_lview_free(v);
	placed_free(&y);
	hm_topo_free(t);
}

/* When one rack can hold the job, every candidate stays in one rack, and the
 * hosts a loaded NIC serves are avoided. */
static void test_single_rack_candidates(void **state)
{
	hm_topo_t *t = fixture_topo("racks=3,hosts=4,gpus=2,nic=100G,uplink=100G");
	hm_profile_t prof = pair_profile();
	int avail[12];
	placed_t y;
	hm_lview_t *v = NULL;
	hm_place_cand_t c[HM_PLACE_MAX_CANDS];
	hm_place_score_t sc[HM_PLACE_MAX_CANDS];
	hm_err_t err = {0};
	int n, best;

	(void)state;
	/* y: one GPU on hosts 0 and 1 (rack 0), leaving one GPU free on each. */
	place(t, &prof, (int[]){0, 1}, 2, false, 1, &y);
	assert_int_equal(hm_lview_build(t, &y.j, 1, &v, &err), HM_OK);
	for (int h = 0; h < 12; h++)
		avail[h] = 2;
	avail[0] = avail[1] = 1;
	avail[3] = 0; /* rack 0: 4 GPUs, the tightest; host 0's NIC carries y */
	avail[4] = avail[5] = avail[6] = 0; /* rack 1: one free host, too small */
	hm_place_req_t req = {avail, 3, 2};
	n = hm_place_candidates(t, v, &req, c, HM_PLACE_MAX_CANDS);
	assert_true(n >= 2);
	for (int k = 0; k < n; k++)
		assert_int_equal(c[k].nracks, 1);
	/* packed: rack 0, hosts 0 and 2 (2 GPUs on host 2, then 1 on host 0). */
	assert_int_equal(c[0].nhosts, 2);
	assert_int_equal(c[0].hosts[0], 0);
	assert_int_equal(c[0].hosts[1], 2);
	hm_place_job_t job = {.id = 2, .profile = &prof, .gpus_per_node = -1, .max_paths = 1};
	best = hm_place_choose(t, v, &job, c, n, sc, &err);
	assert_true(best >= 0);
	assert_float_equal(sc[best].total, 0, 0);
	assert_true(sc[0].total > 0.01);
	for (int i = 0; i < c[best].nhosts; i++)
		assert_true(c[best].hosts[i] >= 8);
	for (int k = 0; k < n; k++)
		hm_place_cand_free(&c[k]);
	hm_lview_free(v);
	placed_free(&y);
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_view_build),
	    cmocka_unit_test(test_score_pair_on_uplinks),
	    cmocka_unit_test(test_score_chained_views),
	    cmocka_unit_test(test_score_wide_uplink_free),
	    cmocka_unit_test(test_score_asymmetric_shares),
	    cmocka_unit_test(test_score_overloaded_link_no_residual),
	    cmocka_unit_test(test_first_candidate_is_default),
	    cmocka_unit_test(test_choose_avoids_loaded_uplinks),
	    cmocka_unit_test(test_single_rack_candidates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
