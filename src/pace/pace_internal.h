/* pace_internal.h - the runtime's state, shared by pace.c and pace_report.c. */
#ifndef PACE_INTERNAL_H
#define PACE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hm_pace.h"
#include "pace_assign.h"

#define PACE_LOG_PREFIX "harmonics-pace: "
#define PACE_POLL_US    100000  /* assignment file poll interval */
#define PACE_REPORT_US  1000000 /* periodic report interval */

struct hm_pace {
	pthread_mutex_t mu; /* guards everything below (comm_end_at may come from a CUDA thread) */
	pace_assign_t a;
	bool valid;            /* a parsed and is consistent (it may still be off or stale) */
	bool warned_stale;     /* one warning while stale */
	bool paused;           /* pacing stopped by staleness or garbage: say "resumed" once back */
	char garbage_msg[1024]; /* last garbage warning: the same one is not repeated */
	int rank;

	char *assign_file; /* owned, NULL when none */
	dev_t file_dev;
	ino_t file_ino;
	int64_t file_mtime_ns;
	off_t file_size;
	int64_t next_poll_us;

	char *report_file; /* owned, "%r" already replaced; NULL when none */
	int64_t next_report_us;

	/* Slot history. Slots are times, so it survives every reload. */
	int64_t last_slot_us;        /* HM_PACE_NO_SLOT when none */
	int64_t last_grid_period_us; /* grid of the last slot; 0 = not on a grid (a delay) */
	int64_t last_grid_phase_us;  /* (origin + shift) mod period of that grid */
	long delay_done_epoch;       /* the epoch whose one-time delay was applied; -1 none */
	long applied_epoch;          /* epoch of the last governed burst; -1 before any */
	long burst_epoch;            /* epoch that governed the last burst; -1 none */
	int nccl_class;              /* class of the paced NCCL communicator; -1 none */

	/* measurement */
	int64_t iter_marks;     /* hm_pace_iter_begin calls */
	int64_t iter_start_us;  /* current iteration start, 0 = none */
	bool iter_open;         /* an iteration began and has no burst yet */
	int64_t burst_start_us; /* 0 when no burst is open */
	int64_t burst_end_us;   /* last end stamp of the current/previous burst, 0 = none */
	bool burst_nccl;        /* burst lengths come from NCCL's profiler events (comm_end_at
				   then only marks the end: no double count) */
	int64_t bursts, paced, late, skipped, unpaced;
	/* Cumulative sums (report version 2); unsigned, they wrap modulo 2^64. */
	uint64_t iter_n, iter_sum_us, iter_sq_sum_us2;
	/* compute_sq_sum_us2 is in the report, not in hm_pace_stats_t: its size is ABI. */
	uint64_t compute_n, compute_sum_us, compute_sq_sum_us2;
	uint64_t burst_n, burst_sum_us;
	uint64_t offset_n, offset_sum_us, wait_sum_us, err_n, err_sum_us;
	int64_t err_max_us;
};

/* Write the report file (caller holds p->mu). 0 or -1 with errno. */
int pace_report_locked(hm_pace_t *p, int64_t now_us);
void pace_stats_locked(hm_pace_t *p, hm_pace_stats_t *out);
/* Active now (valid, not stale, the schedule in force not off)? Warns once when stale. */
bool pace_active_locked(hm_pace_t *p, int64_t now_us);

#endif
