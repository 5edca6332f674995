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

#include "nccl_comm.h"

#define HM_NCCL_LOG_PREFIX "harmonics-nccl: "

/* Pacing may happen in this process (an assignment or an assignment file exists).
 * False means the wrappers only forward: one load and one branch per call. */
bool hm_nccl_pacing_possible(void);

/* An internal failure: pacing off for the rest of the process, the wrappers only
 * forward from now on. One line (why) on stderr, the first time only. */
void hm_nccl_pacing_off(const char *why);

/* Around a collective (or send/recv) of comm on stream: before returns comm's
 * entry when comm is the paced communicator (pass it to after), else NULL. */
hm_nccl_comm_t *hm_nccl_before(ncclComm_t comm, cudaStream_t stream);
void hm_nccl_after(hm_nccl_comm_t *c, cudaStream_t stream);

/* Group nesting (NCCL defers a group's kernels to the outermost ncclGroupEnd):
 * start; closing (before the real GroupEnd: enqueues the group's hold); end (after
 * it: stamps); discard (after ncclGroupSimulateEnd, which launches nothing). */
void hm_nccl_group_start(void);
void hm_nccl_group_closing(void);
void hm_nccl_group_end(void);
void hm_nccl_group_discard(void);

/* NCCL_CONFIG_INITIALIZER's magic (nccl.h writes it as a literal). */
#define HM_NCCL_CONFIG_MAGIC 0xcafebeefu

/* Room for the caller's ncclConfig_t, which may be larger than ours (newer nccl.h). */
typedef union {
	ncclConfig_t cfg;
	unsigned char bytes[1024];
	max_align_t align;
} hm_nccl_config_buf_t;

/* A communicator being created: the config to forward and the class it carries. */
typedef struct {
	hm_nccl_config_buf_t buf;
	ncclConfig_t *config; /* forward this (the caller's, NULL, or buf's copy) */
	int class_prio;       /* class the new communicator carries; -1 none or not ours */
} hm_nccl_create_t;

typedef enum {
	HM_NCCL_INJECT,  /* no config: one with the class may be given (InitRank, ...) */
	HM_NCCL_INHERIT, /* no config means the parent's (Split, Shrink): left so */
	HM_NCCL_VARIABLES, /* no config variant (InitAll): the variables only */
} hm_nccl_inject_t;

/*
 * Before a communicator-creating call, with the class in force now (a class
 * change reaches every communicator created after it). With a config: a copy
 * carrying trafficClass unless the application set one (NCCL >= 2.25 headers).
 * Without one (inject): on an NCCL that takes trafficClass (>= 2.26, asked with
 * ncclGetVersion) and when the user set neither NCCL_IB_TC nor NCCL_IB_SL, a
 * default config (NCCL_CONFIG_INITIALIZER) carrying it, forwarded to the Config
 * variant; else NCCL_IB_TC / NCCL_IB_SL are exported (replacing the
 * interposer's own earlier export, never the user's), which NCCL reads once per
 * process: the first class stays in force, as cr->class_prio says.
 */
void hm_nccl_create_prepare(hm_nccl_create_t *cr, ncclConfig_t *config, hm_nccl_inject_t inject);

/* Best-effort report at communicator teardown. */
void hm_nccl_report(void);

#endif
