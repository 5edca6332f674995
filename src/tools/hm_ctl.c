/* harmonicsctl: requests and tables. */
#include "hm_ctl.h"

#include <json-c/json.h>
#include <pwd.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hm_coord_json.h"
#include "hm_node_json.h"

/* Command words; explain is the op of "job ID --explain". */
static const char *const cmd_names[] = {"status", "jobs", "racks", "nodes", "job"};

hm_rc_t hm_ctl_parse_cmd(const char *word, hm_ctl_cmd_t *cmd, hm_err_t *err)
{
	for (int i = 0; i < (int)(sizeof(cmd_names) / sizeof(cmd_names[0])); i++)
		if (strcmp(word, cmd_names[i]) == 0) {
			*cmd = (hm_ctl_cmd_t)i;
			return HM_OK;
		}
	return hm_err_set(err, HM_ERR_INVAL,
			  "unknown command '%s' (accepted: status, jobs, racks, nodes, job ID)",
			  word);
}

void hm_ctl_request(hm_ctl_cmd_t cmd, uint32_t job_id, char *buf, size_t len)
{
	if (cmd == HM_CTL_JOB || cmd == HM_CTL_EXPLAIN)
		snprintf(buf, len, "{\"op\":\"%s\",\"job_id\":%u}",
			 cmd == HM_CTL_JOB ? "job" : "explain", job_id);
	else
		snprintf(buf, len, "{\"op\":\"%s\"}", cmd_names[cmd]);
}

static void fmt_time(double t_s, char *buf, size_t len)
{
	time_t t = (time_t)t_s;
	struct tm tm;

	if (t_s <= 0 || !gmtime_r(&t, &tm))
		snprintf(buf, len, "-");
	else
		strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void user_name(uint32_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (getpwuid_r((uid_t)uid, &pw, tmp, sizeof(tmp), &res) == 0 && res)
		snprintf(buf, len, "%s", pw.pw_name);
	else
		snprintf(buf, len, "%u", uid);
}

static void print_status(json_object *r, const char *where, FILE *out)
{
	json_object *so = NULL;
	hm_coord_stats_t s;
	char since[32], last[32];

	json_object_object_get_ex(r, "status", &so);
	hm_json_stats_parse(so, &s);
	fmt_time(s.started_s, since, sizeof(since));
	fmt_time(s.last_decide_s, last, sizeof(last));
	fprintf(out, "Coordinator  %s\n", where);
	fprintf(out, "Policy       %s, epoch %gs (decision #%lu at %s, took %.2f ms)\n", s.policy,
		s.epoch_s, s.epoch, last, s.last_decide_wall_s * 1e3);
	fprintf(out, "Cluster      %d racks, %d hosts, %d GPUs\n", s.nracks, s.nhosts, s.ngpus);
	fprintf(out, "Jobs         %d running, %d scheduled\n", s.njobs, s.nscheduled);
	fprintf(out, "Requests     %lu served, %lu refused\n", s.requests, s.refused);
	fprintf(out, "Up since     %s\n", since);
}

static void print_job_row(const hm_coord_job_view_t *v, FILE *out)
{
	char user[32], period[16] = "-", shift[16] = "-", prio[24] = "-", applied[24] = "-";
	const hm_assignment_t *a = &v->a;

	user_name(v->uid, user, sizeof(user));
	if (a->scheduled) {
		if (a->period_us > 0)
			snprintf(period, sizeof(period), "%.6g", a->period_us / 1e3);
		else
			snprintf(period, sizeof(period), a->shift_us > 0 ? "delay" : "free");
		snprintf(shift, sizeof(shift), "%.6g", a->shift_us / 1e3);
		/* DECIDED/IN_FORCE where its NCCL traffic still carries another class. */
		if (v->class_in_force >= 0 && v->class_in_force != a->prio)
			snprintf(prio, sizeof(prio), "%d/%d", a->prio, v->class_in_force);
		else
			snprintf(prio, sizeof(prio), "%d", a->prio);
	}
	if (v->applied_epoch >= 0)
		snprintf(applied, sizeof(applied), "%ld", v->applied_epoch);
	fprintf(out,
		"%-8u %-10.10s %-12.12s %-16.16s %4d %5d %-9.9s %9s %9s %4s %5lu %7s %5d  %s\n",
		v->job_id, user, v->name[0] ? v->name : "-", v->nodes, v->gpus, v->nracks, v->mode,
		period, shift, prio, a->epoch, applied, v->registered_steps,
		!a->scheduled ? a->reason
		: v->unpaced  ? "unpaced"
			      : "scheduled");
}

/* The array member key of reply r and its length (0 when absent or not an array). */
static int array_member(json_object *r, const char *key, json_object **arr)
{
	*arr = NULL;
	if (!json_object_object_get_ex(r, key, arr) || !json_object_is_type(*arr, json_type_array))
		return 0;
	return (int)json_object_array_length(*arr);
}

static void print_jobs(json_object *r, FILE *out)
{
	json_object *arr;
	int n = array_member(r, "jobs", &arr);

	fprintf(out, "%-8s %-10s %-12s %-16s %4s %5s %-9s %9s %9s %4s %5s %7s %5s  %s\n", "JOBID",
		"USER", "NAME", "NODES", "GPUS", "RACKS", "MODE", "PERIOD_MS", "SHIFT_MS", "PRIO",
		"EPOCH", "APPLIED", "STEPS", "STATE");
	for (int i = 0; i < n; i++) {
		hm_coord_job_view_t v;

		hm_json_job_view_parse(json_object_array_get_idx(arr, (size_t)i), &v);
		print_job_row(&v, out);
	}
	if (n == 0)
		fprintf(out, "(no running jobs)\n");
}

static void print_racks(json_object *r, FILE *out)
{
	json_object *arr;
	int n = array_member(r, "racks", &arr);

	fprintf(out, "%-5s %-16s %-12s %-5s %4s %5s %5s %5s %6s %6s %5s %8s %-11s %7s %7s\n",
		"RACK", "SWITCH", "LEADER", "STATE", "TERM", "HOSTS", "GPUS", "JOBS", "CROSS",
		"LOAD", "EPOCH", "SOLVE_MS", "SOLVER", "SOLVES", "SILENT");
	for (int i = 0; i < n; i++) {
		hm_coord_rack_view_t v;
		char epoch[24] = "-", solve[24] = "-";

		hm_json_rack_view_parse(json_object_array_get_idx(arr, (size_t)i), &v);
		if (v.last_epoch >= 0)
			snprintf(epoch, sizeof(epoch), "%ld", v.last_epoch);
		if (v.solve_ms >= 0)
			snprintf(solve, sizeof(solve), "%.2f", v.solve_ms);
		fprintf(out,
			"%-5d %-16.16s %-12.12s %-5.5s %4lu %5d %5d %5d %6d %5.0f%% %5s %8s %-11s "
			"%7lu %7lu\n",
			v.rack, v.name, v.leader[0] ? v.leader : "-", v.state[0] ? v.state : "-",
			v.term, v.nhosts, v.ngpus, v.njobs, v.ncross, v.load * 100, epoch, solve,
			v.solver[0] ? v.solver : "-", v.leader_solves + v.coord_solves, v.silent);
	}
}

static void print_nodes(json_object *r, FILE *out)
{
	json_object *arr;
	int n = array_member(r, "nodes", &arr);

	fprintf(out, "%-12s %-5s %5s %5s %5s %4s %-24s %-20s %s\n", "NODE", "STATE", "JOBS",
		"STEPS", "RANKS", "GPUS", "NICS", "LAST_SEEN", "CLOCK");
	for (int i = 0; i < n; i++) {
		hm_coord_node_view_t v;
		char nics[64] = "-", gpus[8] = "-", seen[32], clock[40] = "-";
		size_t used = 0;

		hm_json_node_view_parse(json_object_array_get_idx(arr, (size_t)i), &v);
		fmt_time(v.last_seen_s, seen, sizeof(seen));
		if (v.has_topo) {
			snprintf(gpus, sizeof(gpus), "%d", v.topo.ngpus);
			for (int k = 0; k < v.topo.nnics && used + 1 < sizeof(nics); k++) {
				int w = snprintf(nics + used, sizeof(nics) - used, "%s%s",
						 k ? "," : "", v.topo.nics[k].name);

				if (w < 0)
					break;
				used +=
				    (size_t)w; /* a long list is cut for the table; --json has it */
			}
		}
		if (v.has_clock) /* the node's clock minus the coordinator's */
			snprintf(clock, sizeof(clock), "%+lldus%s", (long long)v.clock_offset_us,
				 v.clock_skewed ? " skewed" : "");
		fprintf(out, "%-12.12s %-5s %5d %5d %5d %4s %-24.24s %-20s %s\n", v.node, v.state,
			v.jobs, v.steps, v.ranks, gpus, nics, seen, clock);
		if (v.topo_note[0])
			fprintf(out, "             note: %s\n", v.topo_note);
	}
}

static void print_job(json_object *r, FILE *out)
{
	json_object *jo = NULL;
	hm_coord_job_view_t v;
	const hm_assignment_t *a = &v.a;
	char user[32], started[32], decided[32], valid[32];

	json_object_object_get_ex(r, "job", &jo);
	hm_json_job_view_parse(jo, &v);
	user_name(v.uid, user, sizeof(user));
	fmt_time(v.start_s, started, sizeof(started));
	fmt_time(a->decided_us / 1e6, decided, sizeof(decided));
	fmt_time(a->valid_until_us / 1e6, valid, sizeof(valid));
	fprintf(
	    out,
	    "JobId        %u\nUser         %s (%u)\nAccount      %s\nName         %s\nNodes        "
	    "%s\n",
	    v.job_id, user, v.uid, v.account[0] ? v.account : "-", v.name, v.nodes);
	fprintf(out, "GPUs         %d in %d rack(s)\nMode         %s\nProfile      %s%s\n", v.gpus,
		v.nracks, v.mode, v.profile[0] ? v.profile : "-", v.measured ? " (measured)" : "");
	fprintf(out, "Started      %s\nSteps        %d registered, %d seen by node agents\n",
		started, v.registered_steps, v.steps);
	if (v.applied_epoch >= 0)
		fprintf(out, "Applied      epoch %ld (the oldest its steps run)\n",
			v.applied_epoch);
	else
		fprintf(out, "Applied      not reported (no node agent, or no burst yet)\n");
	if (v.measured_period_us >= 0)
		fprintf(out, "Measured     iteration %.6g ms, burst %.6g ms, %ld slot misses\n",
			v.measured_period_us / 1e3,
			v.measured_burst_us >= 0 ? v.measured_burst_us / 1e3 : 0.0,
			v.slot_misses > 0 ? v.slot_misses : 0);
	if (!a->scheduled) {
		fprintf(out, "Scheduled    no: %s\n", a->reason);
		return;
	}
	fprintf(out, "Scheduled    yes, by %s, epoch %lu at %s (valid until %s)\n", a->policy,
		a->epoch, decided, valid);
	if (a->period_us > 0)
		fprintf(out,
			"Slot         shift %.6g ms in a %.6g ms period, guard %.6g ms, origin "
			"%lld us\n",
			a->shift_us / 1e3, a->period_us / 1e3, a->guard_us / 1e3,
			(long long)a->origin_us);
	else if (a->shift_us > 0)
		fprintf(out, "Slot         one-time delay %.6g ms\n", a->shift_us / 1e3);
	else
		fprintf(out, "Slot         free (no slot; its class applies)\n");
	if (v.has_prev) {
		char at[32];

		fmt_time(v.effective_us / 1e6, at, sizeof(at));
		fprintf(out, "Switch       every step switches to epoch %lu at %s\n", a->epoch, at);
	}
	if (v.class_in_force >= 0 && v.class_in_force != a->prio)
		fprintf(out,
			"Priority     class %d decided, %d in force (its NCCL communicators keep "
			"theirs; modelled with %d), path %d\n",
			a->prio, v.class_in_force, v.class_in_force, a->path);
	else
		fprintf(out, "Priority     class %d, path %d\n", a->prio, a->path);
	if (v.unpaced)
		fprintf(out, "Pacing       unpaced: no step reported an applied epoch within "
			     "UnpacedAfter (runtime not loaded, opted out or broken); modelled "
			     "free running\n");
}

/* job ID --explain: its links, who else is on them, the decision and why. */
static void print_explain(json_object *r, FILE *out)
{
	json_object *eo = NULL;
	hm_coord_explain_t *e = malloc(sizeof(*e));
	const hm_coord_job_view_t *v;

	if (!e) {
		fprintf(out, "harmonicsctl: out of memory\n");
		return;
	}
	json_object_object_get_ex(r, "explain", &eo);
	hm_json_explain_parse(eo, e);
	v = &e->job;
	fprintf(out, "JobId        %u (%s), mode %s, profile %s\n", v->job_id, v->name, v->mode,
		v->profile[0] ? v->profile : "-");
	fprintf(out, "GPUs         %s (modelled per node)\n", e->gpus[0] ? e->gpus : "-");
	fprintf(out, "Decision     %s: %s\n", e->decision, e->why);
	fprintf(out, "Links        %d crossed, %d shared with other jobs\n", e->nlinks_total,
		e->nshared);
	if (e->nshared)
		fprintf(out,
			"Predicted    share %.2f of its bottleneck, bursts %.2fx slower if they "
			"overlapped\n",
			e->share, e->slowdown);
	if (e->nlinks) {
		fprintf(out, "  %-28s %-4s %9s %6s %6s %6s  %s\n", "LINK", "DIR", "GBIT/S", "UTIL",
			"OWN", "SHARE", "OTHER JOBS");
		for (int i = 0; i < e->nlinks; i++) {
			const hm_coord_explain_link_t *l = &e->links[i];

			fprintf(out, "  %-28s %-4s %9.4g %6.2f %6.2f %6.2f  %s%s\n", l->link.name,
				l->link.dir, l->link.capacity_bps / 1e9, l->link.util, l->own_util,
				l->share, l->nothers ? l->others : "-",
				l->nothers > HM_EXPLAIN_MAX_OTHERS ? ",..." : "");
		}
		if (e->nlinks < e->nlinks_total)
			fprintf(out, "  (%d more, none shared)\n", e->nlinks_total - e->nlinks);
	}
	if (v->measured_period_us >= 0)
		fprintf(out, "Measured     iteration %.6g ms, burst %.6g ms, %ld slot misses\n",
			v->measured_period_us / 1e3,
			v->measured_burst_us >= 0 ? v->measured_burst_us / 1e3 : 0.0,
			v->slot_misses > 0 ? v->slot_misses : 0);
	else
		fprintf(out, "Measured     nothing yet (no step reported)\n");
	if (e->burst_model_us >= 0 && e->burst_factor > 0 && e->burst_factor != 1)
		fprintf(
		    out,
		    "Burst        modelled %.6g ms alone: measured, declared bytes x %.3g (from "
		    "%.0f bursts); declared %.6g ms\n",
		    e->burst_model_us / 1e3, e->burst_factor, e->burst_samples,
		    e->burst_declared_us / 1e3);
	else if (e->burst_model_us >= 0)
		fprintf(out,
			"Burst        modelled %.6g ms alone: declared (%.0f bursts measured)\n",
			e->burst_model_us / 1e3, e->burst_samples);
	if (v->applied_epoch >= 0)
		fprintf(out, "Applied      epoch %ld on every node (decided: epoch %lu)\n",
			v->applied_epoch, v->a.epoch);
	else
		fprintf(out, "Applied      not reported (no node agent, or no burst yet)\n");
	free(e);
}

hm_rc_t hm_ctl_print(hm_ctl_cmd_t cmd, const char *reply_json, bool json, const char *where,
		     FILE *out, FILE *err_out)
{
	json_object *r = json_tokener_parse(reply_json);
	hm_rc_t rc = HM_OK;

	if (!r || !json_object_is_type(r, json_type_object)) {
		fprintf(err_out, "harmonicsctl: coordinator %s sent a reply that is not JSON\n",
			where);
		rc = HM_ERR_PROTO;
		goto out;
	}
	if (!hm_json_bool(r, "ok")) {
		const char *code = hm_json_str(r, "code");

		fprintf(err_out, "harmonicsctl: coordinator %s refused: %s\n", where,
			hm_json_str(r, "error"));
		rc = strcmp(code, "auth") == 0       ? HM_ERR_AUTH
		     : strcmp(code, "notfound") == 0 ? HM_ERR_NOTFOUND
						     : HM_ERR_PROTO;
		goto out;
	}
	if (json) {
		fprintf(out, "%s\n", json_object_to_json_string_ext(r, JSON_C_TO_STRING_PRETTY));
		goto out;
	}
	switch (cmd) {
	case HM_CTL_STATUS:
		print_status(r, where, out);
		break;
	case HM_CTL_JOBS:
		print_jobs(r, out);
		break;
	case HM_CTL_RACKS:
		print_racks(r, out);
		break;
	case HM_CTL_NODES:
		print_nodes(r, out);
		break;
	case HM_CTL_JOB:
		print_job(r, out);
		break;
	case HM_CTL_EXPLAIN:
		print_explain(r, out);
		break;
	}
out:
	json_object_put(r);
	return rc;
}
