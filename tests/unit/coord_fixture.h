/* Shared by the coordinator tests: the two-rack topology and a scripted policy. */
#ifndef COORD_FIXTURE_H
#define COORD_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "hm_conf.h"
#include "hm_coord.h"
#include "hm_coord_int.h"
#include "hm_policy.h"
#include "hm_topo.h"

/* tests/fixtures/coord/topology.conf: rack1 = n[1-4], rack2 = n[5-8], 8 GPUs each. */
static inline hm_topo_t *fixture_topo(void)
{
	char path[4096];
	const char *top = getenv("top_srcdir");
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	snprintf(path, sizeof(path), "%s/tests/fixtures/coord/topology.conf", top ? top : ".");
	if (hm_topo_load_file(path, NULL, &t, &err) != HM_OK) {
		fprintf(stderr, "fixture topology %s: %s\n", path, err.msg);
		abort();
	}
	return t;
}

/*
 * Scripted policy: job k (in the order given) gets period 400 ms, shift
 * k * script_step_ms, class k % 2. Counts its calls and records the last event.
 */
static int script_step_ms = 100;
static int script_calls;
static hm_sched_event_t script_last_event;
static int script_last_njobs;

static hm_rc_t script_decide(void *st, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	(void)st;
	(void)err;
	script_calls++;
	script_last_event = ctx->event;
	script_last_njobs = ctx->njobs;
	for (int k = 0; k < ctx->njobs; k++) {
		hm_decision_t *d = &ctx->jobs[k].dec;

		d->period_s = 0.4;
		d->shift_s = k * script_step_ms / 1000.0;
		d->origin_s = 1000.0;
		d->guard_s = 0.002;
		d->prio = k % 2;
		d->path = 0;
	}
	return HM_OK;
}

static const hm_policy_ops_t script_policy = {
    .name = "script",
    .description = "test script",
    .decide = script_decide,
    .uses_epochs = true,
};

static inline void fixture_conf(hm_conf_t *c)
{
	hm_conf_defaults(c);
	snprintf(c->policy, sizeof(c->policy), "fair");
	c->epoch_s = 10;
	c->decision_budget_s = 0.2;
}

/* One decision run at now_s; aborts with the reason when it fails. */
static inline void fixture_decide_at(hm_coord_t *c, double now_s)
{
	hm_err_t err = {0};
	bool changed;

	if (hm_coord_decide(c, now_s, &changed, &err) != HM_OK) {
		fprintf(stderr, "fixture_decide_at(%.3f): %s\n", now_s, err.msg);
		abort();
	}
}

/* An engine of conf deciding with ops, running job 100 (uid 1000) on n1 and n5 with
 * its declared profile; NULL (the reason on stderr) when any step fails. */
static inline hm_coord_t *fixture_coord_job100(const hm_conf_t *conf, const hm_policy_ops_t *ops,
					       const char *profile)
{
	hm_err_t err = {0};
	hm_coord_t *c = NULL;
	hm_coord_job_info_t j = {
	    .job_id = 100, .uid = 1000, .nodes = "n[1,5]", .mode = "auto", .profile = profile};

	if (hm_coord_create(conf, fixture_topo(), &c, &err) != HM_OK ||
	    hm_coord_set_policy_ops(c, ops, &err) != HM_OK ||
	    hm_coord_job_upsert(c, &j, &err) != HM_OK) {
		fprintf(stderr, "fixture_coord_job100: %s\n", err.msg);
		hm_coord_destroy(c);
		return NULL;
	}
	return c;
}

#endif
