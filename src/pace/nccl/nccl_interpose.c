/*
 * libharmonics-nccl.so: LD_PRELOAD interposer over every collective, group and
 * communicator-creation entry point of nccl.h (and destroy/abort, for the report).
 * Each wrapper finds the real function once (dlsym RTLD_NEXT, else the loaded
 * libnccl or the standard names: nccl_real.h), forwards its arguments unchanged
 * (a creation's config may be forwarded as a copy carrying the job's traffic
 * class) and returns the real return code: the interposer never adds an error of
 * its own (only a function that exists nowhere returns ncclSystemError, said
 * once). When no assignment can ever exist in this process (HARMONICS_MODE unset
 * or "off", no assignment file), or after an internal failure turned pacing off,
 * the wrappers only forward. Pacing logic lives in nccl_hold.c. Entry points newer
 * than the nccl.h built against are compiled out (NCCL_VERSION_CODE guards).
 */
#include <stdio.h>

#include <nccl.h>

#include "nccl_hold.h"
#include "nccl_real.h"

/* No real definition at all: nothing to forward to. Said once per process. */
static void say_missing(const char *name)
{
	static int said;

	if (__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
		return;
	fprintf(stderr,
		HM_NCCL_LOG_PREFIX "no real %s in this process (none after the interposer, in "
				   "no loaded libnccl, nor as libnccl.so.2 or libnccl.so): it "
				   "returns ncclSystemError (later missing functions are not "
				   "reported again)\n",
		name);
}

/* The real symbol behind name, cached in *slot (nccl_real.h); NULL if none. */
static void *nccl_real(const char *name, void **slot)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (f)
		return f;
	f = hm_nccl_real_sym(name);
	if (!f) {
		say_missing(name);
		return NULL;
	}
	__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	return f;
}

#define REAL(fn)                                                                                   \
	static void *real_slot_##fn;                                                               \
	__typeof__(&fn) real_##fn = (__typeof__(&fn))nccl_real(#fn, &real_slot_##fn);              \
	if (!real_##fn)                                                                            \
		return ncclSystemError;

/* A collective on stream: hold/stamp around the forwarded call when pacing. */
#define FORWARD_ON_STREAM(fn, stream, ...)                                                         \
	do {                                                                                       \
		ncclResult_t rc_;                                                                  \
		if (!hm_nccl_pacing_possible())                                                    \
			return real_##fn(__VA_ARGS__);                                             \
		hm_nccl_before(stream);                                                            \
		rc_ = real_##fn(__VA_ARGS__);                                                      \
		hm_nccl_after(stream);                                                             \
		return rc_;                                                                        \
	} while (0)

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   cudaStream_t stream)
{
	REAL(ncclAllReduce);
	FORWARD_ON_STREAM(ncclAllReduce, stream, sendbuff, recvbuff, count, datatype, op, comm,
			  stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	REAL(ncclReduceScatter);
	FORWARD_ON_STREAM(ncclReduceScatter, stream, sendbuff, recvbuff, recvcount, datatype, op,
			  comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclAllGather);
	FORWARD_ON_STREAM(ncclAllGather, stream, sendbuff, recvbuff, sendcount, datatype, comm,
			  stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclBroadcast);
	FORWARD_ON_STREAM(ncclBroadcast, stream, sendbuff, recvbuff, count, datatype, root, comm,
			  stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclReduce);
	FORWARD_ON_STREAM(ncclReduce, stream, sendbuff, recvbuff, count, datatype, op, root, comm,
			  stream);
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
		       cudaStream_t stream)
{
	REAL(ncclBcast);
	FORWARD_ON_STREAM(ncclBcast, stream, buff, count, datatype, root, comm, stream);
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
			  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclAlltoAll);
	FORWARD_ON_STREAM(ncclAlltoAll, stream, sendbuff, recvbuff, count, datatype, comm, stream);
}

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			int root, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclGather);
	FORWARD_ON_STREAM(ncclGather, stream, sendbuff, recvbuff, count, datatype, root, comm,
			  stream);
}

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclScatter);
	FORWARD_ON_STREAM(ncclScatter, stream, sendbuff, recvbuff, count, datatype, root, comm,
			  stream);
}
#endif

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclSend);
	FORWARD_ON_STREAM(ncclSend, stream, sendbuff, count, datatype, peer, comm, stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclRecv);
	FORWARD_ON_STREAM(ncclRecv, stream, recvbuff, count, datatype, peer, comm, stream);
}

/* nccl.h declares these without (void); give them a prototype. */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

ncclResult_t ncclGroupStart(void)
{
	ncclResult_t rc;

	REAL(ncclGroupStart);
	rc = real_ncclGroupStart();
	if (rc == ncclSuccess && hm_nccl_pacing_possible())
		hm_nccl_group_start();
	return rc;
}

ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t rc;

	REAL(ncclGroupEnd);
	if (hm_nccl_pacing_possible())
		hm_nccl_group_closing(); /* the group's hold, before its kernels */
	rc = real_ncclGroupEnd();
	/* Even a failed GroupEnd closes the group in NCCL: keep our depth in step. */
	if (hm_nccl_pacing_possible())
		hm_nccl_group_end();
	return rc;
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 22, 0)
/* Closes the group like GroupEnd but only estimates it: no hold, no stamps. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
	ncclResult_t rc;

	REAL(ncclGroupSimulateEnd);
	rc = real_ncclGroupSimulateEnd(simInfo);
	if (hm_nccl_pacing_possible())
		hm_nccl_group_discard();
	return rc;
}
#endif

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	REAL(ncclCommInitRank);
	hm_nccl_set_traffic_class();
	return real_ncclCommInitRank(comm, nranks, commId, rank);
}

ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	REAL(ncclCommInitAll);
	hm_nccl_set_traffic_class();
	return real_ncclCommInitAll(comm, ndev, devlist);
}

/* With a config the class goes into its trafficClass (no process-wide variables, which
 * NCCL would let override an application's own trafficClass); without, as InitRank. */
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	hm_nccl_config_buf_t buf;

	REAL(ncclCommInitRankConfig);
	if (!config)
		hm_nccl_set_traffic_class();
	return real_ncclCommInitRankConfig(comm, nranks, commId, rank,
					   hm_nccl_config(config, &buf));
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 23, 0)
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
				      ncclUniqueId *commIds, ncclConfig_t *config)
{
	hm_nccl_config_buf_t buf;

	REAL(ncclCommInitRankScalable);
	if (!config)
		hm_nccl_set_traffic_class();
	return real_ncclCommInitRankScalable(newcomm, nranks, myrank, nId, commIds,
					     hm_nccl_config(config, &buf));
}
#endif

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
/* Without a config the child inherits its parent's, class included. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config)
{
	hm_nccl_config_buf_t buf;

	REAL(ncclCommSplit);
	return real_ncclCommSplit(comm, color, key, newcomm, hm_nccl_config(config, &buf));
}
#endif

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
			    ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
	hm_nccl_config_buf_t buf;

	REAL(ncclCommShrink);
	return real_ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm,
				   hm_nccl_config(config, &buf), shrinkFlags);
}
#endif

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	REAL(ncclCommDestroy);
	hm_nccl_report();
	return real_ncclCommDestroy(comm);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	REAL(ncclCommAbort);
	hm_nccl_report();
	return real_ncclCommAbort(comm);
}
