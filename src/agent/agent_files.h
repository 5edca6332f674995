/*
 * agent_files.h - contract A on the agent's side: the node and job directories,
 * the atomic assign file, the steps' report files read as untrusted input, and
 * the removal of a finished job's directory (docs/pacing.md, "Contract A").
 *
 * Every path below the node directory is reached from a directory descriptor
 * that was opened with O_NOFOLLOW and checked with fstat, so nothing a job's
 * user plants in its job directory (a symbolic link, a FIFO, a directory named
 * like a file) is followed or blocks the agent. Errors name the path.
 */
#ifndef AGENT_FILES_H
#define AGENT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "hm_error.h"

#define AGENT_ANY_UID     UINT32_MAX
#define AGENT_REPORT_NAME 64 /* "report.<step>.<rank>" */
#define AGENT_ASSIGN_NAME "assign"
#define AGENT_MAX_ENTRIES 4096 /* directory entries looked at per scan */

/*
 * Open RunDir/<node>/ (creating RunDir and it 0755 when missing) as a directory
 * descriptor; both must be real directories owned by this process's euid without
 * group or other write permission. -1 with err when not.
 */
int agent_node_dir_open(const char *run_dir, const char *node, hm_err_t *err);

/*
 * Open the job directory job.<id> of the node directory: a real directory (not a
 * link), owned by want_uid (AGENT_ANY_UID: anyone) with no group or other
 * permission bits. Returns its descriptor, or -1 with HM_ERR_NOTFOUND (absent)
 * or HM_ERR_AUTH (link, not a directory, wrong owner or mode) in err.
 * *owner (may be NULL) receives the directory's owner on success.
 */
int agent_job_dir_open(int node_fd, long job_id, uint32_t want_uid, uint32_t *owner, hm_err_t *err);

/*
 * Replace job_fd's "assign" with text atomically: create "assign.tmp.<pid>" with
 * O_CREAT|O_EXCL|O_NOFOLLOW, mode 0644, write, close, renameat over "assign"
 * (a planted link named "assign" is replaced, not followed). A planted entry
 * named like the temporary file is removed (never followed) and the creation
 * retried once; *planted tells (may be NULL).
 */
hm_rc_t agent_write_assign(int job_fd, const char *text, size_t len, bool *planted, hm_err_t *err);

/* Name of a report file: "report.<step>.<rank>", step 1-31 of [A-Za-z0-9_],
 * rank a decimal in [0, 2^24); the runtime's temporaries ("*.tmp.*") are not. */
bool agent_report_name(const char *name, char *step, size_t step_len, int *rank);

/*
 * Read report file name of job_fd into buf (cap bytes; at most
 * PACE_REPORT_MAX_BYTES are accepted): opened with O_NOFOLLOW|O_NONBLOCK, must be
 * a regular file owned by uid. *st receives its fstat. HM_ERR_NOTFOUND (gone),
 * HM_ERR_AUTH (link, not regular, owner), HM_ERR_RANGE (too large), HM_ERR_IO.
 */
hm_rc_t agent_read_report(int job_fd, const char *name, uint32_t uid, char *buf, size_t cap,
			  size_t *len, struct stat *st, hm_err_t *err);

/* Job ids of the node directory's job.<id> entries (at most max); the count. */
int agent_list_jobs(int node_fd, long *ids, int max);

/* Report file names of a job directory (at most max); the count. */
int agent_list_reports(int job_fd, char (*names)[AGENT_REPORT_NAME], int max);

/* Modification time (CLOCK_REALTIME us) of the job directory (entries created,
   renamed or removed change it): one fstat, whatever the directory holds. */
int64_t agent_job_dir_mtime_us(int job_fd);

/*
 * Remove job.<id> and what it holds without following any link (nested
 * directories to a depth of 4). HM_ERR_IO when something stays (e.g. a step
 * wrote a new file meanwhile): retried at the next cleanup.
 */
hm_rc_t agent_remove_job_dir(int node_fd, long job_id, hm_err_t *err);

/*
 * A time slice for the removals of one cleanup on this thread (CLOCK_MONOTONIC
 * us; 0 ends it): past it agent_remove_job_dir stops where it is and returns
 * HM_ERR_BUDGET (the next slice goes on). agent_remove_deadline_hit: whether
 * the slice ran out since it was set (more to remove).
 */
void agent_remove_deadline(int64_t deadline_us);
bool agent_remove_deadline_hit(void);

#endif
