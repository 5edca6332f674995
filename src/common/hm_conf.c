/* harmonics.conf: Slurm-style key=value parser with strict values. */
#include "hm_conf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hm_parse.h"
#include "hm_policy.h"
#include "hm_policy_names.h"
#include "hm_spec.h"
#include "hm_topo.h"
#include "hm_classes.h"

#define CONF_LINE_MAX 4096

typedef enum {
	K_POLICY,
	K_DEFAULT_MODE,
	K_DEFAULT_PROFILE,
	K_EPOCH,
	K_PRIO_LEVELS,
	K_RESERVED_LEVELS,
	K_BUDGET,
	K_GUARD,
	K_VALIDITY,
	K_TOPOLOGY,
	K_GPUS_PER_NODE,
	K_NIC_SPEED,
	K_UPLINK_SPEED,
	K_LISTEN_ADDR,
	K_LISTEN_PORT,
	K_COORD_HOST,
	K_REQ_TIMEOUT,
	K_CONN_TIMEOUT,
	K_MAX_MSG,
	K_RUN_DIR,
	K_HEARTBEAT,
	K_AGENT_VALIDITY,
	K_UPDATE_LEAD,
	K_FAIL_OPEN,
	K_LOG_LEVEL,
	K_STATE_FILE,
	K_ADMIN_COMMENT_MAX,
	K_RACK_SOLVE,
	K_RACK_TIMEOUT,
	K_RACK_PORT,
	K__COUNT
} conf_key_t;

static const char *const key_names[K__COUNT] = {
    [K_POLICY] = "Policy",
    [K_DEFAULT_MODE] = "DefaultMode",
    [K_DEFAULT_PROFILE] = "DefaultProfile",
    [K_EPOCH] = "EpochLength",
    [K_PRIO_LEVELS] = "PriorityLevels",
    [K_RESERVED_LEVELS] = "ReservedLevels",
    [K_BUDGET] = "DecisionBudget",
    [K_GUARD] = "Guard",
    [K_VALIDITY] = "AssignmentValidity",
    [K_TOPOLOGY] = "Topology",
    [K_GPUS_PER_NODE] = "GpusPerNode",
    [K_NIC_SPEED] = "NicSpeed",
    [K_UPLINK_SPEED] = "UplinkSpeed",
    [K_LISTEN_ADDR] = "ListenAddress",
    [K_LISTEN_PORT] = "ListenPort",
    [K_COORD_HOST] = "CoordinatorHost",
    [K_REQ_TIMEOUT] = "RequestTimeout",
    [K_CONN_TIMEOUT] = "ConnectionTimeout",
    [K_MAX_MSG] = "MaxMessageSize",
    [K_RUN_DIR] = "RunDir",
    [K_HEARTBEAT] = "HeartbeatInterval",
    [K_AGENT_VALIDITY] = "AgentValidity",
    [K_UPDATE_LEAD] = "UpdateLead",
    [K_FAIL_OPEN] = "FailOpen",
    [K_LOG_LEVEL] = "LogLevel",
    [K_STATE_FILE] = "StateFile",
    [K_ADMIN_COMMENT_MAX] = "AdminCommentMaxBytes",
    [K_RACK_SOLVE] = "RackSolve",
    [K_RACK_TIMEOUT] = "RackTimeout",
    [K_RACK_PORT] = "RackPort",
};

static const char *accepted_keys(void)
{
	static char buf[1024];

	if (!buf[0]) {
		for (int k = 0; k < K__COUNT; k++) {
			strcat(buf, key_names[k]);
			if (k + 1 < K__COUNT)
				strcat(buf, ", ");
		}
	}
	return buf;
}

void hm_conf_defaults(hm_conf_t *conf)
{
	memset(conf, 0, sizeof(*conf));
	snprintf(conf->policy, sizeof(conf->policy), "harmonics");
	snprintf(conf->default_mode, sizeof(conf->default_mode), "off");
	conf->epoch_s = 10.0;
	conf->prio_levels = HM_DEFAULT_PRIO_LEVELS;
	conf->reserved_levels = 1;
	conf->decision_budget_s = 1.0; /* guard_s: 0 */
	conf->valid_s = 600.0;
	conf->gpus_per_node = HM_DEFAULT_GPUS_PER_HOST;
	conf->nic_bps = HM_DEFAULT_NIC_BPS;
	conf->uplink_bps = HM_DEFAULT_UPLINK_BPS;
	snprintf(conf->listen_addr, sizeof(conf->listen_addr), "127.0.0.1");
	conf->listen_port = HM_CONF_DEFAULT_PORT;
	conf->request_timeout_ms = 2000;
	conf->conn_timeout_ms = 1000;
	conf->max_message_bytes = 65536;
	snprintf(conf->run_dir, sizeof(conf->run_dir), "/run/harmonics");
	conf->heartbeat_ms = 1000;
	conf->agent_valid_ms = 3 * conf->heartbeat_ms;
	conf->update_lead_ms = 1000;
	conf->fail_open = true;
	conf->log_level = HM_LOG_INFO;
	conf->admin_comment_max_bytes = 512;
	conf->rack_solve_leaders = true;
	conf->rack_timeout_ms = 1000;
}

/* Copy a string value into a fixed field, refusing what does not fit. */
static hm_rc_t set_str(char *dst, size_t len, const char *val, const char *key, hm_err_t *err)
{
	if (strlen(val) >= len)
		return hm_err_set(err, HM_ERR_RANGE,
				  "%s='%.60s...' is too long (at most %zu bytes)", key, val,
				  len - 1);
	memcpy(dst, val, strlen(val) + 1);
	return HM_OK;
}

static hm_rc_t set_ms(int *dst, const char *val, double min_s, double max_s, const char *key,
		      hm_err_t *err)
{
	double s;
	hm_rc_t rc = hm_parse_duration_s(val, min_s, max_s, &s, key, err);

	if (rc == HM_OK)
		*dst = (int)(s * 1000.0 + 0.5);
	return rc;
}

static bool valid_hostname(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '.' && *s != '-' && *s != '_')
			return false;
	return true;
}

/* A "." or ".." path component. */
static bool has_dot_component(const char *path)
{
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");

		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return true;
		p += n;
		p += *p == '/';
	}
	return false;
}

/* RunDir: absolute, not "/", no "." or ".." component (the agent builds paths under it). */
static hm_rc_t set_run_dir(hm_conf_t *c, const char *val, const char *key, hm_err_t *err)
{
	if (val[0] != '/' || val[strspn(val, "/")] == '\0' || has_dot_component(val))
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s='%s' is not accepted (accepted: an absolute directory path "
				  "other than /, without '.' or '..' components)",
				  key, val);
	return set_str(c->run_dir, sizeof(c->run_dir), val, key, err);
}

static hm_rc_t set_key(hm_conf_t *c, conf_key_t k, const char *val, hm_err_t *err)
{
	const char *key = key_names[k];
	long l;
	bool b;
	struct in_addr ia;
	hm_profile_t prof;
	hm_rc_t rc = HM_OK;

	switch (k) {
	case K_POLICY: {
		char low[HM_CONF_NAME_MAX];
		size_t i;

		for (i = 0; val[i] && i + 1 < sizeof(low); i++)
			low[i] = (char)tolower((unsigned char)val[i]);
		low[i] = '\0';
		if (val[i] || !hm_spec_policy_known(low))
			return hm_err_set(err, HM_ERR_INVAL,
					  "%s='%s' is not a policy (accepted: %s)", key, val,
					  HM_POLICY_NAMES);
		snprintf(c->policy, sizeof(c->policy), "%s", low);
		break;
	}
	case K_DEFAULT_MODE:
		rc = hm_spec_mode_check(val, err);
		if (rc == HM_OK)
			rc = set_str(c->default_mode, sizeof(c->default_mode), val, key, err);
		if (rc == HM_OK)
			for (char *p = c->default_mode; *p; p++)
				*p = (char)tolower((unsigned char)*p);
		break;
	case K_DEFAULT_PROFILE:
		if (*val && (rc = hm_spec_profile_parse(val, &prof, err)) != HM_OK) {
			hm_err_prefix(err, "%s", key);
			break;
		}
		rc = set_str(c->default_profile, sizeof(c->default_profile), val, key, err);
		break;
	case K_EPOCH:
		rc = hm_parse_duration_s(val, 0, 86400, &c->epoch_s, key, err);
		if (rc == HM_OK && c->epoch_s > 0 && c->epoch_s < 0.1)
			rc = hm_err_set(err, HM_ERR_RANGE,
					"%s='%s' is too short (0 = off, or at least 100ms)", key,
					val);
		break;
	case K_PRIO_LEVELS:
		rc = hm_parse_long(val, 1, HM_PRIO_LEVELS_MAX, &l, key, err);
		if (rc == HM_OK)
			c->prio_levels = (int)l;
		break;
	case K_RESERVED_LEVELS:
		rc = hm_parse_long(val, 0, HM_PRIO_LEVELS_MAX - 1, &l, key, err);
		if (rc == HM_OK)
			c->reserved_levels = (int)l;
		break;
	case K_BUDGET:
		rc = hm_parse_duration_s(val, 0.001, 600, &c->decision_budget_s, key, err);
		break;
	case K_GUARD:
		rc = hm_parse_duration_s(val, 0, 60, &c->guard_s, key, err);
		break;
	case K_VALIDITY:
		rc = hm_parse_duration_s(val, 1, 7 * 86400, &c->valid_s, key, err);
		break;
	case K_TOPOLOGY:
		rc = set_str(c->topology, sizeof(c->topology), val, key, err);
		break;
	case K_GPUS_PER_NODE:
		rc = hm_parse_long(val, 1, HM_MAX_GPUS_PER_HOST, &l, key, err);
		if (rc == HM_OK)
			c->gpus_per_node = (int)l;
		break;
	case K_NIC_SPEED:
		rc = hm_parse_bandwidth_bps(val, 1e6, 1e13, &c->nic_bps, key, err);
		break;
	case K_UPLINK_SPEED:
		rc = hm_parse_bandwidth_bps(val, 1e6, 1e14, &c->uplink_bps, key, err);
		break;
	case K_LISTEN_ADDR:
		if (inet_pton(AF_INET, val, &ia) != 1)
			return hm_err_set(err, HM_ERR_INVAL,
					  "%s='%s' is not an IPv4 address (accepted: a.b.c.d, "
					  "0.0.0.0 for every interface)",
					  key, val);
		rc = set_str(c->listen_addr, sizeof(c->listen_addr), val, key, err);
		break;
	case K_LISTEN_PORT:
		rc = hm_parse_long(val, 0, 65535, &l, key, err);
		if (rc == HM_OK)
			c->listen_port = (int)l;
		break;
	case K_COORD_HOST:
		if (*val && !valid_hostname(val))
			return hm_err_set(err, HM_ERR_INVAL,
					  "%s='%s' is not a host name or address (accepted: "
					  "letters, digits, '.', '-', '_')",
					  key, val);
		rc = set_str(c->coordinator_host, sizeof(c->coordinator_host), val, key, err);
		break;
	case K_REQ_TIMEOUT:
		rc = set_ms(&c->request_timeout_ms, val, 0.01, 60, key, err);
		break;
	case K_CONN_TIMEOUT:
		rc = set_ms(&c->conn_timeout_ms, val, 0.01, 60, key, err);
		break;
	case K_MAX_MSG: {
		double bytes;

		rc = hm_parse_bytes(val, 1024, 16 * 1024 * 1024, &bytes, key, err);
		if (rc == HM_OK)
			c->max_message_bytes = (int)bytes;
		break;
	}
	case K_RUN_DIR:
		rc = set_run_dir(c, val, key, err);
		break;
	case K_HEARTBEAT:
		rc = set_ms(&c->heartbeat_ms, val, 0.1, 60, key, err);
		break;
	case K_AGENT_VALIDITY:
		rc = set_ms(&c->agent_valid_ms, val, 0.2, 3600, key, err);
		break;
	case K_UPDATE_LEAD:
		rc = set_ms(&c->update_lead_ms, val, 0.2, 600, key, err);
		break;
	case K_FAIL_OPEN:
		rc = hm_parse_bool(val, &b, key, err);
		if (rc == HM_OK)
			c->fail_open = b;
		break;
	case K_LOG_LEVEL: {
		int lv = hm_log_level_parse(val);

		if (lv < 0)
			return hm_err_set(err, HM_ERR_INVAL,
					  "%s='%s' is not a log level (accepted: error, info, "
					  "verbose, debug)",
					  key, val);
		c->log_level = (hm_log_level_t)lv;
		break;
	}
	case K_STATE_FILE:
		if (*val && val[0] != '/')
			return hm_err_set(err, HM_ERR_INVAL,
					  "%s='%s' is not an absolute path (accepted: /path/file)",
					  key, val);
		rc = set_str(c->state_file, sizeof(c->state_file), val, key, err);
		break;
	case K_ADMIN_COMMENT_MAX:
		rc = hm_parse_long(val, 64, 4096, &l, key, err);
		if (rc == HM_OK)
			c->admin_comment_max_bytes = (size_t)l;
		break;
	case K_RACK_SOLVE:
		if (strcmp(val, "leaders") == 0 || strcmp(val, "coordinator") == 0)
			c->rack_solve_leaders = val[0] == 'l';
		else
			rc = hm_err_set(err, HM_ERR_INVAL,
					"RackSolve=%.60s is not accepted (leaders, coordinator)",
					val);
		break;
	case K_RACK_TIMEOUT:
		rc = set_ms(&c->rack_timeout_ms, val, 0.01, 60, key, err);
		break;
	case K_RACK_PORT:
		rc = hm_parse_long(val, 0, 65535, &l, key, err);
		if (rc == HM_OK)
			c->rack_port = (int)l;
		break;
	default:
		rc = hm_err_set(err, HM_ERR_INVAL, "internal: key %d", (int)k);
	}
	return rc;
}

/*
 * The node agent's timing keys depend on each other: derive the ones not given
 * from HeartbeatInterval, and refuse values that would let a step's assignment
 * expire between two renewals or switch before every rank can have read it.
 */
static hm_rc_t agent_timing_check(hm_conf_t *c, const int *key_line, const char *fname,
				  hm_err_t *err)
{
	int min_lead_ms = c->heartbeat_ms + 2 * HM_CONF_RUNTIME_POLL_MS;

	if (!key_line[K_AGENT_VALIDITY])
		c->agent_valid_ms = 3 * c->heartbeat_ms;
	if (!key_line[K_UPDATE_LEAD])
		c->update_lead_ms = min_lead_ms > 1000 ? min_lead_ms : 1000;
	if (c->agent_valid_ms < 2 * c->heartbeat_ms)
		return hm_err_set(err, HM_ERR_RANGE,
				  "%s:%d: AgentValidity=%dms is shorter than two heartbeats "
				  "(HeartbeatInterval=%dms; accepted: AgentValidity >= %dms)",
				  fname, key_line[K_AGENT_VALIDITY], c->agent_valid_ms,
				  c->heartbeat_ms, 2 * c->heartbeat_ms);
	if (c->update_lead_ms < min_lead_ms)
		return hm_err_set(
		    err, HM_ERR_RANGE,
		    "%s:%d: UpdateLead=%dms is shorter than a heartbeat and two polls "
		    "of the runtime (HeartbeatInterval=%dms; accepted: UpdateLead >= "
		    "%dms)",
		    fname, key_line[K_UPDATE_LEAD], c->update_lead_ms, c->heartbeat_ms,
		    min_lead_ms);
	return HM_OK;
}

static int find_key(const char *key)
{
	for (int k = 0; k < K__COUNT; k++)
		if (strcasecmp(key, key_names[k]) == 0)
			return k;
	return -1;
}

hm_rc_t hm_conf_load_string(const char *text, const char *fname, hm_conf_t *conf, hm_err_t *err)
{
	hm_conf_t c;
	int key_line[K__COUNT] = {0};
	char line[CONF_LINE_MAX];
	const char *p = text;
	int lineno = 0;
	hm_rc_t rc = HM_OK;

	hm_conf_defaults(&c);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *save = NULL, *tok, *hash;

		lineno++;
		if (n >= sizeof(line)) {
			rc = hm_err_set(err, HM_ERR_PARSE, "%s:%d: line longer than %d bytes",
					fname, lineno, CONF_LINE_MAX - 1);
			goto out;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl ? nl + 1 : p + n;
		if ((hash = strchr(line, '#')))
			*hash = '\0';
		for (tok = strtok_r(line, " \t\r", &save); tok;
		     tok = strtok_r(NULL, " \t\r", &save)) {
			char *key, *val, orig[256];
			int k;

			snprintf(orig, sizeof(orig), "%s", tok); /* split_kv cuts tok */
			if (!hm_split_kv(tok, &key, &val)) {
				rc = hm_err_set(err, HM_ERR_PARSE,
						"%s:%d: '%s' is not Key=Value (accepted keys: %s)",
						fname, lineno, orig, accepted_keys());
				goto out;
			}
			if ((k = find_key(key)) < 0) {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"%s:%d: unknown key '%s' (accepted: %s)", fname,
						lineno, key, accepted_keys());
				goto out;
			}
			if (key_line[k]) {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"%s:%d: %s is set again (first set on line %d)",
						fname, lineno, key_names[k], key_line[k]);
				goto out;
			}
			key_line[k] = lineno;
			if ((rc = set_key(&c, (conf_key_t)k, val, err)) != HM_OK) {
				hm_err_prefix(err, "%s:%d", fname, lineno);
				goto out;
			}
		}
	}
	if ((rc = agent_timing_check(&c, key_line, fname, err)) != HM_OK)
		goto out;
	if (c.reserved_levels >= c.prio_levels) {
		int ln = key_line[K_RESERVED_LEVELS] ? key_line[K_RESERVED_LEVELS]
						     : key_line[K_PRIO_LEVELS];
		rc = hm_err_set(err, HM_ERR_RANGE,
				"%s:%d: ReservedLevels=%d leaves no class for jobs with "
				"PriorityLevels=%d (accepted: ReservedLevels < PriorityLevels)",
				fname, ln, c.reserved_levels, c.prio_levels);
		goto out;
	}
	snprintf(c.source, sizeof(c.source), "%s", fname);
	*conf = c;
out:
	return rc;
}

hm_rc_t hm_conf_load(const char *path, hm_conf_t *conf, hm_err_t *err)
{
	FILE *f = NULL;
	char *text = NULL;
	long size;
	hm_rc_t rc = HM_OK;

	if (!(f = fopen(path, "r"))) {
		rc = hm_err_set(err, HM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
		goto out;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		rc = hm_err_set(err, HM_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
		goto out;
	}
	if (size > 1024 * 1024) {
		rc = hm_err_set(err, HM_ERR_RANGE, "%s: %ld bytes is too large for a config file",
				path, size);
		goto out;
	}
	if (!(text = malloc((size_t)size + 1))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	if (fread(text, 1, (size_t)size, f) != (size_t)size) {
		rc = hm_err_set(err, HM_ERR_IO, "%s: short read", path);
		goto out;
	}
	text[size] = '\0';
	if (strlen(text) != (size_t)size) {
		rc = hm_err_set(err, HM_ERR_PARSE, "%s: contains a NUL byte (not a text file)",
				path);
		goto out;
	}
	rc = hm_conf_load_string(text, path, conf, err);
out:
	free(text);
	if (f)
		fclose(f);
	return rc;
}

/* Directory part of path into buf ("." when none). */
static void dir_of(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(buf, len, ".");
	else if (slash == path)
		snprintf(buf, len, "/");
	else
		snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

void hm_conf_default_path(char *buf, size_t len)
{
	const char *env = getenv("HARMONICS_CONF");
	const char *slurm_conf = getenv("SLURM_CONF");
	char dir[HM_CONF_PATH_MAX];

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return;
	}
	dir_of(slurm_conf && *slurm_conf ? slurm_conf : "/etc/slurm/slurm.conf", dir, sizeof(dir));
	snprintf(buf, len, "%s/%s", dir, HM_CONF_FILE_NAME);
}

void hm_conf_topology_path(const hm_conf_t *conf, char *buf, size_t len)
{
	char conf_path[HM_CONF_PATH_MAX], dir[HM_CONF_PATH_MAX];

	if (conf->topology[0]) {
		snprintf(buf, len, "%s", conf->topology);
		return;
	}
	if (conf->source[0])
		snprintf(conf_path, sizeof(conf_path), "%s", conf->source);
	else
		hm_conf_default_path(conf_path, sizeof(conf_path));
	dir_of(conf_path, dir, sizeof(dir));
	snprintf(buf, len, "%s/topology.conf", dir);
}

const char *hm_conf_client_host(const hm_conf_t *conf)
{
	if (conf->coordinator_host[0])
		return conf->coordinator_host;
	if (strcmp(conf->listen_addr, "0.0.0.0") == 0)
		return "127.0.0.1";
	return conf->listen_addr;
}

void hm_conf_format(const hm_conf_t *c, char *buf, size_t len)
{
	snprintf(buf, len,
		 "Policy=%s\nDefaultMode=%s\nDefaultProfile=%s\nEpochLength=%gs\n"
		 "PriorityLevels=%d\nReservedLevels=%d\nDecisionBudget=%gs\nGuard=%gs\n"
		 "AssignmentValidity=%gs\nTopology=%s\nGpusPerNode=%d\nNicSpeed=%gGbps\n"
		 "UplinkSpeed=%gGbps\nListenAddress=%s\nListenPort=%d\nCoordinatorHost=%s\n"
		 "RequestTimeout=%dms\nConnectionTimeout=%dms\nMaxMessageSize=%d\nRunDir=%s\n"
		 "HeartbeatInterval=%dms\nAgentValidity=%dms\nUpdateLead=%dms\nFailOpen=%s\n"
		 "LogLevel=%s\nStateFile=%s\nAdminCommentMaxBytes=%zu\nRackSolve=%s\n"
		 "RackTimeout=%dms\nRackPort=%d\n",
		 c->policy, c->default_mode, c->default_profile, c->epoch_s, c->prio_levels,
		 c->reserved_levels, c->decision_budget_s, c->guard_s, c->valid_s, c->topology,
		 c->gpus_per_node, c->nic_bps / 1e9, c->uplink_bps / 1e9, c->listen_addr,
		 c->listen_port, c->coordinator_host, c->request_timeout_ms, c->conn_timeout_ms,
		 c->max_message_bytes, c->run_dir, c->heartbeat_ms, c->agent_valid_ms,
		 c->update_lead_ms, c->fail_open ? "yes" : "no", hm_log_level_name(c->log_level),
		 c->state_file, c->admin_comment_max_bytes,
		 c->rack_solve_leaders ? "leaders" : "coordinator", c->rack_timeout_ms,
		 c->rack_port);
}
