/*
 * One round of a host's job mirror (hm_coord_sync): the Slurm-free half of the
 * sched plugin's loop, so that tests drive it without slurmctld.
 */
#include <stdlib.h>
#include <string.h>

#include "hm_coord_int.h"
#include "hm_log.h"

static int cmp_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Membership in a sorted id list: a sync compares 10,000 jobs with 10,000. */
static bool listed_id(const uint32_t *ids, int n, uint32_t id)
{
	return n > 0 && bsearch(&id, ids, (size_t)n, sizeof(*ids), cmp_id);
}

/* Slurm's job ids, sorted; NULL when out of memory (or none). */
static uint32_t *sorted_ids(const hm_coord_sync_job_t *jobs, int n)
{
	uint32_t *v = n > 0 ? malloc(sizeof(*v) * (size_t)n) : NULL;

	for (int i = 0; v && i < n; i++)
		v[i] = jobs[i].info.job_id;
	if (v)
		qsort(v, (size_t)n, sizeof(*v), cmp_id);
	return v;
}

void hm_coord_sync(hm_coord_t *c, const hm_coord_sync_job_t *jobs, int n, double now_s,
		   hm_coord_comment_fn store, void *arg, hm_coord_sync_result_t *out)
{
	hm_coord_sync_result_t r;
	char state_file[HM_CONF_PATH_MAX];
	size_t buf_len;
	uint32_t *ids = NULL, *running = sorted_ids(jobs, n);
	int nids = 0;
	bool retry;
	hm_err_t err = {0};
	char *buf = NULL;

	memset(&r, 0, sizeof(r));
	pthread_mutex_lock(&c->mu);
	memcpy(state_file, c->conf.state_file, sizeof(state_file));
	buf_len = c->conf.admin_comment_max_bytes + 1;
	retry = c->state_unsaved;
	pthread_mutex_unlock(&c->mu);

	/* Ended jobs leave the table (their history stays in AdminComment); out of
	   memory for Slurm's list, none is taken for ended. */
	if (hm_coord_job_ids(c, &ids, &nids) == HM_OK) {
		for (int i = 0; (running || n == 0) && i < nids; i++) {
			if (!listed_id(running, n, ids[i]) &&
			    hm_coord_job_remove(c, ids[i]) == HM_OK) {
				hm_log(HM_LOG_VERBOSE, "job %u ended", ids[i]);
				r.removed++;
			}
		}
	}
	if (ids)
		qsort(ids, (size_t)nids, sizeof(*ids), cmp_id);
	for (int i = 0; i < n; i++) {
		if (!listed_id(ids, nids, jobs[i].info.job_id)) /* first sight: how it was placed */
			hm_coord_note_placement(c, jobs[i].comment);
		memset(&err, 0, sizeof(err));
		if (hm_coord_job_upsert(c, &jobs[i].info, &err) != HM_OK)
			hm_log(HM_LOG_INFO, "job %u: %s", jobs[i].info.job_id, err.msg);
	}
	/* Racks whose leader went silent, and no other agent of theirs beat since. */
	hm_coord_leaders_check(c, now_s);
	memset(&err, 0, sizeof(err));
	if (hm_coord_decide(c, now_s, &r.changed, &err) != HM_OK)
		hm_log(HM_LOG_ERROR, "decide: %s", err.msg);
	buf = store ? malloc(buf_len) : NULL;
	for (int i = 0; buf && i < n; i++) {
		if (hm_coord_admin_comment(c, jobs[i].info.job_id, jobs[i].comment, buf, buf_len)) {
			store(arg, jobs[i].info.job_id, jobs[i].comment, buf);
			r.comments++;
		}
	}
	/* A failed save (a full StateSaveLocation) is retried every round, not only at
	   the next change, logged when it fails first and when it succeeds again. */
	if ((r.changed || r.comments || r.removed || retry) && state_file[0]) {
		memset(&err, 0, sizeof(err));
		r.saved = hm_coord_state_save(c, state_file, &err) == HM_OK;
		if (!r.saved && !retry)
			hm_log(HM_LOG_ERROR, "state: %s (retried every round)", err.msg);
		else if (r.saved && retry)
			hm_log(HM_LOG_INFO, "state: %s written again", state_file);
	}
	free(buf);
	free(ids);
	free(running);
	if (out)
		*out = r;
}
