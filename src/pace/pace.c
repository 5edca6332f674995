/*
 * libharmonics-pace runtime: slot planning, the wait, and measurement.
 * Fail-open everywhere: anything unexpected means "do not wait".
 */
#define _GNU_SOURCE /* asprintf */
#include "pace_internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "hm_clock.h"
#include "hm_pace_env.h"
#include "hm_parse.h"

#define ASSIGN_FILE_MAX_BYTES 65536

int64_t hm_pace_now_us(void)
{
	return hm_clock_us(CLOCK_REALTIME);
}

/* Read the assignment file fully (bounded); NULL with err on failure. */
static char *read_small_file(const char *path, hm_err_t *err)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n;

	if (!f) {
		hm_err_set(err, HM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	buf = malloc(ASSIGN_FILE_MAX_BYTES + 1);
	if (!buf) {
		hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	n = fread(buf, 1, ASSIGN_FILE_MAX_BYTES + 1, f);
	if (n > ASSIGN_FILE_MAX_BYTES || ferror(f)) {
		hm_err_set(err, HM_ERR_IO, "%s: unreadable or larger than %d bytes", path,
			   ASSIGN_FILE_MAX_BYTES);
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[n] = '\0';
out:
	fclose(f);
	return buf;
}

/*
 * (Re)load the assignment: environment first, then the assignment file (its keys
 * override). Caller holds p->mu. Any error: no pacing, one warning. The slot
 * history (times), the applied epoch and the one-time delay survive a reload.
 */
static void load_assign_locked(hm_pace_t *p)
{
	hm_err_t err = {0};
	hm_rc_t rc;
	struct stat st;
	char *text = NULL;
	pace_assign_t a;

	rc = pace_assign_from_env(&a, getenv, &err);
	if (rc == HM_OK && p->assign_file && stat(p->assign_file, &st) == 0) {
		p->file_dev = st.st_dev;
		p->file_ino = st.st_ino;
		p->file_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		p->file_size = st.st_size;
		text = read_small_file(p->assign_file, &err);
		rc = text ? pace_assign_parse_text(&a, text, p->assign_file, &err) : err.rc;
		if (rc == HM_OK)
			rc = pace_assign_validate(&a, p->assign_file, &err);
	}
	free(text);
	if (rc != HM_OK) {
		p->valid = false;
		p->paused = true;
		if (strcmp(err.msg, p->garbage_msg) != 0) /* a renewal of the same garbage: quiet */
			fprintf(stderr, PACE_LOG_PREFIX "rank %d: %s; not pacing (fail-open)\n",
				p->rank, err.msg);
		snprintf(p->garbage_msg, sizeof(p->garbage_msg), "%s", err.msg);
		return;
	}
	p->garbage_msg[0] = '\0';
	p->a = a;
	p->valid = a.present;
}

/* Has the assignment file changed since the last load? (stat only: cheap) */
static bool assign_file_changed(hm_pace_t *p)
{
	struct stat st;

	if (stat(p->assign_file, &st) != 0)
		return false; /* a missing file keeps the last assignment (rename gap) */
	return st.st_dev != p->file_dev || st.st_ino != p->file_ino || st.st_size != p->file_size ||
	       (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != p->file_mtime_ns;
}

/* "rank R: assignment of epoch E <state> <valid until> us); <then>" */
static void log_validity(const hm_pace_t *p, int64_t now_us, const char *state, const char *then)
{
	fprintf(stderr, PACE_LOG_PREFIX "rank %d: assignment of epoch %ld %s %lld us); %s\n",
		p->rank, pace_assign_at(&p->a, now_us)->epoch, state,
		(long long)p->a.valid_until_us, then);
}

bool pace_active_locked(hm_pace_t *p, int64_t now_us)
{
	if (!p->valid)
		return false;
	if (now_us > p->a.valid_until_us) {
		if (!p->warned_stale)
			log_validity(p, now_us, "is stale (valid until", "not pacing (fail-open)");
		p->warned_stale = true;
		p->paused = true;
		return false;
	}
	if (p->paused) {
		log_validity(p, now_us, "valid again (until", "pacing resumed");
		p->paused = false;
		p->warned_stale = false;
	}
	return pace_sched_kind(pace_assign_at(&p->a, now_us)) != PACE_KIND_OFF;
}

static char *report_path(const char *tmpl, int rank)
{
	const char *r = strstr(tmpl, "%r");
	char *out = NULL;

	if (!r)
		return strdup(tmpl);
	if (asprintf(&out, "%.*s%d%s", (int)(r - tmpl), tmpl, rank, r + 2) < 0)
		return NULL;
	return out;
}

static int rank_from_env(void)
{
	const char *keys[] = {HM_PACE_ENV_RANK, "SLURM_PROCID"};
	long v = 0;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *s = getenv(keys[i]);

		if (s && hm_parse_long(s, 0, 16777215L, &v, keys[i], NULL) == HM_OK)
			return (int)v;
	}
	return 0;
}

hm_pace_t *hm_pace_init(void)
{
	hm_pace_t *p = calloc(1, sizeof(*p));
	const char *s;
	int64_t now = hm_pace_now_us();

	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	p->rank = rank_from_env();
	p->last_slot_us = HM_PACE_NO_SLOT;
	p->delay_done_epoch = -1;
	p->applied_epoch = -1;
	p->burst_epoch = -1;
	p->nccl_class = -1;
	s = getenv(HM_PACE_ENV_ASSIGN_FILE);
	if (s && *s)
		p->assign_file = strdup(s);
	s = getenv(HM_PACE_ENV_REPORT_FILE);
	if (s && *s)
		p->report_file = report_path(s, p->rank);
	p->next_poll_us = now + PACE_POLL_US;
	p->next_report_us = now + PACE_REPORT_US;
	load_assign_locked(p);
	return p;
}

void hm_pace_fini(hm_pace_t *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->report_file && pace_report_locked(p, hm_pace_now_us()) != 0)
		fprintf(stderr, PACE_LOG_PREFIX "rank %d: cannot write report %s: %s\n", p->rank,
			p->report_file, strerror(errno));
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_destroy(&p->mu);
	free(p->assign_file);
	free(p->report_file);
	free(p);
}

static void housekeeping_locked(hm_pace_t *p, int64_t now_us);

bool hm_pace_active(hm_pace_t *p)
{
	int64_t now = hm_pace_now_us();
	bool on;

	if (!p)
		return false;
	pthread_mutex_lock(&p->mu);
	/* The interposer asks this alone before each burst: without the poll, a
	   process that started off or went stale would never see a renewal. */
	housekeeping_locked(p, now);
	on = pace_active_locked(p, now);
	pthread_mutex_unlock(&p->mu);
	return on;
}

int hm_pace_prio(hm_pace_t *p)
{
	int prio = -1;

	if (!p)
		return -1;
	pthread_mutex_lock(&p->mu);
	if (p->valid) {
		const pace_sched_t *s = pace_assign_at(&p->a, hm_pace_now_us());

		prio = s->off ? -1 : s->prio;
	}
	pthread_mutex_unlock(&p->mu);
	return prio;
}

int hm_pace_mark_socket(hm_pace_t *p, int fd)
{
	int dscp = hm_pace_class_dscp(hm_pace_prio(p)), tos;

	if (dscp < 0)
		return -1;
	tos = dscp << 2;
	return setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) == 0 ? dscp : -2;
}

/* A new iteration starts at t_us: the interval from the previous one is a period sample. */
static void open_iteration_locked(hm_pace_t *p, int64_t t_us)
{
	if (p->iter_start_us > 0 && t_us > p->iter_start_us) {
		uint64_t d = (uint64_t)(t_us - p->iter_start_us);

		p->iter_n++;
		p->iter_sum_us += d;
		p->iter_sq_sum_us2 += d * d; /* wraps modulo 2^64: readers difference */
	}
	p->iter_start_us = t_us;
	p->iter_open = true;
}

/* Pick up a changed assignment file (stat at most every 100 ms) and write the
 * report at most once per second. Caller holds p->mu. */
static void housekeeping_locked(hm_pace_t *p, int64_t now_us)
{
	if (p->assign_file && now_us >= p->next_poll_us) {
		p->next_poll_us = now_us + PACE_POLL_US;
		if (assign_file_changed(p))
			load_assign_locked(p);
	}
	if (p->report_file && now_us >= p->next_report_us) {
		p->next_report_us = now_us + PACE_REPORT_US;
		(void)pace_report_locked(p, now_us); /* best effort; fini reports failures */
	}
}

void hm_pace_iter_begin(hm_pace_t *p)
{
	int64_t now = hm_pace_now_us();

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->iter_marks++;
	open_iteration_locked(p, now);
	housekeeping_locked(p, now);
	pthread_mutex_unlock(&p->mu);
}

int64_t hm_pace_iter_marks(hm_pace_t *p)
{
	int64_t n;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->mu);
	n = p->iter_marks;
	pthread_mutex_unlock(&p->mu);
	return n;
}

int64_t hm_pace_plan(hm_pace_t *p, int64_t ready_us)
{
	int64_t slot = HM_PACE_NO_SLOT, now = hm_pace_now_us();
	long delay_epoch = -1;

	if (!p)
		return slot;
	pthread_mutex_lock(&p->mu);
	/* Also here: under the NCCL interposer nobody may call iter_begin. */
	housekeeping_locked(p, now);
	if (pace_active_locked(p, now)) {
		slot = pace_assign_plan(&p->a, ready_us, p->last_slot_us, p->delay_done_epoch,
					&delay_epoch);
		if (delay_epoch >= 0)
			p->delay_done_epoch = delay_epoch; /* once per epoch */
	}
	pthread_mutex_unlock(&p->mu);
	return slot;
}

int64_t hm_pace_plan_shared(hm_pace_t *p, int64_t ready_us, int64_t from_us, int64_t after_slot)
{
	int64_t slot = HM_PACE_NO_SLOT, now = hm_pace_now_us();
	long delay_epoch = -1;

	if (from_us <= 0)
		return hm_pace_plan(p, ready_us);
	if (!p)
		return slot;
	pthread_mutex_lock(&p->mu);
	housekeeping_locked(p, now);
	if (pace_active_locked(p, now)) {
		slot = pace_assign_plan_shared(&p->a, ready_us, from_us, after_slot,
					       p->delay_done_epoch, &delay_epoch);
		if (delay_epoch >= 0)
			p->delay_done_epoch = delay_epoch;
	}
	pthread_mutex_unlock(&p->mu);
	return slot;
}

void hm_pace_set_nccl_class(hm_pace_t *p, int prio)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->nccl_class = prio >= 0 && prio <= 7 ? prio : -1;
	pthread_mutex_unlock(&p->mu);
}

int64_t hm_pace_slot_us(hm_pace_t *p, int64_t slot)
{
	(void)p;
	return slot == HM_PACE_NO_SLOT ? -1 : slot;
}

int64_t hm_pace_period_us(hm_pace_t *p)
{
	int64_t period = 0, now = hm_pace_now_us();

	if (!p)
		return 0;
	pthread_mutex_lock(&p->mu);
	if (pace_active_locked(p, now)) {
		const pace_sched_t *s = pace_assign_at(&p->a, now);

		period = pace_sched_kind(s) == PACE_KIND_SLOTTED ? s->period_us : 0;
	}
	pthread_mutex_unlock(&p->mu);
	return period;
}

/* Sleep until abs_us on CLOCK_REALTIME; EINTR restarts. */
static void sleep_until_us(int64_t abs_us)
{
	struct timespec ts = {.tv_sec = abs_us / 1000000, .tv_nsec = (abs_us % 1000000) * 1000};

	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* What governs a burst, decided before the wait (a reload may happen during it). */
typedef struct {
	int64_t slot_us; /* HM_PACE_NO_SLOT: do not wait */
	long epoch;      /* -1: nothing active governs it */
	int64_t grid_period_us, grid_phase_us;
} burst_plan_t;

static burst_plan_t burst_plan_locked(hm_pace_t *p, int64_t slot, int64_t ready_us)
{
	burst_plan_t b = {HM_PACE_NO_SLOT, -1, 0, 0};
	bool active = pace_active_locked(p, ready_us); /* warns when stale */
	const pace_sched_t *s;

	if (!p->valid || ready_us > p->a.valid_until_us)
		return b; /* nothing governs this burst */
	if (!active || slot == HM_PACE_NO_SLOT ||
	    (slot > ready_us && slot > ready_us + pace_assign_max_wait_us(&p->a))) {
		b.epoch = pace_assign_at(&p->a, ready_us)->epoch; /* free or off under it */
		return b;
	}
	/* Contract C: a slot before the switch time is the current assignment's. */
	s = pace_assign_at(&p->a, slot);
	b.slot_us = slot;
	b.epoch = s->epoch;
	if (pace_sched_kind(s) == PACE_KIND_SLOTTED) {
		b.grid_period_us = s->period_us;
		b.grid_phase_us = (s->origin_us + s->shift_us) % s->period_us;
	}
	return b;
}

/* Book a burst that waited for (or was late to) its slot. Caller holds p->mu. */
static void book_paced_locked(hm_pace_t *p, const burst_plan_t *b, int64_t ready, int64_t release)
{
	p->paced++;
	p->wait_sum_us += (uint64_t)(release - ready);
	if (b->slot_us > ready) {
		int64_t e = release - b->slot_us;

		e = e < 0 ? -e : e;
		p->err_sum_us += (uint64_t)e;
		if (e > p->err_max_us)
			p->err_max_us = e;
		p->err_n++;
	} else if (ready > b->slot_us) {
		p->late++;
	}
	/* Slots passed over on the same grid since the last burst. */
	if (p->last_slot_us != HM_PACE_NO_SLOT && b->grid_period_us > 0 &&
	    b->grid_period_us == p->last_grid_period_us &&
	    b->grid_phase_us == p->last_grid_phase_us && b->slot_us > p->last_slot_us)
		p->skipped += (b->slot_us - p->last_slot_us) / b->grid_period_us - 1;
	p->last_slot_us = b->slot_us;
	p->last_grid_period_us = b->grid_period_us;
	p->last_grid_phase_us = b->grid_phase_us;
}

void hm_pace_comm_begin_slot(hm_pace_t *p, int64_t slot)
{
	int64_t ready = hm_pace_now_us(), release, from;
	burst_plan_t b;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	/* Compute = ready minus the iteration start; without explicit marks (bursts
	 * delimit iterations) minus the previous burst's end. */
	from = p->iter_open ? p->iter_start_us : p->burst_end_us;
	if (!p->iter_open)
		open_iteration_locked(p, ready);
	if (from > 0 && ready >= from) {
		uint64_t c_us = (uint64_t)(ready - from);

		p->compute_n++;
		p->compute_sum_us += c_us;
		p->compute_sq_sum_us2 += c_us * c_us;
	}
	b = burst_plan_locked(p, slot, ready);
	pthread_mutex_unlock(&p->mu);

	if (b.slot_us != HM_PACE_NO_SLOT && b.slot_us > ready)
		sleep_until_us(b.slot_us);
	release = hm_pace_now_us();

	pthread_mutex_lock(&p->mu);
	p->bursts++;
	if (b.slot_us != HM_PACE_NO_SLOT) {
		book_paced_locked(p, &b, ready, release);
	} else {
		p->unpaced++;
		p->last_slot_us = HM_PACE_NO_SLOT;
	}
	/* The report keeps the last applied epoch through an outage; burst_epoch says
	 * whether this burst was governed at all. */
	if (b.epoch >= 0)
		p->applied_epoch = b.epoch;
	p->burst_epoch = b.epoch;
	if (p->iter_start_us > 0) {
		p->offset_sum_us += (uint64_t)(release - p->iter_start_us);
		p->offset_n++;
	}
	p->iter_open = false;
	p->burst_start_us = release;
	p->burst_end_us = 0;
	pthread_mutex_unlock(&p->mu);
}

void hm_pace_comm_begin(hm_pace_t *p)
{
	hm_pace_comm_begin_slot(p, hm_pace_plan(p, hm_pace_now_us()));
}

void hm_pace_comm_end_at(hm_pace_t *p, int64_t end_us)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	/* Several end stamps per burst (one per collective) extend the same burst. */
	if (p->burst_start_us > 0 && end_us > p->burst_start_us) {
		int64_t from = p->burst_end_us ? p->burst_end_us : p->burst_start_us;

		if (!p->burst_end_us && !p->burst_nccl)
			p->burst_n++;
		if (end_us > from) {
			if (!p->burst_nccl)
				p->burst_sum_us += (uint64_t)(end_us - from);
			p->burst_end_us = end_us;
		}
	}
	pthread_mutex_unlock(&p->mu);
}

void hm_pace_comm_end(hm_pace_t *p)
{
	hm_pace_comm_end_at(p, hm_pace_now_us());
}

void hm_pace_burst_measured(hm_pace_t *p, int64_t burst_us)
{
	if (!p || burst_us < 0)
		return;
	pthread_mutex_lock(&p->mu);
	p->burst_nccl = true; /* from now on NCCL's events alone give burst lengths */
	p->burst_n++;
	p->burst_sum_us += (uint64_t)burst_us;
	pthread_mutex_unlock(&p->mu);
}

void hm_pace_stats(hm_pace_t *p, hm_pace_stats_t *out)
{
	if (!p) {
		memset(out, 0, sizeof(*out));
		return;
	}
	pthread_mutex_lock(&p->mu);
	pace_stats_locked(p, out);
	pthread_mutex_unlock(&p->mu);
}

int hm_pace_report(hm_pace_t *p)
{
	int rc;

	if (!p) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&p->mu);
	rc = pace_report_locked(p, hm_pace_now_us());
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* ---- process-wide runtime (interposer and explicit marks share it) ---- */

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static hm_pace_t *default_pace;

/* At exit only the report is written: a CUDA host-function thread may still hold it. */
static void default_at_exit(void)
{
	if (default_pace && default_pace->report_file)
		(void)hm_pace_report(default_pace);
}

static void default_create(void)
{
	default_pace = hm_pace_init();
	if (default_pace)
		atexit(default_at_exit);
}

hm_pace_t *hm_pace_default(void)
{
	pthread_once(&default_once, default_create);
	return default_pace;
}
