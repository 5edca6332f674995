/*
 * agent_jobs.h - the agent's table of the jobs on its node: the coordinator's
 * decisions written into each job's assign file (renewal, the next assignment
 * and its promotion), the steps' report files read into per-job window
 * measurements, and the removal of directories of jobs that ended.
 *
 * Times: _us are CLOCK_REALTIME microseconds (the clock of the files and of the
 * slots), _ms are CLOCK_MONOTONIC milliseconds (timers). Single-threaded: only
 * the agent's thread uses a table.
 */
#ifndef AGENT_JOBS_H
#define AGENT_JOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent.h"
#include "agent_files.h"
#include "hm_agent_wire.h"
#include "pace_assign.h"
#include "pace_report_read.h"

#define AGENT_MAX_JOBS         256     /* jobs tracked per node (dirs on disk and listed) */
#define AGENT_MAX_TASKS        256     /* report files tracked per job */
#define AGENT_PROMOTE_SLACK_US 1000000 /* promote next once T + max(periods) + 1 s passed */
#define AGENT_ASSIGN_TEXT_MAX  2048
/* Report bytes one scan reads at most (a report is about 600 bytes, at most 64
   KiB): a job that rewrites large files every beat delays others' by a beat at
   most, never the beat itself. */
#define AGENT_SCAN_READ_MAX_BYTES (4 << 20)

/* One task's report file. */
typedef struct {
	char name[AGENT_REPORT_NAME];
	char step[32];
	int rank;
	bool seen;      /* listed by the latest scan */
	bool have_prev; /* prev holds the latest good read */
	pace_report_t prev;
	bool stat_known; /* ino, size, mtime_ns are the version last read (good or bad) */
	ino_t ino;       /* an unchanged file is not read again */
	off_t size;
	int64_t mtime_ns;
	hm_log_once_t once; /* its last refusal or parse error, logged once */
} agent_task_t;

typedef struct {
	long job_id;
	/* The coordinator's view (the latest agent_assign for this node). */
	bool listed;
	bool ever_listed; /* listed by this agent's coordinator at least once */
	int64_t found_ms; /* the first cleanup that saw it (never-listed directories) */
	hm_aw_job_assign_t decision;
	int64_t unlisted_since_ms; /* when it stopped being listed (cleanup grace) */
	hm_log_once_t dir_once, write_once;
	bool written; /* the current file was written since the decision changed */
	/* The node's view (the latest scan). */
	bool on_disk;
	int64_t newest_us; /* newest change in its directory */
	int ntasks;
	agent_task_t *tasks;
	pace_window_t pending; /* merged windows since the last beat that carried them */
	hm_log_once_t meas_once; /* a window the coordinator would refuse, logged once */
} agent_job_t;

typedef struct {
	int njobs;
	agent_job_t *jobs[AGENT_MAX_JOBS];
	int64_t valid_until_us; /* VALID_UNTIL_US of every file: last heard + valid_ms */
	hm_log_once_t full_once;
	char (*names)[AGENT_REPORT_NAME]; /* scan buffers, allocated at the first scan */
	char *buf;
	size_t scan_read_bytes; /* report bytes the latest scan read */
	int scan_from;          /* the job a scan starts with, moving, so a cut is fair */
	bool clock_free; /* this node's clock is off the coordinator's: files say free running */
} agent_jobs_t;

/* Release every job and the buffers (the table itself is the caller's; zero it to start). */
void agent_jobs_free(agent_jobs_t *js);

/* ---- the assign file: pure functions ------------------------------------------- */

/* Time from which d's next assignment is written as the current one (INT64_MAX: no next). */
int64_t agent_promote_at_us(const hm_aw_job_assign_t *d);

/*
 * A beat's measurement from a job's merged window (compute and burst -1 when
 * not measured). false, with *m zeroed and err naming the member and the bad
 * value, when the coordinator's decoder would refuse it (hm_aw_meas_check):
 * report files are the job's user's, so such a window is dropped, not sent.
 */
bool agent_meas_of_window(const pace_window_t *w, hm_aw_meas_t *m, hm_err_t *err);

/*
 * The text of job_id's assign file for decision d at now_us, valid until
 * valid_until_us: KEY=VALUE lines of hm_pace_env.h, the next assignment
 * promoted to current once now_us >= agent_promote_at_us(d). The text is
 * checked with the runtime's own parser and validation (pace_assign.c), so the
 * agent never writes a file the runtime would refuse. HM_ERR_* naming the key.
 */
hm_rc_t agent_assign_text(long job_id, const hm_aw_job_assign_t *d, int64_t now_us,
			  int64_t valid_until_us, char *buf, size_t len, hm_err_t *err);

/* ---- the table ----------------------------------------------------------------- */

/* The job, created when absent (NULL when the table is full). */
agent_job_t *agent_jobs_get(agent_jobs_t *js, long job_id, bool create);

/*
 * Take the coordinator's full list for this node: listed jobs get their decision,
 * the others become unlisted (their files are no longer written; their
 * directories are removed after the grace). Renewal is separate.
 */
void agent_jobs_apply(agent_jobs_t *js, const hm_aw_node_assign_t *na, int64_t now_ms,
		      const hm_logger_t *lg);

/* Write the assign file of every listed job whose directory exists (renewal or change). */
void agent_jobs_write_all(agent_jobs_t *js, int node_fd, int64_t now_us, const hm_logger_t *lg);

/* Write one job's file; false when it could not be written (logged once). */
bool agent_jobs_write(agent_jobs_t *js, int node_fd, agent_job_t *j, int64_t now_us,
		      const hm_logger_t *lg);

/* Earliest promotion time among listed jobs with a pending next (INT64_MAX: none). */
int64_t agent_jobs_next_promotion_us(const agent_jobs_t *js);

/* Rewrite the files of jobs whose next is due for promotion at now_us (no renewal). */
void agent_jobs_promote(agent_jobs_t *js, int node_fd, int64_t now_us, const hm_logger_t *lg);

/*
 * Scan the node directory: job directories present, and in each the report files,
 * read as untrusted input (owner = the job's uid, else the directory's owner),
 * parsed strictly, differenced against the previous read of the same task and
 * merged into the job's pending window.
 */
void agent_jobs_scan(agent_jobs_t *js, int node_fd, const hm_logger_t *lg);

/*
 * Fill out with this node's jobs for a beat (or hello): steps, ranks, applied
 * epoch of live tasks, and the pending window when it has samples. A task is
 * live when its process exists or its report changed within the grace.
 */
void agent_jobs_state(const agent_jobs_t *js, int64_t now_us, hm_aw_node_state_t *out,
		      const hm_logger_t *lg, hm_log_once_t *once);

/* The beat carrying the pending windows was queued: start new windows. */
void agent_jobs_windows_sent(agent_jobs_t *js);

/*
 * Remove the directories (and table entries) of jobs no longer listed: a job the
 * coordinator listed before, AGENT_CLEAN_GRACE_MS after it was dropped from the
 * list, whatever its files do (its user cannot keep a slot by writing); one it
 * never listed (a step that registered while the coordinator was away), once its
 * directory did not change for AGENT_CLEAN_GRACE_MS, or AGENT_UNLISTED_MAX_MS
 * after the agent first saw it. Only call with a list from a live connection
 * (the coordinator's word is authoritative).
 */
void agent_jobs_cleanup(agent_jobs_t *js, int node_fd, int64_t now_ms, int64_t now_us,
			const hm_logger_t *lg);

#endif
