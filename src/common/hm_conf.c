/* harmonics.conf: Slurm-style key=value parser with strict values. */
#include "hm_conf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hm_parse.h"
#include "hm_policy.h"
#include "hm_policy_names.h"
#include "hm_spec.h"
#include "hm_topo.h"
#include "hm_classes.h"
#include "hm_coord_addr.h"

#define CONF_LINE_MAX 4096

/* Index of each key in keys[] and in hm_conf_load_string's key_line[]. */
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
	K_CLOCK_SKEW_MAX,
	K_MAX_CONN_ADDR,
	K_MAX_REQ_USER,
	K_METRICS_LISTEN,
	K_METRICS_DIR,
	K_NICS_PER_NODE,
	K_CLASS_DSCP,
	K_CLASS_SL,
	K_UNPACED_AFTER,
	K__COUNT
} conf_key_id_t;

/* How a key's value is read and stored; min and max bound it in the parser's unit. */
typedef enum {
	CK_INT,     /* integer into an int */
	CK_SIZE,    /* integer into a size_t */
	CK_SECONDS, /* duration into a double, seconds */
	CK_MS,      /* duration (bounds in seconds) into an int, milliseconds */
	CK_BPS,     /* bandwidth into a double, bit/s */
	CK_BYTES,   /* size into an int, bytes */
	CK_BOOL,    /* yes/no into a bool */
	CK_STR,     /* text into a char[size] */
	CK_SET,     /* the row's fn reads and stores it */
} conf_type_t;

typedef struct conf_key conf_key_t;

/*
 * CK_SET: reads and stores the value. Other types (NULL: none): refuses a value
 * its parser accepts; for CK_STR it sees the text before the copy (a bad value
 * is named before a long one), for the others the value stored.
 */
typedef hm_rc_t (*conf_fn_t)(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err);

struct conf_key {
	hm_conf_key_info_t info; /* name, argument and one line for harmonics.conf(5) */
	conf_type_t type;
	double min, max;
	size_t off, size; /* the field in hm_conf_t */
	conf_fn_t fn;
};

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
	conf->unpaced_after_s = 3 * conf->epoch_s;
	conf->gpus_per_node = HM_DEFAULT_GPUS_PER_HOST;
	conf->nics_per_node = HM_DEFAULT_NICS_PER_HOST;
	snprintf(conf->class_dscp, sizeof(conf->class_dscp), "%s", HM_CLASS_DSCP_DEFAULT);
	snprintf(conf->class_sl, sizeof(conf->class_sl), "%s", HM_CLASS_SL_DEFAULT);
	conf->nic_bps = HM_DEFAULT_NIC_BPS;
	conf->uplink_bps = HM_DEFAULT_UPLINK_BPS;
	conf->listen_addr[0] = '\0'; /* its controller's SlurmctldHost address (hm_coord_addr.h) */
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
	conf->clock_skew_max_s = 0.001;
	conf->max_conns_per_addr = 256;
	conf->max_requests_per_user = 64;
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

/* "Key='value' is not WHAT (accepted: ...)": how every check refuses a value. */
static hm_rc_t refuse(hm_err_t *err, const conf_key_t *k, const char *val, const char *what,
		      const char *accepted)
{
	return hm_err_set(err, HM_ERR_INVAL, "%s='%s' is not %s (accepted: %s)", k->info.name, val,
			  what, accepted);
}

/* Policy: any case in the file, stored in lower case as the registry names it. */
static hm_rc_t set_policy(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	char low[HM_CONF_NAME_MAX];
	size_t i;

	for (i = 0; val[i] && i + 1 < sizeof(low); i++)
		low[i] = (char)tolower((unsigned char)val[i]);
	low[i] = '\0';
	if (val[i] || !hm_spec_policy_known(low))
		return refuse(err, k, val, "a policy", HM_POLICY_NAMES);
	snprintf(c->policy, sizeof(c->policy), "%s", low);
	return HM_OK;
}

static hm_rc_t set_default_mode(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	hm_rc_t rc = hm_spec_mode_check(val, err);

	if (rc == HM_OK)
		rc = set_str(c->default_mode, sizeof(c->default_mode), val, k->info.name, err);
	if (rc == HM_OK)
		for (char *p = c->default_mode; *p; p++)
			*p = (char)tolower((unsigned char)*p);
	return rc;
}

/* DefaultProfile: empty, or a profile the jobs' --comm-profile would accept. */
static hm_rc_t check_profile(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	hm_profile_t prof;
	hm_rc_t rc = HM_OK;

	if (*val && (rc = hm_spec_profile_parse(val, &prof, err)) != HM_OK)
		hm_err_prefix(err, "%s", k->info.name);
	return rc;
}

/* EpochLength: 0 turns the epochs off; a shorter one than 100ms would only load
 * the coordinator. */
static hm_rc_t check_epoch(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	if (c->epoch_s > 0 && c->epoch_s < 0.1)
		return hm_err_set(err, HM_ERR_RANGE,
				  "%s='%s' is too short (0 = off, or at least 100ms)", k->info.name,
				  val);
	return HM_OK;
}

/* ListenAddress: empty (the controller's SlurmctldHost address) or IPv4. */
static hm_rc_t check_ipv4(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	struct in_addr ia;

	if (*val && inet_pton(AF_INET, val, &ia) != 1)
		return refuse(err, k, val, "an IPv4 address",
			      "a.b.c.d, 0.0.0.0 for every interface, empty for the "
			      "controller's SlurmctldHost address");
	return HM_OK;
}

/* CoordinatorHost: empty (hm_coord_addr.h) or names or addresses, ',' between. */
static hm_rc_t check_host(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	hm_coord_addrs_t a;

	if (*val && hm_coord_addrs_parse(val, &a, err) != HM_OK) {
		hm_err_prefix(err, "%s", k->info.name);
		return err->rc;
	}
	return HM_OK;
}

/* RunDir: absolute, not "/", no "." or ".." component (the agent builds paths under it). */
static hm_rc_t check_run_dir(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	if (val[0] != '/' || val[strspn(val, "/")] == '\0' || has_dot_component(val))
		return refuse(err, k, val, "accepted",
			      "an absolute directory path other than /, without '.' or '..' "
			      "components");
	return HM_OK;
}

/* StateFile: empty (the sched plugin's default) or an absolute path. */
static hm_rc_t check_abs_path(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	if (*val && val[0] != '/')
		return refuse(err, k, val, "an absolute path", "/path/file");
	return HM_OK;
}

bool hm_conf_split_listen(const char *s, char *addr, size_t len, int *port)
{
	const char *colon = strrchr(s, ':');
	struct in_addr ia;
	long p;
	char *end;

	if (!colon || (size_t)(colon - s) >= len || !colon[1])
		return false;
	memcpy(addr, s, (size_t)(colon - s));
	addr[colon - s] = '\0';
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (*end || errno || p < 0 || p > 65535 || !isdigit((unsigned char)colon[1]) ||
	    inet_pton(AF_INET, addr, &ia) != 1)
		return false;
	*port = (int)p;
	return true;
}

/* MetricsListen: empty (off) or A.B.C.D:PORT. */
static hm_rc_t check_listen(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	char addr[HM_CONF_HOST_MAX];
	int port;

	if (*val && !hm_conf_split_listen(val, addr, sizeof(addr), &port))
		return refuse(err, k, val, "an address and port",
			      "A.B.C.D:PORT with PORT 0..65535, 0.0.0.0 for every interface; "
			      "empty: off");
	return HM_OK;
}

/* ClassDscp, ClassSL: eight values, 0..63 or 0..15. */
static hm_rc_t check_class_table(hm_conf_t *c, const conf_key_t *k, const char *val,
				 hm_err_t *err)
{
	int t[HM_PRIO_LEVELS_MAX];
	bool dscp = strcmp(k->info.name, "ClassDscp") == 0;

	if (!hm_class_table_parse(val, dscp ? HM_CLASS_DSCP_MAX : HM_CLASS_SL_MAX, t))
		return refuse(err, k, val, "a class table",
			      dscp ? "8 DSCPs 0..63 separated by commas, class 0 first, e.g. "
				     HM_CLASS_DSCP_DEFAULT
				   : "8 service levels 0..15 separated by commas, class 0 first, "
				     "e.g. " HM_CLASS_SL_DEFAULT);
	return HM_OK;
}

static hm_rc_t set_log_level(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	int lv = hm_log_level_parse(val);

	if (lv < 0)
		return refuse(err, k, val, "a log level", "error, info, verbose, debug");
	c->log_level = (hm_log_level_t)lv;
	return HM_OK;
}

static hm_rc_t set_rack_solve(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	if (strcmp(val, "leaders") != 0 && strcmp(val, "coordinator") != 0)
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s=%.60s is not accepted (leaders, coordinator)", k->info.name,
				  val);
	c->rack_solve_leaders = val[0] == 'l';
	return HM_OK;
}

/* A row: key, argument, type, bounds, the hm_conf_t member it sets, fn, one line. */
#define KEY(id, name, arg, t, lo, hi, m, f, doc)                                                   \
	[id] = {.info = {(name), (arg), (doc)},                                                    \
		.type = (t),                                                                       \
		.min = (lo),                                                                       \
		.max = (hi),                                                                       \
		.off = offsetof(hm_conf_t, m),                                                     \
		.size = sizeof(((hm_conf_t *)0)->m),                                               \
		.fn = (f)}

/*
 * Every key of harmonics.conf: the parser reads through it, error messages and
 * harmonics.conf(5) list it (test_conf checks the man page against it). Bounds
 * are in the parser's unit: seconds for durations, bit/s, bytes.
 */
static const conf_key_t keys[K__COUNT] = {
    KEY(K_POLICY, "Policy", "NAME", CK_SET, 0, 0, policy, set_policy,
	"policy deciding each job's time shift and class"),
    KEY(K_DEFAULT_MODE, "DefaultMode", "MODE", CK_SET, 0, 0, default_mode, set_default_mode,
	"mode of jobs submitted without --comm-sched"),
    KEY(K_DEFAULT_PROFILE, "DefaultProfile", "PROFILE", CK_STR, 0, 0, default_profile,
	check_profile, "profile of jobs that declare none (empty: unscheduled until measured)"),
    KEY(K_EPOCH, "EpochLength", "DURATION", CK_SECONDS, 0, 86400, epoch_s, check_epoch,
	"re-decision period besides job start and end (0: only then, else >= 100ms)"),
    KEY(K_PRIO_LEVELS, "PriorityLevels", "N", CK_INT, 1, HM_PRIO_LEVELS_MAX, prio_levels, NULL,
	"hardware priority classes"),
    KEY(K_RESERVED_LEVELS, "ReservedLevels", "N", CK_INT, 0, HM_PRIO_LEVELS_MAX - 1,
	reserved_levels, NULL, "classes kept for other traffic (less than PriorityLevels)"),
    KEY(K_BUDGET, "DecisionBudget", "DURATION", CK_SECONDS, 0.001, 600, decision_budget_s, NULL,
	"wall-clock budget of one decision"),
    KEY(K_GUARD, "Guard", "DURATION", CK_SECONDS, 0, 60, guard_s, NULL,
	"how late a burst may start in its slot (0: the policy's default)"),
    KEY(K_VALIDITY, "AssignmentValidity", "DURATION", CK_SECONDS, 1, 7 * 86400, valid_s, NULL,
	"how long a step may use an assignment before asking again"),
    KEY(K_TOPOLOGY, "Topology", "PATH", CK_STR, 0, 0, topology, NULL,
	"topology.conf to read racks from"),
    KEY(K_GPUS_PER_NODE, "GpusPerNode", "N", CK_INT, 1, HM_MAX_GPUS_PER_HOST, gpus_per_node, NULL,
	"GPUs per node when a job's count is unknown"),
    KEY(K_NIC_SPEED, "NicSpeed", "BANDWIDTH", CK_BPS, 1e6, 1e13, nic_bps, NULL,
	"per-node NIC bandwidth"),
    KEY(K_UPLINK_SPEED, "UplinkSpeed", "BANDWIDTH", CK_BPS, 1e6, 1e14, uplink_bps, NULL,
	"per switch uplink when topology.conf gives no LinkSpeed"),
    KEY(K_LISTEN_ADDR, "ListenAddress", "A.B.C.D", CK_STR, 0, 0, listen_addr, check_ipv4,
	"IPv4 address the coordinator binds (unset: its controller's SlurmctldHost address)"),
    KEY(K_LISTEN_PORT, "ListenPort", "PORT", CK_INT, 0, 65535, listen_port, NULL,
	"coordinator's TCP port (0: any, for tests)"),
    KEY(K_COORD_HOST, "CoordinatorHost", "HOST[,HOST...]", CK_STR, 0, 0, coordinator_host,
	check_host,
	"where agents, steps and harmonicsctl reach the coordinator (several: tried in order)"),
    KEY(K_REQ_TIMEOUT, "RequestTimeout", "DURATION", CK_MS, 0.01, 60, request_timeout_ms, NULL,
	"how long a step waits for its assignment before running unscheduled"),
    KEY(K_CONN_TIMEOUT, "ConnectionTimeout", "DURATION", CK_MS, 0.01, 60, conn_timeout_ms, NULL,
	"server-side limit for reading a request and writing its reply"),
    KEY(K_MAX_MSG, "MaxMessageSize", "SIZE", CK_BYTES, 1024, 16 * 1024 * 1024, max_message_bytes,
	NULL, "largest accepted message"),
    KEY(K_RUN_DIR, "RunDir", "PATH", CK_STR, 0, 0, run_dir, check_run_dir,
	"directory of the node agents' files"),
    KEY(K_HEARTBEAT, "HeartbeatInterval", "DURATION", CK_MS, 0.1, 60, heartbeat_ms, NULL,
	"how often an agent reports and has its steps' assignments renewed"),
    KEY(K_AGENT_VALIDITY, "AgentValidity", "DURATION", CK_MS, 0.2, 3600, agent_valid_ms, NULL,
	"how long a step keeps pacing after its agent last heard from the coordinator (at least "
	"two heartbeats)"),
    KEY(K_UPDATE_LEAD, "UpdateLead", "DURATION", CK_MS, 0.2, 600, update_lead_ms, NULL,
	"how long after it is sent a changed decision takes effect"),
    KEY(K_FAIL_OPEN, "FailOpen", "yes|no", CK_BOOL, 0, 0, fail_open, NULL,
	"yes: a step that cannot reach the coordinator runs unscheduled; no: it fails"),
    KEY(K_LOG_LEVEL, "LogLevel", "LEVEL", CK_SET, 0, 0, log_level, set_log_level,
	"error, info, verbose (every request) or debug"),
    KEY(K_STATE_FILE, "StateFile", "PATH", CK_STR, 0, 0, state_file, check_abs_path,
	"absolute path of the state file"),
    KEY(K_ADMIN_COMMENT_MAX, "AdminCommentMaxBytes", "N", CK_SIZE, 64, 4096,
	admin_comment_max_bytes, NULL, "bound of a job's AdminComment"),
    KEY(K_RACK_SOLVE, "RackSolve", "leaders | coordinator", CK_SET, 0, 0, rack_solve_leaders,
	set_rack_solve, "where each rack's Local Scheduler runs"),
    KEY(K_RACK_TIMEOUT, "RackTimeout", "DURATION", CK_MS, 0.01, 60, rack_timeout_ms, NULL,
	"how long a decision round waits for the rack leaders' answers"),
    KEY(K_RACK_PORT, "RackPort", "N", CK_INT, 0, 65535, rack_port, NULL,
	"TCP port of each node agent's rack channel (0: any)"),
    KEY(K_CLOCK_SKEW_MAX, "ClockSkewMax", "DURATION", CK_SECONDS, 0, 60, clock_skew_max_s, NULL,
	"a node whose clock is further than this from the coordinator's runs its steps free (0: "
	"not checked)"),
    KEY(K_MAX_CONN_ADDR, "MaxConnectionsPerAddress", "N", CK_INT, 1, 32768, max_conns_per_addr,
	NULL, "coordinator connections open at once from one IP address"),
    KEY(K_MAX_REQ_USER, "MaxRequestsPerUser", "N", CK_INT, 1, 32768, max_requests_per_user, NULL,
	"requests of one uid (not root or SlurmUser) in progress at once, waiting ones included"),
    KEY(K_METRICS_LISTEN, "MetricsListen", "A.B.C.D:PORT", CK_STR, 0, 0, metrics_listen,
	check_listen, "where the coordinator serves Prometheus metrics (empty: off)"),
    KEY(K_METRICS_DIR, "MetricsDir", "PATH", CK_STR, 0, 0, metrics_dir, check_abs_path,
	"node_exporter textfile directory the node agents write to (empty: off)"),
    KEY(K_NICS_PER_NODE, "NicsPerNode", "N", CK_INT, 1, HM_MAX_NICS_PER_HOST, nics_per_node,
	NULL, "NICs per node where no node agent reported its hardware"),
    KEY(K_CLASS_DSCP, "ClassDscp", "D0,...,D7", CK_STR, 0, 0, class_dscp, check_class_table,
	"DSCP of each priority class, 0 (highest) first"),
    KEY(K_CLASS_SL, "ClassSL", "S0,...,S7", CK_STR, 0, 0, class_sl, check_class_table,
	"InfiniBand service level of each priority class"),
    KEY(K_UNPACED_AFTER, "UnpacedAfter", "DURATION", CK_SECONDS, 0, 86400, unpaced_after_s, NULL,
	"a job none of whose steps reported an applied epoch for this long is modelled unpaced "
	"(0: never)"),
};

size_t hm_conf_key_count(void)
{
	return K__COUNT;
}

const hm_conf_key_info_t *hm_conf_key_info(size_t i)
{
	return i < K__COUNT ? &keys[i].info : NULL;
}

size_t hm_conf_accepted_keys(char *buf, size_t len)
{
	size_t n = 0;

	if (len > 0)
		buf[0] = '\0';
	for (int k = 0; k < K__COUNT; k++) {
		int w = snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "%s%s",
				 k ? ", " : "", keys[k].info.name);
		n += (size_t)w;
	}
	return n;
}

/* The bounds of row k in its unit, as the man page would write them ("" when none). */
static void key_range(const conf_key_t *k, char *buf, size_t len)
{
	static const char *const unit[] = {
	    [CK_INT] = "",    [CK_SIZE] = "", [CK_SECONDS] = "s", [CK_MS] = "s", [CK_BPS] = "bit/s",
	    [CK_BYTES] = "B", [CK_BOOL] = "", [CK_STR] = "",      [CK_SET] = "",
	};

	if (k->min < k->max)
		snprintf(buf, len, "%g..%g%s", k->min, k->max, unit[k->type]);
	else
		buf[0] = '\0';
}

/* Text for roff: a hyphen as "\\-" (the man pages' minus), a backslash as "\\e". */
static void roff_puts(const char *s, FILE *out)
{
	for (; *s; s++)
		if (*s == '-')
			fputs("\\-", out);
		else if (*s == '\\')
			fputs("\\e", out);
		else
			fputc(*s, out);
}

void hm_conf_keys_man(FILE *out)
{
	for (int i = 0; i < K__COUNT; i++) {
		const conf_key_t *k = &keys[i];
		char range[64];

		key_range(k, range, sizeof(range));
		fprintf(out, ".TP\n.BI %s= \"", k->info.name);
		roff_puts(k->info.arg, out);
		fputs("\"\n", out);
		roff_puts(k->info.doc, out);
		fprintf(out, "%s%s.\n", range[0] ? "; " : "", range);
	}
}

/* Read val as row k's type into its field (no row check). */
static hm_rc_t read_value(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	void *field = (char *)c + k->off;
	const char *key = k->info.name;
	double d;
	long l;
	bool b;
	hm_rc_t rc = HM_OK;

	switch (k->type) {
	case CK_INT:
	case CK_SIZE:
		rc = hm_parse_long(val, (long)k->min, (long)k->max, &l, key, err);
		if (rc == HM_OK && k->type == CK_INT)
			*(int *)field = (int)l;
		else if (rc == HM_OK)
			*(size_t *)field = (size_t)l;
		break;
	case CK_SECONDS:
		rc = hm_parse_duration_s(val, k->min, k->max, field, key, err);
		break;
	case CK_MS:
		rc = set_ms(field, val, k->min, k->max, key, err);
		break;
	case CK_BPS:
		rc = hm_parse_bandwidth_bps(val, k->min, k->max, field, key, err);
		break;
	case CK_BYTES:
		rc = hm_parse_bytes(val, k->min, k->max, &d, key, err);
		if (rc == HM_OK)
			*(int *)field = (int)d;
		break;
	case CK_BOOL:
		rc = hm_parse_bool(val, &b, key, err);
		if (rc == HM_OK)
			*(bool *)field = b;
		break;
	case CK_STR:
		rc = set_str(field, k->size, val, key, err);
		break;
	case CK_SET:
		rc = k->fn(c, k, val, err);
		break;
	}
	return rc;
}

/* Set key k from val: the row's check around reading it (see conf_fn_t). */
static hm_rc_t set_key(hm_conf_t *c, const conf_key_t *k, const char *val, hm_err_t *err)
{
	bool check = k->fn && k->type != CK_SET;
	hm_rc_t rc = HM_OK;

	if (check && k->type == CK_STR)
		rc = k->fn(c, k, val, err);
	if (rc == HM_OK)
		rc = read_value(c, k, val, err);
	if (rc == HM_OK && check && k->type != CK_STR)
		rc = k->fn(c, k, val, err);
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

/*
 * UnpacedAfter: derived from EpochLength when not given (three epochs, 30 s
 * without epochs); a report reaches the coordinator a heartbeat or two after a
 * step applied its decision, so a bound under three heartbeats would call
 * paced jobs unpaced.
 */
static hm_rc_t unpaced_check(hm_conf_t *c, const int *key_line, const char *fname, hm_err_t *err)
{
	double min_s = 3 * c->heartbeat_ms / 1000.0;

	if (!key_line[K_UNPACED_AFTER]) {
		c->unpaced_after_s = c->epoch_s > 0 ? 3 * c->epoch_s : 30;
		if (c->unpaced_after_s < min_s)
			c->unpaced_after_s = min_s;
		return HM_OK;
	}
	if (c->unpaced_after_s > 0 && c->unpaced_after_s < min_s)
		return hm_err_set(
		    err, HM_ERR_RANGE,
		    "%s:%d: UnpacedAfter=%gs is shorter than three heartbeats "
		    "(HeartbeatInterval=%dms; accepted: 0 = never, or UnpacedAfter >= "
		    "%gs)",
		    fname, key_line[K_UNPACED_AFTER], c->unpaced_after_s, c->heartbeat_ms, min_s);
	return HM_OK;
}

static int find_key(const char *key)
{
	for (int k = 0; k < K__COUNT; k++)
		if (strcasecmp(key, keys[k].info.name) == 0)
			return k;
	return -1;
}

hm_rc_t hm_conf_load_string(const char *text, const char *fname, hm_conf_t *conf, hm_err_t *err)
{
	hm_conf_t c;
	int key_line[K__COUNT] = {0};
	char line[CONF_LINE_MAX], accepted[1024];
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
				hm_conf_accepted_keys(accepted, sizeof(accepted));
				rc = hm_err_set(err, HM_ERR_PARSE,
						"%s:%d: '%s' is not Key=Value (accepted keys: %s)",
						fname, lineno, orig, accepted);
				goto out;
			}
			if ((k = find_key(key)) < 0) {
				hm_conf_accepted_keys(accepted, sizeof(accepted));
				rc = hm_err_set(err, HM_ERR_INVAL,
						"%s:%d: unknown key '%s' (accepted: %s)", fname,
						lineno, key, accepted);
				goto out;
			}
			if (key_line[k]) {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"%s:%d: %s is set again (first set on line %d)",
						fname, lineno, keys[k].info.name, key_line[k]);
				goto out;
			}
			key_line[k] = lineno;
			if ((rc = set_key(&c, &keys[k], val, err)) != HM_OK) {
				hm_err_prefix(err, "%s:%d", fname, lineno);
				goto out;
			}
		}
	}
	if ((rc = agent_timing_check(&c, key_line, fname, err)) != HM_OK)
		goto out;
	if ((rc = unpaced_check(&c, key_line, fname, err)) != HM_OK)
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
	/* As Slurm 25.05+: topology.yaml, when it exists, wins over topology.conf. */
	snprintf(buf, len, "%s/topology.yaml", dir);
	if (access(buf, F_OK) != 0)
		snprintf(buf, len, "%s/topology.conf", dir);
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
		 "RackTimeout=%dms\nRackPort=%d\nClockSkewMax=%gs\n",
		 c->policy, c->default_mode, c->default_profile, c->epoch_s, c->prio_levels,
		 c->reserved_levels, c->decision_budget_s, c->guard_s, c->valid_s, c->topology,
		 c->gpus_per_node, c->nic_bps / 1e9, c->uplink_bps / 1e9, c->listen_addr,
		 c->listen_port, c->coordinator_host, c->request_timeout_ms, c->conn_timeout_ms,
		 c->max_message_bytes, c->run_dir, c->heartbeat_ms, c->agent_valid_ms,
		 c->update_lead_ms, c->fail_open ? "yes" : "no", hm_log_level_name(c->log_level),
		 c->state_file, c->admin_comment_max_bytes,
		 c->rack_solve_leaders ? "leaders" : "coordinator", c->rack_timeout_ms,
		 c->rack_port, c->clock_skew_max_s);
	if (strlen(buf) + 1 < len)
		snprintf(buf + strlen(buf), len - strlen(buf),
			 "MaxConnectionsPerAddress=%d\nMaxRequestsPerUser=%d\n",
			 c->max_conns_per_addr, c->max_requests_per_user);
	if (strlen(buf) + 1 < len)
		snprintf(buf + strlen(buf), len - strlen(buf),
			 "MetricsListen=%s\nMetricsDir=%s\nNicsPerNode=%d\n", c->metrics_listen,
			 c->metrics_dir, c->nics_per_node);
}
