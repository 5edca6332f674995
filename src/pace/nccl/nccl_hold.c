/*
 * Holding NCCL bursts to their slot without blocking the host thread.
 *
 * The first collective of an iteration of the held communicator (nccl_comm.h:
 * the cross-node one) gets a host function enqueued on its stream just before
 * it (cudaLaunchHostFunc), never on a stream being captured. When the stream
 * reaches that point (the compute before it is done: the burst is ready) the
 * host function plans the slot from what the collective's ranks share
 * (hm_pace_plan_shared) and sleeps until it; the collective's kernel, being
 * later in stream order, starts at the slot. The calling thread returns at once.
 * Inside a group the hold is enqueued at the outermost ncclGroupEnd, just before
 * the real one launches the group's kernels (so ncclGroupSimulateEnd, which
 * launches nothing, leaves no hold behind). After each collective (after the
 * outermost ncclGroupEnd inside a group) a second host function stamps the burst
 * end. The class in force at each communicator's creation reaches it through
 * ncclConfig_t.trafficClass or NCCL_IB_TC/SL (hm_nccl_create_prepare).
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
#include "nccl_comm.h"
#include "nccl_real.h"

#define MAX_GROUP_STREAMS 16
#define DEFAULT_GAP_US    5000

typedef cudaError_t (*launch_host_fn_t)(cudaStream_t, cudaHostFn_t, void *);
typedef cudaError_t (*is_capturing_fn_t)(cudaStream_t, enum cudaStreamCaptureStatus *);

enum { PACING_UNKNOWN = 0, PACING_NEVER, PACING_MAYBE };

static int pacing_state; /* atomic; PACING_* */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static launch_host_fn_t launch_host_fn;
static is_capturing_fn_t is_capturing_fn;
static int64_t gap_us = -1; /* -1: period / 4 of the assignment */

/* Streams used inside the current group, per thread: they get the end stamp; and
 * the hold the group's first collective asked for, enqueued at the outermost GroupEnd. */
static __thread int group_depth;
static __thread int group_nstreams;
static __thread cudaStream_t group_streams[MAX_GROUP_STREAMS];
static __thread hm_nccl_comm_t *group_stamp_comm[MAX_GROUP_STREAMS];
static __thread hm_nccl_comm_t *group_hold;
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

static void snapshot_user_class(void);

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
	snapshot_user_class();
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
	__atomic_store_n(&is_capturing_fn,
			 (is_capturing_fn_t)hm_nccl_cuda_sym("cudaStreamIsCapturing"),
			 __ATOMIC_RELEASE);
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

/*
 * The hold, on the stream: the burst is ready now. The slot follows from what
 * the collective's ranks share (the communicator's previous slot and burst end,
 * hm_pace_plan_shared), so a skewed or late rank applies the same slot.
 */
static void CUDART_CB hold_host_fn(void *arg)
{
	hm_nccl_comm_t *c = arg;
	hm_pace_t *p = hm_pace_default();
	int64_t ready = hm_pace_now_us();
	int64_t from = __atomic_load_n(&c->end_prev_us, __ATOMIC_ACQUIRE);
	int64_t after = __atomic_load_n(&c->slot_prev_us, __ATOMIC_ACQUIRE);
	int64_t slot = hm_pace_plan_shared(p, ready, from, after);

	__atomic_store_n(&c->slot_prev_us, slot, __ATOMIC_RELEASE);
	/* The trace also says what this rank's own ready time would have chosen. */
	if (hm_nccl_tracing())
		hm_nccl_trace("hold key=%016llx seq=%lld ready_us=%lld slot_us=%lld own_us=%lld "
			      "after_us=%lld from_us=%lld",
			      (unsigned long long)c->key,
			      (long long)__atomic_load_n(&c->hold_seq, __ATOMIC_RELAXED),
			      (long long)ready, (long long)slot,
			      (long long)(hm_pace_period_us(p) > 0 ? hm_pace_plan(p, ready)
								   : HM_PACE_NO_SLOT),
			      (long long)after, (long long)from);
	hm_pace_comm_begin_slot(p, slot);
}

static void CUDART_CB end_host_fn(void *arg)
{
	hm_nccl_comm_t *c = arg;
	int64_t now = hm_pace_now_us();

	hm_pace_comm_end_at(hm_pace_default(), now);
	__atomic_store_n(&c->end_prev_us, now, __ATOMIC_RELEASE);
}

static bool launch(cudaStream_t stream, cudaHostFn_t fn, hm_nccl_comm_t *c)
{
	launch_host_fn_t f = __atomic_load_n(&launch_host_fn, __ATOMIC_ACQUIRE);
	cudaError_t e;
	char why[160];

	if (!f) { /* CUDA may have come after NCCL's first call: look once more */
		f = find_launch_host_fn();
		__atomic_store_n(&launch_host_fn, f, __ATOMIC_RELEASE);
	}
	e = f ? f(stream, fn, c) : cudaErrorNotSupported;
	if (e == cudaSuccess)
		return true;
	snprintf(why, sizeof(why), "cannot enqueue a host function on the stream (%s, error %d)",
		 f ? "cudaLaunchHostFunc failed" : "no cudaLaunchHostFunc found", (int)e);
	hm_nccl_pacing_off(why);
	return false;
}

/*
 * Is stream being captured into a CUDA graph (then nothing is inserted: a host
 * function would become a graph node, replayed with every launch)? A query
 * that fails (a global-mode capture elsewhere makes it cudaErrorStreamCaptureImplicit)
 * counts as capturing; a CUDA without cudaStreamIsCapturing turns pacing off.
 */
static bool capturing(cudaStream_t stream)
{
	is_capturing_fn_t f = __atomic_load_n(&is_capturing_fn, __ATOMIC_ACQUIRE);
	enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;

	if (!f) {
		f = (is_capturing_fn_t)hm_nccl_cuda_sym("cudaStreamIsCapturing");
		__atomic_store_n(&is_capturing_fn, f, __ATOMIC_RELEASE);
	}
	if (!f) {
		hm_nccl_pacing_off("no cudaStreamIsCapturing found: a captured stream cannot be "
				   "told apart");
		return true;
	}
	if (f(stream, &st) != cudaSuccess || st != cudaStreamCaptureStatusNone) {
		hm_nccl_trace("capture stream=%p: left alone", (void *)stream);
		return true;
	}
	return false;
}

hm_nccl_comm_t *hm_nccl_before(ncclComm_t comm, cudaStream_t stream)
{
	hm_pace_t *p = hm_pace_default();
	int64_t gap = gap_us;
	hm_nccl_comm_t *c;
	bool fresh = false;

	if (gap < 0) {
		int64_t period = hm_pace_period_us(p);

		gap = period > 0 ? period / 4 : DEFAULT_GAP_US;
	}
	c = hm_nccl_comm_step(comm, hm_pace_now_us(), hm_pace_iter_marks(p), gap, &fresh);
	/* Not the paced communicator, not a new iteration, or pacing inactive: c->held
	 * stays false, so the iteration's collectives cost nothing more. */
	if (!c || !fresh || !hm_pace_active(p) || capturing(stream))
		return c;
	if (group_depth > 0) {
		if (!group_hold) {
			group_hold = c;
			group_hold_stream = stream;
		}
		return c;
	}
	if (launch(stream, hold_host_fn, c))
		__atomic_store_n(&c->held, true, __ATOMIC_RELEASE);
	return c;
}

static void stamp_end(hm_nccl_comm_t *c, cudaStream_t stream)
{
	if (c && __atomic_load_n(&c->held, __ATOMIC_ACQUIRE) && !capturing(stream))
		(void)launch(stream, end_host_fn, c);
}

void hm_nccl_after(hm_nccl_comm_t *c, cudaStream_t stream)
{
	if (!c)
		return;
	if (group_depth == 0) {
		stamp_end(c, stream);
		return;
	}
	for (int i = 0; i < group_nstreams; i++)
		if (group_streams[i] == stream)
			return;
	if (group_nstreams < MAX_GROUP_STREAMS) {
		group_stamp_comm[group_nstreams] = c;
		group_streams[group_nstreams++] = stream;
	}
}

void hm_nccl_group_start(void)
{
	group_depth++;
}

void hm_nccl_group_closing(void)
{
	hm_nccl_comm_t *c = group_hold;

	if (group_depth == 1 && c) {
		group_hold = NULL;
		if (launch(group_hold_stream, hold_host_fn, c))
			__atomic_store_n(&c->held, true, __ATOMIC_RELEASE);
	}
}

void hm_nccl_group_end(void)
{
	if (group_depth > 0 && --group_depth == 0) {
		for (int i = 0; i < group_nstreams; i++)
			stamp_end(group_stamp_comm[i], group_streams[i]);
		group_nstreams = 0;
	}
}

void hm_nccl_group_discard(void)
{
	if (group_depth > 0 && --group_depth == 0) {
		group_hold = NULL;
		group_nstreams = 0;
	}
}

/* ---- the class: as live as NCCL allows (docs/pacing.md, "classes") ---- */

/* The user's own NCCL_IB_TC / NCCL_IB_SL, read before the interposer exports any:
 * the interposer's later exports are its own, replaced at each creation. */
static bool user_tc, user_sl;
/* Class of the first export: NCCL reads the variables once per process (its
 * parameters are cached at first use), so that one stays in force. -1: none yet. */
static int env_first_prio = -1;
static pthread_mutex_t class_mu = PTHREAD_MUTEX_INITIALIZER;

static void snapshot_user_class(void)
{
	user_tc = getenv("NCCL_IB_TC") != NULL;
	user_sl = getenv("NCCL_IB_SL") != NULL;
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 26, 0)
/* Version of the loaded NCCL (ncclGetVersion), 0 when it cannot say. */
static int real_nccl_version(void)
{
	static int version = -1;
	int v = __atomic_load_n(&version, __ATOMIC_ACQUIRE);

	if (v < 0) {
		ncclResult_t (*get)(int *) = (ncclResult_t(*)(int *))hm_nccl_real_sym("ncclGetVersion");

		v = 0;
		if (!get || get(&v) != ncclSuccess || v < 0)
			v = 0;
		__atomic_store_n(&version, v, __ATOMIC_RELEASE);
	}
	return v;
}

/* Would a creation without a config get one (see hm_nccl_create_prepare)? */
static bool config_route(void)
{
	return !user_tc && !user_sl && real_nccl_version() >= NCCL_VERSION(2, 26, 0) &&
	       hm_nccl_real_sym("ncclCommInitRankConfig") != NULL;
}
#endif

/* Export the class in force unless the user set the variable; returns the class
 * NCCL will use through the variables (-1: the user's or none). */
static int export_class(int prio)
{
	char buf[16];
	int in_force;

	if (prio < 0)
		return -1;
	pthread_mutex_lock(&class_mu);
	if (!user_tc) {
		snprintf(buf, sizeof(buf), "%d", hm_nccl_class_tc(prio));
		setenv("NCCL_IB_TC", buf, 1);
	}
	if (!user_sl) {
		snprintf(buf, sizeof(buf), "%d", hm_nccl_class_sl(prio));
		setenv("NCCL_IB_SL", buf, 1);
	}
	if (env_first_prio < 0)
		env_first_prio = prio;
	in_force = user_tc || user_sl ? -1 : env_first_prio;
	pthread_mutex_unlock(&class_mu);
	return in_force;
}

/* A copy of config with trafficClass for prio; config itself when NCCL would not
 * take one from it or the application set its own. *cls: the class it carries. */
static ncclConfig_t *config_with_class(ncclConfig_t *config, hm_nccl_config_buf_t *buf, int prio,
				       int *cls)
{
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 25, 0)
	size_t size;
	int tc;

	*cls = -1;
	/* The caller's struct is as large as its nccl.h made it: read size first. */
	memcpy(&size, config, sizeof(size));
	if (size < offsetof(ncclConfig_t, trafficClass) + sizeof(int) ||
	    size > sizeof(buf->bytes) || config->magic != HM_NCCL_CONFIG_MAGIC ||
	    config->version < NCCL_VERSION(2, 25, 0))
		return config; /* not a config NCCL would take a traffic class from */
	if (config->trafficClass != NCCL_CONFIG_UNDEF_INT)
		return config; /* the application's own value wins */
	tc = hm_nccl_config_traffic_class(prio, HM_NCCL_SYSFS_IB);
	if (tc < 0)
		return config;
	/* A copy: the application's struct stays as it wrote it (NCCL copies it at init). */
	memcpy(buf->bytes, config, size);
	buf->cfg.trafficClass = tc;
	*cls = prio;
	return &buf->cfg;
#else
	(void)buf;
	(void)prio;
	*cls = -1;
	return config;
#endif
}

void hm_nccl_create_prepare(hm_nccl_create_t *cr, ncclConfig_t *config, hm_nccl_inject_t inject)
{
	int prio;

	cr->config = config;
	cr->class_prio = -1;
	if (!hm_nccl_pacing_possible())
		return;
	/* The class in force now (active polls the file): a change reaches every
	 * communicator created after it. */
	(void)hm_pace_active(hm_pace_default());
	prio = hm_pace_prio(hm_pace_default());
	if (config) {
		cr->config = config_with_class(config, &cr->buf, prio, &cr->class_prio);
		goto variables_win;
	}
	if (inject == HM_NCCL_INHERIT || prio < 0)
		return; /* a split child keeps its parent's class (the caller knows it) */
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 26, 0)
	if (inject == HM_NCCL_INJECT && config_route()) {
		/* NCCL_CONFIG_INITIALIZER's defaults, with the class: nothing else changes. */
		ncclConfig_t d = NCCL_CONFIG_INITIALIZER;
		int tc = hm_nccl_config_traffic_class(prio, HM_NCCL_SYSFS_IB);

		if (tc >= 0) {
			memset(cr->buf.bytes, 0, sizeof(cr->buf.bytes));
			d.trafficClass = tc;
			cr->buf.cfg = d;
			cr->config = &cr->buf.cfg;
			cr->class_prio = prio;
			goto variables_win;
		}
	}
#endif
	cr->class_prio = export_class(prio);
	return;
variables_win:
	/* Once exported (an earlier config-less creation on an older route, or
	 * ncclCommInitAll), the variables override every config's trafficClass. */
	pthread_mutex_lock(&class_mu);
	if (env_first_prio >= 0 && cr->class_prio >= 0)
		cr->class_prio = env_first_prio;
	pthread_mutex_unlock(&class_mu);
}

void hm_nccl_report(void)
{
	if (hm_nccl_pacing_possible())
		(void)hm_pace_report(hm_pace_default());
}
