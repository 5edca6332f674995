/*
 * The coordinator's socket service end to end: a real server on 127.0.0.1, real
 * munge credentials, requests from root, from the job owner and from a foreign uid
 * (a forked child that drops to nobody), forged and replayed credentials.
 */
#include <arpa/inet.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hm_clock.h"
#include "hm_client.h"
#include "hm_coord_json.h"
#include "hm_log.h"
#include "server_fixture.h"

#define SLURM_UID 64030

static int setup(void **state)
{
	hm_conf_t conf;
	hm_err_t err = {0};
	hm_coord_job_info_t jobs[] = {
	    {.job_id = 100,
	     .uid = OWNER,
	     .nodes = "n[1-2]",
	     .mode = "auto",
	     .profile = "iter=250ms,comm=40%,bytes=1.2GB"},
	    {.job_id = 101,
	     .uid = NOBODY,
	     .nodes = "n[5-6]",
	     .mode = "auto",
	     .profile = "resnet50"},
	    {.job_id = 102, .uid = OWNER, .nodes = "n7", .mode = "off"},
	};
	bool changed;

	if (!srv_fixture_conf("test_server", &conf))
		return 0;
	conf.conn_timeout_ms = 400;
	conf.max_message_bytes = 4096;
	if (hm_coord_create(&conf, fixture_topo(), &coord, &err) != HM_OK ||
	    hm_coord_set_policy_ops(coord, &script_policy, &err) != HM_OK)
		return -1;
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		hm_coord_job_upsert(coord, &jobs[i], &err);
	if (hm_coord_decide(coord, hm_real_s(), &changed, &err) != HM_OK)
		return -1;
	return srv_fixture_start(&conf, SLURM_UID);
}

/* One request; returns the parsed reply (caller puts) or NULL with err. */
static json_object *call(const char *req, hm_err_t *err)
{
	char *reply = NULL;
	json_object *o = NULL;

	if (hm_client_call("127.0.0.1", port, req, 3000, &reply, err) == HM_OK)
		o = json_tokener_parse(reply);
	free(reply);
	return o;
}

/* Run a request as uid NOBODY in a child; exit status: 0 ok, 1 refused (auth), 2 other. */
static int call_as_nobody(const char *req)
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		hm_err_t err = {0};
		json_object *r;

		if (setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(3);
		r = call(req, &err);
		if (!r)
			_exit(4);
		if (hm_json_bool(r, "ok"))
			_exit(0);
		_exit(strcmp(hm_json_str(r, "code"), "auth") == 0 ? 1 : 2);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_register_root(void **state)
{
	hm_err_t err = {0};
	json_object *r, *a = NULL;

	NEED_SERVER();
	r = call("{\"op\":\"register\",\"job_id\":100,\"step_id\":0,\"node\":\"n1\"}", &err);
	assert_non_null(r);
	assert_true(hm_json_bool(r, "ok"));
	assert_true(hm_json_bool(r, "scheduled"));
	assert_true(json_object_object_get_ex(r, "assignment", &a));
	assert_int_equal(hm_json_i64(a, "period_us"), 400000);
	assert_int_equal(hm_json_i64(a, "origin_us"), 1000000000);
	assert_int_equal(hm_json_i64(a, "epoch"), 1);
	json_object_put(r);

	/* A job that did not ask: registered but unscheduled, with the reason. */
	r = call("{\"op\":\"register\",\"job_id\":102,\"step_id\":0,\"node\":\"n7\"}", &err);
	assert_non_null(r);
	assert_true(hm_json_bool(r, "ok"));
	assert_false(hm_json_bool(r, "scheduled"));
	assert_string_equal(hm_json_str(r, "reason"), "comm-sched off");
	json_object_put(r);

	hm_coord_job_view_t v;
	assert_int_equal(hm_coord_job(coord, 100, &v), HM_OK);
	assert_int_equal(v.registered_steps, 1);
}

/* A reply must come from a trusted uid when the caller says which. */
static void test_trusted_reply(void **state)
{
	const uint32_t root_only[] = {0}, others[] = {12345, 12346};
	char *reply = NULL;
	hm_err_t err = {0};

	NEED_SERVER();
	assert_int_equal(hm_client_call_trusted("127.0.0.1", port, "{\"op\":\"status\"}", 3000,
						root_only, 1, &reply, &err),
			 HM_OK);
	assert_non_null(reply);
	free(reply);
	reply = NULL;
	assert_int_equal(hm_client_call_trusted("127.0.0.1", port, "{\"op\":\"status\"}", 3000,
						others, 2, &reply, &err),
			 HM_ERR_AUTH);
	assert_null(reply);
	assert_non_null(strstr(err.msg, "uid 0"));
}

static void test_queries(void **state)
{
	hm_err_t err = {0};
	json_object *r, *arr = NULL, *st = NULL;

	NEED_SERVER();
	r = call("{\"op\":\"jobs\"}", &err);
	assert_non_null(r);
	assert_true(json_object_object_get_ex(r, "jobs", &arr));
	assert_int_equal(json_object_array_length(arr), 3);
	assert_int_equal(hm_json_i64(json_object_array_get_idx(arr, 0), "job_id"), 100);
	json_object_put(r);
	r = call("{\"op\":\"status\"}", &err);
	assert_true(json_object_object_get_ex(r, "status", &st));
	assert_int_equal(hm_json_i64(st, "jobs"), 3);
	assert_int_equal(hm_json_i64(st, "racks"), 2);
	json_object_put(r);
	r = call("{\"op\":\"racks\"}", &err);
	assert_true(json_object_object_get_ex(r, "racks", &arr));
	assert_int_equal(json_object_array_length(arr), 2);
	json_object_put(r);
	r = call("{\"op\":\"job\",\"job_id\":101}", &err);
	assert_true(hm_json_bool(r, "ok"));
	json_object_put(r);
	/* The configuration in force, as harmonics.conf text (the fixture's is set in
	   code, not read from a file: its round trip is test_conf's). */
	r = call("{\"op\":\"conf\"}", &err);
	assert_true(hm_json_bool(r, "ok"));
	assert_non_null(strstr(hm_json_str(r, "conf"), "Policy="));
	assert_non_null(strstr(hm_json_str(r, "conf"), "\nListenPort="));
	assert_non_null(strstr(hm_json_str(r, "conf"), "\nHeartbeatInterval="));
	json_object_put(r);

	/* Bad requests get a clear error, not a hang. */
	r = call("{\"op\":\"explode\"}", &err);
	assert_false(hm_json_bool(r, "ok"));
	assert_non_null(strstr(hm_json_str(r, "error"), "explode"));
	json_object_put(r);
	r = call("[1,2]", &err);
	assert_string_equal(hm_json_str(r, "code"), "proto");
	json_object_put(r);
	r = call("{\"op\":\"register\",\"job_id\":-4}", &err);
	assert_string_equal(hm_json_str(r, "code"), "proto");
	json_object_put(r);
	/* Unknown job: answered within the server's bounded wait. */
	int64_t t0 = hm_proto_now_ms();
	r = call("{\"op\":\"register\",\"job_id\":999}", &err);
	assert_string_equal(hm_json_str(r, "code"), "notfound");
	assert_true(hm_proto_now_ms() - t0 < 1500);
	json_object_put(r);
}

/* The owner and root may act on a job; another uid may not (SlurmUser is trusted). */
static void test_foreign_uid(void **state)
{
	NEED_SERVER();
	hm_coord_stats_t before, after;

	hm_coord_stats(coord, &before);
	assert_int_equal(call_as_nobody("{\"op\":\"register\",\"job_id\":100,\"step_id\":0}"), 1);
	assert_int_equal(call_as_nobody("{\"op\":\"job\",\"job_id\":100}"), 1);
	assert_int_equal(call_as_nobody("{\"op\":\"report\",\"job_id\":100,\"iter_s\":1}"), 1);
	/* Its own job, and the open queries. */
	assert_int_equal(call_as_nobody("{\"op\":\"register\",\"job_id\":101,\"step_id\":0}"), 0);
	assert_int_equal(
	    call_as_nobody("{\"op\":\"report\",\"job_id\":101,\"iter_s\":0.3,\"compute_s\":0.2,"
			   "\"comm_s\":0.1,\"bytes\":1e8}"),
	    0);
	assert_int_equal(call_as_nobody("{\"op\":\"status\"}"), 0);
	assert_int_equal(call_as_nobody("{\"op\":\"jobs\"}"), 0);
	hm_coord_stats(coord, &after);
	assert_int_equal(after.refused - before.refused, 3);
	hm_coord_job_view_t v;
	assert_int_equal(hm_coord_job(coord, 101, &v), HM_OK);
	assert_true(v.measured);
	assert_int_equal(hm_coord_job(coord, 100, &v), HM_OK);
	assert_false(v.measured);
}

/* Raw socket to the server: send one frame, read and open the reply. */
static json_object *raw_exchange(const void *frame, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char *reply = NULL, *json = NULL;
	size_t rlen;
	uint32_t uid, gid;
	hm_err_t err = {0};
	json_object *o = NULL;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, frame, len), (ssize_t)len);
	if (hm_proto_recv(fd, 1 << 20, hm_proto_now_ms() + 3000, &reply, &rlen, &err) == HM_OK &&
	    hm_proto_unseal(reply, &json, &uid, &gid, &err) == HM_OK)
		o = json_tokener_parse(json);
	close(fd);
	free(reply);
	free(json);
	return o;
}

static json_object *send_cred(const char *cred)
{
	size_t n = strlen(cred);
	char *frame = malloc(n + 4);
	json_object *o;

	frame[0] = (char)(n >> 24);
	frame[1] = (char)(n >> 16);
	frame[2] = (char)(n >> 8);
	frame[3] = (char)n;
	memcpy(frame + 4, cred, n);
	o = raw_exchange(frame, n + 4);
	free(frame);
	return o;
}

static void test_forged(void **state)
{
	char *cred = NULL;
	hm_err_t err = {0};
	json_object *r;
	hm_coord_stats_t before, after;

	NEED_SERVER();
	hm_coord_stats(coord, &before);
	/* Garbage in place of a credential. */
	r = send_cred("MUNGE:AwQDAACzZm9yZ2VkIGNyZWRlbnRpYWwgd2l0aCBubyBrZXk=:");
	assert_non_null(r);
	assert_false(hm_json_bool(r, "ok"));
	assert_string_equal(hm_json_str(r, "code"), "auth");
	json_object_put(r);
	r = send_cred("{\"op\":\"register\",\"job_id\":100}"); /* plain JSON, no credential */
	assert_string_equal(hm_json_str(r, "code"), "auth");
	json_object_put(r);

	/* A captured credential replayed. */
	assert_int_equal(
	    hm_proto_seal("{\"op\":\"register\",\"job_id\":100}", HM_PROTO_UID_ANY, &cred, &err),
	    HM_OK);
	r = send_cred(cred);
	assert_true(hm_json_bool(r, "ok"));
	json_object_put(r);
	r = send_cred(cred);
	assert_false(hm_json_bool(r, "ok"));
	assert_string_equal(hm_json_str(r, "code"), "auth");
	assert_non_null(strstr(hm_json_str(r, "error"), "eplayed"));
	json_object_put(r);
	free(cred);

	/* A credential meant for another uid (e.g. lifted from another service). */
	assert_int_equal(hm_proto_seal("{\"op\":\"register\",\"job_id\":100}", OWNER, &cred, &err),
			 HM_OK);
	r = send_cred(cred);
	assert_string_equal(hm_json_str(r, "code"), "auth");
	json_object_put(r);
	free(cred);

	/* An oversized frame is refused by its length alone. */
	r = raw_exchange("\x00\x10\x00\x00xxxx", 8);
	assert_non_null(r);
	assert_string_equal(hm_json_str(r, "code"), "proto");
	json_object_put(r);
	hm_coord_stats(coord, &after);
	assert_int_equal(after.refused - before.refused, 5);
}

/* A silent client holds the server at most ConnectionTimeout; unreachable is quick. */
static void test_bounds(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), lfd;
	hm_err_t err = {0};
	json_object *r;
	char *reply = NULL;
	socklen_t sl = sizeof(sa);

	NEED_SERVER();
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	/* Five silent clients and one that sent half a frame hold nobody up: a request
	   is answered well before a single ConnectionTimeout (400 ms) passes. */
	int silent[6];
	for (int i = 0; i < 6; i++) {
		silent[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(silent[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	assert_int_equal(write(silent[5], "\0\0\0\x40MUNGE:", 10), 10);
	usleep(50000); /* let the server accept them */
	int64_t t0 = hm_proto_now_ms();
	r = call("{\"op\":\"status\"}", &err);
	assert_non_null(r);
	assert_true(hm_proto_now_ms() - t0 < 300);
	json_object_put(r);
	/* After their deadline the server has dropped them. */
	usleep(500000);
	char c;
	for (int i = 0; i < 6; i++) {
		assert_int_equal(read(silent[i], &c, 1), 0);
		close(silent[i]);
	}
	close(fd);

	/* A port with a listener that never answers: the client gives up on time. */
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_port = 0;
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	t0 = hm_proto_now_ms();
	assert_int_equal(hm_client_call("127.0.0.1", ntohs(sa.sin_port), "{}", 300, &reply, &err),
			 HM_ERR_TIMEOUT);
	assert_true(hm_proto_now_ms() - t0 < 800);
	char where[64];
	snprintf(where, sizeof(where), "127.0.0.1:%d", ntohs(sa.sin_port));
	assert_non_null(strstr(err.msg, where));
	close(lfd);
	/* Nobody listening now: refused at once, named. */
	assert_int_equal(hm_client_call("127.0.0.1", ntohs(sa.sin_port), "{}", 300, &reply, &err),
			 HM_ERR_IO);
	assert_non_null(strstr(err.msg, where));
	assert_null(reply);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_register_root), cmocka_unit_test(test_trusted_reply),
	    cmocka_unit_test(test_queries),       cmocka_unit_test(test_foreign_uid),
	    cmocka_unit_test(test_forged),        cmocka_unit_test(test_bounds),
	};
	hm_log_set_level(getenv("HM_TEST_VERBOSE") ? HM_LOG_DEBUG : HM_LOG_ERROR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
