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
#include "hm_log.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define STATE_VERSION 1

static int64_t get_i64(json_object *o, const char *key)
{
	return hm_json_i64(o, key);
}

static double get_dbl(json_object *o, const char *key)
{
	return hm_json_dbl(o, key);
}

static const char *get_str(json_object *o, const char *key)
{
	return hm_json_str(o, key);
}

static json_object *decision_json(const hm_decision_t *d)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "shift_s", json_object_new_double(d->shift_s));
	json_object_object_add(o, "period_s", json_object_new_double(d->period_s));
	json_object_object_add(o, "guard_s", json_object_new_double(d->guard_s));
	json_object_object_add(o, "origin_s", json_object_new_double(d->origin_s));
	json_object_object_add(o, "prio", json_object_new_int(d->prio));
	json_object_object_add(o, "path", json_object_new_int(d->path));
	json_object_object_add(o, "epoch", json_object_new_int64((int64_t)d->epoch));
	return o;
}

static void decision_from(json_object *o, hm_decision_t *d)
{
	memset(d, 0, sizeof(*d));
	d->shift_s = get_dbl(o, "shift_s");
	d->period_s = get_dbl(o, "period_s");
	d->guard_s = get_dbl(o, "guard_s");
	d->origin_s = get_dbl(o, "origin_s");
	d->prio = (int)get_i64(o, "prio");
	d->path = (int)get_i64(o, "path");
	d->epoch = (unsigned long)get_i64(o, "epoch");
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
	for (int i = 0; i < c->njobs; i++) {
		const hm_cjob_t *j = &c->jobs[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "job_id", json_object_new_int64(j->job_id));
		json_object_object_add(o, "uid", json_object_new_int64(j->uid));
		json_object_object_add(o, "name", json_object_new_string(j->name));
		json_object_object_add(o, "nodes", json_object_new_string(j->nodes));
		json_object_object_add(o, "gpus_per_node", json_object_new_int(j->gpus_per_node));
		json_object_object_add(o, "mode", json_object_new_string(j->mode));
		json_object_object_add(o, "profile", json_object_new_string(j->profile_spec));
		json_object_object_add(o, "start_s", json_object_new_double(j->start_s));
		json_object_object_add(o, "registered_steps",
				       json_object_new_int(j->registered_steps));
		json_object_object_add(o, "decided", json_object_new_boolean(j->decided));
		json_object_object_add(o, "assignment", hm_json_assignment(&j->a));
		json_object_object_add(o, "decision", decision_json(&j->dec));
		if (j->measured) {
			json_object *m = json_object_new_object();

			json_object_object_add(m, "iter_s", json_object_new_double(j->meas.iter_s));
			json_object_object_add(m, "compute_s",
					       json_object_new_double(j->meas.compute_s));
			json_object_object_add(m, "comm_s", json_object_new_double(j->meas.comm_s));
			json_object_object_add(m, "iter_sd_s",
					       json_object_new_double(j->meas.iter_sd_s));
			json_object_object_add(m, "bytes", json_object_new_double(j->meas.bytes));
			json_object_object_add(o, "measured", m);
		}
		json_object_array_add(jobs, o);
	}
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
	c->epoch = (unsigned long)get_i64(root, "epoch");
	c->last_decide_s = get_dbl(root, "last_decide_s"); /* epochs continue their rhythm */
	for (int i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(jobs, (size_t)i), *a, *d, *m;
		hm_coord_job_info_t info = {
		    .job_id = (uint32_t)get_i64(o, "job_id"),
		    .uid = (uint32_t)get_i64(o, "uid"),
		    .name = get_str(o, "name"),
		    .nodes = get_str(o, "nodes"),
		    .gpus_per_node = (int)get_i64(o, "gpus_per_node"),
		};
		hm_cjob_t *j;

		if (!*info.nodes || hm_coord_find(c, info.job_id)) {
			hm_log(HM_LOG_INFO, "state file %s: job entry %d skipped (%s)", path, i,
			       *info.nodes ? "duplicate job id" : "no nodes");
			continue;
		}
		if (!(j = hm_coord_add(c, &info))) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "out of memory");
			break;
		}
		j->job_id = info.job_id;
		j->uid = info.uid;
		snprintf(j->name, sizeof(j->name), "%s", info.name);
		j->gpus_per_node = info.gpus_per_node;
		snprintf(j->mode, sizeof(j->mode), "%s", get_str(o, "mode"));
		snprintf(j->profile_spec, sizeof(j->profile_spec), "%s", get_str(o, "profile"));
		j->start_s = get_dbl(o, "start_s");
		j->registered_steps = (int)get_i64(o, "registered_steps");
		if (json_object_object_get_ex(o, "measured", &m)) {
			j->measured = true;
			j->meas.iter_s = get_dbl(m, "iter_s");
			j->meas.compute_s = get_dbl(m, "compute_s");
			j->meas.comm_s = get_dbl(m, "comm_s");
			j->meas.iter_sd_s = get_dbl(m, "iter_sd_s");
			j->meas.bytes = get_dbl(m, "bytes");
		}
		hm_coord_derive(c, j);
		j->decided =
		    json_object_object_get_ex(o, "decided", &v) && json_object_get_boolean(v);
		if (json_object_object_get_ex(o, "assignment", &a))
			hm_json_assignment_parse(a, &j->a);
		if (json_object_object_get_ex(o, "decision", &d))
			decision_from(d, &j->dec);
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
