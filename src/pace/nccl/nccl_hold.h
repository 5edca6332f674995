/*
 * nccl_hold.h - what the NCCL interposer adds around the real calls: iteration
 * detection, holding the first collective of an iteration to its slot in stream
 * order (cudaLaunchHostFunc), burst-end stamps, and NCCL_IB_TC/SL from the
 * priority class. Internal to libharmonics-nccl.so.
 */
#ifndef NCCL_HOLD_H
#define NCCL_HOLD_H

#include <stdbool.h>
#include <stddef.h>

#include <nccl.h>

#define HM_NCCL_LOG_PREFIX "harmonics-nccl: "

/* Pacing may happen in this process (an assignment or an assignment file exists).
 * False means the wrappers only forward: one load and one branch per call. */
bool hm_nccl_pacing_possible(void);

/* An internal failure: pacing off for the rest of the process, the wrappers only
 * forward from now on. One line (why) on stderr, the first time only. */
void hm_nccl_pacing_off(const char *why);

/* Around a collective (or send/recv) on stream. */
void hm_nccl_before(cudaStream_t stream);
void hm_nccl_after(cudaStream_t stream);

/* Group nesting (NCCL defers a group's kernels to the outermost ncclGroupEnd):
 * start; closing (before the real GroupEnd: enqueues the group's hold); end (after
 * it: stamps); discard (after ncclGroupSimulateEnd, which launches nothing). */
void hm_nccl_group_start(void);
void hm_nccl_group_closing(void);
void hm_nccl_group_end(void);
void hm_nccl_group_discard(void);

/* Before communicator init without a config: export NCCL_IB_TC / NCCL_IB_SL unless
 * the user set them (process-wide; NCCL lets them override any config's class). */
void hm_nccl_set_traffic_class(void);

/* NCCL_CONFIG_INITIALIZER's magic (nccl.h writes it as a literal). */
#define HM_NCCL_CONFIG_MAGIC 0xcafebeefu

/* Room for the caller's ncclConfig_t, which may be larger than ours (newer nccl.h). */
typedef union {
	ncclConfig_t cfg;
	unsigned char bytes[1024];
	max_align_t align;
} hm_nccl_config_buf_t;

/*
 * The config to forward to a communicator-creating call: config itself (NULL,
 * pacing impossible, too old for a traffic class, or trafficClass set by the
 * application), or a copy in *buf with trafficClass set from the job's class
 * (nccl_class.h). The application's struct is never written.
 */
ncclConfig_t *hm_nccl_config(ncclConfig_t *config, hm_nccl_config_buf_t *buf);

/* Best-effort report at communicator teardown. */
void hm_nccl_report(void);

#endif
