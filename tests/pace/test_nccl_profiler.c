/*
 * test_nccl_profiler - libnccl-profiler-harmonics.so loaded as NCCL loads it
 * (dlopen, dlsym of ncclProfiler_v5 / ncclProfiler_v4), driven by a STAND-IN
 * driver: the calls NCCL 2.27/2.28 makes for a collective, with kernel
 * timestamps the test chooses (no GPU, no NCCL). Run by nccl_profiler.sh,
 * once per case (HM_PROF_CASE; the plugin loads its chain once per process):
 *   measure  bursts per communicator, the fed one reaching the runtime and
 *            its report, no double count with the interposer's stamps, v4 too;
 *   chain    every call forwarded to the STAND-IN chained plugin
 *            (standin_profiler.c) with its handles and return codes;
 *   missing  a chained plugin that cannot be loaded: measurement goes on;
 *   off      pacing impossible (no assignment): a pure forwarder.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hm_pace.h"
#include "nprof_abi.h"
#include "standin_profiler.h"

#define OUR_MASK (NPROF_COLL | NPROF_P2P | NPROF_KERNEL_CH)
#define US       1000ull /* ns per microsecond (GPU timestamps are ns) */
#define ITER_NS  (10000 * US)
#define BASE_NS  1700000000000000000ull

static const nprof_plugin_v5_t *p5;
static const nprof_plugin_v4_t *p4;
static char logbuf[8192];

/* NCCL's logger, as the plugin gets it at init: lines collected for the checks. */
static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	size_t n = strlen(logbuf);
	va_list ap;

	(void)level, (void)flags, (void)file, (void)line;
	va_start(ap, fmt);
	vsnprintf(logbuf + n, sizeof(logbuf) - n - 1, fmt, ap);
	va_end(ap);
	strcat(logbuf, "\n");
}

static int load(void **state)
{
	const char *path = getenv("HM_PROF_PLUGIN");
	void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;

	(void)state;
	if (!h) {
		fprintf(stderr, "cannot load HM_PROF_PLUGIN=%s: %s\n", path ? path : "(unset)",
			dlerror());
		return -1;
	}
	p5 = dlsym(h, "ncclProfiler_v5");
	p4 = dlsym(h, "ncclProfiler_v4");
	return p5 && p4 ? 0 : -1;
}

/* The STAND-IN chained plugin's record (it is loaded by the plugin, not by us). */
static standin_prof_log_t *standin(void)
{
	const char *path = getenv("HARMONICS_NCCL_PROFILER_CHAIN");
	void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
	standin_prof_log_t *(*get)(void) =
	    h ? (standin_prof_log_t * (*)(void)) dlsym(h, "standin_prof_log") : NULL;

	assert_non_null(get);
	return get();
}

static void *standin_handle(int i)
{
	void *h = dlopen(getenv("HARMONICS_NCCL_PROFILER_CHAIN"), RTLD_NOW | RTLD_NOLOAD);
	void *(*get)(int) = h ? (void *(*)(int))dlsym(h, "standin_prof_handle") : NULL;

	assert_non_null(get);
	return get(i);
}

/* ---- STAND-IN driver: NCCL's calls for one operation ---- */

/* Version 5: the API event (NCCL 2.28 starts it whenever Coll or KernelCh events
 * are active, asked for or not), then Coll (or P2p) under it, both stopped at
 * enqueue; later, from the proxy thread, one KernelCh per channel under the
 * stopped Coll, its GPU start in the descriptor and its stop in the
 * KernelChStop state. Returns the API event's handle. */
static void *op_v5(void *ctx, uint64_t type, uint64_t t0_ns, uint64_t t1_ns, int channels)
{
	nprof_descr_v5_t d = {.type = type, .rank = 0};
	nprof_descr_v5_t ad = {.type = type == NPROF_COLL ? NPROF_COLL_API : NPROF_P2P_API};
	void *op = NULL, *api = NULL;

	assert_int_equal(p5->startEvent(ctx, &api, &ad), NPROF_SUCCESS);
	d.parentObj = api;
	assert_int_equal(p5->startEvent(ctx, &op, &d), NPROF_SUCCESS);
	assert_int_equal(p5->stopEvent(op), NPROF_SUCCESS);
	if (api)
		assert_int_equal(p5->stopEvent(api), NPROF_SUCCESS);
	for (int ch = 0; ch < channels; ch++) {
		nprof_descr_v5_t k = {.type = NPROF_KERNEL_CH, .parentObj = op};
		nprof_state_args_t a = {.kernelCh = {.pTimer = t1_ns - (uint64_t)ch * 100 * US}};
		void *kh = NULL;

		k.kernelCh.channelId = (uint8_t)ch;
		k.kernelCh.pTimer = t0_ns + (uint64_t)ch * 100 * US;
		assert_int_equal(p5->startEvent(ctx, &kh, &k), NPROF_SUCCESS);
		assert_int_equal(p5->recordEventState(kh, NPROF_STATE_KERNEL_CH_STOP, &a),
				 NPROF_SUCCESS);
		assert_int_equal(p5->stopEvent(kh), NPROF_SUCCESS);
	}
	return api;
}

/* The same through version 4 (NCCL 2.27). */
static void op_v4(void *ctx, uint64_t t0_ns, uint64_t t1_ns)
{
	nprof_descr_v4_t d = {.type = NPROF_COLL}, k = {.type = NPROF_KERNEL_CH};
	nprof_state_args_t a = {.kernelCh = {.pTimer = t1_ns}};
	void *op = NULL, *kh = NULL;

	assert_int_equal(p4->startEvent(ctx, &op, &d), NPROF_SUCCESS);
	assert_int_equal(p4->stopEvent(op), NPROF_SUCCESS);
	k.parentObj = op;
	k.kernelCh.pTimer = t0_ns;
	assert_int_equal(p4->startEvent(ctx, &kh, &k), NPROF_SUCCESS);
	assert_int_equal(p4->recordEventState(kh, NPROF_STATE_KERNEL_CH_STOP, &a), NPROF_SUCCESS);
	assert_int_equal(p4->stopEvent(kh), NPROF_SUCCESS);
}

static void *init_v5(uint64_t id, int nnodes, int nranks, int *mask)
{
	void *ctx = NULL;

	assert_int_equal(p5->init(&ctx, id, mask, "test", nnodes, nranks, 0, logger),
			 NPROF_SUCCESS);
	return ctx;
}

static hm_pace_stats_t stats(void)
{
	hm_pace_stats_t s;

	hm_pace_stats(hm_pace_default(), &s);
	return s;
}

/* ---- measure ---- */

static void test_measure_two_comms(void **state)
{
	hm_pace_stats_t s0 = stats(), s1;
	int mask = 0;
	/* A: cross-node data parallel; B: a larger node-local one (never fed). */
	void *a = init_v5(0xa, 2, 8, &mask), *b;

	(void)state;
	assert_non_null(a);
	assert_int_equal(mask, OUR_MASK);
	b = init_v5(0xb, 1, 16, &mask);
	assert_non_null(b);
	for (uint64_t i = 0; i < 3; i++) {
		uint64_t t = BASE_NS + i * ITER_NS;

		/* A: an all-reduce on 2 channels [0, 800] us and a send [1000, 2000] us:
		 * one 2000 us burst (the gap, HARMONICS_NCCL_GAP_US, is 1000 us). */
		/* API events nobody asked for get no handle. */
		assert_null(op_v5(a, NPROF_COLL, t, t + 800 * US, 2));
		op_v5(a, NPROF_P2P, t + 1000 * US, t + 2000 * US, 1);
		/* B: [5000, 5300] us. */
		op_v5(b, NPROF_COLL, t + 5000 * US, t + 5300 * US, 1);
	}
	/* A late report of a kernel long before A's open burst changes nothing. */
	op_v5(a, NPROF_COLL, BASE_NS, BASE_NS + 10 * US, 1);
	/* Bursts are complete once the next one starts: two of A's so far. */
	s1 = stats();
	assert_int_equal(s1.burst_n - s0.burst_n, 2);
	assert_int_equal(s1.burst_sum_us - s0.burst_sum_us, 4000);
	assert_int_equal(p5->finalize(b), NPROF_SUCCESS);
	assert_int_equal(p5->finalize(a), NPROF_SUCCESS);
	s1 = stats();
	assert_int_equal(s1.burst_n - s0.burst_n, 3);
	assert_int_equal(s1.burst_sum_us - s0.burst_sum_us, 6000);
	/* One line per communicator through NCCL's logger. */
	assert_non_null(strstr(logbuf,
			       "comm test id 000000000000000a nodes 2 ranks 8 rank 0: 7 ops, "
			       "3 bursts, burst_sum_us 6000, mean burst_us 2000, fed yes"));
	assert_non_null(strstr(logbuf,
			       "comm test id 000000000000000b nodes 1 ranks 16 rank 0: 3 ops, "
			       "3 bursts, burst_sum_us 900, mean burst_us 300, fed no"));
}

/* NCCL's events win: the interposer's end stamps no longer add burst lengths. */
static void test_no_double_count(void **state)
{
	hm_pace_t *p = hm_pace_default();
	hm_pace_stats_t s0 = stats(), s1;

	(void)state;
	hm_pace_comm_begin_slot(p, HM_PACE_NO_SLOT);
	hm_pace_comm_end_at(p, hm_pace_now_us() + 500);
	s1 = stats();
	assert_int_equal(s1.bursts - s0.bursts, 1); /* the hold is still booked */
	assert_int_equal(s1.burst_n, s0.burst_n);
	assert_int_equal(s1.burst_sum_us, s0.burst_sum_us);
}

static void test_report(void **state)
{
	const char *path = getenv("HARMONICS_REPORT_FILE");
	hm_pace_stats_t s = stats();
	char want[64], text[4096] = "";
	FILE *f;
	size_t n;

	(void)state;
	assert_non_null(path);
	assert_int_equal(hm_pace_report(hm_pace_default()), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	snprintf(want, sizeof(want), "\nBURST_N=%llu\n", (unsigned long long)s.burst_n);
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "\nBURST_SUM_US=%llu\n", (unsigned long long)s.burst_sum_us);
	assert_non_null(strstr(text, want));
	assert_true(s.burst_n >= 3 && s.burst_sum_us >= 6000);
}

static void test_v4(void **state)
{
	hm_pace_stats_t s0 = stats(), s1;
	void *ctx = NULL;
	int mask = 0;

	(void)state;
	assert_int_equal(p4->init(&ctx, &mask, "v4", 0xc, 2, 4, 1, logger), NPROF_SUCCESS);
	assert_non_null(ctx);
	assert_int_equal(mask, OUR_MASK);
	for (uint64_t i = 0; i < 2; i++)
		op_v4(ctx, BASE_NS + i * ITER_NS, BASE_NS + i * ITER_NS + 1500 * US);
	assert_int_equal(p4->finalize(ctx), NPROF_SUCCESS);
	s1 = stats();
	assert_int_equal(s1.burst_n - s0.burst_n, 2);
	assert_int_equal(s1.burst_sum_us - s0.burst_sum_us, 3000);
}

/* ---- chain ---- */

static void test_chain_forwarding(void **state)
{
	standin_prof_log_t *l;
	hm_pace_stats_t s0 = stats(), s1;
	nprof_descr_v5_t d = {0};
	nprof_state_args_t args = {.kernelCh = {.pTimer = BASE_NS + 700 * US}};
	void *ctx, *api = NULL, *grp = NULL, *coll = NULL, *kern = NULL, *proxy = NULL;
	int mask = 0;

	(void)state;
	ctx = init_v5(0xa, 2, 8, &mask);
	l = standin();
	assert_int_equal(l->inits, 1);
	assert_int_equal(l->last_init_id, 0xa);
	assert_int_equal(l->last_init_nnodes, 2);
	assert_int_equal(l->last_init_version, 5);
	assert_int_equal(mask, OUR_MASK | STANDIN_PROF_MASK);

	/* Events only the chained plugin wants: its own handles come back. */
	d.type = NPROF_COLL_API;
	assert_int_equal(p5->startEvent(ctx, &api, &d), NPROF_SUCCESS);
	assert_ptr_equal(api, standin_handle(0));
	d.type = NPROF_GROUP;
	assert_int_equal(p5->startEvent(ctx, &grp, &d), NPROF_SUCCESS);
	assert_ptr_equal(grp, standin_handle(1));

	/* A collective both want: our handle, its parents passed through as they are. */
	d.type = NPROF_COLL;
	d.parentObj = api;
	d.coll.parentGroup = grp;
	assert_int_equal(p5->startEvent(ctx, &coll, &d), NPROF_SUCCESS);
	assert_non_null(coll);
	assert_ptr_not_equal(coll, standin_handle(2));
	assert_ptr_equal(l->start_parent[2], standin_handle(0));
	assert_ptr_equal(l->start_group[2], standin_handle(1));
	/* Its stopEvent's return code is forwarded. */
	l->stop_rc = NPROF_INVALID_ARG;
	assert_int_equal(p5->stopEvent(coll), NPROF_INVALID_ARG);
	assert_ptr_equal(l->stop_handle[0], standin_handle(2));
	l->stop_rc = NPROF_SUCCESS;

	/* After the Coll stopped: a kernel channel (ours alone) and a proxy op (its
	 * alone) under it; the proxy op's parent is translated to its Coll handle. */
	d = (nprof_descr_v5_t){.type = NPROF_KERNEL_CH, .parentObj = coll};
	d.kernelCh.pTimer = BASE_NS;
	assert_int_equal(p5->startEvent(ctx, &kern, &d), NPROF_SUCCESS);
	assert_non_null(kern);
	assert_int_equal(l->starts, 3);
	d = (nprof_descr_v5_t){.type = NPROF_PROXY_OP, .parentObj = coll};
	d.proxyOp.pid = getpid();
	assert_int_equal(p5->startEvent(ctx, &proxy, &d), NPROF_SUCCESS);
	assert_ptr_equal(proxy, standin_handle(3));
	assert_ptr_equal(l->start_parent[3], standin_handle(2));
	assert_int_equal(p5->recordEventState(proxy, 19, NULL), NPROF_SUCCESS);
	assert_ptr_equal(l->record_handle[0], standin_handle(3));
	assert_int_equal(l->record_state[0], 19);
	assert_int_equal(p5->recordEventState(kern, NPROF_STATE_KERNEL_CH_STOP, &args),
			 NPROF_SUCCESS);
	assert_int_equal(l->records, 1); /* not the chained plugin's event */
	assert_int_equal(p5->stopEvent(kern), NPROF_SUCCESS);
	assert_int_equal(p5->stopEvent(proxy), NPROF_SUCCESS);
	assert_ptr_equal(l->stop_handle[1], standin_handle(3));
	assert_int_equal(p5->stopEvent(grp), NPROF_SUCCESS);
	assert_int_equal(p5->stopEvent(api), NPROF_SUCCESS);
	assert_int_equal(l->stops, 4);

	/* finalize's return code too; the burst reached the runtime. */
	l->finalize_rc = NPROF_INTERNAL_ERROR;
	assert_int_equal(p5->finalize(ctx), NPROF_INTERNAL_ERROR);
	l->finalize_rc = NPROF_SUCCESS;
	assert_int_equal(l->finalizes, 1);
	s1 = stats();
	assert_int_equal(s1.burst_n - s0.burst_n, 1);
	assert_int_equal(s1.burst_sum_us - s0.burst_sum_us, 700);
	assert_int_equal(l->bad_context, 0);
}

/* A communicator whose chained init fails: ours alone, nothing forwarded. */
static void test_chain_init_fails(void **state)
{
	standin_prof_log_t *l = standin();
	int starts = l->starts, finalizes = l->finalizes, mask = 0;
	void *ctx = init_v5(STANDIN_PROF_FAIL_ID, 2, 8, &mask);

	(void)state;
	assert_non_null(ctx);
	assert_int_equal(mask, OUR_MASK);
	op_v5(ctx, NPROF_COLL, BASE_NS, BASE_NS + 100 * US, 1);
	assert_int_equal(p5->finalize(ctx), NPROF_SUCCESS);
	assert_int_equal(l->starts, starts);
	assert_int_equal(l->finalizes, finalizes);
}

static void test_chain_v4(void **state)
{
	standin_prof_log_t *l = standin();
	int starts = l->starts, mask = 0;
	nprof_descr_v4_t d = {.type = NPROF_PROXY_OP};
	void *ctx = NULL, *h = NULL;

	(void)state;
	assert_int_equal(p4->init(&ctx, &mask, "v4", 0xe, 2, 4, 0, logger), NPROF_SUCCESS);
	assert_int_equal(l->last_init_version, 4);
	assert_int_equal(l->last_init_id, 0xe);
	assert_int_equal(mask, OUR_MASK | STANDIN_PROF_MASK);
	assert_int_equal(p4->startEvent(ctx, &h, &d), NPROF_SUCCESS);
	assert_ptr_equal(h, standin_handle(starts));
	assert_int_equal(p4->stopEvent(h), NPROF_SUCCESS);
	assert_int_equal(p4->finalize(ctx), NPROF_SUCCESS);
}

/* ---- missing chain: measurement goes on ---- */

static void test_missing_chain(void **state)
{
	hm_pace_stats_t s0 = stats(), s1;
	int mask = 0;
	void *ctx = init_v5(0xa, 2, 8, &mask);

	(void)state;
	assert_non_null(ctx);
	assert_int_equal(mask, OUR_MASK);
	op_v5(ctx, NPROF_COLL, BASE_NS, BASE_NS + 400 * US, 2);
	op_v5(ctx, NPROF_COLL, BASE_NS + ITER_NS, BASE_NS + ITER_NS + 400 * US, 2);
	assert_int_equal(p5->finalize(ctx), NPROF_SUCCESS);
	s1 = stats();
	assert_int_equal(s1.burst_n - s0.burst_n, 2);
	assert_int_equal(s1.burst_sum_us - s0.burst_sum_us, 800);
}

/* ---- off: a pure forwarder, every handle the chained plugin's ---- */

static void test_off_forwards(void **state)
{
	standin_prof_log_t *l;
	nprof_descr_v5_t d = {.type = NPROF_COLL};
	int mask = 0;
	void *ctx = init_v5(0xa, 2, 8, &mask), *h = NULL;

	(void)state;
	l = standin();
	assert_int_equal(mask, STANDIN_PROF_MASK);
	assert_int_equal(p5->startEvent(ctx, &h, &d), NPROF_SUCCESS);
	assert_ptr_equal(h, standin_handle(0));
	assert_int_equal(p5->stopEvent(h), NPROF_SUCCESS);
	assert_ptr_equal(l->stop_handle[0], standin_handle(0));
	assert_int_equal(p5->finalize(ctx), NPROF_SUCCESS);
	assert_int_equal(l->finalizes, 1);
}

int main(void)
{
	const char *c = getenv("HM_PROF_CASE");
	const struct CMUnitTest measure[] = {
	    cmocka_unit_test(test_measure_two_comms),
	    cmocka_unit_test(test_no_double_count),
	    cmocka_unit_test(test_report),
	    cmocka_unit_test(test_v4),
	};
	const struct CMUnitTest chain[] = {
	    cmocka_unit_test(test_chain_forwarding),
	    cmocka_unit_test(test_chain_init_fails),
	    cmocka_unit_test(test_chain_v4),
	};
	const struct CMUnitTest missing[] = {cmocka_unit_test(test_missing_chain)};
	const struct CMUnitTest off[] = {cmocka_unit_test(test_off_forwards)};

	if (!c)
		c = "measure";
	if (strcmp(c, "measure") == 0)
		return cmocka_run_group_tests_name("measure", measure, load, NULL);
	if (strcmp(c, "chain") == 0)
		return cmocka_run_group_tests_name("chain", chain, load, NULL);
	if (strcmp(c, "missing") == 0)
		return cmocka_run_group_tests_name("missing", missing, load, NULL);
	if (strcmp(c, "off") == 0)
		return cmocka_run_group_tests_name("off", off, load, NULL);
	fprintf(stderr, "HM_PROF_CASE=%s (accepted: measure, chain, missing, off)\n", c);
	return 2;
}
