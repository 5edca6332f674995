/*
 * hm_log.h - the coordinator's logging hook.
 *
 * Standalone tools log to stderr (the default sink). Inside slurmctld the sched
 * plugin installs a sink that routes messages to Slurm's error()/info()/verbose()/
 * debug() with the fixed prefix "sched/harmonics: ". Messages carry no trailing
 * newline. Thread-safe: the sink and level are read atomically per call, so set
 * them before starting threads (init) and reset them after joining (fini).
 */
#ifndef HM_LOG_H
#define HM_LOG_H

typedef enum {
	HM_LOG_ERROR = 0, /* something failed; the caller degrades (fail-open) */
	HM_LOG_INFO,      /* start/stop, decisions that changed, refused requests */
	HM_LOG_VERBOSE,   /* every request served */
	HM_LOG_DEBUG,     /* internals */
} hm_log_level_t;

/* Sink: receives the level and the formatted message (no newline). */
typedef void (*hm_log_sink_fn)(hm_log_level_t level, const char *msg);

/* Install a sink; NULL restores the default (stderr, "harmonics: <level>: msg"). */
void hm_log_set_sink(hm_log_sink_fn fn);

/* Messages above `level` are dropped before formatting. Default HM_LOG_INFO. */
void hm_log_set_level(hm_log_level_t level);
hm_log_level_t hm_log_get_level(void);

void hm_log(hm_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "error", "info", "verbose", "debug"; NULL for an unknown name (case-insensitive). */
const char *hm_log_level_name(hm_log_level_t level);
int hm_log_level_parse(const char *name); /* -1 when unknown */

#endif
