/* Logging hook: stderr by default, Slurm's log functions inside slurmctld. */
#include "hm_log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
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

void hm_log(hm_log_level_t level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	hm_log_sink_fn sink;

	if ((int)level > atomic_load(&log_level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sink = atomic_load(&log_sink);
	if (sink)
		sink(level, msg);
	else
		fprintf(stderr, "harmonics: %s: %s\n", hm_log_level_name(level), msg);
}
