/*
 * GPU check program for the NCCL interposer (tests/gpu/check_nccl_gpu.sh):
 * one communicator over every visible GPU (ncclCommInitAll; one GPU gives a
 * single-rank communicator), ITERS iterations of "compute" (GPU memsets plus a
 * host pause, so the interposer's gap rule sees an iteration boundary) followed
 * by an all-reduce. It does not know about Harmonics: under LD_PRELOAD the
 * interposer holds each iteration's first collective to its slot.
 *
 * Checks (exit 1 on failure): the all-reduce result; with pacing on (argv[1] = "on")
 * the host was never held (the call returned at once) and >= 80% of the all-reduces
 * completed within TOL_US after a slot of HARMONICS_PERIOD/SHIFT/ORIGIN. With one
 * GPU it then captures an all-reduce into a graph and prints the graph's node
 * count (GRAPH_NODES=, compared by the script). argv[1] = "class": only the
 * class-change check (class_change()).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#define ITERS   30
#define MAX_DEV 16
#define COUNT   (1 << 20) /* floats per GPU: 4 MB */
#define TOL_US  15000

#define CK(call)                                                                                   \
	do {                                                                                       \
		int e_ = (int)(call);                                                              \
		if (e_ != 0) {                                                                     \
			fprintf(stderr, "gpu-check: %s failed: %d\n", #call, e_);                  \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long env_ll(const char *k)
{
	const char *v = getenv(k);

	return v ? atoll(v) : 0;
}

/* Rewrite HARMONICS_PRIO in the assignment file (temp + rename, as the agent). */
static int set_prio(const char *path, int prio)
{
	char buf[4096], tmp[4200];
	size_t n;
	FILE *f = fopen(path, "r"), *o;

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(o = fopen(tmp, "w")))
		return -1;
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
		if (strncmp(l, "HARMONICS_PRIO=", 15) != 0)
			fprintf(o, "%s\n", l);
	fprintf(o, "HARMONICS_PRIO=%d\n", prio);
	return fclose(o) == 0 ? rename(tmp, path) : -1;
}

/* "class": two single-rank communicators (ncclCommInitRank, no config), the class
 * changed from 1 to 3 in between; the trace says what each got. */
static int class_change(void)
{
	const char *assign = getenv("HARMONICS_ASSIGN_FILE");
	ncclUniqueId id;
	ncclComm_t a, b;

	if (!assign)
		return 1;
	CK(cudaSetDevice(0));
	CK(ncclGetUniqueId(&id));
	CK(ncclCommInitRank(&a, 1, id, 0));
	CK(set_prio(assign, 3));
	usleep(300000); /* the runtime polls the file every 100 ms */
	CK(ncclGetUniqueId(&id));
	CK(ncclCommInitRank(&b, 1, id, 0));
	/* A collective on each: the trace's comm line (reach, class) comes at the first. */
	{
		float *x;
		cudaStream_t s;

		CK(cudaStreamCreate(&s));
		CK(cudaMalloc((void **)&x, 4096));
		CK(ncclAllReduce(x, x, 1024, ncclFloat32, ncclSum, a, s));
		CK(ncclAllReduce(x, x, 1024, ncclFloat32, ncclSum, b, s));
		CK(cudaStreamSynchronize(s));
		cudaFree(x);
		cudaStreamDestroy(s);
	}
	CK(ncclCommDestroy(a));
	CK(ncclCommDestroy(b));
	printf("gpu-check: RESULT class change done\n");
	return 0;
}

int main(int argc, char **argv)
{
	int ndev = 0, on = argc > 1 && strcmp(argv[1], "on") == 0, aligned = 0, held_host = 0;
	ncclComm_t comms[MAX_DEV];
	cudaStream_t streams[MAX_DEV];
	float *buf[MAX_DEV], *ones[MAX_DEV], *scratch[MAX_DEV], host[4];
	float *h_ones = malloc(COUNT * sizeof(float));
	long long period = env_ll("HARMONICS_PERIOD_US"),
		  base = env_ll("HARMONICS_ORIGIN_US") + env_ll("HARMONICS_SHIFT_US");
	int64_t t_start = now_us();

	if (argc > 1 && strcmp(argv[1], "class") == 0)
		return class_change();
	if (!h_ones)
		return 1;
	for (int i = 0; i < COUNT; i++)
		h_ones[i] = 1.0f;
	CK(cudaGetDeviceCount(&ndev));
	if (ndev > MAX_DEV)
		ndev = MAX_DEV;
	printf("gpu-check: %d GPU(s), pacing %s\n", ndev, on ? "on" : "off");
	CK(ncclCommInitAll(comms, ndev, NULL));
	for (int d = 0; d < ndev; d++) {
		CK(cudaSetDevice(d));
		CK(cudaStreamCreate(&streams[d]));
		CK(cudaMalloc((void **)&buf[d], COUNT * sizeof(float)));
		CK(cudaMalloc((void **)&ones[d], COUNT * sizeof(float)));
		CK(cudaMemcpy(ones[d], h_ones, COUNT * sizeof(float), cudaMemcpyHostToDevice));
		CK(cudaMalloc((void **)&scratch[d], 256u << 20));
	}
	for (int it = 0; it < ITERS; it++) {
		int64_t t0, t_call, t_done;

		usleep(40000 + (useconds_t)(rand() % 20000)); /* host side of compute: 40-60 ms */
		for (int d = 0; d < ndev; d++) {
			CK(cudaSetDevice(d));
			for (int k = 0; k < 8; k++) /* device side of compute */
				CK(cudaMemsetAsync(scratch[d], k, 256u << 20, streams[d]));
			CK(cudaMemcpyAsync(buf[d], ones[d], COUNT * sizeof(float),
					   cudaMemcpyDeviceToDevice, streams[d]));
		}
		t0 = now_us();
		CK(ncclGroupStart());
		for (int d = 0; d < ndev; d++)
			CK(ncclAllReduce(buf[d], buf[d], COUNT, ncclFloat32, ncclSum, comms[d],
					 streams[d]));
		CK(ncclGroupEnd());
		t_call = now_us() - t0;
		for (int d = 0; d < ndev; d++) {
			CK(cudaSetDevice(d));
			CK(cudaStreamSynchronize(streams[d]));
		}
		t_done = now_us();
		if (t_call > 5000)
			held_host++;
		if (on && period > 0) {
			long long after = ((t_done - base) % period + period) % period;

			if (after < TOL_US)
				aligned++;
			printf("gpu-check: iter %d call_us=%lld done_after_slot_us=%lld\n", it,
			       (long long)t_call, after);
		}
	}
	/* Result check: the sum of ones over ndev ranks is ndev everywhere. */
	for (int d = 0; d < ndev; d++) {
		CK(cudaSetDevice(d));
		CK(cudaMemcpy(host, buf[d], sizeof(host), cudaMemcpyDeviceToHost));
		if (host[0] != (float)ndev || host[3] != (float)ndev) {
			fprintf(stderr, "gpu-check: wrong all-reduce result on GPU %d\n", d);
			return 1;
		}
	}
	/* One GPU: an all-reduce captured into a graph, then replayed. The interposer
	 * must add no node (check_nccl_gpu.sh compares the count with pacing off). */
	if (ndev == 1) {
		cudaGraph_t g;
		cudaGraphExec_t ge;
		size_t nodes = 0;

		usleep(60000); /* a new iteration by the gap rule */
		CK(cudaSetDevice(0));
		CK(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal));
		CK(ncclAllReduce(buf[0], buf[0], COUNT, ncclFloat32, ncclSum, comms[0], streams[0]));
		CK(cudaStreamEndCapture(streams[0], &g));
		CK(cudaGraphGetNodes(g, NULL, &nodes));
		CK(cudaGraphInstantiate(&ge, g, 0));
		CK(cudaGraphLaunch(ge, streams[0]));
		CK(cudaStreamSynchronize(streams[0]));
		cudaGraphExecDestroy(ge);
		cudaGraphDestroy(g);
		printf("gpu-check: GRAPH_NODES=%zu\n", nodes);
	}
	for (int d = 0; d < ndev; d++) {
		CK(ncclCommDestroy(comms[d]));
		CK(cudaSetDevice(d));
		cudaFree(buf[d]);
		cudaFree(ones[d]);
		cudaFree(scratch[d]);
		cudaStreamDestroy(streams[d]);
	}
	printf("gpu-check: RESULT pacing=%s iterations=%d aligned=%d held_host=%d wall_ms=%lld\n",
	       on ? "on" : "off", ITERS, aligned, held_host,
	       (long long)(now_us() - t_start) / 1000);
	free(h_ones);
	if (held_host > 0) {
		fprintf(stderr, "gpu-check: FAIL: the host thread was held in %d calls\n",
			held_host);
		return 1;
	}
	if (on && aligned < ITERS * 8 / 10) {
		fprintf(stderr,
			"gpu-check: FAIL: only %d of %d all-reduces ended within %d us of a "
			"slot\n",
			aligned, ITERS, TOL_US);
		return 1;
	}
	return 0;
}
