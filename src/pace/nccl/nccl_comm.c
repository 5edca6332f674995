/*
 * The interposer's communicator table (nccl_comm.h): keys, reach through the
 * node-local peer files, the choice of the one paced communicator, and the
 * per-communicator iteration detection. A small fixed table under one mutex:
 * a training process has a handful of communicators.
 */
#define _GNU_SOURCE
#include "nccl_comm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hm_pace.h"
#include "hm_pace_env.h"
#include "nccl_real.h"

#define MAX_COMMS        64
#define PEER_PATH_MAX    4096
#define ENV_PEER_DIR     "HARMONICS_NCCL_PEER_DIR"
#define ENV_TRACE        "HARMONICS_NCCL_TRACE"
#define ENV_REACH        "HARMONICS_NCCL_REACH" /* "cross": every communicator counts as cross-node */
#define FNV_OFFSET_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME        0x100000001b3ull

typedef ncclResult_t (*comm_count_fn_t)(const ncclComm_t, int *);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* guards the table */
static hm_nccl_comm_t comms[MAX_COMMS];
static int paced_idx = -1; /* the paced entry, -1 none; recomputed on every change */

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
	const unsigned char *b = data;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * FNV_PRIME;
	return h;
}

uint64_t hm_nccl_key_id(const ncclUniqueId *id)
{
	uint64_t h = fnv(FNV_OFFSET_BASIS, id->internal, sizeof(id->internal));

	return h ? h : 1; /* 0 means unknown */
}

uint64_t hm_nccl_key_child(uint64_t parent_key, int ordinal, int color)
{
	uint64_t h;

	if (!parent_key)
		return 0;
	h = fnv(FNV_OFFSET_BASIS, &parent_key, sizeof(parent_key));
	h = fnv(h, &ordinal, sizeof(ordinal));
	h = fnv(h, &color, sizeof(color));
	return h ? h : 1;
}

/* The node's peer file of key; false when there is no directory for it. */
static bool peer_path(uint64_t key, char *buf, size_t len)
{
	const char *dir = getenv(ENV_PEER_DIR), *assign = getenv(HM_PACE_ENV_ASSIGN_FILE);
	const char *node = getenv("SLURMD_NODENAME"), *step = getenv("SLURM_STEP_ID");
	char host[256], d[PEER_PATH_MAX];
	int n;

	if (!key)
		return false;
	if (dir && *dir) {
		snprintf(d, sizeof(d), "%s", dir);
	} else if (assign && *assign && strrchr(assign, '/')) {
		n = snprintf(d, sizeof(d), "%s", assign);
		if (n < 0 || (size_t)n >= sizeof(d))
			return false;
		*strrchr(d, '/') = '\0';
	} else {
		return false;
	}
	if (!node || !*node) {
		if (gethostname(host, sizeof(host)) != 0)
			return false;
		host[sizeof(host) - 1] = '\0';
		node = host;
	}
	n = snprintf(buf, len, "%s/nccl-peers.%s.%s.%016llx", d, node, step ? step : "-",
		     (unsigned long long)key);
	return n > 0 && (size_t)n < len && !strchr(node, '/');
}

void hm_nccl_comm_announce(uint64_t key)
{
	char path[PEER_PATH_MAX];
	int fd;

	if (!peer_path(key, path, sizeof(path)))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return; /* reach stays unknown */
	if (write(fd, "r", 1) != 1)
		hm_nccl_trace("peer-file %s: write failed: %s", path, strerror(errno));
	close(fd);
}

/* Ranks of key's communicator on this node, -1 when unknown. */
static int local_ranks(uint64_t key)
{
	char path[PEER_PATH_MAX];
	struct stat st;

	if (!peer_path(key, path, sizeof(path)) || stat(path, &st) != 0 || st.st_size <= 0 ||
	    st.st_size > INT_MAX)
		return -1;
	return (int)st.st_size;
}

/* ---- trace ---- */

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static FILE *trace_f;

static void trace_open(void)
{
	const char *t = getenv(ENV_TRACE), *r = getenv(HM_PACE_ENV_RANK);
	char path[PEER_PATH_MAX];
	size_t o = 0;

	if (!t || !*t)
		return;
	if (!r)
		r = getenv("SLURM_PROCID");
	for (; *t && o + 16 < sizeof(path); t++) {
		if (t[0] == '%' && t[1] == 'r') {
			o += (size_t)snprintf(path + o, sizeof(path) - o, "%s", r ? r : "0");
			t++;
		} else {
			path[o++] = *t;
		}
	}
	path[o] = '\0';
	trace_f = fopen(path, "a");
	if (trace_f)
		setvbuf(trace_f, NULL, _IOLBF, 0);
}

bool hm_nccl_tracing(void)
{
	pthread_once(&trace_once, trace_open);
	return trace_f != NULL;
}

void hm_nccl_trace(const char *fmt, ...)
{
	va_list ap;

	pthread_once(&trace_once, trace_open);
	if (!trace_f)
		return;
	va_start(ap, fmt);
	flockfile(trace_f);
	fprintf(trace_f, "%lld ", (long long)hm_pace_now_us());
	vfprintf(trace_f, fmt, ap);
	fputc('\n', trace_f);
	funlockfile(trace_f);
	va_end(ap);
}

/* ---- the table ---- */

static hm_nccl_comm_t *find_locked(ncclComm_t comm)
{
	for (int i = 0; i < MAX_COMMS; i++)
		if (comms[i].comm == comm)
			return &comms[i];
	return NULL;
}

static hm_nccl_comm_t *add_locked(ncclComm_t comm)
{
	hm_nccl_comm_t *c = find_locked(comm);

	if (c)
		return c;
	/* Never-used entries first: a destroyed communicator's host functions may
	 * still be queued with its entry (pass 2 reuses those only when full). */
	for (int i = 0; i < 2 * MAX_COMMS; i++) {
		if (comms[i % MAX_COMMS].comm || (i < MAX_COMMS && comms[i].retired))
			continue;
		c = &comms[i % MAX_COMMS];
		memset(c, 0, sizeof(*c));
		c->comm = comm;
		c->nranks = -1;
		c->local = -1;
		c->class_prio = -1;
		__atomic_store_n(&c->slot_prev_us, HM_PACE_NO_SLOT, __ATOMIC_RELEASE);
		return c;
	}
	return NULL; /* full: such a comm is never paced */
}

/* The paced entry: cross-node with the most ranks (first on a tie); else, when no
 * communicator is known cross-node, the unknown one with the most ranks. */
static void choose_locked(void)
{
	int best = -1, best_unknown = -1, was = paced_idx;

	for (int i = 0; i < MAX_COMMS; i++) {
		const hm_nccl_comm_t *c = &comms[i];

		if (!c->comm)
			continue;
		if (c->reach == HM_REACH_CROSS && (best < 0 || c->nranks > comms[best].nranks))
			best = i;
		if (c->reach == HM_REACH_UNKNOWN &&
		    (best_unknown < 0 || c->nranks > comms[best_unknown].nranks))
			best_unknown = i;
	}
	paced_idx = best >= 0 ? best : best_unknown;
	if (paced_idx != was && paced_idx >= 0)
		hm_pace_set_nccl_class(hm_pace_default(), comms[paced_idx].class_prio);
}

static const char *reach_name(hm_reach_t r)
{
	return r == HM_REACH_CROSS ? "cross-node" : r == HM_REACH_LOCAL ? "node-local" : "unknown";
}

/* At its first collective: how many ranks, how many here. */
static void resolve_locked(hm_nccl_comm_t *c)
{
	const char *nodes = getenv("SLURM_STEP_NUM_NODES"), *reach = getenv(ENV_REACH);

	c->resolved = true;
	if (c->nranks < 0) {
		comm_count_fn_t count = (comm_count_fn_t)hm_nccl_real_sym("ncclCommCount");
		int n = -1;

		if (count && count(c->comm, &n) == ncclSuccess && n > 0)
			c->nranks = n;
	}
	if (c->reach == HM_REACH_UNKNOWN)
		c->local = local_ranks(c->key);
	if (reach && strcmp(reach, "cross") == 0) {
		c->reach = HM_REACH_CROSS; /* the site's (or a one-node test's) choice */
	} else if (c->reach == HM_REACH_UNKNOWN) {
		if (c->nranks == 1 || (nodes && strcmp(nodes, "1") == 0))
			c->reach = HM_REACH_LOCAL;
		else if (c->local > 0 && c->nranks > 0)
			c->reach = c->local < c->nranks ? HM_REACH_CROSS : HM_REACH_LOCAL;
	}
	choose_locked();
	hm_nccl_trace("comm key=%016llx nranks=%d local=%d reach=%s class=%d paced=%d",
		      (unsigned long long)c->key, c->nranks, c->local, reach_name(c->reach),
		      c->class_prio, paced_idx >= 0 && &comms[paced_idx] == c);
}

void hm_nccl_comm_created(ncclComm_t comm, uint64_t key, int nranks, hm_reach_t reach,
			  int class_prio)
{
	hm_nccl_comm_t *c;

	if (!comm)
		return;
	pthread_mutex_lock(&mu);
	c = add_locked(comm);
	if (c) {
		c->key = key;
		c->nranks = nranks;
		c->reach = reach;
		c->resolved = false;
		c->class_prio = class_prio;
	}
	pthread_mutex_unlock(&mu);
}

void hm_nccl_comm_parent(ncclComm_t comm, uint64_t *key, int *ordinal, int *class_prio)
{
	hm_nccl_comm_t *c;

	pthread_mutex_lock(&mu);
	c = find_locked(comm);
	*key = c ? c->key : 0;
	*ordinal = c ? c->splits++ : 0;
	*class_prio = c ? c->class_prio : -1;
	pthread_mutex_unlock(&mu);
}

void hm_nccl_comm_forget(ncclComm_t comm)
{
	hm_nccl_comm_t *c;

	pthread_mutex_lock(&mu);
	c = find_locked(comm);
	if (c) {
		/* Host functions already enqueued may still read it: kept aside. */
		c->comm = NULL;
		c->retired = true;
		choose_locked();
	}
	pthread_mutex_unlock(&mu);
}

hm_nccl_comm_t *hm_nccl_comm_step(ncclComm_t comm, int64_t now_us, int64_t marks, int64_t gap_us,
				  bool *fresh)
{
	hm_nccl_comm_t *c;

	*fresh = false;
	pthread_mutex_lock(&mu);
	c = add_locked(comm);
	if (c && !c->resolved)
		resolve_locked(c);
	if (!c || paced_idx < 0 || c != &comms[paced_idx]) {
		pthread_mutex_unlock(&mu);
		return NULL;
	}
	c->seq++;
	if (marks > 0) {
		*fresh = marks != c->seen_marks;
		c->seen_marks = marks;
	} else {
		*fresh = c->last_call_us == 0 || now_us - c->last_call_us > gap_us;
	}
	c->last_call_us = now_us;
	if (*fresh) {
		__atomic_store_n(&c->held, false, __ATOMIC_RELEASE);
		__atomic_store_n(&c->hold_seq, c->seq, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&mu);
	return c;
}
