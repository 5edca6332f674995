/* State file: the job table and decisions as JSON, written atomically (tmp + rename). */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hm_clock.h"
#include "hm_coord_int.h"
#include "hm_coord_json.h"
#include "hm_fields.h"
#include "hm_log.h"

#define STATE_VERSION 1

static const hm_field_t decision_fields[] = {
    HM_FIELD(hm_decision_t, shift_s, "shift_s", HM_F_DBL),
    HM_FIELD(hm_decision_t, period_s, "period_s", HM_F_DBL),
    HM_FIELD(hm_decision_t, guard_s, "guard_s", HM_F_DBL),
    HM_FIELD(hm_decision_t, origin_s, "origin_s", HM_F_DBL),
    HM_FIELD(hm_decision_t, prio, "prio", HM_F_INT),
    HM_FIELD(hm_decision_t, path, "path", HM_F_INT),
    HM_FIELD(hm_decision_t, epoch, "epoch", HM_F_ULONG),
};

/* A job of the state file: what Slurm said, what was decided, what was measured. */
static const hm_field_t job_fields[] = {
    HM_FIELD(hm_cjob_t, job_id, "job_id", HM_F_U32),
    HM_FIELD(hm_cjob_t, uid, "uid", HM_F_U32),
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
out:
	if (fd >= 0)
		close(fd);
	if (rc != HM_OK)
		unlink(tmp);
	json_object_put(root);
	return rc;
}

hm_rc_t hm_coord_state_load(hm_coord_t *c, const char *path, hm_err_t *err)
{
	json_object *root = NULL, *jobs, *v;
	hm_rc_t rc = HM_OK;
	int n;

	if (access(path, F_OK) != 0 && errno == ENOENT)
		return hm_err_set(err, HM_ERR_NOTFOUND, "state file %s does not exist", path);
	if (!(root = json_object_from_file(path))) {
		rc = hm_err_set(err, HM_ERR_PARSE, "state file %s: not valid JSON: %s", path,
				json_util_get_last_err() ? json_util_get_last_err() : "?");
		goto out;
	}
	if (!json_object_object_get_ex(root, "version", &v) ||
	    json_object_get_int(v) != STATE_VERSION ||
	    !json_object_object_get_ex(root, "jobs", &jobs) ||
	    !json_object_is_type(jobs, json_type_array)) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"state file %s: not a version %d harmonics state (no jobs array)",
				path, STATE_VERSION);
		goto out;
	}
	n = (int)json_object_array_length(jobs);
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < c->njobs; i++) {
		hm_cjob_clear_derived(&c->jobs[i]);
		free(c->jobs[i].nodes);
	}
	c->njobs = 0;
	c->need_decide = false; /* the loaded decisions stand; arrivals below re-set it */
	c->had_departure = false;
	c->epoch = (unsigned long)hm_json_i64(root, "epoch");
	c->last_decide_s = hm_json_dbl(root, "last_decide_s"); /* epochs continue their rhythm */
	for (int i = 0; i < n; i++) {
		hm_cjob_t *in = calloc(1, sizeof(*in)), *j = NULL;

		if (!in || hm_fields_read(json_object_array_get_idx(jobs, (size_t)i), job_fields,
					  HM_NFIELDS(job_fields), in) != HM_OK) {
			if (in)
				hm_fields_free(job_fields, HM_NFIELDS(job_fields), in);
			free(in);
			rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
			break;
		}
		if (!in->nodes || !*in->nodes || hm_coord_find(c, in->job_id)) {
			hm_log(HM_LOG_INFO, "state file %s: job entry %d skipped (%s)", path, i,
			       in->nodes && *in->nodes ? "duplicate job id" : "no nodes");
		} else if ((j = hm_coord_add(c, &(hm_coord_job_info_t){.nodes = in->nodes}))) {
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
	hm_log(HM_LOG_INFO, "state file %s: %d jobs restored, epoch %lu", path, c->njobs, c->epoch);
	pthread_mutex_unlock(&c->mu);
out:
	json_object_put(root);
	return rc;
}
