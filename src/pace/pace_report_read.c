/* Reading report files (version 2) and differencing two reads: pace_report_read.h. */
#include "pace_report_read.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_parse.h"

#define LINE_MAX_BYTES 256

typedef enum { T_LONG, T_U64, T_BOOL } val_type_t;

/* The keys the reader needs, where each goes, and what is accepted. */
static const struct {
	const char *name;
	val_type_t type;
	long min, max; /* T_LONG */
	size_t off;
	size_t size;   /* of the destination field (T_LONG) */
	bool optional; /* may be absent (then the zeroed or preset value stays) */
} fields[] = {
#define LONG_FIELD(k, f, lo, hi)                                                                   \
	{                                                                                          \
		k, T_LONG, lo, hi, offsetof(pace_report_t, f), sizeof(((pace_report_t *)0)->f),    \
		    false                                                                          \
	}
#define U64_FIELD(k, f)                                                                            \
	{                                                                                          \
		k, T_U64, 0, 0, offsetof(pace_report_t, f), sizeof(uint64_t), false                \
	}
#define OPTIONAL(k, t, lo, hi, f)                                                                  \
	{                                                                                          \
		k, t, lo, hi, offsetof(pace_report_t, f), sizeof(((pace_report_t *)0)->f), true    \
	}
    LONG_FIELD("HARMONICS_REPORT_VERSION", version, 1, 1000000),
    LONG_FIELD("JOB_ID", job_id, -1, 2147483647L),
    LONG_FIELD("RANK", rank, 0, 16777215L),
    LONG_FIELD("PID", pid, 1, 2147483647L),
    LONG_FIELD("EPOCH", epoch, -1, 2147483647L),
    LONG_FIELD("APPLIED_EPOCH", applied_epoch, -1, 2147483647L),
    {"ACTIVE", T_BOOL, 0, 1, offsetof(pace_report_t, active), sizeof(bool), false},
    LONG_FIELD("UPDATED_US", updated_us, 0, 4611686018427387903L),
    U64_FIELD("ITER_N", iter_n),
    U64_FIELD("ITER_SUM_US", iter_sum_us),
    U64_FIELD("ITER_SQ_SUM_US2", iter_sq_sum_us2),
    U64_FIELD("COMPUTE_N", compute_n),
    U64_FIELD("COMPUTE_SUM_US", compute_sum_us),
    U64_FIELD("BURST_N", burst_n),
    U64_FIELD("BURST_SUM_US", burst_sum_us),
    U64_FIELD("SLOT_MISSES", slot_misses),
    /* A runtime without the NCCL interposer's class writes none: -1. */
    OPTIONAL("NCCL_CLASS", T_LONG, -1, 7, nccl_class),
    /* Runtimes before 2026-12 write none: the compute's spread is then unknown. */
    OPTIONAL("COMPUTE_SQ_SUM_US2", T_U64, 0, 0, compute_sq_sum_us2),
    LONG_FIELD("BURSTS", bursts, 0, 4611686018427387903L),
    LONG_FIELD("PACED", paced, 0, 4611686018427387903L),
    LONG_FIELD("LATE", late, 0, 4611686018427387903L),
    LONG_FIELD("SKIPPED", skipped, 0, 4611686018427387903L),
    LONG_FIELD("UNPACED", unpaced, 0, 4611686018427387903L),
    LONG_FIELD("WAIT_US", wait_us, 0, 4611686018427387903L),
#undef LONG_FIELD
#undef U64_FIELD
#undef OPTIONAL
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* Unsigned decimal in [0, 2^64): digits only. */
static hm_rc_t parse_u64(const char *s, uint64_t *out, const char *what, hm_err_t *err)
{
	char *end = NULL;
	unsigned long long v;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return hm_err_set(
		    err, HM_ERR_PARSE,
		    "%s: '%s' is not an unsigned integer in [0, 18446744073709551615]", what, s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || *end)
		return hm_err_set(err, HM_ERR_RANGE,
				  "%s: %s is out of range, accepted [0, 18446744073709551615]",
				  what, s);
	*out = v;
	return HM_OK;
}

static hm_rc_t set_field(pace_report_t *r, size_t i, const char *val, hm_err_t *err)
{
	char *dst = (char *)r + fields[i].off;
	long v = 0;
	hm_rc_t rc;

	if (fields[i].type == T_U64)
		return parse_u64(val, (uint64_t *)(void *)dst, fields[i].name, err);
	rc = hm_parse_long(val, fields[i].min, fields[i].max, &v, fields[i].name, err);
	if (rc != HM_OK)
		return rc;
	if (fields[i].type == T_BOOL)
		*(bool *)(void *)dst = v != 0;
	else if (fields[i].size == sizeof(int))
		*(int *)(void *)dst = (int)v;
	else if (fields[i].size == sizeof(int64_t))
		*(int64_t *)(void *)dst = v;
	else
		*(long *)(void *)dst = v;
	return HM_OK;
}

hm_rc_t pace_report_parse(const char *text, size_t len, const char *fname, pace_report_t *out,
			  hm_err_t *err)
{
	pace_report_t r;
	bool seen[NFIELDS] = {false};
	size_t pos = 0;
	int lineno = 0;

	if (!text || !out)
		return hm_err_set(err, HM_ERR_INVAL, "%s: no text or no output", fname);
	if (len > PACE_REPORT_MAX_BYTES)
		return hm_err_set(err, HM_ERR_RANGE, "%s: %zu bytes; accepted: at most %d", fname,
				  len, PACE_REPORT_MAX_BYTES);
	if (memchr(text, '\0', len))
		return hm_err_set(err, HM_ERR_PARSE, "%s: contains a NUL byte; accepted: text",
				  fname);
	memset(&r, 0, sizeof(r));
	r.nccl_class = -1;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		char line[LINE_MAX_BYTES], *key, *val, *t;
		size_t i;
		hm_rc_t rc;

		lineno++;
		if (n >= sizeof(line))
			return hm_err_set(err, HM_ERR_PARSE, "%s:%d: line longer than %d bytes",
					  fname, lineno, LINE_MAX_BYTES - 1);
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + 1;
		t = hm_trim(line);
		if (!*t || *t == '#')
			continue;
		if (!hm_split_kv(t, &key, &val))
			return hm_err_set(err, HM_ERR_PARSE, "%s:%d: '%s' is not KEY=VALUE", fname,
					  lineno, t);
		for (i = 0; i < NFIELDS && strcmp(key, fields[i].name) != 0; i++)
			;
		if (i == NFIELDS)
			continue; /* a newer runtime's key */
		if (seen[i])
			return hm_err_set(err, HM_ERR_PARSE, "%s:%d: %s given twice", fname, lineno,
					  key);
		seen[i] = true;
		if ((rc = set_field(&r, i, val, err)) != HM_OK) {
			hm_err_prefix(err, "%s:%d", fname, lineno);
			return rc;
		}
		if (i == 0 && r.version < PACE_REPORT_MIN_VERSION)
			return hm_err_set(
			    err, HM_ERR_RANGE,
			    "%s:%d: HARMONICS_REPORT_VERSION=%d has no cumulative "
			    "counters; accepted: >= %d (libharmonics-pace 1.0 or later)",
			    fname, lineno, r.version, PACE_REPORT_MIN_VERSION);
	}
	for (size_t i = 0; i < NFIELDS; i++) {
		if (fields[i].off == offsetof(pace_report_t, compute_sq_sum_us2))
			r.has_compute_sq = seen[i];
		if (!seen[i] && !fields[i].optional)
			return hm_err_set(err, HM_ERR_PARSE,
					  "%s: %s is missing; a version-%d report has it", fname,
					  fields[i].name, PACE_REPORT_MIN_VERSION);
	}
	*out = r;
	return HM_OK;
}

/* Means and sd from the window's counts and sums. */
static void finish(pace_window_t *w)
{
	w->iter_us = w->iter_sd_us = w->compute_us = w->burst_us = 0;
	w->compute_sd_us = -1;
	if (w->samples > 0) {
		double n = (double)w->samples, m = (double)w->iter_sum_us / n;
		double var = (double)w->iter_sq_sum_us2 / n - m * m;

		w->iter_us = m;
		w->iter_sd_us = var > 0 ? sqrt(var) : 0;
	}
	if (w->compute_samples > 0) {
		double n = (double)w->compute_samples, m = (double)w->compute_sum_us / n;
		double var = (double)w->compute_sq_sum_us2 / n - m * m;

		w->compute_us = m;
		if (!w->compute_sq_missing)
			w->compute_sd_us = var > 0 ? sqrt(var) : 0;
	}
	if (w->burst_samples > 0)
		w->burst_us = (double)w->burst_sum_us / (double)w->burst_samples;
}

hm_rc_t pace_report_window(const pace_report_t *prev, const pace_report_t *cur, pace_window_t *out,
			   hm_err_t *err)
{
	static const pace_report_t zero;
	const pace_report_t *base = prev ? prev : &zero;

	if (!cur || !out)
		return hm_err_set(err, HM_ERR_INVAL, "pace_report_window: no report or no output");
	if (prev && (prev->job_id != cur->job_id || prev->rank != cur->rank))
		return hm_err_set(err, HM_ERR_INVAL,
				  "reports of different tasks (job %ld rank %d, then job %ld "
				  "rank %d); accepted: two reads of the same file",
				  prev->job_id, prev->rank, cur->job_id, cur->rank);
	memset(out, 0, sizeof(*out));
	/* Counts never wrap in practice; one that went back is a new process. */
	if (prev && (prev->pid != cur->pid || cur->iter_n < prev->iter_n ||
		     cur->compute_n < prev->compute_n || cur->burst_n < prev->burst_n ||
		     cur->slot_misses < prev->slot_misses)) {
		out->restarted = true;
		base = &zero;
	}
	/* Unsigned differences are exact modulo 2^64, wrapped sums included. */
	out->samples = cur->iter_n - base->iter_n;
	out->iter_sum_us = cur->iter_sum_us - base->iter_sum_us;
	out->iter_sq_sum_us2 = cur->iter_sq_sum_us2 - base->iter_sq_sum_us2;
	out->compute_samples = cur->compute_n - base->compute_n;
	out->compute_sum_us = cur->compute_sum_us - base->compute_sum_us;
	out->compute_sq_sum_us2 = cur->compute_sq_sum_us2 - base->compute_sq_sum_us2;
	out->compute_sq_missing = !cur->has_compute_sq || (base != &zero && !base->has_compute_sq);
	out->burst_samples = cur->burst_n - base->burst_n;
	out->burst_sum_us = cur->burst_sum_us - base->burst_sum_us;
	out->slot_misses = cur->slot_misses - base->slot_misses;
	finish(out);
	return HM_OK;
}

void pace_window_add(pace_window_t *acc, const pace_window_t *w)
{
	acc->samples += w->samples;
	acc->iter_sum_us += w->iter_sum_us;
	acc->iter_sq_sum_us2 += w->iter_sq_sum_us2;
	acc->compute_samples += w->compute_samples;
	acc->compute_sum_us += w->compute_sum_us;
	acc->compute_sq_sum_us2 += w->compute_sq_sum_us2;
	acc->compute_sq_missing |= w->compute_sq_missing && w->compute_samples > 0;
	acc->burst_samples += w->burst_samples;
	acc->burst_sum_us += w->burst_sum_us;
	acc->slot_misses += w->slot_misses;
	acc->restarted |= w->restarted;
	finish(acc);
}
