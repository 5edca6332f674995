/* Slot assignment: strict parsing of the HARMONICS_* keys from env or file. */
#include "pace_assign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_pace_env.h"
#include "hm_parse.h"

#define MAX_US        INT64_C(4611686018427387903) /* 2^62: keeps slot arithmetic overflow-free */
#define MAX_PERIOD_US INT64_C(3600000000)          /* one hour */

enum key_id { K_MODE, K_JOB_ID, K_PERIOD, K_SHIFT, K_ORIGIN, K_GUARD, K_PRIO, K_EPOCH, K_VALID };

static const struct {
	const char *name;
	enum key_id id;
} keys[] = {
    {HM_PACE_ENV_MODE, K_MODE},
    {HM_PACE_ENV_JOB_ID, K_JOB_ID},
    {HM_PACE_ENV_PERIOD_US, K_PERIOD},
    {HM_PACE_ENV_SHIFT_US, K_SHIFT},
    {HM_PACE_ENV_ORIGIN_US, K_ORIGIN},
    {HM_PACE_ENV_GUARD_US, K_GUARD},
    {HM_PACE_ENV_PRIO, K_PRIO},
    {HM_PACE_ENV_EPOCH, K_EPOCH},
    {HM_PACE_ENV_VALID_UNTIL_US, K_VALID},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

#define ACCEPTED_KEYS                                                                              \
	"HARMONICS_MODE, HARMONICS_JOB_ID, HARMONICS_PERIOD_US, HARMONICS_SHIFT_US, "              \
	"HARMONICS_ORIGIN_US, HARMONICS_GUARD_US, HARMONICS_PRIO, HARMONICS_EPOCH, "               \
	"HARMONICS_VALID_UNTIL_US"

/* Bit per key seen, so validation knows which required keys were given. */
typedef struct {
	pace_assign_t *a;
	unsigned seen;
} parse_ctx_t;

void pace_assign_clear(pace_assign_t *a)
{
	memset(a, 0, sizeof(*a));
	a->job_id = -1;
	a->prio = -1;
	a->guard_us = -1;
	a->valid_until_us = PACE_NO_EXPIRY;
	a->period_us = -1; /* not given; 0 is free running */
	a->origin_us = -1;
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

static hm_rc_t set_key(pace_assign_t *a, enum key_id id, const char *name, const char *val,
		       hm_err_t *err)
{
	long v = 0;
	hm_rc_t rc = HM_OK;

	switch (id) {
	case K_MODE:
		if (!*val || strlen(val) >= PACE_MODE_MAX || strpbrk(val, " \t\r\n"))
			return hm_err_set(err, HM_ERR_PARSE,
					  "%s: '%s' is not a policy name (1-%d characters, no "
					  "blanks) or 'off'",
					  name, val, PACE_MODE_MAX - 1);
		snprintf(a->mode, sizeof(a->mode), "%s", val);
		a->off = strcmp(val, HM_PACE_MODE_OFF) == 0;
		break;
	case K_JOB_ID:
		rc = hm_parse_long(val, 0, 2147483647L, &v, name, err);
		if (rc == HM_OK)
			a->job_id = v;
		break;
	case K_PERIOD:
		rc = set_us(val, 0, MAX_PERIOD_US, &a->period_us, name, err);
		break;
	case K_SHIFT:
		rc = set_us(val, 0, MAX_PERIOD_US, &a->shift_us, name, err);
		break;
	case K_ORIGIN:
		rc = set_us(val, 0, MAX_US, &a->origin_us, name, err);
		break;
	case K_GUARD:
		rc = set_us(val, 0, MAX_PERIOD_US, &a->guard_us, name, err);
		break;
	case K_PRIO:
		rc = hm_parse_long(val, 0, 7, &v, name, err);
		if (rc == HM_OK)
			a->prio = (int)v;
		break;
	case K_EPOCH:
		rc = hm_parse_long(val, 0, 2147483647L, &v, name, err);
		if (rc == HM_OK)
			a->epoch = v;
		break;
	case K_VALID:
		rc = set_us(val, 0, MAX_US, &a->valid_until_us, name, err);
		break;
	}
	if (rc == HM_OK)
		a->present = true;
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
		rc = set_key(a, keys[i].id, keys[i].name, val, err);
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
					lineno, line, ACCEPTED_KEYS);
			goto out;
		}
		for (i = 0; i < NKEYS; i++)
			if (strcmp(key, keys[i].name) == 0)
				break;
		if (i == NKEYS) {
			rc = hm_err_set(err, HM_ERR_PARSE, "%s:%d: unknown key '%s'; accepted: %s",
					fname, lineno, key, ACCEPTED_KEYS);
			goto out;
		}
		rc = set_key(a, keys[i].id, keys[i].name, val, err);
		if (rc != HM_OK) {
			hm_err_prefix(err, "%s:%d", fname, lineno);
			goto out;
		}
	}
out:
	free(copy);
	return rc;
}

hm_rc_t pace_assign_validate(const pace_assign_t *a, const char *where, hm_err_t *err)
{
	if (!a->present)
		return HM_OK;
	if (!a->mode[0])
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: %s is missing (a policy name, or 'off'); other "
				  "HARMONICS_* keys are set",
				  where, HM_PACE_ENV_MODE);
	if (a->off)
		return HM_OK;
	if (a->period_us < 0)
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: %s is missing; accepted: microseconds in [0, %lld] (0: "
				  "free running)",
				  where, HM_PACE_ENV_PERIOD_US, (long long)MAX_PERIOD_US);
	if (a->period_us == 0) {
		/* Free running: no slots, only the class (PRIO) applies. */
		if (a->shift_us != 0 || a->guard_us > 0)
			return hm_err_set(err, HM_ERR_RANGE,
					  "%s: %s=%lld and %s=%lld with %s=0 (free running); "
					  "accepted: 0 for both",
					  where, HM_PACE_ENV_SHIFT_US, (long long)a->shift_us,
					  HM_PACE_ENV_GUARD_US, (long long)a->guard_us,
					  HM_PACE_ENV_PERIOD_US);
		return HM_OK;
	}
	if (a->origin_us < 0)
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: %s is missing; accepted: CLOCK_REALTIME microseconds "
				  "since the Unix epoch",
				  where, HM_PACE_ENV_ORIGIN_US);
	if (a->shift_us >= a->period_us)
		return hm_err_set(err, HM_ERR_RANGE,
				  "%s: %s=%lld is not below %s=%lld; accepted: [0, period)", where,
				  HM_PACE_ENV_SHIFT_US, (long long)a->shift_us,
				  HM_PACE_ENV_PERIOD_US, (long long)a->period_us);
	if (a->guard_us >= 0 && a->guard_us >= a->period_us)
		return hm_err_set(err, HM_ERR_RANGE,
				  "%s: %s=%lld is not below %s=%lld; accepted: [0, period)", where,
				  HM_PACE_ENV_GUARD_US, (long long)a->guard_us,
				  HM_PACE_ENV_PERIOD_US, (long long)a->period_us);
	return HM_OK;
}

int64_t pace_assign_guard_us(const pace_assign_t *a)
{
	if (a->guard_us >= 0)
		return a->guard_us;
	return a->period_us / 4 < PACE_DEFAULT_GUARD_US ? a->period_us / 4 : PACE_DEFAULT_GUARD_US;
}
