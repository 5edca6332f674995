/*
 * hm_spank_dir.h - the step side of the local channel (contract A,
 * docs/pacing.md): the job's directory under RunDir that the node agent writes
 * the assignment into and the tasks write their reports into. Slurm-free, so
 * the tests create and attack it without slurmstepd.
 *
 * RunDir/<node>/           root-owned 0755 (created when missing)
 * RunDir/<node>/job.<id>/  the job's uid and gid, 0700: only the owner and root
 *                          can read or change anything inside
 */
#ifndef HM_SPANK_DIR_H
#define HM_SPANK_DIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hm_error.h"

/*
 * Create (or check) the job's directory and write its path into path (len
 * bytes). An existing one must be a real directory (not a link) owned by uid
 * with mode 0700, else HM_ERR_AUTH naming what is wrong (the step then runs
 * unscheduled: someone else planted it). Needs root (slurmstepd). node: 1-63 of
 * [A-Za-z0-9._-]; anything else is HM_ERR_INVAL (it becomes a path component).
 */
hm_rc_t hm_spank_job_dir(const char *run_dir, const char *node, uint32_t job_id, uid_t uid,
			 gid_t gid, char *path, size_t len, hm_err_t *err);

#endif
