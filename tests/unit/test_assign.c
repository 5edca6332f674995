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

/* The server echoes the request's nonce (bind_reply in hm_server_ops.c). */
static json_object *reply_to(uint32_t job_id, const hm_assignment_t *a, const char *nonce)
{
	json_object *r = hm_assign_reply(job_id, a);

	json_object_object_add(r, "nonce", json_object_new_string(nonce));
	return r;
}

/* Written by the server's writer, read back by the step's reader: every field. */
static void test_reply_roundtrip(void **state)
{
	hm_assignment_t a = sample();
	hm_assign_reply_t b;
	hm_err_t err = {0};
	json_object *r = reply_to(77, &a, "00000000000000aa");

	assert_int_equal(hm_json_i64(r, "job_id"), 77);
	assert_int_equal(hm_assign_reply_parse(json_object_to_json_string(r), "h:1", 77,
					       "00000000000000aa", &b, &err),
			 HM_OK);
	assert_true(b.cur.scheduled);
	assert_false(b.has_next);
	assert_string_equal(b.cur.policy, "harmonics");
	assert_int_equal(b.cur.period_us, a.period_us);
	assert_int_equal(b.cur.shift_us, a.shift_us);
	assert_int_equal(b.cur.origin_us, a.origin_us);
	assert_int_equal(b.cur.guard_us, a.guard_us);
	assert_int_equal(b.cur.prio, a.prio);
	assert_int_equal(b.cur.path, a.path);
	assert_int_equal(b.cur.epoch, a.epoch);
	assert_int_equal(b.cur.decided_us, a.decided_us);
	assert_int_equal(b.cur.valid_until_us, a.valid_until_us);
	json_object_put(r);
}

/* A pending change travels as "next" with its switch time. */
static void test_reply_next(void **state)
{
	hm_assignment_t a = sample(), n = sample();
	hm_assign_reply_t b;
	hm_err_t err = {0};
	json_object *r = reply_to(8, &a, "0123456789abcdef");

	n.shift_us = 0;
	n.prio = 1;
	n.epoch = 43;
	hm_assign_reply_add_next(r, &n, 1700000001000000LL);
	assert_int_equal(hm_assign_reply_parse(json_object_to_json_string(r), "h:1", 8,
					       "0123456789abcdef", &b, &err),
			 HM_OK);
	assert_true(b.has_next);
	assert_int_equal(b.effective_us, 1700000001000000LL);
	assert_int_equal(b.cur.epoch, 42);
	assert_int_equal(b.next.epoch, 43);
	assert_int_equal(b.next.shift_us, 0);
	assert_int_equal(b.next.prio, 1);
	assert_true(b.next.scheduled);
	json_object_put(r);
}

/* A reply to another request (other nonce, other job) is refused: no replay. */
static void test_reply_bound_to_request(void **state)
{
	hm_assignment_t a = sample();
	hm_assign_reply_t b;
	hm_err_t err = {0};
	json_object *r = reply_to(77, &a, "1111111111111111");
	const char *txt = json_object_to_json_string(r);

	assert_int_equal(hm_assign_reply_parse(txt, "h:1", 77, "2222222222222222", &b, &err),
			 HM_ERR_PROTO);
	assert_non_null(strstr(err.msg, "answers another request"));
	assert_false(b.cur.scheduled);
	assert_int_equal(hm_assign_reply_parse(txt, "h:1", 78, "1111111111111111", &b, &err),
			 HM_ERR_PROTO);
	assert_non_null(strstr(err.msg, "expected job 78"));
	json_object_put(r);
}

/* An unscheduled job's reply carries the reason, which the step repeats. */
static void test_reply_unscheduled(void **state)
{
	hm_assignment_t a = sample();
	hm_assign_reply_t b;
	hm_err_t err = {0};
	json_object *r;

	a.scheduled = false;
	snprintf(a.reason, sizeof(a.reason), "comm-sched off");
	r = reply_to(5, &a, "n");
	assert_false(json_object_object_get_ex(r, "assignment", NULL));
	assert_int_equal(
	    hm_assign_reply_parse(json_object_to_json_string(r), "h:1", 5, "n", &b, &err),
	    HM_ERR_NOTFOUND);
	assert_string_equal(err.msg, "not scheduled: comm-sched off");
	assert_false(b.cur.scheduled);
	json_object_put(r);
}

static void expect_why(const char *reply, hm_rc_t rc, const char *why)
{
	hm_assign_reply_t b;
	hm_err_t err = {0};

	assert_int_equal(hm_assign_reply_parse(reply, "c:6830", 9, "n", &b, &err), rc);
	assert_string_equal(err.msg, why);
	assert_false(b.cur.scheduled);
	assert_int_equal(b.cur.period_us, 0);
}

static void test_reply_bad(void **state)
{
	expect_why("{\"ok\":", HM_ERR_PROTO, "unreadable reply from c:6830");
	expect_why(NULL, HM_ERR_PROTO, "unreadable reply from c:6830");
	expect_why("{\"nonce\":\"n\",\"ok\":false,\"error\":\"job 9 is not known\"}",
		   HM_ERR_NOTFOUND, "coordinator refused: job 9 is not known");
	expect_why("{\"nonce\":\"n\",\"ok\":false}", HM_ERR_NOTFOUND,
		   "coordinator refused: no reason");
	expect_why("{\"nonce\":\"n\",\"ok\":true,\"scheduled\":false}", HM_ERR_NOTFOUND,
		   "not scheduled: no reason given");
	expect_why("{\"nonce\":\"n\",\"ok\":true,\"scheduled\":true}", HM_ERR_PROTO,
		   "reply without assignment");
	expect_why("{\"ok\":true,\"scheduled\":true}", HM_ERR_PROTO,
		   "reply from c:6830 answers another request (job 0, nonce ''; expected job 9, "
		   "nonce 'n')");
}

/* A reply whose assignment names no policy is the cluster's: "auto". */
static void test_reply_default_policy(void **state)
{
	hm_assign_reply_t b;
	hm_err_t err = {0};

	assert_int_equal(hm_assign_reply_parse("{\"nonce\":\"n\",\"ok\":true,\"scheduled\":true,"
					       "\"assignment\":{\"period_us\":1000,\"prio\":2}}",
					       "c:1", 3, "n", &b, &err),
			 HM_OK);
	assert_string_equal(b.cur.policy, "auto");
	assert_int_equal(b.cur.period_us, 1000);
	assert_int_equal(b.cur.prio, 2);
}

static void test_request(void **state)
{
	char nonce[HM_ASSIGN_NONCE_LEN + 1], nonce2[HM_ASSIGN_NONCE_LEN + 1];
	char *txt = hm_assign_request(4294967295u, 3, "n[1]\"x", nonce);
	char *txt2 = hm_assign_request(1, 1, "n1", nonce2);
	json_object *o = json_tokener_parse(txt);

	assert_non_null(o);
	assert_string_equal(hm_json_str(o, "op"), "register");
	assert_int_equal(hm_json_i64(o, "job_id"), 4294967295LL);
	assert_int_equal(hm_json_i64(o, "step_id"), 3);
	assert_string_equal(hm_json_str(o, "node"), "n[1]\"x");
	assert_string_equal(hm_json_str(o, "nonce"), nonce);
	assert_int_equal(strlen(nonce), HM_ASSIGN_NONCE_LEN);
	assert_string_not_equal(nonce, nonce2); /* fresh per request */
	json_object_put(o);
	free(txt);
	free(txt2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reply_roundtrip),
	    cmocka_unit_test(test_reply_next),
	    cmocka_unit_test(test_reply_bound_to_request),
	    cmocka_unit_test(test_reply_unscheduled),
	    cmocka_unit_test(test_reply_bad),
	    cmocka_unit_test(test_reply_default_policy),
	    cmocka_unit_test(test_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
