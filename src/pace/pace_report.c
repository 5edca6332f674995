/* The measured profile: statistics and the report file the Local Scheduler reads. */
#define _GNU_SOURCE /* asprintf */
#include "pace_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double mean(double sum, int64_t n)
{
	return n > 0 ? sum / (double)n : 0.0;
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
	out->period_us = mean(p->period_sum_us, p->period_n);
	out->burst_offset_us = mean(p->offset_sum_us, p->offset_n);
	out->burst_us = mean(p->burst_sum_us, p->burst_n);
	out->wait_us = mean(p->wait_sum_us, p->bursts);
	out->slot_error_us = mean(p->err_sum_us, p->err_n);
	out->slot_error_max_us = p->err_max_us;
}

int pace_report_locked(hm_pace_t *p, int64_t now_us)
{
	hm_pace_stats_t s;
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
	fprintf(f,
		"HARMONICS_REPORT_VERSION=1\n"
		"JOB_ID=%ld\nRANK=%d\nMODE=%s\nEPOCH=%ld\nACTIVE=%d\n"
		"PERIOD_ASSIGNED_US=%lld\nSHIFT_US=%lld\n"
		"ITERATIONS=%lld\nBURSTS=%lld\nPACED=%lld\nLATE=%lld\nSKIPPED=%lld\n"
		"UNPACED=%lld\n"
		"PERIOD_US=%.0f\nBURST_OFFSET_US=%.0f\nBURST_US=%.0f\nWAIT_US=%.0f\n"
		"SLOT_ERROR_US=%.1f\nSLOT_ERROR_MAX_US=%.1f\nUPDATED_US=%lld\n",
		p->a.job_id, p->rank, p->a.mode[0] ? p->a.mode : "none", p->a.epoch,
		p->valid ? 1 : 0, (long long)(p->a.period_us > 0 ? p->a.period_us : 0),
		(long long)p->a.shift_us,
		(long long)s.iterations, (long long)s.bursts, (long long)s.paced, (long long)s.late,
		(long long)s.skipped, (long long)s.unpaced, s.period_us, s.burst_offset_us,
		s.burst_us, s.wait_us, s.slot_error_us, s.slot_error_max_us, (long long)now_us);
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
