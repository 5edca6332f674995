/*
 * hm_clock.h - the one clock helper: seconds (or ms/us) on a named POSIX clock.
 *
 * CLOCK_MONOTONIC for durations and deadlines, CLOCK_REALTIME for times shared
 * across hosts (slots, validity), CLOCK_THREAD_CPUTIME_ID / CLOCK_PROCESS_CPUTIME_ID
 * for CPU time. Header-only so that the small libraries (pace, client) use it
 * without linking libharmonics.
 */
#ifndef HM_CLOCK_H
#define HM_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline double hm_clock_s(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int64_t hm_clock_us(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t hm_clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Shorthands: monotonic seconds (durations), realtime seconds (shared times). */
static inline double hm_mono_s(void)
{
	return hm_clock_s(CLOCK_MONOTONIC);
}

static inline double hm_real_s(void)
{
	return hm_clock_s(CLOCK_REALTIME);
}

/* Monotonic milliseconds: socket and request deadlines. */
static inline int64_t hm_mono_ms(void)
{
	return hm_clock_ms(CLOCK_MONOTONIC);
}

/* The time after_ms from now on clock, as the timed waits take it: the clock of
   the condition variable (pthread_cond_timedwait), CLOCK_REALTIME for a join. */
static inline struct timespec hm_clock_deadline(clockid_t clock, int after_ms)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_sec += after_ms / 1000;
	ts.tv_nsec += (long)(after_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif
