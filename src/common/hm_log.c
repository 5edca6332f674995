/* Logging (hm_log.h): the process-wide logger and loggers of one's own. */
#include "hm_log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static _Atomic(hm_log_sink_fn) log_sink;
static atomic_int log_level = HM_LOG_INFO;

static const char *const level_names[] = {"error", "info", "verbose", "debug"};

void hm_log_set_sink(hm_log_sink_fn fn)
{
	atomic_store(&log_sink, fn);
}

void hm_log_set_level(hm_log_level_t level)
{
	atomic_store(&log_level, (int)level);
}

hm_log_level_t hm_log_get_level(void)
{
	return (hm_log_level_t)atomic_load(&log_level);
}

const char *hm_log_level_name(hm_log_level_t level)
{
	if ((unsigned)level > HM_LOG_DEBUG)
		return NULL;
	return level_names[level];
}

int hm_log_level_parse(const char *name)
{
	for (int i = 0; i <= HM_LOG_DEBUG; i++)
		if (name && strcasecmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

/* prefix + the message to sink, or to stderr as "<tag><level>: <prefix>msg". */
static void vemit(hm_log_sink_fn sink, int level, const char *tag, const char *prefix,
		  const char *fmt, va_list ap)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "%s", prefix);

	if (n < 0 || (size_t)n >= sizeof(msg))
		n = 0;
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	if (sink)
		sink(level, msg);
	else
		fprintf(stderr, "%s%s: %s\n", tag,
			level_names[level < HM_LOG_ERROR   ? HM_LOG_ERROR
				    : level > HM_LOG_DEBUG ? HM_LOG_DEBUG
							   : level],
			msg);
}

void hm_log(hm_log_level_t level, const char *fmt, ...)
{
	va_list ap;

	if ((int)level > atomic_load(&log_level))
		return;
	va_start(ap, fmt);
	vemit(atomic_load(&log_sink), (int)level, "harmonics: ", "", fmt, ap);
	va_end(ap);
}

void hm_logf(const hm_logger_t *lg, hm_log_level_t level, const char *fmt, ...)
{
	va_list ap;

	if ((int)level > lg->level)
		return;
	va_start(ap, fmt);
	vemit(lg->sink, (int)level, "", lg->prefix, fmt, ap);
	va_end(ap);
}

void hm_log_once(const hm_logger_t *lg, hm_log_once_t *once, hm_log_level_t level, const char *fmt,
		 ...)
{
	char msg[sizeof(once->last)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strcmp(msg, once->last) == 0)
		return;
	memcpy(once->last, msg, sizeof(msg));
	once->level = (int)level;
	hm_logf(lg, level, "%s", msg);
}

bool hm_log_once_clear(hm_log_once_t *once)
{
	bool had = once->last[0] != '\0';

	once->last[0] = '\0';
	return had;
}

bool hm_log_rate_ok(hm_log_rate_t *r, long long now_ms, int burst, int window_ms,
		    unsigned long *dropped)
{
	if (now_ms >= r->window_end_ms) {
		r->window_end_ms = now_ms + window_ms;
		r->used = 0;
	}
	if (r->used >= burst) {
		r->dropped++;
		return false;
	}
	r->used++;
	*dropped = r->dropped;
	r->dropped = 0;
	return true;
}
