/*
 * harmonics_agent.c - the exported ABI of harmonics_agent.so (hm_agent.h): one
 * agent per process, started and stopped by the SPANK plugin in slurmd. Thin:
 * the agent itself is agent_*.c.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "hm_agent.h"

#define EXPORT __attribute__((visibility("default")))
/* hm_agent_args_t as 0.1 had it (up to topo_xml): the smallest size accepted. */
#define HM_AGENT_ARGS_V1_SIZE (offsetof(hm_agent_args_t, topo_xml) + sizeof(const char *))

/* The ABI's levels and callback are hm_log.h's, passed through unchanged. */
_Static_assert((int)HM_AGENT_LOG_ERROR == HM_LOG_ERROR && (int)HM_AGENT_LOG_INFO == HM_LOG_INFO &&
		   (int)HM_AGENT_LOG_VERBOSE == HM_LOG_VERBOSE &&
		   (int)HM_AGENT_LOG_DEBUG == HM_LOG_DEBUG,
	       "hm_agent.h's log levels are hm_log_level_t's");
_Static_assert(__builtin_types_compatible_p(hm_agent_log_fn, hm_log_sink_fn),
	       "hm_agent_log_fn is hm_log_sink_fn");

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static agent_t *g_agent;
static pid_t g_pid; /* the process that started g_agent: a forked child has no thread */

static void log_start_error(hm_agent_log_fn fn, const char *node, const char *msg)
{
	hm_logger_t lg = {.sink = fn, .level = HM_LOG_ERROR};

	snprintf(lg.prefix, sizeof(lg.prefix), "harmonics-agent %s: ", node && *node ? node : "?");
	hm_logf(&lg, HM_LOG_ERROR, "not started: %s; this node's steps run unscheduled", msg);
}

EXPORT int hm_agent_start(const hm_agent_args_t *args)
{
	hm_agent_args_t in;
	agent_cfg_t cfg;
	hm_err_t err = {0};
	char node[AGENT_NODE_MAX];
	bool daemonizes = false;
	int rc = -1;

	if (!args || args->version != HM_AGENT_ABI_VERSION || args->size < HM_AGENT_ARGS_V1_SIZE) {
		bool has_log =
		    args && args->size >= offsetof(hm_agent_args_t, log) + sizeof(args->log);

		log_start_error(has_log ? args->log : NULL, NULL,
				"hm_agent_args_t of another ABI (accepted: version 1, size >= "
				"that of 0.1's hm_agent_args_t)");
		return -1;
	}
	/* Members appended by a later ABI are not read; those an older one lacks are 0. */
	memset(&in, 0, sizeof(in));
	memcpy(&in, args, args->size < sizeof(in) ? args->size : sizeof(in));
	pthread_mutex_lock(&g_mu);
	if (g_agent && g_pid == getpid()) {
		log_start_error(in.log, in.node, "an agent already runs in this process");
		goto out;
	}
	g_agent = NULL;
	/* slurmd without -D forks after its plugins load: a thread started now would be
	   lost. The caller may start it again after the fork (hm_agent.h). */
	if (agent_node_name(node, sizeof(node), &daemonizes, &err) == HM_OK && daemonizes &&
	    !(in.flags & HM_AGENT_F_DAEMONIZED)) {
		if (in.flags & HM_AGENT_F_DEFER_DAEMON) {
			rc = 1;
			goto out;
		}
		log_start_error(in.log, in.node,
				"slurmd runs without -D and daemonizes after loading plugins, "
				"which the agent's thread would not survive (run slurmd -D, as "
				"systemd's slurmd.service does)");
		goto out;
	}
	if (agent_cfg_init(&cfg, in.node, in.conf_path, in.slurm_user_uid, in.topo_xml, in.log,
			   &err) != HM_OK ||
	    agent_start(&cfg, &g_agent, &err) != HM_OK) {
		log_start_error(in.log, in.node, err.msg);
		goto out;
	}
	g_pid = getpid();
	rc = 0;
out:
	pthread_mutex_unlock(&g_mu);
	return rc;
}

EXPORT int hm_agent_stop(void)
{
	int rc = 0;

	pthread_mutex_lock(&g_mu);
	if (g_agent && g_pid == getpid())
		rc = agent_stop(g_agent, HM_AGENT_STOP_BOUND_MS) == HM_OK ? 0 : -1;
	g_agent = NULL;
	pthread_mutex_unlock(&g_mu);
	return rc;
}

EXPORT int hm_agent_node_name(char *buf, size_t len)
{
	hm_err_t err = {0};
	bool daemonizes;

	if (!buf || len == 0)
		return -1;
	return agent_node_name(buf, len, &daemonizes, &err) == HM_OK ? 0 : -1;
}
