/*
 * The NCCL interposer (LD_PRELOAD) when dlsym(RTLD_NEXT) cannot see NCCL: the
 * STAND-IN libnccl.so.2 is a dependency of an extension loaded with
 * dlopen(RTLD_LOCAL), as CPython loads PyTorch's or CuPy's (nccl_local_ext.h).
 * The interposer must find it itself and forward every call with its own
 * arguments and return code; pace (holds in stream order) when the job has an
 * assignment, not when it has none; turn pacing off after an internal failure
 * (cudaLaunchHostFunc fails) and keep forwarding; return ncclSystemError only
 * for a function that exists nowhere. Modes (HM_TEST_MODE, set by
 * nccl_local.sh, which also counts the interposer's stderr lines):
 *   off          no assignment: forwarding, nothing on the streams
 *   on           an assignment: forwarding, holds at the slots
 *   launch_fail  an assignment, cudaLaunchHostFunc fails: one attempt, then
 *                forwarding only
 *   names        no extension: the process has no NCCL at all; the first call
 *                loads libnccl.so.2 by its standard name
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "nccl_local_ext.h"

#define SLOT_TOLERANCE_US 30000

static const char *mode;
static const ext_api_t *api;
static void *ext;

static const void *const SB = (const void *)0x1000;
static void *const RB = (void *)0x2000;
static const ncclComm_t COMM = (ncclComm_t)0x3000;

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

static long long after_slot_us(int64_t t)
{
	long long base = env_ll("HARMONICS_ORIGIN_US") + env_ll("HARMONICS_SHIFT_US");
	long long p = env_ll("HARMONICS_PERIOD_US");

	return ((t - base) % p + p) % p;
}

/* 20 ms after a slot (past the 10 ms guard), at least min_us from now. */
static void sleep_past_guard(long long min_us)
{
	long long p = env_ll("HARMONICS_PERIOD_US");
	int64_t t = now_us() + min_us;
	long long d = after_slot_us(t);

	t += d <= 20000 ? 20000 - d : p - d + 20000;
	usleep((useconds_t)(t - now_us()));
}

static bool is_mode(const char *m)
{
	return strcmp(mode, m) == 0;
}

/* The library that defines the code at f. */
static const char *lib_of(const void *f)
{
	Dl_info info;

	return f && dladdr(f, &info) && info.dli_fname ? info.dli_fname : "?";
}

static int setup(void **state)
{
	if (is_mode("names"))
		return 0;
	ext = dlopen("nccl_local_ext.so", RTLD_LAZY | RTLD_LOCAL);
	if (!ext) {
		fprintf(stderr, "test_nccl_local: %s\n", dlerror());
		return -1;
	}
	api = ((const ext_api_t *(*)(void))dlsym(ext, "ext_api"))();
	return 0;
}

/* The set-up the test is about: NCCL local to the extension, calls to the interposer. */
static void test_local_scope(void **state)
{
	if (is_mode("names"))
		skip();
	/* Neither NCCL's own nor the CUDA runtime's symbols are in the global scope. */
	assert_null(dlsym(RTLD_DEFAULT, "standin_last_call"));
	assert_null(dlsym(RTLD_DEFAULT, "cudaStreamCreate"));
	assert_non_null(strstr(lib_of(dlsym(RTLD_DEFAULT, "ncclAllReduce")), "libharmonics-nccl"));
	/* The extension's own calls are bound to the interposer ... */
	assert_non_null(strstr(lib_of((const void *)api->all_reduce), "libharmonics-nccl"));
	assert_non_null(strstr(lib_of((const void *)api->group_start), "libharmonics-nccl"));
	/* ... and its CUDA and stand-in calls to the stand-in libnccl.so.2. */
	assert_non_null(strstr(lib_of((const void *)api->stream_create), "libnccl.so"));
	assert_non_null(strstr(lib_of((const void *)api->last_call), "libnccl.so"));
	printf("nccl-local: extension's ncclAllReduce -> %s, cudaStreamCreate -> %s\n",
	       lib_of((const void *)api->all_reduce), lib_of((const void *)api->stream_create));
}

static void expect_call(ncclResult_t got, ncclResult_t want, const char *call)
{
	if (strcmp(api->last_call(), call) != 0)
		fail_msg("forwarded '%s', expected '%s'", api->last_call(), call);
	assert_int_equal(got, want);
}

/* Every call reaches the real (stand-in) function with its arguments, and its
 * return code comes back unchanged, whatever the code. */
static void test_forwarding(void **state)
{
	cudaStream_t s;
	char want[512];
	ncclResult_t codes[] = {ncclInternalError,      ncclSuccess,     ncclInvalidArgument,
				ncclUnhandledCudaError, ncclRemoteError, ncclInProgress,
				ncclSystemError,        ncclInvalidUsage};
	int c = 0;
	ncclUniqueId id;
	ncclComm_t comm_out;
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;

	if (is_mode("names"))
		skip();
	cfg.blocking = 0;
	assert_int_equal(api->stream_create(&s), cudaSuccess);
	memset(&id, 0, sizeof(id));
	memcpy(id.internal, "uniqueid", 8);
#define CHECK(call, ...)                                                                           \
	do {                                                                                       \
		ncclResult_t want_rc = codes[c++ % 8];                                             \
		api->set_result(want_rc);                                                          \
		snprintf(want, sizeof(want), __VA_ARGS__);                                         \
		expect_call(call, want_rc, want);                                                  \
	} while (0)
	CHECK(api->all_reduce(SB, RB, 11, ncclFloat32, ncclSum, COMM, s),
	      "ncclAllReduce(%p,%p,11,%d,%d,%p,%p)", SB, RB, (int)ncclFloat32, (int)ncclSum,
	      (void *)COMM, (void *)s);
	CHECK(api->send(SB, 16, ncclUint8, 5, COMM, s), "ncclSend(%p,16,%d,5,%p,%p)", SB,
	      (int)ncclUint8, (void *)COMM, (void *)s);
	CHECK(api->group_start(), "ncclGroupStart()");
	CHECK(api->broadcast(SB, RB, 14, ncclFloat64, 3, COMM, s),
	      "ncclBroadcast(%p,%p,14,%d,3,%p,%p)", SB, RB, (int)ncclFloat64, (void *)COMM,
	      (void *)s);
	CHECK(api->group_end(), "ncclGroupEnd()");
	CHECK(api->comm_init_rank(&comm_out, 4, id, 1),
	      "ncclCommInitRank(%p,4,uniqueid,1) TC=%s SL=%s", (void *)&comm_out,
	      getenv("NCCL_IB_TC") ? getenv("NCCL_IB_TC") : "unset",
	      getenv("NCCL_IB_SL") ? getenv("NCCL_IB_SL") : "unset");
#if STANDIN_NCCL_2_28
	cfg.commName = "ext";
	cfg.trafficClass = 5;
	CHECK(api->comm_init_rank_config(&comm_out, 8, id, 7, &cfg),
	      "ncclCommInitRankConfig(%p,8,uniqueid,7,cfg{size=%zu,blocking=0,name=ext,tc=5}) "
	      "TC=%s SL=%s",
	      (void *)&comm_out, sizeof(cfg), getenv("NCCL_IB_TC") ? getenv("NCCL_IB_TC") : "unset",
	      getenv("NCCL_IB_SL") ? getenv("NCCL_IB_SL") : "unset");
#endif
	CHECK(api->comm_destroy(COMM), "ncclCommDestroy(%p)", (void *)COMM);
#undef CHECK
	api->set_result(ncclSuccess);
	api->stream_sync(s);
	api->stream_destroy(s);
}

/* A function the loaded NCCL does not have (an older release than the
 * interposer's nccl.h): nothing to forward to, ncclSystemError, and the
 * interposer says so in one line for the whole process (nccl_local.sh counts). */
static void test_missing_function(void **state)
{
	ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;

	if (is_mode("names"))
		skip();
	for (int i = 0; i < 2; i++) {
		assert_int_equal(api->group_simulate_end(&sim), ncclSystemError);
#if STANDIN_NCCL_2_28
		assert_int_equal(api->comm_shrink(COMM, NULL, 0, NULL, NULL, 0), ncclSystemError);
#endif
	}
	/* What exists is still forwarded. */
	api->set_result(ncclSuccess);
	assert_int_equal(api->comm_destroy(COMM), ncclSuccess);
}

static int stream_ops(cudaStream_t s, standin_op_t *ops, const char *const *want, int n)
{
	int got = api->stream_ops(s, ops, 64);

	for (int i = 0; i < got && i < 64; i++)
		printf("nccl-local: op %d %s start=%lld end=%lld\n", i, ops[i].name,
		       (long long)ops[i].start_us, (long long)ops[i].end_us);
	assert_int_equal(got, n);
	for (int i = 0; i < n; i++)
		assert_string_equal(ops[i].name, want[i]);
	return got;
}

/* A gap before the next iteration: past the guard with an assignment. */
static void gap(void)
{
	long long period = env_ll("HARMONICS_PERIOD_US");

	if (period > 0)
		sleep_past_guard(period / 2);
	else
		usleep(60000);
}

/* Two iterations (a gap longer than period / 4 before each). */
static void two_iterations(cudaStream_t s)
{
	gap();
	assert_int_equal(api->all_reduce(SB, RB, 1, ncclFloat32, ncclSum, COMM, s), ncclSuccess);
	assert_int_equal(api->broadcast(SB, RB, 1, ncclFloat32, 0, COMM, s), ncclSuccess);
	gap();
	assert_int_equal(api->all_reduce(SB, RB, 1, ncclFloat32, ncclSum, COMM, s), ncclSuccess);
	api->stream_sync(s);
}

/* Pacing as designed: held at the slots with an assignment; nothing added without
 * one, or once an internal failure turned it off. */
static void test_pacing(void **state)
{
	cudaStream_t s;
	standin_op_t ops[64];
	int attempts0;

	if (is_mode("names"))
		skip();
	api->set_result(ncclSuccess);
	assert_int_equal(api->stream_create(&s), cudaSuccess);
	attempts0 = api->launch_attempts();
	two_iterations(s);
	if (is_mode("on")) {
		const char *const want[] = {
		    "host", "kernel:ncclAllReduce", "host", "kernel:ncclBroadcast", "host",
		    "host", "kernel:ncclAllReduce", "host"};

		stream_ops(s, ops, want, 8);
		printf("nccl-local: KERNEL1_AFTER_SLOT_US=%lld KERNEL2_AFTER_SLOT_US=%lld\n",
		       after_slot_us(ops[1].start_us), after_slot_us(ops[6].start_us));
		assert_true(after_slot_us(ops[1].start_us) < SLOT_TOLERANCE_US);
		assert_true(after_slot_us(ops[6].start_us) < SLOT_TOLERANCE_US);
		/* Ready 20 ms after a slot: each hold waited for the next one. */
		assert_true(ops[0].end_us - ops[0].start_us > env_ll("HARMONICS_PERIOD_US") / 2);
	} else {
		const char *const want[] = {"kernel:ncclAllReduce", "kernel:ncclBroadcast",
					    "kernel:ncclAllReduce"};

		stream_ops(s, ops, want, 3);
	}
	/* launch_fail: one attempt, then no more (pacing off for the process); off: none. */
	printf("nccl-local: LAUNCH_ATTEMPTS=%d\n", api->launch_attempts() - attempts0);
	if (is_mode("launch_fail"))
		assert_int_equal(api->launch_attempts() - attempts0, 1);
	if (is_mode("off"))
		assert_int_equal(api->launch_attempts() - attempts0, 0);
	api->stream_destroy(s);
}

/* No NCCL in the process at all: the interposer loads libnccl.so.2 by name. */
static void test_standard_name(void **state)
{
	__typeof__(&ncclSend) send;
	__typeof__(&standin_last_call) last;
	char want[128];
	void *h;

	if (!is_mode("names"))
		skip();
	assert_null(dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD));
	send = (__typeof__(&ncclSend))dlsym(RTLD_DEFAULT, "ncclSend");
	assert_non_null(strstr(lib_of((const void *)send), "libharmonics-nccl"));
	assert_int_equal(send(SB, 3, ncclInt8, 2, COMM, NULL), ncclSuccess);
	h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
	assert_non_null(h);
	last = (__typeof__(&standin_last_call))dlsym(h, "standin_last_call");
	assert_non_null(last); /* the stand-in of LD_LIBRARY_PATH, not a system NCCL */
	snprintf(want, sizeof(want), "ncclSend(%p,3,%d,2,%p,(nil))", SB, (int)ncclInt8,
		 (void *)COMM);
	assert_string_equal(last(), want);
	printf("nccl-local: loaded by name: %s\n", lib_of((const void *)last));
	dlclose(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    /* test_pacing first: in launch_fail mode its first collective is the
	     * first attempt to enqueue a hold. */
	    cmocka_unit_test(test_local_scope),   cmocka_unit_test(test_pacing),
	    cmocka_unit_test(test_forwarding),    cmocka_unit_test(test_missing_function),
	    cmocka_unit_test(test_standard_name),
	};

	mode = getenv("HM_TEST_MODE");
	if (!mode) {
		fprintf(stderr, "test_nccl_local: run it through tests/pace/nccl_local.sh\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, NULL);
}
