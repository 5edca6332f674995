/*
 * hm_sched_run.c - sched/harmonics' coordinator, enabled or disabled with a
 * cause (hm_sched_run.h).
 */
#include "hm_sched_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hm_coord_addr.h"
#include "hm_log.h"
#include "hm_metrics.h"
#include "hm_proto.h"

#define DISABLED_TAG  "harmonics:e"
#define DISABLED_BODY "off=disabled("

void hm_sched_run_init(hm_sched_run_t *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->why, sizeof(r->why), "not started");
	snprintf(r->tag, sizeof(r->tag), "not-started");
}

hm_rc_t hm_sched_conf_load(const char *path, const char *state_dir, hm_conf_t *conf, bool *missing,
			   hm_err_t *err)
{
	hm_conf_t c;
	hm_rc_t rc;

	*missing = false;
	hm_conf_defaults(&c);
	rc = hm_conf_load(path, &c, err);
	if (rc == HM_ERR_IO && access(path, F_OK) != 0 && errno == ENOENT) {
		hm_conf_defaults(&c); /* none: the documented defaults */
		*missing = true;
		memset(err, 0, sizeof(*err));
		rc = HM_OK;
	}
	if (rc != HM_OK)
		return rc;
	if (!c.state_file[0] && state_dir && state_dir[0])
		snprintf(c.state_file, sizeof(c.state_file), "%s/harmonics.state", state_dir);
	if (!c.source[0])
		snprintf(c.source, sizeof(c.source), "%s", path);
	*conf = c;
	return HM_OK;
}

static bool is_yaml(const char *path)
{
	size_t n = strlen(path);

	return n >= 5 && strcmp(path + n - 5, ".yaml") == 0;
}

/* The configuration and its topology (Topology= wins, else topology.yaml beside
   harmonics.conf, else slurmctld's switches, else topology.conf there). */
static hm_rc_t load(const hm_sched_env_t *env, hm_conf_t *conf, hm_topo_t **topo,
		    const char **phase, hm_err_t *err)
{
	char tpath[HM_CONF_PATH_MAX];
	hm_topo_opts_t opts;
	bool missing;
	hm_rc_t rc;

	*topo = NULL;
	*phase = "conf";
	if ((rc = hm_sched_conf_load(env->conf_path, env->state_dir, conf, &missing, err)) != HM_OK)
		return rc;
	if (missing)
		hm_log(HM_LOG_INFO, "%s not found: built-in defaults", env->conf_path);
	/* ListenAddress unset: this controller's own SlurmctldHost address, so that
	   each controller's coordinator is where the agents look for it. */
	if (!conf->listen_addr[0] &&
	    (rc = hm_coord_bind_addr(env->ctld_addr, conf->listen_addr, sizeof(conf->listen_addr),
				     err)) != HM_OK)
		return rc;
	*phase = "topology";
	memset(&opts, 0, sizeof(opts));
	opts.gpus_per_host = conf->gpus_per_node;
	opts.nics_per_host = conf->nics_per_node;
	opts.nic_bps = conf->nic_bps;
	opts.uplink_bps = conf->uplink_bps;
	/* Every topology of a topology.yaml, each partition's job on its own. */
	opts.all_topologies = true;
	hm_conf_topology_path(conf, tpath, sizeof(tpath));
	/* slurmctld's switches are its default topology only: a topology.yaml
	   (Slurm reads the same file) is read whole instead. */
	if (!conf->topology[0] && env->switches && !is_yaml(tpath)) {
		rc = env->switches(env->switches_arg, &opts, topo, err);
		if (rc != HM_ERR_NOTFOUND)
			goto topo_out;
		memset(err, 0, sizeof(*err));
	}
	hm_log(HM_LOG_VERBOSE, "topology from %s", tpath);
	rc = hm_topo_load_file(tpath, &opts, topo, err);
	for (int p = 0; rc == HM_OK && p < (*topo)->nplanes; p++) {
		const hm_topo_plane_t *pl = &(*topo)->planes[p];

		if (p == 0)
			hm_log(HM_LOG_INFO, "topology '%s' (%s): the cluster default (racks)",
			       pl->name, pl->kind);
		else
			hm_log(pl->nmissing ? HM_LOG_ERROR : HM_LOG_INFO,
			       "topology '%s' (%s): for its partitions' jobs; %d of its nodes "
			       "not in '%s' (not modelled)",
			       pl->name, pl->kind, pl->nmissing, (*topo)->planes[0].name);
	}
topo_out:
	if (rc != HM_OK)
		hm_err_prefix(err, "topology");
	return rc;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* why and tag of a failed start; the phase names the part that failed. */
static void disable(hm_sched_run_t *r, const hm_sched_env_t *env, const char *phase,
		    const hm_err_t *err)
{
	size_t plen = strlen(env->conf_path);
	const char *msg = err->msg[0] ? err->msg : hm_strerror(err->rc);
	char *end = NULL;
	long line;

	r->enabled = false;
	snprintf(r->why, sizeof(r->why), "%s", msg);
	if (strcmp(phase, "conf") == 0) {
		/* "PATH:LINE: ..." from the parser: the file's name and the line. */
		line = strncmp(msg, env->conf_path, plen) == 0 && msg[plen] == ':'
			   ? strtol(msg + plen + 1, &end, 10)
			   : 0;
		if (line > 0 && end && *end == ':')
			snprintf(r->tag, sizeof(r->tag), "%.60s:%ld", base_name(env->conf_path),
				 line);
		else
			snprintf(r->tag, sizeof(r->tag), "%.60s", base_name(env->conf_path));
	} else if (strcmp(phase, "server") == 0) {
		snprintf(r->tag, sizeof(r->tag), "listen-%.60s:%d", r->conf.listen_addr,
			 r->conf.listen_port);
	} else {
		snprintf(r->tag, sizeof(r->tag), "%s", phase);
	}
	/* One token: no blanks or separators. */
	for (char *p = r->tag; *p; p++)
		if (*p == ' ' || *p == '\t' || *p == ';' || *p == '(' || *p == ')')
			*p = '-';
}

/* Log once when munged does not seal: the coordinator decides, steps wait for it. */
static void munge_probe(void)
{
	char *cred = NULL;
	hm_err_t err = {0};

	if (hm_proto_seal("{}", HM_PROTO_UID_ANY, &cred, &err) != HM_OK)
		hm_log(HM_LOG_ERROR,
		       "%s: the coordinator decides (AdminComment) but answers no step, node "
		       "agent or harmonicsctl until munged runs; steps run unscheduled meanwhile",
		       err.msg);
	free(cred);
}

hm_rc_t hm_sched_run_start(hm_sched_run_t *r, const hm_sched_env_t *env, hm_err_t *err)
{
	hm_topo_t *topo = NULL;
	hm_err_t serr = {0};
	const char *phase = "conf";
	hm_rc_t rc;

	if (r->enabled)
		return HM_OK;
	memset(&r->conf, 0, sizeof(r->conf));
	if ((rc = load(env, &r->conf, &topo, &phase, err)) != HM_OK)
		goto fail;
	phase = "coordinator";
	rc = hm_coord_create(&r->conf, topo, &r->coord, err);
	topo = NULL; /* the engine's now, also on error */
	if (rc != HM_OK) {
		hm_err_prefix(err, "coordinator");
		goto fail;
	}
	if (r->conf.state_file[0]) {
		hm_rc_t src = hm_coord_state_load(r->coord, r->conf.state_file, &serr);

		if (src == HM_OK)
			hm_log(HM_LOG_INFO, "decisions recovered from %s", r->conf.state_file);
		else if (src != HM_ERR_NOTFOUND)
			hm_log(HM_LOG_ERROR, "state: %s (starting empty)", serr.msg);
	}
	phase = "server";
	if ((rc = hm_server_start(r->coord, &r->conf, env->slurm_user_id, &r->srv, err)) != HM_OK) {
		hm_err_prefix(err, "server");
		goto fail;
	}
	hm_server_set_operator(r->srv, env->op);
	/* Metrics are a view: a port that cannot be bound leaves them off, not Harmonics. */
	if (r->conf.metrics_listen[0] &&
	    hm_metrics_srv_start(r->conf.metrics_listen, env->slurm_version, &r->mx, &serr) !=
		HM_OK)
		hm_log(HM_LOG_ERROR, "%s (running without metrics)", serr.msg);
	munge_probe();
	r->enabled = true;
	r->why[0] = '\0';
	r->tag[0] = '\0';
	return HM_OK;
fail:
	hm_topo_free(topo);
	hm_coord_destroy(r->coord); /* nothing saved: it decided nothing */
	r->coord = NULL;
	disable(r, env, phase, err);
	return rc;
}

hm_rc_t hm_sched_run_reconfigure(hm_sched_run_t *r, const hm_sched_env_t *env, bool *started,
				 hm_err_t *err)
{
	hm_conf_t conf;
	hm_topo_t *topo = NULL;
	const char *phase;
	hm_rc_t rc;

	*started = false;
	if (!r->enabled) {
		rc = hm_sched_run_start(r, env, err);
		*started = rc == HM_OK;
		return rc;
	}
	/*
	 * A running coordinator refuses a broken file and keeps its configuration:
	 * stopping it would drop every running job's schedule (steps run free after
	 * AgentValidity) for what is most often a typo that the next reconfigure
	 * fixes; the error is logged and the file can be fixed in place.
	 */
	if ((rc = load(env, &conf, &topo, &phase, err)) != HM_OK)
		return rc;
	if (conf.listen_port != r->conf.listen_port ||
	    strcmp(conf.listen_addr, r->conf.listen_addr) != 0)
		hm_log(HM_LOG_INFO, "ListenAddress/ListenPort changes take effect at slurmctld "
				    "restart");
	if (strcmp(conf.metrics_listen, r->conf.metrics_listen) != 0)
		hm_log(HM_LOG_INFO, "MetricsListen changes take effect at slurmctld restart");
	if ((rc = hm_coord_reconfigure(r->coord, &conf, topo, err)) != HM_OK)
		return rc; /* topo taken, also on error */
	r->conf = conf;
	return HM_OK;
}

void hm_sched_run_metrics(hm_sched_run_t *r)
{
	if (r->enabled)
		hm_metrics_srv_refresh(r->mx, r->coord);
}

void hm_sched_run_stop(hm_sched_run_t *r)
{
	hm_metrics_srv_stop(r->mx);
	r->mx = NULL;
	hm_server_stop(r->srv);
	r->srv = NULL;
	if (r->coord && r->conf.state_file[0]) {
		hm_err_t err = {0};

		if (hm_coord_state_save(r->coord, r->conf.state_file, &err) != HM_OK)
			hm_log(HM_LOG_ERROR, "state: %s", err.msg);
	}
	hm_coord_destroy(r->coord);
	r->coord = NULL;
	r->enabled = false;
	snprintf(r->why, sizeof(r->why), "stopped");
	snprintf(r->tag, sizeof(r->tag), "stopped");
}

/* The latest "harmonics:e..." entry of s and its length, or NULL. */
static const char *last_entry(const char *s, size_t *len)
{
	const char *p = s, *last = NULL, *end;

	while ((p = strstr(p, DISABLED_TAG))) {
		last = p;
		p += strlen(DISABLED_TAG);
	}
	if (!last)
		return NULL;
	end = strchr(last, ';');
	*len = end ? (size_t)(end + 1 - last) : strlen(last);
	return last;
}

bool hm_sched_disabled_comment(const char *current, const char *tag, double now_s, size_t max_bytes,
			       char *buf, size_t len)
{
	char entry[64 + HM_SCHED_TAG_MAX], body[16 + HM_SCHED_TAG_MAX], when[32] = "?";
	const char *last, *sp;
	time_t t = (time_t)now_s;
	size_t cur_len, elen = 0, blen;
	struct tm tm;

	if (!current)
		current = "";
	snprintf(body, sizeof(body), DISABLED_BODY "%s);", tag && *tag ? tag : "unknown");
	blen = strlen(body);
	/* Said already: the latest entry's body (after its time) is this one. */
	last = last_entry(current, &elen);
	sp = last ? memchr(last, ' ', elen) : NULL;
	if (sp && (size_t)(last + elen - (sp + 1)) == blen && memcmp(sp + 1, body, blen) == 0)
		return false;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(entry, sizeof(entry), DISABLED_TAG "0@%s %s", when, body);
	cur_len = strlen(current);
	if (cur_len + strlen(entry) > max_bytes || cur_len + strlen(entry) >= len)
		return false;
	memcpy(buf, current, cur_len);
	memcpy(buf + cur_len, entry, strlen(entry) + 1);
	return true;
}
