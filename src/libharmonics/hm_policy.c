/* Policy registry and documented defaults. */
#include "hm_policy.h"

#include <string.h>

static const hm_policy_ops_t *registry(int i)
{
	switch (i) {
	case 0:
		return &hm_policy_fair;
	case 1:
		return &hm_policy_optimal;
	case 2:
		return &hm_policy_cassini;
	case 3:
		return &hm_policy_crux;
	case 4:
		return &hm_policy_harmonics;
	default:
		return NULL;
	}
}

#define HM_NPOLICY_SLOTS 5

void hm_policy_cfg_defaults(hm_policy_cfg_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->epoch_s = 0;
	cfg->prio_levels = HM_DEFAULT_PRIO_LEVELS;
	cfg->reserved_levels = 1;
	cfg->budget_s = 10.0;
	cfg->shift_bins = 0;
	cfg->guard_s = 0;
	cfg->seed = 1;
	cfg->threads = 1;
}

int hm_policy_count(void)
{
	int n = 0;

	for (int i = 0; i < HM_NPOLICY_SLOTS; i++)
		if (registry(i))
			n++;
	return n;
}

const hm_policy_ops_t *hm_policy_at(int i)
{
	for (int k = 0; k < HM_NPOLICY_SLOTS; k++) {
		const hm_policy_ops_t *p = registry(k);
		if (p && i-- == 0)
			return p;
	}
	return NULL;
}

const hm_policy_ops_t *hm_policy_find(const char *name)
{
	for (int i = 0; i < HM_NPOLICY_SLOTS; i++) {
		const hm_policy_ops_t *p = registry(i);
		if (p && name && strcmp(p->name, name) == 0)
			return p;
	}
	return NULL;
}

const char *hm_policy_names(void)
{
	static char names[128];

	if (!names[0]) {
		for (int i = 0; i < HM_NPOLICY_SLOTS; i++) {
			const hm_policy_ops_t *p = registry(i);
			if (!p)
				continue;
			if (names[0])
				strcat(names, ",");
			strcat(names, p->name);
		}
	}
	return names;
}
