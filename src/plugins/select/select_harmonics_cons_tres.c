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
 * Up to 24.11 this plugin is loaded by slurmctld, slurmd, slurmstepd and every
 * client, so it uses no slurmctld-only symbol and logs at verbose level only.
 * What differs between Slurm releases is in select_compat.h.
 */
#include "config.h" /* Slurm's (see m4/hm_slurm.m4) */

#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hm_plugin.h"
#include "select_compat.h"
#include "select_place.h"

const char plugin_name[] = "Harmonics contention-aware placement over cons_tres";
/* "cons_tres" must stay in the type: Slurm checks for that substring. */
const char plugin_type[] = "select/harmonics_cons_tres";
/* The id Slurm treats as cons_tres on this release (select_compat.h). */
const uint32_t plugin_id = HM_SELECT_PLUGIN_ID;
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static struct {
	void *handle;
	int (*init)(void);
	int (*fini)(void);
	hm_select_job_test_fn job_test;
	int (*job_fini)(job_record_t *);
#if HM_SELECT_HAS_JOB_MEM_REDUCE
	void (*job_mem_reduce)(job_record_t *);
#endif
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
#if HM_SELECT_HAS_JOB_MEM_REDUCE
	if (!(*(void **)&ct.job_mem_reduce = dlsym(ct.handle, "select_p_job_mem_reduce")))
		rc = SLURM_ERROR;
#endif
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
			     list_t *preemptee_candidates, list_t **preemptee_job_list,
			     HM_JOB_TEST_TAIL_PARAMS)
{
	hm_job_test_tail_t tail = HM_JOB_TEST_TAIL_INIT;
	int rc = SLURM_ERROR;

	if (hm_select_steerable(job_ptr, node_bitmap, min_nodes, max_nodes, req_nodes, mode,
				preemptee_candidates) &&
	    hm_select_place(ct.job_test, job_ptr, node_bitmap, min_nodes, max_nodes, req_nodes,
			    mode, &tail, &rc))
		return rc;
	return ct.job_test(job_ptr, node_bitmap, min_nodes, max_nodes, req_nodes, mode,
			   preemptee_candidates, preemptee_job_list, HM_JOB_TEST_TAIL_ARGS(&tail));
}

#if HM_SELECT_HAS_JOB_MEM_REDUCE
extern void select_p_job_mem_reduce(job_record_t *job_ptr)
{
	ct.job_mem_reduce(job_ptr);
}
#endif

/* A job that ended stops weighing on the next placements at once. */
extern int select_p_job_fini(job_record_t *job_ptr)
{
	if (job_ptr)
		hm_select_forget(job_ptr->job_id);
	return ct.job_fini(job_ptr);
}
