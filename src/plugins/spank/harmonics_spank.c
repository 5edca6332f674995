/*
 * harmonics_spank.c - the harmonics.so SPANK plugin: --comm-sched options,
 * validation at submission, job-control environment for slurmctld, and per-step
 * registration with the coordinator in the remote context (fail-open).
 *
 * Option logic lives in hm_spank_opts.c (no Slurm); this file is the glue.
 */
#include <stdint.h> /* spank.h needs it first */

#include <errno.h>
#include <pwd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "hm_assign.h"
#include "hm_client.h"
#include "hm_conf.h"
#include "hm_pace_env.h"
#include "hm_spank_opts.h"

#define HM_SPANK_VERSION "0.1.0"

SPANK_PLUGIN(harmonics, 1);

/* Set once per process; SPANK calls are single-threaded per process. */
static hm_spank_args_t g_args;
static bool g_args_ok;
static char g_cli_mode[HM_SPANK_MODE_MAX];
static bool g_cli_mode_set;
static char g_cli_profile[HM_SPANK_PROFILE_MAX];
static bool g_cli_profile_set;
static hm_spank_choice_t g_choice;
/* Remote context: what user_init found, for the one-time notice in task_init. */
static char g_notice[640];
static bool g_fail_tasks; /* FailOpen=no and no coordinator: each task exits 1 */

static int opt_mode_cb(int val, const char *optarg, int remote);
static int opt_off_cb(int val, const char *optarg, int remote);
static int opt_profile_cb(int val, const char *optarg, int remote);

static struct spank_option opt_mode = {
    "comm-sched",
    "MODE",
    "Schedule this job's communication bursts (Harmonics): off, auto, fair, optimal, "
    "cassini, crux, harmonics; 'help' explains",
    1,
    0,
    opt_mode_cb};
static struct spank_option opt_off = {
    "no-comm-sched", NULL, "Do not schedule communication (same as --comm-sched=off)", 0, 0,
    opt_off_cb};
static struct spank_option opt_profile = {
    "comm-profile",
    "SPEC",
    "Declare the iteration profile: a catalogue model, or iter=250ms,comm=40%,bytes=1.2GB",
    1,
    0,
    opt_profile_cb};

static bool ctx_submit(void)
{
	spank_context_t ctx = spank_context();
	return ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR;
}

static int opt_mode_cb(int val, const char *optarg, int remote)
{
	hm_err_t err = {0};

	if (hm_spank_mode_check(optarg, "--comm-sched", g_cli_mode, sizeof(g_cli_mode), &err) !=
	    HM_OK) {
		/* In the allocator/local context -1 rejects the submission. */
		slurm_error("harmonics: %s", err.msg);
		return -1;
	}
	if (strcmp(g_cli_mode, "help") == 0) {
		if (!remote) {
			fputs(hm_spank_help_text(), stdout);
			exit(0);
		}
		return 0;
	}
	g_cli_mode_set = true;
	return 0;
}

static int opt_off_cb(int val, const char *optarg, int remote)
{
	snprintf(g_cli_mode, sizeof(g_cli_mode), "off");
	g_cli_mode_set = true;
	return 0;
}

static int opt_profile_cb(int val, const char *optarg, int remote)
{
	hm_err_t err = {0};

	if (hm_spank_profile_check(optarg, "--comm-profile", &err) != HM_OK) {
		slurm_error("harmonics: %s", err.msg);
		return -1;
	}
	snprintf(g_cli_profile, sizeof(g_cli_profile), "%s", optarg);
	g_cli_profile_set = true;
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	hm_err_t err = {0};
	spank_context_t ctx = spank_context();

	hm_spank_args_defaults(&g_args);
	if (hm_spank_args_parse(ac, av, &g_args, &err) != HM_OK) {
		slurm_error("harmonics: %s", err.msg);
		snprintf(g_notice, sizeof(g_notice), "harmonics: %s; running unscheduled", err.msg);
		/* Refuse submissions on an admin error; never break running steps. */
		return ctx_submit() ? -1 : 0;
	}
	g_args_ok = true;
	if (ctx == S_CTX_SLURMD || ctx == S_CTX_JOB_SCRIPT)
		return 0;
	/* Own and built-for versions: slurmd's log for steps, -v on the clients. */
	if (ctx == S_CTX_REMOTE)
		slurm_info("harmonics: SPANK plugin %s built for Slurm %d.%02d.%d",
			   HM_SPANK_VERSION, SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
			   SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
			   SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
	else
		slurm_verbose("harmonics: SPANK plugin %s built for Slurm %d.%02d.%d",
			      HM_SPANK_VERSION, SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
			      SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
			      SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
	if (spank_option_register(sp, &opt_mode) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_off) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_profile) != ESPANK_SUCCESS) {
		slurm_error("harmonics: cannot register the --comm-sched options");
		return ctx_submit() ? -1 : 0;
	}
	return 0;
}

/* getenv in the local context, the job's environment in the remote one. */
static const char *job_getenv(spank_t sp, const char *name, char *buf, int len)
{
	if (spank_context() == S_CTX_REMOTE)
		return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS ? buf : NULL;
	return getenv(name);
}

static int resolve(spank_t sp, hm_err_t *err)
{
	char env_mode[HM_SPANK_MODE_MAX], env_prof[HM_SPANK_PROFILE_MAX];

	return hm_spank_resolve(
	    &g_args, g_cli_mode_set ? g_cli_mode : NULL, g_cli_profile_set ? g_cli_profile : NULL,
	    job_getenv(sp, HM_SPANK_ENV_MODE, env_mode, sizeof(env_mode)),
	    job_getenv(sp, HM_SPANK_ENV_PROFILE, env_prof, sizeof(env_prof)), &g_choice, err);
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	hm_err_t err = {0};

	if (!g_args_ok || !ctx_submit())
		return 0;
	if (resolve(sp, &err) != HM_OK) {
		slurm_error("harmonics: %s", err.msg);
		return -1; /* nothing is submitted */
	}
	/* Job-control environment reaches slurmctld (job_ptr->spank_job_env). */
	if (strcmp(g_choice.mode, "off") != 0) {
		if (spank_job_control_setenv(sp, HM_SPANK_ENV_MODE, g_choice.mode, 1) !=
		    ESPANK_SUCCESS)
			slurm_error("harmonics: cannot pass %s to slurmctld", HM_SPANK_ENV_MODE);
		if (g_choice.profile[0] &&
		    spank_job_control_setenv(sp, HM_SPANK_ENV_PROFILE, g_choice.profile, 1) !=
			ESPANK_SUCCESS)
			slurm_error("harmonics: cannot pass %s to slurmctld", HM_SPANK_ENV_PROFILE);
	}
	return 0;
}

/* This node's name: the S_JOB_NODEID-th entry of the step's node list. */
static void node_name(spank_t sp, char *buf, size_t len)
{
	char list[4096];
	uint32_t nodeid = 0;
	hostlist_t hl = NULL;
	char *h = NULL;

	snprintf(buf, len, "?");
	if (spank_get_item(sp, S_JOB_NODEID, &nodeid) != ESPANK_SUCCESS)
		return;
	if (spank_getenv(sp, "SLURM_STEP_NODELIST", list, sizeof(list)) != ESPANK_SUCCESS &&
	    spank_getenv(sp, "SLURM_JOB_NODELIST", list, sizeof(list)) != ESPANK_SUCCESS)
		return;
	hl = slurm_hostlist_create(list);
	if (!hl)
		return;
	for (uint32_t i = 0; i <= nodeid; i++) {
		free(h);
		h = slurm_hostlist_shift(hl);
		if (!h)
			break;
	}
	if (h)
		snprintf(buf, len, "%s", h);
	free(h);
	slurm_hostlist_destroy(hl);
}

/* Coordinator address and bounds: plugstack.conf arguments over harmonics.conf. */
static void service_conf(spank_t sp, char *host, size_t host_len, int *port, int *timeout_ms,
			 bool *fail_open)
{
	hm_conf_t conf;
	hm_err_t err = {0};
	char path[HM_CONF_PATH_MAX];

	hm_conf_defaults(&conf);
	if (g_args.conf[0])
		snprintf(path, sizeof(path), "%s", g_args.conf);
	else
		hm_conf_default_path(path, sizeof(path));
	if (hm_conf_load(path, &conf, &err) != HM_OK && err.rc != HM_ERR_IO)
		slurm_error("harmonics: %s (using defaults)", err.msg);
	snprintf(host, host_len, "%s", g_args.host[0] ? g_args.host : hm_conf_client_host(&conf));
	*port = g_args.port ? g_args.port : conf.listen_port;
	*timeout_ms = g_args.timeout_ms ? g_args.timeout_ms : conf.request_timeout_ms;
	*fail_open = conf.fail_open;
}

/*
 * Replies are accepted only from root and Debian's SlurmUser account "slurm"
 * (the coordinator runs inside slurmctld as SlurmUser), so a process squatting
 * on the port while slurmctld is down cannot hand out assignments.
 */
static int trusted_uids(uint32_t *uids)
{
	struct passwd pw, *res = NULL;
	char buf[1024];
	int n = 0;

	uids[n++] = 0;
	if (getpwnam_r("slurm", &pw, buf, sizeof(buf), &res) == 0 && res && res->pw_uid != 0)
		uids[n++] = res->pw_uid;
	return n;
}

static void export_i64(spank_t sp, const char *name, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	spank_setenv(sp, name, buf, 1);
}

/* Export a scheduled step's assignment to its tasks. */
static void export_assignment(spank_t sp, uint32_t job_id, const hm_assignment_t *a)
{
	spank_setenv(sp, HM_PACE_ENV_MODE, a->policy, 1);
	export_i64(sp, HM_PACE_ENV_JOB_ID, job_id);
	export_i64(sp, HM_PACE_ENV_PERIOD_US, a->period_us);
	export_i64(sp, HM_PACE_ENV_SHIFT_US, a->shift_us);
	export_i64(sp, HM_PACE_ENV_ORIGIN_US, a->origin_us);
	export_i64(sp, HM_PACE_ENV_GUARD_US, a->guard_us);
	export_i64(sp, HM_PACE_ENV_PRIO, a->prio);
	export_i64(sp, HM_PACE_ENV_EPOCH, (int64_t)a->epoch);
	export_i64(sp, HM_PACE_ENV_VALID_UNTIL_US, a->valid_until_us);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Remote context, once per step and node, as the job's user (munge uid = owner). */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	hm_err_t err = {0};
	uint32_t job_id = 0, step_id = 0;
	char host[HM_CONF_HOST_MAX], node[256], why[400];
	int port = 0, timeout_ms = 0, rc = 0;
	bool fail_open = true, scheduled = false;
	char *req = NULL;
	char *reply_txt = NULL;
	hm_assignment_t a;
	double t0;

	if (!g_args_ok || spank_remote(sp) != 1)
		goto out;
	if (resolve(sp, &err) != HM_OK) {
		snprintf(g_notice, sizeof(g_notice), "harmonics: %s; running unscheduled", err.msg);
		goto out;
	}
	/* Nested sruns inherit the choice through the environment. */
	spank_setenv(sp, HM_SPANK_ENV_MODE, g_choice.mode, 1);
	if (g_choice.profile[0])
		spank_setenv(sp, HM_SPANK_ENV_PROFILE, g_choice.profile, 1);
	if (strcmp(g_choice.mode, "off") == 0) {
		spank_setenv(sp, HM_PACE_ENV_MODE, HM_PACE_MODE_OFF, 1);
		goto out;
	}
	spank_get_item(sp, S_JOB_ID, &job_id);
	spank_get_item(sp, S_JOB_STEPID, &step_id);
	node_name(sp, node, sizeof(node));
	service_conf(sp, host, sizeof(host), &port, &timeout_ms, &fail_open);

	req = hm_assign_request(job_id, step_id, node);
	t0 = mono_s();
	uint32_t trusted[2];
	int ntrusted = trusted_uids(trusted);
	if (hm_client_call_trusted(host, port, req ? req : "", timeout_ms, trusted,
				   ntrusted, &reply_txt, &err) != HM_OK) {
		snprintf(why, sizeof(why),
			 "coordinator %.100s:%d did not answer within %d ms (%.200s)", host, port,
			 timeout_ms, err.msg);
		if (!fail_open) {
			slurm_error("harmonics: job %u step %u: %s; FailOpen=no: failing the step",
				    job_id, step_id, why);
			/* Failing here, Slurm would record a launch failure as a step
			 * COMPLETED with exit code 0: the tasks fail instead (exit 1). */
			snprintf(g_notice, sizeof(g_notice),
				 "harmonics: %s; FailOpen=no: the step fails", why);
			g_fail_tasks = true;
			goto out;
		}
	} else {
		char from[128];

		snprintf(from, sizeof(from), "%.100s:%d", host, port);
		memset(&err, 0, sizeof(err));
		scheduled = hm_assign_reply_parse(reply_txt, from, &a, &err) == HM_OK;
		if (scheduled)
			export_assignment(sp, job_id, &a);
		else
			snprintf(why, sizeof(why), "%.350s", err.msg);
	}
	if (scheduled) {
		slurm_verbose("harmonics: job %u step %u on %s registered in %.3f s", job_id,
			      step_id, node, mono_s() - t0);
	} else {
		spank_setenv(sp, HM_PACE_ENV_MODE, HM_PACE_MODE_OFF, 1);
		slurm_info("harmonics: job %u step %u on %s: %s; running unscheduled", job_id,
			   step_id, node, why);
		snprintf(g_notice, sizeof(g_notice), "harmonics: %s; running unscheduled", why);
	}
out:
	free(req);
	free(reply_txt);
	return rc;
}

/* In the task, whose stderr is the job's output: say it once per step (task 0);
 * with FailOpen=no and no coordinator, end every task. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	uint32_t gtid = 1;
	char done[8];

	if (!g_notice[0] || spank_get_item(sp, S_TASK_GLOBAL_ID, &gtid) != ESPANK_SUCCESS ||
	    gtid != 0)
		return g_fail_tasks ? -1 : 0;
	if (g_fail_tasks) {
		fprintf(stderr, "%s\n", g_notice);
		fflush(stderr);
		return -1; /* slurmstepd ends the task with exit code 1 */
	}
	/* A batch script already said it: its sruns stay quiet. */
	if (spank_getenv(sp, "HARMONICS_NOTICE_SHOWN", done, sizeof(done)) == ESPANK_SUCCESS)
		return 0;
	fprintf(stderr, "%s\n", g_notice);
	fflush(stderr);
	spank_setenv(sp, "HARMONICS_NOTICE_SHOWN", "1", 1);
	return 0;
}
