/*
 * standin_profiler.h - what the STAND-IN chained profiler plugin
 * (standin_profiler.c, tests only) records, read by test_nccl_profiler.
 */
#ifndef STANDIN_PROFILER_H
#define STANDIN_PROFILER_H

#include <stdint.h>

#include "nprof_abi.h"

#define STANDIN_PROF_MAX_EVENTS 64
#define STANDIN_PROF_FAIL_ID    0xdeadull /* its init fails for this communicator id */
/* Groups and API events (which harmonics does not measure), collectives, proxy ops. */
#define STANDIN_PROF_MASK (NPROF_GROUP | NPROF_COLL | NPROF_PROXY_OP | NPROF_COLL_API)

typedef struct {
	int inits, starts, stops, records, finalizes, bad_context;
	uint64_t last_init_id;
	int last_init_nnodes, last_init_version;
	uint64_t start_type[STANDIN_PROF_MAX_EVENTS];
	void *start_parent[STANDIN_PROF_MAX_EVENTS];
	void *start_group[STANDIN_PROF_MAX_EVENTS]; /* v5 coll.parentGroup */
	void *stop_handle[STANDIN_PROF_MAX_EVENTS];
	void *record_handle[STANDIN_PROF_MAX_EVENTS];
	int record_state[STANDIN_PROF_MAX_EVENTS];
	uint64_t record_ptimer[STANDIN_PROF_MAX_EVENTS];
	nprof_result_t stop_rc, finalize_rc; /* what stopEvent / finalize return */
} standin_prof_log_t;

/* Its record (the test sets stop_rc / finalize_rc through it). */
standin_prof_log_t *standin_prof_log(void);
/* The handle its i-th startEvent returned. */
void *standin_prof_handle(int i);

#endif
