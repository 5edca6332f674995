/*
 * pace_assign.h - the job's slot assignment: parsed from the environment or an
 * assignment file (KEY=VALUE lines, the keys of hm_pace_env.h). The assignment
 * in force now (cur) and optionally the next one, pending until a switch time
 * (contract C of docs/pacing.md). Internal to libharmonics-pace; the tests link
 * it directly.
 */
#ifndef PACE_ASSIGN_H
#define PACE_ASSIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_error.h"

#define PACE_MODE_MAX         32
#define PACE_NO_EXPIRY        INT64_MAX
#define PACE_DEFAULT_GUARD_US 10000 /* ~10 ms: what held the stagger in the emulation notes */

/* One schedule: the current one, or the pending next one. */
typedef struct {
	char mode[PACE_MODE_MAX]; /* "" when not given */
	bool off;                 /* MODE=off: never wait */
	int64_t period_us;        /* -1 when not given; 0 = free running */
	int64_t shift_us;         /* slot offset; with period 0 a one-time delay */
	int64_t origin_us;        /* CLOCK_REALTIME us since the Unix epoch; -1 when not given */
	int64_t guard_us;         /* -1 when not given: see pace_sched_guard_us() */
	int prio;                 /* -1 when not given */
	long epoch;               /* cur: 0 when not given; next: -1 when not given */
} pace_sched_t;

typedef struct {
	bool present;           /* any HARMONICS_* assignment key was given */
	long job_id;            /* -1 when not given */
	int64_t valid_until_us; /* PACE_NO_EXPIRY when not given; covers cur and next */
	pace_sched_t cur;
	bool has_next;             /* any HARMONICS_NEXT_* key was given */
	int64_t next_effective_us; /* switch time T (CLOCK_REALTIME us); -1 when not given */
	pace_sched_t next;
} pace_assign_t;

/* What a schedule asks of a burst. */
typedef enum {
	PACE_KIND_OFF,     /* MODE=off: never wait */
	PACE_KIND_FREE,    /* period 0, shift 0: never wait, only the class applies */
	PACE_KIND_DELAY,   /* period 0, shift > 0: the first burst waits shift once (Cassini) */
	PACE_KIND_SLOTTED, /* period > 0: bursts start on the grid */
} pace_kind_t;

/* Lookup function: the value of key, or NULL. */
typedef char *(*pace_getenv_fn)(const char *key);

/*
 * Fill *a from the environment (get = getenv in production). No assignment keys
 * at all is HM_OK with a->present = false. A bad or missing value is an error that
 * names the variable, the value and the accepted range.
 */
hm_rc_t pace_assign_from_env(pace_assign_t *a, pace_getenv_fn get, hm_err_t *err);

/*
 * Parse assignment-file text (KEY=VALUE lines; '#' comments and blank lines
 * ignored; unknown keys are errors) over *a: keys given override, others keep
 * their value. fname is used in messages ("fname:line: ...").
 */
hm_rc_t pace_assign_parse_text(pace_assign_t *a, const char *text, const char *fname,
			       hm_err_t *err);

/* Check consistency (required keys, shift < period, ...) of cur and next. */
hm_rc_t pace_assign_validate(const pace_assign_t *a, const char *where, hm_err_t *err);

/* Reset to "no assignment". */
void pace_assign_clear(pace_assign_t *a);

/* Effective guard of a slotted schedule: as given, else min(10 ms, period / 4). */
int64_t pace_sched_guard_us(const pace_sched_t *s);

/* Kind of a validated schedule. */
pace_kind_t pace_sched_kind(const pace_sched_t *s);

/* Same schedule (mode, period, shift, origin, guard, prio, epoch)? */
bool pace_sched_equal(const pace_sched_t *x, const pace_sched_t *y);

/* The schedule in force at t_us: next from its switch time on, else cur. */
const pace_sched_t *pace_assign_at(const pace_assign_t *a, int64_t t_us);

/*
 * Plan a burst whose participants are all ready at ready_us (contract C).
 * after_us: the last slot used (a slot is used once), or INT64_MIN for none.
 * delay_done_epoch: the epoch whose one-time delay was already applied (-1: none).
 * Returns the slot's start time (CLOCK_REALTIME us) or INT64_MIN for "do not wait";
 * *delay_epoch is set to the epoch of a one-time delay the slot applies, else -1.
 * Pure: the same inputs give the same slot on every rank.
 */
int64_t pace_assign_plan(const pace_assign_t *a, int64_t ready_us, int64_t after_us,
			 long delay_done_epoch, long *delay_epoch);

/*
 * Plan from times every rank of a collective shares instead of this rank's ready
 * time (the NCCL interposer, nccl_hold.c): the first slot after after_us (the
 * slot the communicator's previous burst used) that starts at or after from_us
 * (that burst's end, common to all ranks since the collective synchronises
 * them), under contract C; no guard is subtracted. Two exceptions plan as
 * pace_assign_plan(ready_us): a schedule without a grid (one-time delay, free,
 * off), and a rank ready more than max(guard, period - guard) after the shared
 * slot (the next slot is within its guard: ranks on either side of that line
 * start at most a guard apart). A rank ready later than the shared slot
 * otherwise gets it anyway (it goes at once: the others wait for it).
 * Pure: the same inputs give the same slot on every rank.
 */
int64_t pace_assign_plan_shared(const pace_assign_t *a, int64_t ready_us, int64_t from_us,
				int64_t after_us, long delay_done_epoch, long *delay_epoch);

/*
 * Longest hold a slot of this assignment may ask for, from a burst's ready time:
 * two periods plus the guard of a slotted schedule, the delay of a one-time delay;
 * the largest over cur and next. A slot further away is not waited for.
 */
int64_t pace_assign_max_wait_us(const pace_assign_t *a);

#endif
