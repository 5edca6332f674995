/* The agent's job table: assign files written, report files read, directories cleaned. */
#include "agent_jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hm_pace_env.h"

#define REPORT_BUF (PACE_REPORT_MAX_BYTES + 1)

void agent_jobs_free(agent_jobs_t *js)
{
	for (int i = 0; i < js->njobs; i++) {
		free(js->jobs[i]->tasks);
		free(js->jobs[i]);
	}
	js->njobs = 0;
	free(js->names);
	free(js->buf);
	js->names = NULL;
	js->buf = NULL;
}

/* ---- the assign file ------------------------------------------------------------ */

int64_t agent_promote_at_us(const hm_aw_job_assign_t *d)
{
	int64_t p;

	if (!d->scheduled || !d->has_next)
		return INT64_MAX;
	p = d->cur.period_us > d->next.period_us ? d->cur.period_us : d->next.period_us;
	return d->next_effective_us + p + AGENT_PROMOTE_SLACK_US;
}

/* Append printf output to buf at *off; false when it does not fit. */
static bool put(char *buf, size_t len, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool put(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return false;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *off)
		return false;
	*off += (size_t)n;
	return true;
}

static bool put_sched(char *buf, size_t len, size_t *off, const char *pre, const hm_aw_sched_t *s)
{
	return put(buf, len, off,
		   "HARMONICS_%sMODE=%s\nHARMONICS_%sPERIOD_US=%" PRId64
		   "\nHARMONICS_%sSHIFT_US=%" PRId64 "\nHARMONICS_%sORIGIN_US=%" PRId64
		   "\nHARMONICS_%sGUARD_US=%" PRId64
		   "\nHARMONICS_%sPRIO=%d\nHARMONICS_%sEPOCH=%ld\n",
		   pre, s->policy, pre, s->period_us, pre, s->shift_us, pre, s->origin_us, pre,
		   s->guard_us, pre, s->prio, pre, s->epoch);
}

hm_rc_t agent_assign_text(long job_id, const hm_aw_job_assign_t *d, int64_t now_us,
			  int64_t valid_until_us, char *buf, size_t len, hm_err_t *err)
{
	bool promote = now_us >= agent_promote_at_us(d);
	const hm_aw_sched_t *cur = promote ? &d->next : &d->cur;
	size_t off = 0;
	bool ok = put(buf, len, &off, "# written by the harmonics node agent; do not edit\n");
	pace_assign_t check;
	hm_rc_t rc;

	if (!d->scheduled)
		ok = ok && put(buf, len, &off, HM_PACE_ENV_MODE "=" HM_PACE_MODE_OFF "\n");
	else
		ok = ok && put_sched(buf, len, &off, "", cur);
	ok = ok && put(buf, len, &off,
		       HM_PACE_ENV_JOB_ID "=%ld\n" HM_PACE_ENV_VALID_UNTIL_US "=%" PRId64 "\n",
		       job_id, valid_until_us);
	if (d->scheduled && d->has_next && !promote)
		ok = ok &&
		     put(buf, len, &off, HM_PACE_ENV_NEXT_EFFECTIVE_US "=%" PRId64 "\n",
			 d->next_effective_us) &&
		     put_sched(buf, len, &off, "NEXT_", &d->next);
	if (!ok)
		return hm_err_set(err, HM_ERR_RANGE, "job %ld: assign text longer than %zu bytes",
				  job_id, len);
	/* The runtime's own parser: never write what the steps would refuse. */
	pace_assign_clear(&check);
	if ((rc = pace_assign_parse_text(&check, buf, "assign", err)) != HM_OK ||
	    (rc = pace_assign_validate(&check, "assign", err)) != HM_OK) {
		hm_err_prefix(err, "job %ld: the coordinator's decision is refused", job_id);
		return rc;
	}
	return HM_OK;
}

/* ---- the table ------------------------------------------------------------------ */

agent_job_t *agent_jobs_get(agent_jobs_t *js, long job_id, bool create)
{
	agent_job_t *j;

	for (int i = 0; i < js->njobs; i++)
		if (js->jobs[i]->job_id == job_id)
			return js->jobs[i];
	if (!create || js->njobs >= AGENT_MAX_JOBS || !(j = calloc(1, sizeof(*j))))
		return NULL;
	j->job_id = job_id;
	js->jobs[js->njobs++] = j;
	return j;
}

static void drop_job(agent_jobs_t *js, int i)
{
	free(js->jobs[i]->tasks);
	free(js->jobs[i]);
	js->jobs[i] = js->jobs[--js->njobs];
}

static bool same_decision(const hm_aw_job_assign_t *a, const hm_aw_job_assign_t *b)
{
	return a->scheduled == b->scheduled && a->uid == b->uid &&
	       memcmp(&a->cur, &b->cur, sizeof(a->cur)) == 0 && a->has_next == b->has_next &&
	       (!a->has_next || (a->next_effective_us == b->next_effective_us &&
				 memcmp(&a->next, &b->next, sizeof(a->next)) == 0));
}

void agent_jobs_apply(agent_jobs_t *js, const hm_aw_node_assign_t *na, int64_t now_ms,
		      const hm_logger_t *lg)
{
	bool was_listed[AGENT_MAX_JOBS];
	int n0 = js->njobs; /* jobs added below are appended: indexes below n0 stay */

	for (int i = 0; i < n0; i++) {
		was_listed[i] = js->jobs[i]->listed;
		js->jobs[i]->listed = false;
	}
	for (int k = 0; k < na->njobs; k++) {
		const hm_aw_job_assign_t *d = &na->jobs[k];
		agent_job_t *j = agent_jobs_get(js, d->job_id, true);

		if (!j) {
			hm_log_once(lg, &js->full_once, HM_LOG_ERROR,
				    "more than %d jobs on this node: job %ld is not served",
				    AGENT_MAX_JOBS, d->job_id);
			continue;
		}
		if (!same_decision(&j->decision, d))
			j->written = false;
		j->decision = *d;
		j->listed = j->ever_listed = true;
		j->unlisted_since_ms = 0;
	}
	for (int i = 0; i < n0; i++)
		if (was_listed[i] && !js->jobs[i]->listed)
			js->jobs[i]->unlisted_since_ms = now_ms;
}

/* Open the job's directory for writing its file; absent or refused: logged once. */
static int open_job_dir(int node_fd, agent_job_t *j, uint32_t want_uid, const hm_logger_t *lg)
{
	hm_err_t err = {0};
	int fd = agent_job_dir_open(node_fd, j->job_id, want_uid, NULL, &err);

	if (fd >= 0) {
		/* Only after an error: "not there yet" is every job's start (the
		 * coordinator lists it before its step makes the directory). */
		int was = j->dir_once.level;

		if (hm_log_once_clear(&j->dir_once) && was == HM_LOG_ERROR)
			hm_logf(lg, HM_LOG_INFO, "job %ld: its directory is usable again",
				j->job_id);
		return fd;
	}
	if (err.rc == HM_ERR_NOTFOUND)
		hm_log_once(lg, &j->dir_once, HM_LOG_VERBOSE,
			    "job %ld: no job directory on this node yet (its steps create it)",
			    j->job_id);
	else
		hm_log_once(lg, &j->dir_once, HM_LOG_ERROR,
			    "job %ld: %s; its steps run unscheduled", j->job_id, err.msg);
	return -1;
}

bool agent_jobs_write(agent_jobs_t *js, int node_fd, agent_job_t *j, int64_t now_us,
		      const hm_logger_t *lg)
{
	char text[AGENT_ASSIGN_TEXT_MAX];
	hm_err_t err = {0};
	bool planted = false;
	int fd;

	hm_aw_job_assign_t d;

	if (!j->listed)
		return false;
	d = j->decision;
	if (js->clock_free) { /* slots on a skewed clock: keep class and epoch, hold nothing */
		d.cur.period_us = d.cur.shift_us = 0;
		d.next.period_us = d.next.shift_us = 0;
	}
	if (agent_assign_text(j->job_id, &d, now_us, js->valid_until_us, text, sizeof(text),
			      &err) != HM_OK) {
		hm_log_once(lg, &j->write_once, HM_LOG_ERROR, "%s", err.msg);
		return false;
	}
	if ((fd = open_job_dir(node_fd, j, j->decision.uid, lg)) < 0)
		return false;
	if (agent_write_assign(fd, text, strlen(text), &planted, &err) != HM_OK) {
		hm_log_once(lg, &j->write_once, HM_LOG_ERROR,
			    "job %ld: cannot write its assign file: %s", j->job_id, err.msg);
		close(fd);
		return false;
	}
	close(fd);
	if (planted)
		hm_logf(lg, HM_LOG_INFO,
			"job %ld: removed an entry planted under the assign file's temporary "
			"name (not followed)",
			j->job_id);
	if (hm_log_once_clear(&j->write_once))
		hm_logf(lg, HM_LOG_INFO, "job %ld: assign file written again", j->job_id);
	if (!j->written)
		hm_logf(lg, HM_LOG_VERBOSE, "job %ld: assign file now epoch %ld%s", j->job_id,
			j->decision.cur.epoch, j->decision.has_next ? " (next pending)" : "");
	j->written = true;
	return true;
}

void agent_jobs_write_all(agent_jobs_t *js, int node_fd, int64_t now_us, const hm_logger_t *lg)
{
	for (int i = 0; i < js->njobs; i++)
		if (js->jobs[i]->listed)
			agent_jobs_write(js, node_fd, js->jobs[i], now_us, lg);
}

int64_t agent_jobs_next_promotion_us(const agent_jobs_t *js)
{
	int64_t t = INT64_MAX;

	for (int i = 0; i < js->njobs; i++) {
		const agent_job_t *j = js->jobs[i];
		int64_t p = j->listed ? agent_promote_at_us(&j->decision) : INT64_MAX;

		if (p < t)
			t = p;
	}
	return t;
}

void agent_jobs_promote(agent_jobs_t *js, int node_fd, int64_t now_us, const hm_logger_t *lg)
{
	for (int i = 0; i < js->njobs; i++) {
		agent_job_t *j = js->jobs[i];

		if (!j->listed || now_us < agent_promote_at_us(&j->decision))
			continue;
		agent_jobs_write(js, node_fd, j, now_us, lg);
		/* Written as current: the decision no longer has a pending next. */
		j->decision.cur = j->decision.next;
		j->decision.has_next = false;
	}
}

/* ---- reports ---------------------------------------------------------------------- */

static agent_task_t *get_task(agent_job_t *j, const char *name)
{
	agent_task_t *t;

	for (int i = 0; i < j->ntasks; i++)
		if (strcmp(j->tasks[i].name, name) == 0)
			return &j->tasks[i];
	if (j->ntasks >= AGENT_MAX_TASKS)
		return NULL;
	if (j->ntasks % 16 == 0) {
		agent_task_t *grown = realloc(j->tasks, (size_t)(j->ntasks + 16) * sizeof(*grown));

		if (!grown)
			return NULL;
		j->tasks = grown;
	}
	t = &j->tasks[j->ntasks++];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	agent_report_name(name, t->step, sizeof(t->step), &t->rank);
	return t;
}

static bool same_version(const agent_task_t *t, const struct stat *st)
{
	return st->st_ino == t->ino && st->st_size == t->size &&
	       (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec == t->mtime_ns;
}

static void remember_version(agent_task_t *t, const struct stat *st)
{
	t->stat_known = true;
	t->ino = st->st_ino;
	t->size = st->st_size;
	t->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Read one task's file when it changed; merge its window into the job's. */
static void read_task(agent_jobs_t *js, agent_job_t *j, int job_fd, uint32_t uid, agent_task_t *t,
		      const hm_logger_t *lg)
{
	struct stat st0, st;
	size_t len;
	pace_report_t cur;
	pace_window_t w;
	hm_err_t err = {0};
	hm_rc_t rc;
	bool have_st0 = fstatat(job_fd, t->name, &st0, AT_SYMLINK_NOFOLLOW) == 0;

	/* Stat first: a version already read, good or bad (most files, every beat),
	   is not opened again; a changed one past the scan's budget waits a beat. */
	if (have_st0) {
		if (t->stat_known && same_version(t, &st0))
			return;
		if (st0.st_size > 0 &&
		    js->scan_read_bytes + (size_t)st0.st_size > AGENT_SCAN_READ_MAX_BYTES)
			return;
	}
	rc = agent_read_report(job_fd, t->name, uid, js->buf, REPORT_BUF, &len, &st, &err);
	js->scan_read_bytes += len;
	if (rc == HM_ERR_NOTFOUND) {
		t->seen = false;
		return;
	}
	if (rc != HM_OK) {
		hm_log_once(lg, &t->once, HM_LOG_ERROR, "job %ld: %s", j->job_id, err.msg);
		if (have_st0)
			remember_version(t, &st0);
		return;
	}
	remember_version(t, &st);
	if (pace_report_parse(js->buf, len, t->name, &cur, &err) != HM_OK) {
		hm_log_once(lg, &t->once, HM_LOG_ERROR, "job %ld: report skipped: %s",
			       j->job_id, err.msg);
		return;
	}
	if (cur.job_id != -1 && cur.job_id != j->job_id) {
		hm_log_once(lg, &t->once, HM_LOG_ERROR,
			    "job %ld: %s is a report of job %ld: skipped", j->job_id, t->name,
			    cur.job_id);
		return;
	}
	/* Another rank or job in the same name is a new task: its window is its own. */
	if (pace_report_window(t->have_prev ? &t->prev : NULL, &cur, &w, &err) != HM_OK &&
	    pace_report_window(NULL, &cur, &w, &err) != HM_OK)
		return;
	if (hm_log_once_clear(&t->once))
		hm_logf(lg, HM_LOG_INFO, "job %ld: %s is readable again", j->job_id, t->name);
	pace_window_add(&j->pending, &w);
	t->prev = cur;
	t->have_prev = true;
}

static void scan_job(agent_jobs_t *js, int node_fd, agent_job_t *j, const hm_logger_t *lg)
{
	char(*names)[AGENT_REPORT_NAME] = js->names;
	uint32_t owner = 0;
	uint32_t want = j->listed ? j->decision.uid : AGENT_ANY_UID;
	int fd, n;
	hm_err_t err = {0};

	if ((fd = agent_job_dir_open(node_fd, j->job_id, want, &owner, &err)) < 0) {
		j->on_disk = err.rc != HM_ERR_NOTFOUND;
		if (err.rc != HM_ERR_NOTFOUND)
			hm_log_once(lg, &j->dir_once, HM_LOG_ERROR,
				    "job %ld: %s; its reports are not read", j->job_id, err.msg);
		return;
	}
	j->on_disk = true;
	j->newest_us = agent_job_dir_mtime_us(fd);
	for (int i = 0; i < j->ntasks; i++)
		j->tasks[i].seen = false;
	n = agent_list_reports(fd, names, AGENT_MAX_TASKS);
	for (int i = 0; i < n; i++) {
		agent_task_t *t = get_task(j, names[i]);

		if (!t)
			break;
		t->seen = true;
		read_task(js, j, fd, owner, t, lg);
	}
	/* Forget tasks whose file is gone. */
	for (int i = 0; i < j->ntasks;)
		if (!j->tasks[i].seen)
			j->tasks[i] = j->tasks[--j->ntasks];
		else
			i++;
	close(fd);
}

void agent_jobs_scan(agent_jobs_t *js, int node_fd, const hm_logger_t *lg)
{
	long ids[AGENT_MAX_JOBS];
	int n;

	if (!js->names && !(js->names = calloc(AGENT_MAX_TASKS, sizeof(*js->names))))
		return;
	if (!js->buf && !(js->buf = malloc(REPORT_BUF)))
		return;
	n = agent_list_jobs(node_fd, ids, AGENT_MAX_JOBS);
	for (int i = 0; i < js->njobs; i++)
		js->jobs[i]->on_disk = false;
	for (int i = 0; i < n; i++)
		if (!agent_jobs_get(js, ids[i], true))
			hm_log_once(lg, &js->full_once, HM_LOG_ERROR,
				       "more than %d jobs on this node: job %ld is not served",
				       AGENT_MAX_JOBS, ids[i]);
	js->scan_read_bytes = 0;
	for (int k = 0; k < js->njobs; k++)
		scan_job(js, node_fd, js->jobs[(js->scan_from + k) % js->njobs], lg);
	js->scan_from = js->njobs ? (js->scan_from + 1) % js->njobs : 0;
}

/* A task counts while its process exists or its report is recent (a step in a PID
 * namespace of its own has a PID we cannot check). */
static bool task_live(const agent_task_t *t, int64_t now_us)
{
	if (!t->have_prev)
		return false;
	if (now_us - t->prev.updated_us < (int64_t)AGENT_CLEAN_GRACE_MS * 1000)
		return true;
	return t->prev.pid > 0 && (kill((pid_t)t->prev.pid, 0) == 0 || errno == EPERM);
}

void agent_jobs_state(const agent_jobs_t *js, int64_t now_us, hm_aw_node_state_t *out,
		      const hm_logger_t *lg, hm_log_once_t *once)
{
	out->njobs = 0;
	for (int i = 0; i < js->njobs; i++) {
		const agent_job_t *j = js->jobs[i];
		hm_aw_job_state_t *s;
		char steps[AGENT_MAX_TASKS][32];
		int nsteps = 0;

		if (!j->listed && !j->on_disk)
			continue;
		if (out->njobs >= HM_AW_MAX_JOBS) {
			hm_log_once(lg, once, HM_LOG_ERROR,
				    "more than %d jobs on this node: the beat carries the first",
				    HM_AW_MAX_JOBS);
			break;
		}
		s = &out->jobs[out->njobs++];
		memset(s, 0, sizeof(*s));
		s->job_id = j->job_id;
		s->applied_epoch = -1;
		for (int k = 0; k < j->ntasks; k++) {
			const agent_task_t *t = &j->tasks[k];
			bool known = false;

			if (!task_live(t, now_us))
				continue;
			s->ranks++;
			for (int m = 0; m < nsteps && !known; m++)
				known = strcmp(steps[m], t->step) == 0;
			if (!known)
				snprintf(steps[nsteps++], sizeof(steps[0]), "%s", t->step);
			if (t->prev.applied_epoch >= 0 &&
			    (s->applied_epoch < 0 || t->prev.applied_epoch < s->applied_epoch))
				s->applied_epoch = t->prev.applied_epoch;
			/* The lowest priority where tasks differ (hm_agent_wire.h). */
			if (t->prev.nccl_class >= 0 &&
			    (!s->has_nccl_class || t->prev.nccl_class > s->nccl_class)) {
				s->has_nccl_class = true;
				s->nccl_class = t->prev.nccl_class;
			}
		}
		s->steps = nsteps;
		if (j->pending.samples > 0) {
			hm_err_t err = {0};

			s->has_meas = agent_meas_of_window(&j->pending, &s->meas, &err);
			if (!s->has_meas)
				hm_log_once(lg, &js->jobs[i]->meas_once, HM_LOG_ERROR,
					       "job %ld: measurement window dropped: %s", j->job_id,
					       err.msg);
		}
	}
}

void agent_jobs_windows_sent(agent_jobs_t *js)
{
	for (int i = 0; i < js->njobs; i++)
		if (js->jobs[i]->pending.samples > 0)
			memset(&js->jobs[i]->pending, 0, sizeof(js->jobs[i]->pending));
}

void agent_jobs_cleanup(agent_jobs_t *js, int node_fd, int64_t now_ms, int64_t now_us,
			const hm_logger_t *lg)
{
	for (int i = 0; i < js->njobs;) {
		agent_job_t *j = js->jobs[i];
		hm_err_t err = {0};

		bool keep;

		if (!j->found_ms)
			j->found_ms = now_ms;
		if (j->listed)
			keep = true;
		else if (j->ever_listed)
			keep = now_ms - j->unlisted_since_ms < AGENT_CLEAN_GRACE_MS;
		else
			keep = now_ms - j->found_ms < AGENT_UNLISTED_MAX_MS &&
			       j->on_disk &&
			       now_us - j->newest_us < (int64_t)AGENT_CLEAN_GRACE_MS * 1000;
		if (keep) {
			i++;
			continue;
		}
		if (j->on_disk && agent_remove_job_dir(node_fd, j->job_id, &err) != HM_OK) {
			hm_log_once(lg, &j->dir_once,
				       err.rc == HM_ERR_BUDGET ? HM_LOG_VERBOSE
							       : HM_LOG_ERROR,
				       "job %ld ended: %s (retried)", j->job_id, err.msg);
			i++;
			continue;
		}
		if (j->on_disk)
			hm_logf(lg, HM_LOG_VERBOSE,
				"job %ld: no longer listed by the coordinator and quiet for "
				"%d s: its directory is removed",
				j->job_id, AGENT_CLEAN_GRACE_MS / 1000);
		drop_job(js, i);
	}
}
