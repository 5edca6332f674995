/*
 * select_place.c - select/harmonics_cons_tres' contention-aware placement
 * (docs/placement.md): for a job that asked for communication scheduling,
 * cons_tres' own choice (a WILL_RUN probe: where it would start now) and the
 * candidates of libharmonics are ranked by the placement score against the
 * coordinator's live view, and cons_tres allocates the best within its
 * feasibility (the same mode on a bitmap restricted to the candidate: partitions,
 * constraints, exclusivity, reservations and --switches stay cons_tres').
 * cons_tres' own choice is taken by forwarding the original call, so that when
 * placement does not matter, or anything is missing (no sched/harmonics, no
 * view, a stale one, no profile), the result is exactly cons_tres'.
 *
 * Called with slurmctld's job and node write locks held: no lock is taken here
 * but the live view's short mutex (inside its accessors) and this file's own.
 */
#include "config.h" /* Slurm's (see m4/hm_slurm.m4) */

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hm_plugin.h"
#include "hm_select.h"
#include "select_compat.h"
#include "select_place.h"

#define LOG_PREFIX "select/harmonics_cons_tres: "
/* How often a missing sched/harmonics is looked for again. */
#define RESOLVE_RETRY_S 10.0

static struct {
	pthread_mutex_t mu;
	/* The sched plugin's accessors. */
	hm_live_acquire_fn acquire;
	hm_live_release_fn release;
	double tried_s;
	bool said_missing;
	/* Topology host <-> Slurm node index, for one topology and node table. */
	const hm_topo_t *map_topo;
	unsigned long map_gen;
	int map_nodes;
	int *n2h, *h2n;
	hm_sel_recent_list_t recent;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER};

static double real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The sched plugin's accessors, when sched/harmonics is the loaded scheduler. */
static bool resolve(void)
{
	void *h;
	double now = real_s();

	if (P.acquire)
		return true;
	if (now - P.tried_s < RESOLVE_RETRY_S)
		return false;
	P.tried_s = now;
	h = hm_plugin_find_loaded(slurm_conf.plugindir, HM_LIVE_PLUGIN_FILE);
	if (!h) /* the coordinator hosted by job_submit/harmonics */
		h = hm_plugin_find_loaded(slurm_conf.plugindir, HM_LIVE_PLUGIN_FILE_JOB_SUBMIT);
	if (h) {
		*(void **)&P.acquire = dlsym(h, HM_LIVE_ACQUIRE_SYM);
		*(void **)&P.release = dlsym(h, HM_LIVE_RELEASE_SYM);
	}
	if (!P.acquire || !P.release) {
		P.acquire = NULL;
		P.release = NULL;
		if (!P.said_missing)
			verbose(LOG_PREFIX "no %s with %s loaded: jobs placed as cons_tres",
				HM_LIVE_PLUGIN_FILE, HM_LIVE_ACQUIRE_SYM);
		P.said_missing = true;
		return false;
	}
	verbose(LOG_PREFIX "live view from the coordinator's host plugin");
	P.said_missing = false;
	return true;
}

/* Topology hosts <-> Slurm nodes by name, rebuilt when either side changes. */
static bool map_nodes(const hm_live_t *live)
{
	const hm_topo_t *t = live->topo;

	if (P.map_topo == t && P.map_gen == live->topo_gen && P.map_nodes == node_record_count)
		return true;
	xfree(P.n2h);
	xfree(P.h2n);
	P.map_topo = NULL;
	P.n2h = xcalloc(node_record_count + 1, sizeof(int));
	P.h2n = xcalloc(t->nhosts + 1, sizeof(int));
	for (int h = 0; h < t->nhosts; h++)
		P.h2n[h] = -1;
	for (int i = 0; i < node_record_count; i++) {
		node_record_t *n = node_record_table_ptr[i];
		int h = n && n->name ? hm_topo_host_index(t, n->name) : -1;

		P.n2h[i] = h;
		if (h >= 0)
			P.h2n[h] = i;
	}
	P.map_topo = t;
	P.map_gen = live->topo_gen;
	P.map_nodes = node_record_count;
	return true;
}

static bool wants_comm_sched(const job_record_t *job)
{
	const char *mode =
	    hm_plugin_env_get(job->spank_job_env, job->spank_job_env_size, HM_SPANK_ENV_MODE);

	return mode && strcmp(mode, "off") != 0;
}

bool hm_select_steerable(const job_record_t *job, const bitstr_t *bitmap, uint32_t min_nodes,
			 uint32_t max_nodes, uint32_t req_nodes, uint16_t mode,
			 const void *preemptees)
{
	const job_details_t *d = job ? job->details : NULL;

	/* A fixed node count of 2 or more, chosen now; anything else is cons_tres'. */
	return job && d && bitmap && !preemptees && hm_slurm_topo_records() > 0 &&
	       (mode == SELECT_MODE_RUN_NOW || mode == SELECT_MODE_WILL_RUN) && min_nodes >= 2 &&
	       max_nodes == min_nodes && (req_nodes == min_nodes || req_nodes == 0) &&
	       !d->req_node_bitmap && !d->contiguous && !job->het_job_list && !job->het_job_id &&
	       wants_comm_sched(job);
}

/* Units per topology host: 1 where the node is offered and can take the job now. */
static void availability(const job_record_t *job, const bitstr_t *bitmap, const hm_topo_t *t,
			 int *avail, int *ring_key)
{
	bool whole = job->details->whole_node == 1 || job->details->share_res == 0;

	for (int h = 0; h < t->nhosts; h++) {
		int i = P.h2n[h];
		node_record_t *n = i >= 0 ? node_record_table_ptr[i] : NULL;

		ring_key[h] = i >= 0 ? i : node_record_count + h;
		avail[h] = n && bit_test((bitstr_t *)bitmap, i) &&
			   (IS_NODE_IDLE(n) || (!whole && IS_NODE_MIXED(n))) &&
			   !IS_NODE_COMPLETING(n);
	}
}

/* The job's profile: its --comm-profile, else the coordinator's DefaultProfile. */
static bool job_profile(const job_record_t *job, const hm_live_t *live, hm_profile_t *p)
{
	const char *spec =
	    hm_plugin_env_get(job->spank_job_env, job->spank_job_env_size, HM_SPANK_ENV_PROFILE);
	hm_err_t err = {0};

	if (!spec || !*spec)
		spec = live->default_profile;
	if (!*spec || !live->profile_parse)
		return false;
	return live->profile_parse(spec, p, &err) == HM_OK;
}

/* The plane of the job's partition topology (25.05+ Topology=); one the
   coordinator's topology lacks is the cluster default, as the coordinator
   models it (hm_coord_derive_plane). */
static int job_plane(const hm_topo_t *t, const job_record_t *job)
{
	int p = hm_topo_plane_index(t, hm_slurm_job_topology(job));

	return p > 0 ? p : 0;
}

typedef struct {
	job_record_t *job;
	bitstr_t *bitmap;
	uint32_t min_nodes, max_nodes, req_nodes;
	uint16_t mode;
	const hm_job_test_tail_t *tail;
	hm_select_job_test_fn ct;
	double ct_us; /* time spent in cons_tres */
} call_t;

/* cons_tres on a bitmap; for an extra try, only "now" (no simulated future). */
static int ct_call(call_t *c, bitstr_t *bm, uint16_t mode, bool now_only)
{
	uint64_t flags = c->job->bit_flags;
	time_t start = c->job->start_time;
	uint32_t cpus = c->job->total_cpus;
	double t0 = mono_us();
	int rc;

	if (now_only)
		c->job->bit_flags |= TEST_NOW_ONLY;
	rc = c->ct(c->job, bm, c->min_nodes, c->max_nodes, c->req_nodes, mode, NULL, NULL,
		   HM_JOB_TEST_TAIL_ARGS(c->tail));
	c->job->bit_flags = flags;
	if (mode == SELECT_MODE_WILL_RUN && now_only && c->mode != SELECT_MODE_WILL_RUN) {
		c->job->start_time = start; /* a probe leaves no trace */
		c->job->total_cpus = cpus;
	}
	c->ct_us += mono_us() - t0;
	return rc;
}

static void record(call_t *c, const hm_live_t *live, const hm_sel_plan_t *plan, int k,
		   const hm_sel_job_t *sj, double t0_us)
{
	const hm_place_cand_t *cand = &plan->c[k];
	double ct_score = plan->cons_tres >= 0 ? plan->s[plan->cons_tres].total : -1;
	char entry[192], *buf = NULL;
	size_t len;

	verbose(LOG_PREFIX "JobId=%u placed by %s: score %.4f (cons_tres' choice %.4f), %d racks, "
			   "%d candidates; %.0f us, %.0f of them in cons_tres",
		c->job->job_id, cand->rule, plan->s[k].total, ct_score, cand->nracks, plan->n,
		mono_us() - t0_us, c->ct_us);
	if (c->mode != SELECT_MODE_RUN_NOW)
		return;
	hm_sel_placed_entry(real_s(), plan->s[k].total, ct_score, cand->nracks, plan->n, entry,
			    sizeof(entry));
	len = (c->job->admin_comment ? strlen(c->job->admin_comment) : 0) + sizeof(entry);
	buf = xmalloc(len);
	if (hm_sel_admin_comment(c->job->admin_comment, entry, buf, len)) {
		xfree(c->job->admin_comment);
		c->job->admin_comment = buf;
		buf = NULL;
	}
	xfree(buf);
	/* The coordinator sees the job in a second; until then the overlay does. */
	{
		hm_placement_t pl;
		hm_traffic_t tr = {0};
		hm_lview_job_t j = {.id = c->job->job_id, .scheduled = sj->scheduled};
		hm_err_t err = {0};

		if (hm_place_cand_placement(live->topo, cand, sj->gpus_per_node, sj->ring_key, &pl,
					    &err) == HM_OK) {
			if (hm_traffic_derive_plane(live->topo, sj->plane, sj->profile, &pl, 0, &tr,
						    &err) == HM_OK) {
				hm_lview_job_times(sj->profile, &tr, &j.period_s, &j.burst_s);
				(void)hm_sel_recent_add(&P.recent, &j, &tr, live->topo_gen,
							real_s(), &err);
			}
			hm_traffic_free(&tr);
			hm_placement_free(&pl);
		}
	}
}

/* Try the plan best first; returns 1 placed (rc in *rc), 0 not decided. */
static int try_plan(call_t *c, const hm_live_t *live, hm_sel_plan_t *plan, const hm_sel_job_t *sj,
		    double t0_us, int *rc)
{
	for (int r = 0; r < plan->n; r++) {
		int k = plan->order[r];
		bitstr_t *bm;

		if (k == plan->cons_tres) {
			/* Exactly cons_tres: the original call. */
			*rc = ct_call(c, c->bitmap, c->mode, false);
			if (*rc == SLURM_SUCCESS)
				record(c, live, plan, k, sj, t0_us);
			return 1;
		}
		bm = bit_alloc(node_record_count);
		for (int i = 0; i < plan->c[k].nhosts; i++) {
			int n = P.h2n[plan->c[k].hosts[i]];

			if (n >= 0 && bit_test(c->bitmap, n))
				bit_set(bm, n);
		}
		if (bit_set_count(bm) == plan->c[k].nhosts &&
		    ct_call(c, bm, c->mode, true) == SLURM_SUCCESS) {
			bit_copybits(c->bitmap, bm);
			FREE_NULL_BITMAP(bm);
			*rc = SLURM_SUCCESS;
			record(c, live, plan, k, sj, t0_us);
			return 1;
		}
		FREE_NULL_BITMAP(bm);
	}
	return 0;
}

int hm_select_place(hm_select_job_test_fn ct, job_record_t *job, bitstr_t *bitmap,
		    uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes, uint16_t mode,
		    const hm_job_test_tail_t *tail, int *rc)
{
	call_t c = {job, bitmap, min_nodes, max_nodes, req_nodes, mode, tail, ct, 0};
	const hm_live_t *live = NULL;
	hm_lview_t *overlay = NULL;
	hm_sel_plan_t plan = {0};
	hm_profile_t prof;
	bitstr_t *probe = NULL;
	int *avail = NULL, *key = NULL, *cth = NULL, nct = 0, done = 0;
	double fresh_s = 0, t0 = mono_us();
	hm_err_t err = {0};

	pthread_mutex_lock(&P.mu);
	if (!resolve() || !(live = P.acquire(&fresh_s)))
		goto out;
	if (live->abi != HM_LIVE_ABI || live->size != sizeof(hm_live_t) ||
	    !(real_s() - fresh_s < HM_LIVE_STALE_S) || !map_nodes(live))
		goto out; /* another build of the sched plugin, or a stuck coordinator */
	if (!job_profile(job, live, &prof)) {
		verbose(LOG_PREFIX "JobId=%u: no usable profile: placed as cons_tres", job->job_id);
		goto out;
	}
	/* Where cons_tres would start it now; not now: cons_tres' answer, unchanged. */
	probe = bit_copy(bitmap);
	if (ct_call(&c, probe, SELECT_MODE_WILL_RUN, true) != SLURM_SUCCESS)
		goto out;
	avail = xcalloc(live->topo->nhosts + 1, sizeof(int));
	key = xcalloc(live->topo->nhosts + 1, sizeof(int));
	cth = xcalloc(bit_set_count(probe) + 1, sizeof(int));
	availability(job, bitmap, live->topo, avail, key);
	for (int i = 0; i < node_record_count; i++)
		if (bit_test(probe, i) && P.n2h[i] >= 0)
			cth[nct++] = P.n2h[i];
	if (nct != bit_set_count(probe))
		goto out; /* it chose nodes the coordinator does not know */
	if (hm_sel_overlay(&P.recent, live, fresh_s, real_s(), &overlay, &err) != HM_OK)
		goto out;
	hm_sel_job_t sj = {.job_id = job->job_id,
			   .profile = &prof,
			   .scheduled = live->staggers,
			   .gpus_per_node = hm_plugin_gpus_per_node(job->tres_per_node),
			   .need = (int)min_nodes,
			   .avail = avail,
			   .ring_key = key,
			   .ct_hosts = cth,
			   .ct_n = nct,
			   .plane = job_plane(live->topo, job)};
	if (hm_sel_plan(live, overlay ? overlay : live->view, &sj, &plan, &err) != HM_OK) {
		verbose(LOG_PREFIX "JobId=%u: %s: placed as cons_tres", job->job_id, err.msg);
		goto out;
	}
	done = try_plan(&c, live, &plan, &sj, t0, rc);
out:
	hm_sel_plan_free(&plan);
	hm_lview_free(overlay);
	FREE_NULL_BITMAP(probe);
	xfree(avail);
	xfree(key);
	xfree(cth);
	if (live)
		P.release(live);
	pthread_mutex_unlock(&P.mu);
	return done;
}

void hm_select_forget(uint32_t job_id)
{
	pthread_mutex_lock(&P.mu);
	hm_sel_recent_forget(&P.recent, job_id);
	pthread_mutex_unlock(&P.mu);
}
