/*
 * hm_log.h - the one logging facility of the engine, the node agent and the
 * plugins: four levels, a sink callback, loggers with a prefix, and "once per
 * state change" for failures that repeat on every retry.
 *
 * Two ways in:
 *   hm_log    the process-wide logger of the coordinator's engine and server.
 *             Standalone tools log to stderr ("harmonics: <level>: msg"); inside
 *             slurmctld the sched plugin installs a sink that routes messages to
 *             Slurm's error()/info()/verbose()/debug() with its fixed prefix.
 *             Thread-safe: the sink and level are read atomically per call, so
 *             set them before starting threads (init) and reset them after
 *             joining (fini).
 *   hm_logf   a logger of one's own (hm_logger_t): the node agent has one per
 *             agent, its prefix naming the node and its sink the one slurmd's
 *             SPANK plugin passed through hm_agent.h. Set up before threads use
 *             it, read-only after.
 * Messages carry no trailing newline; a line is cut at 1023 bytes.
 */
#ifndef HM_LOG_H
#define HM_LOG_H

#include <stdbool.h>

typedef enum {
	HM_LOG_ERROR = 0, /* something failed; the caller degrades (fail-open) */
	HM_LOG_INFO,      /* start/stop, decisions that changed, refused requests */
	HM_LOG_VERBOSE,   /* every request served */
	HM_LOG_DEBUG,     /* internals */
} hm_log_level_t;

/* Sink: receives the level (an hm_log_level_t) and the formatted line (no newline).
   The level is an int because the node agent's ABI (hm_agent_log_fn) is this type. */
typedef void (*hm_log_sink_fn)(int level, const char *msg);

/* ---- the process-wide logger (hm_log) ------------------------------------------ */

/* Install a sink; NULL restores the default (stderr, "harmonics: <level>: msg"). */
void hm_log_set_sink(hm_log_sink_fn fn);

/* Messages above `level` are dropped before formatting. Default HM_LOG_INFO. */
void hm_log_set_level(hm_log_level_t level);
hm_log_level_t hm_log_get_level(void);

void hm_log(hm_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "error", "info", "verbose", "debug"; NULL for an unknown name (case-insensitive). */
const char *hm_log_level_name(hm_log_level_t level);
int hm_log_level_parse(const char *name); /* -1 when unknown */

/* ---- a logger of one's own (hm_logf) --------------------------------------------- */

typedef struct {
	hm_log_sink_fn sink; /* NULL: stderr, "<level>: <prefix>msg" */
	int level;           /* lines above it are dropped (-1: every line) */
	char prefix[96];     /* starts every line, e.g. "harmonics-agent n1: " */
} hm_logger_t;

void hm_logf(const hm_logger_t *lg, hm_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Log a message at level only when it differs from the one remembered in
 * *once (then remember it): a failure that repeats on every retry is logged
 * once, and again only when it changes or after hm_log_once_clear() (it was
 * resolved). Messages are compared on their first 255 bytes.
 */
typedef struct {
	char last[256];
	int level; /* the level last was logged at */
} hm_log_once_t;

void hm_log_once(const hm_logger_t *lg, hm_log_once_t *once, hm_log_level_t level, const char *fmt,
		 ...) __attribute__((format(printf, 4, 5)));
/* Forget the remembered failure; returns whether there was one (to log "recovered"). */
bool hm_log_once_clear(hm_log_once_t *once);

/*
 * A rate limit for lines a peer can cause (refused connections): at most
 * burst lines per window_ms. hm_log_rate_ok says whether a line may be logged
 * at now_ms; when it may, *dropped is how many were not since the last one
 * (to say so in it). Zero-initialised; the caller serialises calls.
 */
typedef struct {
	long long window_end_ms;
	int used;
	unsigned long dropped;
} hm_log_rate_t;

bool hm_log_rate_ok(hm_log_rate_t *r, long long now_ms, int burst, int window_ms,
		    unsigned long *dropped);

#endif
