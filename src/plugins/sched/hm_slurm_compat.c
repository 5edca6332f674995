/*
 * hm_slurm_compat.c - the functions of hm_slurm_compat.h: slurmctld's
 * topology/tree switches on each release.
 */
#include "config.h" /* Slurm's (see m4/hm_slurm.m4) */

#include "hm_slurm_compat.h"

#if HM_SLURM_AT_LEAST(24, 5)
/* topology/tree's answer to TOPO_DATA_TOPOLOGY_PTR (private to the plugin; sview
   declares the same). */
typedef struct {
	uint32_t record_count;
	topo_info_t *topo_array;
} hm_topoinfo_tree_t;

#if HM_SLURM_AT_LEAST(25, 5)
#define HM_TOPO_GET(type, data) topology_g_get(type, NULL, data)
#define HM_TOPO_FREE(info)      topology_g_topoinfo_free(info)
#else
#define HM_TOPO_GET(type, data) topology_g_get(type, data)
#define HM_TOPO_FREE(info)      topology_g_topology_free(info)
#endif

int hm_slurm_switches(hm_slurm_switch_fn fn, void *arg)
{
	dynamic_plugin_data_t *info = NULL;
	hm_topoinfo_tree_t *tree;
	int n = 0;

	if (HM_TOPO_GET(TOPO_DATA_TOPOLOGY_PTR, &info) != SLURM_SUCCESS || !info)
		return 0;
	tree = info->data;
	if (info->plugin_id == TOPOLOGY_PLUGIN_TREE && tree) {
		for (uint32_t i = 0; i < tree->record_count; i++) {
			topo_info_t *t = &tree->topo_array[i];
			hm_slurm_switch_t sw = {t->name, t->nodes, t->switches, t->level,
						t->link_speed};

			fn(arg, &sw);
			n++;
		}
	}
	HM_TOPO_FREE(info);
	return n;
}

int hm_slurm_topo_records(void)
{
	int n = 0;

	return HM_TOPO_GET(TOPO_DATA_REC_CNT, &n) == SLURM_SUCCESS ? n : 0;
}
#else
int hm_slurm_switches(hm_slurm_switch_fn fn, void *arg)
{
	int n = 0;

	for (int i = 0; switch_record_table && i < switch_record_cnt; i++) {
		switch_record_t *s = &switch_record_table[i];
		hm_slurm_switch_t sw = {s->name, s->nodes, s->switches, s->level, s->link_speed};

		fn(arg, &sw);
		n++;
	}
	return n;
}

int hm_slurm_topo_records(void)
{
	return switch_record_table ? switch_record_cnt : 0;
}
#endif
