/*
 * nccl_job - a STAND-IN training job (tests only) for tests/slurm/nccl_standin.sh
 * and tests/gpu/check_nccl_gpu.sh's stand-in twin: one task of a 2-D parallel job
 * over the stand-in NCCL/CUDA library (tests/pace/standin.h): a tensor-parallel
 * communicator within each node (the ranks of one SLURM_NODEID) and a
 * data-parallel one across nodes (the ranks of one SLURM_LOCALID), each on its
 * own stream, created with ncclCommInitRank from ids shared through files in DIR
 * (as torch shares them through its store). The job runs with the interposer
 * preloaded by the SPANK plugin; nothing in it knows Harmonics.
 *
 *   nccl_job DIR ITERS COMPUTE_MS SKEW_MS
 *
 * Per iteration: compute (sleep COMPUTE_MS, plus SKEW_MS on the ranks of node 1
 * every other iteration: deliberately skewed ranks), two all-reduces on the TP
 * communicator, one on the DP communicator, both streams synchronised. In the
 * middle, a call the loaded NCCL lacks (ncclGroupSimulateEnd: the stand-in
 * libnccl.so.2 is an older NCCL), which must fail open. Then, with the class
 * changed in the assignment file (DIR/assign, rewritten by rank 0), a second DP
 * communicator; then one DP all-reduce captured into a graph.
 * Prints KEY=VALUE lines the test script reads; exit 0 unless the job itself broke.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "standin.h"

#define ID_WAIT_MS 30000
#define MAX_OPS    256

static int env_int(const char *k, int def)
{
	const char *v = getenv(k);

	return v && *v ? atoi(v) : def;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The root writes the id (atomically); the others wait for it (bounded). */
static int share_id(const char *dir, const char *name, int root, ncclUniqueId *id)
{
	char path[4096], tmp[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.id", dir, name);
	if (root) {
		if (ncclGetUniqueId(id) != ncclSuccess)
			return -1;
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
		if (!(f = fopen(tmp, "w")))
			return -1;
		fwrite(id, sizeof(*id), 1, f);
		if (fclose(f) != 0 || rename(tmp, path) != 0)
			return -1;
		return 0;
	}
	for (int waited = 0; waited < ID_WAIT_MS; waited += 10) {
		if ((f = fopen(path, "r"))) {
			size_t n = fread(id, sizeof(*id), 1, f);

			fclose(f);
			if (n == 1)
				return 0;
		}
		sleep_ms(10);
	}
	fprintf(stderr, "nccl_job: no id %s after %d ms\n", path, ID_WAIT_MS);
	return -1;
}

static int host_ops(cudaStream_t s)
{
	standin_op_t ops[MAX_OPS];
	int n = standin_stream_ops(s, ops, MAX_OPS), hosts = 0;

	for (int i = 0; i < n && i < MAX_OPS; i++)
		hosts += strcmp(ops[i].name, "host") == 0;
	return hosts;
}

/* The "tc=N" the stand-in recorded for the last creation, -1 when none. */
static int last_tc(void)
{
	const char *t = strstr(standin_last_call(), "tc=");

	return t ? atoi(t + 3) : -1;
}

static int write_assign(const char *dir, int prio)
{
	char path[4096], tmp[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/assign", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(path, "r")))
		return -1;
	{
		char buf[4096];
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		FILE *o;

		fclose(f);
		buf[n] = '\0';
		if (!(o = fopen(tmp, "w")))
			return -1;
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
			if (strncmp(line, "HARMONICS_PRIO=", 15) != 0)
				fprintf(o, "%s\n", line);
		fprintf(o, "HARMONICS_PRIO=%d\n", prio);
		if (fclose(o) != 0)
			return -1;
	}
	return rename(tmp, path);
}

int main(int argc, char **argv)
{
	const char *dir;
	int iters, compute_ms, skew_ms, rank, ntasks, node, nnodes, local, per_node, rc = 1;
	ncclUniqueId tp_id, dp_id, dp2_id;
	ncclComm_t tp = NULL, dp = NULL, dp2 = NULL;
	cudaStream_t tp_s, dp_s, dp2_s;
	char name[64];
	int tc_dp, tc_dp2, kernels = 0, hosts = 0;
	ncclResult_t missing;
	ncclResult_t (*simulate_end)(ncclSimInfo_t *);
	struct timespec t0, t1;

	if (argc != 5) {
		fprintf(stderr, "usage: nccl_job DIR ITERS COMPUTE_MS SKEW_MS\n");
		return 2;
	}
	dir = argv[1];
	iters = atoi(argv[2]);
	compute_ms = atoi(argv[3]);
	skew_ms = atoi(argv[4]);
	rank = env_int("SLURM_PROCID", 0);
	ntasks = env_int("SLURM_NTASKS", 1);
	node = env_int("SLURM_NODEID", 0);
	nnodes = env_int("SLURM_NNODES", 1);
	local = env_int("SLURM_LOCALID", 0);
	per_node = ntasks / nnodes;
	if (cudaStreamCreate(&tp_s) != cudaSuccess || cudaStreamCreate(&dp_s) != cudaSuccess ||
	    cudaStreamCreate(&dp2_s) != cudaSuccess)
		return 1;

	/* TP: the ranks of this node; DP: the ranks of this local index on every node. */
	snprintf(name, sizeof(name), "tp.%d", node);
	if (share_id(dir, name, local == 0, &tp_id) != 0 ||
	    ncclCommInitRank(&tp, per_node, tp_id, local) != ncclSuccess)
		goto out;
	snprintf(name, sizeof(name), "dp.%d", local);
	if (share_id(dir, name, node == 0, &dp_id) != 0 ||
	    ncclCommInitRank(&dp, nnodes, dp_id, node) != ncclSuccess)
		goto out;
	tc_dp = last_tc();

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < iters; i++) {
		long c = compute_ms + (node == 1 && i % 2 == 1 ? skew_ms : 0);

		sleep_ms(c);
		ncclAllReduce((void *)0x1000, (void *)0x2000, 1, ncclFloat32, ncclSum, tp, tp_s);
		ncclAllReduce((void *)0x1000, (void *)0x2000, 1, ncclFloat32, ncclSum, tp, tp_s);
		ncclAllReduce((void *)0x1000, (void *)0x2000, 1, ncclFloat32, ncclSum, dp, dp_s);
		cudaStreamSynchronize(tp_s);
		cudaStreamSynchronize(dp_s);
		if (i == iters / 2) {
			/* The loaded NCCL lacks it: the interposer's wrapper, nothing behind. */
			simulate_end = (ncclResult_t(*)(ncclSimInfo_t *))dlsym(RTLD_DEFAULT,
									      "ncclGroupSimulateEnd");
			ncclGroupStart();
			missing = simulate_end ? simulate_end(NULL) : ncclInternalError;
			ncclGroupEnd(); /* the group the failed call could not close */
			printf("MISSING_RC=%d\n", (int)missing);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("RANK=%d NODE=%d ITER_MEAN_MS=%.1f\n", rank, node,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) /
		   iters);
	printf("TP_HOSTS=%d DP_HOSTS=%d\n", host_ops(tp_s), host_ops(dp_s));

	/* A class change reaches the communicators created after it. */
	if (rank == 0 && write_assign(dir, 3) != 0)
		fprintf(stderr, "nccl_job: cannot rewrite %s/assign\n", dir);
	sleep_ms(400); /* the runtime polls the file every 100 ms */
	snprintf(name, sizeof(name), "dp2.%d", local);
	if (share_id(dir, name, node == 0, &dp2_id) != 0 ||
	    ncclCommInitRank(&dp2, nnodes, dp2_id, node) != ncclSuccess)
		goto out;
	tc_dp2 = last_tc();
	printf("TC_DP=%d TC_DP2=%d\n", tc_dp, tc_dp2);
	/* The old DP communicator goes: the new one is the paced one (its class reported). */
	ncclCommDestroy(dp);
	dp = NULL;
	for (int i = 0; i < 3; i++) {
		sleep_ms(compute_ms);
		ncclAllReduce((void *)0x1000, (void *)0x2000, 1, ncclFloat32, ncclSum, dp2, dp2_s);
		cudaStreamSynchronize(dp2_s);
	}
	printf("DP2_HOSTS=%d\n", host_ops(dp2_s));

	/* Capture: the collective goes into the graph, nothing of the interposer's does. */
	sleep_ms(compute_ms);
	cudaStreamBeginCapture(dp2_s, cudaStreamCaptureModeThreadLocal);
	ncclAllReduce((void *)0x1000, (void *)0x2000, 1, ncclFloat32, ncclSum, dp2, dp2_s);
	{
		cudaGraph_t g;

		cudaStreamEndCapture(dp2_s, &g);
	}
	standin_captured(dp2_s, &kernels, &hosts);
	printf("CAPTURED_KERNELS=%d CAPTURED_HOSTS=%d\n", kernels, hosts);
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "nccl_job: rank %d: setup failed\n", rank);
	if (tp)
		ncclCommDestroy(tp);
	if (dp)
		ncclCommDestroy(dp);
	if (dp2)
		ncclCommDestroy(dp2);
	cudaStreamDestroy(tp_s);
	cudaStreamDestroy(dp_s);
	cudaStreamDestroy(dp2_s);
	fflush(stdout);
	return rc;
}
