/* Field tables: records <-> JSON objects (hm_fields.h). */
#include "hm_fields.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_json.h"

/* An integer field's value (every type but HM_F_DBL, HM_F_BOOL, strings, objects). */
static int64_t get_int(const hm_field_t *f, const char *p)
{
	switch (f->type) {
	case HM_F_I64:
		return *(const int64_t *)p;
	case HM_F_LONG:
		return *(const long *)p;
	case HM_F_ULONG:
		return (int64_t) * (const unsigned long *)p;
	case HM_F_INT:
		return *(const int *)p;
	case HM_F_U32:
		return *(const uint32_t *)p;
	default:
		return (int64_t) * (const uint64_t *)p;
	}
}

/* Store an integer into a numeric field (the casts of a plain assignment). */
static void put_int(const hm_field_t *f, char *p, int64_t i)
{
	switch (f->type) {
	case HM_F_I64:
		*(int64_t *)p = i;
		break;
	case HM_F_LONG:
		*(long *)p = (long)i;
		break;
	case HM_F_ULONG:
		*(unsigned long *)p = (unsigned long)i;
		break;
	case HM_F_INT:
		*(int *)p = (int)i;
		break;
	case HM_F_U32:
		*(uint32_t *)p = (uint32_t)i;
		break;
	case HM_F_DBL:
		*(double *)p = (double)i;
		break;
	default:
		*(uint64_t *)p = (uint64_t)i;
	}
}

/* A null (or, strict, absent) HM_F_NULL member: -1, or "" for a string. */
static void put_null(const hm_field_t *f, char *p)
{
	if (f->type == HM_F_STR)
		p[0] = '\0';
	else
		put_int(f, p, -1);
}

/* Whether f is written for rec (its condition, if any). */
static bool written(const hm_field_t *f, const void *rec)
{
	const bool *c = (const bool *)((const char *)rec + f->cond);

	return (f->flags & HM_F_IF) ? *c : (f->flags & HM_F_UNLESS) ? !*c : true;
}

/* f's JSON value, or NULL for an omitted or null one. */
static json_object *value_of(const hm_field_t *f, const char *p)
{
	switch (f->type) {
	case HM_F_STR:
		if ((f->flags & (HM_F_NEG | HM_F_NULL)) && !p[0])
			return NULL;
		return json_object_new_string(p);
	case HM_F_STRP:
		return json_object_new_string(*(char *const *)p ? *(char *const *)p : "");
	case HM_F_BOOL:
		return json_object_new_boolean(*(const bool *)p);
	case HM_F_OBJ:
		return hm_fields_new(f->sub, f->nsub, p);
	case HM_F_DBL:
		if ((f->flags & (HM_F_NEG | HM_F_NULL)) && *(const double *)p < 0)
			return NULL;
		return json_object_new_double(*(const double *)p);
	default:
		if ((f->flags & (HM_F_NEG | HM_F_NULL)) && get_int(f, p) < 0)
			return NULL;
		return json_object_new_int64(get_int(f, p));
	}
}

void hm_fields_encode(json_object *o, const hm_field_t *fs, size_t n, const void *rec)
{
	for (size_t i = 0; i < n; i++) {
		const hm_field_t *f = &fs[i];
		json_object *v;

		if (!written(f, rec))
			continue;
		v = value_of(f, (const char *)rec + f->off);
		if (v || (f->flags & HM_F_NULL))
			json_object_object_add(o, f->key, v);
	}
}

json_object *hm_fields_new(const hm_field_t *fs, size_t n, const void *rec)
{
	json_object *o = json_object_new_object();

	hm_fields_encode(o, fs, n, rec);
	return o;
}

/* ---- strict ----------------------------------------------------------------------- */

static bool in_charset(const char *s, const char *charset)
{
	for (; *s; s++)
		if (charset ? !strchr(charset, *s) : (*s < 0x20 || *s > 0x7e))
			return false;
	return true;
}

/* Store JSON integer v into the field after the range check. */
static hm_rc_t store_int(const hm_field_t *f, json_object *v, char *p, const char *path,
			 hm_err_t *err)
{
	int64_t i;

	if (!json_object_is_type(v, json_type_int))
		return hm_err_set(err, HM_ERR_PROTO, "%s.%s: '%s' is not an integer", path, f->key,
				  json_object_to_json_string(v));
	i = json_object_get_int64(v);
	if ((double)i < f->min || (double)i > f->max)
		return hm_err_set(err, HM_ERR_PROTO, "%s.%s: %s is not in [%.0f, %.0f]", path,
				  f->key, json_object_to_json_string(v), f->min, f->max);
	put_int(f, p, i);
	return HM_OK;
}

/* A string member: type, length (HM_F_STR: below size) and characters checked. */
static hm_rc_t check_str(const hm_field_t *f, json_object *v, const char *path, hm_err_t *err)
{
	const char *s;
	size_t len;

	if (!json_object_is_type(v, json_type_string))
		return hm_err_set(err, HM_ERR_PROTO, "%s.%s: '%s' is not a string", path, f->key,
				  json_object_to_json_string(v));
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if ((f->type == HM_F_STR && len >= f->size) || len < (size_t)f->min || strlen(s) != len ||
	    !in_charset(s, f->charset)) {
		if (f->type == HM_F_STR)
			return hm_err_set(
			    err, HM_ERR_PROTO,
			    "%s.%s: '%.60s' is not accepted (%.0f..%zu characters%s%s)", path,
			    f->key, s, f->min, f->size - 1, f->charset ? " of " : ", printable",
			    f->charset ? f->charset : "");
		return hm_err_set(err, HM_ERR_PROTO,
				  "%s.%s: '%.60s' is not accepted (%.0f or more characters%s%s)",
				  path, f->key, s, f->min, f->charset ? " of " : ", printable",
				  f->charset ? f->charset : "");
	}
	return HM_OK;
}

static hm_rc_t decode_field(const hm_field_t *f, json_object *v, char *p, const char *path,
			    hm_err_t *err)
{
	char sub[160];
	hm_rc_t rc;

	switch (f->type) {
	case HM_F_STR:
		if ((rc = check_str(f, v, path, err)) == HM_OK)
			memcpy(p, json_object_get_string(v),
			       (size_t)json_object_get_string_len(v) + 1);
		return rc;
	case HM_F_STRP:
		if ((rc = check_str(f, v, path, err)) != HM_OK)
			return rc;
		free(*(char **)p);
		if (!(*(char **)p = strdup(json_object_get_string(v))))
			return hm_err_set(err, HM_ERR_NOMEM, "%s.%s: out of memory", path, f->key);
		return HM_OK;
	case HM_F_OBJ:
		snprintf(sub, sizeof(sub), "%.120s.%.30s", path, f->key);
		return hm_fields_decode(v, f->sub, f->nsub, p, sub, err);
	case HM_F_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return hm_err_set(err, HM_ERR_PROTO, "%s.%s: '%s' is not true or false",
					  path, f->key, json_object_to_json_string(v));
		*(bool *)p = json_object_get_boolean(v);
		return HM_OK;
	case HM_F_DBL: {
		double d;

		if (!json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double))
			return hm_err_set(err, HM_ERR_PROTO, "%s.%s: '%s' is not a number", path,
					  f->key, json_object_to_json_string(v));
		d = json_object_get_double(v);
		if (!isfinite(d) || d < f->min || d > f->max)
			return hm_err_set(err, HM_ERR_PROTO, "%s.%s: %s is not in [%g, %g]", path,
					  f->key, json_object_to_json_string(v), f->min, f->max);
		*(double *)p = d;
		return HM_OK;
	}
	default:
		return store_int(f, v, p, path, err);
	}
}

hm_rc_t hm_fields_decode(json_object *o, const hm_field_t *fs, size_t n, void *rec,
			 const char *path, hm_err_t *err)
{
	if (!json_object_is_type(o, json_type_object))
		return hm_err_set(err, HM_ERR_PROTO, "%s: not a JSON object", path);
	for (size_t i = 0; i < n; i++) {
		const hm_field_t *f = &fs[i];
		char *p = (char *)rec + f->off;
		json_object *v = NULL;
		bool present = json_object_object_get_ex(o, f->key, &v);
		hm_rc_t rc;

		if (present && (f->flags & HM_F_IF))
			*(bool *)((char *)rec + f->cond) = true;
		if (present && !v && (f->flags & HM_F_NULL)) {
			put_null(f, p);
			continue;
		}
		if (!present) {
			if (f->flags & HM_F_REQ)
				return hm_err_set(err, HM_ERR_PROTO, "%s.%s: missing", path,
						  f->key);
			if (f->flags & (HM_F_NULL | HM_F_NEG))
				put_null(f, p); /* -1, or "" for a string */
			continue;
		}
		if ((rc = decode_field(f, v, p, path, err)) != HM_OK)
			return rc;
	}
	return HM_OK;
}

/* ---- lenient ---------------------------------------------------------------------- */

/* Copy s into a buffer of size bytes, cut to fit (a display or a record copy). */
static void copy_cut(char *buf, size_t size, const char *s)
{
	size_t len = strnlen(s, size - 1);

	memcpy(buf, s, len);
	buf[len] = '\0';
}

hm_rc_t hm_fields_read(json_object *o, const hm_field_t *fs, size_t n, void *rec)
{
	hm_rc_t rc = HM_OK;

	if (!o || !json_object_is_type(o, json_type_object))
		return HM_OK;
	for (size_t i = 0; i < n; i++) {
		const hm_field_t *f = &fs[i];
		char *p = (char *)rec + f->off;
		json_object *v = NULL;

		if (!json_object_object_get_ex(o, f->key, &v))
			continue;
		if (f->flags & HM_F_IF)
			*(bool *)((char *)rec + f->cond) = true;
		if (!v && (f->flags & HM_F_NULL)) {
			put_null(f, p); /* "not reported", as the encoder meant it */
			continue;
		}
		switch (f->type) {
		case HM_F_STR:
			copy_cut(p, f->size, hm_json_str(o, f->key));
			break;
		case HM_F_STRP:
			free(*(char **)p);
			if (!(*(char **)p = strdup(hm_json_str(o, f->key))))
				rc = HM_ERR_NOMEM;
			break;
		case HM_F_OBJ:
			if (hm_fields_read(v, f->sub, f->nsub, p) != HM_OK)
				rc = HM_ERR_NOMEM;
			break;
		case HM_F_BOOL:
			*(bool *)p = json_object_get_boolean(v);
			break;
		case HM_F_DBL:
			*(double *)p = json_object_get_double(v);
			break;
		default:
			put_int(f, p, json_object_get_int64(v));
		}
	}
	return rc;
}

void hm_fields_free(const hm_field_t *fs, size_t n, void *rec)
{
	for (size_t i = 0; i < n; i++) {
		char *p = (char *)rec + fs[i].off;

		if (fs[i].type == HM_F_STRP) {
			free(*(char **)p);
			*(char **)p = NULL;
		} else if (fs[i].type == HM_F_OBJ) {
			hm_fields_free(fs[i].sub, fs[i].nsub, p);
		}
	}
}
