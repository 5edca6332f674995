/*
 * nprof_plugin.c - libnccl-profiler-harmonics.so: NCCL's profiler plugin
 * interface (versions 5 and 4, nprof_abi.h) used to measure each
 * communicator's bursts from NCCL's own kernel events, and to feed the one
 * communicator the interposer would pace (cross-node, most ranks) to the
 * pacing runtime (hm_pace_burst_measured). Observes only: holds stay with the
 * LD_PRELOAD interposer (libharmonics-nccl.so).
 *
 * Chaining: every call is forwarded to the plugin the user had
 * (nprof_chain.h) and its results returned. Our handles wrap the chained
 * plugin's only for the events we measure (collectives, p2p, kernel
 * channels); those come from a ring of slots in one mapping of ours, so a
 * handle is ours exactly when it lies inside it. A parent handle is translated
 * for the chained plugin even after NCCL stopped it (NCCL starts kernel
 * events under a collective it already stopped): a stopped slot keeps its
 * contents until the ring comes round to it, as NCCL's example plugin pools do.
 *
 * Fail-open: any failure turns our part off (one line on stderr) and the
 * chained plugin still gets every call; nothing returns an error NCCL acts on,
 * except init when neither part can run (NCCL then goes on without a profiler).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hm_pace.h"
#include "hm_pace_env.h"
#include "hm_parse.h"
#include "nprof_abi.h"
#include "nprof_burst.h"
#include "nprof_chain.h"

#define OUR_MASK       (NPROF_COLL | NPROF_P2P | NPROF_KERNEL_CH)
#define RING_SLOTS     65536
#define DEFAULT_GAP_US 5000
#define NAME_MAX_BYTES 64

typedef struct nprof_ctx nprof_ctx_t;

/* A slot of the ring: an event we measure. */
typedef struct {
	int live; /* atomic: started and not yet stopped */
	uint32_t type;
	nprof_ctx_t *ctx;
	void *chain;                /* the chained plugin's handle, NULL when none */
	uint64_t start_ns, stop_ns; /* kernel channel: GPU globaltimer */
} nprof_event_t;

/* Calls of a chained plugin that v4 and v5 declare alike. */
typedef struct {
	nprof_result_t (*stop)(void *eHandle);
	nprof_result_t (*record)(void *eHandle, nprof_state_t st, nprof_state_args_t *a);
	nprof_result_t (*finalize)(void *context);
} nprof_chain_ops_t;

#define CHAIN_OPS(p)                                                                               \
	((p) ? (nprof_chain_ops_t){(p)->stopEvent, (p)->recordEventState, (p)->finalize}           \
	     : (nprof_chain_ops_t){0})

/* One communicator (NCCL's context for it). */
struct nprof_ctx {
	bool chain_on;   /* the chained plugin's init succeeded: forward */
	void *chain_ctx; /* its context */
	const nprof_plugin_v4_t *chain4;
	const nprof_plugin_v5_t *chain5;
	nprof_chain_ops_t ops; /* the chained plugin's calls alike in v4 and v5 */
	int chain_mask;
	bool ours;   /* we measure this communicator */
	uint64_t id; /* commId (v5) / commHash (v4) */
	int nnodes, nranks, rank;
	uint64_t order; /* init order: the first of equals is fed */
	char name[NAME_MAX_BYTES];
	nprof_logger_t log;
	pthread_mutex_t mu; /* guards b */
	nprof_burst_t b;
	nprof_ctx_t *next; /* the registry */
};

enum { OURS_UNKNOWN = 0, OURS_ON, OURS_OFF };

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static int ours_state; /* atomic; OURS_* */
static int64_t gap_env_us = -1;

static nprof_event_t *ring; /* RING_SLOTS slots, mapped once, never unmapped */
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static size_t ring_next;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static nprof_ctx_t *reg;
static uint64_t reg_order;
static nprof_ctx_t *fed; /* atomic; compared, never dereferenced outside reg_mu */

static void ours_off(const char *why)
{
	int was = OURS_ON;

	if (__atomic_compare_exchange_n(&ours_state, &was, OURS_OFF, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		fprintf(stderr,
			NPROF_LOG_PREFIX "%s; burst measurement off for this process (fail-open)\n",
			why);
}

/* Pin this library: NCCL unloads its plugin when its last communicator goes, which
 * would take the runtime's measurements with it. */
static void pin_self(void)
{
	Dl_info self = {0};

	if (dladdr((void *)pin_self, &self) && self.dli_fname)
		(void)dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static void setup(void)
{
	const char *mode = getenv(HM_PACE_ENV_MODE), *file = getenv(HM_PACE_ENV_ASSIGN_FILE);
	const char *gap = getenv(HM_PACE_ENV_NCCL_GAP_US);
	hm_err_t err = {0};
	long v = 0;
	void *m;

	pin_self();
	/* The interposer's rule: nothing can ever turn pacing on, nothing to measure for. */
	if ((!file || !*file) && (!mode || strcmp(mode, HM_PACE_MODE_OFF) == 0)) {
		__atomic_store_n(&ours_state, OURS_OFF, __ATOMIC_RELEASE);
		return;
	}
	if (gap) {
		if (hm_parse_long(gap, 0, 3600000000L, &v, HM_PACE_ENV_NCCL_GAP_US, &err) == HM_OK)
			gap_env_us = v;
		else
			fprintf(stderr, NPROF_LOG_PREFIX "%s; using period / 4\n", err.msg);
	}
	m = mmap(NULL, RING_SLOTS * sizeof(nprof_event_t), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	__atomic_store_n(&ours_state, OURS_ON, __ATOMIC_RELEASE);
	if (m == MAP_FAILED) {
		ours_off("cannot map the event ring");
		return;
	}
	ring = m;
	if (!hm_pace_default())
		ours_off("cannot set up the pacing runtime (out of memory)");
}

static bool ours_on(void)
{
	pthread_once(&setup_once, setup);
	return __atomic_load_n(&ours_state, __ATOMIC_ACQUIRE) == OURS_ON;
}

/* ---- the ring ---- */

static nprof_event_t *ring_get(void *h)
{
	uintptr_t a = (uintptr_t)h, base = (uintptr_t)ring;

	if (!ring || a < base || a >= base + RING_SLOTS * sizeof(nprof_event_t))
		return NULL;
	return h;
}

/* A free slot (the oldest stopped ones first); NULL when all are live. */
static nprof_event_t *ring_take(nprof_ctx_t *c, uint32_t type)
{
	nprof_event_t *e = NULL;

	pthread_mutex_lock(&ring_mu);
	for (size_t i = 0; i < RING_SLOTS; i++) {
		nprof_event_t *s = &ring[(ring_next + i) % RING_SLOTS];

		if (!__atomic_load_n(&s->live, __ATOMIC_ACQUIRE)) {
			ring_next = (ring_next + i + 1) % RING_SLOTS;
			e = s;
			break;
		}
	}
	if (e) {
		e->type = type;
		e->ctx = c;
		e->chain = NULL;
		e->start_ns = e->stop_ns = 0;
		__atomic_store_n(&e->live, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ring_mu);
	return e;
}

/* The chained plugin's name for a parent handle: ours translated, anything else
 * (its own raw handle, NULL, another process's under PXN) unchanged. */
static void *chain_parent(void *parent)
{
	nprof_event_t *p = ring_get(parent);

	return p ? p->chain : parent;
}

/* ---- which communicator feeds the runtime ---- */

static bool better(const nprof_ctx_t *a, const nprof_ctx_t *b)
{
	bool ax = a->nnodes > 1, bx = b->nnodes > 1;

	if (ax != bx)
		return ax;
	if (a->nranks != b->nranks)
		return a->nranks > b->nranks;
	return a->order < b->order;
}

/* Cross-node with the most ranks (the interposer's choice), else the largest. */
static void choose_locked(void)
{
	nprof_ctx_t *best = NULL;

	for (nprof_ctx_t *c = reg; c; c = c->next)
		if (c->ours && (!best || better(c, best)))
			best = c;
	__atomic_store_n(&fed, best, __ATOMIC_RELEASE);
}

static int64_t gap_us(void)
{
	int64_t period;

	if (gap_env_us >= 0)
		return gap_env_us;
	period = hm_pace_period_us(hm_pace_default());
	return period > 0 ? period / 4 : DEFAULT_GAP_US;
}

static void feed(nprof_ctx_t *c, uint64_t burst_ns)
{
	if (burst_ns && c == __atomic_load_n(&fed, __ATOMIC_ACQUIRE) && ours_on())
		hm_pace_burst_measured(hm_pace_default(), (int64_t)(burst_ns / 1000));
}

static void kernel_done(nprof_ctx_t *c, uint64_t start_ns, uint64_t stop_ns)
{
	uint64_t done;

	pthread_mutex_lock(&c->mu);
	done = nprof_burst_kernel(&c->b, start_ns, stop_ns, (uint64_t)gap_us() * 1000);
	pthread_mutex_unlock(&c->mu);
	feed(c, done);
}

/* ---- the parts both versions share ---- */

static nprof_ctx_t *ctx_new(uint64_t id, const char *name, int nnodes, int nranks, int rank,
			    nprof_logger_t log)
{
	nprof_ctx_t *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	c->id = id;
	c->nnodes = nnodes;
	c->nranks = nranks;
	c->rank = rank;
	c->log = log;
	snprintf(c->name, sizeof(c->name), "%s", name ? name : "");
	c->ours = ours_on();
	return c;
}

/* After the chained init: the mask NCCL gets, the registry entry. */
static nprof_result_t ctx_ready(void **context, nprof_ctx_t *c, int *mask, bool chained,
				nprof_result_t crc, int cmask)
{
	/* A chained init that fails leaves that plugin off for this communicator, as NCCL would. */
	c->chain_on = chained && crc == NPROF_SUCCESS;
	c->chain_mask = c->chain_on ? cmask : 0;
	if (!c->ours && !c->chain_on) {
		pthread_mutex_destroy(&c->mu);
		free(c);
		*context = NULL;
		*mask = 0;
		/* Neither part runs: NCCL goes on without a profiler (init errors are not fatal).
		 */
		return chained ? crc : NPROF_SUCCESS;
	}
	*mask = (c->ours ? OUR_MASK : 0) | c->chain_mask;
	pthread_mutex_lock(&reg_mu);
	c->order = reg_order++;
	c->next = reg;
	reg = c;
	choose_locked();
	pthread_mutex_unlock(&reg_mu);
	*context = c;
	return NPROF_SUCCESS;
}

/* Start of an event: our slot when we measure it (NULL otherwise). */
static nprof_event_t *start_ours(nprof_ctx_t *c, uint64_t type, uint64_t ptimer)
{
	nprof_event_t *e;

	if (!c->ours || !(type & OUR_MASK) || !ours_on())
		return NULL;
	if (type == NPROF_COLL || type == NPROF_P2P) {
		pthread_mutex_lock(&c->mu);
		c->b.ops++;
		pthread_mutex_unlock(&c->mu);
	}
	e = ring_take(c, (uint32_t)type);
	if (!e) {
		ours_off("more than 65536 NCCL events in flight");
		return NULL;
	}
	e->start_ns = ptimer;
	return e;
}

/* The handle NCCL gets: ours (wrapping the chained one), else the chained one. */
static void *start_done(nprof_event_t *e, void *chain_handle)
{
	if (!e)
		return chain_handle;
	e->chain = chain_handle;
	return e;
}

static void record_ours(nprof_event_t *e, nprof_state_t st, const nprof_state_args_t *a)
{
	if (e->type == NPROF_KERNEL_CH && st == NPROF_STATE_KERNEL_CH_STOP && a)
		e->stop_ns = a->kernelCh.pTimer;
}

static void stop_ours(nprof_event_t *e)
{
	if (e->type == NPROF_KERNEL_CH && e->ctx->ours && ours_on())
		kernel_done(e->ctx, e->start_ns, e->stop_ns);
	__atomic_store_n(&e->live, 0, __ATOMIC_RELEASE);
}

/* Before the chained finalize: the last burst, one INFO line through NCCL's logger. */
static void ctx_finish(nprof_ctx_t *c)
{
	uint64_t done;
	nprof_burst_t b;
	bool was_fed;

	pthread_mutex_lock(&reg_mu);
	for (nprof_ctx_t **pp = &reg; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	was_fed = c == __atomic_load_n(&fed, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&c->mu);
	done = nprof_burst_flush(&c->b);
	b = c->b;
	pthread_mutex_unlock(&c->mu);
	if (was_fed)
		feed(c, done);
	choose_locked();
	pthread_mutex_unlock(&reg_mu);
	if (c->ours && c->log)
		c->log(NPROF_LOG_INFO, NPROF_LOG_PROFILE, __FILE__, __LINE__,
		       "harmonics: comm %s id %016llx nodes %d ranks %d rank %d: %llu ops, "
		       "%llu bursts, burst_sum_us %llu, mean burst_us %llu, fed %s",
		       c->name[0] ? c->name : "-", (unsigned long long)c->id, c->nnodes, c->nranks,
		       c->rank, (unsigned long long)b.ops, (unsigned long long)b.bursts,
		       (unsigned long long)(b.burst_sum_ns / 1000),
		       (unsigned long long)(b.bursts ? b.burst_sum_ns / b.bursts / 1000 : 0),
		       was_fed ? "yes" : "no");
}

static void ctx_free(nprof_ctx_t *c)
{
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* ---- version 5 (NCCL 2.28 to 2.30) ---- */

static nprof_result_t v5_init(void **context, uint64_t commId, int *mask, const char *commName,
			      int nNodes, int nranks, int rank, nprof_logger_t logfn)
{
	nprof_ctx_t *c = ctx_new(commId, commName, nNodes, nranks, rank, logfn);
	nprof_result_t crc = NPROF_SUCCESS;
	int cmask = 0;

	*context = NULL;
	*mask = 0;
	if (!c) {
		fprintf(stderr,
			NPROF_LOG_PREFIX "out of memory: no profiler for communicator "
					 "%016llx\n",
			(unsigned long long)commId);
		return NPROF_INTERNAL_ERROR;
	}
	c->chain5 = nprof_chain_v5();
	c->ops = CHAIN_OPS(c->chain5);
	if (c->chain5)
		crc = c->chain5->init(&c->chain_ctx, commId, &cmask, commName, nNodes, nranks, rank,
				      logfn);
	return ctx_ready(context, c, mask, c->chain5 != NULL, crc, cmask);
}

static nprof_result_t v5_start(void *context, void **eHandle, nprof_descr_v5_t *d)
{
	nprof_ctx_t *c = context;
	nprof_event_t *e;
	nprof_descr_v5_t fd;
	void *ch = NULL;
	nprof_result_t rc = NPROF_SUCCESS;

	*eHandle = NULL;
	if (!c || !d)
		return NPROF_SUCCESS;
	e = start_ours(c, d->type, d->type == NPROF_KERNEL_CH ? d->kernelCh.pTimer : 0);
	if (c->chain_on && (d->type & (uint64_t)c->chain_mask)) {
		fd = *d;
		fd.parentObj = chain_parent(d->parentObj);
		if (d->type == NPROF_COLL)
			fd.coll.parentGroup = chain_parent(d->coll.parentGroup);
		else if (d->type == NPROF_P2P)
			fd.p2p.parentGroup = chain_parent(d->p2p.parentGroup);
		rc = c->chain5->startEvent(c->chain_ctx, &ch, &fd);
	}
	*eHandle = start_done(e, ch);
	return rc;
}

/* Stop, record and finalize: the same in both versions. OTHER: the chained
 * plugin's calls, for a handle that is its own (or NULL). */
static nprof_result_t stop_event(void *h, nprof_chain_ops_t other)
{
	nprof_event_t *e = ring_get(h);
	nprof_ctx_t *c;
	void *ch;

	if (!e) /* a chained handle (or NULL): the chained plugin's alone */
		return h && other.stop ? other.stop(h) : NPROF_SUCCESS;
	c = e->ctx;
	ch = e->chain;
	stop_ours(e);
	return ch ? c->ops.stop(ch) : NPROF_SUCCESS;
}

static nprof_result_t record_event(void *h, nprof_state_t st, nprof_state_args_t *a,
				   nprof_chain_ops_t other)
{
	nprof_event_t *e = ring_get(h);

	if (!e)
		return h && other.record ? other.record(h, st, a) : NPROF_SUCCESS;
	record_ours(e, st, a);
	return e->chain ? e->ctx->ops.record(e->chain, st, a) : NPROF_SUCCESS;
}

static nprof_result_t finalize_ctx(void *context)
{
	nprof_ctx_t *c = context;
	nprof_result_t rc = NPROF_SUCCESS;

	if (!c)
		return NPROF_SUCCESS;
	ctx_finish(c);
	if (c->chain_on)
		rc = c->ops.finalize(c->chain_ctx);
	ctx_free(c);
	return rc;
}

static nprof_result_t v5_stop(void *h)
{
	return stop_event(h, CHAIN_OPS(nprof_chain_v5()));
}

static nprof_result_t v5_record(void *h, nprof_state_t st, nprof_state_args_t *a)
{
	return record_event(h, st, a, CHAIN_OPS(nprof_chain_v5()));
}

/* ---- version 4 (NCCL 2.27) ---- */

static nprof_result_t v4_init(void **context, int *mask, const char *commName, uint64_t commHash,
			      int nNodes, int nranks, int rank, nprof_logger_t logfn)
{
	nprof_ctx_t *c = ctx_new(commHash, commName, nNodes, nranks, rank, logfn);
	nprof_result_t crc = NPROF_SUCCESS;
	int cmask = 0;

	*context = NULL;
	*mask = 0;
	if (!c) {
		fprintf(stderr,
			NPROF_LOG_PREFIX "out of memory: no profiler for communicator "
					 "%016llx\n",
			(unsigned long long)commHash);
		return NPROF_INTERNAL_ERROR;
	}
	c->chain4 = nprof_chain_v4();
	c->ops = CHAIN_OPS(c->chain4);
	if (c->chain4)
		crc = c->chain4->init(&c->chain_ctx, &cmask, commName, commHash, nNodes, nranks,
				      rank, logfn);
	return ctx_ready(context, c, mask, c->chain4 != NULL, crc, cmask);
}

static nprof_result_t v4_start(void *context, void **eHandle, nprof_descr_v4_t *d)
{
	nprof_ctx_t *c = context;
	nprof_event_t *e;
	nprof_descr_v4_t fd;
	void *ch = NULL;
	nprof_result_t rc = NPROF_SUCCESS;

	*eHandle = NULL;
	if (!c || !d)
		return NPROF_SUCCESS;
	e = start_ours(c, d->type, d->type == NPROF_KERNEL_CH ? d->kernelCh.pTimer : 0);
	if (c->chain_on && (d->type & c->chain_mask)) {
		fd = *d;
		fd.parentObj = chain_parent(d->parentObj);
		rc = c->chain4->startEvent(c->chain_ctx, &ch, &fd);
	}
	*eHandle = start_done(e, ch);
	return rc;
}

static nprof_result_t v4_stop(void *h)
{
	return stop_event(h, CHAIN_OPS(nprof_chain_v4()));
}

static nprof_result_t v4_record(void *h, nprof_state_t st, nprof_state_args_t *a)
{
	return record_event(h, st, a, CHAIN_OPS(nprof_chain_v4()));
}

/* The plugin's only exported symbols (libnccl-profiler-harmonics.sym). */
const nprof_plugin_v5_t ncclProfiler_v5 = {
    .name = "harmonics",
    .init = v5_init,
    .startEvent = v5_start,
    .stopEvent = v5_stop,
    .recordEventState = v5_record,
    .finalize = finalize_ctx,
};

const nprof_plugin_v4_t ncclProfiler_v4 = {
    .name = "harmonics",
    .init = v4_init,
    .startEvent = v4_start,
    .stopEvent = v4_stop,
    .recordEventState = v4_record,
    .finalize = finalize_ctx,
};
