/* The job's directory of the local channel (hm_spank_dir.h). */
#include "hm_spank_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* mkdir that accepts an existing directory; the caller checks what it got. */
static int make_dir(const char *path, mode_t mode)
{
	return mkdir(path, mode) == 0 || errno == EEXIST ? 0 : -1;
}

hm_rc_t hm_spank_job_dir(const char *run_dir, const char *node, uint32_t job_id, uid_t uid,
			 gid_t gid, char *path, size_t len, hm_err_t *err)
{
	char node_dir[4096];
	struct stat st;
	int n, fd = -1;
	hm_rc_t rc = HM_OK;

	if (!name_ok(node))
		return hm_err_set(err, HM_ERR_INVAL,
				  "node name '%.80s' cannot name a directory (accepted: 1-63 of "
				  "[A-Za-z0-9._-])",
				  node);
	n = snprintf(node_dir, sizeof(node_dir), "%s/%s", run_dir, node);
	if (n < 0 || (size_t)n >= sizeof(node_dir))
		return hm_err_set(err, HM_ERR_RANGE, "RunDir=%.200s is too long", run_dir);
	n = snprintf(path, len, "%s/job.%u", node_dir, job_id);
	if (n < 0 || (size_t)n >= len)
		return hm_err_set(err, HM_ERR_RANGE, "RunDir=%.200s is too long", run_dir);
	if (make_dir(run_dir, 0755) != 0 || make_dir(node_dir, 0755) != 0)
		return hm_err_set(err, HM_ERR_IO, "cannot create %s: %s", node_dir,
				  strerror(errno));
	if (lstat(node_dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022))
		return hm_err_set(err, HM_ERR_AUTH,
				  "%s is not a root-owned directory writable by root only",
				  node_dir);
	if (mkdir(path, 0700) == 0) {
		/* Ours: hand it to the job's user (no link can be here, we just made it). */
		if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
		    fchown(fd, uid, gid) != 0 || fchmod(fd, 0700) != 0)
			rc = hm_err_set(err, HM_ERR_IO, "cannot give %s to uid %u: %s", path,
					(unsigned)uid, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (errno != EEXIST)
		return hm_err_set(err, HM_ERR_IO, "cannot create %s: %s", path, strerror(errno));
	/* A step before us made it (or someone else did): check before trusting it. */
	if (lstat(path, &st) != 0)
		return hm_err_set(err, HM_ERR_IO, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return hm_err_set(err, HM_ERR_AUTH, "%s exists and is not a directory", path);
	if (st.st_uid != uid || (st.st_mode & 07777) != 0700)
		return hm_err_set(
		    err, HM_ERR_AUTH,
		    "%s is owned by uid %u with mode %04o (expected uid %u, mode 0700)", path,
		    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)uid);
	return HM_OK;
}
