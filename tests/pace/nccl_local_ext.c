/* A stand-in Python extension over the STAND-IN libnccl.so.2 (nccl_local_ext.h). */
#include "nccl_local_ext.h"

/* nccl.h declares these without (void). */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

static const ext_api_t api = {
    .all_reduce = ncclAllReduce,
    .broadcast = ncclBroadcast,
    .send = ncclSend,
    .group_start = ncclGroupStart,
    .group_end = ncclGroupEnd,
    .comm_init_rank = ncclCommInitRank,
    .comm_init_rank_config = ncclCommInitRankConfig,
    .comm_destroy = ncclCommDestroy,
    .group_simulate_end = ncclGroupSimulateEnd,
#if STANDIN_NCCL_2_28
    .comm_shrink = ncclCommShrink,
#endif
    .stream_create = cudaStreamCreate,
    .stream_sync = cudaStreamSynchronize,
    .stream_destroy = cudaStreamDestroy,
    .last_call = standin_last_call,
    .set_result = standin_set_result,
    .stream_ops = standin_stream_ops,
    .launch_attempts = standin_launch_attempts,
};

const ext_api_t *ext_api(void)
{
	return &api;
}
