/*
 * Unit tests for the assignment on the wire: the register request, the reply
 * the coordinator writes and the step reads (one field list both ways), and
 * every kind of reply that leaves the step unscheduled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_assign.h"
#include "hm_json.h"

static hm_assignment_t sample(void)
{
	hm_assignment_t a;

	memset(&a, 0, sizeof(a));
	a.scheduled = true;
	snprintf(a.policy, sizeof(a.policy), "harmonics");
	a.period_us = 250000;
	a.shift_us = 125000;
	a.origin_us = 1700000000123456LL;
	a.guard_us = 5000;
	a.prio = 3;
	a.path = 1;
	a.epoch = 42;
	a.decided_us = 1700000000000001LL;
	a.valid_until_us = 1700000600000001LL;
	return a;
}

/* Written by the server's writer, read back by the step's reader: every field. */
static void test_reply_roundtrip(void **state)
{
	hm_assignment_t a = sample(), b;
	hm_err_t err = {0};
	json_object *r = hm_assign_reply(77, &a);

	assert_int_equal(hm_json_i64(r, "job_id"), 77);
	assert_int_equal(hm_assign_reply_parse(json_object_to_json_string(r), "h:1", &b, &err),
			 HM_OK);
	assert_true(b.scheduled);
	assert_string_equal(b.policy, "harmonics");
	assert_int_equal(b.period_us, a.period_us);
	assert_int_equal(b.shift_us, a.shift_us);
	assert_int_equal(b.origin_us, a.origin_us);
	assert_int_equal(b.guard_us, a.guard_us);
	assert_int_equal(b.prio, a.prio);
	assert_int_equal(b.path, a.path);
	assert_int_equal(b.epoch, a.epoch);
	assert_int_equal(b.decided_us, a.decided_us);
	assert_int_equal(b.valid_until_us, a.valid_until_us);
	json_object_put(r);
}

/* An unscheduled job's reply carries the reason, which the step repeats. */
static void test_reply_unscheduled(void **state)
{
	hm_assignment_t a = sample(), b;
	hm_err_t err = {0};
	json_object *r;

	a.scheduled = false;
	snprintf(a.reason, sizeof(a.reason), "comm-sched off");
	r = hm_assign_reply(5, &a);
	assert_false(json_object_object_get_ex(r, "assignment", NULL));
	assert_int_equal(hm_assign_reply_parse(json_object_to_json_string(r), "h:1", &b, &err),
			 HM_ERR_NOTFOUND);
	assert_string_equal(err.msg, "not scheduled: comm-sched off");
	assert_false(b.scheduled);
	json_object_put(r);
}

static void expect_why(const char *reply, hm_rc_t rc, const char *why)
{
	hm_assignment_t b;
	hm_err_t err = {0};

	assert_int_equal(hm_assign_reply_parse(reply, "c:6830", &b, &err), rc);
	assert_string_equal(err.msg, why);
	assert_false(b.scheduled);
	assert_int_equal(b.period_us, 0);
}

static void test_reply_bad(void **state)
{
	expect_why("{\"ok\":", HM_ERR_PROTO, "unreadable reply from c:6830");
	expect_why(NULL, HM_ERR_PROTO, "unreadable reply from c:6830");
	expect_why("{\"ok\":false,\"error\":\"job 9 is not known\"}", HM_ERR_NOTFOUND,
		   "coordinator refused: job 9 is not known");
	expect_why("{\"ok\":false}", HM_ERR_NOTFOUND, "coordinator refused: no reason");
	expect_why("{\"ok\":true,\"scheduled\":false}", HM_ERR_NOTFOUND,
		   "not scheduled: no reason given");
	expect_why("{\"ok\":true,\"scheduled\":true}", HM_ERR_PROTO, "reply without assignment");
}

/* A reply whose assignment names no policy is the cluster's: "auto". */
static void test_reply_default_policy(void **state)
{
	hm_assignment_t b;
	hm_err_t err = {0};

	assert_int_equal(hm_assign_reply_parse("{\"ok\":true,\"scheduled\":true,\"assignment\":"
					       "{\"period_us\":1000,\"prio\":2}}",
					       "c:1", &b, &err),
			 HM_OK);
	assert_string_equal(b.policy, "auto");
	assert_int_equal(b.period_us, 1000);
	assert_int_equal(b.prio, 2);
}

static void test_request(void **state)
{
	char *txt = hm_assign_request(4294967295u, 3, "n[1]\"x");
	json_object *o = json_tokener_parse(txt);

	assert_non_null(o);
	assert_string_equal(hm_json_str(o, "op"), "register");
	assert_int_equal(hm_json_i64(o, "job_id"), 4294967295LL);
	assert_int_equal(hm_json_i64(o, "step_id"), 3);
	assert_string_equal(hm_json_str(o, "node"), "n[1]\"x");
	json_object_put(o);
	free(txt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reply_roundtrip), cmocka_unit_test(test_reply_unscheduled),
	    cmocka_unit_test(test_reply_bad),       cmocka_unit_test(test_reply_default_policy),
	    cmocka_unit_test(test_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
