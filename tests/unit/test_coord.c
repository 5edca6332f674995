/* Unit tests for the coordinator engine: decisions, AdminComment, state, reconfigure. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_log.h"
#include "hm_policy_names.h"
#include "hm_spec.h"

#define NOW 1.8e9 /* a fixed CLOCK_REALTIME second */

static hm_coord_t *new_coord(hm_conf_t *conf)
{
	hm_coord_t *c = NULL;
	hm_err_t err = {0};

	if (hm_coord_create(conf, fixture_topo(), &c, &err) != HM_OK)
		fail_msg("create: %s", err.msg);
	if (hm_coord_set_policy_ops(c, &script_policy, &err) != HM_OK)
		fail_msg("set policy: %s", err.msg);
	script_step_ms = 100;
	script_calls = 0;
	return c;
}

static const char *job_account = "physics"; /* the Slurm account add_job gives */

static hm_rc_t add_job(hm_coord_t *c, uint32_t id, uint32_t uid, const char *nodes,
		       const char *mode, const char *profile)
{
	hm_coord_job_info_t info = {.job_id = id,
				    .uid = uid,
				    .account = job_account,
				    .name = "train",
				    .nodes = nodes,
				    .mode = mode,
				    .profile = profile,
				    .start_s = NOW - 60};
	hm_err_t err = {0};

	return hm_coord_job_upsert(c, &info, &err);
}

static const char *prof = "iter=250ms,comm=40%,bytes=1.2GB";

/* Six jobs: two schedulable, four that must stay unscheduled with the right reason. */
static void test_decide(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c;
	hm_assignment_t a;
	hm_coord_job_view_t v;
	bool changed = false;
	hm_err_t err = {0};

	fixture_conf(&conf);
	c = new_coord(&conf);
	assert_int_equal(add_job(c, 1, 1000, "n[1-2]", "auto", prof), HM_OK);
	assert_int_equal(add_job(c, 2, 1001, "n[3-6]", "fair", "resnet50"), HM_OK);
	assert_int_equal(add_job(c, 3, 1000, "n7", "off", prof), HM_OK);
	assert_int_equal(add_job(c, 4, 1000, "n8", "auto", "iter=1s"), HM_ERR_INVAL);
	assert_int_equal(add_job(c, 5, 1000, "x1", "auto", prof), HM_ERR_INVAL);
	assert_int_equal(add_job(c, 6, 1000, "n8", "auto", NULL), HM_ERR_INVAL);
	assert_int_equal(hm_coord_assignment(c, 1, &a), HM_ERR_NOTFOUND); /* not decided yet */

	assert_int_equal(hm_coord_decide(c, NOW, &changed, &err), HM_OK);
	assert_true(changed);
	assert_int_equal(script_calls, 2); /* one arrival event per schedulable job */
	assert_int_equal(script_last_event, HM_EV_ARRIVAL);
	assert_int_equal(script_last_njobs, 2);

	assert_int_equal(hm_coord_assignment(c, 1, &a), HM_OK);
	assert_true(a.scheduled);
	assert_string_equal(a.policy, "script");
	assert_int_equal(a.period_us, 400000);
	assert_int_equal(a.shift_us, 0);
	assert_int_equal(a.origin_us, 1000000000);
	assert_int_equal(a.guard_us, 2000);
	assert_int_equal(a.epoch, 1);
	assert_int_equal(a.decided_us, (int64_t)(NOW * 1e6));
	assert_true(a.valid_until_us > a.decided_us);
	assert_int_equal(hm_coord_assignment(c, 2, &a), HM_OK);
	assert_int_equal(a.shift_us, 100000);
	assert_int_equal(a.prio, 1);
	assert_int_equal(hm_coord_job(c, 2, &v), HM_OK);
	assert_int_equal(v.nracks, 2);
	assert_int_equal(v.gpus, 32);

	assert_int_equal(hm_coord_assignment(c, 3, &a), HM_OK);
	assert_false(a.scheduled);
	assert_string_equal(a.reason, "comm-sched off");
	assert_int_equal(hm_coord_job(c, 3, &v), HM_OK); /* not scheduled, still placed */
	assert_int_equal(v.gpus, 8);
	assert_int_equal(v.nracks, 1);
	assert_int_equal(hm_coord_job(c, 5, &v), HM_OK); /* cannot be placed */
	assert_int_equal(v.gpus, 0);
	assert_int_equal(hm_coord_assignment(c, 4, &a), HM_OK);
	assert_string_equal(a.reason, "bad profile");
	assert_int_equal(hm_coord_assignment(c, 5, &a), HM_OK);
	assert_non_null(strstr(a.reason, "x1"));
	assert_int_equal(hm_coord_assignment(c, 6, &a), HM_OK);
	assert_string_equal(a.reason, "no profile");

	/* Nothing new and no epoch due: the policy does not run. */
	assert_int_equal(hm_coord_decide(c, NOW + 1, &changed, &err), HM_OK);
	assert_false(changed);
	assert_int_equal(script_calls, 2);

	/* Epoch due, same answer: runs, nothing changes, epoch number kept. */
	assert_int_equal(hm_coord_decide(c, NOW + 10, &changed, &err), HM_OK);
	assert_int_equal(script_calls, 3);
	assert_int_equal(script_last_event, HM_EV_EPOCH);
	assert_false(changed);
	assert_int_equal(hm_coord_assignment(c, 2, &a), HM_OK);
	assert_int_equal(a.epoch, 1);

	/* Epoch with a different answer: job 2 changes, job 1 (shift 0) does not. */
	script_step_ms = 150;
	assert_int_equal(hm_coord_decide(c, NOW + 20, &changed, &err), HM_OK);
	assert_true(changed);
	assert_int_equal(hm_coord_assignment(c, 2, &a), HM_OK);
	assert_int_equal(a.shift_us, 150000);
	assert_int_equal(a.epoch, 2);
	assert_int_equal(hm_coord_assignment(c, 1, &a), HM_OK);
	assert_int_equal(a.epoch, 1);

	/* Departure: job 2 becomes first, shift 0. */
	assert_int_equal(hm_coord_job_remove(c, 1), HM_OK);
	assert_int_equal(hm_coord_job_remove(c, 1), HM_ERR_NOTFOUND);
	assert_int_equal(hm_coord_decide(c, NOW + 21, &changed, &err), HM_OK);
	assert_int_equal(script_last_event, HM_EV_DEPARTURE);
	assert_true(changed);
	assert_int_equal(hm_coord_assignment(c, 2, &a), HM_OK);
	assert_int_equal(a.shift_us, 0);
	assert_int_equal(a.epoch, 3);

	/* A measured profile makes job 6 schedulable. */
	hm_coord_measure_t m = {.iter_s = 0.3, .compute_s = 0.2, .comm_s = 0.1, .bytes = 5e8};
	assert_int_equal(hm_coord_job_measure(c, 6, &m, &err), HM_OK);
	assert_int_equal(hm_coord_decide(c, NOW + 22, &changed, &err), HM_OK);
	assert_int_equal(hm_coord_assignment(c, 6, &a), HM_OK);
	assert_true(a.scheduled);
	m.iter_s = -1;
	assert_int_equal(hm_coord_job_measure(c, 6, &m, &err), HM_ERR_RANGE);
	assert_int_equal(hm_coord_job_measure(c, 99, &(hm_coord_measure_t){0}, &err),
			 HM_ERR_NOTFOUND);
	hm_coord_destroy(c);
}

/* A changed node list re-decides; an unchanged upsert keeps everything. */
static void test_upsert_change(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c;
	hm_assignment_t a;
	bool changed;
	hm_err_t err = {0};

	fixture_conf(&conf);
	c = new_coord(&conf);
	assert_int_equal(add_job(c, 7, 1, "n[1-2]", "auto", prof), HM_OK);
	assert_int_equal(hm_coord_decide(c, NOW, &changed, &err), HM_OK);
	assert_int_equal(add_job(c, 7, 1, "n[1-2]", "auto", prof), HM_OK);
	assert_int_equal(hm_coord_decide(c, NOW + 1, &changed, &err), HM_OK);
	assert_false(changed);
	assert_int_equal(script_calls, 1);
	assert_int_equal(add_job(c, 7, 1, "n[1-2]", "off", prof), HM_OK);
	assert_int_equal(hm_coord_decide(c, NOW + 2, &changed, &err), HM_OK);
	assert_true(changed);
	assert_int_equal(hm_coord_assignment(c, 7, &a), HM_OK);
	assert_false(a.scheduled);
	hm_coord_destroy(c);
}

/* What a policy's create() received (test_policy_cfg). */
static hm_policy_cfg_t seen_cfg;

static hm_rc_t seen_create(const hm_policy_cfg_t *cfg, void **state, hm_err_t *err)
{
	seen_cfg = *cfg;
	*state = NULL;
	return HM_OK;
}

/* Both jobs held by the policy, each with guard_us (0: any guard but the given one). */
static void assert_held_guard(hm_coord_t *c, double now_s, int64_t guard_us, int64_t not_us)
{
	hm_assignment_t a;
	hm_err_t err = {0};
	bool changed;

	assert_int_equal(hm_coord_decide(c, now_s, &changed, &err), HM_OK);
	for (uint32_t id = 1; id <= 2; id++) {
		assert_int_equal(hm_coord_assignment(c, id, &a), HM_OK);
		assert_true(a.period_us > 0);
		if (guard_us)
			assert_int_equal(a.guard_us, guard_us);
		assert_true(a.guard_us > 0 && a.guard_us != not_us);
	}
}

/*
 * harmonics.conf reaches the policy whichever way it is set: by ops
 * (hm_coord_set_policy_ops, whose copy of the mapping used to drop Guard=) and
 * by name from the registry (create, reconfigure).
 */
static void test_policy_cfg(void **state)
{
	/* Bursts long enough on the link that optimal, judging in the simulator's
	   model, holds the pair rather than leaving it fair. */
	const char *held = "iter=400ms,comm=30%,bytes=2GB";
	hm_policy_ops_t ops = script_policy;
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_err_t err = {0};

	ops.create = seen_create;
	fixture_conf(&conf);
	conf.epoch_s = 7;
	conf.prio_levels = 4;
	conf.reserved_levels = 2;
	conf.decision_budget_s = 0.25;
	conf.guard_s = 0.0137;
	assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
	memset(&seen_cfg, 0, sizeof(seen_cfg));
	assert_int_equal(hm_coord_set_policy_ops(c, &ops, &err), HM_OK);
	assert_true(seen_cfg.epoch_s == 7);
	assert_int_equal(seen_cfg.prio_levels, 4);
	assert_int_equal(seen_cfg.reserved_levels, 2);
	assert_true(seen_cfg.budget_s == 0.25);
	assert_true(seen_cfg.guard_s == 0.0137);
	assert_int_equal(seen_cfg.threads, 1);
	hm_coord_destroy(c);

	/* By name: optimal holds two jobs on one class with Guard=, with its own guard
	   (a share of the period) without; reconfigure maps it the same way. */
	for (int k = 0; k < 2; k++) {
		fixture_conf(&conf);
		snprintf(conf.policy, sizeof(conf.policy), k ? "fair" : "optimal");
		conf.prio_levels = 1;
		conf.guard_s = k ? 0 : 0.0137;
		assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
		assert_int_equal(add_job(c, 1, 1, "n[1-2]", "auto", held), HM_OK);
		assert_int_equal(add_job(c, 2, 1, "n[1-2]", "auto", held), HM_OK);
		if (k == 1) { /* fair holds nothing: reconfigure to optimal without Guard= */
			snprintf(conf.policy, sizeof(conf.policy), "optimal");
			assert_int_equal(hm_coord_reconfigure(c, &conf, NULL, &err), HM_OK);
		}
		assert_held_guard(c, NOW, k ? 0 : 13700, k ? 13700 : 0);
		hm_coord_destroy(c);
	}
}

/* Each registered policy decides over a real job mix without error. */
static void test_real_policies(void **state)
{
	/* Every policy of the design must be linked in, not only the first. */
	const char *const names[] = {"fair", "optimal", "cassini", "crux", "harmonics"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!hm_policy_find(names[i]))
			fail_msg("policy %s is not linked in", names[i]);
	assert_int_equal(hm_policy_count(), 5);
	for (int i = 0; i < hm_policy_count(); i++) {
		const hm_policy_ops_t *p = hm_policy_at(i);
		hm_conf_t conf;
		hm_coord_t *c = NULL;
		hm_assignment_t a;
		bool changed;
		hm_err_t err = {0};

		fixture_conf(&conf);
		snprintf(conf.policy, sizeof(conf.policy), "%s", p->name);
		assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
		assert_int_equal(add_job(c, 1, 1, "n[1-2]", "auto", prof), HM_OK);
		assert_int_equal(
		    add_job(c, 2, 1, "n[2-5]", "auto", "iter=400ms,comm=30%,bytes=2GB"), HM_OK);
		assert_int_equal(add_job(c, 3, 1, "n[5-8]", "auto", "resnet50"), HM_OK);
		if (hm_coord_decide(c, NOW, &changed, &err) != HM_OK)
			fail_msg("policy %s: %s", p->name, err.msg);
		assert_true(changed);
		for (uint32_t id = 1; id <= 3; id++) {
			assert_int_equal(hm_coord_assignment(c, id, &a), HM_OK);
			assert_true(a.scheduled);
			assert_string_equal(a.policy, p->name);
			assert_true(a.prio >= 0 && a.prio < conf.prio_levels);
			assert_true(a.shift_us >= 0);
			assert_true(a.period_us == 0 || a.shift_us < a.period_us);
		}
		hm_coord_destroy(c);
	}
}

static void test_admin_comment(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c;
	char buf[1024], cur[1024];
	bool changed;
	hm_err_t err = {0};

	fixture_conf(&conf);
	conf.admin_comment_max_bytes = 200;
	c = new_coord(&conf);
	assert_int_equal(add_job(c, 1, 1, "n[1-2]", "auto", prof), HM_OK);
	assert_int_equal(add_job(c, 2, 1, "n[3-4]", "auto", prof), HM_OK);
	assert_int_equal(add_job(c, 3, 1, "n5", "off", prof), HM_OK);
	assert_int_equal(add_job(c, 4, 1, "n6", "auto", NULL), HM_ERR_INVAL);
	assert_false(hm_coord_admin_comment(c, 1, NULL, buf, sizeof(buf))); /* undecided */
	assert_int_equal(hm_coord_decide(c, 1764693601.0, &changed, &err), HM_OK);

	assert_true(hm_coord_admin_comment(c, 2, NULL, buf, sizeof(buf)));
	assert_string_equal(buf,
			    "harmonics:e1@2025-12-02T16:40:01Z p=script shift=100ms/400ms prio=1;");
	/* Unchanged: nothing to write. */
	assert_false(hm_coord_admin_comment(c, 2, buf, cur, sizeof(cur)));
	/* A job that did not ask gets nothing; an unscheduled one that asked says why. */
	assert_false(hm_coord_admin_comment(c, 3, NULL, buf, sizeof(buf)));
	assert_true(hm_coord_admin_comment(c, 4, NULL, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "off=no-profile;"));

	/* Changes append after other text, which stays in front; the length stays bounded. */
	snprintf(cur, sizeof(cur), "ticket 42;");
	for (int step = 1; step <= 12; step++) {
		script_step_ms = 100 + step;
		assert_int_equal(hm_coord_decide(c, 1764693601.0 + 10 * step, &changed, &err),
				 HM_OK);
		assert_true(changed);
		assert_true(hm_coord_admin_comment(c, 2, cur, buf, sizeof(buf)));
		assert_true(strlen(buf) <= 200);
		assert_memory_equal(buf, "ticket 42;", 10);
		char want[64];
		snprintf(want, sizeof(want), "shift=%dms/400ms prio=1;", 100 + step);
		assert_non_null(strstr(buf, want));
		assert_int_equal(strcmp(buf + strlen(buf) - strlen(want), want),
				 0); /* newest last */
		snprintf(cur, sizeof(cur), "%s", buf);
	}
	/* The oldest entries went first: the first decisions are gone, several stay. */
	assert_null(strstr(cur, "shift=101ms"));
	assert_non_null(strstr(cur, "shift=111ms"));
	int n = 0;
	for (const char *p = cur; (p = strstr(p, "harmonics:e")); p++)
		n++;
	assert_true(n >= 2);

	/* The caller's buffer bounds it too. */
	script_step_ms = 300;
	assert_int_equal(hm_coord_decide(c, 1764693601.0 + 500, &changed, &err), HM_OK);
	assert_true(hm_coord_admin_comment(c, 2, cur, buf, 90));
	assert_true(strlen(buf) < 90);
	assert_non_null(strstr(buf, "shift=300ms"));
	/* Other text too long to leave room: refuse rather than cut the admin's text. */
	memset(cur, 'x', 300);
	cur[300] = '\0';
	assert_false(hm_coord_admin_comment(c, 2, cur, buf, sizeof(buf)));
	hm_coord_destroy(c);
}

static void test_admin_entry_forms(void **state)
{
	hm_assignment_t a = {.scheduled = true,
			     .policy = "crux",
			     .shift_us = 12500,
			     .prio = 3,
			     .epoch = 9,
			     .decided_us = 0};
	char buf[256];

	hm_coord_admin_entry(&a, buf, sizeof(buf));
	assert_string_equal(buf, "harmonics:e9@1970-01-01T00:00:00Z p=crux delay=12.5ms prio=3;");
	a.period_us = 450000;
	a.path = 2;
	hm_coord_admin_entry(&a, buf, sizeof(buf));
	assert_string_equal(
	    buf, "harmonics:e9@1970-01-01T00:00:00Z p=crux shift=12.5ms/450ms prio=3 path=2;");
	a.scheduled = false;
	snprintf(a.reason, sizeof(a.reason), "node x; y");
	hm_coord_admin_entry(&a, buf, sizeof(buf));
	assert_string_equal(buf, "harmonics:e9@1970-01-01T00:00:00Z off=node-x,-y;");
}

static void test_state_roundtrip(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c, *d;
	hm_assignment_t a1, a2;
	char path[] = "/tmp/hm_state_XXXXXX", comment[512], buf[512];
	bool changed;
	hm_err_t err = {0};
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	fixture_conf(&conf);
	c = new_coord(&conf);
	assert_int_equal(add_job(c, 11, 500, "n[1-3]", "auto", prof), HM_OK);
	assert_int_equal(add_job(c, 12, 501, "n[4-6]", "auto", prof), HM_OK);
	assert_int_equal(add_job(c, 13, 502, "n7", "off", NULL), HM_OK);
	assert_int_equal(hm_coord_decide(c, NOW, &changed, &err), HM_OK);
	hm_coord_note_register(c, 12);
	assert_true(hm_coord_admin_comment(c, 12, NULL, comment, sizeof(comment)));
	assert_int_equal(hm_coord_state_save(c, path, &err), HM_OK);

	/* A restarted slurmctld: fresh engine, load, the same jobs upserted again. */
	fixture_conf(&conf);
	d = new_coord(&conf);
	assert_int_equal(hm_coord_state_load(d, path, &err), HM_OK);
	for (uint32_t id = 11; id <= 13; id++) {
		assert_int_equal(hm_coord_assignment(c, id, &a1), HM_OK);
		assert_int_equal(hm_coord_assignment(d, id, &a2), HM_OK);
		assert_int_equal(a1.scheduled, a2.scheduled);
		assert_int_equal(a1.shift_us, a2.shift_us);
		assert_int_equal(a1.period_us, a2.period_us);
		assert_int_equal(a1.origin_us, a2.origin_us);
		assert_int_equal(a1.prio, a2.prio);
		assert_int_equal(a1.epoch, a2.epoch);
		assert_string_equal(a1.policy, a2.policy);
		assert_string_equal(a1.reason, a2.reason);
	}
	uint32_t uid;
	char account[HM_ACCOUNT_MAX];
	assert_int_equal(hm_coord_job_uid(d, 12, &uid), HM_OK);
	assert_int_equal(uid, 501);
	/* The account too: account coordinators see the job before Slurm's first round. */
	assert_int_equal(hm_coord_job_owner(d, 12, &uid, account, sizeof(account)), HM_OK);
	assert_string_equal(account, "physics");
	hm_coord_job_view_t v;
	assert_int_equal(hm_coord_job(d, 12, &v), HM_OK);
	assert_int_equal(v.registered_steps, 1);
	assert_int_equal(add_job(d, 11, 500, "n[1-3]", "auto", prof), HM_OK);
	assert_int_equal(add_job(d, 12, 501, "n[4-6]", "auto", prof), HM_OK);
	assert_int_equal(hm_coord_decide(d, NOW + 1, &changed, &err), HM_OK);
	assert_false(changed);
	assert_int_equal(script_calls, 0);
	/* No duplicate AdminComment entry after the restart. */
	assert_false(hm_coord_admin_comment(d, 12, comment, buf, sizeof(buf)));
	hm_coord_destroy(d);
	hm_coord_destroy(c);

	/* Missing and corrupt files. */
	fixture_conf(&conf);
	d = new_coord(&conf);
	unlink(path);
	assert_int_equal(hm_coord_state_load(d, path, &err), HM_ERR_NOTFOUND);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"version\":1,\"jobs\":", f);
	fclose(f);
	assert_int_equal(hm_coord_state_load(d, path, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "kept aside as"));
	{
		char *aside = strstr(err.msg, "kept aside as ") + strlen("kept aside as ");

		assert_int_equal(unlink(aside), 0);
	}
	assert_int_equal(hm_coord_state_save(d, "/nonexistent/dir/state", &err), HM_ERR_IO);
	assert_non_null(strstr(err.msg, "/nonexistent/dir/state"));
	unlink(path);
	hm_coord_destroy(d);
}

/* Write text to path (replacing it). */
static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A corrupt file is kept aside with its bytes intact; the next save leaves it alone. */
static void test_state_corrupt_kept(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c;
	char path[] = "/tmp/hm_state_XXXXXX", aside[300], buf[256];
	const char *bad = "{\"version\":1,\"jobs\":[{\"job_id\":1";
	hm_err_t err = {0};
	int fd = mkstemp(path);
	FILE *f;
	size_t n;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	put_file(path, bad);
	fixture_conf(&conf);
	c = new_coord(&conf);
	assert_int_equal(hm_coord_state_load(c, path, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "not valid JSON"));
	assert_non_null(strstr(err.msg, "kept aside as "));
	snprintf(aside, sizeof(aside), "%s", strstr(err.msg, "kept aside as ") + 14);
	assert_non_null(strstr(aside, ".corrupt."));
	assert_int_equal(strncmp(aside, path, strlen(path)), 0);
	assert_int_equal(access(path, F_OK), -1); /* moved, not copied */
	/* The next save writes a fresh file; the kept one is untouched. */
	assert_int_equal(hm_coord_state_save(c, path, &err), HM_OK);
	assert_non_null(f = fopen(aside, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, bad);
	/* A second corrupt file in the same second gets a counter, not the same name. */
	put_file(path, "{\"version\":7,\"jobs\":[]}");
	assert_int_equal(hm_coord_state_load(c, path, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "not a version 1"));
	assert_string_not_equal(strstr(err.msg, "kept aside as ") + 14, aside);
	assert_int_equal(unlink(strstr(err.msg, "kept aside as ") + 14), 0);
	assert_int_equal(unlink(aside), 0);
	hm_coord_destroy(c);
}

static char logged[2048]; /* every ERROR line, one after the other */
static void log_sink(int level, const char *msg)
{
	size_t n = strlen(logged);

	if (level == HM_LOG_ERROR)
		snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

/* A value out of range refuses its entry by name; the other entries are restored. */
static void test_state_range(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c, *d;
	hm_assignment_t a;
	char path[] = "/tmp/hm_state_XXXXXX";
	bool changed;
	hm_err_t err = {0};
	int fd = mkstemp(path);
	json_object *root, *jobs, *as;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	fixture_conf(&conf);
	c = new_coord(&conf);
	assert_int_equal(add_job(c, 11, 500, "n[1-3]", "auto", prof), HM_OK);
	assert_int_equal(add_job(c, 12, 501, "n[4-6]", "auto", prof), HM_OK);
	assert_int_equal(add_job(c, 13, 502, "n7", "auto", prof), HM_OK);
	assert_int_equal(hm_coord_decide(c, NOW, &changed, &err), HM_OK);
	assert_int_equal(hm_coord_state_save(c, path, &err), HM_OK);
	hm_coord_destroy(c);
	/* Job 12's priority class out of range. */
	root = json_object_from_file(path);
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "jobs", &jobs));
	for (size_t i = 0; i < json_object_array_length(jobs); i++) {
		json_object *o = json_object_array_get_idx(jobs, i), *id;

		assert_true(json_object_object_get_ex(o, "job_id", &id));
		if (json_object_get_int(id) != 12)
			continue;
		assert_true(json_object_object_get_ex(o, "assignment", &as));
		json_object_object_add(as, "prio", json_object_new_int(99));
	}
	/* Job 11's account too long: refused, not cut (a cut one could name another). */
	{
		char longacct[HM_ACCOUNT_MAX + 8];
		json_object *o = json_object_array_get_idx(jobs, 0), *id;

		memset(longacct, 'a', sizeof(longacct) - 1);
		longacct[sizeof(longacct) - 1] = '\0';
		assert_true(json_object_object_get_ex(o, "job_id", &id));
		assert_int_equal(json_object_get_int(id), 11);
		json_object_object_add(o, "account", json_object_new_string(longacct));
	}
	assert_int_equal(json_object_to_file(path, root), 0);
	json_object_put(root);

	fixture_conf(&conf);
	d = new_coord(&conf);
	logged[0] = '\0';
	hm_log_set_sink(log_sink);
	assert_int_equal(hm_coord_state_load(d, path, &err), HM_OK);
	hm_log_set_sink(NULL);
	assert_non_null(strstr(logged, path));
	assert_non_null(strstr(logged, "jobs[0].account"));
	assert_non_null(strstr(logged, "assignment.prio: 99 is not in [0, "));
	assert_non_null(strstr(err.msg, "jobs[0].account")); /* the first, for the caller */
	assert_int_not_equal(hm_coord_assignment(d, 11, &a), HM_OK);
	assert_int_not_equal(hm_coord_assignment(d, 12, &a), HM_OK);
	assert_int_equal(hm_coord_assignment(d, 13, &a), HM_OK);
	assert_true(a.scheduled);
	hm_coord_destroy(d);
	unlink(path);
}

/* After a state loss (no file, or a corrupt one), epochs stay above those saved. */
static void test_state_epochs_after_loss(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c, *d;
	hm_assignment_t a;
	char path[] = "/tmp/hm_state_XXXXXX";
	bool changed;
	hm_err_t err = {0};
	int fd = mkstemp(path);
	unsigned long saved;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	for (int corrupt = 0; corrupt < 2; corrupt++) {
		fixture_conf(&conf);
		c = new_coord(&conf);
		/* A coordinator that ran a while, its counter from 0 (a state written
		   before the clock rule) or from the clock (started from nothing), decided
		   and saved; a second passes (one decision run a second at most). */
		unlink(path);
		if (corrupt)
			assert_int_equal(hm_coord_state_load(c, path, &err), HM_ERR_NOTFOUND);
		assert_int_equal(add_job(c, 11, 500, "n[1-3]", "auto", prof), HM_OK);
		assert_int_equal(hm_coord_decide(c, NOW, &changed, &err), HM_OK);
		assert_int_equal(hm_coord_assignment(c, 11, &a), HM_OK);
		saved = a.epoch;
		assert_int_equal(hm_coord_state_save(c, path, &err), HM_OK);
		hm_coord_destroy(c);
		if (corrupt)
			usleep(1100000);
		/* The state is lost; a fresh start decides again. */
		if (corrupt)
			put_file(path, "garbage");
		else
			unlink(path);
		fixture_conf(&conf);
		d = new_coord(&conf);
		assert_int_not_equal(hm_coord_state_load(d, path, &err), HM_OK);
		if (corrupt)
			assert_int_equal(unlink(strstr(err.msg, "kept aside as ") + 14), 0);
		assert_int_equal(add_job(d, 11, 500, "n[1-3]", "auto", prof), HM_OK);
		assert_int_equal(hm_coord_decide(d, NOW + 1, &changed, &err), HM_OK);
		assert_int_equal(hm_coord_assignment(d, 11, &a), HM_OK);
		assert_true(a.epoch > saved);
		hm_coord_destroy(d);
	}
	unlink(path);
}

static void test_reconfigure_keeps(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c;
	hm_assignment_t a1, a2;
	bool changed;
	hm_err_t err = {0};

	fixture_conf(&conf);
	c = new_coord(&conf);
	assert_int_equal(add_job(c, 1, 1, "n[1-2]", "auto", prof), HM_OK);
	assert_int_equal(add_job(c, 2, 1, "n[3-4]", "auto", prof), HM_OK);
	assert_int_equal(hm_coord_decide(c, NOW, &changed, &err), HM_OK);
	assert_int_equal(hm_coord_assignment(c, 2, &a1), HM_OK);
	conf.epoch_s = 30;
	assert_int_equal(hm_coord_reconfigure(c, &conf, NULL, &err), HM_OK);
	assert_int_equal(hm_coord_assignment(c, 2, &a2), HM_OK);
	assert_memory_equal(&a1, &a2, sizeof(a1));
	hm_coord_stats_t st;
	hm_coord_stats(c, &st);
	assert_float_equal(st.epoch_s, 30, 1e-9);
	assert_int_equal(st.njobs, 2);
	snprintf(conf.policy, sizeof(conf.policy), "nonesuch");
	assert_int_equal(hm_coord_reconfigure(c, &conf, NULL, &err), HM_ERR_NOTFOUND);
	assert_non_null(strstr(err.msg, "nonesuch"));
	hm_coord_destroy(c);
}

static void test_racks(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c;
	hm_coord_rack_view_t *r = NULL;
	int n = 0;
	bool changed;
	hm_err_t err = {0};

	fixture_conf(&conf);
	c = new_coord(&conf);
	assert_int_equal(add_job(c, 1, 1, "n[1-2]", "auto", prof), HM_OK);
	assert_int_equal(add_job(c, 2, 1, "n[4-5]", "auto", prof), HM_OK);
	assert_int_equal(hm_coord_decide(c, NOW, &changed, &err), HM_OK);
	assert_int_equal(hm_coord_racks(c, &r, &n), HM_OK);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].nhosts, 4);
	assert_int_equal(r[0].njobs, 2);
	assert_int_equal(r[0].ncross, 1);
	assert_int_equal(r[1].njobs, 1);
	assert_true(r[0].load > 0);
	free(r);
	hm_coord_destroy(c);
}

static void test_spec(void **state)
{
	hm_profile_t p;
	hm_err_t err = {0};

	assert_int_equal(hm_spec_profile_parse("iter=250ms,comm=40%,bytes=1.2GB", &p, &err), HM_OK);
	assert_float_equal(p.compute_s, 0.15, 1e-12);
	assert_int_equal(p.nphases, 1);
	assert_float_equal(p.phases[0].bytes, 1.2e9, 1);
	assert_int_equal(hm_spec_profile_parse("resnet50", &p, &err), HM_OK);
	assert_int_equal(hm_spec_profile_parse("model=resnet50", &p, &err), HM_OK);
	assert_int_equal(hm_spec_profile_parse("iter=250ms,comm=40%,bytes=1.2GB,fast=1", &p, &err),
			 HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "fast"));
	assert_int_equal(hm_spec_profile_parse("iter=250ms,comm=100%,bytes=1GB", &p, &err),
			 HM_ERR_RANGE);
	assert_int_equal(hm_spec_profile_parse("", &p, &err), HM_ERR_INVAL);
	assert_int_equal(hm_spec_profile_parse("nonesuch-model", &p, &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "resnet50"));

	assert_int_equal(hm_spec_mode_check("OFF", &err), HM_OK);
	assert_int_equal(hm_spec_mode_check("auto", &err), HM_OK);
	assert_int_equal(hm_spec_mode_check("fair", &err), HM_OK);
	assert_int_equal(hm_spec_mode_check("sometimes", &err), HM_ERR_INVAL);
	assert_non_null(strstr(err.msg, "'sometimes'"));
	assert_non_null(strstr(err.msg, "off,auto,fair"));
}

/*
 * The client checks policy names without the registry (hm_policy_names.h): the
 * list must be the registry's names, in its order, and accept nothing else.
 */
static void test_policy_names(void **state)
{
	char joined[256] = "";
	hm_err_t err = {0};

	for (int i = 0; i < hm_policy_count(); i++) {
		const char *name = hm_policy_at(i)->name;
		char upper[64];
		size_t k;

		snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s",
			 i ? "," : "", name);
		assert_true(hm_spec_policy_known(name));
		for (k = 0; name[k] && k + 1 < sizeof(upper); k++)
			upper[k] =
			    (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 32 : name[k]);
		upper[k] = '\0';
		assert_int_equal(hm_spec_mode_check(upper, &err), HM_OK);
	}
	assert_string_equal(joined, HM_POLICY_NAMES);
	assert_string_equal(hm_policy_names(), HM_POLICY_NAMES);
	const char *const not_policies[] = {
	    "", "off", "auto", "fai", "fairs", "fair,optimal", "harmonics,", ",fair", "Harmonics"};
	for (size_t i = 0; i < sizeof(not_policies) / sizeof(not_policies[0]); i++)
		if (hm_spec_policy_known(not_policies[i]))
			fail_msg("'%s' taken for a policy name", not_policies[i]);
	assert_false(hm_spec_policy_known(NULL));
	assert_int_equal(hm_spec_mode_check("fair,optimal", &err), HM_ERR_INVAL);
}

/* A register for a job the sched thread has not seen wakes it and waits, bounded. */
static hm_coord_t *waiter_coord;
static hm_rc_t waiter_rc;

static void *waiter(void *arg)
{
	waiter_rc = hm_coord_wait_job(waiter_coord, 42, 3000);
	return NULL;
}

static void test_wait_job(void **state)
{
	hm_conf_t conf;
	pthread_t th;
	bool changed;
	hm_err_t err = {0};

	fixture_conf(&conf);
	waiter_coord = new_coord(&conf);
	assert_int_equal(hm_coord_wait_job(waiter_coord, 41, 50), HM_ERR_NOTFOUND);
	(void)hm_coord_wait_work(waiter_coord, 0); /* clear the request that made */
	assert_int_equal(pthread_create(&th, NULL, waiter, NULL), 0);
	assert_true(hm_coord_wait_work(waiter_coord, 3000));
	assert_int_equal(add_job(waiter_coord, 42, 1, "n1", "auto", prof), HM_OK);
	assert_int_equal(hm_coord_decide(waiter_coord, NOW, &changed, &err), HM_OK);
	pthread_join(th, NULL);
	assert_int_equal(waiter_rc, HM_OK);
	assert_false(hm_coord_wait_work(waiter_coord, 10));
	hm_coord_destroy(waiter_coord);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decide),          cmocka_unit_test(test_upsert_change),
	    cmocka_unit_test(test_policy_cfg),      cmocka_unit_test(test_real_policies),
	    cmocka_unit_test(test_admin_comment),   cmocka_unit_test(test_admin_entry_forms),
	    cmocka_unit_test(test_state_roundtrip), cmocka_unit_test(test_state_corrupt_kept),
	    cmocka_unit_test(test_state_range), cmocka_unit_test(test_state_epochs_after_loss),
	    cmocka_unit_test(test_reconfigure_keeps),
	    cmocka_unit_test(test_racks),           cmocka_unit_test(test_spec),
	    cmocka_unit_test(test_policy_names),    cmocka_unit_test(test_wait_job),
	};
	hm_log_set_level(HM_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
