/*
 * The coordinator's addresses (hm_coord_addr.h): CoordinatorHost lists,
 * slurm.conf's SlurmctldHost lines, the default order, the address a
 * controller's coordinator binds, and a client that tries each address in turn
 * (real TCP on 127.0.0.1 and 127.0.0.2, real munge; skipped without munged).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hm_client.h"
#include "hm_conf.h"
#include "hm_coord_addr.h"
#include "hm_proto.h"
#include "munge_fixture.h"

static void test_list_parse(void **state)
{
	hm_coord_addrs_t a;
	hm_err_t err = {0};
	static const struct {
		const char *list, *want; /* want: a word of the message */
	} bad[] = {
	    {"", "not a host name"},   {",a", "not a host name"},
	    {"a,", "not a host name"}, {"a,,b", "separated by ','"},
	    {"a b", "'a b'"},          {"a/b", "'a/b'"},
	    {"ctl1,ctl1", "twice"},    {"a,b,c,d,e,f,g,h,i", "more than 8"},
	    {"a,(b)", "'(b)'"},
	};

	(void)state;
	assert_int_equal(hm_coord_addrs_parse("ctl1", &a, &err), HM_OK);
	assert_int_equal(a.n, 1);
	assert_string_equal(a.host[0], "ctl1");
	assert_int_equal(hm_coord_addrs_parse("10.0.0.1,ctl-2.example,c_3", &a, &err), HM_OK);
	assert_int_equal(a.n, 3);
	assert_string_equal(a.host[1], "ctl-2.example");
	assert_string_equal(a.host[2], "c_3");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hm_coord_addrs_t keep = {.n = 42};

		memset(&err, 0, sizeof(err));
		if (hm_coord_addrs_parse(bad[i].list, &keep, &err) == HM_OK)
			fail_msg("accepted '%s'", bad[i].list);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].list, err.msg,
				 bad[i].want);
		assert_int_equal(keep.n, 42); /* untouched on error */
	}
	{ /* 63 characters fit, 64 do not */
		char name[80];

		memset(name, 'a', 64);
		name[64] = '\0';
		assert_int_not_equal(hm_coord_addrs_parse(name, &a, &err), HM_OK);
		name[63] = '\0';
		assert_int_equal(hm_coord_addrs_parse(name, &a, &err), HM_OK);
	}
	{
		char buf[64];

		assert_int_equal(hm_coord_addrs_parse("a,b", &a, &err), HM_OK);
		hm_coord_addrs_format(&a, buf, sizeof(buf));
		assert_string_equal(buf, "a,b");
	}
}

static hm_rc_t parse_text(const char *text, hm_ctld_hosts_t *out, hm_err_t *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	hm_rc_t rc;

	assert_non_null(f);
	rc = hm_ctld_hosts_parse(f, "slurm.conf", out, err);
	fclose(f);
	return rc;
}

static void test_slurmctld_hosts(void **state)
{
	hm_ctld_hosts_t c;
	hm_err_t err = {0};
	static const struct {
		const char *text, *want;
	} bad[] = {
	    {"SlurmctldHost=ctl(10.0.0.1\n", "slurm.conf:1: SlurmctldHost=ctl(10.0.0.1 "},
	    {"ClusterName=x\nSlurmctldHost=ctl)\n", "slurm.conf:2:"},
	    {"SlurmctldHost=(10.0.0.1)\n", "NAME or NAME(ADDR)"},
	    {"SlurmctldHost=\n", "SlurmctldHost= is not"},
	    {"SlurmctldHost=a(b)c\n", "a(b)c"},
	    {"SlurmctldHost=a()\n", "a()"},
	    {"SlurmctldHost=a(b(c))\n", "a(b(c))"},
	    {"SlurmctldHost=a/b\n", "a/b"},
	};

	(void)state;
	assert_int_equal(
	    parse_text("# a site\n"
		       "SlurmctldHost=ctl1(10.0.0.1)\n"
		       "  slurmctldhost=ctl2 # the backup, its name is its address\n"
		       "#SlurmctldHost=old(10.9.9.9)\n"
		       "ClusterName=x SlurmctldHost=ctl3(10.0.0.3)\tSlurmctldPort=6817\n"
		       "SlurmctldHostX=no\n",
		       &c, &err),
	    HM_OK);
	assert_int_equal(c.n, 3);
	assert_string_equal(c.h[0].name, "ctl1");
	assert_string_equal(c.h[0].addr, "10.0.0.1");
	assert_string_equal(c.h[1].name, "ctl2");
	assert_string_equal(c.h[1].addr, "ctl2");
	assert_string_equal(c.h[2].addr, "10.0.0.3");
	assert_int_equal(parse_text("ClusterName=x\n", &c, &err), HM_OK);
	assert_int_equal(c.n, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (parse_text(bad[i].text, &c, &err) == HM_OK)
			fail_msg("accepted '%s'", bad[i].text);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].text, err.msg,
				 bad[i].want);
	}
	{ /* at most 8 controllers */
		char text[512] = "";

		for (int i = 0; i < 9; i++)
			snprintf(text + strlen(text), sizeof(text) - strlen(text),
				 "SlurmctldHost=c%d\n", i);
		assert_int_equal(parse_text(text, &c, &err), HM_ERR_PARSE);
		assert_non_null(strstr(err.msg, "slurm.conf:9: more than 8"));
	}
}

/* The order: CoordinatorHost, else one ListenAddress, else SlurmctldHost, else loopback. */
static void test_default_order(void **state)
{
	hm_conf_t conf;
	hm_ctld_hosts_t ctld = {
	    .n = 2,
	    .h = {{.name = "ctl1", .addr = "10.0.0.1"}, {.name = "ctl2", .addr = "ctl2.example"}}};
	hm_coord_addrs_t a;
	hm_err_t err = {0};

	(void)state;
	hm_conf_defaults(&conf);
	hm_coord_addrs_of(&conf, &ctld, &a);
	assert_int_equal(a.n, 2);
	assert_string_equal(a.host[0], "10.0.0.1");
	assert_string_equal(a.host[1], "ctl2.example");
	hm_coord_addrs_of(&conf, NULL, &a);
	assert_int_equal(a.n, 1);
	assert_string_equal(a.host[0], "127.0.0.1");
	assert_int_equal(hm_conf_load_string("ListenAddress=0.0.0.0\n", "t", &conf, &err), HM_OK);
	hm_coord_addrs_of(&conf, &ctld, &a);
	assert_int_equal(a.n, 2); /* every interface: the controllers' addresses */
	assert_int_equal(hm_conf_load_string("ListenAddress=10.1.1.1\n", "t", &conf, &err), HM_OK);
	hm_coord_addrs_of(&conf, &ctld, &a);
	assert_int_equal(a.n, 1); /* one address named: a floating IP */
	assert_string_equal(a.host[0], "10.1.1.1");
	assert_int_equal(hm_conf_load_string("ListenAddress=10.1.1.1\nCoordinatorHost=b1,b2\n", "t",
					     &conf, &err),
			 HM_OK);
	hm_coord_addrs_of(&conf, &ctld, &a);
	assert_int_equal(a.n, 2);
	assert_string_equal(a.host[0], "b1");
	assert_string_equal(a.host[1], "b2");
	assert_int_equal(hm_conf_load_string("ListenAddress=\n", "t", &conf, &err), HM_OK);
	assert_string_equal(conf.listen_addr, "");
}

/* hm_coord_addrs_load reads slurm.conf only when it needs it. */
static void test_load_file(void **state)
{
	char path[] = "/tmp/hm-test-slurm-conf-XXXXXX";
	int fd = mkstemp(path);
	const char text[] = "SlurmctldHost=p(127.0.0.1)\nSlurmctldHost=b(127.0.0.2)\n";
	hm_conf_t conf;
	hm_coord_addrs_t a;
	hm_err_t err = {0};

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	hm_conf_defaults(&conf);
	assert_int_equal(hm_coord_addrs_load(&conf, path, &a, &err), HM_OK);
	assert_int_equal(a.n, 2);
	assert_string_equal(a.host[1], "127.0.0.2");
	unlink(path);
	assert_int_equal(hm_coord_addrs_load(&conf, path, &a, &err), HM_ERR_IO);
	assert_non_null(strstr(err.msg, path));
	assert_int_equal(a.n, 1); /* still a list to try */
	assert_string_equal(a.host[0], "127.0.0.1");
	snprintf(conf.coordinator_host, sizeof(conf.coordinator_host), "x1,x2");
	assert_int_equal(hm_coord_addrs_load(&conf, path, &a, &err), HM_OK); /* not read */
	assert_int_equal(a.n, 2);
}

static void test_bind_addr(void **state)
{
	char buf[64];
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_coord_bind_addr(NULL, buf, sizeof(buf), &err), HM_OK);
	assert_string_equal(buf, "127.0.0.1");
	assert_int_equal(hm_coord_bind_addr("127.0.0.2", buf, sizeof(buf), &err), HM_OK);
	assert_string_equal(buf, "127.0.0.2");
	assert_int_equal(hm_coord_bind_addr("localhost", buf, sizeof(buf), &err), HM_OK);
	assert_string_equal(buf, "127.0.0.1");
	assert_int_equal(hm_coord_bind_addr("no-such-host.invalid", buf, sizeof(buf), &err),
			 HM_ERR_IO);
	assert_non_null(strstr(err.msg, "no-such-host.invalid"));
}

/* ---- a client over a list: a coordinator stand-in on 127.0.0.2 only ---------- */

typedef struct {
	int lfd;
	int served;
} echo_t;

/* Accept one connection, answer its sealed request with a sealed {"ok":true}. */
static void *serve_one(void *arg)
{
	echo_t *e = arg;
	int fd = accept(e->lfd, NULL, NULL);
	char *frame = NULL, *json = NULL, *cred = NULL;
	size_t len;
	uint32_t uid, gid;
	hm_err_t err = {0};
	int64_t deadline = hm_proto_now_ms() + 5000;

	if (fd < 0)
		return NULL;
	if (hm_proto_recv(fd, 65536, deadline, &frame, &len, &err) == HM_OK &&
	    hm_proto_unseal(frame, &json, &uid, &gid, &err) == HM_OK &&
	    hm_proto_seal("{\"ok\":true}", HM_PROTO_UID_ANY, &cred, &err) == HM_OK &&
	    hm_proto_send(fd, cred, strlen(cred), deadline, &err) == HM_OK)
		e->served++;
	close(fd);
	free(frame);
	free(json);
	free(cred);
	return NULL;
}

static int listen_on(const char *ip, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	inet_pton(AF_INET, ip, &sa.sin_addr);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 4) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void test_call_list(void **state)
{
	hm_coord_addrs_t a;
	hm_err_t err = {0};
	echo_t e = {.lfd = -1};
	pthread_t t;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char *reply = NULL;
	int answered = -2, port;

	(void)state;
	if (!munge_up())
		skip();
	/* The backup's coordinator: 127.0.0.2 only; nothing on 127.0.0.1 at its port. */
	e.lfd = listen_on("127.0.0.2", 0);
	assert_true(e.lfd >= 0);
	assert_int_equal(getsockname(e.lfd, (struct sockaddr *)&sa, &sl), 0);
	port = ntohs(sa.sin_port);
	assert_int_equal(hm_coord_addrs_parse("127.0.0.1", &a, &err), HM_OK);
	assert_int_not_equal(
	    hm_client_call_list(&a, port, "{}", 2000, NULL, 0, &reply, &answered, &err),
	    HM_OK); /* one address: the primary alone is not enough */
	assert_int_equal(answered, -1);
	assert_int_equal(hm_coord_addrs_parse("127.0.0.1,127.0.0.2", &a, &err), HM_OK);
	assert_int_equal(pthread_create(&t, NULL, serve_one, &e), 0);
	assert_int_equal(
	    hm_client_call_list(&a, port, "{}", 2000, NULL, 0, &reply, &answered, &err), HM_OK);
	pthread_join(t, NULL);
	assert_int_equal(answered, 1);
	assert_int_equal(e.served, 1);
	assert_non_null(strstr(reply, "\"ok\""));
	free(reply);
	reply = NULL;
	close(e.lfd);
	/* None answers: the error names each address tried. */
	assert_int_not_equal(
	    hm_client_call_list(&a, port, "{}", 2000, NULL, 0, &reply, &answered, &err), HM_OK);
	assert_null(reply);
	assert_non_null(strstr(err.msg, "127.0.0.1:"));
	assert_non_null(strstr(err.msg, "127.0.0.2:"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_list_parse),    cmocka_unit_test(test_slurmctld_hosts),
	    cmocka_unit_test(test_default_order), cmocka_unit_test(test_load_file),
	    cmocka_unit_test(test_bind_addr),     cmocka_unit_test(test_call_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
