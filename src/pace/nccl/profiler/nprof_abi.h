/*
 * nprof_abi.h - our own declarations of NCCL's profiler plugin ABI, the two
 * versions libnccl-profiler-harmonics.so implements. Written from NCCL's
 * profiler plugin documentation (ext-profiler/README.md, later
 * plugins/profiler/README.md) and checked field by field against NCCL's
 * src/include/plugin/profiler/profiler_v4.h and profiler_v5.h:
 *
 *   version 4 (symbol ncclProfiler_v4): NCCL 2.27.x, still accepted by 2.28+;
 *   version 5 (symbol ncclProfiler_v5): NCCL 2.28.x to 2.30.x (unchanged
 *   there; 2.29 added version 6, which looks for v5 when a plugin has no v6).
 *
 * Nothing here comes from an NCCL header: the plugin builds without NCCL.
 * Layouts must match NCCL's exactly, since descriptors are copied whole when
 * they are forwarded to a chained plugin (a union member added later would
 * come with a new version number, never into these).
 */
#ifndef NPROF_ABI_H
#define NPROF_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ncclResult_t: an int-sized enum; plugins return 0 (ncclSuccess) except from init. */
typedef int nprof_result_t;
#define NPROF_SUCCESS        0
#define NPROF_INTERNAL_ERROR 3
#define NPROF_INVALID_ARG    4

/* ncclDebugLogger_t: level (3 = INFO), subsystem flags (NCCL_PROFILE = 1 << 14). */
typedef void (*nprof_logger_t)(int level, unsigned long flags, const char *file, int line,
			       const char *fmt, ...);
#define NPROF_LOG_WARN    2
#define NPROF_LOG_INFO    3
#define NPROF_LOG_PROFILE (1ul << 14)

/* Event type bits (the descriptor's type and the activation mask). */
enum {
	NPROF_GROUP = 1 << 0,
	NPROF_COLL = 1 << 1,
	NPROF_P2P = 1 << 2,
	NPROF_PROXY_OP = 1 << 3,
	NPROF_PROXY_STEP = 1 << 4,
	NPROF_PROXY_CTRL = 1 << 5,
	NPROF_KERNEL_CH = 1 << 6,
	NPROF_NET_PLUGIN = 1 << 7,
	NPROF_GROUP_API = 1 << 8,     /* v5 */
	NPROF_COLL_API = 1 << 9,      /* v5 */
	NPROF_P2P_API = 1 << 10,      /* v5 */
	NPROF_KERNEL_LAUNCH = 1 << 11 /* v5 */
};

/* ncclProfilerEventState_vN_t: an int-sized enum; the one state we read. */
typedef int nprof_state_t;
#define NPROF_STATE_KERNEL_CH_STOP 22 /* its args carry the kernel's stop ptimer */

/* Version 4 event descriptor (ncclProfilerEventDescr_v4_t). */
typedef struct {
	uint8_t type;
	void *parentObj; /* the parent's handle as this plugin returned it */
	int rank;
	union {
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
		} p2p;
		struct {
			pid_t pid; /* the originating process: PXN parents may be another's */
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
		struct {
			uint8_t channelId;
			uint64_t pTimer; /* kernel start, GPU globaltimer (ns) */
		} kernelCh;
		struct {
			int64_t id;
			void *data;
		} netPlugin;
	};
} nprof_descr_v4_t;

/* Version 5 event descriptor (ncclProfilerEventDescr_v5_t): a 64-bit type, API events. */
typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			bool graphCaptured;
			int groupDepth;
		} groupApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graphCaptured;
		} collApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			void *stream;
			bool graphCaptured;
		} p2pApi;
		struct {
			void *stream;
		} kernelLaunch;
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
			void *parentGroup; /* the v4-style group event's handle */
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
			void *parentGroup;
		} p2p;
		struct {
			pid_t pid;
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
		struct {
			uint8_t channelId;
			uint64_t pTimer;
		} kernelCh;
		struct {
			int64_t id;
			void *data;
		} netPlugin;
	};
} nprof_descr_v5_t;

/* Event state arguments, the same in v4 and v5 (ncclProfilerEventStateArgs_v4/5_t). */
typedef union {
	struct {
		size_t transSize;
	} proxyStep;
	struct {
		int appendedProxyOps;
	} proxyCtrl;
	struct {
		void *data;
	} netPlugin;
	struct {
		uint64_t pTimer; /* with NPROF_STATE_KERNEL_CH_STOP: kernel stop (ns) */
	} kernelCh;
} nprof_state_args_t;

/* ncclProfiler_v4_t. init: one context per communicator (commHash identifies it). */
typedef struct {
	const char *name;
	nprof_result_t (*init)(void **context, int *eActivationMask, const char *commName,
			       uint64_t commHash, int nNodes, int nranks, int rank,
			       nprof_logger_t logfn);
	nprof_result_t (*startEvent)(void *context, void **eHandle, nprof_descr_v4_t *eDescr);
	nprof_result_t (*stopEvent)(void *eHandle);
	nprof_result_t (*recordEventState)(void *eHandle, nprof_state_t eState,
					   nprof_state_args_t *eStateArgs);
	nprof_result_t (*finalize)(void *context);
} nprof_plugin_v4_t;

/* ncclProfiler_v5_t: init's commId comes first. */
typedef struct {
	const char *name;
	nprof_result_t (*init)(void **context, uint64_t commId, int *eActivationMask,
			       const char *commName, int nNodes, int nranks, int rank,
			       nprof_logger_t logfn);
	nprof_result_t (*startEvent)(void *context, void **eHandle, nprof_descr_v5_t *eDescr);
	nprof_result_t (*stopEvent)(void *eHandle);
	nprof_result_t (*recordEventState)(void *eHandle, nprof_state_t eState,
					   nprof_state_args_t *eStateArgs);
	nprof_result_t (*finalize)(void *context);
} nprof_plugin_v5_t;

#define NPROF_SYMBOL_V4 "ncclProfiler_v4"
#define NPROF_SYMBOL_V5 "ncclProfiler_v5"

#endif
