/*
 * pace_assign.h - the job's slot assignment: parsed from the environment or an
 * assignment file (KEY=VALUE lines, the keys of hm_pace_env.h). Internal to
 * libharmonics-pace; the tests link it directly.
 */
#ifndef PACE_ASSIGN_H
#define PACE_ASSIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_error.h"

#define PACE_MODE_MAX         32
#define PACE_NO_EXPIRY        INT64_MAX
#define PACE_DEFAULT_GUARD_US 10000 /* ~10 ms: what held the stagger in the emulation notes */

typedef struct {
	bool present; /* any HARMONICS_* assignment key was given */
	bool off;     /* HARMONICS_MODE=off */
	char mode[PACE_MODE_MAX];
	long job_id; /* -1 when not given */
	int64_t period_us;
	int64_t shift_us;
	int64_t origin_us;      /* CLOCK_REALTIME us since the Unix epoch */
	int64_t guard_us;       /* -1 when not given: see pace_assign_guard_us() */
	int64_t valid_until_us; /* PACE_NO_EXPIRY when not given */
	long epoch;
	int prio; /* -1 when not given */
} pace_assign_t;

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

/* Check consistency (required keys, shift < period, ...). */
hm_rc_t pace_assign_validate(const pace_assign_t *a, const char *where, hm_err_t *err);

/* Effective guard: as given, else min(10 ms, period / 4). */
int64_t pace_assign_guard_us(const pace_assign_t *a);

/* Reset to "no assignment". */
void pace_assign_clear(pace_assign_t *a);

#endif
