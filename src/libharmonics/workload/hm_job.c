/*
 * hm_job.c - profiles of catalogue models, and the owning containers of jobs
 * (placements, workloads) with their free helpers.
 */
#include "hm_job.h"
#include "hm_job_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hm_rc_t hm_profile_from_model(const char *name, hm_profile_t *out, hm_err_t *err)
{
	const hm_model_t *m = hm_catalogue_find(name);
	char q[80];

	if (!out)
		return hm_err_set(err, HM_ERR_INVAL, "hm_profile_from_model: NULL output");
	if (!m)
		return hm_err_set(err, HM_ERR_NOTFOUND, "model: unknown model '%s'; accepted: %s",
				  hm_job_quote(name, q, sizeof(q)), hm_catalogue_names());
	memset(out, 0, sizeof(*out));
	snprintf(out->model, sizeof(out->model), "%s", m->name);
	out->compute_s = m->compute_s;
	/* Data parallel: one ring all-reduce of the whole gradient after backward. */
	out->nphases = 1;
	out->phases[0].coll = HM_COLL_ALLREDUCE_RING;
	out->phases[0].bytes = m->params * m->bytes_per_param;
	out->phases[0].overlap = 0;
	return HM_OK;
}

void hm_placement_free(hm_placement_t *p)
{
	if (!p)
		return;
	free(p->slots);
	p->slots = NULL;
	p->nslots = 0;
}

void hm_workload_free(hm_workload_t *w)
{
	if (!w)
		return;
	for (int i = 0; i < w->njobs; i++)
		free(w->jobs[i].nodes);
	free(w->jobs);
	w->jobs = NULL;
	w->njobs = 0;
}

const char *hm_job_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	if (!buf || len < 8)
		return buf && len ? (*buf = '\0', buf) : "";
	if (!s)
		s = "(null)";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char tmp[5];
		size_t n;

		if (c >= 0x20 && c < 0x7f) {
			tmp[0] = (char)c;
			n = 1;
		} else {
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		}
		if (o + n + 4 > len) { /* room for "..." and NUL */
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o] = '\0';
	return buf;
}

hm_rc_t hm_workload_push(hm_workload_t *w, int *cap, const hm_job_t *job, hm_err_t *err)
{
	if (w->njobs == *cap) {
		int ncap = *cap ? *cap * 2 : 64;
		hm_job_t *nj;

		if (ncap > 100000000)
			return hm_err_set(err, HM_ERR_RANGE, "workload: more than %d jobs", *cap);
		nj = realloc(w->jobs, (size_t)ncap * sizeof(*nj));
		if (!nj)
			return hm_err_set(err, HM_ERR_NOMEM, "workload: out of memory for %d jobs",
					  ncap);
		w->jobs = nj;
		*cap = ncap;
	}
	w->jobs[w->njobs] = *job;
	w->jobs[w->njobs].id = w->njobs;
	w->njobs++;
	return HM_OK;
}

/* Order by arrival, then by position before sorting (ids are the positions). */
static int cmp_arrival(const void *a, const void *b)
{
	const hm_job_t *x = a, *y = b;

	if (x->arrival_s != y->arrival_s)
		return x->arrival_s < y->arrival_s ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

hm_rc_t hm_workload_sort(hm_workload_t *w, hm_err_t *err)
{
	(void)err;
	for (int i = 0; i < w->njobs; i++)
		w->jobs[i].id = i;
	if (w->njobs > 1)
		qsort(w->jobs, (size_t)w->njobs, sizeof(*w->jobs), cmp_arrival);
	for (int i = 0; i < w->njobs; i++)
		w->jobs[i].id = i;
	return HM_OK;
}
