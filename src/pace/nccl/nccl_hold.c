/*
 * Holding NCCL bursts to their slot without blocking the host thread.
 *
 * The first collective of an iteration gets a host function enqueued on its
 * stream just before it (cudaLaunchHostFunc). When the stream reaches that point
 * (the compute before it is done: the burst is ready) the host function plans the
 * slot from that ready time and sleeps until it; the collective's kernel, being
 * later in stream order, starts at the slot. The calling thread returns at once.
 * Inside a group the hold is enqueued at the outermost ncclGroupEnd, just before
 * the real one launches the group's kernels (so ncclGroupSimulateEnd, which
 * launches nothing, leaves no hold behind). After each collective (after the
 * outermost ncclGroupEnd inside a group) a second host function stamps the burst
 * end. The job's class also reaches communicators created with a config, through
 * ncclConfig_t.trafficClass.
 */
#include "nccl_hold.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "hm_pace.h"
#include "hm_pace_env.h"
#include "hm_parse.h"
#include "nccl_class.h"
#include "nccl_real.h"

#define MAX_GROUP_STREAMS 16
#define DEFAULT_GAP_US    5000

typedef cudaError_t (*launch_host_fn_t)(cudaStream_t, cudaHostFn_t, void *);

enum { PACING_UNKNOWN = 0, PACING_NEVER, PACING_MAYBE };

static int pacing_state; /* atomic; PACING_* */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* guards the iteration state */
static launch_host_fn_t launch_host_fn;
static int64_t gap_us = -1;  /* -1: period / 4 of the assignment */
static int64_t last_call_us; /* host time of the previous collective */
static int64_t seen_marks;   /* hm_pace_iter_begin calls already consumed */
static bool burst_started;   /* a hold was enqueued: end stamps make sense */

/* Streams used inside the current group, per thread: they get the end stamp; and
 * the hold the group's first collective asked for, enqueued at the outermost GroupEnd. */
static __thread int group_depth;
static __thread int group_nstreams;
static __thread cudaStream_t group_streams[MAX_GROUP_STREAMS];
static __thread bool group_hold;
static __thread cudaStream_t group_hold_stream;

/* cudaLaunchHostFunc from the CUDA runtime the application already loaded (or the
 * loaded NCCL's own scope); the interposer never loads or links cudart itself. */
static launch_host_fn_t find_launch_host_fn(void)
{
	return (launch_host_fn_t)hm_nccl_cuda_sym("cudaLaunchHostFunc");
}

void hm_nccl_pacing_off(const char *why)
{
	/* Only the change from "may pace" says something: one line per process. */
	int was = PACING_MAYBE;

	if (__atomic_compare_exchange_n(&pacing_state, &was, PACING_NEVER, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		fprintf(stderr, HM_NCCL_LOG_PREFIX "%s; pacing off for this process (fail-open)\n",
			why);
}

static void setup(void)
{
	const char *mode = getenv(HM_PACE_ENV_MODE), *file = getenv(HM_PACE_ENV_ASSIGN_FILE);
	const char *gap = getenv(HM_PACE_ENV_NCCL_GAP_US);
	hm_err_t err = {0};
	long v = 0;

	/* Nothing can ever turn pacing on: stay a pure forwarder. */
	if ((!file || !*file) && (!mode || strcmp(mode, HM_PACE_MODE_OFF) == 0)) {
		__atomic_store_n(&pacing_state, PACING_NEVER, __ATOMIC_RELEASE);
		return;
	}
	if (gap) {
		if (hm_parse_long(gap, 0, 3600000000L, &v, HM_PACE_ENV_NCCL_GAP_US, &err) == HM_OK)
			gap_us = v;
		else
			fprintf(stderr, HM_NCCL_LOG_PREFIX "%s; using period / 4\n", err.msg);
	}
	/* Reads the assignment (warns once if it is garbage); NULL: out of memory. */
	if (!hm_pace_default()) {
		fprintf(stderr,
			HM_NCCL_LOG_PREFIX "cannot set up the pacing runtime (out of "
					   "memory); pacing off for this process (fail-open)\n");
		__atomic_store_n(&pacing_state, PACING_NEVER, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&launch_host_fn, find_launch_host_fn(), __ATOMIC_RELEASE);
	__atomic_store_n(&pacing_state, PACING_MAYBE, __ATOMIC_RELEASE);
}

bool hm_nccl_pacing_possible(void)
{
	int s = __atomic_load_n(&pacing_state, __ATOMIC_ACQUIRE);

	if (s == PACING_UNKNOWN) {
		pthread_once(&setup_once, setup);
		s = __atomic_load_n(&pacing_state, __ATOMIC_ACQUIRE);
	}
	return s == PACING_MAYBE;
}

static void CUDART_CB hold_host_fn(void *arg)
{
	hm_pace_comm_begin((hm_pace_t *)arg); /* plans from "now": the burst is ready */
}

static void CUDART_CB end_host_fn(void *arg)
{
	hm_pace_comm_end((hm_pace_t *)arg);
}

static bool launch(cudaStream_t stream, cudaHostFn_t fn, hm_pace_t *p)
{
	launch_host_fn_t f = __atomic_load_n(&launch_host_fn, __ATOMIC_ACQUIRE);
	cudaError_t e;
	char why[160];

	if (!f) { /* CUDA may have come after NCCL's first call: look once more */
		f = find_launch_host_fn();
		__atomic_store_n(&launch_host_fn, f, __ATOMIC_RELEASE);
	}
	e = f ? f(stream, fn, p) : cudaErrorNotSupported;
	if (e == cudaSuccess)
		return true;
	snprintf(why, sizeof(why), "cannot enqueue a host function on the stream (%s, error %d)",
		 f ? "cudaLaunchHostFunc failed" : "no cudaLaunchHostFunc found", (int)e);
	hm_nccl_pacing_off(why);
	return false;
}

/* Is this collective the first of an iteration? Explicit marks win over the gap. */
static bool new_iteration(hm_pace_t *p, int64_t now_us)
{
	int64_t marks = hm_pace_iter_marks(p), gap = gap_us;
	bool fresh = false;

	if (gap < 0) {
		int64_t period = hm_pace_period_us(p);

		gap = period > 0 ? period / 4 : DEFAULT_GAP_US;
	}
	pthread_mutex_lock(&mu);
	if (marks > 0) {
		fresh = marks != seen_marks;
		seen_marks = marks;
	} else {
		fresh = last_call_us == 0 || now_us - last_call_us > gap;
	}
	last_call_us = now_us;
	pthread_mutex_unlock(&mu);
	return fresh;
}

void hm_nccl_before(cudaStream_t stream)
{
	hm_pace_t *p = hm_pace_default();

	if (!new_iteration(p, hm_pace_now_us()) || !hm_pace_active(p))
		return;
	if (group_depth > 0) {
		if (!group_hold) {
			group_hold = true;
			group_hold_stream = stream;
		}
		return;
	}
	if (launch(stream, hold_host_fn, p))
		__atomic_store_n(&burst_started, true, __ATOMIC_RELEASE);
}

static void stamp_end(cudaStream_t stream)
{
	if (__atomic_load_n(&burst_started, __ATOMIC_ACQUIRE))
		(void)launch(stream, end_host_fn, hm_pace_default());
}

void hm_nccl_after(cudaStream_t stream)
{
	if (group_depth == 0) {
		stamp_end(stream);
		return;
	}
	for (int i = 0; i < group_nstreams; i++)
		if (group_streams[i] == stream)
			return;
	if (group_nstreams < MAX_GROUP_STREAMS)
		group_streams[group_nstreams++] = stream;
}

void hm_nccl_group_start(void)
{
	group_depth++;
}

void hm_nccl_group_closing(void)
{
	if (group_depth == 1 && group_hold) {
		group_hold = false;
		if (launch(group_hold_stream, hold_host_fn, hm_pace_default()))
			__atomic_store_n(&burst_started, true, __ATOMIC_RELEASE);
	}
}

void hm_nccl_group_end(void)
{
	if (group_depth > 0 && --group_depth == 0) {
		for (int i = 0; i < group_nstreams; i++)
			stamp_end(group_streams[i]);
		group_nstreams = 0;
	}
}

void hm_nccl_group_discard(void)
{
	if (group_depth > 0 && --group_depth == 0) {
		group_hold = false;
		group_nstreams = 0;
	}
}

static void set_unless_user(const char *name, int value)
{
	char buf[16];

	if (value < 0 || getenv(name))
		return; /* the user's explicit setting wins */
	snprintf(buf, sizeof(buf), "%d", value);
	setenv(name, buf, 0);
}

void hm_nccl_set_traffic_class(void)
{
	int prio;

	if (!hm_nccl_pacing_possible())
		return;
	prio = hm_pace_prio(hm_pace_default());
	set_unless_user("NCCL_IB_TC", hm_nccl_class_tc(prio));
	set_unless_user("NCCL_IB_SL", hm_nccl_class_sl(prio));
}

/* ncclConfig_t.trafficClass for this node and job: computed once (sysfs scan). */
static pthread_once_t config_tc_once = PTHREAD_ONCE_INIT;
static int config_tc = -1;

static void config_tc_init(void)
{
	config_tc = hm_nccl_config_traffic_class(hm_pace_prio(hm_pace_default()), HM_NCCL_SYSFS_IB);
}

ncclConfig_t *hm_nccl_config(ncclConfig_t *config, hm_nccl_config_buf_t *buf)
{
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 25, 0)
	size_t size;

	if (!config || !hm_nccl_pacing_possible())
		return config;
	/* The caller's struct is as large as its nccl.h made it: read size first. */
	memcpy(&size, config, sizeof(size));
	if (size < offsetof(ncclConfig_t, trafficClass) + sizeof(int) ||
	    size > sizeof(buf->bytes) || config->magic != HM_NCCL_CONFIG_MAGIC ||
	    config->version < NCCL_VERSION(2, 25, 0))
		return config; /* not a config NCCL would take a traffic class from */
	if (config->trafficClass != NCCL_CONFIG_UNDEF_INT)
		return config; /* the application's own value wins */
	pthread_once(&config_tc_once, config_tc_init);
	if (config_tc < 0)
		return config;
	/* A copy: the application's struct stays as it wrote it (NCCL copies it at init). */
	memcpy(buf->bytes, config, size);
	buf->cfg.trafficClass = config_tc;
	return &buf->cfg;
#else
	(void)buf;
	return config;
#endif
}

void hm_nccl_report(void)
{
	if (hm_nccl_pacing_possible())
		(void)hm_pace_report(hm_pace_default());
}
