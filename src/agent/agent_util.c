/* The agent's back-off, configuration and rack role. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* ---- back-off ------------------------------------------------------------------- */

int agent_backoff_next(agent_backoff_t *b, double r)
{
	int nominal = b->step_ms < AGENT_BACKOFF_MIN_MS ? AGENT_BACKOFF_MIN_MS : b->step_ms;
	int delay;

	if (r < 0 || r >= 1)
		r = 0;
	delay = nominal - (int)(nominal * 0.2 * r);
	b->step_ms = nominal >= AGENT_BACKOFF_MAX_MS / 2 ? AGENT_BACKOFF_MAX_MS : 2 * nominal;
	return delay;
}

void agent_backoff_reset(agent_backoff_t *b)
{
	b->step_ms = AGENT_BACKOFF_MIN_MS;
}

/* ---- clock offset ---------------------------------------------------------------- */

int agent_clock_sample(agent_clock_t *c, int64_t sent_us, int64_t sent_mono_us, int64_t coord_us,
		       int64_t recv_us, int64_t recv_mono_us, int64_t bound_us)
{
	int64_t rtt_us = recv_mono_us - sent_mono_us, off, margin;
	bool was = c->skewed;

	if (coord_us <= 0 || rtt_us < 0 || rtt_us > AGENT_CLOCK_RTT_MAX_US)
		return 0;
	/* Halves first: realtime values near 2^62 must not overflow. */
	off = coord_us - (sent_us / 2 + recv_us / 2 + (sent_us % 2 + recv_us % 2) / 2);
	c->has = true;
	c->offset_us = off;
	c->rtt_us = rtt_us;
	margin = (off < 0 ? -off : off) - rtt_us / 2;
	c->skewed = bound_us > 0 && margin > bound_us;
	return c->skewed == was ? 0 : c->skewed ? 1 : -1;
}

/* ---- configuration ------------------------------------------------------------- */

hm_rc_t agent_cfg_init(agent_cfg_t *cfg, const char *node, const char *conf_path,
		       uint32_t slurm_uid, const char *topo_xml, hm_agent_log_fn log, hm_err_t *err)
{
	char path[HM_CONF_PATH_MAX];
	bool daemonizes = false;
	hm_rc_t rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->log.sink = log;
	cfg->log.level = HM_LOG_INFO;
	if (node && *node) {
		if (!agent_node_valid(node))
			return hm_err_set(err, HM_ERR_INVAL,
					  "node name '%.80s' is not accepted (1-63 of A-Z a-z 0-9 "
					  ". _ -)",
					  node);
		snprintf(cfg->node, sizeof(cfg->node), "%s", node);
	} else if ((rc = agent_node_name(cfg->node, sizeof(cfg->node), &daemonizes, err)) !=
		   HM_OK) {
		return rc;
	}
	snprintf(cfg->log.prefix, sizeof(cfg->log.prefix), "harmonics-agent %s: ", cfg->node);
	if (conf_path && *conf_path)
		snprintf(path, sizeof(path), "%s", conf_path);
	else
		hm_conf_default_path(path, sizeof(path));
	rc = hm_conf_load(path, &cfg->conf, err);
	if (rc == HM_ERR_IO && access(path, F_OK) != 0 && errno == ENOENT) {
		hm_conf_defaults(&cfg->conf);
		hm_logf(&cfg->log, HM_LOG_INFO, "%s does not exist: using the defaults", path);
	} else if (rc != HM_OK) {
		return rc;
	}
	cfg->log.level = (int)cfg->conf.log_level;
	/* A slurm.conf that cannot be read leaves 127.0.0.1 (logged): a broken
	   file is slurmd's to report, the agent still runs. */
	if (hm_coord_addrs_load(&cfg->conf, NULL, &cfg->addrs, err) != HM_OK)
		hm_logf(&cfg->log, HM_LOG_INFO, "%s: the coordinator at %s", err->msg,
			cfg->addrs.host[0]);
	memset(err, 0, sizeof(*err));
	cfg->trusted[cfg->ntrusted++] = 0;
	if (slurm_uid == HM_AGENT_NO_UID) {
		struct passwd pw, *res = NULL;
		char buf[1024];

		if (getpwnam_r("slurm", &pw, buf, sizeof(buf), &res) == 0 && res)
			slurm_uid = res->pw_uid;
	}
	if (slurm_uid != HM_AGENT_NO_UID && slurm_uid != 0)
		cfg->trusted[cfg->ntrusted++] = slurm_uid;
	if (topo_xml && strlen(topo_xml) >= sizeof(cfg->topo_xml))
		return hm_err_set(err, HM_ERR_RANGE, "hwloc XML path is longer than %zu bytes",
				  sizeof(cfg->topo_xml) - 1);
	snprintf(cfg->topo_xml, sizeof(cfg->topo_xml), "%s", topo_xml ? topo_xml : "");
	return HM_OK;
}

bool agent_role_note(agent_role_t *r, const hm_aw_msg_t *m, const hm_logger_t *lg)
{
	const hm_aw_rack_t *n = &m->rack;

	if (!m->has_rack)
		return false;
	if (r->known && strcmp(r->last.rack, n->rack) == 0 &&
	    strcmp(r->last.leader, n->leader) == 0 && strcmp(r->last.role, n->role) == 0) {
		r->last = *n; /* the term and the leader's address may move on */
		return false;
	}
	if (strcmp(n->role, "leader") == 0)
		hm_logf(lg, HM_LOG_INFO, "rack %s: this node leads (term %ld)", n->rack, n->term);
	else if (n->leader[0])
		hm_logf(lg, HM_LOG_INFO, "rack %s: member, %s leads (term %ld)", n->rack, n->leader,
			n->term);
	else
		hm_logf(lg, HM_LOG_INFO, "rack %s: member, no leader", n->rack);
	r->known = true;
	r->last = *n;
	return true;
}
