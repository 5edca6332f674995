/*
 * The node agent end to end against a FAKE coordinator (fake_coord.c: real TCP
 * on 127.0.0.1, real munge), loaded as slurmd's SPANK plugin will load it:
 * dlopen(harmonics_agent.so) and its three-symbol ABI. Checks, in order:
 *   1. the hello carries the node's topology (HWLOC_XMLFILE = the dgx8 fixture);
 *   2. validity is renewed at every answered beat;
 *   3. a pushed decision reaches the assign file (prints the latency);
 *   4. measurements of a real harmonics-emujob (libharmonics-pace reports)
 *      reach the beats and match the emujob's own mean iteration;
 *   5. the agent reconnects when the coordinator comes back;
 *   6. a node the coordinator refuses is logged once and retried with back-off;
 *   7. when the coordinator goes silent the file stops being renewed and its
 *      VALID_UNTIL_US passes within the fail-open bound (prints it);
 *   8. hm_agent_stop() joins within its bound (prints the time).
 * Skips (exit 77) when munged is not running. Prints "agent-live:" lines.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../unit/munge_fixture.h"
#include "fake_coord.h"
#include "hm_agent.h"

#define HEARTBEAT_MS 200
#define VALID_MS     600
#define LEAD_MS      400
#define PERIOD_US    50000

static char g_dir[200], g_job[300];
static int g_failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fprintf(stderr, "\n");                                                     \
			g_failures++;                                                              \
		}                                                                                  \
	} while (0)

/* ---- the agent's log ------------------------------------------------------------ */

static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[64 * 1024];
static size_t g_log_len;

static void collect(int level, const char *msg)
{
	pthread_mutex_lock(&g_log_mu);
	g_log_len +=
	    (size_t)snprintf(g_log + g_log_len, sizeof(g_log) - g_log_len, "%d %s\n", level, msg);
	if (g_log_len >= sizeof(g_log))
		g_log_len = sizeof(g_log) - 1;
	pthread_mutex_unlock(&g_log_mu);
	fprintf(stderr, "  [agent] %s\n", msg);
}

static int log_count(const char *needle)
{
	int n = 0;

	pthread_mutex_lock(&g_log_mu);
	for (const char *p = g_log; (p = strstr(p, needle)); p++)
		n++;
	pthread_mutex_unlock(&g_log_mu);
	return n;
}

/* ---- time and the assign file -------------------------------------------------- */

static int64_t real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* A key of the assign file, -1 when the file or the key is absent. */
static int64_t assign_key(const char *key)
{
	char path[500], text[4096], pat[80];
	FILE *f;
	size_t n;
	const char *p;

	snprintf(path, sizeof(path), "%s/assign", g_job);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	snprintf(pat, sizeof(pat), "\n%s=", key);
	if (!(p = strstr(text, pat)))
		return -1;
	return strtoll(p + strlen(pat), NULL, 10);
}

/* Wait up to ms for the assign file's key to lie in [lo, hi]; returns the wait in us or -1. */
static int64_t wait_key_in(const char *key, int64_t lo, int64_t hi, int ms)
{
	int64_t t0 = real_us(), v;

	while (real_us() - t0 < (int64_t)ms * 1000) {
		v = assign_key(key);
		if (v >= lo && v <= hi)
			return real_us() - t0;
		sleep_ms(1);
	}
	return -1;
}

static int64_t wait_key(const char *key, int64_t want, int ms)
{
	return wait_key_in(key, want, want, ms);
}

static void wait_seen(fake_coord_t *f, int ms, bool (*pred)(const fake_seen_t *, int), int arg,
		      fake_seen_t *out)
{
	int64_t t0 = real_us();

	for (;;) {
		fake_seen(f, out);
		if (pred(out, arg) || real_us() - t0 > (int64_t)ms * 1000)
			return;
		json_object_put(out->hello);
		json_object_put(out->beat);
		sleep_ms(5);
	}
}

static bool hellos_at_least(const fake_seen_t *s, int n)
{
	return s->hellos >= n;
}

static bool beats_at_least(const fake_seen_t *s, int n)
{
	return s->beats >= n;
}

static void put_seen(fake_seen_t *s)
{
	json_object_put(s->hello);
	json_object_put(s->beat);
}

/* The decision for job 42 the fake answers with: epoch, and optionally a next one. */
static void decide(fake_coord_t *f, long epoch, long next_epoch, int64_t effective_us)
{
	char jobs[1024], next[400] = "";

	if (next_epoch >= 0)
		snprintf(next, sizeof(next),
			 ",\"next\":{\"effective_us\":%" PRId64 ",\"epoch\":%ld,\"policy\":"
			 "\"harmonics\",\"period_us\":%d,\"shift_us\":%d,\"origin_us\":0,"
			 "\"guard_us\":5000,\"prio\":2}",
			 effective_us, next_epoch, PERIOD_US, PERIOD_US / 2);
	snprintf(
	    jobs, sizeof(jobs),
	    "[{\"job_id\":42,\"uid\":0,\"scheduled\":true,\"policy\":\"harmonics\",\"epoch\":%ld,"
	    "\"period_us\":%d,\"shift_us\":0,\"origin_us\":0,\"guard_us\":5000,\"prio\":1%s}]",
	    epoch, PERIOD_US, next);
	fake_set_jobs(f, jobs);
}

/* ---- steps ---------------------------------------------------------------------- */

static void check_hello(fake_coord_t *f)
{
	fake_seen_t s;
	json_object *topo, *nics, *map, *jobs, *v;
	const int want[8] = {0, 0, 1, 1, 2, 2, 3, 3};

	wait_seen(f, 5000, hellos_at_least, 1, &s);
	CHECK(s.hellos == 1 && s.hello, "no hello within 5 s");
	if (!s.hello)
		return;
	CHECK(json_object_object_get_ex(s.hello, "node", &v) &&
		  strcmp(json_object_get_string(v), "n1") == 0,
	      "node");
	CHECK(json_object_object_get_ex(s.hello, "seq", &v) && json_object_get_int(v) == 1,
	      "seq 1");
	CHECK(json_object_object_get_ex(s.hello, "topo", &topo) && topo, "no topology");
	if (topo) {
		CHECK(json_object_object_get_ex(topo, "gpus", &v) && json_object_get_int(v) == 8,
		      "gpus %s", json_object_to_json_string(topo));
		CHECK(json_object_object_get_ex(topo, "nics", &nics) &&
			  json_object_array_length(nics) == 4,
		      "4 nics");
		for (int i = 0; nics && i < 4; i++) {
			char name[16];

			snprintf(name, sizeof(name), "mlx5_%d", i);
			CHECK(json_object_object_get_ex(json_object_array_get_idx(nics, i), "name",
							&v) &&
				  strcmp(json_object_get_string(v), name) == 0,
			      "nic %d", i);
		}
		CHECK(json_object_object_get_ex(topo, "gpu_nic", &map) &&
			  json_object_array_length(map) == 8,
		      "gpu_nic");
		for (int g = 0; map && g < 8; g++)
			CHECK(json_object_get_int(json_object_array_get_idx(map, g)) == want[g],
			      "gpu %d on nic %d", g,
			      json_object_get_int(json_object_array_get_idx(map, g)));
	}
	CHECK(json_object_object_get_ex(s.hello, "jobs", &jobs) &&
		  json_object_array_length(jobs) == 1 &&
		  json_object_get_int(
		      json_object_object_get(json_object_array_get_idx(jobs, 0), "job_id")) == 42,
	      "hello lists job 42: %s", json_object_to_json_string(s.hello));
	put_seen(&s);
}

/* Validity follows the answered beats: it rises at least every other heartbeat. */
static void check_renewal(void)
{
	int64_t prev = assign_key("HARMONICS_VALID_UNTIL_US"), rises = 0;

	for (int i = 0; i < 10; i++) {
		int64_t v, now;

		sleep_ms(HEARTBEAT_MS / 2);
		v = assign_key("HARMONICS_VALID_UNTIL_US");
		now = real_us();
		CHECK(v > now && v <= now + VALID_MS * 1000, "valid until %" PRId64 " at %" PRId64,
		      v, now);
		rises += v > prev;
		prev = v;
	}
	CHECK(rises >= 4, "renewed %" PRId64 " times in %d ms", rises, 5 * HEARTBEAT_MS);
	printf("agent-live: validity renewed %" PRId64 " times in %d ms (heartbeat %d ms)\n", rises,
	       5 * HEARTBEAT_MS, HEARTBEAT_MS);
}

static void check_push(fake_coord_t *f, int64_t *effective_us)
{
	int64_t t_sent, waited;

	*effective_us = real_us() + 400000 + LEAD_MS * 1000;
	decide(f, 2, 3, *effective_us);
	t_sent = fake_push(f);
	CHECK(t_sent > 0, "no connection to push on");
	waited = wait_key("HARMONICS_EPOCH", 2, 10000);
	CHECK(waited >= 0, "epoch 2 not in the file within 10 s");
	if (waited >= 0) {
		int64_t latency = real_us() - t_sent;

		printf("agent-live: push-to-file latency %.1f ms (pushed decision -> assign file "
		       "holds it)\n",
		       latency / 1000.0);
		CHECK(latency < 500000, "push latency %" PRId64 " us", latency);
	}
	CHECK(assign_key("HARMONICS_NEXT_EPOCH") == 3, "next epoch 3 pending");
	CHECK(assign_key("HARMONICS_NEXT_EFFECTIVE_US") == *effective_us, "switch time");
}

/* A real emujob (libharmonics-pace) writes reports into the job directory. */
static void check_measurements(fake_coord_t *f, int64_t effective_us)
{
	char cmd[2048], out[400], line[256];
	const char *top = getenv("top_builddir");
	double emu_mean_ms = -1, agent_mean_ms;
	fake_seen_t s0, s;
	FILE *p;

	snprintf(out, sizeof(out), "%s/emujob.json", g_dir);
	snprintf(cmd, sizeof(cmd),
		 "HARMONICS_ASSIGN_FILE=%s/assign HARMONICS_REPORT_FILE=%s/report.0.%%r "
		 "%s/src/tools/harmonics-emujob --local 2 --compute 20ms --bytes 64KB "
		 "--iterations 40 --warmup 2 --timeout 10s --json > %s",
		 g_job, g_job, top ? top : ".", out);
	CHECK(system(cmd) == 0, "emujob failed: %s", cmd);
	fake_seen(f, &s0); /* the final reports are written at exit: the next beats carry them */
	put_seen(&s0);
	if (!(p = fopen(out, "r")))
		return;
	/* "iter_ms":{ then "mean":X */
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "\"iter_ms\"") && fgets(line, sizeof(line), p) &&
		    sscanf(line, " \"mean\":%lf", &emu_mean_ms) == 1)
			break;
	fclose(p);
	CHECK(emu_mean_ms > 0, "no mean iteration in %s", out);
	wait_seen(f, 3000, beats_at_least, s0.beats + 2, &s);
	agent_mean_ms = s.meas_samples > 0 ? s.meas_iter_weighted / s.meas_samples / 1000 : -1;
	printf("agent-live: measured by the agent over %.0f samples: mean iteration %.2f ms; the "
	       "emujob's own mean %.2f ms (%+.1f%%)\n",
	       s.meas_samples, agent_mean_ms, emu_mean_ms,
	       100 * (agent_mean_ms - emu_mean_ms) / emu_mean_ms);
	CHECK(s.meas_samples >= 2 * 40, "samples %.0f", s.meas_samples);
	CHECK(agent_mean_ms > emu_mean_ms * 0.9 && agent_mean_ms < emu_mean_ms * 1.1,
	      "agent %.2f ms vs emujob %.2f ms", agent_mean_ms, emu_mean_ms);
	CHECK(emu_mean_ms > PERIOD_US / 1000.0 * 0.9, "the emujob was paced (slots of %d ms)",
	      PERIOD_US / 1000);
	CHECK(s.max_ranks == 2 && s.max_steps == 1, "ranks %d steps %d", s.max_ranks, s.max_steps);
	CHECK(real_us() < effective_us || s.applied_epoch == 3,
	      "applied epoch %ld after the switch to epoch 3", s.applied_epoch);
	put_seen(&s);
}

static void check_promotion(int64_t effective_us)
{
	int64_t due = effective_us + PERIOD_US + 1000000;

	while (real_us() < due + 50000)
		sleep_ms(20);
	sleep_ms(HEARTBEAT_MS);
	CHECK(assign_key("HARMONICS_EPOCH") == 3 && assign_key("HARMONICS_NEXT_EPOCH") == -1,
	      "next promoted to current after T + period + 1 s");
}

static void check_reconnect(fake_coord_t *f)
{
	fake_seen_t s0, s;
	int64_t t_up;

	fake_seen(f, &s0);
	put_seen(&s0);
	fake_down(f);
	sleep_ms(1000);
	CHECK(fake_up(f), "listen again on port %d", fake_port(f));
	t_up = real_us();
	wait_seen(f, 10000, hellos_at_least, s0.hellos + 1, &s);
	CHECK(s.hellos > s0.hellos, "no reconnection within 10 s");
	printf("agent-live: reconnected %.0f ms after the coordinator listened again (down 1 s)\n",
	       (s.last_hello_us - t_up) / 1000.0);
	put_seen(&s);
	/* The hello reaches the fake before the agent writes the answer: wait for the write. */
	CHECK(wait_key_in("HARMONICS_VALID_UNTIL_US", t_up + 1, INT64_MAX, 10000) >= 0 &&
		  assign_key("HARMONICS_EPOCH") == 3,
	      "renewed after the reconnection");
}

/* The fake switched to mode and the agent's connection dropped: *s0 before,
   *s once the agent has said hello three more times. */
static void provoke(fake_coord_t *f, fake_mode_t mode, fake_seen_t *s0, fake_seen_t *s)
{
	fake_seen(f, s0);
	put_seen(s0);
	fake_set_mode(f, mode);
	fake_drop(f);
	wait_seen(f, 6000, hellos_at_least, s0->hellos + 3, s);
}

/* Back to answering after provoke(): when it answered (real_us), once the agent
   has said hello again. */
static int64_t answer_again(fake_coord_t *f, fake_seen_t *s)
{
	fake_seen_t s1;
	int64_t t_answer;

	put_seen(s);
	fake_set_mode(f, FAKE_ANSWER);
	t_answer = real_us();
	wait_seen(f, 10000, hellos_at_least, s->hellos + 1, &s1);
	put_seen(&s1);
	return t_answer;
}

static void check_refused(fake_coord_t *f)
{
	fake_seen_t s0, s;
	int before = log_count("refused node 'n1'");
	int64_t t_answer;

	provoke(f, FAKE_REFUSE, &s0, &s);
	printf("agent-live: refused node: %d attempts, %d log line(s)\n", s.hellos - s0.hellos,
	       log_count("refused node 'n1'") - before);
	CHECK(s.hellos - s0.hellos >= 3, "retried %d times", s.hellos - s0.hellos);
	CHECK(log_count("refused node 'n1'") - before == 1, "the refusal is logged once");
	CHECK(log_count("node n1 is not in the topology") >= 1,
	      "the coordinator's reason is logged");
	t_answer = answer_again(f, &s);
	CHECK(wait_key_in("HARMONICS_VALID_UNTIL_US", t_answer + 1, INT64_MAX, 10000) >= 0 &&
		  assign_key("HARMONICS_EPOCH") == 3,
	      "served again after the refusals");
}

/* A coordinator whose frames are bound to another coordinator (issue 28): the agent
   refuses its welcome before decoding it, logs it once, retries, never beats. */
static void check_bound_elsewhere(fake_coord_t *f)
{
	fake_seen_t s0, s;
	int before = log_count("frame bound to");
	int64_t t_answer;

	provoke(f, FAKE_ELSEWHERE, &s0, &s);
	printf("agent-live: frames bound elsewhere: %d attempts, %d beats, %d log line(s)\n",
	       s.hellos - s0.hellos, s.beats - s0.beats, log_count("frame bound to") - before);
	CHECK(s.hellos - s0.hellos >= 3, "retried %d times", s.hellos - s0.hellos);
	CHECK(s.beats == s0.beats, "no beat to a coordinator whose welcome is bound elsewhere");
	CHECK(log_count("frame bound to") - before == 1, "the refusal is logged once");
	t_answer = answer_again(f, &s);
	CHECK(wait_key_in("HARMONICS_VALID_UNTIL_US", t_answer + 1, INT64_MAX, 10000) >= 0,
	      "served again once the frames are bound to it");
}

static void check_fail_open(fake_coord_t *f)
{
	fake_seen_t s;
	int64_t v1, v2, bound;

	sleep_ms(2 * HEARTBEAT_MS); /* in the steady state */
	fake_set_mode(f, FAKE_SILENT);
	sleep_ms(VALID_MS + 500);
	fake_seen(f, &s);
	v1 = assign_key("HARMONICS_VALID_UNTIL_US");
	sleep_ms(VALID_MS);
	v2 = assign_key("HARMONICS_VALID_UNTIL_US");
	bound = v1 - s.last_sent_us;
	printf("agent-live: fail-open bound %.1f ms: the file's VALID_UNTIL_US minus the "
	       "coordinator's last frame (AgentValidity %d ms)\n",
	       bound / 1000.0, VALID_MS);
	CHECK(v1 == v2, "not renewed while the coordinator is silent");
	CHECK(v1 < real_us(), "stale now");
	CHECK(bound >= (VALID_MS - 20) * 1000 && bound <= (VALID_MS + 100) * 1000,
	      "bound %" PRId64 " us", bound);
	CHECK(log_count("silent for 600 ms") == 1, "the silence is logged once");
	put_seen(&s);
}

/* What the SPANK glue may get wrong is refused with a log line, and stop is always safe. */
static void check_abi_refusals(int (*start)(const hm_agent_args_t *), int (*stop)(void))
{
	hm_agent_args_t a;
	char bad[300];
	FILE *cf;

	CHECK(stop() == 0, "stop before any start");
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.version = HM_AGENT_ABI_VERSION + 1;
	a.log = collect;
	CHECK(start(&a) == -1 && log_count("another ABI") == 1, "a later ABI version is refused");
	a.version = HM_AGENT_ABI_VERSION;
	a.size = offsetof(hm_agent_args_t, topo_xml); /* shorter than 0.1's */
	CHECK(start(&a) == -1 && log_count("another ABI") == 2, "a short args struct is refused");
	snprintf(bad, sizeof(bad), "%s/bad.conf", g_dir);
	if (!(cf = fopen(bad, "w")))
		return;
	fprintf(cf, "# bad\nUpdateLead=forever\n");
	fclose(cf);
	a.size = sizeof(a);
	a.node = "n1";
	a.conf_path = bad;
	a.slurm_user_uid = HM_AGENT_NO_UID;
	CHECK(start(&a) == -1 && log_count("bad.conf:2: UpdateLead: 'forever'") == 1,
	      "a bad harmonics.conf is refused with file:line");
	CHECK(stop() == 0, "stop after a failed start");
}

int main(void)
{
	const char *top = getenv("top_builddir"), *src = getenv("top_srcdir");
	char so[600], conf[300], xml[600], path[260];
	void *h = NULL;
	int (*start)(const hm_agent_args_t *) = NULL;
	int (*stop)(void) = NULL;
	hm_agent_args_t args;
	fake_coord_t *f = NULL;
	int64_t effective_us, t0;
	FILE *cf;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!munge_up())
		return 77;
	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: the agent's files are root's (run as root)\n");
		return 77;
	}
	snprintf(so, sizeof(so), "%s/src/agent/.libs/harmonics_agent.so", top ? top : ".");
	snprintf(xml, sizeof(xml), "%s/tests/fixtures/topo/dgx8.xml", src ? src : "..");
	if (!(h = dlopen(so, RTLD_NOW | RTLD_LOCAL)) ||
	    !(start = (int (*)(const hm_agent_args_t *))dlsym(h, "hm_agent_start")) ||
	    !(stop = (int (*)(void))dlsym(h, "hm_agent_stop"))) {
		fprintf(stderr, "FAIL: %s: %s\n", so, dlerror());
		return 1;
	}
	snprintf(g_dir, sizeof(g_dir), "/tmp/hm_agent_live_XXXXXX");
	if (!mkdtemp(g_dir) || !(f = fake_start(FAKE_ANSWER, HEARTBEAT_MS, VALID_MS, LEAD_MS)))
		return 1;
	/* The job directory as the step side creates it: RunDir/n1/job.42, 0700. */
	snprintf(path, sizeof(path), "%s/run", g_dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run/n1", g_dir);
	mkdir(path, 0755);
	snprintf(g_job, sizeof(g_job), "%s/job.42", path);
	mkdir(g_job, 0700);
	snprintf(conf, sizeof(conf), "%s/harmonics.conf", g_dir);
	if (!(cf = fopen(conf, "w")))
		return 1;
	fprintf(cf,
		"RunDir=%s/run\nListenAddress=127.0.0.1 ListenPort=%d\nHeartbeatInterval=%dms "
		"AgentValidity=%dms "
		"UpdateLead=%dms\nConnectionTimeout=300ms\nLogLevel=info\n",
		g_dir, fake_port(f), HEARTBEAT_MS, VALID_MS, LEAD_MS);
	fclose(cf);
	decide(f, 1, -1, 0);
	setenv("HWLOC_XMLFILE", xml, 1);
	check_abi_refusals(start, stop);
	memset(&args, 0, sizeof(args));
	args.size = sizeof(args);
	args.version = HM_AGENT_ABI_VERSION;
	args.node = "n1";
	args.conf_path = conf;
	args.log = collect;
	args.slurm_user_uid = HM_AGENT_NO_UID;
	CHECK(start(&args) == 0, "hm_agent_start");
	CHECK(start(&args) == -1, "a second agent in the process is refused");

	check_hello(f);
	CHECK(wait_key("HARMONICS_EPOCH", 1, 3000) >= 0, "epoch 1 written within 3 s");
	check_renewal();
	check_push(f, &effective_us);
	check_measurements(f, effective_us);
	check_promotion(effective_us);
	decide(f, 3, -1, 0); /* the coordinator promoted too */
	check_reconnect(f);
	check_refused(f);
	check_bound_elsewhere(f);
	check_fail_open(f);

	t0 = real_us();
	rc = stop();
	printf("agent-live: hm_agent_stop returned %d after %.1f ms (bound %d ms)\n", rc,
	       (real_us() - t0) / 1000.0, HM_AGENT_STOP_BOUND_MS);
	CHECK(rc == 0 && real_us() - t0 < HM_AGENT_STOP_BOUND_MS * 1000, "stop");
	CHECK(stop() == 0, "a second stop is harmless");
	fake_stop(f);
	if (g_failures == 0) {
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", g_dir);
	} else {
		fprintf(stderr, "%d check(s) failed; files kept in %s\n", g_failures, g_dir);
	}
	return g_failures ? 1 : 0;
}
