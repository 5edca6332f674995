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

#include "nccl_comm.h"
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

/* A collective of comm on stream: hold/stamp around the forwarded call when pacing. */
#define FORWARD_ON_STREAM(fn, comm, stream, ...)                                                   \
	do {                                                                                       \
		ncclResult_t rc_;                                                                  \
		hm_nccl_comm_t *c_;                                                                \
		if (!hm_nccl_pacing_possible())                                                    \
			return real_##fn(__VA_ARGS__);                                             \
		c_ = hm_nccl_before(comm, stream);                                                 \
		rc_ = real_##fn(__VA_ARGS__);                                                      \
		hm_nccl_after(c_, stream);                                                         \
		return rc_;                                                                        \
	} while (0)

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   cudaStream_t stream)
{
	REAL(ncclAllReduce);
	FORWARD_ON_STREAM(ncclAllReduce, comm, stream, sendbuff, recvbuff, count, datatype, op, comm,
			  stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	REAL(ncclReduceScatter);
	FORWARD_ON_STREAM(ncclReduceScatter, comm, stream, sendbuff, recvbuff, recvcount, datatype, op,
			  comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclAllGather);
	FORWARD_ON_STREAM(ncclAllGather, comm, stream, sendbuff, recvbuff, sendcount, datatype, comm,
			  stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclBroadcast);
	FORWARD_ON_STREAM(ncclBroadcast, comm, stream, sendbuff, recvbuff, count, datatype, root, comm,
			  stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclReduce);
	FORWARD_ON_STREAM(ncclReduce, comm, stream, sendbuff, recvbuff, count, datatype, op, root, comm,
			  stream);
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
		       cudaStream_t stream)
{
	REAL(ncclBcast);
	FORWARD_ON_STREAM(ncclBcast, comm, stream, buff, count, datatype, root, comm, stream);
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
			  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclAlltoAll);
	FORWARD_ON_STREAM(ncclAlltoAll, comm, stream, sendbuff, recvbuff, count, datatype, comm, stream);
}

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			int root, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclGather);
	FORWARD_ON_STREAM(ncclGather, comm, stream, sendbuff, recvbuff, count, datatype, root, comm,
			  stream);
}

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclScatter);
	FORWARD_ON_STREAM(ncclScatter, comm, stream, sendbuff, recvbuff, count, datatype, root, comm,
			  stream);
}
#endif

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclSend);
	FORWARD_ON_STREAM(ncclSend, comm, stream, sendbuff, count, datatype, peer, comm, stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	REAL(ncclRecv);
	FORWARD_ON_STREAM(ncclRecv, comm, stream, recvbuff, count, datatype, peer, comm, stream);
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

/* After a creation: the new communicator joins the table (nccl_comm.h). */
static void created(const hm_nccl_create_t *cr, ncclResult_t rc, ncclComm_t *comm, uint64_t key,
		    int nranks, hm_reach_t reach)
{
	if ((rc == ncclSuccess || rc == ncclInProgress) && comm && hm_nccl_pacing_possible())
		hm_nccl_comm_created(*comm, key, nranks, reach, cr->class_prio);
}

/* ncclCommInitRankConfig for a creation given a config by the interposer. */
static ncclResult_t init_rank_config(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
				     ncclConfig_t *config)
{
	REAL(ncclCommInitRankConfig);
	return real_ncclCommInitRankConfig(comm, nranks, id, rank, config);
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	hm_nccl_create_t cr;
	uint64_t key;
	ncclResult_t rc;

	REAL(ncclCommInitRank);
	if (!hm_nccl_pacing_possible())
		return real_ncclCommInitRank(comm, nranks, commId, rank);
	key = hm_nccl_key_id(&commId);
	hm_nccl_create_prepare(&cr, NULL, HM_NCCL_INJECT);
	hm_nccl_comm_announce(key);
	rc = cr.config ? init_rank_config(comm, nranks, commId, rank, cr.config)
		       : real_ncclCommInitRank(comm, nranks, commId, rank);
	created(&cr, rc, comm, key, nranks, HM_REACH_UNKNOWN);
	return rc;
}

/* One process, all its devices: node-local by construction. The variables only
 * (no config variant exists). */
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	hm_nccl_create_t cr;
	ncclResult_t rc;

	REAL(ncclCommInitAll);
	if (!hm_nccl_pacing_possible())
		return real_ncclCommInitAll(comm, ndev, devlist);
	hm_nccl_create_prepare(&cr, NULL, HM_NCCL_VARIABLES);
	rc = real_ncclCommInitAll(comm, ndev, devlist);
	for (int i = 0; rc == ncclSuccess && comm && i < ndev; i++)
		created(&cr, rc, &comm[i], 0, ndev, HM_REACH_LOCAL);
	return rc;
}

/* With a config the class goes into its trafficClass (no process-wide variables, which
 * NCCL would let override an application's own trafficClass); without, as InitRank. */
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	hm_nccl_create_t cr;
	uint64_t key;
	ncclResult_t rc;

	REAL(ncclCommInitRankConfig);
	if (!hm_nccl_pacing_possible())
		return real_ncclCommInitRankConfig(comm, nranks, commId, rank, config);
	key = hm_nccl_key_id(&commId);
	hm_nccl_create_prepare(&cr, config, HM_NCCL_INJECT);
	hm_nccl_comm_announce(key);
	rc = real_ncclCommInitRankConfig(comm, nranks, commId, rank, cr.config);
	created(&cr, rc, comm, key, nranks, HM_REACH_UNKNOWN);
	return rc;
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 23, 0)
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
				      ncclUniqueId *commIds, ncclConfig_t *config)
{
	hm_nccl_create_t cr;
	uint64_t key;
	ncclResult_t rc;

	REAL(ncclCommInitRankScalable);
	if (!hm_nccl_pacing_possible())
		return real_ncclCommInitRankScalable(newcomm, nranks, myrank, nId, commIds,
						     config);
	key = nId > 0 && commIds ? hm_nccl_key_id(&commIds[0]) : 0;
	hm_nccl_create_prepare(&cr, config, HM_NCCL_INJECT);
	hm_nccl_comm_announce(key);
	rc = real_ncclCommInitRankScalable(newcomm, nranks, myrank, nId, commIds, cr.config);
	created(&cr, rc, newcomm, key, nranks, HM_REACH_UNKNOWN);
	return rc;
}
#endif

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
/* Without a config the child inherits its parent's, class included. Its key: the
 * parent's, the split's ordinal on the parent (every rank splits in the same
 * order) and the color. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config)
{
	hm_nccl_create_t cr;
	uint64_t parent_key, child_key;
	int ordinal, parent_class;
	ncclResult_t rc;

	REAL(ncclCommSplit);
	if (!hm_nccl_pacing_possible())
		return real_ncclCommSplit(comm, color, key, newcomm, config);
	hm_nccl_comm_parent(comm, &parent_key, &ordinal, &parent_class);
	child_key = color == NCCL_SPLIT_NOCOLOR ? 0 : hm_nccl_key_child(parent_key, ordinal, color);
	hm_nccl_create_prepare(&cr, config, HM_NCCL_INHERIT);
	if (!config)
		cr.class_prio = parent_class;
	hm_nccl_comm_announce(child_key);
	rc = real_ncclCommSplit(comm, color, key, newcomm, cr.config);
	if (newcomm && *newcomm)
		created(&cr, rc, newcomm, child_key, -1, HM_REACH_UNKNOWN);
	return rc;
}
#endif

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
			    ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
	hm_nccl_create_t cr;
	uint64_t parent_key, child_key;
	int ordinal, parent_class;
	ncclResult_t rc;

	REAL(ncclCommShrink);
	if (!hm_nccl_pacing_possible())
		return real_ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm,
					   config, shrinkFlags);
	hm_nccl_comm_parent(comm, &parent_key, &ordinal, &parent_class);
	child_key = hm_nccl_key_child(parent_key, ordinal, -2);
	hm_nccl_create_prepare(&cr, config, HM_NCCL_INHERIT);
	if (!config)
		cr.class_prio = parent_class;
	hm_nccl_comm_announce(child_key);
	rc = real_ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm, cr.config,
				 shrinkFlags);
	if (newcomm && *newcomm)
		created(&cr, rc, newcomm, child_key, -1, HM_REACH_UNKNOWN);
	return rc;
}
#endif

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	REAL(ncclCommDestroy);
	hm_nccl_report();
	if (hm_nccl_pacing_possible())
		hm_nccl_comm_forget(comm);
	return real_ncclCommDestroy(comm);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	REAL(ncclCommAbort);
	hm_nccl_report();
	if (hm_nccl_pacing_possible())
		hm_nccl_comm_forget(comm);
	return real_ncclCommAbort(comm);
}
