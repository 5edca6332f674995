/* A clock shim for the fault tier (tests/fault/run.sh), not a Harmonics part:
 * LD_PRELOAD'ed into one node's slurmd and training processes, it adds an
 * offset to CLOCK_REALTIME as if that node's clock had been stepped. The offset
 * (signed microseconds) is read from the file named by HM_TIMESHIFT_FILE, at
 * most every 50 ms of CLOCK_MONOTONIC, so a test steps the clock by rewriting
 * the file. Monotonic clocks are left alone, as a real clock step leaves them.
 * Calls that bypass the PLT (inside libc) are not shifted. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static _Atomic int64_t offset_us;
static _Atomic int64_t next_read_ns;

static clock_gettime_fn real_clock_gettime(void)
{
	static _Atomic(clock_gettime_fn) fn;
	clock_gettime_fn f = atomic_load(&fn);

	if (!f) {
		f = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
		atomic_store(&fn, f);
	}
	return f;
}

/* The offset file's value, re-read at most every 50 ms. */
static int64_t shift_us(void)
{
	struct timespec m;
	const char *path = getenv("HM_TIMESHIFT_FILE");
	char buf[32];
	int64_t now_ns;
	ssize_t n;
	int fd;

	if (!path || real_clock_gettime()(CLOCK_MONOTONIC, &m) != 0)
		return atomic_load(&offset_us);
	now_ns = (int64_t)m.tv_sec * 1000000000 + m.tv_nsec;
	if (now_ns < atomic_load(&next_read_ns))
		return atomic_load(&offset_us);
	atomic_store(&next_read_ns, now_ns + 50000000);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			atomic_store(&offset_us, strtoll(buf, NULL, 10));
		}
	}
	return atomic_load(&offset_us);
}

static void add_us(struct timespec *ts, int64_t us)
{
	int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + us * 1000;

	ts->tv_sec = (time_t)(ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += 1000000000;
		ts->tv_sec--;
	}
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	int rc = real_clock_gettime()(clk, ts);

	if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
		add_us(ts, shift_us());
	return rc;
}

int gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec ts;

	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
