/*
 * STAND-IN profiler plugin, tests only (never installed): the user's own
 * NCCL profiler plugin that libnccl-profiler-harmonics.so chains to. It
 * records every call it gets (standin_prof_log) and answers with handles and
 * return codes the test can recognise: event handles are addresses inside
 * its own array (never inside the harmonics plugin's ring), init fails for
 * communicator id 0xdead, and stopEvent returns standin_prof_stop_rc.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nprof_abi.h"
#include "standin_profiler.h"

static standin_prof_log_t log_;
static char handles[STANDIN_PROF_MAX_EVENTS];
static int ctx_token;

standin_prof_log_t *standin_prof_log(void)
{
	return &log_;
}

void *standin_prof_handle(int i)
{
	return &handles[i];
}

static nprof_result_t init_common(void **context, uint64_t id, int *mask, int nnodes, int version)
{
	log_.inits++;
	log_.last_init_id = id;
	log_.last_init_nnodes = nnodes;
	log_.last_init_version = version;
	if (id == STANDIN_PROF_FAIL_ID) {
		*mask = 0;
		*context = NULL;
		return NPROF_INTERNAL_ERROR;
	}
	*mask = STANDIN_PROF_MASK;
	*context = &ctx_token;
	return NPROF_SUCCESS;
}

static nprof_result_t start_common(void *context, void **h, uint64_t type, void *parent)
{
	int i = log_.starts;

	if (context != &ctx_token || i >= STANDIN_PROF_MAX_EVENTS) {
		log_.bad_context++;
		*h = NULL;
		return NPROF_SUCCESS;
	}
	log_.start_type[i] = type;
	log_.start_parent[i] = parent;
	log_.starts++;
	*h = &handles[i];
	return NPROF_SUCCESS;
}

static nprof_result_t stop(void *h)
{
	if (log_.stops < STANDIN_PROF_MAX_EVENTS)
		log_.stop_handle[log_.stops] = h;
	log_.stops++;
	return log_.stop_rc;
}

static nprof_result_t record(void *h, nprof_state_t st, nprof_state_args_t *a)
{
	if (log_.records < STANDIN_PROF_MAX_EVENTS) {
		log_.record_handle[log_.records] = h;
		log_.record_state[log_.records] = st;
		log_.record_ptimer[log_.records] = a ? a->kernelCh.pTimer : 0;
	}
	log_.records++;
	return NPROF_SUCCESS;
}

static nprof_result_t finalize(void *context)
{
	log_.finalizes += context == &ctx_token;
	return log_.finalize_rc;
}

static nprof_result_t v5_init(void **context, uint64_t commId, int *mask, const char *name,
			      int nNodes, int nranks, int rank, nprof_logger_t logfn)
{
	(void)name, (void)nranks, (void)rank, (void)logfn;
	return init_common(context, commId, mask, nNodes, 5);
}

static nprof_result_t v5_start(void *context, void **h, nprof_descr_v5_t *d)
{
	nprof_result_t rc = start_common(context, h, d->type, d->parentObj);

	if (d->type == NPROF_COLL && log_.starts > 0)
		log_.start_group[log_.starts - 1] = d->coll.parentGroup;
	return rc;
}

static nprof_result_t v4_init(void **context, int *mask, const char *name, uint64_t commHash,
			      int nNodes, int nranks, int rank, nprof_logger_t logfn)
{
	(void)name, (void)nranks, (void)rank, (void)logfn;
	return init_common(context, commHash, mask, nNodes, 4);
}

static nprof_result_t v4_start(void *context, void **h, nprof_descr_v4_t *d)
{
	return start_common(context, h, d->type, d->parentObj);
}

const nprof_plugin_v5_t ncclProfiler_v5 = {"standin", v5_init, v5_start, stop, record, finalize};
const nprof_plugin_v4_t ncclProfiler_v4 = {"standin", v4_init, v4_start, stop, record, finalize};
