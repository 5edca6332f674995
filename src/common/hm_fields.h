/*
 * hm_fields.h - a record described once: a table of its members (JSON key,
 * type, offset, range) drives both directions of its JSON.
 *
 * Encoding writes the members in table order (the wire order). Two readers:
 *   hm_fields_decode  strict, for messages from peers (the node agent's
 *                     contract B): types and ranges checked, required members,
 *                     errors name the member path ("agent_beat.nodes[0].steps");
 *   hm_fields_read    lenient, as a client of the coordinator's replies and of
 *                     its own state file: an absent member leaves the field as
 *                     it is (callers zero the record first), null in an
 *                     HM_F_NULL member reads as -1 (a string as ""), a mistyped one reads as
 *                     json-c converts it (a non-string as ""), strings are cut
 *                     to fit their buffer.
 * Both ignore unknown members. Neither does I/O; thread-safe.
 */
#ifndef HM_FIELDS_H
#define HM_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "hm_error.h"

typedef enum {
	HM_F_I64,   /* int64_t */
	HM_F_LONG,  /* long */
	HM_F_ULONG, /* unsigned long (counters, epochs) */
	HM_F_INT,   /* int */
	HM_F_U32,   /* uint32_t */
	HM_F_U64,   /* uint64_t */
	HM_F_DBL,   /* double */
	HM_F_BOOL,  /* bool */
	HM_F_STR,   /* char[size] */
	HM_F_STRP,  /* char *, malloc'd (NULL encodes as "") */
	HM_F_OBJ,   /* a nested record: sub/nsub is its table */
} hm_ftype_t;

enum {
	HM_F_REQ = 1,     /* strict decoding: the member must be present */
	HM_F_NEG = 2,     /* numeric: omitted when < 0; absent decodes to -1;
			     HM_F_STR: omitted when "", absent decodes to "" */
	HM_F_NULL = 4,    /* numeric: null when < 0; null or absent decodes to -1;
			     HM_F_STR: null when "", null or absent decodes to "" */
	HM_F_IF = 8,      /* written when the bool at cond is true; present sets it true */
	HM_F_UNLESS = 16, /* written when the bool at cond is false */
};

typedef struct hm_field {
	const char *key;
	hm_ftype_t type;
	size_t off;
	size_t size;     /* HM_F_STR: buffer size, NUL included */
	double min, max; /* strict decoding: range; HM_F_STR(P): minimum length */
	unsigned flags;
	const char *charset;        /* HM_F_STR(P), strict: accepted (NULL: printable ASCII) */
	const struct hm_field *sub; /* HM_F_OBJ */
	size_t nsub;
	size_t cond; /* HM_F_IF, HM_F_UNLESS: offset of the bool member */
} hm_field_t;

#define HM_NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/* A member of struct st for the strict decoder: range, flags, characters. */
#define HM_FIELD_CHECKED(st, m, k, t, lo, hi, fl, cs)                                              \
	{                                                                                          \
		(k), (t), offsetof(st, m), sizeof(((st *)0)->m), (lo), (hi), (fl), (cs), NULL, 0,  \
		    0                                                                              \
	}
/* A member of struct st for the lenient reader (no range: not for hm_fields_decode). */
#define HM_FIELD(st, m, k, t)                                                                      \
	{                                                                                          \
		(k), (t), offsetof(st, m), sizeof(((st *)0)->m), 0, 0, 0, NULL, NULL, 0, 0         \
	}
/* The same with flags (HM_F_NEG, HM_F_NULL). */
#define HM_FIELD_FL(st, m, k, t, fl)                                                               \
	{                                                                                          \
		(k), (t), offsetof(st, m), sizeof(((st *)0)->m), 0, 0, (fl), NULL, NULL, 0, 0      \
	}
/* The same, written only if (HM_F_IF) or unless (HM_F_UNLESS) bool member c is true. */
#define HM_FIELD_WHEN(st, m, k, t, w, c)                                                           \
	{                                                                                          \
		(k), (t), offsetof(st, m), sizeof(((st *)0)->m), 0, 0, (w), NULL, NULL, 0,         \
		    offsetof(st, c)                                                                \
	}
/* A nested record member m with its own table. */
#define HM_FIELD_OBJ(st, m, k, table)                                                              \
	{                                                                                          \
		(k), HM_F_OBJ, offsetof(st, m), sizeof(((st *)0)->m), 0, 0, 0, NULL, (table),      \
		    HM_NFIELDS(table), 0                                                           \
	}
#define HM_FIELD_OBJ_WHEN(st, m, k, table, w, c)                                                   \
	{                                                                                          \
		(k), HM_F_OBJ, offsetof(st, m), sizeof(((st *)0)->m), 0, 0, (w), NULL, (table),    \
		    HM_NFIELDS(table), offsetof(st, c)                                             \
	}

/* Add rec's members to object o. */
void hm_fields_encode(json_object *o, const hm_field_t *fs, size_t n, const void *rec);
/* A new object with rec's members (caller json_object_put()s it). */
json_object *hm_fields_new(const hm_field_t *fs, size_t n, const void *rec);

/* Strict: fill rec from o; HM_ERR_PROTO names path.key and the bad value. */
hm_rc_t hm_fields_decode(json_object *o, const hm_field_t *fs, size_t n, void *rec,
			 const char *path, hm_err_t *err);

/* Lenient: fill rec from o (NULL or not an object: nothing read). HM_ERR_NOMEM
   only, when an HM_F_STRP copy failed (that member is then NULL). */
hm_rc_t hm_fields_read(json_object *o, const hm_field_t *fs, size_t n, void *rec);

/* Free rec's HM_F_STRP members (nested ones too) and set them NULL. */
void hm_fields_free(const hm_field_t *fs, size_t n, void *rec);

#endif
