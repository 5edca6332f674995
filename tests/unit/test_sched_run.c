/*
 * Unit tests for sched/harmonics' fail-open start and reconfigure
 * (hm_sched_run.h): an unknown key, an unreadable file, a missing topology and
 * a busy ListenPort leave Harmonics disabled with the cause; a reconfigure
 * with a fixed file starts it; a running coordinator refuses a broken file and
 * keeps its configuration; the AdminComment entry of a disabled Harmonics;
 * a topology.yaml of several topologies read whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_sched_run.h"

typedef struct {
	char dir[64];
	char conf[128];
	hm_sched_env_t env;
} fx_t;

static hm_rc_t switches(void *arg, const hm_topo_opts_t *opts, hm_topo_t **topo, hm_err_t *err)
{
	(void)arg;
	(void)opts;
	(void)err;
	*topo = fixture_topo();
	return HM_OK;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	fx_t *fx = calloc(1, sizeof(*fx));

	snprintf(fx->dir, sizeof(fx->dir), "/tmp/hm-sched-run.XXXXXX");
	if (!fx || !mkdtemp(fx->dir))
		return -1;
	snprintf(fx->conf, sizeof(fx->conf), "%s/harmonics.conf", fx->dir);
	fx->env = (hm_sched_env_t){
	    .conf_path = fx->conf, .state_dir = fx->dir, .slurm_user_id = 0, .switches = switches};
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fx_t *fx = *state;
	char path[160];

	snprintf(path, sizeof(path), "%s/harmonics.state", fx->dir);
	unlink(path);
	unlink(fx->conf);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static void test_unknown_key_then_fixed(void **state)
{
	fx_t *fx = *state;
	hm_sched_run_t r;
	hm_err_t err = {0};
	bool started = false;
	char want[256];

	hm_sched_run_init(&r);
	assert_false(r.enabled);
	write_file(fx->conf, "Policy=fair\nEpochLenght=10s\nListenPort=0\n");
	assert_int_equal(hm_sched_run_start(&r, &fx->env, &err), HM_ERR_INVAL);
	assert_false(r.enabled);
	assert_null(r.coord);
	assert_null(r.srv);
	snprintf(want, sizeof(want), "%s:2: unknown key 'EpochLenght' (accepted: ", fx->conf);
	assert_non_null(strstr(r.why, want));
	assert_string_equal(err.msg, r.why);
	assert_string_equal(r.tag, "harmonics.conf:2");

	/* Still wrong at reconfigure: still disabled, the new cause. */
	write_file(fx->conf, "Policy=fair\nListenPort=70000\n");
	assert_int_not_equal(hm_sched_run_reconfigure(&r, &fx->env, &started, &err), HM_OK);
	assert_false(started);
	assert_false(r.enabled);
	assert_non_null(strstr(r.why, ":2: ListenPort"));
	assert_non_null(strstr(r.why, "70000"));
	assert_string_equal(r.tag, "harmonics.conf:2");

	/* Fixed: the reconfigure starts the coordinator. */
	write_file(fx->conf, "Policy=fair\nEpochLength=10s\nListenPort=0\n");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hm_sched_run_reconfigure(&r, &fx->env, &started, &err), HM_OK);
	assert_true(started);
	assert_true(r.enabled);
	assert_non_null(r.coord);
	assert_true(hm_server_port(r.srv) > 0);
	assert_string_equal(r.conf.policy, "fair");
	assert_string_equal(r.why, "");
	hm_sched_run_stop(&r);
	assert_false(r.enabled);
	assert_null(r.coord);
}

static void test_unreadable_and_missing(void **state)
{
	fx_t *fx = *state;
	hm_sched_run_t r;
	hm_conf_t conf;
	hm_err_t err = {0};
	bool missing = false;
	char want[256];

	/* Missing: the defaults, the state file in StateSaveLocation. */
	assert_int_equal(hm_sched_conf_load(fx->conf, fx->dir, &conf, &missing, &err), HM_OK);
	assert_true(missing);
	snprintf(want, sizeof(want), "%s/harmonics.state", fx->dir);
	assert_string_equal(conf.state_file, want);
	assert_string_equal(conf.source, fx->conf);

	/* A directory where the file should be: it exists and cannot be read. */
	assert_int_equal(mkdir(fx->conf, 0755), 0);
	hm_sched_run_init(&r);
	assert_int_not_equal(hm_sched_run_start(&r, &fx->env, &err), HM_OK);
	rmdir(fx->conf);
	assert_false(r.enabled);
	assert_non_null(strstr(r.why, fx->conf));
	assert_string_equal(r.tag, "harmonics.conf");
}

static void test_topology_missing(void **state)
{
	fx_t *fx = *state;
	hm_sched_run_t r;
	hm_err_t err = {0};

	write_file(fx->conf, "ListenPort=0\nTopology=/nonexistent/topology.conf\n");
	hm_sched_run_init(&r);
	assert_int_not_equal(hm_sched_run_start(&r, &fx->env, &err), HM_OK);
	assert_false(r.enabled);
	assert_non_null(strstr(r.why, "topology: "));
	assert_non_null(strstr(r.why, "/nonexistent/topology.conf"));
	assert_string_equal(r.tag, "topology");
}

/* A topology.yaml beside harmonics.conf is read whole, every topology a plane
 * (slurmctld's switches are only its default topology: not asked). */
static void test_topology_yaml_all(void **state)
{
	fx_t *fx = *state;
	hm_sched_run_t r;
	hm_err_t err = {0};
	char yaml[160], cmd[512];
	const char *top = getenv("top_srcdir");

	snprintf(yaml, sizeof(yaml), "%s/topology.yaml", fx->dir);
	snprintf(cmd, sizeof(cmd), "cp %s/tests/fixtures/topo/two_topologies.yaml %s",
		 top ? top : ".", yaml);
	assert_int_equal(system(cmd), 0);
	write_file(fx->conf, "ListenPort=0\n");
	fx->env.switches = NULL; /* would give the fixture's one-plane tree */
	hm_sched_run_init(&r);
	assert_int_equal(hm_sched_run_start(&r, &fx->env, &err), HM_OK);
	assert_true(r.enabled);
	assert_int_equal(r.coord->topo->nplanes, 3);
	assert_string_equal(r.coord->topo->planes[1].name, "nvl");
	hm_sched_run_stop(&r);
	/* With slurmctld's switches at hand the file still wins. */
	fx->env.switches = switches;
	hm_sched_run_init(&r);
	assert_int_equal(hm_sched_run_start(&r, &fx->env, &err), HM_OK);
	assert_int_equal(r.coord->topo->nplanes, 3);
	hm_sched_run_stop(&r);
	unlink(yaml);
}

static void test_port_busy(void **state)
{
	fx_t *fx = *state;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t slen = sizeof(sa);
	hm_sched_run_t r;
	hm_err_t err = {0};
	bool started = false;
	char text[128], want[128];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &slen), 0);
	snprintf(text, sizeof(text), "ListenAddress=127.0.0.1\nListenPort=%d\n",
		 ntohs(sa.sin_port));
	write_file(fx->conf, text);

	hm_sched_run_init(&r);
	assert_int_equal(hm_sched_run_start(&r, &fx->env, &err), HM_ERR_IO);
	assert_false(r.enabled);
	assert_null(r.coord);
	snprintf(want, sizeof(want), "server: cannot listen on 127.0.0.1:%d: ", ntohs(sa.sin_port));
	assert_non_null(strstr(r.why, want));
	assert_non_null(strstr(r.why, "Address already in use"));
	snprintf(want, sizeof(want), "listen-127.0.0.1:%d", ntohs(sa.sin_port));
	assert_string_equal(r.tag, want);

	/* Freed: the next reconfigure starts it on that port. */
	close(fd);
	assert_int_equal(hm_sched_run_reconfigure(&r, &fx->env, &started, &err), HM_OK);
	assert_true(started && r.enabled);
	assert_int_equal(hm_server_port(r.srv), ntohs(sa.sin_port));
	hm_sched_run_stop(&r);
}

static void test_running_refuses_broken_file(void **state)
{
	fx_t *fx = *state;
	hm_sched_run_t r;
	hm_err_t err = {0};
	bool started = true;
	char path[160];
	struct stat st;
	int port;

	write_file(fx->conf, "Policy=fair\nListenPort=0\n");
	hm_sched_run_init(&r);
	assert_int_equal(hm_sched_run_start(&r, &fx->env, &err), HM_OK);
	port = hm_server_port(r.srv);

	/* Broken: refused, the running coordinator keeps its configuration. */
	write_file(fx->conf, "Policy=crux\nListenPort=0\nBogus=1\n");
	assert_int_equal(hm_sched_run_reconfigure(&r, &fx->env, &started, &err), HM_ERR_INVAL);
	assert_false(started);
	assert_non_null(strstr(err.msg, ":3: unknown key 'Bogus'"));
	assert_true(r.enabled);
	assert_string_equal(r.conf.policy, "fair");
	assert_int_equal(hm_server_port(r.srv), port);

	/* A good change goes to the running coordinator. */
	write_file(fx->conf, "Policy=crux\nListenPort=0\n");
	assert_int_equal(hm_sched_run_reconfigure(&r, &fx->env, &started, &err), HM_OK);
	assert_false(started);
	assert_string_equal(r.conf.policy, "crux");

	/* Stopping saves the state file in StateSaveLocation. */
	hm_sched_run_stop(&r);
	snprintf(path, sizeof(path), "%s/harmonics.state", fx->dir);
	assert_int_equal(stat(path, &st), 0);
	hm_sched_run_stop(&r); /* twice is fine */
}

static void test_disabled_comment(void **state)
{
	char buf[512];
	const double t = 1.8e9; /* 2027-01-15T08:00:00Z */

	(void)state;
	assert_true(hm_sched_disabled_comment(NULL, "harmonics.conf:3", t, 512, buf, sizeof(buf)));
	assert_string_equal(buf,
			    "harmonics:e0@2027-01-15T08:00:00Z off=disabled(harmonics.conf:3);");
	/* Said already: nothing new, also later. */
	assert_false(hm_sched_disabled_comment(
	    "harmonics:e0@2027-01-15T08:00:00Z off=disabled(harmonics.conf:3);", "harmonics.conf:3",
	    t + 60, 512, buf, sizeof(buf)));
	/* Another cause, or a decision since: appended after an admin's text. */
	assert_true(hm_sched_disabled_comment("ticket 42 harmonics:e3@2027-01-15T07:00:00Z p=fair "
					      "free prio=1;",
					      "listen-127.0.0.1:6830", t, 512, buf, sizeof(buf)));
	assert_string_equal(buf, "ticket 42 harmonics:e3@2027-01-15T07:00:00Z p=fair free prio=1;"
				 "harmonics:e0@2027-01-15T08:00:00Z off=disabled(listen-127.0.0.1:"
				 "6830);");
	/* No room within AdminCommentMaxBytes: the comment stays. */
	assert_false(hm_sched_disabled_comment("0123456789", "x", t, 40, buf, sizeof(buf)));
	assert_false(hm_sched_disabled_comment("0123456789", "x", t, 512, buf, 20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_unknown_key_then_fixed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unreadable_and_missing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_topology_missing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_topology_yaml_all, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_port_busy, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_running_refuses_broken_file, setup, teardown),
	    cmocka_unit_test(test_disabled_comment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
