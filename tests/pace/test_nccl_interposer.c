/*
 * The NCCL interposer (libharmonics-nccl.so, LD_PRELOAD) against the STAND-IN
 * NCCL/CUDA library: every wrapped symbol forwards its arguments and return code,
 * NCCL_IB_TC/SL come from the priority class unless the user set them (creations
 * without a config), ncclConfig_t.trafficClass does for creations with one unless
 * the application set it, and the hold happens in stream order without stalling
 * the calling thread (a simulated group leaves none).
 * Run by nccl_preload.sh with HM_TEST_PACING=on|off, the expected TC/SL, and
 * HM_TEST_CONFIG_ONLY=1 for a process that only creates communicators with a config.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "hm_pace.h"
#include "nccl_class.h"
#include "standin.h"

#define SLOT_TOLERANCE_US 30000 /* a hold released within 30 ms of its slot */

static bool pacing_on, config_only;
static const char *expect_tc, *expect_sl;

static const void *const SB = (const void *)0x1000;
static void *const RB = (void *)0x2000;
static const ncclComm_t COMM = (ncclComm_t)0x3000;

static int64_t now_us(void)
{
	return hm_pace_now_us();
}

static long long env_ll(const char *k)
{
	const char *v = getenv(k);

	return v ? atoll(v) : 0;
}

/* Distance of t after the nearest slot at or before it, microseconds. */
static long long after_slot_us(int64_t t)
{
	long long base = env_ll("HARMONICS_ORIGIN_US") + env_ll("HARMONICS_SHIFT_US");
	long long p = env_ll("HARMONICS_PERIOD_US");
	long long d = ((t - base) % p + p) % p;

	return d;
}

/* Sleep at least min_us, until 20 ms after a slot: past the 10 ms guard, so the
 * next hold must wait for the following slot. */
static void sleep_past_guard(long long min_us)
{
	long long p = env_ll("HARMONICS_PERIOD_US");
	int64_t t = now_us() + min_us;
	long long d = after_slot_us(t);

	t += d <= 20000 ? 20000 - d : p - d + 20000;
	usleep((useconds_t)(t - now_us()));
}

static void test_interposed(void **state)
{
	Dl_info info;
	void *f = dlsym(RTLD_DEFAULT, "ncclAllReduce");

	assert_non_null(f);
	assert_true(dladdr(f, &info) != 0);
	/* The preloaded interposer, not the stand-in, answers for ncclAllReduce. */
	assert_non_null(strstr(info.dli_fname, "libharmonics-nccl"));
}

static void expect_call(ncclResult_t got, ncclResult_t want, const char *call)
{
	if (strcmp(standin_last_call(), call) != 0)
		fail_msg("forwarded '%s', expected '%s'", standin_last_call(), call);
	assert_int_equal(got, want);
}

static void test_forwarding(void **state)
{
	cudaStream_t s;
	char want[512];
	ncclResult_t codes[] = {ncclSuccess,       ncclUnhandledCudaError, ncclSystemError,
				ncclInternalError, ncclInvalidArgument,    ncclInvalidUsage,
				ncclRemoteError,   ncclInProgress};
	int c = 0;
	ncclUniqueId id;
	/* The stand-in writes no handle: a garbage one would join the interposer's table
	 * (with more ranks than COMM) and become the paced communicator. */
	ncclComm_t comm_out = NULL, comms_out[2] = {0}; /* InitAll writes one per device */
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
	int devs[2] = {0, 1};

	if (config_only)
		skip();
	cfg.blocking = 0;
#if STANDIN_NCCL_2_28
	cfg.commName = "app";
	cfg.trafficClass = 5;
#endif
	assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
	memset(&id, 0, sizeof(id));
	memcpy(id.internal, "uniqueid", 8);

#define CHECK(call, ...)                                                                           \
	do {                                                                                       \
		ncclResult_t want_rc = codes[c++ % 8];                                             \
		standin_set_result(want_rc);                                                       \
		snprintf(want, sizeof(want), __VA_ARGS__);                                         \
		expect_call(call, want_rc, want);                                                  \
	} while (0)

	CHECK(ncclAllReduce(SB, RB, 11, ncclFloat32, ncclSum, COMM, s),
	      "ncclAllReduce(%p,%p,11,%d,%d,%p,%p)", SB, RB, (int)ncclFloat32, (int)ncclSum,
	      (void *)COMM, (void *)s);
	CHECK(ncclReduceScatter(SB, RB, 12, ncclHalf, ncclMax, COMM, s),
	      "ncclReduceScatter(%p,%p,12,%d,%d,%p,%p)", SB, RB, (int)ncclHalf, (int)ncclMax,
	      (void *)COMM, (void *)s);
	CHECK(ncclAllGather(SB, RB, 13, ncclInt8, COMM, s), "ncclAllGather(%p,%p,13,%d,%p,%p)", SB,
	      RB, (int)ncclInt8, (void *)COMM, (void *)s);
	CHECK(ncclBroadcast(SB, RB, 14, ncclFloat64, 3, COMM, s),
	      "ncclBroadcast(%p,%p,14,%d,3,%p,%p)", SB, RB, (int)ncclFloat64, (void *)COMM,
	      (void *)s);
	CHECK(ncclReduce(SB, RB, 15, ncclInt32, ncclProd, 2, COMM, s),
	      "ncclReduce(%p,%p,15,%d,%d,2,%p,%p)", SB, RB, (int)ncclInt32, (int)ncclProd,
	      (void *)COMM, (void *)s);
	CHECK(ncclSend(SB, 16, ncclUint8, 5, COMM, s), "ncclSend(%p,16,%d,5,%p,%p)", SB,
	      (int)ncclUint8, (void *)COMM, (void *)s);
	CHECK(ncclRecv(RB, 17, ncclUint64, 6, COMM, s), "ncclRecv(%p,17,%d,6,%p,%p)", RB,
	      (int)ncclUint64, (void *)COMM, (void *)s);
	CHECK(ncclBcast(RB, 18, ncclInt64, 4, COMM, s), "ncclBcast(%p,18,%d,4,%p,%p)", RB,
	      (int)ncclInt64, (void *)COMM, (void *)s);
#if STANDIN_NCCL_2_28
	CHECK(ncclAlltoAll(SB, RB, 19, ncclBfloat16, COMM, s), "ncclAlltoAll(%p,%p,19,%d,%p,%p)",
	      SB, RB, (int)ncclBfloat16, (void *)COMM, (void *)s);
	CHECK(ncclGather(SB, RB, 20, ncclUint32, 1, COMM, s), "ncclGather(%p,%p,20,%d,1,%p,%p)", SB,
	      RB, (int)ncclUint32, (void *)COMM, (void *)s);
	CHECK(ncclScatter(SB, RB, 21, ncclFloat16, 2, COMM, s), "ncclScatter(%p,%p,21,%d,2,%p,%p)",
	      SB, RB, (int)ncclFloat16, (void *)COMM, (void *)s);
#endif
	CHECK(ncclGroupStart(), "ncclGroupStart()");
	CHECK(ncclGroupEnd(), "ncclGroupEnd()");
	CHECK(ncclGroupStart(), "ncclGroupStart()");
	CHECK(ncclGroupSimulateEnd(&sim), "ncclGroupSimulateEnd(%p)", (void *)&sim);
	CHECK(ncclCommInitRank(&comm_out, 4, id, 1),
	      "ncclCommInitRank(%p,4,uniqueid,1) TC=%s SL=%s", (void *)&comm_out, expect_tc,
	      expect_sl);
	CHECK(ncclCommInitAll(comms_out, 2, devs), "ncclCommInitAll(%p,2,%p) TC=%s SL=%s",
	      (void *)comms_out, (void *)devs, expect_tc, expect_sl);
	/* The application's own traffic class is forwarded as it set it. */
	CHECK(ncclCommInitRankConfig(&comm_out, 8, id, 7, &cfg),
	      "ncclCommInitRankConfig(%p,8,uniqueid,7,cfg{size=%zu,blocking=0,name=app,tc=5}) "
	      "TC=%s SL=%s",
	      (void *)&comm_out, sizeof(cfg), expect_tc, expect_sl);
	CHECK(ncclCommInitRankConfig(&comm_out, 8, id, 7, NULL),
	      "ncclCommInitRankConfig(%p,8,uniqueid,7,cfg{null}) TC=%s SL=%s", (void *)&comm_out,
	      expect_tc, expect_sl);
#if STANDIN_NCCL_2_28
	CHECK(ncclCommInitRankScalable(&comm_out, 16, 3, 1, &id, NULL),
	      "ncclCommInitRankScalable(%p,16,3,1,uniqueid,cfg{null}) TC=%s SL=%s",
	      (void *)&comm_out, expect_tc, expect_sl);
	CHECK(ncclCommSplit(COMM, 2, 9, &comm_out, NULL), "ncclCommSplit(%p,2,9,%p,cfg{null})",
	      (void *)COMM, (void *)&comm_out);
	CHECK(ncclCommShrink(COMM, devs, 2, &comm_out, &cfg, 1),
	      "ncclCommShrink(%p,%p,2,%p,cfg{size=%zu,blocking=0,name=app,tc=5},1)", (void *)COMM,
	      (void *)devs, (void *)&comm_out, sizeof(cfg));
#endif
	CHECK(ncclCommDestroy(COMM), "ncclCommDestroy(%p)", (void *)COMM);
	CHECK(ncclCommAbort(COMM), "ncclCommAbort(%p)", (void *)COMM);
#undef CHECK
	standin_set_result(ncclSuccess);
	cudaStreamSynchronize(s);
	cudaStreamDestroy(s);
}

/* Communicators created with a config get the job's class in trafficClass (a copy
 * is forwarded; the application's struct and its own value are left alone). */
static void test_config_class(void **state)
{
#if STANDIN_NCCL_2_28
	struct {
		ncclConfig_t c;
		int newer_fields[4]; /* an application built against a newer nccl.h */
	} big = {NCCL_CONFIG_INITIALIZER, {0}};
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId id;
	ncclComm_t comm_out;
	int tc =
	    pacing_on ? hm_nccl_config_traffic_class(1, HM_NCCL_SYSFS_IB) : NCCL_CONFIG_UNDEF_INT;
	char want[512];

	memset(&id, 0, sizeof(id));
	memcpy(id.internal, "uniqueid", 8);
	cfg.commName = "mine";
	printf("nccl-interposer: CONFIG_TRAFFIC_CLASS=%d (class 1 on this node's links)\n", tc);
#define EXPECT(call, ...)                                                                          \
	do {                                                                                       \
		assert_int_equal(call, ncclSuccess);                                               \
		snprintf(want, sizeof(want), __VA_ARGS__);                                         \
		if (strncmp(standin_last_call(), want, strlen(want)) != 0)                         \
			fail_msg("forwarded '%s', expected '%s...'", standin_last_call(), want);   \
	} while (0)
	EXPECT(ncclCommInitRankConfig(&comm_out, 8, id, 7, &cfg),
	       "ncclCommInitRankConfig(%p,8,uniqueid,7,cfg{size=%zu,blocking=%d,name=mine,tc=%d})",
	       (void *)&comm_out, sizeof(cfg), NCCL_CONFIG_UNDEF_INT, tc);
	assert_int_equal(cfg.trafficClass, NCCL_CONFIG_UNDEF_INT); /* not written */
	EXPECT(ncclCommSplit(COMM, 0, 1, &comm_out, &cfg),
	       "ncclCommSplit(%p,0,1,%p,cfg{size=%zu,blocking=%d,name=mine,tc=%d})", (void *)COMM,
	       (void *)&comm_out, sizeof(cfg), NCCL_CONFIG_UNDEF_INT, tc);
	EXPECT(ncclCommShrink(COMM, NULL, 0, &comm_out, &cfg, 0),
	       "ncclCommShrink(%p,(nil),0,%p,cfg{size=%zu,blocking=%d,name=mine,tc=%d},0)",
	       (void *)COMM, (void *)&comm_out, sizeof(cfg), NCCL_CONFIG_UNDEF_INT, tc);
	EXPECT(
	    ncclCommInitRankScalable(&comm_out, 4, 0, 1, &id, &cfg),
	    "ncclCommInitRankScalable(%p,4,0,1,uniqueid,cfg{size=%zu,blocking=%d,name=mine,tc=%d})",
	    (void *)&comm_out, sizeof(cfg), NCCL_CONFIG_UNDEF_INT, tc);
	/* A larger struct is copied whole (its size kept). */
	big.c.size = sizeof(big);
	EXPECT(ncclCommSplit(COMM, 0, 1, &comm_out, &big.c),
	       "ncclCommSplit(%p,0,1,%p,cfg{size=%zu,blocking=%d,name=-,tc=%d})", (void *)COMM,
	       (void *)&comm_out, sizeof(big), NCCL_CONFIG_UNDEF_INT, tc);
	/* The application's own value wins; a config older than trafficClass is left alone. */
	cfg.trafficClass = 77;
	EXPECT(ncclCommSplit(COMM, 0, 1, &comm_out, &cfg),
	       "ncclCommSplit(%p,0,1,%p,cfg{size=%zu,blocking=%d,name=mine,tc=77})", (void *)COMM,
	       (void *)&comm_out, sizeof(cfg), NCCL_CONFIG_UNDEF_INT);
	cfg.trafficClass = NCCL_CONFIG_UNDEF_INT;
	cfg.version = NCCL_VERSION(2, 24, 3);
	EXPECT(ncclCommSplit(COMM, 0, 1, &comm_out, &cfg),
	       "ncclCommSplit(%p,0,1,%p,cfg{size=%zu,blocking=%d,name=mine,tc=%d})", (void *)COMM,
	       (void *)&comm_out, sizeof(cfg), NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT);
#undef EXPECT
	/* Creations with a config never export the process-wide variables (which NCCL
	 * would let override an application's own trafficClass). */
	if (config_only) {
		assert_null(getenv("NCCL_IB_TC"));
		assert_null(getenv("NCCL_IB_SL"));
	}
#else
	skip();
#endif
}

/* Expected op names, in order, and the ops actually executed on the stream. */
static void expect_ops(cudaStream_t s, const char *const *names, int n, standin_op_t *ops)
{
	int got = standin_stream_ops(s, ops, 64);

	for (int i = 0; i < got && i < 64; i++)
		printf("nccl-interposer: op %d %s start=%lld end=%lld\n", i, ops[i].name,
		       (long long)ops[i].start_us, (long long)ops[i].end_us);
	assert_int_equal(got, n);
	for (int i = 0; i < n; i++)
		assert_string_equal(ops[i].name, names[i]);
}

static void test_stream_order(void **state)
{
	cudaStream_t s;
	standin_op_t ops[64];
	int64_t t0, call_us;
	long long period_us = env_ll("HARMONICS_PERIOD_US");
	hm_pace_stats_t st;

	if (!pacing_on || config_only)
		skip();
	assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
	sleep_past_guard(period_us / 2); /* > period / 4: a new iteration */
	/* Iteration 1: the first collective is held, the second follows it. */
	t0 = now_us();
	assert_int_equal(ncclAllReduce(SB, RB, 1, ncclFloat32, ncclSum, COMM, s), ncclSuccess);
	call_us = now_us() - t0;
	assert_int_equal(ncclBroadcast(SB, RB, 1, ncclFloat32, 0, COMM, s), ncclSuccess);
	/* Iteration 2: a group; its kernels run at GroupEnd, the hold precedes them. */
	sleep_past_guard(period_us / 2);
	assert_int_equal(ncclGroupStart(), ncclSuccess);
	assert_int_equal(ncclAllGather(SB, RB, 1, ncclFloat32, COMM, s), ncclSuccess);
	assert_int_equal(ncclReduceScatter(SB, RB, 1, ncclFloat32, ncclSum, COMM, s), ncclSuccess);
	assert_int_equal(ncclGroupEnd(), ncclSuccess);
	/* A simulated group launches nothing: no hold, no stamp is left on the stream. */
	sleep_past_guard(period_us / 2);
	{
		ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;

		assert_int_equal(ncclGroupStart(), ncclSuccess);
		assert_int_equal(ncclAllReduce(SB, RB, 1, ncclFloat32, ncclSum, COMM, s),
				 ncclSuccess);
		assert_int_equal(ncclGroupSimulateEnd(&sim), ncclSuccess);
	}
	/* Iteration 3: the deprecated in-place broadcast is held like the others. */
	sleep_past_guard(period_us / 2);
	assert_int_equal(ncclBcast(RB, 1, ncclFloat32, 0, COMM, s), ncclSuccess);
	cudaStreamSynchronize(s);
	{
		const char *const want[] = {"host",
					    "kernel:ncclAllReduce",
					    "host",
					    "kernel:ncclBroadcast",
					    "host",
					    "host",
					    "kernel:ncclAllGather",
					    "kernel:ncclReduceScatter",
					    "host",
					    "host",
					    "kernel:ncclBcast",
					    "host"};

		expect_ops(s, want, 12, ops);
	}
	printf("nccl-interposer: HOST_CALL_US=%lld KERNEL1_AFTER_SLOT_US=%lld "
	       "KERNEL2_AFTER_SLOT_US=%lld\n",
	       (long long)call_us, after_slot_us(ops[1].start_us), after_slot_us(ops[6].start_us));
	/* The calling thread was not held (the slot was up to a period away). */
	assert_true(call_us < 20000);
	/* Each held collective started on a slot of the assignment, after its hold. */
	assert_true(after_slot_us(ops[1].start_us) < SLOT_TOLERANCE_US);
	assert_true(after_slot_us(ops[6].start_us) < SLOT_TOLERANCE_US);
	assert_true(after_slot_us(ops[10].start_us) < SLOT_TOLERANCE_US);
	assert_true(ops[1].start_us >= ops[0].end_us);
	assert_true(ops[6].start_us >= ops[5].end_us);
	/* Ready 20 ms after a slot (guard 10 ms): the first hold waited for the next
	 * one. The second is ready when the stream is done with the first iteration,
	 * before the next slot after it, planned from that burst: a wait again. */
	assert_true(ops[0].end_us - ops[0].start_us > period_us / 2);
	assert_true(ops[5].end_us - ops[5].start_us > period_us / 2);
	hm_pace_stats(hm_pace_default(), &st);
	assert_true(st.paced >= 3);
	assert_true(st.burst_us >= STANDIN_KERNEL_US);
	cudaStreamDestroy(s);
}

/* Explicit marks (hm_pace_iter_begin) start an iteration without a gap. Runs last:
 * once marks are used the gap heuristic is off for the process. */
static void test_explicit_marks(void **state)
{
	cudaStream_t s;
	standin_op_t ops[64];

	if (!pacing_on || config_only)
		skip();
	assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
	hm_pace_iter_begin(hm_pace_default());
	assert_int_equal(ncclSend(SB, 1, ncclFloat32, 1, COMM, s), ncclSuccess);
	assert_int_equal(ncclRecv(RB, 1, ncclFloat32, 1, COMM, s), ncclSuccess);
	hm_pace_iter_begin(hm_pace_default()); /* no gap at all */
	assert_int_equal(ncclSend(SB, 1, ncclFloat32, 1, COMM, s), ncclSuccess);
	cudaStreamSynchronize(s);
	{
		const char *const want[] = {
		    "host", "kernel:ncclSend", "host", "kernel:ncclRecv", "host",
		    "host", "kernel:ncclSend", "host"};

		expect_ops(s, want, 8, ops);
	}
	assert_true(after_slot_us(ops[6].start_us) < SLOT_TOLERANCE_US);
	cudaStreamDestroy(s);
}

/* Pacing off: nothing but the kernels reaches the stream, and the wrapper costs
 * a few nanoseconds per call over calling the stand-in directly. */
static void test_off_zero_cost(void **state)
{
	cudaStream_t s;
	standin_op_t ops[64];
	void *h;
	__typeof__(&ncclSend) direct;
	const int n = 1000000;
	double best_wrapped = 1e9, best_direct = 1e9;

	if (pacing_on || config_only)
		skip();
	assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
	assert_int_equal(ncclAllReduce(SB, RB, 1, ncclFloat32, ncclSum, COMM, s), ncclSuccess);
	usleep(50000);
	assert_int_equal(ncclAllReduce(SB, RB, 1, ncclFloat32, ncclSum, COMM, s), ncclSuccess);
	cudaStreamSynchronize(s);
	{
		const char *const want[] = {"kernel:ncclAllReduce", "kernel:ncclAllReduce"};

		expect_ops(s, want, 2, ops);
	}
	cudaStreamDestroy(s);

	h = dlopen("libstandin_nccl_cuda.so", RTLD_LAZY | RTLD_NOLOAD);
	assert_non_null(h);
	direct = (__typeof__(&ncclSend))dlsym(h, "ncclSend");
	assert_non_null(direct);
	assert_true((void *)direct != (void *)ncclSend);
	standin_set_quiet(1);
	for (int rep = 0; rep < 5; rep++) {
		int64_t t0 = now_us();
		double w, d;

		for (int i = 0; i < n; i++)
			ncclSend(SB, 1, ncclFloat32, 1, COMM, NULL);
		w = (double)(now_us() - t0) * 1000.0 / n;
		t0 = now_us();
		for (int i = 0; i < n; i++)
			direct(SB, 1, ncclFloat32, 1, COMM, NULL);
		d = (double)(now_us() - t0) * 1000.0 / n;
		best_wrapped = w < best_wrapped ? w : best_wrapped;
		best_direct = d < best_direct ? d : best_direct;
	}
	standin_set_quiet(0);
	dlclose(h);
	printf("nccl-interposer: OFF_WRAPPED_NS_PER_CALL=%.1f DIRECT_NS_PER_CALL=%.1f "
	       "OVERHEAD_NS=%.1f\n",
	       best_wrapped, best_direct, best_wrapped - best_direct);
	assert_true(best_wrapped - best_direct < 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_interposed),     cmocka_unit_test(test_stream_order),
	    cmocka_unit_test(test_forwarding),     cmocka_unit_test(test_off_zero_cost),
	    cmocka_unit_test(test_explicit_marks), cmocka_unit_test(test_config_class),
	};
	const char *mode = getenv("HM_TEST_PACING");

	if (!mode) {
		fprintf(stderr,
			"test_nccl_interposer: run it through tests/pace/nccl_preload.sh\n");
		return 77;
	}
	pacing_on = strcmp(mode, "on") == 0;
	config_only = getenv("HM_TEST_CONFIG_ONLY") != NULL;
	expect_tc = getenv("HM_TEST_EXPECT_TC") ? getenv("HM_TEST_EXPECT_TC") : "unset";
	expect_sl = getenv("HM_TEST_EXPECT_SL") ? getenv("HM_TEST_EXPECT_SL") : "unset";
	return cmocka_run_group_tests(tests, NULL, NULL);
}
