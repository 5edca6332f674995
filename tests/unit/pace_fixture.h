/* Shared by the pacing runtime tests: environment, files and stderr capture. */
#ifndef PACE_FIXTURE_H
#define PACE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hm_pace_env.h"

/* Every HARMONICS_* variable the runtime reads. */
static const char *const pace_all_keys[] = {
    HM_PACE_ENV_MODE,           HM_PACE_ENV_JOB_ID,
    HM_PACE_ENV_PERIOD_US,      HM_PACE_ENV_SHIFT_US,
    HM_PACE_ENV_ORIGIN_US,      HM_PACE_ENV_GUARD_US,
    HM_PACE_ENV_PRIO,           HM_PACE_ENV_EPOCH,
    HM_PACE_ENV_VALID_UNTIL_US, HM_PACE_ENV_NEXT_EFFECTIVE_US,
    HM_PACE_ENV_NEXT_MODE,      HM_PACE_ENV_NEXT_PERIOD_US,
    HM_PACE_ENV_NEXT_SHIFT_US,  HM_PACE_ENV_NEXT_ORIGIN_US,
    HM_PACE_ENV_NEXT_GUARD_US,  HM_PACE_ENV_NEXT_PRIO,
    HM_PACE_ENV_NEXT_EPOCH,     HM_PACE_ENV_ASSIGN_FILE,
    HM_PACE_ENV_REPORT_FILE,    HM_PACE_ENV_RANK,
};

static inline void pace_clear_env(void)
{
	for (size_t i = 0; i < sizeof(pace_all_keys) / sizeof(pace_all_keys[0]); i++)
		unsetenv(pace_all_keys[i]);
}

static inline void setenv_ll(const char *k, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	setenv(k, buf, 1);
}

/* Replace path atomically with text (what the agent does). */
static inline void write_file_atomic(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(rename(tmp, path), 0);
}

/* Whole small file into buf (NUL-terminated); returns its length. */
static inline size_t slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n;
}

static inline int count_substr(const char *s, const char *sub)
{
	int n = 0;

	for (const char *q = strstr(s, sub); q; q = strstr(q + 1, sub))
		n++;
	return n;
}

/* ---- stderr capture: warnings must appear exactly once ---- */
static int pace_saved_stderr = -1;
static char pace_errpath[4096];

static inline void capture_stderr(const char *dir)
{
	FILE *f;

	snprintf(pace_errpath, sizeof(pace_errpath), "%s/stderr.txt", dir);
	f = fopen(pace_errpath, "w");
	assert_non_null(f);
	fclose(f);
	fflush(stderr);
	pace_saved_stderr = dup(2);
	assert_true(freopen(pace_errpath, "a", stderr) != NULL);
}

/* Stop capturing; returns the captured text (static buffer). */
static inline const char *captured_stderr(void)
{
	static char buf[4096];

	fflush(stderr);
	dup2(pace_saved_stderr, 2);
	close(pace_saved_stderr);
	slurp(pace_errpath, buf, sizeof(buf));
	return buf;
}

#endif
