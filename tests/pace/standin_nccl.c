/*
 * STAND-IN NCCL/CUDA library for the interposer tests only (see standin.h).
 * Not a simulator of NCCL: it records arguments, returns a chosen code and keeps
 * stream order, which is all the tests check.
 */
#define _GNU_SOURCE
#include "standin.h"
#include "standin_comm.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#define MAX_OPS     256
#define MAX_PENDING 64

typedef struct op {
	struct op *next;
	cudaHostFn_t fn; /* NULL: a kernel */
	void *arg;
	ncclComm_t comm; /* a kernel's communicator (a socket one: a barrier first) */
	char name[48];
} op_t;

struct CUstream_st {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	op_t *head, *tail;
	int busy, stop;
	enum cudaStreamCaptureStatus capture; /* being captured: work is recorded, not run */
	int captured_kernels, captured_hosts;
	int nops;
	standin_op_t done[MAX_OPS];
};

static pthread_mutex_t call_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_call[512];
static ncclResult_t result = ncclSuccess;
static int quiet;

/* Kernels of the open group, queued at the outermost ncclGroupEnd. */
static __thread int group_depth;
static __thread int npending;
static __thread struct {
	cudaStream_t stream;
	ncclComm_t comm;
	char name[48];
} pending[MAX_PENDING];

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *worker(void *arg)
{
	struct CUstream_st *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		op_t *o;
		int64_t t0;

		while (!s->head && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->head)
			break;
		o = s->head;
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		s->busy = 1;
		pthread_mutex_unlock(&s->mu);
		t0 = now_us();
		if (o->fn) {
			o->fn(o->arg);
		} else {
			struct timespec k = {0, STANDIN_KERNEL_US * 1000L};

			standin_comm_barrier(o->comm); /* the collective starts with its last rank */
			nanosleep(&k, NULL);
		}
		pthread_mutex_lock(&s->mu);
		if (s->nops < MAX_OPS) {
			standin_op_t *d = &s->done[s->nops++];

			snprintf(d->name, sizeof(d->name), "%s", o->name);
			d->start_us = t0;
			d->end_us = now_us();
		}
		s->busy = 0;
		free(o);
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void enqueue(cudaStream_t s, cudaHostFn_t fn, void *arg, const char *name, ncclComm_t comm)
{
	op_t *o;

	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	if (s->capture == cudaStreamCaptureStatusActive) {
		/* Captured into a graph: recorded, never run here. */
		if (fn)
			s->captured_hosts++;
		else
			s->captured_kernels++;
		pthread_mutex_unlock(&s->mu);
		return;
	}
	pthread_mutex_unlock(&s->mu);
	o = calloc(1, sizeof(*o));
	if (!o)
		return;
	o->fn = fn;
	o->arg = arg;
	o->comm = comm;
	snprintf(o->name, sizeof(o->name), "%s", name);
	pthread_mutex_lock(&s->mu);
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));

	if (!s)
		return cudaErrorMemoryAllocation;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pthread_create(&s->thread, NULL, worker, s) != 0) {
		free(s);
		return cudaErrorUnknown;
	}
	*pStream = s;
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	pthread_mutex_lock(&s->mu);
	while (s->head || s->busy)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	cudaStreamSynchronize(s);
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	free(s);
	return cudaSuccess;
}

static int launch_attempts;

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	__atomic_add_fetch(&launch_attempts, 1, __ATOMIC_RELAXED);
	if (getenv("STANDIN_LAUNCH_FAIL"))
		return cudaErrorNotPermitted; /* what a broken CUDA context would say */
	if (!stream || !fn)
		return cudaErrorInvalidValue;
	enqueue(stream, fn, userData, "host", NULL);
	return cudaSuccess;
}

int standin_stream_ops(cudaStream_t s, standin_op_t *ops, int max)
{
	int n;

	pthread_mutex_lock(&s->mu);
	n = s->nops;
	memcpy(ops, s->done, sizeof(*ops) * (size_t)(n < max ? n : max));
	pthread_mutex_unlock(&s->mu);
	return n;
}

int standin_launch_attempts(void)
{
	return __atomic_load_n(&launch_attempts, __ATOMIC_RELAXED);
}

const char *standin_last_call(void)
{
	return last_call;
}

void standin_set_result(ncclResult_t rc)
{
	result = rc;
}

void standin_set_quiet(int q)
{
	quiet = q;
}

static ncclResult_t record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static ncclResult_t record(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return result;
	pthread_mutex_lock(&call_mu);
	va_start(ap, fmt);
	vsnprintf(last_call, sizeof(last_call), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&call_mu);
	return result;
}

/* A collective's kernel: now, or at the outermost GroupEnd. */
static void kernel(cudaStream_t stream, const char *name, ncclComm_t comm)
{
	char k[48];

	if (!stream)
		return; /* NULL stream: record only (overhead timing) */
	snprintf(k, sizeof(k), "kernel:%s", name);
	if (group_depth > 0 && npending < MAX_PENDING) {
		pending[npending].stream = stream;
		pending[npending].comm = comm;
		snprintf(pending[npending].name, sizeof(pending[npending].name), "%s", k);
		npending++;
		return;
	}
	enqueue(stream, NULL, NULL, k, comm);
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%p,%zu,%d,%d,%p,%p)", __func__, sendbuff, recvbuff, count,
		      (int)datatype, (int)op, (void *)comm, (void *)stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%p,%zu,%d,%d,%p,%p)", __func__, sendbuff, recvbuff, recvcount,
		      (int)datatype, (int)op, (void *)comm, (void *)stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%p,%zu,%d,%p,%p)", __func__, sendbuff, recvbuff, sendcount,
		      (int)datatype, (void *)comm, (void *)stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%p,%zu,%d,%d,%p,%p)", __func__, sendbuff, recvbuff, count,
		      (int)datatype, root, (void *)comm, (void *)stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%p,%zu,%d,%d,%d,%p,%p)", __func__, sendbuff, recvbuff, count,
		      (int)datatype, (int)op, root, (void *)comm, (void *)stream);
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
		       cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%zu,%d,%d,%p,%p)", __func__, buff, count, (int)datatype, root,
		      (void *)comm, (void *)stream);
}

#if STANDIN_NCCL_2_28
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
			  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%p,%zu,%d,%p,%p)", __func__, sendbuff, recvbuff, count, (int)datatype,
		      (void *)comm, (void *)stream);
}

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			int root, ncclComm_t comm, cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%p,%zu,%d,%d,%p,%p)", __func__, sendbuff, recvbuff, count,
		      (int)datatype, root, (void *)comm, (void *)stream);
}

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%p,%zu,%d,%d,%p,%p)", __func__, sendbuff, recvbuff, count,
		      (int)datatype, root, (void *)comm, (void *)stream);
}

#endif

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%zu,%d,%d,%p,%p)", __func__, sendbuff, count, (int)datatype, peer,
		      (void *)comm, (void *)stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	kernel(stream, __func__, comm);
	return record("%s(%p,%zu,%d,%d,%p,%p)", __func__, recvbuff, count, (int)datatype, peer,
		      (void *)comm, (void *)stream);
}

/* nccl.h declares these without (void); give them a prototype. */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

ncclResult_t ncclGroupStart(void)
{
	group_depth++;
	return record("%s()", __func__);
}

ncclResult_t ncclGroupEnd(void)
{
	if (group_depth > 0 && --group_depth == 0) {
		for (int i = 0; i < npending; i++)
			enqueue(pending[i].stream, NULL, NULL, pending[i].name, pending[i].comm);
		npending = 0;
	}
	return record("%s()", __func__);
}

#ifndef STANDIN_OLD_NCCL
/* A simulated group end: the group closes, its kernels are never launched. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
	if (group_depth > 0 && --group_depth == 0)
		npending = 0;
	return record("%s(%p)", __func__, (void *)simInfo);
}
#endif

/* Init calls also record the NCCL_IB_TC / NCCL_IB_SL they would read. */
static const char *env_or_unset(const char *k)
{
	const char *v = getenv(k);

	return v ? v : "unset";
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	if (standin_comm_init(comm, nranks, &commId, rank) < 0)
		return ncclSystemError;
	return record("%s(%p,%d,%.8s,%d) TC=%s SL=%s", __func__, (void *)comm, nranks,
		      commId.internal, rank, env_or_unset("NCCL_IB_TC"),
		      env_or_unset("NCCL_IB_SL"));
}

ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	return record("%s(%p,%d,%p) TC=%s SL=%s", __func__, (void *)comm, ndev,
		      (const void *)devlist, env_or_unset("NCCL_IB_TC"),
		      env_or_unset("NCCL_IB_SL"));
}

/* What NCCL would read from a config: "cfg{null}" or its size, blocking flag, name and
 * traffic class (the forwarded struct may be the interposer's copy). */
static const char *config_str(const ncclConfig_t *c)
{
	static __thread char buf[160];

	if (!c)
		return "cfg{null}";
#if STANDIN_NCCL_2_28
	snprintf(buf, sizeof(buf), "cfg{size=%zu,blocking=%d,name=%s,tc=%d}", c->size, c->blocking,
		 c->commName ? c->commName : "-", c->trafficClass);
#else
	snprintf(buf, sizeof(buf), "cfg{size=%zu,blocking=%d}", c->size, c->blocking);
#endif
	return buf;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	if (standin_comm_init(comm, nranks, &commId, rank) < 0)
		return ncclSystemError;
	return record("%s(%p,%d,%.8s,%d,%s) TC=%s SL=%s", __func__, (void *)comm, nranks,
		      commId.internal, rank, config_str(config), env_or_unset("NCCL_IB_TC"),
		      env_or_unset("NCCL_IB_SL"));
}

#if STANDIN_NCCL_2_28
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
				      ncclUniqueId *commIds, ncclConfig_t *config)
{
	return record("%s(%p,%d,%d,%d,%.8s,%s) TC=%s SL=%s", __func__, (void *)newcomm, nranks,
		      myrank, nId, commIds[0].internal, config_str(config),
		      env_or_unset("NCCL_IB_TC"), env_or_unset("NCCL_IB_SL"));
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config)
{
	return record("%s(%p,%d,%d,%p,%s)", __func__, (void *)comm, color, key, (void *)newcomm,
		      config_str(config));
}

#ifndef STANDIN_OLD_NCCL
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
			    ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
	return record("%s(%p,%p,%d,%p,%s,%d)", __func__, (void *)comm, (void *)excludeRanksList,
		      excludeRanksCount, (void *)newcomm, config_str(config), shrinkFlags);
}
#endif

#endif

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	ncclResult_t rc = record("%s(%p)", __func__, (void *)comm);

	standin_comm_destroy(comm);
	return rc;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	ncclResult_t rc = record("%s(%p)", __func__, (void *)comm);

	standin_comm_destroy(comm);
	return rc;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	return standin_unique_id(uniqueId) == 0 ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	return standin_comm_count(comm, count) == 0 ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	return standin_comm_rank(comm, rank) == 0 ? ncclSuccess : ncclInvalidArgument;
}

/* STANDIN_NCCL_VERSION (a version code), else 2.25.0: an NCCL without trafficClass,
 * so the interposer exports NCCL_IB_TC/SL as the older tests expect. */
ncclResult_t ncclGetVersion(int *version)
{
	const char *v = getenv("STANDIN_NCCL_VERSION");

	*version = v ? atoi(v) : NCCL_VERSION(2, 25, 0);
	return ncclSuccess;
}

/* ---- stream capture: the stream records work instead of running it ---- */

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
	(void)mode;
	pthread_mutex_lock(&s->mu);
	s->capture = cudaStreamCaptureStatusActive;
	pthread_mutex_unlock(&s->mu);
	return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
	pthread_mutex_lock(&s->mu);
	s->capture = cudaStreamCaptureStatusNone;
	pthread_mutex_unlock(&s->mu);
	*graph = NULL; /* the stand-in keeps no graph: only the counts */
	return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
	if (!s) {
		*status = cudaStreamCaptureStatusNone;
		return cudaSuccess;
	}
	pthread_mutex_lock(&s->mu);
	*status = s->capture;
	pthread_mutex_unlock(&s->mu);
	return cudaSuccess;
}

void standin_captured(cudaStream_t s, int *kernels, int *hosts)
{
	pthread_mutex_lock(&s->mu);
	*kernels = s->captured_kernels;
	*hosts = s->captured_hosts;
	pthread_mutex_unlock(&s->mu);
}
