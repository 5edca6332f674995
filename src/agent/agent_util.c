/* The agent's logging, back-off and configuration. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* ---- logging ------------------------------------------------------------------- */

static void agent_vlog(const agent_log_t *lg, int level, const char *fmt, va_list ap)
{
	static const char *const names[] = {"error", "info", "verbose", "debug"};
	char msg[1024];
	int n;

	if (level > lg->level)
		return;
	n = snprintf(msg, sizeof(msg), "%s", lg->prefix);
	if (n < 0 || (size_t)n >= sizeof(msg))
		n = 0;
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	if (lg->fn)
		lg->fn(level, msg);
	else
		fprintf(stderr, "%s: %s\n", names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

void agent_log(const agent_log_t *lg, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	agent_vlog(lg, level, fmt, ap);
	va_end(ap);
}

void agent_log_once(const agent_log_t *lg, agent_once_t *once, int level, const char *fmt, ...)
{
	char msg[sizeof(once->last)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strcmp(msg, once->last) == 0)
		return;
	memcpy(once->last, msg, sizeof(msg));
	once->level = level;
	agent_log(lg, level, "%s", msg);
}

bool agent_log_clear(agent_once_t *once)
{
	bool had = once->last[0] != '\0';

	once->last[0] = '\0';
	return had;
}

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

/* ---- configuration ------------------------------------------------------------- */

hm_rc_t agent_cfg_init(agent_cfg_t *cfg, const char *node, const char *conf_path,
		       uint32_t slurm_uid, const char *topo_xml, hm_agent_log_fn log, hm_err_t *err)
{
	char path[HM_CONF_PATH_MAX];
	bool daemonizes = false;
	hm_rc_t rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->log.fn = log;
	cfg->log.level = HM_AGENT_LOG_INFO;
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
		agent_log(&cfg->log, HM_AGENT_LOG_INFO, "%s does not exist: using the defaults",
			  path);
	} else if (rc != HM_OK) {
		return rc;
	}
	cfg->log.level = (int)cfg->conf.log_level;
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

bool agent_role_note(agent_role_t *r, const hm_aw_msg_t *m, const agent_log_t *lg)
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
		agent_log(lg, HM_AGENT_LOG_INFO, "rack %s: this node leads (term %ld)", n->rack,
			  n->term);
	else if (n->leader[0])
		agent_log(lg, HM_AGENT_LOG_INFO, "rack %s: member, %s leads (term %ld)", n->rack,
			  n->leader, n->term);
	else
		agent_log(lg, HM_AGENT_LOG_INFO, "rack %s: member, no leader", n->rack);
	r->known = true;
	r->last = *n;
	return true;
}
