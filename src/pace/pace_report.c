/* The measured profile: statistics and the report file the node agent reads
 * (format version 2, docs/pacing.md; src/pace/pace_report_read.h parses it). */
#define _GNU_SOURCE /* asprintf */
#include "pace_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double mean(uint64_t sum, uint64_t n)
{
	return n > 0 ? (double)sum / (double)n : 0.0;
}

void pace_stats_locked(hm_pace_t *p, hm_pace_stats_t *out)
{
	memset(out, 0, sizeof(*out));
	out->iterations = p->iter_marks > p->bursts ? p->iter_marks : p->bursts;
	out->bursts = p->bursts;
	out->paced = p->paced;
	out->late = p->late;
	out->skipped = p->skipped;
	out->unpaced = p->unpaced;
	out->period_us = mean(p->iter_sum_us, p->iter_n);
	out->burst_offset_us = mean(p->offset_sum_us, p->offset_n);
	out->burst_us = mean(p->burst_sum_us, p->burst_n);
	out->wait_us = mean(p->wait_sum_us, (uint64_t)p->bursts);
	out->slot_error_us = mean(p->err_sum_us, p->err_n);
	out->slot_error_max_us = (double)p->err_max_us;
	out->iter_n = p->iter_n;
	out->iter_sum_us = p->iter_sum_us;
	out->iter_sq_sum_us2 = p->iter_sq_sum_us2;
	out->compute_n = p->compute_n;
	out->compute_sum_us = p->compute_sum_us;
	out->burst_n = p->burst_n;
	out->burst_sum_us = p->burst_sum_us;
	out->slot_misses = (uint64_t)(p->skipped + p->late);
	out->applied_epoch = p->applied_epoch;
	out->burst_epoch = p->burst_epoch;
}

int pace_report_locked(hm_pace_t *p, int64_t now_us)
{
	hm_pace_stats_t s;
	const pace_sched_t *cur;
	bool active;
	char *tmp = NULL;
	FILE *f = NULL;
	int rc = -1, saved = 0;

	if (!p->report_file) {
		errno = ENOENT;
		return -1;
	}
	pace_stats_locked(p, &s);
	if (asprintf(&tmp, "%s.tmp.%ld", p->report_file, (long)getpid()) < 0) {
		tmp = NULL;
		errno = ENOMEM;
		goto out;
	}
	f = fopen(tmp, "w");
	if (!f)
		goto out;
	cur = pace_assign_at(&p->a, now_us);
	active = pace_active_locked(p, now_us);
	/* Version 1 keys first (unchanged), then the version 2 cumulative counters. */
	fprintf(f,
		"HARMONICS_REPORT_VERSION=2\n"
		"JOB_ID=%ld\nRANK=%d\nMODE=%s\nEPOCH=%ld\nACTIVE=%d\n"
		"PERIOD_ASSIGNED_US=%lld\nSHIFT_US=%lld\n"
		"ITERATIONS=%lld\nBURSTS=%lld\nPACED=%lld\nLATE=%lld\nSKIPPED=%lld\n"
		"UNPACED=%lld\n"
		"PERIOD_US=%.0f\nBURST_OFFSET_US=%.0f\nBURST_US=%.0f\nWAIT_US=%.0f\n"
		"SLOT_ERROR_US=%.1f\nSLOT_ERROR_MAX_US=%.1f\nUPDATED_US=%lld\n",
		p->a.job_id, p->rank, cur->mode[0] ? cur->mode : "none", cur->epoch, active ? 1 : 0,
		(long long)(cur->period_us > 0 ? cur->period_us : 0), (long long)cur->shift_us,
		(long long)s.iterations, (long long)s.bursts, (long long)s.paced, (long long)s.late,
		(long long)s.skipped, (long long)s.unpaced, s.period_us, s.burst_offset_us,
		s.burst_us, s.wait_us, s.slot_error_us, s.slot_error_max_us, (long long)now_us);
	fprintf(f,
		"ITER_N=%llu\nITER_SUM_US=%llu\nITER_SQ_SUM_US2=%llu\nCOMPUTE_N=%llu\n"
		"COMPUTE_SUM_US=%llu\nBURST_N=%llu\nBURST_SUM_US=%llu\nSLOT_MISSES=%llu\n"
		"APPLIED_EPOCH=%lld\nPID=%ld\nNCCL_CLASS=%d\nCOMPUTE_SQ_SUM_US2=%llu\n",
		(unsigned long long)s.iter_n, (unsigned long long)s.iter_sum_us,
		(unsigned long long)s.iter_sq_sum_us2, (unsigned long long)s.compute_n,
		(unsigned long long)s.compute_sum_us, (unsigned long long)s.burst_n,
		(unsigned long long)s.burst_sum_us, (unsigned long long)s.slot_misses,
		(long long)s.applied_epoch, (long)getpid(), p->nccl_class,
		(unsigned long long)p->compute_sq_sum_us2);
	if (ferror(f)) {
		errno = EIO;
		goto out;
	}
	if (fclose(f) != 0) {
		f = NULL;
		goto out;
	}
	f = NULL;
	if (rename(tmp, p->report_file) != 0)
		goto out;
	rc = 0;
out:
	saved = errno;
	if (f)
		fclose(f);
	if (rc != 0 && tmp)
		unlink(tmp);
	free(tmp);
	errno = saved;
	return rc;
}
