/*
 * Contract B's rack exchange (docs/protocol.md): rack_round (coordinator ->
 * the rack's leader) and rack_result (leader -> coordinator). The job and
 * decision records are field tables; their link lists are written out here.
 * Doubles travel as json-c writes them (17 significant digits), so a decoded
 * request is bit for bit the one the coordinator built.
 */
#include "hm_rack_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_fields.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))
#define SEC_MAX      3600.0 /* one hour: periods, bursts, shifts */
#define IDX_MAX      2147483647.0
#define ROUND_MAX    9007199254740992.0 /* 2^53 */

static const hm_field_t round_fields[] = {
    HM_FIELD_CHECKED(hm_rack_req_t, rack, "rack_idx", HM_F_INT, 0, IDX_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_req_t, round, "round", HM_F_ULONG, 0, ROUND_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_req_t, shift_grid, "shift_grid", HM_F_INT, 1, 4096, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_req_t, hold_min_gain, "hold_min_gain", HM_F_DBL, 0, 1, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_req_t, guard_s, "guard_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
};

static const hm_field_t job_fields[] = {
    HM_FIELD_CHECKED(hm_rack_job_t, idx, "i", HM_F_INT, 0, IDX_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, job_id, "job_id", HM_F_LONG, 0, IDX_MAX, 0, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, cross, "cross", HM_F_BOOL, 0, 1, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, burst_s, "burst_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, T_s, "T_s", HM_F_DBL, 1e-9, SEC_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, sd_s, "sd_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, R_s, "R_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, partnered, "partnered", HM_F_BOOL, 0, 1, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, prev_P_s, "prev_P_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, prev_s_s, "prev_s_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, hold, "hold", HM_F_BOOL, 0, 1, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, P_s, "P_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_job_t, s_s, "s_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
};

static const hm_field_t result_fields[] = {
    HM_FIELD_CHECKED(hm_rack_rep_t, rack, "rack_idx", HM_F_INT, 0, IDX_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_rep_t, round, "round", HM_F_ULONG, 0, ROUND_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_rep_t, solve_ms, "solve_ms", HM_F_DBL, 0, 3.6e6, HM_F_REQ, NULL),
};

static const hm_field_t dec_fields[] = {
    HM_FIELD_CHECKED(hm_rack_dec_t, idx, "i", HM_F_INT, 0, IDX_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_dec_t, hold, "hold", HM_F_BOOL, 0, 1, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_dec_t, P_s, "P_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_dec_t, s_s, "s_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(hm_rack_dec_t, guard_s, "guard_s", HM_F_DBL, 0, SEC_MAX, HM_F_REQ, NULL),
};

void hm_rw_round_encode(json_object *o, const hm_rack_req_t *q)
{
	json_object *jobs = json_object_new_array();

	hm_fields_encode(o, round_fields, HM_NFIELDS(round_fields), q);
	for (int i = 0; i < q->njobs; i++) {
		const hm_rack_job_t *j = &q->jobs[i];
		json_object *e = hm_fields_new(job_fields, HM_NFIELDS(job_fields), j);
		json_object *l = json_object_new_array(), *d = json_object_new_array();
		for (int k = 0; k < j->nlinks; k++) {
			json_object_array_add(l, json_object_new_int(j->links[k]));
			json_object_array_add(d, json_object_new_double(j->demand[k]));
		}
		ADD(e, "links", l);
		ADD(e, "demand", d);
		json_object_array_add(jobs, e);
	}
	ADD(o, "jobs", jobs);
}

/* One job's link list into the request's pool from *used. */
static hm_rc_t decode_links(json_object *e, hm_rack_job_t *j, hm_rack_req_t *q, int *used, int cap,
			    const char *path, hm_err_t *err)
{
	json_object *l, *d;
	size_t nl, nd;
	hm_rc_t rc = hm_aw_get_array(e, "links", HM_RACK_MAX_LINKS, true, &l, &nl, path, err);

	if (rc == HM_OK)
		rc = hm_aw_get_array(e, "demand", HM_RACK_MAX_LINKS, true, &d, &nd, path, err);
	if (rc != HM_OK)
		return rc;
	if (nl != nd)
		return hm_err_set(err, HM_ERR_PROTO, "%s: %zu links but %zu demands", path, nl, nd);
	if (*used + (int)nl > cap)
		return hm_err_set(err, HM_ERR_PROTO, "%s: more links than the request counted",
				  path);
	j->links = q->link_pool + *used;
	j->demand = q->dbl_pool + *used;
	j->nlinks = (int)nl;
	for (size_t k = 0; k < nl; k++) {
		json_object *lk = json_object_array_get_idx(l, k),
			    *dk = json_object_array_get_idx(d, k);
		if (!json_object_is_type(lk, json_type_int) || json_object_get_int64(lk) < 0 ||
		    json_object_get_int64(lk) > IDX_MAX)
			return hm_err_set(err, HM_ERR_PROTO,
					  "%s.links[%zu]: not a link index (accepted: integer in "
					  "[0, 2^31))",
					  path, k);
		if (!json_object_is_type(dk, json_type_double) &&
		    !json_object_is_type(dk, json_type_int))
			return hm_err_set(err, HM_ERR_PROTO, "%s.demand[%zu]: not a number", path,
					  k);
		j->links[k] = (int)json_object_get_int64(lk);
		j->demand[k] = json_object_get_double(dk);
	}
	*used += (int)nl;
	return HM_OK;
}

hm_rc_t hm_rw_round_decode(json_object *o, hm_rack_req_t *q, hm_err_t *err)
{
	json_object *jobs;
	size_t n;
	int total = 0, used = 0;
	char path[64];
	hm_rc_t rc =
	    hm_fields_decode(o, round_fields, HM_NFIELDS(round_fields), q, "rack_round", err);

	if (rc == HM_OK)
		rc = hm_aw_get_array(o, "jobs", HM_RACK_MAX_JOBS, true, &jobs, &n, "rack_round",
				     err);
	if (rc != HM_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		json_object *l;
		if (json_object_object_get_ex(json_object_array_get_idx(jobs, i), "links", &l) &&
		    json_object_is_type(l, json_type_array))
			total += (int)json_object_array_length(l);
	}
	{
		int rack = q->rack, shift_grid = q->shift_grid;
		unsigned long round = q->round;
		double gain = q->hold_min_gain, guard = q->guard_s;
		if ((rc = hm_rack_req_alloc(q, (int)n, total, err)) != HM_OK)
			return rc;
		q->rack = rack;
		q->round = round;
		q->shift_grid = shift_grid;
		q->hold_min_gain = gain;
		q->guard_s = guard;
	}
	for (size_t i = 0; rc == HM_OK && i < n; i++) {
		json_object *e = json_object_array_get_idx(jobs, i);
		snprintf(path, sizeof(path), "rack_round.jobs[%zu]", i);
		rc =
		    hm_fields_decode(e, job_fields, HM_NFIELDS(job_fields), &q->jobs[i], path, err);
		if (rc == HM_OK)
			rc = decode_links(e, &q->jobs[i], q, &used, total, path, err);
	}
	if (rc == HM_OK)
		rc = hm_rack_req_check(q, err);
	return rc;
}

void hm_rw_result_encode(json_object *o, const hm_rack_rep_t *p)
{
	json_object *a = json_object_new_array();

	hm_fields_encode(o, result_fields, HM_NFIELDS(result_fields), p);
	for (int i = 0; i < p->ndec; i++)
		json_object_array_add(
		    a, hm_fields_new(dec_fields, HM_NFIELDS(dec_fields), &p->dec[i]));
	ADD(o, "jobs", a);
}

hm_rc_t hm_rw_result_decode(json_object *o, hm_rack_rep_t *p, hm_err_t *err)
{
	json_object *a;
	size_t n;
	char path[64];
	hm_rc_t rc =
	    hm_fields_decode(o, result_fields, HM_NFIELDS(result_fields), p, "rack_result", err);

	if (rc == HM_OK)
		rc = hm_aw_get_array(o, "jobs", HM_RACK_MAX_JOBS, true, &a, &n, "rack_result", err);
	if (rc != HM_OK)
		return rc;
	if (!(p->dec = calloc(n + 1, sizeof(*p->dec))))
		return hm_err_set(err, HM_ERR_NOMEM, "out of memory for %zu decisions", n);
	p->ndec = (int)n;
	for (size_t i = 0; rc == HM_OK && i < n; i++) {
		snprintf(path, sizeof(path), "rack_result.jobs[%zu]", i);
		rc = hm_fields_decode(json_object_array_get_idx(a, i), dec_fields,
				      HM_NFIELDS(dec_fields), &p->dec[i], path, err);
	}
	p->answered = rc == HM_OK;
	p->by_leader = rc == HM_OK;
	return rc;
}
