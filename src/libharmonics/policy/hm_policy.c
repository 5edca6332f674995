/* Policy registry and documented defaults. */
#include "hm_policy.h"
#include "hm_policy_names.h"

#include <string.h>

static const hm_policy_ops_t *const registry[] = {
	&hm_policy_fair, &hm_policy_optimal, &hm_policy_cassini, &hm_policy_crux,
	&hm_policy_harmonics,
};

#define HM_NPOLICIES ((int)(sizeof(registry) / sizeof(registry[0])))

void hm_policy_cfg_defaults(hm_policy_cfg_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg)); /* epoch_s, shift_bins, guard_s: 0 */
	cfg->prio_levels = HM_DEFAULT_PRIO_LEVELS;
	cfg->reserved_levels = 1;
	cfg->budget_s = 10.0;
	cfg->seed = 1;
	cfg->threads = 1;
}

int hm_policy_count(void)
{
	return HM_NPOLICIES;
}

const hm_policy_ops_t *hm_policy_at(int i)
{
	return i >= 0 && i < HM_NPOLICIES ? registry[i] : NULL;
}

const hm_policy_ops_t *hm_policy_find(const char *name)
{
	for (int i = 0; name && i < HM_NPOLICIES; i++)
		if (strcmp(registry[i]->name, name) == 0)
			return registry[i];
	return NULL;
}

const char *hm_policy_names(void)
{
	/* Constant, so callers on any thread may use it (registry order). */
	return HM_POLICY_NAMES;
}
