/*
 * select_harmonics_cons_tres.c - select/harmonics_cons_tres: contention-aware
 * placement on top of the installed select/cons_tres.
 *
 * Every entry point is forwarded to select_cons_tres.so (dlopen'd from
 * PluginDir, never dlclose'd). select_p_job_test is overridden for a job that
 * asked for communication scheduling (HARMONICS_COMM_SCHED in its job-control
 * environment, not "off") and needs a fixed number of nodes, chosen now
 * (RUN_NOW) or planned by backfill (WILL_RUN): select_place.c ranks cons_tres'
 * own choice and libharmonics' candidates with the placement score against
 * the coordinator's live view, and cons_tres allocates the best. Everything
 * else, and any job when the live view is missing, is cons_tres' alone.
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
#include "select_place.h"

const char plugin_name[] = "Harmonics contention-aware placement over cons_tres";
/* "cons_tres" must stay in the type: Slurm checks for that substring. */
const char plugin_type[] = "select/harmonics_cons_tres";
/* >= 100 and unique among every select_*.so in PluginDir. */
const uint32_t plugin_id = 180;
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* The cons_tres entry points forwarded as they are, in slurm_select_ops_t order
   (src/common/select.h); job_test and job_fini are overridden below. */
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

static struct {
	void *handle;
	int (*init)(void);
	int (*fini)(void);
	hm_select_job_test_fn job_test;
	int (*job_fini)(job_record_t *);
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
	ct.job_test = (hm_select_job_test_fn)dlsym(ct.handle, "select_p_job_test");
	*(void **)&ct.job_fini = dlsym(ct.handle, "select_p_job_fini");
	if (!ct.init || !ct.fini || !ct.job_test || !ct.job_fini)
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

/* Forwarders for everything but job_test and job_fini. */
#define X(ret, name, params, args)                                                                 \
	extern ret select_p_##name params                                                          \
	{                                                                                          \
		return ct.name args;                                                               \
	}
HM_SELECT_OPS(X)
#undef X

extern int select_p_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap, uint32_t min_nodes,
			     uint32_t max_nodes, uint32_t req_nodes, uint16_t mode,
			     List preemptee_candidates, List *preemptee_job_list,
			     bitstr_t *exc_core_bitmap)
{
	int rc = SLURM_ERROR;

	if (hm_select_steerable(job_ptr, node_bitmap, min_nodes, max_nodes, req_nodes, mode,
				preemptee_candidates) &&
	    hm_select_place(ct.job_test, job_ptr, node_bitmap, min_nodes, max_nodes, req_nodes,
			    mode, exc_core_bitmap, &rc))
		return rc;
	return ct.job_test(job_ptr, node_bitmap, min_nodes, max_nodes, req_nodes, mode,
			   preemptee_candidates, preemptee_job_list, exc_core_bitmap);
}

/* A job that ended stops weighing on the next placements at once. */
extern int select_p_job_fini(job_record_t *job_ptr)
{
	if (job_ptr)
		hm_select_forget(job_ptr->job_id);
	return ct.job_fini(job_ptr);
}
