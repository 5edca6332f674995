/*
 * standin.h - STAND-IN NCCL/CUDA library, built only for the tests (never
 * installed, never used outside `make check`). It exports the NCCL entry points
 * the interposer wraps plus the few CUDA runtime calls it needs, with the real
 * prototypes from nccl.h / cuda_runtime_api.h, and records what it was called with.
 *
 * Streams are real queues: each has a worker thread that runs, in order, host
 * functions (cudaLaunchHostFunc) and "kernels" (one per collective, 2 ms of sleep).
 * Communicators made from an ncclGetUniqueId id are real groups of processes over
 * loopback sockets (standin_comm.h): a collective's kernel starts once every rank's
 * stream has reached it. A stream being captured (cudaStreamBeginCapture) records
 * its work instead of running it; cudaStreamIsCapturing says so.
 * Inside ncclGroupStart/End the kernels are queued at the outermost GroupEnd,
 * as real NCCL does; ncclGroupSimulateEnd closes the group and queues nothing.
 */
#ifndef STANDIN_H
#define STANDIN_H

#include <stdint.h>

#include <nccl.h>

#define STANDIN_KERNEL_US 2000

/* The entry points this stand-in and the tests cover beyond the oldest ones exist
 * in nccl.h from 2.28 (AlltoAll, Gather, Scatter; Shrink 2.27; trafficClass 2.25):
 * with an older header those parts are left out, as in the interposer. */
#define STANDIN_NCCL_2_28 (NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0))

typedef struct {
	char name[48];    /* "host" or "kernel:ncclAllReduce" */
	int64_t start_us; /* CLOCK_REALTIME */
	int64_t end_us;
} standin_op_t;

/* The last NCCL call, formatted "name(arg,arg,...)" with pointers as %p. */
const char *standin_last_call(void);
/* Result every stand-in NCCL call returns (default ncclSuccess). */
void standin_set_result(ncclResult_t rc);
/* Stop recording calls (for overhead timing). */
void standin_set_quiet(int quiet);
/* cudaLaunchHostFunc calls so far; with STANDIN_LAUNCH_FAIL set in the
 * environment each one fails (cudaErrorNotPermitted) and queues nothing. */
int standin_launch_attempts(void);
/* Built with STANDIN_OLD_NCCL (the libnccl.so.2 of tests/pace/localnccl/): an NCCL
 * older than the interposer's nccl.h, without ncclGroupSimulateEnd and ncclCommShrink. */
/* Work captured on stream (cudaStreamBeginCapture .. EndCapture): kernels and host
 * functions recorded into the "graph" instead of run. The interposer must add none. */
void standin_captured(cudaStream_t stream, int *kernels, int *hosts);
/* Executed ops of stream so far; returns the count, copies up to max into ops. */
int standin_stream_ops(cudaStream_t stream, standin_op_t *ops, int max);

#endif
