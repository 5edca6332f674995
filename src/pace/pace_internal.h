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
	bool valid;        /* a is a usable, non-off assignment */
	bool warned_stale; /* one warning per assignment */
	bool warned_garbage;
	int rank;

	char *assign_file; /* owned, NULL when none */
	dev_t file_dev;
	ino_t file_ino;
	int64_t file_mtime_ns;
	off_t file_size;
	int64_t next_poll_us;

	char *report_file; /* owned, "%r" already replaced; NULL when none */
	int64_t next_report_us;

	/* measurement */
	int64_t iter_marks;    /* hm_pace_iter_begin calls */
	int64_t iter_start_us; /* current iteration start, 0 = none */
	int64_t prev_iter_start_us;
	bool iter_open;         /* an iteration began and has no burst yet */
	int64_t burst_start_us; /* 0 when no burst is open */
	int64_t burst_end_us;   /* last end stamp of the open burst, 0 = none */
	int64_t last_slot;      /* HM_PACE_NO_SLOT when none */
	int64_t bursts, paced, late, skipped, unpaced;
	double period_sum_us, offset_sum_us, burst_sum_us, wait_sum_us, err_sum_us, err_max_us;
	int64_t period_n, offset_n, burst_n, err_n;
};

/* Write the report file (caller holds p->mu). 0 or -1 with errno. */
int pace_report_locked(hm_pace_t *p, int64_t now_us);
void pace_stats_locked(hm_pace_t *p, hm_pace_stats_t *out);

#endif
