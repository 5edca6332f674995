/* Field tables (hm_fields): both directions, conditions, strict and lenient reading. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_assign.h"
#include "hm_coord_json.h"
#include "hm_fields.h"
#include "hm_node_json.h"

typedef struct {
	double x, y;
} inner_t;

typedef struct {
	int64_t i64;
	long l;
	unsigned long ul;
	int i;
	uint32_t u32;
	uint64_t u64;
	double d;
	bool b;
	char s[8];
	char *sp;
	bool has_in;
	inner_t in;
	double opt; /* HM_F_NEG */
	long nul;   /* HM_F_NULL */
} rec_t;

static const hm_field_t inner_fields[] = {
    HM_FIELD_CHECKED(inner_t, x, "x", HM_F_DBL, 0, 1, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(inner_t, y, "y", HM_F_DBL, -5, 5, 0, NULL),
};

static const hm_field_t rec_fields[] = {
    HM_FIELD_CHECKED(rec_t, i64, "i64", HM_F_I64, -5, 1e12, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(rec_t, l, "l", HM_F_LONG, 0, 100, 0, NULL),
    HM_FIELD_CHECKED(rec_t, ul, "ul", HM_F_ULONG, 0, 1e12, 0, NULL),
    HM_FIELD_CHECKED(rec_t, i, "i", HM_F_INT, 0, 7, HM_F_REQ, NULL),
    HM_FIELD_CHECKED(rec_t, u32, "u32", HM_F_U32, 0, 4294967295.0, 0, NULL),
    HM_FIELD_CHECKED(rec_t, u64, "u64", HM_F_U64, 0, 9007199254740992.0, 0, NULL),
    HM_FIELD_CHECKED(rec_t, d, "d", HM_F_DBL, -1, 1, 0, NULL),
    HM_FIELD_CHECKED(rec_t, b, "b", HM_F_BOOL, 0, 1, 0, NULL),
    HM_FIELD_CHECKED(rec_t, s, "s", HM_F_STR, 1, 0, 0, "abc"),
    HM_FIELD_CHECKED(rec_t, sp, "sp", HM_F_STRP, 0, 0, 0, NULL),
    HM_FIELD_OBJ_WHEN(rec_t, in, "in", inner_fields, HM_F_IF, has_in),
    HM_FIELD_CHECKED(rec_t, opt, "opt", HM_F_DBL, 0, 10, HM_F_NEG, NULL),
    HM_FIELD_CHECKED(rec_t, nul, "nul", HM_F_LONG, 0, 10, HM_F_NULL, NULL),
};
#define NREC HM_NFIELDS(rec_fields)

static const char *text(json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

/* Members in table order; conditions and absent values as flagged. */
static void test_encode(void **state)
{
	rec_t r = {.i64 = -5,
		   .l = 100,
		   .ul = 1ul << 40,
		   .i = 7,
		   .u32 = 4000000000u,
		   .u64 = 1ull << 53,
		   .d = 0.5,
		   .b = true,
		   .s = "cab",
		   .sp = NULL,
		   .in = {0.25, 2},
		   .opt = -1,
		   .nul = -1};
	json_object *o = hm_fields_new(rec_fields, NREC, &r);

	assert_string_equal(text(o), "{\"i64\":-5,\"l\":100,\"ul\":1099511627776,\"i\":7,"
				     "\"u32\":4000000000,\"u64\":9007199254740992,\"d\":0.5,"
				     "\"b\":true,\"s\":\"cab\",\"sp\":\"\",\"nul\":null}");
	json_object_put(o);
	r.has_in = true;
	r.opt = 3;
	r.nul = 2;
	o = hm_fields_new(rec_fields, NREC, &r);
	assert_non_null(strstr(text(o), "\"in\":{\"x\":0.25,\"y\":2.0},\"opt\":3.0,\"nul\":2}"));
	json_object_put(o);
}

/* Strict: a record comes back whole; each kind of bad member is named. */
static void test_decode(void **state)
{
	static const struct {
		const char *json, *error;
	} bad[] = {
	    {"[1]", "t: not a JSON object"},
	    {"{\"i\":1}", "t.i64: missing"},
	    {"{\"i64\":-6,\"i\":1}", "t.i64: -6 is not in [-5, 1000000000000]"},
	    {"{\"i64\":1.5,\"i\":1}", "t.i64: '1.5' is not an integer"},
	    {"{\"i64\":1,\"i\":1,\"d\":2}", "t.d: 2 is not in [-1, 1]"},
	    {"{\"i64\":1,\"i\":1,\"d\":\"x\"}", "t.d: '\"x\"' is not a number"},
	    {"{\"i64\":1,\"i\":1,\"b\":1}", "t.b: '1' is not true or false"},
	    {"{\"i64\":1,\"i\":1,\"s\":\"abcd\"}", "t.s: 'abcd' is not accepted"},
	    {"{\"i64\":1,\"i\":1,\"s\":\"abcabcabc\"}", "t.s: 'abcabcabc' is not accepted"},
	    {"{\"i64\":1,\"i\":1,\"s\":\"\"}", "t.s: '' is not accepted (1..7 characters of abc)"},
	    {"{\"i64\":1,\"i\":1,\"sp\":\"\\u0001\"}", "t.sp: '\x01' is not accepted"},
	    {"{\"i64\":1,\"i\":1,\"in\":{\"y\":1}}", "t.in.x: missing"},
	};
	json_object *o = json_tokener_parse(
	    "{\"i64\":1000000000000,\"l\":3,\"ul\":5,\"i\":0,\"u32\":4294967295,\"u64\":12,"
	    "\"d\":-1,\"b\":false,\"s\":\"cc\",\"sp\":\"any text\",\"in\":{\"x\":1,\"y\":-3},"
	    "\"nul\":null,\"other\":[1]}");
	rec_t r = {0};
	hm_err_t err = {0};

	assert_int_equal(hm_fields_decode(o, rec_fields, NREC, &r, "t", &err), HM_OK);
	json_object_put(o);
	assert_true(r.i64 == 1000000000000 && r.l == 3 && r.ul == 5 && r.i == 0);
	assert_true(r.u32 == 4294967295u && r.u64 == 12 && r.d == -1 && !r.b);
	assert_string_equal(r.s, "cc");
	assert_string_equal(r.sp, "any text");
	assert_true(r.has_in && r.in.x == 1 && r.in.y == -3);
	assert_true(r.opt == -1 && r.nul == -1); /* absent, null */
	hm_fields_free(rec_fields, NREC, &r);
	assert_null(r.sp);

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		rec_t z = {0};

		o = json_tokener_parse(bad[k].json);
		assert_non_null(o);
		assert_int_equal(hm_fields_decode(o, rec_fields, NREC, &z, "t", &err),
				 HM_ERR_PROTO);
		if (strncmp(err.msg, bad[k].error, strlen(bad[k].error)) != 0)
			fail_msg("%s: '%s', wanted '%s'", bad[k].json, err.msg, bad[k].error);
		hm_fields_free(rec_fields, NREC, &z);
		json_object_put(o);
	}
}

/* Lenient: absent leaves the field, null in an HM_F_NULL member is -1, mistyped
   reads as json-c converts, strings cut. */
static void test_read(void **state)
{
	json_object *o = json_tokener_parse(
	    "{\"i64\":\"12\",\"l\":true,\"i\":2.9,\"u32\":-1,\"d\":\"0.5\",\"b\":\"yes\","
	    "\"s\":\"a long string\",\"sp\":7,\"in\":[1],\"nul\":null}");
	rec_t r = {.ul = 9, .opt = 4, .s = "x"};

	assert_int_equal(hm_fields_read(o, rec_fields, NREC, &r), HM_OK);
	json_object_put(o);
	assert_true(r.i64 == 12 && r.l == 1 && r.i == 2 && r.u32 == 4294967295u);
	assert_true(r.d == 0.5 && r.b);
	assert_true(r.ul == 9 && r.opt == 4); /* absent: as they were */
	assert_string_equal(r.s, "a long ");  /* cut to 7 characters */
	assert_string_equal(r.sp, "");        /* not a string */
	assert_true(r.has_in && r.in.x == 0); /* present, not an object */
	assert_int_equal(r.nul, -1);          /* not 0: harmonicsctl showed "applied epoch 0" */
	hm_fields_free(rec_fields, NREC, &r);

	memset(&r, 0, sizeof(r));
	assert_int_equal(hm_fields_read(NULL, rec_fields, NREC, &r), HM_OK);
	o = json_tokener_parse("[1,2]");
	assert_int_equal(hm_fields_read(o, rec_fields, NREC, &r), HM_OK);
	json_object_put(o);
	assert_true(r.i64 == 0 && !r.has_in && !r.sp);
}

/* HM_F_NEG on a string: omitted when empty, absent decodes to "". */
static void test_str_omitted(void **state)
{
	typedef struct {
		int id;
		char note[16];
	} noted_t;
	static const hm_field_t noted_fields[] = {
	    HM_FIELD_CHECKED(noted_t, id, "id", HM_F_INT, 0, 9, HM_F_REQ, NULL),
	    HM_FIELD_CHECKED(noted_t, note, "note", HM_F_STR, 0, 0, HM_F_NEG, NULL),
	};
	noted_t n = {.id = 1, .note = ""};
	hm_err_t err = {0};
	json_object *o = hm_fields_new(noted_fields, HM_NFIELDS(noted_fields), &n);

	(void)state;
	assert_string_equal(text(o), "{\"id\":1}");
	memcpy(n.note, "stale", 6);
	assert_int_equal(hm_fields_decode(o, noted_fields, HM_NFIELDS(noted_fields), &n, "m", &err),
			 HM_OK);
	assert_string_equal(n.note, "");
	json_object_put(o);
	memcpy(n.note, "why", 4);
	o = hm_fields_new(noted_fields, HM_NFIELDS(noted_fields), &n);
	assert_string_equal(text(o), "{\"id\":1,\"note\":\"why\"}");
	json_object_put(o);
}

/* The assignment's wire form: keys in table order, reason only when unscheduled. */
static void test_assignment_text(void **state)
{
	hm_assignment_t a = {.scheduled = true,
			     .policy = "harmonics",
			     .period_us = 400000,
			     .shift_us = 100000,
			     .origin_us = 1000000000,
			     .guard_us = 2000,
			     .prio = 1,
			     .epoch = 7,
			     .decided_us = 5,
			     .valid_until_us = 6},
			b;
	json_object *o = hm_json_assignment(&a);

	assert_string_equal(
	    text(o), "{\"scheduled\":true,\"policy\":\"harmonics\",\"period_us\":400000,"
		     "\"shift_us\":100000,\"origin_us\":1000000000,\"guard_us\":2000,"
		     "\"prio\":1,\"path\":0,\"epoch\":7,\"decided_us\":5,\"valid_until_us\":6}");
	hm_json_assignment_parse(o, &b);
	json_object_put(o);
	assert_memory_equal(&a, &b, sizeof(a));
	a.scheduled = false;
	snprintf(a.reason, sizeof(a.reason), "no profile");
	o = hm_json_assignment(&a);
	assert_non_null(
	    strstr(text(o), "\"scheduled\":false,\"reason\":\"no profile\",\"policy\""));
	json_object_put(o);
}

/* The views come back whole (static: padding is zero as the parsers' memset leaves it). */
static void test_views_roundtrip(void **state)
{
	static hm_coord_job_view_t v = {.job_id = 4000000000u,
					.uid = 1000,
					.name = "train",
					.nodes = "n[1-4]",
					.mode = "auto",
					.profile = "resnet50",
					.gpus = 32,
					.nracks = 2,
					.start_s = 1700000000.5,
					.registered_steps = 3,
					.measured = true,
					.a = {.scheduled = true, .period_us = 123456, .epoch = 5},
					/* not reported, not measured: null on the wire */
					.applied_epoch = -1,
					.measured_period_us = -1,
					.measured_burst_us = -1,
					.slot_misses = -1},
				   v2;
	static hm_coord_stats_t s = {.policy = "fair",
				     .epoch_s = 10,
				     .epoch = 99,
				     .njobs = 3,
				     .requests = 1ul << 40,
				     .started_s = 1.25},
				s2;
	static hm_coord_rack_view_t r = {.rack = 2, .name = "sw2", .nhosts = 8, .load = 0.5}, r2;
	json_object *o;

	o = hm_json_job_view(&v);
	hm_json_job_view_parse(o, &v2);
	json_object_put(o);
	assert_memory_equal(&v, &v2, sizeof(v));
	o = hm_json_stats(&s);
	hm_json_stats_parse(o, &s2);
	json_object_put(o);
	assert_memory_equal(&s, &s2, sizeof(s));
	o = hm_json_rack_view(&r);
	hm_json_rack_view_parse(o, &r2);
	json_object_put(o);
	assert_memory_equal(&r, &r2, sizeof(r));
}

/* A node view with its hardware and one without (null, not zero GPUs). */
static void test_node_view_roundtrip(void **state)
{
	static hm_coord_node_view_t v = {.node = "n7",
					 .state = "up",
					 .last_seen_s = 1700000000.25,
					 .steps = 2,
					 .ranks = 16,
					 .jobs = 1,
					 .has_topo = true,
					 .topo =
					     {.ngpus = 4,
					      .nnics = 2,
					      .nics = {{"mlx5_0", "0000:12:00.0", 0, 200000000000},
						       {"mlx5_1", "0000:92:00.0", 1, 200000000000}},
					      .gpu_nic = {0, 0, 1, 1}},
					 .topo_note = "2 GPUs per NIC"},
				    v2, bare = {.node = "n8", .state = "none"}, bare2;
	json_object *o, *g;

	o = hm_json_node_view(&v);
	hm_json_node_view_parse(o, &v2);
	json_object_put(o);
	assert_memory_equal(&v, &v2, sizeof(v));
	o = hm_json_node_view(&bare);
	assert_true(json_object_object_get_ex(o, "gpus", &g) && g == NULL);
	assert_true(json_object_object_get_ex(o, "nics", &g) && g == NULL);
	hm_json_node_view_parse(o, &bare2);
	json_object_put(o);
	assert_memory_equal(&bare, &bare2, sizeof(bare));
}

/* The exported tables are as long as their declared sizes (no zeroed entry). */
static void test_exported_tables(void **state)
{
	for (size_t i = 0; i < HM_ASSIGNMENT_NFIELDS; i++)
		assert_non_null(hm_assignment_fields[i].key);
	for (size_t i = 0; i < HM_MEASURE_NFIELDS; i++)
		assert_non_null(hm_measure_fields[i].key);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_encode),
	    cmocka_unit_test(test_decode),
	    cmocka_unit_test(test_read),
	    cmocka_unit_test(test_str_omitted),
	    cmocka_unit_test(test_assignment_text),
	    cmocka_unit_test(test_views_roundtrip),
	    cmocka_unit_test(test_node_view_roundtrip),
	    cmocka_unit_test(test_exported_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
