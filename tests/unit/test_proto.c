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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frames),
	    cmocka_unit_test(test_seal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
