/*
 * libharmonics-pace runtime: slot planning, the wait, and measurement.
 * Fail-open everywhere: anything unexpected means "do not wait".
 */
#define _GNU_SOURCE /* asprintf */
#include "pace_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "hm_pace_env.h"
#include "hm_parse.h"

#define ASSIGN_FILE_MAX_BYTES 65536

int64_t hm_pace_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Floor division for a possibly negative numerator, d > 0. */
static int64_t floor_div(int64_t n, int64_t d)
{
	int64_t q = n / d;

	return (n % d != 0 && n < 0) ? q - 1 : q;
}

static void warn_once(hm_pace_t *p, bool *flag, const char *msg)
{
	if (*flag)
		return;
	*flag = true;
	fprintf(stderr, PACE_LOG_PREFIX "rank %d: %s; not pacing (fail-open)\n", p->rank, msg);
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
 * override). Caller holds p->mu. Any error: no pacing, one warning.
 */
static void load_assign_locked(hm_pace_t *p)
{
	hm_err_t err = {0};
	hm_rc_t rc;
	struct stat st;
	char *text = NULL;

	p->valid = false;
	p->last_slot = HM_PACE_NO_SLOT;
	p->warned_stale = false;
	rc = pace_assign_from_env(&p->a, getenv, &err);
	if (rc == HM_OK && p->assign_file && stat(p->assign_file, &st) == 0) {
		p->file_dev = st.st_dev;
		p->file_ino = st.st_ino;
		p->file_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		p->file_size = st.st_size;
		text = read_small_file(p->assign_file, &err);
		rc = text ? pace_assign_parse_text(&p->a, text, p->assign_file, &err) : err.rc;
		if (rc == HM_OK)
			rc = pace_assign_validate(&p->a, p->assign_file, &err);
	}
	free(text);
	if (rc != HM_OK) {
		p->warned_garbage = false;
		warn_once(p, &p->warned_garbage, err.msg);
		return;
	}
	p->valid = p->a.present && !p->a.off;
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

/* Usable now? Warns once when the assignment went stale. Caller holds p->mu. */
static bool active_locked(hm_pace_t *p, int64_t now_us)
{
	char msg[160];

	if (!p->valid)
		return false;
	if (now_us > p->a.valid_until_us) {
		snprintf(msg, sizeof(msg), "assignment of epoch %ld is stale (valid until %lld us)",
			 p->a.epoch, (long long)p->a.valid_until_us);
		warn_once(p, &p->warned_stale, msg);
		return false;
	}
	return true;
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
	p->last_slot = HM_PACE_NO_SLOT;
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

bool hm_pace_active(hm_pace_t *p)
{
	bool on;

	if (!p)
		return false;
	pthread_mutex_lock(&p->mu);
	on = active_locked(p, hm_pace_now_us());
	pthread_mutex_unlock(&p->mu);
	return on;
}

int hm_pace_prio(hm_pace_t *p)
{
	int prio;

	if (!p)
		return -1;
	pthread_mutex_lock(&p->mu);
	prio = p->valid ? p->a.prio : -1;
	pthread_mutex_unlock(&p->mu);
	return prio;
}

/* A new iteration starts at t_us: the interval from the previous one is a period sample. */
static void open_iteration_locked(hm_pace_t *p, int64_t t_us)
{
	if (p->iter_start_us > 0 && t_us > p->iter_start_us) {
		p->period_sum_us += (double)(t_us - p->iter_start_us);
		p->period_n++;
	}
	p->iter_start_us = t_us;
	p->iter_open = true;
}

void hm_pace_iter_begin(hm_pace_t *p)
{
	int64_t now = hm_pace_now_us();

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->iter_marks++;
	open_iteration_locked(p, now);
	if (p->assign_file && now >= p->next_poll_us) {
		p->next_poll_us = now + PACE_POLL_US;
		if (assign_file_changed(p))
			load_assign_locked(p);
	}
	if (p->report_file && now >= p->next_report_us) {
		p->next_report_us = now + PACE_REPORT_US;
		(void)pace_report_locked(p, now); /* best effort; fini reports failures */
	}
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

/* Slots to hold to now? A free-running assignment (period 0) has none. */
static bool slotted_locked(hm_pace_t *p, int64_t now_us)
{
	return active_locked(p, now_us) && p->a.period_us > 0;
}

static int64_t slot_us_locked(const hm_pace_t *p, int64_t slot)
{
	return p->a.origin_us + p->a.shift_us + slot * p->a.period_us;
}

int64_t hm_pace_plan(hm_pace_t *p, int64_t ready_us)
{
	int64_t k = HM_PACE_NO_SLOT;

	if (!p)
		return k;
	pthread_mutex_lock(&p->mu);
	if (slotted_locked(p, hm_pace_now_us())) {
		int64_t base = p->a.origin_us + p->a.shift_us;
		int64_t guard = pace_assign_guard_us(&p->a);

		/* First slot s with s + guard >= ready: ceil((ready - guard - base) / period). */
		k = -floor_div(-(ready_us - guard - base), p->a.period_us);
		if (p->last_slot != HM_PACE_NO_SLOT && k <= p->last_slot)
			k = p->last_slot + 1; /* one burst per slot */
	}
	pthread_mutex_unlock(&p->mu);
	return k;
}

int64_t hm_pace_slot_us(hm_pace_t *p, int64_t slot)
{
	int64_t t = -1;

	if (!p || slot == HM_PACE_NO_SLOT)
		return -1;
	pthread_mutex_lock(&p->mu);
	if (p->valid)
		t = slot_us_locked(p, slot);
	pthread_mutex_unlock(&p->mu);
	return t;
}

/* Sleep until abs_us on CLOCK_REALTIME; EINTR restarts. */
static void sleep_until_us(int64_t abs_us)
{
	struct timespec ts = {.tv_sec = abs_us / 1000000, .tv_nsec = (abs_us % 1000000) * 1000};

	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

void hm_pace_comm_begin_slot(hm_pace_t *p, int64_t slot)
{
	int64_t ready = hm_pace_now_us(), release, slot_us = -1, max_wait_us = 0;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	if (!p->iter_open)
		open_iteration_locked(p, ready); /* no explicit marks: bursts delimit iterations */
	if (slot != HM_PACE_NO_SLOT && slotted_locked(p, ready)) {
		slot_us = slot_us_locked(p, slot);
		/* Never hold longer than two periods: a wild slot index must not hang the job. */
		max_wait_us = 2 * p->a.period_us + pace_assign_guard_us(&p->a);
	}
	pthread_mutex_unlock(&p->mu);

	if (slot_us > ready && slot_us - ready <= max_wait_us)
		sleep_until_us(slot_us);
	release = hm_pace_now_us();

	pthread_mutex_lock(&p->mu);
	p->bursts++;
	if (slot_us >= 0 && (slot_us <= ready || slot_us - ready <= max_wait_us)) {
		p->paced++;
		p->wait_sum_us += (double)(release - ready);
		if (slot_us > ready) {
			double e = (double)(release - slot_us);

			e = e < 0 ? -e : e;
			p->err_sum_us += e;
			if (e > p->err_max_us)
				p->err_max_us = e;
			p->err_n++;
		} else if (ready > slot_us) {
			p->late++;
		}
		if (p->last_slot != HM_PACE_NO_SLOT && slot > p->last_slot + 1)
			p->skipped += slot - p->last_slot - 1;
		p->last_slot = slot;
	} else {
		p->unpaced++;
		p->last_slot = HM_PACE_NO_SLOT;
	}
	if (p->iter_start_us > 0) {
		p->offset_sum_us += (double)(release - p->iter_start_us);
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

		if (!p->burst_end_us)
			p->burst_n++;
		if (end_us > from) {
			p->burst_sum_us += (double)(end_us - from);
			p->burst_end_us = end_us;
		}
	}
	pthread_mutex_unlock(&p->mu);
}

void hm_pace_comm_end(hm_pace_t *p)
{
	hm_pace_comm_end_at(p, hm_pace_now_us());
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
