/*
 * select_harmonics_cons_tres.c - select/harmonics_cons_tres: contention-aware
 * placement on top of the installed select/cons_tres.
 *
 * Every entry point is forwarded to select_cons_tres.so (dlopen'd from
 * PluginDir, never dlclose'd). select_p_job_test is overridden: a job that asked
 * for communication scheduling (HARMONICS_COMM_SCHED in its job-control
 * environment, not "off") is first offered the nodes of a single rack
 * (topology/tree leaf switch), emptiest rack first, so its bursts stay off the
 * shared uplinks; when no rack fits, cons_tres places it as usual.
 *
 * This plugin is loaded by slurmctld, slurmd, slurmstepd and every client, so it
 * uses no slurmctld-only symbol and logs at verbose level only.
 */
#include "config.h" /* Slurm's (see m4/hm_slurm.m4) */

#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/select.h"
#include "src/common/slurm_topology.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "hm_plugin.h"

const char plugin_name[] = "Harmonics contention-aware placement over cons_tres";
/* "cons_tres" must stay in the type: Slurm checks for that substring. */
const char plugin_type[] = "select/harmonics_cons_tres";
/* >= 100 and unique among every select_*.so in PluginDir. */
const uint32_t plugin_id = 180;
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* The 36 cons_tres entry points, in slurm_select_ops_t order (src/common/select.h). */
#define HM_SELECT_OPS(X)                                                                           \
	X(int, state_save, (char *a), (a))                                                         \
	X(int, state_restore, (char *a), (a))                                                      \
	X(int, job_init, (List a), (a))                                                            \
	X(int, node_init, (void), ())                                                              \
	X(int, job_begin, (job_record_t * a), (a))                                                 \
	X(int, job_ready, (job_record_t * a), (a))                                                 \
	X(int, job_expand, (job_record_t * a, job_record_t * b), (a, b))                           \
	X(int, job_resized, (job_record_t * a, node_record_t * b), (a, b))                         \
	X(int, job_signal, (job_record_t * a, int b), (a, b))                                      \
	X(int, job_fini, (job_record_t * a), (a))                                                  \
	X(int, job_suspend, (job_record_t * a, bool b), (a, b))                                    \
	X(int, job_resume, (job_record_t * a, bool b), (a, b))                                     \
	X(bitstr_t *, step_pick_nodes,                                                             \
	  (job_record_t * a, select_jobinfo_t * b, uint32_t c, bitstr_t * *d), (a, b, c, d))       \
	X(int, step_start, (step_record_t * a), (a))                                               \
	X(int, step_finish, (step_record_t * a, bool b), (a, b))                                   \
	X(int, select_nodeinfo_pack, (select_nodeinfo_t * a, buf_t * b, uint16_t c), (a, b, c))    \
	X(int, select_nodeinfo_unpack, (select_nodeinfo_t * *a, buf_t * b, uint16_t c), (a, b, c)) \
	X(select_nodeinfo_t *, select_nodeinfo_alloc, (void), ())                                  \
	X(int, select_nodeinfo_free, (select_nodeinfo_t * a), (a))                                 \
	X(int, select_nodeinfo_set_all, (void), ())                                                \
	X(int, select_nodeinfo_set, (job_record_t * a), (a))                                       \
	X(int, select_nodeinfo_get,                                                                \
	  (select_nodeinfo_t * a, enum select_nodedata_type b, enum node_states c, void *d),       \
	  (a, b, c, d))                                                                            \
	X(select_jobinfo_t *, select_jobinfo_alloc, (void), ())                                    \
	X(int, select_jobinfo_free, (select_jobinfo_t * a), (a))                                   \
	X(int, select_jobinfo_set, (select_jobinfo_t * a, enum select_jobdata_type b, void *c),    \
	  (a, b, c))                                                                               \
	X(int, select_jobinfo_get, (select_jobinfo_t * a, enum select_jobdata_type b, void *c),    \
	  (a, b, c))                                                                               \
	X(select_jobinfo_t *, select_jobinfo_copy, (select_jobinfo_t * a), (a))                    \
	X(int, select_jobinfo_pack, (select_jobinfo_t * a, buf_t * b, uint16_t c), (a, b, c))      \
	X(int, select_jobinfo_unpack, (select_jobinfo_t * *a, buf_t * b, uint16_t c), (a, b, c))   \
	X(char *, select_jobinfo_sprint, (select_jobinfo_t * a, char *b, size_t c, int d),         \
	  (a, b, c, d))                                                                            \
	X(char *, select_jobinfo_xstrdup, (select_jobinfo_t * a, int b), (a, b))                   \
	X(int, get_info_from_plugin, (enum select_plugindata_info a, job_record_t * b, void *c),   \
	  (a, b, c))                                                                               \
	X(int, update_node_config, (int a), (a))                                                   \
	X(int, reconfigure, (void), ())                                                            \
	X(bitstr_t *, resv_test, (resv_desc_msg_t * a, uint32_t b, bitstr_t * c, bitstr_t * *d),   \
	  (a, b, c, d))

typedef int (*job_test_fn)(job_record_t *, bitstr_t *, uint32_t, uint32_t, uint32_t, uint16_t, List,
			   List *, bitstr_t *);

static struct {
	void *handle;
	int (*init)(void);
	int (*fini)(void);
	job_test_fn job_test;
#define X(ret, name, params, args) ret(*name) params;
	HM_SELECT_OPS(X)
#undef X
} ct;

static void cons_tres_open_failed(const char *path, const char *why)
{
	error("select/harmonics_cons_tres: %s: %s", path, why);
}

/* Resolve cons_tres from PluginDir. */
static int load_cons_tres(void)
{
	int rc = SLURM_SUCCESS;

	if (ct.handle)
		return SLURM_SUCCESS;
	ct.handle =
	    hm_plugin_dlopen(slurm_conf.plugindir, "select_cons_tres.so", cons_tres_open_failed);
	if (!ct.handle) {
		error("select/harmonics_cons_tres: select_cons_tres.so not found in PluginDir %s",
		      slurm_conf.plugindir);
		return SLURM_ERROR;
	}
	ct.init = (int (*)(void))dlsym(ct.handle, "init");
	ct.fini = (int (*)(void))dlsym(ct.handle, "fini");
	ct.job_test = (job_test_fn)dlsym(ct.handle, "select_p_job_test");
	if (!ct.init || !ct.fini || !ct.job_test)
		rc = SLURM_ERROR;
#define X(ret, name, params, args)                                                                 \
	if (!(*(void **)&ct.name = dlsym(ct.handle, "select_p_" #name))) {                         \
		error("select/harmonics_cons_tres: cons_tres lacks select_p_" #name);              \
		rc = SLURM_ERROR;                                                                  \
	}
	HM_SELECT_OPS(X)
#undef X
	return rc;
}

extern int init(void)
{
	if (load_cons_tres() != SLURM_SUCCESS)
		return SLURM_ERROR;
	verbose("select/harmonics_cons_tres: harmonics %s built for Slurm %s, over cons_tres",
		HM_VERSION, HM_SLURM_VERSION_BUILT);
	return ct.init();
}

extern int fini(void)
{
	return ct.fini ? ct.fini() : SLURM_SUCCESS;
}

/* Forwarders for everything but job_test. */
#define X(ret, name, params, args)                                                                 \
	extern ret select_p_##name params                                                          \
	{                                                                                          \
		return ct.name args;                                                               \
	}
HM_SELECT_OPS(X)
#undef X

static bool wants_comm_sched(const job_record_t *job)
{
	const char *mode =
	    hm_plugin_env_get(job->spank_job_env, job->spank_job_env_size, HM_SPANK_ENV_MODE);

	return mode && strcmp(mode, "off") != 0;
}

/* Leaf switches (racks), those with the most available nodes first. */
static int rack_order(const bitstr_t *avail, int *idx, int *avail_cnt)
{
	int n = 0;

	for (int i = 0; i < switch_record_cnt; i++) {
		bitstr_t *b;
		if (switch_record_table[i].level != 0 || !switch_record_table[i].node_bitmap)
			continue;
		b = bit_copy(switch_record_table[i].node_bitmap);
		bit_and(b, (bitstr_t *)avail);
		avail_cnt[n] = bit_set_count(b);
		idx[n++] = i;
		FREE_NULL_BITMAP(b);
	}
	/* Insertion sort: few racks. */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && avail_cnt[j] > avail_cnt[j - 1]; j--) {
			int t = idx[j], c = avail_cnt[j];
			idx[j] = idx[j - 1];
			avail_cnt[j] = avail_cnt[j - 1];
			idx[j - 1] = t;
			avail_cnt[j - 1] = c;
		}
	return n;
}

extern int select_p_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap, uint32_t min_nodes,
			     uint32_t max_nodes, uint32_t req_nodes, uint16_t mode,
			     List preemptee_candidates, List *preemptee_job_list,
			     bitstr_t *exc_core_bitmap)
{
	int *idx = NULL, *cnt = NULL, nracks;

	/* Only a run-now placement without preemption is steered; others as cons_tres. */
	if (!job_ptr || !node_bitmap || switch_record_cnt <= 0 || !switch_record_table ||
	    mode != SELECT_MODE_RUN_NOW || preemptee_candidates || !wants_comm_sched(job_ptr))
		goto fallback;
	idx = xcalloc(switch_record_cnt, sizeof(int));
	cnt = xcalloc(switch_record_cnt, sizeof(int));
	nracks = rack_order(node_bitmap, idx, cnt);
	for (int r = 0; r < nracks; r++) {
		bitstr_t *try;
		int rc;
		if (cnt[r] < (int)min_nodes)
			continue;
		try = bit_copy(switch_record_table[idx[r]].node_bitmap);
		bit_and(try, node_bitmap);
		rc = ct.job_test(job_ptr, try, min_nodes, max_nodes, req_nodes, mode, NULL, NULL,
				 exc_core_bitmap);
		if (rc == SLURM_SUCCESS) {
			verbose("select/harmonics_cons_tres: JobId=%u placed inside rack %s",
				job_ptr->job_id, switch_record_table[idx[r]].name);
			bit_copybits(node_bitmap, try);
			FREE_NULL_BITMAP(try);
			xfree(idx);
			xfree(cnt);
			return SLURM_SUCCESS;
		}
		FREE_NULL_BITMAP(try);
	}
	verbose("select/harmonics_cons_tres: JobId=%u fits in no single rack; cons_tres places it",
		job_ptr->job_id);
	xfree(idx);
	xfree(cnt);
fallback:
	return ct.job_test(job_ptr, node_bitmap, min_nodes, max_nodes, req_nodes, mode,
			   preemptee_candidates, preemptee_job_list, exc_core_bitmap);
}
