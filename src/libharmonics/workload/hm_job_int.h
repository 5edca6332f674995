/*
 * hm_job_int.h - helpers shared by the job, workload and placement files of
 * libharmonics. Private: not installed, not part of the contract (hm_job.h).
 */
#ifndef HM_JOB_INT_H
#define HM_JOB_INT_H

#include <stddef.h>

#include "hm_job.h"

/* Sort jobs by arrival (stable: equal arrivals keep their order), then set id = index. */
hm_rc_t hm_workload_sort(hm_workload_t *w, hm_err_t *err);

/*
 * Copy s into buf (len bytes) for an error message: non-printable bytes become
 * \xNN and long values are cut with "...", so garbage input never garbles a log.
 * Returns buf.
 */
const char *hm_job_quote(const char *s, char *buf, size_t len);

/* Append job (copied; ownership of job->nodes moves to w) growing w->jobs; *cap tracks size. */
hm_rc_t hm_workload_push(hm_workload_t *w, int *cap, const hm_job_t *job, hm_err_t *err);

#endif
