/*
 * spank_step.c - harmonics.so in slurmstepd (remote context): once per step and
 * node, as the job's user, register with the coordinator and export the
 * assignment to the tasks (fail-open: a coordinator that does not answer leaves
 * the step unscheduled); in the first task, say once why a step runs
 * unscheduled.
 */
#include <stdint.h> /* spank.h needs it first */

#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "hm_clock.h"
#include "hm_assign.h"
#include "hm_client.h"
#include "hm_conf.h"
#include "hm_pace_env.h"
#include "hm_spank_dir.h"
#include "hm_spank_slurmuser.h"
#include "spank_compat.h"
#include "spank_plugin.h"

/*
 * A heterogeneous step counts S_JOB_NODEID within its component (the job
 * S_JOB_ID) while SLURM_STEP_NODELIST spans every component: keep the step's
 * nodes that belong to this component (SLURM_JOB_NODELIST_HET_GROUP_K, where
 * SLURM_JOB_ID_HET_GROUP_K is S_JOB_ID). Not a hetjob, or no such group: hl as is.
 */
static void het_component_nodes(spank_t sp, hm_hostlist_t *hl)
{
	char v[64], key[64], comp[4096];
	uint32_t job_id = 0;
	unsigned long size, k;
	hm_hostlist_t mine = NULL, keep = NULL;
	char *h;

	if (spank_getenv(sp, "SLURM_HET_SIZE", v, sizeof(v)) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS)
		return;
	size = strtoul(v, NULL, 10);
	for (k = 0; k < size && k < 1024; k++) {
		snprintf(key, sizeof(key), "SLURM_JOB_ID_HET_GROUP_%lu", k);
		if (spank_getenv(sp, key, v, sizeof(v)) == ESPANK_SUCCESS &&
		    strtoul(v, NULL, 10) == job_id)
			break;
	}
	snprintf(key, sizeof(key), "SLURM_JOB_NODELIST_HET_GROUP_%lu", k);
	if (k == size || spank_getenv(sp, key, comp, sizeof(comp)) != ESPANK_SUCCESS ||
	    !(mine = slurm_hostlist_create(comp)) || !(keep = slurm_hostlist_create(NULL)))
		goto out;
	while ((h = slurm_hostlist_shift(*hl))) {
		if (slurm_hostlist_find(mine, h) >= 0)
			slurm_hostlist_push_host(keep, h);
		free(h);
	}
	slurm_hostlist_destroy(*hl);
	*hl = keep;
	keep = NULL;
out:
	if (mine)
		slurm_hostlist_destroy(mine);
	if (keep)
		slurm_hostlist_destroy(keep);
}

/* This node's name: the S_JOB_NODEID-th entry of the step's node list (on its
   component, for a heterogeneous step). */
static void node_name(spank_t sp, char *buf, size_t len)
{
	char list[4096];
	uint32_t nodeid = 0;
	hm_hostlist_t hl = NULL;
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
	het_component_nodes(sp, &hl);
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

/* A step of a heterogeneous job (Slurm sets SLURM_HET_SIZE in its environment). */
static bool het_step(spank_t sp)
{
	char v[16];

	return spank_getenv(sp, "SLURM_HET_SIZE", v, sizeof(v)) == ESPANK_SUCCESS;
}

/* Coordinator addresses and bounds: plugstack.conf arguments over harmonics.conf
   (host= was checked at init), else slurm.conf's SlurmctldHost lines.
   Returns hm_sp_conf_load's answer (-1: Harmonics is disabled here). */
static int service_conf(spank_t sp, hm_coord_addrs_t *addrs, int *port, int *timeout_ms,
			bool *fail_open)
{
	hm_conf_t conf;
	hm_err_t err = {0};
	int rc = hm_sp_conf_load(&conf);

	if (!hm_sp.args.host[0] || hm_coord_addrs_parse(hm_sp.args.host, addrs, &err) != HM_OK)
		if (hm_coord_addrs_load(&conf, NULL, addrs, &err) != HM_OK)
			slurm_verbose("harmonics: %s: the coordinator at %s", err.msg,
				      addrs->host[0]);
	*port = hm_sp.args.port ? hm_sp.args.port : conf.listen_port;
	*timeout_ms = hm_sp.args.timeout_ms ? hm_sp.args.timeout_ms : conf.request_timeout_ms;
	*fail_open = conf.fail_open;
	if (rc >= 0) { /* the classes' marks for the runtime (hm_pace_env.h) */
		spank_setenv(sp, HM_PACE_ENV_CLASS_DSCP, conf.class_dscp, 1);
		spank_setenv(sp, HM_PACE_ENV_CLASS_SL, conf.class_sl, 1);
	}
	return rc;
}

/*
 * Replies are accepted only from root and SlurmUser (the coordinator runs
 * inside slurmctld as SlurmUser, read from slurm.conf), so a process squatting
 * on the port while slurmctld is down cannot hand out assignments. Without a
 * readable slurm.conf: root and Debian's SlurmUser account "slurm".
 */
static int trusted_uids(uint32_t *uids)
{
	struct passwd pw, *res = NULL;
	char buf[1024], why[512];
	uint32_t su;
	int n = 0;

	uids[n++] = 0;
	if (hm_spank_slurm_user(NULL, &su, why, sizeof(why)) == 0) {
		if (su != 0)
			uids[n++] = su;
		return n;
	}
	slurm_debug("harmonics: %s; trusting root and the account \"slurm\"", why);
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

/* The variables of one schedule: the one in force, or the next one (NEXT_*). */
typedef struct {
	const char *mode, *period, *shift, *origin, *guard, *prio, *epoch;
} sched_keys_t;

static const sched_keys_t cur_keys = {
    HM_PACE_ENV_MODE,     HM_PACE_ENV_PERIOD_US, HM_PACE_ENV_SHIFT_US, HM_PACE_ENV_ORIGIN_US,
    HM_PACE_ENV_GUARD_US, HM_PACE_ENV_PRIO,      HM_PACE_ENV_EPOCH};
static const sched_keys_t next_keys = {HM_PACE_ENV_NEXT_MODE,     HM_PACE_ENV_NEXT_PERIOD_US,
				       HM_PACE_ENV_NEXT_SHIFT_US, HM_PACE_ENV_NEXT_ORIGIN_US,
				       HM_PACE_ENV_NEXT_GUARD_US, HM_PACE_ENV_NEXT_PRIO,
				       HM_PACE_ENV_NEXT_EPOCH};

static void export_sched(spank_t sp, const sched_keys_t *k, const hm_assignment_t *a)
{
	spank_setenv(sp, k->mode, a->policy, 1);
	export_i64(sp, k->period, a->period_us);
	export_i64(sp, k->shift, a->shift_us);
	export_i64(sp, k->origin, a->origin_us);
	export_i64(sp, k->guard, a->guard_us);
	export_i64(sp, k->prio, a->prio);
	export_i64(sp, k->epoch, (int64_t)a->epoch);
}

/* Export a scheduled step's assignment (and a pending next one) to its tasks. */
static void export_assignment(spank_t sp, uint32_t job_id, const hm_assign_reply_t *r)
{
	export_i64(sp, HM_PACE_ENV_JOB_ID, job_id);
	export_sched(sp, &cur_keys, &r->cur);
	export_i64(sp, HM_PACE_ENV_VALID_UNTIL_US, r->cur.valid_until_us);
	if (!r->has_next)
		return;
	export_i64(sp, HM_PACE_ENV_NEXT_EFFECTIVE_US, r->effective_us);
	export_sched(sp, &next_keys, &r->next);
}

/*
 * Remote context as root, once per step and node: the job's directory of the
 * local channel (contract A, docs/pacing.md), where the node agent renews and
 * updates the assignment and the tasks write their reports. Without it the step
 * keeps its launch-time assignment; nothing fails.
 */
int hm_sp_step_post_opt(spank_t sp)
{
	hm_err_t err = {0};
	hm_conf_t conf;
	uint32_t job_id = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	char node[256];

	hm_sp.job_dir[0] = '\0';
	if (hm_sp_resolve(sp, &err) != HM_OK || strcmp(hm_sp.choice.mode, "off") == 0)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
		return 0;
	node_name(sp, node, sizeof(node));
	if (hm_sp_conf_load(&conf) < 0)
		return 0; /* Harmonics is disabled here: no agent writes into it */
	if (hm_spank_job_dir(conf.run_dir, node, job_id, uid, gid, hm_sp.job_dir,
			     sizeof(hm_sp.job_dir), &err) != HM_OK) {
		hm_sp.job_dir[0] = '\0';
		slurm_error("harmonics: job %u on %s: %s; no live updates for this step", job_id,
			    node, err.msg);
	}
	return 0;
}

/* The local channel's files for the tasks (the runtime polls assign, writes reports). */
static void export_channel(spank_t sp, uint32_t step_id)
{
	char path[HM_CONF_PATH_MAX + 64];

	if (!hm_sp.job_dir[0])
		return;
	snprintf(path, sizeof(path), "%.*s/assign", HM_CONF_PATH_MAX, hm_sp.job_dir);
	spank_setenv(sp, HM_PACE_ENV_ASSIGN_FILE, path, 1);
	snprintf(path, sizeof(path), "%.*s/report.%u.%%r", HM_CONF_PATH_MAX, hm_sp.job_dir,
		 step_id);
	spank_setenv(sp, HM_PACE_ENV_REPORT_FILE, path, 1);
}

/* Remote context, once per step and node, as the job's user (munge uid = owner). */
int hm_sp_step_user_init(spank_t sp)
{
	hm_err_t err = {0};
	uint32_t job_id = 0, step_id = 0;
	char host[HM_COORD_ADDRS_MAX * HM_COORD_ADDR_MAX], node[256], why[400];
	hm_coord_addrs_t addrs;
	int answered = -1;
	int port = 0, timeout_ms = 0, rc = 0;
	bool fail_open = true, scheduled = false, disabled;
	char *req = NULL;
	char *reply_txt = NULL;
	char nonce[HM_ASSIGN_NONCE_LEN + 1];
	hm_assign_reply_t a;
	double t0;
	bool het_probe = false;

	if (hm_sp_resolve(sp, &err) != HM_OK) {
		snprintf(hm_sp.notice, sizeof(hm_sp.notice), "harmonics: %s; running unscheduled",
			 err.msg);
		goto out;
	}
	/* Nested sruns inherit the choice through the environment. */
	spank_setenv(sp, HM_SPANK_ENV_MODE, hm_sp.choice.mode, 1);
	if (hm_sp.choice.profile[0])
		spank_setenv(sp, HM_SPANK_ENV_PROFILE, hm_sp.choice.profile, 1);
	if (strcmp(hm_sp.choice.mode, "off") == 0) {
		spank_setenv(sp, HM_PACE_ENV_MODE, HM_PACE_MODE_OFF, 1);
		/* A heterogeneous step carries its launcher's options and job
		   environment (Slurm's), not its component's: a component submitted
		   with --comm-sched would run unscheduled. The coordinator knows each
		   component's own choice: ask it, quietly, never failing the step. */
		if (!het_step(sp))
			goto out;
		het_probe = true;
	}
	/* Scheduled or not by the coordinator: the assignment file may turn it on. */
	if (!het_probe)
		hm_sp_step_preload(sp);
	spank_get_item(sp, S_JOB_ID, &job_id);
	spank_get_item(sp, S_JOB_STEPID, &step_id);
	node_name(sp, node, sizeof(node));
	disabled = service_conf(sp, &addrs, &port, &timeout_ms, &fail_open) < 0;
	hm_coord_addrs_format(&addrs, host, sizeof(host));

	export_channel(sp, step_id);
	req = hm_assign_request(job_id, step_id, node, nonce);
	t0 = hm_mono_s();
	uint32_t trusted[2];
	int ntrusted = trusted_uids(trusted);
	if (disabled) {
		/* harmonics.conf cannot be used: no coordinator to ask (fail-open). */
		snprintf(why, sizeof(why), "disabled (%.380s)", hm_sp.conf_err);
	} else if (hm_client_call_list(&addrs, port, req ? req : "", timeout_ms, trusted, ntrusted,
				       &reply_txt, &answered, &err) != HM_OK) {
		snprintf(why, sizeof(why),
			 "coordinator %.100s:%d did not answer within %d ms (%.200s)", host, port,
			 timeout_ms, err.msg);
		if (!fail_open && !het_probe) {
			slurm_error("harmonics: job %u step %u: %s; FailOpen=no: failing the step",
				    job_id, step_id, why);
			/* Failing here, Slurm would record a launch failure as a step
			 * COMPLETED with exit code 0: the tasks fail instead (exit 1). */
			snprintf(hm_sp.notice, sizeof(hm_sp.notice),
				 "harmonics: %s; FailOpen=no: the step fails", why);
			hm_sp.fail_tasks = true;
			goto out;
		}
	} else {
		char from[128];

		snprintf(from, sizeof(from), "%.100s:%d", addrs.host[answered], port);
		memset(&err, 0, sizeof(err));
		scheduled =
		    hm_assign_reply_parse(reply_txt, from, job_id, nonce, &a, &err) == HM_OK;
		if (scheduled)
			export_assignment(sp, job_id, &a);
		else
			snprintf(why, sizeof(why), "%.350s", err.msg);
	}
	if (scheduled) {
		slurm_verbose("harmonics: job %u step %u on %s registered in %.3f s at %s:%d",
			      job_id, step_id, node, hm_mono_s() - t0, addrs.host[answered], port);
		if (het_probe) { /* the component's own --comm-sched */
			spank_setenv(sp, HM_SPANK_ENV_MODE, a.cur.policy, 1);
			hm_sp_step_preload(sp);
		}
	} else if (het_probe) {
		slurm_verbose("harmonics: job %u step %u on %s (hetjob component): %s; not "
			      "scheduled",
			      job_id, step_id, node, why);
	} else {
		spank_setenv(sp, HM_PACE_ENV_MODE, HM_PACE_MODE_OFF, 1);
		slurm_info("harmonics: job %u step %u on %s: %s; running unscheduled", job_id,
			   step_id, node, why);
		snprintf(hm_sp.notice, sizeof(hm_sp.notice), "harmonics: %s; running unscheduled",
			 why);
	}
out:
	free(req);
	free(reply_txt);
	return rc;
}

/* In the task, whose stderr is the job's output: say it once per step (task 0);
 * with FailOpen=no and no coordinator, end every task. */
int hm_sp_step_task_init(spank_t sp)
{
	uint32_t gtid = 1;
	char done[8];

	if (!hm_sp.notice[0] || spank_get_item(sp, S_TASK_GLOBAL_ID, &gtid) != ESPANK_SUCCESS ||
	    gtid != 0)
		return hm_sp.fail_tasks ? -1 : 0;
	if (hm_sp.fail_tasks) {
		fprintf(stderr, "%s\n", hm_sp.notice);
		fflush(stderr);
		return -1; /* slurmstepd ends the task with exit code 1 */
	}
	/* A batch script already said it: its sruns stay quiet. */
	if (spank_getenv(sp, "HARMONICS_NOTICE_SHOWN", done, sizeof(done)) == ESPANK_SUCCESS)
		return 0;
	fprintf(stderr, "%s\n", hm_sp.notice);
	fflush(stderr);
	spank_setenv(sp, "HARMONICS_NOTICE_SHOWN", "1", 1);
	return 0;
}
