/* Contract A on the agent's side: directories, the assign file, reports, cleanup. */
#include "agent_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hm_clock.h"
#include "pace_report_read.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* A directory we keep for root: ours, nobody else may write in it. */
static hm_rc_t check_own_dir(int fd, const char *path, hm_err_t *err)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return hm_err_set(err, HM_ERR_IO, "%s: fstat: %s", path, strerror(errno));
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return hm_err_set(err, HM_ERR_AUTH,
				  "%s: owned by uid %u with mode %04o (accepted: owned by uid %u, "
				  "not writable by group or others)",
				  path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
				  (unsigned)geteuid());
	return HM_OK;
}

/* Why an O_NOFOLLOW|O_DIRECTORY open of name failed with e, in words. */
static const char *what_is(int dir_fd, const char *name, int e)
{
	struct stat st;

	if ((e == ELOOP || e == ENOTDIR) && fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory";
	return strerror(e);
}

/* mkdir -p of an absolute path, each new level 0755. */
static hm_rc_t make_path(const char *path, hm_err_t *err)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return hm_err_set(err, HM_ERR_RANGE, "%.60s...: path too long", path);
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;

			*p = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST)
				return hm_err_set(err, HM_ERR_IO, "%s: cannot create: %s", buf,
						  strerror(errno));
			*p = c;
			if (c == '\0')
				break;
		}
	}
	return HM_OK;
}

int agent_node_dir_open(const char *run_dir, const char *node, hm_err_t *err)
{
	char path[4352];
	int run_fd = -1, fd = -1;
	bool created = false;

	snprintf(path, sizeof(path), "%s/%s", run_dir, node);
	if (make_path(run_dir, err) != HM_OK)
		goto fail;
	if ((run_fd = open(run_dir, DIR_FLAGS)) < 0) {
		hm_err_set(err, errno == ELOOP || errno == ENOTDIR ? HM_ERR_AUTH : HM_ERR_IO,
			   "%s: cannot open as a directory: %s", run_dir, strerror(errno));
		goto fail;
	}
	if (check_own_dir(run_fd, run_dir, err) != HM_OK)
		goto fail;
	if (mkdirat(run_fd, node, 0755) == 0)
		created = true;
	else if (errno != EEXIST) {
		hm_err_set(err, HM_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
		goto fail;
	}
	if ((fd = openat(run_fd, node, DIR_FLAGS)) < 0) {
		hm_err_set(err, errno == ELOOP || errno == ENOTDIR ? HM_ERR_AUTH : HM_ERR_IO,
			   "%s: cannot open as a directory: %s", path,
			   what_is(run_fd, node, errno));
		goto fail;
	}
	/* Steps run as their users and must traverse it whatever the umask. */
	if (created && fchmod(fd, 0755) != 0) {
		hm_err_set(err, HM_ERR_IO, "%s: chmod 0755: %s", path, strerror(errno));
		goto fail;
	}
	if (check_own_dir(fd, path, err) != HM_OK)
		goto fail;
	close(run_fd);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	if (run_fd >= 0)
		close(run_fd);
	return -1;
}

int agent_job_dir_open(int node_fd, long job_id, uint32_t want_uid, uint32_t *owner, hm_err_t *err)
{
	char name[32];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "job.%ld", job_id);
	if ((fd = openat(node_fd, name, DIR_FLAGS)) < 0) {
		if (errno == ENOENT)
			hm_err_set(err, HM_ERR_NOTFOUND, "%s: no such directory", name);
		else
			hm_err_set(err,
				   errno == ELOOP || errno == ENOTDIR ? HM_ERR_AUTH : HM_ERR_IO,
				   "%s: not used: %s (accepted: a real directory)", name,
				   what_is(node_fd, name, errno));
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		hm_err_set(err, HM_ERR_IO, "%s: fstat: %s", name, strerror(errno));
		goto fail;
	}
	if ((want_uid != AGENT_ANY_UID && st.st_uid != want_uid) || (st.st_mode & 077)) {
		char want[32] = "the job's user";

		if (want_uid != AGENT_ANY_UID)
			snprintf(want, sizeof(want), "uid %u", (unsigned)want_uid);
		hm_err_set(err, HM_ERR_AUTH,
			   "%s: owned by uid %u with mode %04o: not used (accepted: owned by %s, "
			   "mode 0700)",
			   name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), want);
		goto fail;
	}
	if (owner)
		*owner = (uint32_t)st.st_uid;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Create the temporary file, never through a planted link; one retry after removing one. */
static int create_tmp(int job_fd, const char *tmp, bool *planted, hm_err_t *err)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		int fd =
		    openat(job_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

		if (fd >= 0)
			return fd;
		if (errno != EEXIST || attempt > 0)
			break;
		/* Whatever is there (a link, a file, a FIFO) is removed, never opened. */
		*planted = true;
		if (unlinkat(job_fd, tmp, 0) != 0)
			break;
	}
	hm_err_set(err, HM_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
	return -1;
}

hm_rc_t agent_write_assign(int job_fd, const char *text, size_t len, bool *planted, hm_err_t *err)
{
	char tmp[64];
	bool dummy = false;
	int fd;
	hm_rc_t rc = HM_OK;

	if (!planted)
		planted = &dummy;
	*planted = false;
	snprintf(tmp, sizeof(tmp), AGENT_ASSIGN_NAME ".tmp.%ld", (long)getpid());
	if ((fd = create_tmp(job_fd, tmp, planted, err)) < 0)
		return HM_ERR_IO;
	/* The umask must not narrow it: the job's user reads it through the 0700 dir. */
	if (fchmod(fd, 0644) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "%s: chmod: %s", tmp, strerror(errno));
		goto out_with_tmp;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = hm_err_set(err, HM_ERR_IO, "%s: write: %s", tmp,
					n < 0 ? strerror(errno) : "no progress");
			goto out_with_tmp;
		}
		off += (size_t)n;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = hm_err_set(err, HM_ERR_IO, "%s: close: %s", tmp, strerror(errno));
		goto out_with_tmp;
	}
	fd = -1;
	if (renameat(job_fd, tmp, job_fd, AGENT_ASSIGN_NAME) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "rename %s -> " AGENT_ASSIGN_NAME ": %s", tmp,
				strerror(errno));
		goto out_with_tmp;
	}
	return HM_OK;
out_with_tmp:
	if (fd >= 0)
		close(fd);
	unlinkat(job_fd, tmp, 0);
	return rc;
}

bool agent_report_name(const char *name, char *step, size_t step_len, int *rank)
{
	const char *s, *dot;
	size_t n;
	char *end;
	long r;

	if (strncmp(name, "report.", 7) != 0 || strstr(name, ".tmp."))
		return false;
	s = name + 7;
	if (!(dot = strchr(s, '.')))
		return false;
	n = (size_t)(dot - s);
	if (n < 1 || n > 31 || n >= step_len ||
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != n)
		return false;
	if (dot[1] < '0' || dot[1] > '9' || strlen(dot + 1) > 8)
		return false;
	errno = 0;
	r = strtol(dot + 1, &end, 10);
	if (errno || *end || r < 0 || r >= (1L << 24))
		return false;
	memcpy(step, s, n);
	step[n] = '\0';
	*rank = (int)r;
	return true;
}

hm_rc_t agent_read_report(int job_fd, const char *name, uint32_t uid, char *buf, size_t cap,
			  size_t *len, struct stat *st, hm_err_t *err)
{
	size_t limit = cap < PACE_REPORT_MAX_BYTES + 1 ? cap : PACE_REPORT_MAX_BYTES + 1;
	size_t got = 0;
	int fd = openat(job_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	hm_rc_t rc = HM_OK;

	*len = 0;
	if (fd < 0) {
		if (errno == ENOENT)
			return hm_err_set(err, HM_ERR_NOTFOUND, "%s: gone", name);
		return hm_err_set(err, errno == ELOOP ? HM_ERR_AUTH : HM_ERR_IO, "%s: %s", name,
				  errno == ELOOP ? "a symbolic link: not read" : strerror(errno));
	}
	if (fstat(fd, st) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "%s: fstat: %s", name, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st->st_mode) || st->st_uid != uid) {
		rc = hm_err_set(err, HM_ERR_AUTH,
				"%s: %s owned by uid %u: not read (accepted: a regular file owned "
				"by uid %u)",
				name, S_ISREG(st->st_mode) ? "a file" : "not a regular file",
				(unsigned)st->st_uid, (unsigned)uid);
		goto out;
	}
	if ((size_t)st->st_size >= limit) {
		rc = hm_err_set(err, HM_ERR_RANGE, "%s: %lld bytes (accepted: at most %d)", name,
				(long long)st->st_size, PACE_REPORT_MAX_BYTES);
		goto out;
	}
	while (got < limit) {
		ssize_t n = read(fd, buf + got, limit - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = hm_err_set(err, HM_ERR_IO, "%s: read: %s", name, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got >= limit) /* grew while read */
		rc = hm_err_set(err, HM_ERR_RANGE, "%s: more than %d bytes", name,
				PACE_REPORT_MAX_BYTES);
	else
		*len = got;
out:
	close(fd);
	return rc;
}

/* Call fn for each entry name of the directory fd (at most AGENT_MAX_ENTRIES). */
static int each_entry(int fd, void (*fn)(const char *name, void *arg), void *arg)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d;
	struct dirent *e;
	int n = 0;

	if (dup_fd < 0)
		return -1;
	if (!(d = fdopendir(dup_fd))) {
		close(dup_fd);
		return -1;
	}
	rewinddir(d);
	while (n < AGENT_MAX_ENTRIES && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		n++;
		fn(e->d_name, arg);
	}
	closedir(d);
	return n;
}

typedef struct {
	long *ids;
	int n, max;
} job_list_t;

static void add_job(const char *name, void *arg)
{
	job_list_t *l = arg;
	char *end;
	long id;

	if (strncmp(name, "job.", 4) != 0 || name[4] < '1' || name[4] > '9' || l->n >= l->max)
		return;
	errno = 0;
	id = strtol(name + 4, &end, 10);
	if (!errno && !*end && id > 0 && id <= 2147483647L)
		l->ids[l->n++] = id;
}

int agent_list_jobs(int node_fd, long *ids, int max)
{
	job_list_t l = {ids, 0, max};

	each_entry(node_fd, add_job, &l);
	return l.n;
}

typedef struct {
	char (*names)[AGENT_REPORT_NAME];
	int n, max;
} report_list_t;

static void add_report(const char *name, void *arg)
{
	report_list_t *l = arg;
	char step[32];
	int rank;

	if (l->n < l->max && strlen(name) < AGENT_REPORT_NAME &&
	    agent_report_name(name, step, sizeof(step), &rank))
		snprintf(l->names[l->n++], AGENT_REPORT_NAME, "%s", name);
}

int agent_list_reports(int job_fd, char (*names)[AGENT_REPORT_NAME], int max)
{
	report_list_t l = {names, 0, max};

	each_entry(job_fd, add_report, &l);
	return l.n;
}

int64_t agent_job_dir_mtime_us(int job_fd)
{
	struct stat st;

	/* The directory's own time: an entry created, renamed (the runtime replaces its
	   reports so) or removed changes it; not a stat per entry and beat. */
	if (fstat(job_fd, &st) != 0)
		return 0;
	return (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
}

/*
 * Removal of a job's tree, which its user shaped: only *at calls on directory
 * fds opened with O_NOFOLLOW (a link is removed, never followed), at most
 * RM_DEPTH directories open at once, and at most RM_ENTRIES entries looked at
 * per call. A directory deeper than RM_DEPTH is moved up to the job's directory
 * (renameat, same file system) and emptied on a later pass, so any depth costs
 * passes, not descriptors or stack; what a call leaves, the next one goes on with.
 */
#define RM_DEPTH   16
#define RM_ENTRIES 20000
#define RM_PASSES  64

/* The cleanup's time slice (CLOCK_MONOTONIC us, 0: none): the agent's loop sets
   it around one cleanup, so removals cost a beat at most that much. */
static __thread int64_t rm_deadline_us;
static __thread bool rm_deadline_hit;

void agent_remove_deadline(int64_t deadline_us)
{
	rm_deadline_us = deadline_us;
	rm_deadline_hit = false;
}

bool agent_remove_deadline_hit(void)
{
	return rm_deadline_hit;
}

static bool past_deadline(void)
{
	if (rm_deadline_us && hm_clock_us(CLOCK_MONOTONIC) >= rm_deadline_us)
		rm_deadline_hit = true;
	return rm_deadline_hit;
}

/* Names of moved-up directories (.hm-rm.N): never reused by this thread, so a
   call does not move a directory onto one an earlier call left (its own
   ancestor, when that one is still deeper than a call opens). */
static __thread unsigned long rm_name_seq;
#define RM_NAME_TRIES 16 /* names tried when one is taken (a restarted agent's) */

typedef struct {
	int top;          /* the job's directory */
	long budget;      /* entries still to look at in this call */
	bool failed, moved;
} rm_ctx_t;

typedef struct {
	rm_ctx_t *ctx;
	int fd, depth;
	bool failed;
	long removed; /* entries the current listing removed */
} rm_t;

static void remove_entry(const char *name, void *arg);

/* Empty the directory fd, depth levels of nesting below it opened at most. */
static bool empty_dir(rm_ctx_t *ctx, int fd, int depth)
{
	rm_t r = {ctx, fd, depth, false, 0};

	/* A listing sees AGENT_MAX_ENTRIES at most: list again while the last one
	   removed something (a listing that removes nothing would not change). */
	while (ctx->budget > 0) {
		r.removed = 0;
		if (each_entry(fd, remove_entry, &r) <= 0 || r.removed == 0)
			break;
	}
	return !r.failed && ctx->budget > 0;
}

static void remove_entry(const char *name, void *arg)
{
	rm_t *r = arg;
	int sub;

	if (r->ctx->budget-- <= 0 || past_deadline()) {
		r->ctx->budget = 0; /* the call ends here: HM_ERR_BUDGET */
		r->failed = true;
		return;
	}
	if (unlinkat(r->fd, name, 0) == 0 || errno == ENOENT) {
		r->removed++;
		return;
	}
	if (errno != EISDIR) {
		r->failed = true;
		return;
	}
	if (r->depth <= 0) { /* too deep to open: up to the top, for a later pass */
		char up[48];
		int rc, tries = 0;

		do {
			snprintf(up, sizeof(up), ".hm-rm.%lu", rm_name_seq++);
			rc = renameat(r->fd, name, r->ctx->top, up);
		} while (rc != 0 && (errno == EEXIST || errno == ENOTEMPTY || errno == ENOTDIR) &&
			 ++tries < RM_NAME_TRIES);
		if (rc == 0) {
			r->ctx->moved = true;
			r->removed++;
		} else {
			r->failed = true;
		}
		return;
	}
	if ((sub = openat(r->fd, name, DIR_FLAGS)) < 0) {
		r->failed = true;
		return;
	}
	if (!empty_dir(r->ctx, sub, r->depth - 1) || unlinkat(r->fd, name, AT_REMOVEDIR) != 0)
		r->failed = true;
	else
		r->removed++;
	close(sub);
}

hm_rc_t agent_remove_job_dir(int node_fd, long job_id, hm_err_t *err)
{
	char name[32];
	int fd;
	bool emptied;

	snprintf(name, sizeof(name), "job.%ld", job_id);
	if (past_deadline())
		return hm_err_set(err, HM_ERR_BUDGET,
				  "%s: removal waits for the next cleanup slice", name);
	if ((fd = openat(node_fd, name, DIR_FLAGS)) < 0) {
		if (errno == ENOENT)
			return HM_OK;
		if (errno == ELOOP || errno == ENOTDIR) /* not a directory: remove the entry */
			return unlinkat(node_fd, name, 0) == 0
				   ? HM_OK
				   : hm_err_set(err, HM_ERR_IO, "%s: unlink: %s", name,
						strerror(errno));
		return hm_err_set(err, HM_ERR_IO, "%s: %s", name, strerror(errno));
	}
	{
		rm_ctx_t ctx = {.top = fd, .budget = RM_ENTRIES};

		for (int pass = 0; pass < RM_PASSES; pass++) {
			ctx.moved = false;
			emptied = empty_dir(&ctx, fd, RM_DEPTH);
			if (emptied || !ctx.moved || ctx.budget <= 0)
				break;
		}
		close(fd);
		if (!emptied && (ctx.budget <= 0 || ctx.moved))
			return hm_err_set(
			    err, HM_ERR_BUDGET,
			    "%s: removal goes on at the next cleanup (a call looks at "
			    "%d entries, %d levels deep, at most)",
			    name, RM_ENTRIES, RM_DEPTH * RM_PASSES);
	}
	if (!emptied || unlinkat(node_fd, name, AT_REMOVEDIR) != 0)
		return hm_err_set(err, HM_ERR_IO, "%s: cannot remove: %s", name,
				  emptied ? strerror(errno) : "an entry stays");
	return HM_OK;
}
