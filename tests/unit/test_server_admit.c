/*
 * The coordinator's admission (issue 28 item 3): per-address connection caps,
 * per-uid request caps, a minimum interval between the sched thread's
 * wake-ups caused by registrations of unknown jobs, and no stall when out of
 * descriptors. A real server on 127.0.0.1 with real munge; other source
 * addresses are loopback's 127.0.x.y; a foreign uid is a forked child.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hm_client.h"
#include "hm_clock.h"
#include "hm_json.h"
#include "hm_log.h"
#include "server_fixture.h"

#define ADDR_CAP 4
#define USER_CAP 2

static hm_conf_t conf0;

static int setup(void **state)
{
	hm_err_t err = {0};
	hm_coord_job_info_t job = {
	    .job_id = 100, .uid = OWNER, .nodes = "n[1-2]", .mode = "auto", .profile = "resnet50"};
	bool changed;

	(void)state;
	if (!srv_fixture_conf("test_server_admit", &conf0))
		return 0;
	conf0.conn_timeout_ms = 5000; /* longer than every check's window below */
	conf0.max_conns_per_addr = ADDR_CAP;
	conf0.max_requests_per_user = USER_CAP;
	if (hm_coord_create(&conf0, fixture_topo(), &coord, &err) != HM_OK ||
	    hm_coord_set_policy_ops(coord, &script_policy, &err) != HM_OK)
		return -1;
	hm_coord_job_upsert(coord, &job, &err);
	if (hm_coord_decide(coord, hm_real_s(), &changed, &err) != HM_OK)
		return -1;
	return srv_fixture_start(&conf0, 0);
}

/* A connected socket from source address src (127.x.y.z) to the server's port. */
static int connect_from(const char *src, int to_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET}, b = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, src, &a.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	inet_pton(AF_INET, "127.0.0.1", &b.sin_addr);
	b.sin_port = htons((uint16_t)to_port);
	assert_int_equal(connect(fd, (struct sockaddr *)&b, sizeof(b)), 0);
	return fd;
}

static void send_req(int fd, const char *json)
{
	char *cred = NULL;
	hm_err_t err = {0};

	assert_int_equal(hm_proto_seal(json, HM_PROTO_UID_ANY, &cred, &err), HM_OK);
	assert_int_equal(hm_proto_send(fd, cred, strlen(cred), hm_proto_now_ms() + 2000, &err),
			 HM_OK);
	free(cred);
}

/* The reply's "code" ("" when ok), or "closed" when the connection closed instead. */
static const char *recv_code(int fd, int timeout_ms, char *buf, size_t len)
{
	char *data = NULL, *json = NULL;
	size_t n;
	uint32_t uid, gid;
	hm_err_t err = {0};
	json_object *o;

	snprintf(buf, len, "closed");
	if (hm_proto_recv(fd, 65536, hm_proto_now_ms() + timeout_ms, &data, &n, &err) != HM_OK) {
		if (err.rc == HM_ERR_TIMEOUT)
			snprintf(buf, len, "timeout");
		return buf;
	}
	if (hm_proto_unseal(data, &json, &uid, &gid, &err) == HM_OK &&
	    (o = json_tokener_parse(json))) {
		snprintf(buf, len, "%s", hm_json_bool(o, "ok") ? "" : hm_json_str(o, "code"));
		json_object_put(o);
	}
	free(data);
	free(json);
	return buf;
}

/* Whether the server closed fd within timeout_ms (EOF or reset, nothing read). */
static bool closed_within(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	if (poll(&p, 1, timeout_ms) != 1)
		return false;
	return read(fd, &c, 1) <= 0;
}

/* MaxConnectionsPerAddress: the next connection from a full address is closed at
   once (not after ConnectionTimeout); other addresses are served meanwhile. */
static void test_addr_cap(void **state)
{
	int held[ADDR_CAP], extra, fd;
	char code[32];
	hm_server_counters_t before, after;

	(void)state;
	NEED_SERVER();
	hm_server_counters(srv, &before);
	for (int i = 0; i < ADDR_CAP; i++)
		held[i] = connect_from("127.0.3.1", port);
	usleep(100000); /* accepted */
	extra = connect_from("127.0.3.1", port);
	assert_true(closed_within(extra, 2000)); /* ConnectionTimeout is 5 s */
	close(extra);
	fd = connect_from("127.0.3.2", port);
	send_req(fd, "{\"op\":\"status\"}");
	assert_string_equal(recv_code(fd, 2000, code, sizeof(code)), "");
	close(fd);
	for (int i = 0; i < ADDR_CAP; i++)
		close(held[i]);
	usleep(100000); /* the server sees them closed */
	fd = connect_from("127.0.3.1", port);
	send_req(fd, "{\"op\":\"status\"}");
	assert_string_equal(recv_code(fd, 2000, code, sizeof(code)), "");
	close(fd);
	hm_server_counters(srv, &after);
	assert_int_equal(after.refused_addr - before.refused_addr, 1);
}

/* MaxRequestsPerUser: a uid's registrations of unknown jobs wait (parked) and
   count; one more is answered "busy" at once; another uid is served. */
static void test_user_cap(void **state)
{
	int st = 0;
	pid_t pid;

	(void)state;
	NEED_SERVER();
	pid = fork();
	if (pid == 0) {
		int fds[USER_CAP + 1], rc = 0;
		char code[32], req[96];

		if (setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(10);
		for (int i = 0; i <= USER_CAP; i++) {
			char src[32];

			snprintf(src, sizeof(src), "127.0.4.%d", i + 1);
			fds[i] = connect_from(src, port);
			snprintf(
			    req, sizeof(req),
			    "{\"op\":\"register\",\"job_id\":%d,\"step_id\":0,\"node\":\"n1\"}",
			    7000 + i);
			send_req(fds[i], req);
			if (i < USER_CAP)
				usleep(200000); /* parked before the next one */
		}
		/* The one over the cap: at once, not after ConnectionTimeout / 2 (2.5 s). */
		if (strcmp(recv_code(fds[USER_CAP], 1500, code, sizeof(code)), "busy") != 0)
			rc = 11;
		/* The parked ones: answered at the end of their wait (not known). */
		for (int i = 0; i < USER_CAP && !rc; i++)
			if (strcmp(recv_code(fds[i], 5000, code, sizeof(code)), "notfound") != 0)
				rc = 12 + i;
		/* Released: the uid is served again. */
		int fd = connect_from("127.0.4.9", port);
		send_req(fd, "{\"op\":\"status\"}");
		if (!rc && strcmp(recv_code(fd, 2000, code, sizeof(code)), "") != 0)
			rc = 20;
		_exit(rc);
	}
	assert_true(pid > 0);
	/* Root (another uid) while the child's requests wait. */
	usleep(300000);
	{
		char code[32];
		int fd = connect_from("127.0.4.20", port);

		send_req(fd, "{\"op\":\"status\"}");
		assert_string_equal(recv_code(fd, 1000, code, sizeof(code)), "");
		close(fd);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A stand-in for the sched thread: counts its wake-ups. */
static atomic_bool wake_stop;
static atomic_int wakes;

static void *sched_stand_in(void *arg)
{
	(void)arg;
	while (!atomic_load(&wake_stop))
		if (hm_coord_wait_work(coord, 20))
			atomic_fetch_add(&wakes, 1);
	return NULL;
}

/* Registrations of unknown jobs wake the sched thread at most once per 250 ms:
   40 of them spread over 2 s, every one answered (after its wait) before the
   count, give at most 2 + elapsed / 250 ms wake-ups, not 40. */
static void test_wake_interval(void **state)
{
	enum { N = 40 };
	int fds[N];
	pthread_t th;
	int64_t t0, dt;
	int w;
	char code[32];
	hm_server_counters_t k0, k;

	(void)state;
	NEED_SERVER();
	hm_server_counters(srv, &k0);
	atomic_store(&wake_stop, false);
	atomic_store(&wakes, 0);
	assert_int_equal(pthread_create(&th, NULL, sched_stand_in, NULL), 0);
	usleep(50000);
	t0 = hm_proto_now_ms();
	for (int i = 0; i < N; i++) {
		char src[32], req[96];

		snprintf(src, sizeof(src), "127.0.5.%d", i + 1);
		fds[i] = connect_from(src, port);
		snprintf(req, sizeof(req),
			 "{\"op\":\"register\",\"job_id\":%d,\"step_id\":0,\"node\":\"n1\"}",
			 8000 + i);
		send_req(fds[i], req);
		usleep(50000);
	}
	for (int i = 0; i < N; i++)
		assert_string_equal(recv_code(fds[i], 20000, code, sizeof(code)), "notfound");
	usleep(300000); /* a deferred wake-up is due by then */
	dt = hm_proto_now_ms() - t0;
	atomic_store(&wake_stop, true);
	pthread_join(th, NULL);
	w = atomic_load(&wakes);
	hm_server_counters(srv, &k);
	fprintf(stderr,
		"%d registrations of unknown jobs in %lld ms: %d wake-ups (server: %lu, %lu "
		"deferred)\n",
		N, (long long)dt, w, k.sched_wakes - k0.sched_wakes,
		k.wakes_deferred - k0.wakes_deferred);
	assert_true(w >= 1);
	assert_true(w <= 2 + dt / 250);
	for (int i = 0; i < N; i++)
		close(fds[i]);
}

/* The RLIMIT_NOFILE that leaves exactly `room` descriptor numbers free (new
   descriptors take the lowest free numbers below the limit). */
static rlim_t limit_with_room(int room)
{
	static bool open_fd[65536];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int k = 0;

	assert_non_null(d);
	memset(open_fd, 0, sizeof(open_fd));
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) < 65536)
			open_fd[atoi(e->d_name)] = atoi(e->d_name) != dirfd(d);
	closedir(d);
	for (; k < 65536 && room > 0; k++)
		room -= !open_fd[k];
	return (rlim_t)k;
}

/* Out of descriptors, connections are accepted and closed (not left queued while
   the I/O thread sleeps); a server in a child with a low RLIMIT_NOFILE. */
static void test_out_of_fds(void **state)
{
	enum { N = 8 };
	int pfd[2], fds[N], child_port = 0, closed = 0, st;
	pid_t pid;

	(void)state;
	NEED_SERVER();
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	if (pid == 0) {
		hm_coord_t *c2 = NULL;
		hm_server_t *s2 = NULL;
		hm_err_t err = {0};
		hm_conf_t cf = conf0;
		struct rlimit rl;

		cf.max_conns_per_addr = 256;
		if (hm_coord_create(&cf, fixture_topo(), &c2, &err) != HM_OK ||
		    hm_server_start(c2, &cf, 0, &s2, &err) != HM_OK)
			_exit(2);
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = limit_with_room(3); /* room for three connections */
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			_exit(3);
		child_port = hm_server_port(s2);
		if (write(pfd[1], &child_port, sizeof(child_port)) != sizeof(child_port))
			_exit(4);
		pause();
		_exit(0);
	}
	assert_true(pid > 0);
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &child_port, sizeof(child_port)), sizeof(child_port));
	close(pfd[0]);
	for (int i = 0; i < N; i++) {
		char src[32];

		snprintf(src, sizeof(src), "127.0.6.%d", i + 1);
		fds[i] = connect_from(src, child_port);
	}
	for (int i = 0; i < N; i++) {
		closed += closed_within(fds[i], i == 0 ? 2000 : 200); /* ConnectionTimeout 5 s */
		close(fds[i]);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	fprintf(stderr, "out of descriptors: %d of %d connections closed at once\n", closed, N);
	assert_true(closed >= N - 3 - 1);
}

#define OPERATOR    4243              /* AdminLevel=Operator, as the host plugin's hook says */
#define COORDINATOR 4244              /* coordinates account "acct_a" (sacctmgr add coordinator) */
#define JOB_BIT(id) (1 << ((id)-100)) /* jobs 100 to 105 in one exit status */

static bool operator_hook(uint32_t uid, void *arg)
{
	(void)arg;
	return uid == OPERATOR;
}

static atomic_int coord_calls; /* the server's workers call the hook */

static bool coordinates_hook(uint32_t uid, const char *account, void *arg)
{
	(void)arg;
	atomic_fetch_add(&coord_calls, 1);
	return uid == COORDINATOR && strcmp(account, "acct_a") == 0;
}

/* Send req on port as uid (a forked child) and return judge's verdict on the
   reply (0 to 254); -1 when the call or the reply fails. */
static int as_user(uint32_t uid, int on_port, const char *req, int (*judge)(json_object *r))
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		char *reply = NULL;
		json_object *r;
		hm_err_t e = {0};

		if (setgid(uid) != 0 || setuid(uid) != 0 ||
		    hm_client_call("127.0.0.1", on_port, req, 3000, &reply, &e) != HM_OK ||
		    !(r = json_tokener_parse(reply)))
			_exit(255);
		_exit(judge(r));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) == 255)
		return -1;
	return WEXITSTATUS(st);
}

/* Which of jobs 100 to 105 "jobs" lists (JOB_BIT), 254 on a bad reply. */
static int listed(json_object *r)
{
	json_object *jobs;
	int mask = 0;

	if (!json_object_object_get_ex(r, "jobs", &jobs))
		return 254;
	for (size_t i = 0; i < json_object_array_length(jobs); i++) {
		int64_t id = hm_json_i64(json_object_array_get_idx(jobs, i), "job_id");

		if (id >= 100 && id <= 105)
			mask |= JOB_BIT(id);
	}
	return mask;
}

static int jobs_seen_by(uint32_t uid, int on_port)
{
	return as_user(uid, on_port, "{\"op\":\"jobs\"}", listed);
}

/* "job": 0 answered, 1 refused (code auth), 2 anything else. */
static int answered(json_object *r)
{
	if (hm_json_bool(r, "ok"))
		return 0;
	return strcmp(hm_json_str(r, "code"), "auth") == 0 ? 1 : 2;
}

static int query_by(uint32_t uid, int on_port, uint32_t job_id)
{
	char req[64];

	snprintf(req, sizeof(req), "{\"op\":\"job\",\"job_id\":%u}", job_id);
	return as_user(uid, on_port, req, answered);
}

/* "explain": 1 when a link names another job as "*" (hidden), 0 when one names
   job 103, 2 neither, 254 no explanation. */
static int others_named(json_object *r)
{
	json_object *x, *links;
	int verdict = 2;

	if (!json_object_object_get_ex(r, "explain", &x) ||
	    !json_object_object_get_ex(x, "links", &links))
		return 254;
	for (size_t i = 0; i < json_object_array_length(links); i++) {
		const char *o = hm_json_str(json_object_array_get_idx(links, i), "other_jobs");

		if (strchr(o, '*'))
			return 1;
		if (strstr(o, "103"))
			verdict = 0;
	}
	return verdict;
}

static int explain_by(uint32_t uid, int on_port, uint32_t job_id)
{
	char req[64];

	snprintf(req, sizeof(req), "{\"op\":\"explain\",\"job_id\":%u}", job_id);
	return as_user(uid, on_port, req, others_named);
}

/* PrivateData=jobs in slurm.conf: "jobs" lists a user's own jobs only (root,
   SlurmUser and the host's operators every one), as squeue does; without it,
   every job. */
static void test_private_jobs(void **state)
{
	char path[] = "/tmp/hm-admit-slurm.conf.XXXXXX";
	int fd = mkstemp(path), st = 0;
	FILE *f = fdopen(fd, "w");
	hm_coord_job_info_t other = {
	    .job_id = 101, .uid = 4242, .nodes = "n3", .mode = "auto", .profile = "resnet50"};
	hm_err_t err = {0};
	pid_t pid;

	(void)state;
	NEED_SERVER();
	assert_non_null(f);
	fprintf(f, "ClusterName=x\nPrivateData=accounts  # not jobs\nSlurmUser=slurm "
		   "PrivateData=usage,Jobs\n");
	fclose(f);
	assert_true(hm_server_slurm_private_jobs(path));
	assert_false(hm_server_slurm_private_jobs("/nonexistent/slurm.conf"));
	hm_coord_job_upsert(coord, &other, &err);
	/* A second server reading that file, on the same engine. */
	setenv("SLURM_CONF", path, 1);
	hm_server_t *s2 = NULL;
	assert_int_equal(hm_server_start(coord, &conf0, 0, &s2, &err), HM_OK);
	unsetenv("SLURM_CONF");
	int p2 = hm_server_port(s2);
	pid = fork();
	if (pid == 0) {
		char *reply = NULL;
		json_object *r, *jobs;
		hm_err_t e = {0};
		int rc = 0;

		if (setgid(OWNER) != 0 || setuid(OWNER) != 0)
			_exit(10);
		for (int k = 0; k < 2 && !rc; k++) {
			if (hm_client_call("127.0.0.1", k ? port : p2, "{\"op\":\"jobs\"}", 3000,
					   &reply, &e) != HM_OK ||
			    !(r = json_tokener_parse(reply)) ||
			    !json_object_object_get_ex(r, "jobs", &jobs))
				_exit(11);
			/* private: job 100 (its own) only; open: 100 and 101 */
			if ((int)json_object_array_length(jobs) != (k ? 2 : 1))
				rc = 12 + k;
			json_object_put(r);
			free(reply);
			reply = NULL;
		}
		_exit(rc);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	{
		char *reply = NULL;
		json_object *r, *jobs;

		/* Root sees every job. */
		assert_int_equal(
		    hm_client_call("127.0.0.1", p2, "{\"op\":\"jobs\"}", 3000, &reply, &err),
		    HM_OK);
		r = json_tokener_parse(reply);
		assert_true(json_object_object_get_ex(r, "jobs", &jobs));
		assert_int_equal(json_object_array_length(jobs), 2);
		json_object_put(r);
		free(reply);
	}
	/* An operator: its own (none) without the host's hook, every job with it; a
	   plain user still its own only. */
	static const hm_server_operator_t ops = {.is_operator = operator_hook};
	assert_int_equal(jobs_seen_by(OPERATOR, p2), 0);
	hm_server_set_operator(s2, &ops);
	assert_int_equal(jobs_seen_by(OPERATOR, p2), JOB_BIT(100) | JOB_BIT(101));
	assert_int_equal(jobs_seen_by(OWNER, p2), JOB_BIT(100));
	hm_server_set_operator(s2, NULL);
	assert_int_equal(jobs_seen_by(OPERATOR, p2), 0);
	hm_server_stop(s2);
	unlink(path);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A second server on the fixture's engine, reading a slurm.conf with PrivateData=jobs. */
static hm_server_t *private_server(void)
{
	char path[] = "/tmp/hm-admit-slurm.conf.XXXXXX";
	int fd = mkstemp(path);
	hm_server_t *s = NULL;
	hm_err_t err = {0};

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "PrivateData=jobs\n", 17), 17);
	close(fd);
	setenv("SLURM_CONF", path, 1);
	assert_int_equal(hm_server_start(coord, &conf0, 0, &s, &err), HM_OK); /* reads it */
	unsetenv("SLURM_CONF");
	unlink(path);
	return s;
}

/* Under PrivateData=jobs an account's coordinator (sacctmgr add coordinator)
   sees the jobs of the accounts it coordinates and no others, in "jobs",
   "job" and the other jobs "explain" names, as squeue; the host is asked once
   per account a request meets. */
static void test_private_jobs_coordinator(void **state)
{
	static const hm_server_operator_t hooks = {.is_operator = operator_hook,
						   .coordinates = coordinates_hook};
	hm_coord_job_info_t jobs[] = {
	    {.job_id = 102,
	     .uid = 4242,
	     .account = "acct_a",
	     .nodes = "n3",
	     .mode = "auto",
	     .profile = "resnet50"},
	    {.job_id = 103, /* shares rack1's uplink with 104 */
	     .uid = 4245,
	     .account = "acct_b",
	     .nodes = "n[3,7]",
	     .mode = "auto",
	     .profile = "resnet50"},
	    {.job_id = 104,
	     .uid = 4245,
	     .account = "acct_a",
	     .nodes = "n[4,8]",
	     .mode = "auto",
	     .profile = "resnet50"},
	};
	hm_server_t *s2;
	hm_err_t err = {0};
	int p2;

	(void)state;
	NEED_SERVER();
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		assert_int_equal(hm_coord_job_upsert(coord, &jobs[i], &err), HM_OK);
	s2 = private_server();
	p2 = hm_server_port(s2);
	/* Without the host's hook: its own jobs (none). */
	assert_int_equal(jobs_seen_by(COORDINATOR, p2), 0);
	assert_int_equal(query_by(COORDINATOR, p2, 102), 1);
	hm_server_set_operator(s2, &hooks);
	atomic_store(&coord_calls, 0);
	assert_int_equal(jobs_seen_by(COORDINATOR, p2), JOB_BIT(102) | JOB_BIT(104));
	assert_int_equal(atomic_load(&coord_calls), 2); /* acct_a and acct_b, once each */
	assert_int_equal(query_by(COORDINATOR, p2, 102), 0);
	assert_int_equal(query_by(COORDINATOR, p2, 103), 1);
	assert_int_equal(query_by(COORDINATOR, p2, 100), 1); /* no account */
	/* Its explanation of 104 shows 103 (acct_b) on their shared links as "*"; the
	   owner of both sees the id. */
	assert_int_equal(explain_by(COORDINATOR, p2, 104), 1);
	assert_int_equal(explain_by(4245, p2, 104), 0);
	/* A member of acct_a who does not coordinate it: its own jobs. */
	assert_int_equal(jobs_seen_by(4245, p2), JOB_BIT(103) | JOB_BIT(104));
	/* The account follows Slurm's (an unchanged job otherwise). */
	jobs[0].account = "acct_b";
	assert_int_equal(hm_coord_job_upsert(coord, &jobs[0], &err), HM_OK);
	assert_int_equal(jobs_seen_by(COORDINATOR, p2), JOB_BIT(104));
	assert_int_equal(query_by(COORDINATOR, p2, 102), 1);
	hm_server_stop(s2);
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		hm_coord_job_remove(coord, jobs[i].job_id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_addr_cap),      cmocka_unit_test(test_user_cap),
	    cmocka_unit_test(test_wake_interval), cmocka_unit_test(test_out_of_fds),
	    cmocka_unit_test(test_private_jobs),  cmocka_unit_test(test_private_jobs_coordinator),
	};
	hm_log_set_level(getenv("HM_TEST_VERBOSE") ? HM_LOG_DEBUG : HM_LOG_ERROR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
