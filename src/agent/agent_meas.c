/* A beat's "meas" from a job's merged report window (contract B, no I/O). */
#include <string.h>

#include "agent_jobs.h"

bool agent_meas_of_window(const pace_window_t *w, hm_aw_meas_t *m, hm_err_t *err)
{
	memset(m, 0, sizeof(*m));
	m->samples = w->samples;
	m->iter_us = w->iter_us;
	m->iter_sd_us = w->iter_sd_us;
	m->compute_us = w->compute_samples ? w->compute_us : -1;
	m->compute_sd_us = w->compute_sd_us; /* -1 without samples or a spread (finish) */
	m->burst_us = w->burst_samples ? w->burst_us : -1;
	m->slot_misses = w->slot_misses;
	/* The window comes from the job's own report files: what the coordinator
	   would refuse is dropped here, for this job only. */
	if (hm_aw_meas_check(m, err) != HM_OK) {
		memset(m, 0, sizeof(*m));
		return false;
	}
	return true;
}
