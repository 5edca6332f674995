/*
 * pace_report_read.h - reading the pacing runtime's report files (format version
 * 2, docs/pacing.md "Measurement and the report") for the node agent: a strict
 * parse of one file's text, and the window statistics between two reads of the
 * same task's file, so that every heartbeat carries exact means over what
 * happened since the previous one.
 *
 * Library: src/pace/libharmonics-pace-report.la (libtool convenience library,
 * PIC). It does not link libharmonics-pace's runtime; it needs hm_error.c and
 * hm_parse.c, which libharmonics.la provides. No Slurm, no I/O, no allocation,
 * no global state: thread-safe. The caller reads the file itself (as untrusted
 * input: O_NOFOLLOW, regular file, owned by the job's user, at most
 * PACE_REPORT_MAX_BYTES) and owns every structure passed in.
 *
 * Units: microseconds (_us), microseconds squared (_us2). Errors: hm_rc_t with a
 * one-line message naming file:line, the key, the bad value and what is accepted.
 *
 * Typical use, per report file, once per heartbeat:
 *
 *   pace_report_t cur;  pace_window_t w;
 *   if (pace_report_parse(buf, len, path, &cur, &err) != HM_OK) { log err.msg; skip; }
 *   pace_report_window(have_prev ? &prev : NULL, &cur, &w, &err);
 *   pace_window_add(&job_window, &w);        // over the job's ranks and steps
 *   prev = cur; have_prev = true;
 *   ... job_window.samples > 0: send iter_us, iter_sd_us, compute_us, compute_sd_us, burst_us,
 *       slot_misses, samples as "meas"; cur.applied_epoch as the applied epoch.
 */
#ifndef PACE_REPORT_READ_H
#define PACE_REPORT_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hm_error.h"

#define PACE_REPORT_MAX_BYTES   65536 /* the runtime writes about 600 bytes */
#define PACE_REPORT_MIN_VERSION 2     /* version 1 has no cumulative counters */

/* One read of one task's report. Counters are cumulative since the task started. */
typedef struct {
	int version;        /* HARMONICS_REPORT_VERSION, >= 2 */
	long job_id;        /* JOB_ID; -1 when the task has no assignment */
	int rank;           /* RANK */
	long pid;           /* PID of the task: a change means it restarted */
	long epoch;         /* EPOCH of the assignment in force at the write */
	long applied_epoch; /* APPLIED_EPOCH: epoch that governed the last burst; -1 before */
	bool active;        /* ACTIVE: pacing (valid, not stale, not off) at the write */
	int64_t updated_us; /* UPDATED_US: CLOCK_REALTIME of the write */
	/* Cumulative counters. Sums are unsigned and wrap modulo 2^64. */
	uint64_t iter_n, iter_sum_us, iter_sq_sum_us2; /* iteration period samples */
	uint64_t compute_n, compute_sum_us;            /* ready - iteration start */
	uint64_t compute_sq_sum_us2; /* COMPUTE_SQ_SUM_US2 (optional: runtimes before
				      * 2026-12 lack it; has_compute_sq says) */
	bool has_compute_sq;
	uint64_t burst_n, burst_sum_us; /* slot release -> last comm_end */
	uint64_t slot_misses;           /* skipped slots + late bursts */
	int nccl_class; /* NCCL_CLASS: class the paced NCCL communicator carries; -1 none
			 * or not given (optional) */
	/* Burst outcomes since the task started (version 1 keys) and the mean hold. */
	long bursts, paced, late, skipped, unpaced; /* paced: released on time in its slot */
	long wait_us; /* WAIT_US: mean hold of a burst (a whole microsecond) */
} pace_report_t;

/* Statistics over a window (between two reads, or merged over several tasks). */
typedef struct {
	uint64_t samples;  /* iteration period samples (0: nothing new, means are 0) */
	double iter_us;    /* mean iteration period */
	double iter_sd_us; /* its standard deviation (population, as the simulator's) */
	uint64_t compute_samples;
	double compute_us;    /* mean compute time, jitter included, waits excluded */
	double compute_sd_us; /* its standard deviation; -1 = unknown (a report without
			       * COMPUTE_SQ_SUM_US2 in the window, or no samples) */
	uint64_t burst_samples;
	double burst_us;         /* mean burst length */
	uint64_t slot_misses;    /* skipped slots + late bursts in the window */
	bool restarted;          /* a task restarted: its window counts from its start */
	bool compute_sq_missing; /* a report in the window had no COMPUTE_SQ_SUM_US2 */
	/* Window sums behind the means (what pace_window_add merges). */
	uint64_t iter_sum_us, iter_sq_sum_us2, compute_sum_us, compute_sq_sum_us2, burst_sum_us;
} pace_window_t;

/*
 * Parse the text of one report file (len bytes, need not be NUL-terminated;
 * fname only names it in messages). Unknown keys are ignored (newer runtimes
 * add keys); every key below is required once, with a strictly parsed value,
 * except NCCL_CLASS and COMPUTE_SQ_SUM_US2 (at most once).
 * A version-1 report (no cumulative counters) is HM_ERR_RANGE naming the version.
 * *out is written only on success.
 */
hm_rc_t pace_report_parse(const char *text, size_t len, const char *fname, pace_report_t *out,
			  hm_err_t *err);

/*
 * Window statistics from prev (the previous read of the same task's file, or NULL
 * for "from the task's start") to cur. A different PID, or a count that went
 * back, means the task restarted: the window is cur alone and restarted is set.
 * prev and cur of different tasks (job id or rank differ) are HM_ERR_INVAL.
 * Same updated_us: an empty window (samples 0), not an error.
 */
hm_rc_t pace_report_window(const pace_report_t *prev, const pace_report_t *cur, pace_window_t *out,
			   hm_err_t *err);

/* Merge w into acc (sums and counts add; means and sd are recomputed as if over
 * all the samples). Start from a zeroed acc. */
void pace_window_add(pace_window_t *acc, const pace_window_t *w);

#endif
