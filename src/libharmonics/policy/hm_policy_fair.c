/*
 * fair: no decisions. Every job keeps prio 0, no shift, no slot holding and
 * path 0, so links are shared per-flow max-min fairly: what a cluster does today.
 */
#include "hm_policy.h"

#include <string.h>

static hm_rc_t fair_create(const hm_policy_cfg_t *cfg, void **state, hm_err_t *err)
{
	(void)cfg;
	(void)err;
	*state = NULL;
	return HM_OK;
}

static hm_rc_t fair_decide(void *state, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	(void)state;
	(void)err;
	for (int i = 0; i < ctx->njobs; i++) {
		hm_decision_t *d = &ctx->jobs[i].dec;
		unsigned long epoch = d->epoch;
		memset(d, 0, sizeof(*d));
		d->epoch = epoch;
	}
	return HM_OK;
}

const hm_policy_ops_t hm_policy_fair = {
    .name = "fair",
    .description = "no decisions: per-flow max-min fair sharing of every link",
    .create = fair_create,
    .decide = fair_decide,
    .destroy = NULL,
    .place = NULL,
    .uses_epochs = false,
};
