/* Slot assignment: strict parsing of the HARMONICS_* keys from env or file, and the
 * slot plan across a pending update (contract C, docs/pacing.md). */
#include "pace_assign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_pace.h"
#include "hm_pace_env.h"
#include "hm_parse.h"
#include "hm_classes.h"

#define MAX_US        INT64_C(4611686018427387903) /* 2^62: keeps slot arithmetic overflow-free */
#define MAX_PERIOD_US INT64_C(3600000000)          /* one hour */

enum key_id {
	K_MODE,
	K_PERIOD,
	K_SHIFT,
	K_ORIGIN,
	K_GUARD,
	K_PRIO,
	K_EPOCH, /* the keys above describe one schedule (cur, or next with NEXT_) */
	K_JOB_ID,
	K_VALID,
	K_EFFECTIVE,
};

static const struct {
	const char *name;
	enum key_id id;
	bool next; /* a HARMONICS_NEXT_* key */
} keys[] = {
    {HM_PACE_ENV_MODE, K_MODE, false},
    {HM_PACE_ENV_JOB_ID, K_JOB_ID, false},
    {HM_PACE_ENV_PERIOD_US, K_PERIOD, false},
    {HM_PACE_ENV_SHIFT_US, K_SHIFT, false},
    {HM_PACE_ENV_ORIGIN_US, K_ORIGIN, false},
    {HM_PACE_ENV_GUARD_US, K_GUARD, false},
    {HM_PACE_ENV_PRIO, K_PRIO, false},
    {HM_PACE_ENV_EPOCH, K_EPOCH, false},
    {HM_PACE_ENV_VALID_UNTIL_US, K_VALID, false},
    {HM_PACE_ENV_NEXT_EFFECTIVE_US, K_EFFECTIVE, true},
    {HM_PACE_ENV_NEXT_MODE, K_MODE, true},
    {HM_PACE_ENV_NEXT_PERIOD_US, K_PERIOD, true},
    {HM_PACE_ENV_NEXT_SHIFT_US, K_SHIFT, true},
    {HM_PACE_ENV_NEXT_ORIGIN_US, K_ORIGIN, true},
    {HM_PACE_ENV_NEXT_GUARD_US, K_GUARD, true},
    {HM_PACE_ENV_NEXT_PRIO, K_PRIO, true},
    {HM_PACE_ENV_NEXT_EPOCH, K_EPOCH, true},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* Key names of one schedule, for validation messages. */
typedef struct {
	const char *mode, *period, *shift, *origin, *guard, *epoch;
} sched_names_t;

static const sched_names_t cur_names = {HM_PACE_ENV_MODE,     HM_PACE_ENV_PERIOD_US,
					HM_PACE_ENV_SHIFT_US, HM_PACE_ENV_ORIGIN_US,
					HM_PACE_ENV_GUARD_US, HM_PACE_ENV_EPOCH};
static const sched_names_t next_names = {HM_PACE_ENV_NEXT_MODE,     HM_PACE_ENV_NEXT_PERIOD_US,
					 HM_PACE_ENV_NEXT_SHIFT_US, HM_PACE_ENV_NEXT_ORIGIN_US,
					 HM_PACE_ENV_NEXT_GUARD_US, HM_PACE_ENV_NEXT_EPOCH};

/* "A, B, ..." of every accepted key (built once; messages list it). */
static const char *accepted_keys(void)
{
	static char buf[640];

	if (!buf[0])
		for (size_t i = 0; i < NKEYS; i++)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
				 i ? ", " : "", keys[i].name);
	return buf;
}

static void sched_clear(pace_sched_t *s)
{
	memset(s, 0, sizeof(*s));
	s->period_us = -1; /* not given; 0 is free running */
	s->origin_us = -1;
	s->guard_us = -1;
	s->prio = -1;
	s->epoch = -1;
}

void pace_assign_clear(pace_assign_t *a)
{
	memset(a, 0, sizeof(*a));
	a->job_id = -1;
	a->valid_until_us = PACE_NO_EXPIRY;
	a->next_effective_us = -1;
	sched_clear(&a->cur);
	sched_clear(&a->next);
	a->cur.epoch = 0; /* optional for the launch-time assignment; required for the next */
}

static hm_rc_t set_us(const char *val, int64_t min, int64_t max, int64_t *out, const char *what,
		      hm_err_t *err)
{
	long v = 0;
	hm_rc_t rc = hm_parse_long(val, (long)min, (long)max, &v, what, err);

	if (rc == HM_OK)
		*out = v;
	return rc;
}

static hm_rc_t set_key(pace_assign_t *a, size_t k, const char *val, hm_err_t *err)
{
	const char *name = keys[k].name;
	pace_sched_t *s = keys[k].next ? &a->next : &a->cur;
	long v = 0;
	hm_rc_t rc = HM_OK;

	switch (keys[k].id) {
	case K_MODE:
		if (!*val || strlen(val) >= PACE_MODE_MAX || strpbrk(val, " \t\r\n"))
			return hm_err_set(err, HM_ERR_PARSE,
					  "%s: '%s' is not a policy name (1-%d characters, no "
					  "blanks) or 'off'",
					  name, val, PACE_MODE_MAX - 1);
		snprintf(s->mode, sizeof(s->mode), "%s", val);
		s->off = strcmp(val, HM_PACE_MODE_OFF) == 0;
		break;
	case K_PERIOD:
		rc = set_us(val, 0, MAX_PERIOD_US, &s->period_us, name, err);
		break;
	case K_SHIFT:
		rc = set_us(val, 0, MAX_PERIOD_US, &s->shift_us, name, err);
		break;
	case K_ORIGIN:
		rc = set_us(val, 0, MAX_US, &s->origin_us, name, err);
		break;
	case K_GUARD:
		rc = set_us(val, 0, MAX_PERIOD_US, &s->guard_us, name, err);
		break;
	case K_PRIO:
		rc = hm_parse_long(val, 0, HM_PRIO_MAX, &v, name, err);
		if (rc == HM_OK)
			s->prio = (int)v;
		break;
	case K_EPOCH:
		rc = hm_parse_long(val, 0, 2147483647L, &v, name, err);
		if (rc == HM_OK)
			s->epoch = v;
		break;
	case K_JOB_ID:
		rc = hm_parse_long(val, 0, 2147483647L, &v, name, err);
		if (rc == HM_OK)
			a->job_id = v;
		break;
	case K_VALID:
		rc = set_us(val, 0, MAX_US, &a->valid_until_us, name, err);
		break;
	case K_EFFECTIVE:
		rc = set_us(val, 0, MAX_US, &a->next_effective_us, name, err);
		break;
	}
	if (rc == HM_OK) {
		a->present = true;
		a->has_next |= keys[k].next;
	}
	return rc;
}

hm_rc_t pace_assign_from_env(pace_assign_t *a, pace_getenv_fn get, hm_err_t *err)
{
	hm_rc_t rc;

	pace_assign_clear(a);
	for (size_t i = 0; i < NKEYS; i++) {
		const char *val = get(keys[i].name);

		if (!val)
			continue;
		rc = set_key(a, i, val, err);
		if (rc != HM_OK) {
			hm_err_prefix(err, "environment");
			return rc;
		}
	}
	return a->present ? pace_assign_validate(a, "environment", err) : HM_OK;
}

hm_rc_t pace_assign_parse_text(pace_assign_t *a, const char *text, const char *fname, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	char *copy = strdup(text ? text : "");
	char *save = NULL, *line, *key, *val;
	int lineno = 0;

	if (!copy)
		return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
	/* Count lines by hand: strtok_r would skip empty lines. */
	for (line = copy; line; line = save) {
		size_t i;

		lineno++;
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		line = hm_trim(line);
		if (!*line || *line == '#')
			continue;
		if (!hm_split_kv(line, &key, &val)) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: '%s' is not KEY=VALUE; accepted keys: %s", fname,
					lineno, line, accepted_keys());
			goto out;
		}
		for (i = 0; i < NKEYS; i++)
			if (strcmp(key, keys[i].name) == 0)
				break;
		if (i == NKEYS) {
			rc = hm_err_set(err, HM_ERR_PARSE, "%s:%d: unknown key '%s'; accepted: %s",
					fname, lineno, key, accepted_keys());
			goto out;
		}
		rc = set_key(a, i, val, err);
		if (rc != HM_OK) {
			hm_err_prefix(err, "%s:%d", fname, lineno);
			goto out;
		}
	}
out:
	free(copy);
	return rc;
}

static hm_rc_t validate_sched(const pace_sched_t *s, const sched_names_t *n, const char *where,
			      hm_err_t *err)
{
	if (!s->mode[0])
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: %s is missing (a policy name, or 'off'); other "
				  "HARMONICS_* keys are set",
				  where, n->mode);
	if (s->off)
		return HM_OK;
	if (s->period_us < 0)
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: %s is missing; accepted: microseconds in [0, %lld] (0: "
				  "free running)",
				  where, n->period, (long long)MAX_PERIOD_US);
	if (s->period_us == 0)
		return HM_OK; /* free running; a shift is a one-time delay, a guard is ignored */
	if (s->origin_us < 0)
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: %s is missing; accepted: CLOCK_REALTIME microseconds "
				  "since the Unix epoch",
				  where, n->origin);
	if (s->shift_us >= s->period_us)
		return hm_err_set(
		    err, HM_ERR_RANGE, "%s: %s=%lld is not below %s=%lld; accepted: [0, period)",
		    where, n->shift, (long long)s->shift_us, n->period, (long long)s->period_us);
	if (s->guard_us >= s->period_us)
		return hm_err_set(
		    err, HM_ERR_RANGE, "%s: %s=%lld is not below %s=%lld; accepted: [0, period)",
		    where, n->guard, (long long)s->guard_us, n->period, (long long)s->period_us);
	return HM_OK;
}

hm_rc_t pace_assign_validate(const pace_assign_t *a, const char *where, hm_err_t *err)
{
	hm_rc_t rc;

	if (!a->present)
		return HM_OK;
	if ((rc = validate_sched(&a->cur, &cur_names, where, err)) != HM_OK || !a->has_next)
		return rc;
	if (a->next_effective_us < 0)
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: %s is missing (other HARMONICS_NEXT_* keys are set); "
				  "accepted: the switch time, CLOCK_REALTIME microseconds",
				  where, HM_PACE_ENV_NEXT_EFFECTIVE_US);
	if (a->next.epoch < 0)
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: %s is missing (other HARMONICS_NEXT_* keys are set); "
				  "accepted: [0, 2147483647]",
				  where, next_names.epoch);
	return validate_sched(&a->next, &next_names, where, err);
}

int64_t pace_sched_guard_us(const pace_sched_t *s)
{
	if (s->guard_us >= 0)
		return s->guard_us;
	return s->period_us / 4 < PACE_DEFAULT_GUARD_US ? s->period_us / 4 : PACE_DEFAULT_GUARD_US;
}

pace_kind_t pace_sched_kind(const pace_sched_t *s)
{
	if (s->off || s->period_us < 0)
		return PACE_KIND_OFF;
	if (s->period_us > 0)
		return PACE_KIND_SLOTTED;
	return s->shift_us > 0 ? PACE_KIND_DELAY : PACE_KIND_FREE;
}

bool pace_sched_equal(const pace_sched_t *x, const pace_sched_t *y)
{
	return strcmp(x->mode, y->mode) == 0 && x->period_us == y->period_us &&
	       x->shift_us == y->shift_us && x->origin_us == y->origin_us &&
	       x->guard_us == y->guard_us && x->prio == y->prio && x->epoch == y->epoch;
}

const pace_sched_t *pace_assign_at(const pace_assign_t *a, int64_t t_us)
{
	return a->has_next && t_us >= a->next_effective_us ? &a->next : &a->cur;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Floor division for a possibly negative numerator, d > 0. */
static int64_t floor_div(int64_t n, int64_t d)
{
	int64_t q = n / d;

	return (n % d != 0 && n < 0) ? q - 1 : q;
}

/* First slot of a slotted schedule at or after lo_us. */
static int64_t grid_ceil(const pace_sched_t *s, int64_t lo_us)
{
	int64_t base = s->origin_us + s->shift_us;

	return base - floor_div(base - lo_us, s->period_us) * s->period_us;
}

/* Guard a slot allows a burst ready at r: the schedule's, or none (a shared plan). */
static int64_t guard_of(const pace_sched_t *s, bool guarded)
{
	return guarded ? pace_sched_guard_us(s) : 0;
}

static int64_t plan(const pace_assign_t *a, int64_t ready_us, int64_t after_us, bool guarded,
		    long delay_done_epoch, long *delay_epoch)
{
	const pace_sched_t *c = &a->cur, *n = &a->next;
	int64_t r = ready_us < 0 ? 0 : (ready_us > MAX_US ? MAX_US : ready_us);
	int64_t lo = after_us == HM_PACE_NO_SLOT ? 0 : after_us + 1; /* one burst per slot */
	int64_t t = a->next_effective_us, s;

	*delay_epoch = -1;
	switch (pace_sched_kind(c)) {
	case PACE_KIND_SLOTTED:
		/* C's first slot s with s + guard >= r; C's as long as it starts before T. */
		s = grid_ceil(c, max64(r - guard_of(c, guarded), lo));
		if (!a->has_next || s < t)
			return s;
		break;
	case PACE_KIND_DELAY:
		if (delay_done_epoch != c->epoch) {
			s = max64(r + c->shift_us, lo);
			if (!a->has_next || s < t) {
				*delay_epoch = c->epoch;
				return s;
			}
			break;
		}
		/* fall through - the delay was applied: later bursts run free */
	case PACE_KIND_OFF:
	case PACE_KIND_FREE:
		if (!a->has_next || r < t)
			return HM_PACE_NO_SLOT;
		break;
	}
	/* The next schedule governs: N's first slot s' >= T with s' + guard >= r. */
	switch (pace_sched_kind(n)) {
	case PACE_KIND_SLOTTED:
		return grid_ceil(n, max64(max64(t, r - guard_of(n, guarded)), lo));
	case PACE_KIND_DELAY:
		if (delay_done_epoch == n->epoch)
			return HM_PACE_NO_SLOT;
		*delay_epoch = n->epoch;
		return max64(max64(r, t) + n->shift_us, lo);
	case PACE_KIND_OFF:
	case PACE_KIND_FREE:
		break;
	}
	return HM_PACE_NO_SLOT;
}

int64_t pace_assign_plan(const pace_assign_t *a, int64_t ready_us, int64_t after_us,
			 long delay_done_epoch, long *delay_epoch)
{
	return plan(a, ready_us, after_us, true, delay_done_epoch, delay_epoch);
}

int64_t pace_assign_plan_shared(const pace_assign_t *a, int64_t ready_us, int64_t from_us,
				int64_t after_us, long delay_done_epoch, long *delay_epoch)
{
	int64_t s = plan(a, from_us, after_us, false, delay_done_epoch, delay_epoch);
	const pace_sched_t *g;

	/* Not on a grid (a one-time delay, free, off): from this rank's ready time. */
	if (s == HM_PACE_NO_SLOT || *delay_epoch >= 0)
		return plan(a, ready_us, after_us, true, delay_done_epoch, delay_epoch);
	g = pace_assign_at(a, s);
	/* A rank so late that the next slot is within the guard takes that one, as
	 * pace_assign_plan: ranks on either side of this line start at most a guard
	 * apart (the late one at once, the other at the next slot). */
	if (ready_us > s + max64(pace_sched_guard_us(g), g->period_us - pace_sched_guard_us(g)))
		return plan(a, ready_us, after_us, true, delay_done_epoch, delay_epoch);
	return s;
}

static int64_t sched_max_wait_us(const pace_sched_t *s)
{
	switch (pace_sched_kind(s)) {
	case PACE_KIND_SLOTTED:
		return 2 * s->period_us + pace_sched_guard_us(s);
	case PACE_KIND_DELAY:
		return s->shift_us;
	case PACE_KIND_OFF:
	case PACE_KIND_FREE:
		break;
	}
	return 0;
}

int64_t pace_assign_max_wait_us(const pace_assign_t *a)
{
	/* A switch can add the rest of C's period to N's first slot: bound by the sum. */
	return sched_max_wait_us(&a->cur) + (a->has_next ? sched_max_wait_us(&a->next) : 0);
}
