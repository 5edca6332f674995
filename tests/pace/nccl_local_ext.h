/*
 * nccl_local_ext.h - a stand-in "Python extension" for tests/pace/test_nccl_local.c:
 * nccl_local_ext.so links the STAND-IN libnccl.so.2 (tests/pace/localnccl/) and is
 * dlopen'ed RTLD_LOCAL, as CPython loads extension modules, so that the stand-in
 * NCCL is a dependency in a local scope: dlsym(RTLD_NEXT) from the preloaded
 * interposer cannot see it, while the extension's own NCCL calls reach the
 * interposer first (the global scope comes first for every object).
 *
 * ext_api() hands out the addresses the extension's code would call, each taken
 * inside the extension (so bound the way its calls are bound).
 */
#ifndef NCCL_LOCAL_EXT_H
#define NCCL_LOCAL_EXT_H

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "standin.h"

typedef struct {
	/* NCCL, as the extension calls it (the interposer's wrappers) */
	__typeof__(&ncclAllReduce) all_reduce;
	__typeof__(&ncclBroadcast) broadcast;
	__typeof__(&ncclSend) send;
	__typeof__(&ncclGroupStart) group_start;
	__typeof__(&ncclGroupEnd) group_end;
	__typeof__(&ncclCommInitRank) comm_init_rank;
	__typeof__(&ncclCommInitRankConfig) comm_init_rank_config;
	__typeof__(&ncclCommDestroy) comm_destroy;
	/* absent from the stand-in libnccl.so.2 (an older NCCL): no real function */
	__typeof__(&ncclGroupSimulateEnd) group_simulate_end;
#if STANDIN_NCCL_2_28
	__typeof__(&ncclCommShrink) comm_shrink;
#endif
	/* the CUDA runtime and the stand-in's test hooks (only in the local scope) */
	__typeof__(&cudaStreamCreate) stream_create;
	__typeof__(&cudaStreamSynchronize) stream_sync;
	__typeof__(&cudaStreamDestroy) stream_destroy;
	__typeof__(&standin_last_call) last_call;
	__typeof__(&standin_set_result) set_result;
	__typeof__(&standin_stream_ops) stream_ops;
	__typeof__(&standin_launch_attempts) launch_attempts;
} ext_api_t;

const ext_api_t *ext_api(void);

#endif
