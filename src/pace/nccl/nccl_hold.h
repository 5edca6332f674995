/*
 * nccl_hold.h - what the NCCL interposer adds around the real calls: iteration
 * detection, holding the first collective of an iteration to its slot in stream
 * order (cudaLaunchHostFunc), burst-end stamps, and NCCL_IB_TC/SL from the
 * priority class. Internal to libharmonics-nccl.so.
 */
#ifndef NCCL_HOLD_H
#define NCCL_HOLD_H

#include <stdbool.h>

#include <nccl.h>

#define HM_NCCL_LOG_PREFIX "harmonics-nccl: "

/* Pacing may happen in this process (an assignment or an assignment file exists).
 * False means the wrappers only forward: one load and one branch per call. */
bool hm_nccl_pacing_possible(void);

/* Around a collective (or send/recv) on stream. */
void hm_nccl_before(cudaStream_t stream);
void hm_nccl_after(cudaStream_t stream);

/* Group nesting (NCCL defers a group's kernels to the outermost ncclGroupEnd). */
void hm_nccl_group_start(void);
void hm_nccl_group_end(void);

/* Before communicator init: export NCCL_IB_TC / NCCL_IB_SL unless the user set them. */
void hm_nccl_set_traffic_class(void);

/* Traffic class (NCCL_IB_TC = DSCP << 2) and service level for priority class prio
 * (0 = highest, 7 = lowest); -1 for a class out of range. */
int hm_nccl_class_tc(int prio);
int hm_nccl_class_sl(int prio);

/* Best-effort report at communicator teardown. */
void hm_nccl_report(void);

#endif
