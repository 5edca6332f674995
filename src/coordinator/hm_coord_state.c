/* State file: the job table and decisions as JSON, written atomically (tmp + rename). */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hm_agent_wire.h"
#include "hm_classes.h"
#include "hm_clock.h"
#include "hm_coord_int.h"
#include "hm_coord_json.h"
#include "hm_fields.h"
#include "hm_log.h"

#define STATE_VERSION 1

/*
 * Strict loading: after the lenient read (strings cut to fit, as they were
 * written), every number and flag of an entry is decoded again through these
 * tables, against the ranges the agents' wire decoder uses (hm_agent_wire.c):
 * a value out of range refuses its entry by name ("jobs[3].assignment.prio: 9
 * is not in [0, 7]"). Members absent from an older file keep the lenient read.
 */
#define ST_TIME_S_MAX  1e11    /* about the year 5000: later is not a time */
#define ST_TIME_US_MAX 4611686018427387904.0 /* 2^62, the wire's bound */
#define ST_SPAN_S_MAX  3600.0  /* periods, shifts, guards: the runtime's one hour */
#define ST_SPAN_US_MAX 3600000000.0
#define ST_PATH_MAX    65535.0
#define ST_COUNT_MAX   2147483647.0
#define CK(st, m, k, t, lo, hi) HM_FIELD_CHECKED(st, m, k, t, lo, hi, 0, NULL)

/* A decision; its ranges serve the strict second read (below). */
static const hm_field_t decision_fields[] = {
    CK(hm_decision_t, shift_s, "shift_s", HM_F_DBL, 0, ST_SPAN_S_MAX),
    CK(hm_decision_t, period_s, "period_s", HM_F_DBL, 0, ST_SPAN_S_MAX),
    CK(hm_decision_t, guard_s, "guard_s", HM_F_DBL, 0, ST_SPAN_S_MAX),
    CK(hm_decision_t, origin_s, "origin_s", HM_F_DBL, 0, ST_TIME_S_MAX),
    CK(hm_decision_t, prio, "prio", HM_F_INT, 0, HM_PRIO_MAX),
    CK(hm_decision_t, path, "path", HM_F_INT, 0, ST_PATH_MAX),
    CK(hm_decision_t, epoch, "epoch", HM_F_ULONG, 0, HM_AW_EPOCH_MAX),
};

/* A job of the state file: what Slurm said, what was decided, what was measured. */
static const hm_field_t job_fields[] = {
    HM_FIELD(hm_cjob_t, job_id, "job_id", HM_F_U32),
    HM_FIELD(hm_cjob_t, uid, "uid", HM_F_U32),
    HM_FIELD(hm_cjob_t, account, "account", HM_F_STR),
    HM_FIELD(hm_cjob_t, name, "name", HM_F_STR),
    HM_FIELD(hm_cjob_t, nodes, "nodes", HM_F_STRP),
    HM_FIELD(hm_cjob_t, gpus_per_node, "gpus_per_node", HM_F_INT),
    HM_FIELD(hm_cjob_t, mode, "mode", HM_F_STR),
    HM_FIELD(hm_cjob_t, profile_spec, "profile", HM_F_STR),
    HM_FIELD(hm_cjob_t, start_s, "start_s", HM_F_DBL),
    HM_FIELD(hm_cjob_t, registered_steps, "registered_steps", HM_F_INT),
    HM_FIELD(hm_cjob_t, decided, "decided", HM_F_BOOL),
    HM_FIELD_OBJ(hm_cjob_t, a, "assignment", hm_assignment_fields),
    HM_FIELD_OBJ(hm_cjob_t, dec, "decision", decision_fields),
    HM_FIELD_OBJ_WHEN(hm_cjob_t, meas, "measured", hm_measure_fields, HM_F_IF, measured),
};

static const hm_field_t assignment_checked[] = {
    CK(hm_assignment_t, scheduled, "scheduled", HM_F_BOOL, 0, 1),
    CK(hm_assignment_t, period_us, "period_us", HM_F_I64, 0, ST_SPAN_US_MAX),
    CK(hm_assignment_t, shift_us, "shift_us", HM_F_I64, 0, ST_SPAN_US_MAX),
    CK(hm_assignment_t, origin_us, "origin_us", HM_F_I64, 0, ST_TIME_US_MAX),
    CK(hm_assignment_t, guard_us, "guard_us", HM_F_I64, 0, ST_SPAN_US_MAX),
    CK(hm_assignment_t, prio, "prio", HM_F_INT, 0, HM_PRIO_MAX),
    CK(hm_assignment_t, path, "path", HM_F_INT, 0, ST_PATH_MAX),
    CK(hm_assignment_t, epoch, "epoch", HM_F_ULONG, 0, HM_AW_EPOCH_MAX),
    CK(hm_assignment_t, decided_us, "decided_us", HM_F_I64, 0, ST_TIME_US_MAX),
    CK(hm_assignment_t, valid_until_us, "valid_until_us", HM_F_I64, 0, ST_TIME_US_MAX),
};

static const hm_field_t job_checked[] = {
    HM_FIELD_CHECKED(hm_cjob_t, job_id, "job_id", HM_F_U32, 1, HM_AW_JOB_ID_MAX, HM_F_REQ, NULL),
    CK(hm_cjob_t, uid, "uid", HM_F_U32, 0, 4294967294.0),
    /* Checked, not cut: a cut account could name another one (who may see the job). */
    CK(hm_cjob_t, account, "account", HM_F_STR, 0, 0),
    CK(hm_cjob_t, gpus_per_node, "gpus_per_node", HM_F_INT, 0, 65535),
    CK(hm_cjob_t, start_s, "start_s", HM_F_DBL, 0, ST_TIME_S_MAX),
    CK(hm_cjob_t, registered_steps, "registered_steps", HM_F_INT, 0, ST_COUNT_MAX),
    CK(hm_cjob_t, decided, "decided", HM_F_BOOL, 0, 1),
    {"assignment", HM_F_OBJ, offsetof(hm_cjob_t, a), sizeof(hm_assignment_t), 0, 0, 0, NULL,
     assignment_checked, HM_NFIELDS(assignment_checked), 0},
    {"decision", HM_F_OBJ, offsetof(hm_cjob_t, dec), sizeof(hm_decision_t), 0, 0, 0, NULL,
     decision_fields, HM_NFIELDS(decision_fields), 0},
    {"measured", HM_F_OBJ, offsetof(hm_cjob_t, meas), sizeof(hm_coord_measure_t), 0, 0, HM_F_IF,
     NULL, hm_measure_fields, HM_MEASURE_NFIELDS, offsetof(hm_cjob_t, measured)},
};

/*
 * Epochs across a state loss. Agents and the pacing runtime key one-time delays
 * (and "applied" reports) on the decision epoch, so an epoch must never be handed
 * out twice. When the coordinator starts without state (no file, or a corrupt one
 * kept aside), its counter starts at the wall clock: seconds since
 * HM_EPOCH_CLOCK_ORIGIN (2020-01-01 UTC), capped at half the wire's bound of
 * 2^31-1 (reached in 2054) so that the counter keeps room to grow. The counter
 * moves by one per decision run that changed something, so while such runs average at most one a second since the counter was last set
 * from the clock (epochs come every EpochLength seconds, arrivals and departures
 * at Slurm's pace), every epoch handed out before a loss is below the clock at the
 * loss, and the first epoch after it is strictly greater. A loaded file never
 * lowers the counter.
 */
#define HM_EPOCH_CLOCK_ORIGIN 1577836800.0

static unsigned long clock_epoch(void)
{
	double s = floor(hm_real_s() - HM_EPOCH_CLOCK_ORIGIN);

	if (s < 0)
		return 0;
	return s > (double)HM_AW_EPOCH_MAX / 2 ? (unsigned long)(HM_AW_EPOCH_MAX / 2)
					       : (unsigned long)s;
}

/* Starting without state: the epoch counter continues from the clock (above). */
static void start_empty(hm_coord_t *c)
{
	unsigned long e = clock_epoch();

	pthread_mutex_lock(&c->mu);
	if (c->epoch < e)
		c->epoch = e;
	pthread_mutex_unlock(&c->mu);
}

/*
 * A corrupt file is kept aside, never overwritten by the next save: renamed to
 * <path>.corrupt.<unix seconds>, with .N added when that exists. Returns the
 * rename's errno (0 on success); aside receives the name.
 */
static int keep_aside(const char *path, char *aside, size_t len)
{
	long now = (long)hm_real_s();

	snprintf(aside, len, "%s.corrupt.%ld", path, now);
	for (int k = 1; access(aside, F_OK) == 0 && k < 1000; k++)
		snprintf(aside, len, "%s.corrupt.%ld.%d", path, now, k);
	if (access(aside, F_OK) == 0)
		return EEXIST;
	/* link + unlink: never replaces an existing file, unlike rename */
	if (link(path, aside) != 0)
		return errno;
	if (unlink(path) != 0)
		return errno;
	return 0;
}

/* fsync the directory holding path, so that a rename into it is on disk. */
static hm_rc_t sync_dir(const char *path, hm_err_t *err)
{
	char dir[HM_CONF_PATH_MAX + 8];
	const char *slash = strrchr(path, '/');
	int fd, rc = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return hm_err_set(err, HM_ERR_IO, "state file %s: directory %s: %s", path, dir,
				  strerror(errno));
	if (fsync(fd) != 0)
		rc = errno;
	close(fd);
	if (rc)
		return hm_err_set(err, HM_ERR_IO, "state file %s: fsync of directory %s: %s", path,
				  dir, strerror(rc));
	return HM_OK;
}

hm_rc_t hm_coord_state_save(hm_coord_t *c, const char *path, hm_err_t *err)
{
	json_object *root = json_object_new_object(), *jobs = json_object_new_array();
	char tmp[HM_CONF_PATH_MAX + 8];
	const char *text;
	size_t tlen;
	int fd = -1;
	hm_rc_t rc = HM_OK;

	pthread_mutex_lock(&c->mu);
	json_object_object_add(root, "version", json_object_new_int(STATE_VERSION));
	json_object_object_add(root, "epoch", json_object_new_int64((int64_t)c->epoch));
	json_object_object_add(root, "policy", json_object_new_string(c->conf.policy));
	json_object_object_add(root, "saved_s", json_object_new_double(hm_real_s()));
	json_object_object_add(root, "last_decide_s", json_object_new_double(c->last_decide_s));
	for (int i = 0; i < c->njobs; i++)
		json_object_array_add(
		    jobs, hm_fields_new(job_fields, HM_NFIELDS(job_fields), &c->jobs[i]));
	pthread_mutex_unlock(&c->mu);
	json_object_object_add(root, "jobs", jobs);
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	tlen = strlen(text);

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		rc = hm_err_set(err, HM_ERR_IO, "state file %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (write(fd, text, tlen) != (ssize_t)tlen || write(fd, "\n", 1) != 1 || fsync(fd) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "state file %s: write: %s", tmp, strerror(errno));
		goto out;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = hm_err_set(err, HM_ERR_IO, "state file %s: close: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "state file %s: rename to %s: %s", tmp, path,
				strerror(errno));
		goto out;
	}
	rc = sync_dir(path, err); /* the rename itself survives a crash only then */
out:
	if (fd >= 0)
		close(fd);
	if (rc != HM_OK && access(tmp, F_OK) == 0)
		unlink(tmp);
	json_object_put(root);
	pthread_mutex_lock(&c->mu);
	c->state_unsaved = rc != HM_OK; /* hm_coord_sync retries until a save succeeds */
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/*
 * Whole file or one entry: a file that is not JSON, not version 1 or whose own
 * members (epoch, last_decide_s, the jobs array) are out of range is refused
 * whole, kept aside (keep_aside) and the coordinator starts empty. A job entry
 * with a bad value costs only that entry: it is refused by name with an ERROR
 * line, the others are restored (their jobs' steps ask again and get a new
 * decision at the next run; the refused job is re-added by Slurm's job list).
 */
static hm_rc_t refuse_file(hm_coord_t *c, const char *path, hm_err_t *err, hm_rc_t rc,
			   const char *cause)
{
	char aside[HM_CONF_PATH_MAX + 48], why[200];
	int e;

	snprintf(why, sizeof(why), "%s", cause);
	e = keep_aside(path, aside, sizeof(aside));
	start_empty(c);
	if (e)
		return hm_err_set(err, rc, "state file %s: %s; could not keep it aside as %s: %s",
				  path, why, aside, strerror(e));
	return hm_err_set(err, rc, "state file %s: %s; kept aside as %s", path, why, aside);
}

hm_rc_t hm_coord_state_load(hm_coord_t *c, const char *path, hm_err_t *err)
{
	json_object *root = NULL, *jobs, *v;
	hm_rc_t rc = HM_OK;
	char cause[256];
	double last_decide_s = 0;
	int64_t epoch = 0;
	int n, refused = 0;

	if (access(path, F_OK) != 0 && errno == ENOENT) {
		start_empty(c);
		return hm_err_set(err, HM_ERR_NOTFOUND, "state file %s does not exist", path);
	}
	if (!(root = json_object_from_file(path))) {
		snprintf(cause, sizeof(cause), "not valid JSON: %s",
			 json_util_get_last_err() ? json_util_get_last_err() : "?");
		for (char *q = cause; *q; q++) /* json-c's message ends in a newline */
			if (*q == '\n')
				*q = ' ';
		rc = refuse_file(c, path, err, HM_ERR_PARSE, cause);
		goto out;
	}
	if (!json_object_object_get_ex(root, "version", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int(v) != STATE_VERSION ||
	    !json_object_object_get_ex(root, "jobs", &jobs) ||
	    !json_object_is_type(jobs, json_type_array)) {
		snprintf(cause, sizeof(cause), "not a version %d harmonics state (no jobs array)",
			 STATE_VERSION);
		rc = refuse_file(c, path, err, HM_ERR_PARSE, cause);
		goto out;
	}
	if (json_object_object_get_ex(root, "epoch", &v) &&
	    (!json_object_is_type(v, json_type_int) || (epoch = json_object_get_int64(v)) < 0 ||
	     epoch > HM_AW_EPOCH_MAX)) {
		snprintf(cause, sizeof(cause), "epoch: %.40s is not in [0, %ld]",
			 json_object_to_json_string(v), (long)HM_AW_EPOCH_MAX);
		rc = refuse_file(c, path, err, HM_ERR_PARSE, cause);
		goto out;
	}
	if (json_object_object_get_ex(root, "last_decide_s", &v) &&
	    ((!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) ||
	     !isfinite(last_decide_s = json_object_get_double(v)) || last_decide_s < 0 ||
	     last_decide_s > ST_TIME_S_MAX)) {
		snprintf(cause, sizeof(cause), "last_decide_s: %.40s is not in [0, %g]",
			 json_object_to_json_string(v), ST_TIME_S_MAX);
		rc = refuse_file(c, path, err, HM_ERR_PARSE, cause);
		goto out;
	}
	n = (int)json_object_array_length(jobs);
	hm_coord_lock_mut(c); /* the table is replaced: not under a policy run */
	for (int i = 0; i < c->njobs; i++) {
		hm_cjob_clear_derived(&c->jobs[i]);
		free(c->jobs[i].nodes);
	}
	c->njobs = 0;
	hm_coord_index_clear(&c->index);
	c->need_decide = false; /* the loaded decisions stand; arrivals below re-set it */
	c->had_departure = false;
	if ((unsigned long)epoch > c->epoch) /* never lowered (see clock_epoch) */
		c->epoch = (unsigned long)epoch;
	c->last_decide_s = last_decide_s; /* epochs continue their rhythm */
	for (int i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(jobs, (size_t)i);
		hm_cjob_t *in = calloc(1, sizeof(*in)), *j = NULL;
		char where[32];
		hm_err_t berr = {0};

		if (!in || hm_fields_read(o, job_fields, HM_NFIELDS(job_fields), in) != HM_OK) {
			if (in)
				hm_fields_free(job_fields, HM_NFIELDS(job_fields), in);
			free(in);
			rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
			break;
		}
		snprintf(where, sizeof(where), "jobs[%d]", i);
		if (hm_fields_decode(o, job_checked, HM_NFIELDS(job_checked), in, where, &berr) !=
		    HM_OK) {
			hm_log(HM_LOG_ERROR, "state file %s: %s; entry refused", path, berr.msg);
			if (!refused++) /* the first one, for the caller */
				hm_err_set(err, HM_ERR_PROTO, "state file %s: %s; entry refused",
					   path, berr.msg);
		} else if (!in->nodes || !*in->nodes || hm_coord_find(c, in->job_id)) {
			hm_log(HM_LOG_INFO, "state file %s: job entry %d skipped (%s)", path, i,
			       in->nodes && *in->nodes ? "duplicate job id" : "no nodes");
		} else if ((j = hm_coord_add(c, &(hm_coord_job_info_t){.job_id = in->job_id,
									.nodes = in->nodes}))) {
			char *nodes = j->nodes; /* add's copy; the entry is otherwise as read */

			*j = *in;
			j->nodes = nodes;
		} else {
			rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		}
		hm_fields_free(job_fields, HM_NFIELDS(job_fields), in);
		free(in);
		if (rc != HM_OK)
			break;
		if (!j)
			continue;
		hm_coord_derive(c, j);
		/* Restored jobs are not arrivals: their decisions stand until something
		   changes. */
		j->arrived = !j->decided && j->schedulable;
		if (j->arrived)
			c->need_decide = true;
		if (j->a.epoch > c->epoch)
			c->epoch = j->a.epoch;
	}
	hm_log(HM_LOG_INFO, "state file %s: %d jobs restored, %d refused, epoch %lu", path,
	       c->njobs, refused, c->epoch);
	pthread_mutex_unlock(&c->mu);
out:
	json_object_put(root);
	return rc;
}
