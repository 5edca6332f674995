/* Unit tests for the wire format: framing bounds and munge sealing (real munged). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "munge_fixture.h"

static void test_frames(void **state)
{
	int sv[2];
	char *data = NULL;
	size_t len = 0;
	hm_err_t err = {0};
	int64_t dl = hm_proto_now_ms() + 1000;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(hm_proto_send(sv[0], "hello", 5, dl, &err), HM_OK);
	assert_int_equal(hm_proto_recv(sv[1], 100, dl, &data, &len, &err), HM_OK);
	assert_int_equal(len, 5);
	assert_string_equal(data, "hello");
	free(data);

	/* Too long for the receiver's bound. */
	assert_int_equal(hm_proto_send(sv[0], "0123456789", 10, dl, &err), HM_OK);
	assert_int_equal(hm_proto_recv(sv[1], 9, dl, &data, &len, &err), HM_ERR_PROTO);
	assert_null(data);
	assert_non_null(strstr(err.msg, "10"));
	close(sv[0]);
	close(sv[1]);

	/* A zero length, a silent peer, a closed peer. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(write(sv[0], "\0\0\0\0", 4), 4);
	assert_int_equal(hm_proto_recv(sv[1], 100, dl, &data, &len, &err), HM_ERR_PROTO);
	int64_t t0 = hm_proto_now_ms();
	assert_int_equal(hm_proto_recv(sv[1], 100, t0 + 100, &data, &len, &err), HM_ERR_TIMEOUT);
	assert_true(hm_proto_now_ms() - t0 < 600);
	assert_int_equal(write(sv[0], "\0\0\0\5ab", 6), 6);
	close(sv[0]);
	assert_int_equal(hm_proto_recv(sv[1], 100, dl, &data, &len, &err), HM_ERR_IO);
	close(sv[1]);
	assert_int_equal(hm_proto_send(-1, "x", 1, hm_proto_now_ms() + 50, &err) != HM_OK, 1);
}

static void test_seal(void **state)
{
	char *cred = NULL, *json = NULL;
	uint32_t uid = 99, gid = 99;
	hm_err_t err = {0};

	if (!munge_up())
		skip();
	assert_int_equal(hm_proto_seal("{\"op\":\"status\"}", HM_PROTO_UID_ANY, &cred, &err),
			 HM_OK);
	assert_int_equal(hm_proto_unseal(cred, &json, &uid, &gid, &err), HM_OK);
	assert_string_equal(json, "{\"op\":\"status\"}");
	assert_int_equal(uid, getuid());
	assert_int_equal(gid, getgid());
	free(json);
	json = NULL;

	/* The same credential again: munged refuses a replay. */
	assert_int_equal(hm_proto_unseal(cred, &json, &uid, &gid, &err), HM_ERR_AUTH);
	assert_non_null(strstr(err.msg, "eplayed"));
	assert_null(json);
	free(cred);
	cred = NULL;

	/* Garbage, and a real credential with bytes flipped. */
	assert_int_equal(hm_proto_unseal("MUNGE:garbage:", &json, &uid, &gid, &err), HM_ERR_AUTH);
	assert_int_equal(hm_proto_unseal("not a credential at all", &json, &uid, &gid, &err),
			 HM_ERR_AUTH);
	assert_int_equal(hm_proto_seal("{\"op\":\"jobs\"}", HM_PROTO_UID_ANY, &cred, &err), HM_OK);
	size_t n = strlen(cred);
	cred[n / 2] = cred[n / 2] == 'A' ? 'B' : 'A';
	assert_int_equal(hm_proto_unseal(cred, &json, &uid, &gid, &err), HM_ERR_AUTH);
	free(cred);
	cred = NULL;

	/* Sealed for someone else: we (even as root) cannot open it. */
	assert_int_equal(hm_proto_seal("{}", getuid() == 12345 ? 12346 : 12345, &cred, &err),
			 HM_OK);
	assert_int_equal(hm_proto_unseal(cred, &json, &uid, &gid, &err), HM_ERR_AUTH);
	free(cred);
}

/* Bindings as strings (no munged needed): strip on a match, refuse another. */
static void test_unbind(void **state)
{
	const char *me = "agent>coordinator 10.0.0.1:6900 10.0.0.7:40000";
	char tag[HM_PROTO_BIND_MAX], text[256];
	hm_err_t err = {0};
	bool bound = true;

	(void)state;
	assert_int_equal(hm_proto_bind_tag(tag, sizeof(tag), "agent>coordinator", "10.0.0.1:6900",
					   "10.0.0.7:40000", &err),
			 HM_OK);
	assert_string_equal(tag, me);
	/* Quotes, spaces, backslashes or nothing in a part: refused. */
	assert_int_equal(hm_proto_bind_tag(tag, sizeof(tag), "a\"b", "x:1", "y:2", &err),
			 HM_ERR_RANGE);
	assert_int_equal(hm_proto_bind_tag(tag, sizeof(tag), "a b", "x:1", "y:2", &err),
			 HM_ERR_RANGE);
	assert_int_equal(hm_proto_bind_tag(tag, sizeof(tag), "a", "", "y:2", &err), HM_ERR_RANGE);
	assert_int_equal(hm_proto_bind_tag(tag, 8, "a", "x:1", "y:2", &err), HM_ERR_RANGE);

	snprintf(text, sizeof(text), "{\"bind\":\"%s\",\"v\":1}", me);
	assert_int_equal(hm_proto_unbind(text, me, &bound, &err), HM_OK);
	assert_true(bound);
	assert_string_equal(text, "{\"v\":1}");
	snprintf(text, sizeof(text), "{\"bind\":\"%s\"}", me);
	assert_int_equal(hm_proto_unbind(text, me, &bound, &err), HM_OK);
	assert_string_equal(text, "{}");

	/* Unbound: left alone, the caller decides. */
	snprintf(text, sizeof(text), "{\"v\":1,\"bind\":\"%s\"}", me);
	assert_int_equal(hm_proto_unbind(text, me, &bound, &err), HM_OK);
	assert_false(bound);

	/* Another coordinator, another source port, the other direction, a prefix. */
	const struct {
		const char *tag, *msg;
	} others[] = {
	    {"agent>coordinator 10.0.0.2:6900 10.0.0.7:40000",
	     "another destination ('10.0.0.2:6900', this connection's is '10.0.0.1:6900')"},
	    {"agent>coordinator 10.0.0.1:6900 10.0.0.7:40001",
	     "another source ('10.0.0.7:40001', this connection's is '10.0.0.7:40000')"},
	    {"coordinator>agent 10.0.0.1:6900 10.0.0.7:40000",
	     "another direction ('coordinator>agent', this connection's is 'agent>coordinator')"},
	    {"agent>coordinator 10.0.0.1:6900 10.0.0.7:4000",
	     "another source ('10.0.0.7:4000', this connection's is '10.0.0.7:40000')"},
	    {"agent>coordinator 10.0.0.1:6900", "another source ('', this"},
	};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		snprintf(text, sizeof(text), "{\"bind\":\"%s\",\"v\":1}", others[i].tag);
		assert_int_equal(hm_proto_unbind(text, me, &bound, &err), HM_ERR_AUTH);
		assert_false(bound);
		if (!strstr(err.msg, others[i].msg))
			fail_msg("%s: '%s'", others[i].tag, err.msg);
	}
	/* Malformed: no end, an escape, no separator after the tag. */
	assert_int_equal(hm_proto_unbind(strcpy(text, "{\"bind\":\"abc"), me, &bound, &err),
			 HM_ERR_PROTO);
	assert_int_equal(hm_proto_unbind(strcpy(text, "{\"bind\":\"a\\\"b\"}"), me, &bound, &err),
			 HM_ERR_PROTO);
	assert_int_equal(hm_proto_unbind(strcpy(text, "{\"bind\":\"abc\"x}"), me, &bound, &err),
			 HM_ERR_PROTO);
}

/* A bound credential as it travels: sealed for X, refused at Y. */
static void test_seal_bound(void **state)
{
	const char *x = "leader>member 10.0.0.7:40000 10.0.0.9:6901";
	const char *y = "leader>member 10.0.0.8:40000 10.0.0.9:6901";
	char *cred = NULL, *json = NULL;
	uint32_t uid, gid;
	hm_err_t err = {0};
	bool bound = false;

	(void)state;
	if (!munge_up())
		skip();
	assert_int_equal(hm_proto_seal_bound("{\"v\":1}", HM_PROTO_UID_ANY, x, &cred, &err), HM_OK);
	assert_int_equal(hm_proto_unseal(cred, &json, &uid, &gid, &err), HM_OK);
	assert_int_equal(hm_proto_unbind(json, y, &bound, &err), HM_ERR_AUTH);
	assert_int_equal(hm_proto_unbind(json, x, &bound, &err), HM_OK);
	assert_true(bound);
	assert_string_equal(json, "{\"v\":1}");
	free(json);
	free(cred);
	assert_int_equal(hm_proto_seal_bound("[1]", HM_PROTO_UID_ANY, x, &cred, &err),
			 HM_ERR_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frames),
	    cmocka_unit_test(test_seal),
	    cmocka_unit_test(test_unbind),
	    cmocka_unit_test(test_seal_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
