/*
 * hm_metrics.c - the engine as Prometheus text (exposition format 0.0.4):
 * one prefix (harmonics_), base units in names, _total on counters, labels
 * of bounded cardinality (mode, state, outcome, rack, node, switch links).
 * Each family is written from the engine's status views, copies taken under
 * its mutex one view at a time, so rendering holds it no longer than a
 * `harmonicsctl` query does.
 */
#include "hm_metrics.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hm_coord_int.h"
#include "hm_coord_nodes.h"

static const double bounds_s[HM_MX_NBUCKETS] = HM_MX_DURATION_BOUNDS;

void hm_coord_mx_decision(hm_coord_mx_t *m, double wall_s, int nchanged)
{
	int b = 0;

	while (b < HM_MX_NBUCKETS && wall_s > bounds_s[b])
		b++;
	if (b < HM_MX_NBUCKETS)
		m->dur_le[b]++;
	else
		m->dur_inf++;
	m->decisions++;
	m->changes += (unsigned long)(nchanged > 0 ? nchanged : 0);
	m->dur_sum_s += wall_s;
}

hm_mx_place_t hm_mx_place_outcome(const char *comment)
{
	const char *p = comment ? strstr(comment, "harmonics:placed@") : NULL;
	const char *sc, *ct;
	double score, cons;

	if (!p)
		return HM_MX_PLACE_CONS_TRES;
	sc = strstr(p, " score=");
	ct = strstr(p, " cons_tres=");
	if (!sc || !ct || sscanf(sc, " score=%lf", &score) != 1 ||
	    sscanf(ct, " cons_tres=%lf", &cons) != 1)
		return HM_MX_PLACE_SAME; /* cons_tres=? : its score unknown */
	return score < cons ? HM_MX_PLACE_BETTER : HM_MX_PLACE_SAME;
}

const char *hm_mx_place_name(hm_mx_place_t p)
{
	static const char *const names[HM_MX_PLACE_N] = {"better", "same", "cons_tres"};

	return p >= 0 && p < HM_MX_PLACE_N ? names[p] : "?";
}

void hm_coord_note_placement(hm_coord_t *c, const char *comment)
{
	hm_mx_place_t p = hm_mx_place_outcome(comment);

	pthread_mutex_lock(&c->mu);
	c->mx.placements[p]++;
	pthread_mutex_unlock(&c->mu);
}

/* A label value with '\', '"' and newlines escaped. */
static void label(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The job's state as the jobs family labels it. */
static const char *job_state(const hm_coord_job_view_t *v)
{
	if (!v->a.scheduled)
		return strcmp(v->a.reason, "awaiting decision") == 0 ? "pending" : "free";
	return v->a.period_us > 0 ? "slot" : "class";
}

static void jobs_family(FILE *f, const hm_coord_job_view_t *jobs, int n)
{
	static const char *const states[] = {"slot", "class", "free", "pending"};
	/* Modes seen, each with its count per state: modes are "off", "auto" or a policy. */
	char modes[16][HM_CONF_NAME_MAX];
	int count[16][4] = {{0}}, nm = 0;

	family(f, "harmonics_jobs", "gauge",
	       "Running jobs by --comm-sched mode and state (slot: staggered, class: "
	       "ranked only, free: unpaced, pending: awaiting a decision).");
	for (int i = 0; i < n; i++) {
		int m = 0, s = 0;

		while (m < nm && strcmp(modes[m], jobs[i].mode) != 0)
			m++;
		if (m == nm && nm < 16)
			snprintf(modes[nm++], sizeof(modes[0]), "%s", jobs[i].mode);
		if (m == nm) /* more than 16 modes: cannot be (policies), counted nowhere */
			continue;
		while (strcmp(states[s], job_state(&jobs[i])) != 0)
			s++;
		count[m][s]++;
	}
	for (int m = 0; m < nm; m++)
		for (int s = 0; s < 4; s++) {
			fputs("harmonics_jobs{mode=", f);
			label(f, modes[m]);
			fprintf(f, ",state=\"%s\"} %d\n", states[s], count[m][s]);
		}
}

static void decisions_family(FILE *f, const hm_coord_mx_t *mx, const hm_coord_stats_t *st)
{
	unsigned long cum = 0;

	family(f, "harmonics_decisions_total", "counter", "Policy runs of the coordinator.");
	fprintf(f, "harmonics_decisions_total %lu\n", mx->decisions);
	family(f, "harmonics_decision_changes_total", "counter",
	       "Job decisions (slot, class or unpaced) that changed.");
	fprintf(f, "harmonics_decision_changes_total %lu\n", mx->changes);
	family(f, "harmonics_decision_duration_seconds", "histogram",
	       "Wall clock of one policy run, rack rounds included.");
	for (int b = 0; b < HM_MX_NBUCKETS; b++) {
		cum += mx->dur_le[b];
		fprintf(f, "harmonics_decision_duration_seconds_bucket{le=\"%g\"} %lu\n",
			bounds_s[b], cum);
	}
	cum += mx->dur_inf;
	fprintf(f, "harmonics_decision_duration_seconds_bucket{le=\"+Inf\"} %lu\n", cum);
	fprintf(f, "harmonics_decision_duration_seconds_sum %.9g\n", mx->dur_sum_s);
	fprintf(f, "harmonics_decision_duration_seconds_count %lu\n", cum);
	family(f, "harmonics_decision_epoch", "gauge",
	       "Decision epoch (grows by one when a run changes some decision).");
	fprintf(f, "harmonics_decision_epoch %lu\n", st->epoch);
	family(f, "harmonics_last_decision_timestamp_seconds", "gauge",
	       "When the policy last ran (Unix time, 0: never).");
	fprintf(f, "harmonics_last_decision_timestamp_seconds %.3f\n", st->last_decide_s);
	family(f, "harmonics_placements_total", "counter",
	       "Jobs by how they were placed (better: the select plugin beat cons_tres, same: "
	       "kept its choice, cons_tres: not placed by Harmonics).");
	for (int p = 0; p < HM_MX_PLACE_N; p++)
		fprintf(f, "harmonics_placements_total{outcome=\"%s\"} %lu\n", hm_mx_place_name(p),
			mx->placements[p]);
	family(f, "harmonics_requests_total", "counter",
	       "Requests of steps and harmonicsctl answered.");
	fprintf(f, "harmonics_requests_total %lu\n", st->requests);
	family(f, "harmonics_requests_refused_total", "counter",
	       "Requests refused (authentication, authorisation, protocol).");
	fprintf(f, "harmonics_requests_refused_total %lu\n", st->refused);
}

/*
 * Series over a list of records (links, racks): one table row a series, its
 * value a field of the record. A row without help is another series of the
 * family above (the rounds by solver). The record's own labels come from the
 * list's label writer; a row may add one label, fixed or from a string field
 * of the record (a record whose string is empty has no such series).
 */
typedef enum { MX_DBL, MX_RATIO, MX_INT, MX_ULONG, MX_ONE } mx_kind_t; /* RATIO: 6 digits */

typedef struct {
	const char *name, *type, *help;
	mx_kind_t kind;
	size_t off;        /* the value's offset in the record (not MX_ONE) */
	double scale;      /* MX_DBL: the value times this (bits to bytes) */
	const char *fixed; /* an extra label as written ("solver=\"leader\""), or NULL */
	const char *label; /* an extra label's name, its value at label_off, or NULL */
	size_t label_off;
} mx_series_t;

typedef void (*mx_labels_fn)(FILE *f, const void *rec);

static void series_rows(FILE *f, const mx_series_t *t, size_t nt, const void *recs, size_t size,
			int n, mx_labels_fn labels)
{
	for (size_t k = 0; k < nt; k++) {
		if (t[k].help)
			family(f, t[k].name, t[k].type, t[k].help);
		for (int i = 0; i < n; i++) {
			const char *rec = (const char *)recs + (size_t)i * size;
			const void *v = rec + t[k].off;

			if (t[k].label && !rec[t[k].label_off])
				continue;
			fprintf(f, "%s{", t[k].name);
			labels(f, rec);
			if (t[k].fixed)
				fprintf(f, ",%s", t[k].fixed);
			if (t[k].label) {
				fprintf(f, ",%s=", t[k].label);
				label(f, rec + t[k].label_off);
			}
			if (t[k].kind == MX_DBL)
				fprintf(f, "} %.9g\n", *(const double *)v * t[k].scale);
			else if (t[k].kind == MX_RATIO)
				fprintf(f, "} %.6g\n", *(const double *)v);
			else if (t[k].kind == MX_INT)
				fprintf(f, "} %d\n", *(const int *)v);
			else if (t[k].kind == MX_ULONG)
				fprintf(f, "} %lu\n", *(const unsigned long *)v);
			else
				fputs("} 1\n", f);
		}
	}
}

static void link_labels(FILE *f, const void *rec)
{
	const hm_coord_link_view_t *l = rec;

	fputs("link=", f);
	label(f, l->name);
	fprintf(f, ",level=\"%d\",direction=\"%s\",rack=", l->level, l->dir);
	label(f, l->rack);
}

static void rack_labels(FILE *f, const void *rec)
{
	fputs("rack=", f);
	label(f, ((const hm_coord_rack_view_t *)rec)->name);
}

#define LINK(field) offsetof(hm_coord_link_view_t, field)
#define RACK(field) offsetof(hm_coord_rack_view_t, field)
/* A table row's fields every row has (designated: the others default to none). */
#define SERIES(n, t, h, k, o) .name = n, .type = t, .help = h, .kind = k, .off = o

static const mx_series_t link_series[] = {
    {SERIES("harmonics_link_capacity_bytes_per_second", "gauge",
	    "Capacity of a link in the model (switch links, and NICs that carry a job).", MX_DBL,
	    LINK(capacity_bps)),
     .scale = 1.0 / 8},
    {SERIES("harmonics_link_predicted_utilisation_ratio", "gauge",
	    "Summed contention-free utilisation of the link by its jobs (above 1: their bursts "
	    "cannot all fit unstaggered).",
	    MX_RATIO, LINK(util))},
    {SERIES("harmonics_link_jobs", "gauge", "Jobs whose traffic crosses the link.", MX_INT,
	    LINK(njobs))},
};

static const mx_series_t rack_series[] = {
    {SERIES("harmonics_rack_predicted_utilisation_ratio", "gauge",
	    "Highest predicted utilisation among the rack's links.", MX_RATIO, RACK(load))},
    {SERIES("harmonics_rack_leader_info", "gauge",
	    "The node agent leading the rack (1), by rack; absent when it has none.", MX_ONE, 0),
     .label = "node", .label_off = RACK(leader)},
    {SERIES("harmonics_rack_leader_elections_total", "counter",
	    "Leaders elected in the rack since the coordinator started.", MX_ULONG, RACK(term))},
    {SERIES("harmonics_rack_rounds_total", "counter",
	    "Rack rounds by who solved them (leader, coordinator) or silent (unanswered).",
	    MX_ULONG, RACK(leader_solves)),
     .fixed = "solver=\"leader\""},
    {SERIES("harmonics_rack_rounds_total", NULL, NULL, MX_ULONG, RACK(coord_solves)),
     .fixed = "solver=\"coordinator\""},
    {SERIES("harmonics_rack_rounds_total", NULL, NULL, MX_ULONG, RACK(silent)),
     .fixed = "solver=\"silent\""},
};

static void agents_family(FILE *f, const hm_coord_node_view_t *nv, int n)
{
	int up = 0, lost = 0, none = 0;

	for (int i = 0; i < n; i++) {
		up += strcmp(nv[i].state, "up") == 0;
		lost += strcmp(nv[i].state, "lost") == 0;
		none += strcmp(nv[i].state, "none") == 0;
	}
	family(f, "harmonics_agents", "gauge",
	       "Node agents by state (up: connected, lost: was connected, none: never seen).");
	fprintf(f,
		"harmonics_agents{state=\"up\"} %d\nharmonics_agents{state=\"lost\"} %d\n"
		"harmonics_agents{state=\"none\"} %d\n",
		up, lost, none);
	family(f, "harmonics_agent_up", "gauge", "1 while the node's agent is connected.");
	for (int i = 0; i < n; i++) {
		fputs("harmonics_agent_up{node=", f);
		label(f, nv[i].node);
		fprintf(f, "} %d\n", strcmp(nv[i].state, "up") == 0);
	}
	family(f, "harmonics_agent_last_seen_timestamp_seconds", "gauge",
	       "When the node's agent was last heard (hello or beat; Unix time).");
	for (int i = 0; i < n; i++) {
		if (nv[i].last_seen_s <= 0)
			continue;
		fputs("harmonics_agent_last_seen_timestamp_seconds{node=", f);
		label(f, nv[i].node);
		fprintf(f, "} %.3f\n", nv[i].last_seen_s);
	}
}

hm_rc_t hm_metrics_render(hm_coord_t *c, const char *slurm_version, char **text, size_t *len,
			  hm_err_t *err)
{
	hm_coord_stats_t st;
	hm_coord_mx_t mx;
	hm_coord_job_view_t *jobs = NULL;
	hm_coord_rack_view_t *racks = NULL;
	hm_coord_node_view_t *nodes = NULL;
	hm_coord_link_view_t *links = NULL;
	int njobs = 0, nracks = 0, nnodes = 0, nlinks = 0;
	hm_rc_t rc = HM_OK;
	FILE *f = NULL;

	*text = NULL;
	*len = 0;
	hm_coord_stats(c, &st);
	pthread_mutex_lock(&c->mu);
	mx = c->mx;
	pthread_mutex_unlock(&c->mu);
	if (hm_coord_jobs(c, &jobs, &njobs) != HM_OK ||
	    hm_coord_racks(c, &racks, &nracks) != HM_OK ||
	    hm_coord_nodes(c, &nodes, &nnodes) != HM_OK ||
	    hm_coord_links(c, &links, &nlinks) != HM_OK || !(f = open_memstream(text, len))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "metrics: out of memory");
		goto out;
	}
	family(f, "harmonics_build_info", "gauge",
	       "Harmonics' version, the Slurm it runs in and the policy (always 1).");
	fprintf(f, "harmonics_build_info{version=\"%s\",slurm_version=", PACKAGE_VERSION);
	label(f, slurm_version && *slurm_version ? slurm_version : "none");
	fputs(",policy=", f);
	label(f, st.policy);
	fputs("} 1\n", f);
	family(f, "harmonics_coordinator_start_time_seconds", "gauge",
	       "When the coordinator started (Unix time).");
	fprintf(f, "harmonics_coordinator_start_time_seconds %.3f\n", st.started_s);
	jobs_family(f, jobs, njobs);
	decisions_family(f, &mx, &st);
	series_rows(f, link_series, sizeof(link_series) / sizeof(link_series[0]), links,
		    sizeof(*links), nlinks, link_labels);
	series_rows(f, rack_series, sizeof(rack_series) / sizeof(rack_series[0]), racks,
		    sizeof(*racks), nracks, rack_labels);
	agents_family(f, nodes, nnodes);
	if (fclose(f) != 0) {
		f = NULL;
		rc = hm_err_set(err, HM_ERR_NOMEM, "metrics: out of memory");
		goto out;
	}
	f = NULL;
out:
	if (f)
		fclose(f);
	if (rc != HM_OK) {
		free(*text);
		*text = NULL;
		*len = 0;
	}
	free(jobs);
	free(racks);
	free(nodes);
	free(links);
	return rc;
}
