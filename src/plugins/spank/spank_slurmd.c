/*
 * The node agent in slurmd (S_CTX_SLURMD): harmonics_agent.so is loaded only
 * here, so sbatch, srun and slurmstepd never map its code (hwloc, the agent).
 * Nothing here can fail slurmd: a missing or refusing agent is logged and
 * steps keep their launch-time assignments. An agent that refused to start
 * (most often a wrong harmonics.conf) is started again when the file changes:
 * a thread looks at it every HM_SP_CONF_WATCH_S, so fixing the file needs no
 * slurmd restart.
 *
 * slurmd without -D up to 23.11 loads its plugins, then daemonizes (fork,
 * setsid, fork): threads started here would not survive. The agent says so
 * (start returns 1) and a fork handler starts it in the daemon: the child of a
 * fork whose session is no longer the one slurmd had at init, which only the
 * daemon's own fork is (slurmd's later forks inherit the cleared pending
 * flag). From 24.05 slurmd daemonizes before loading them
 * (HM_SLURMD_DAEMONIZED_AT_INIT): no such fork comes, the agent starts at once
 * and no fork handler is registered.
 *
 * Configless clusters: Slurm ships plugstack.conf to the nodes, not
 * harmonics.conf. When the file is missing here and plugstack.conf names the
 * coordinator (host=), its settings are fetched (request "conf") and written
 * where the agent and the steps read harmonics.conf; until that works, the
 * watcher retries every HM_SP_CONF_WATCH_S and the agent waits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_NODELETE */
#endif
#include <stdint.h> /* spank.h needs it first */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "hm_agent.h"
#include "hm_client.h"
#include "hm_json.h"
#include "hm_spank_slurmuser.h"
#include "spank_compat.h"
#include "spank_plugin.h"

#ifndef HM_AGENT_PATH
#define HM_AGENT_PATH "harmonics_agent.so"
#endif

#define HM_SP_CONF_WATCH_S 5

static struct {
	void *handle; /* never dlclose'd: a detached agent thread may still run in it */
	int (*start)(const hm_agent_args_t *);
	int (*stop)(void);
	pthread_mutex_t mu; /* guards running and quit (the watcher and slurmd's thread) */
	pthread_cond_t cv;
	bool running, quit;
	pthread_t watcher;
	bool watching;
	pid_t watcher_pid;           /* a slurmd that forked after init has no watcher thread */
	char conf[HM_CONF_PATH_MAX]; /* the harmonics.conf the agent reads */
	bool pending;                /* started after slurmd daemonizes (the fork handler) */
	pid_t init_sid;              /* slurmd's session at init */
} ag = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void agent_log(int level, const char *msg)
{
	switch (level) {
	case HM_AGENT_LOG_ERROR:
		slurm_error("%s", msg);
		break;
	case HM_AGENT_LOG_INFO:
		slurm_info("%s", msg);
		break;
	case HM_AGENT_LOG_VERBOSE:
		slurm_verbose("%s", msg);
		break;
	default:
		slurm_debug("%s", msg);
		break;
	}
}

static void agent_args(hm_agent_args_t *a, uint32_t flags)
{
	char why[512];

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->version = HM_AGENT_ABI_VERSION;
	a->node = NULL; /* slurmd's -N, else the host name */
	a->conf_path = hm_sp.args.conf[0] ? hm_sp.args.conf : NULL;
	a->log = agent_log;
	a->flags = flags;
	/* SlurmUser from slurm.conf; the agent falls back to the account "slurm". */
	if (hm_spank_slurm_user(NULL, &a->slurm_user_uid, why, sizeof(why)) != 0) {
		slurm_debug("harmonics: %s; the node agent trusts root and the account \"slurm\"",
			    why);
		a->slurm_user_uid = HM_AGENT_NO_UID;
	}
}

/* No harmonics.conf here, and plugstack.conf names the coordinator. */
static bool conf_to_fetch(void)
{
	return hm_sp.args.host[0] && access(ag.conf, F_OK) != 0 && errno == ENOENT;
}

/* The coordinator's settings as harmonics.conf text into ag.conf (temporary file
   and rename). CoordinatorHost is the host= that reached it unless it names one. */
static int conf_fetch(void)
{
	hm_conf_t defaults, c;
	hm_coord_addrs_t addrs;
	hm_err_t err = {0};
	uint32_t trusted[2] = {0, 0};
	char *reply = NULL, tmp[HM_CONF_PATH_MAX + 8], why[256];
	json_object *o = NULL;
	const char *text;
	FILE *f = NULL;
	int rc = -1, fd;

	hm_conf_defaults(&defaults);
	if (hm_spank_slurm_user(NULL, &trusted[1], why, sizeof(why)) != 0)
		trusted[1] = 0;
	/* host= was checked at init: one or several, tried in order. */
	if (hm_coord_addrs_parse(hm_sp.args.host, &addrs, &err) != HM_OK ||
	    hm_client_call_list(&addrs, hm_sp.args.port ? hm_sp.args.port : defaults.listen_port,
				"{\"op\":\"conf\"}",
				hm_sp.args.timeout_ms ? hm_sp.args.timeout_ms
						      : defaults.request_timeout_ms,
				trusted, 2, &reply, NULL, &err) != HM_OK) {
		slurm_verbose("harmonics: no %s: settings from the coordinator: %s", ag.conf,
			      err.msg);
		goto out;
	}
	o = json_tokener_parse(reply);
	text = o ? hm_json_str(o, "conf") : "";
	if (!text[0] || hm_conf_load_string(text, "coordinator", &c, &err) != HM_OK) {
		slurm_error("harmonics: the coordinator's settings are not usable: %s",
			    text[0] ? err.msg : "no \"conf\" in its reply");
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", ag.conf);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 ||
	    !(f = fdopen(fd, "w"))) {
		slurm_error("harmonics: cannot write %s: %m", tmp);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	fprintf(f,
		"# Written by harmonics.so in slurmd from the coordinator %s (configless "
		"cluster);\n# replaced when missing. Edit the controller's harmonics.conf.\n",
		hm_sp.args.host);
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");

		if (strncmp(p, "CoordinatorHost=", 16) == 0 && n == 16)
			fprintf(f, "CoordinatorHost=%s\n", hm_sp.args.host);
		else if (n > 0 && p[n - 1] != '=') /* empty values are the defaults */
			fprintf(f, "%.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
	if (fclose(f) != 0 || rename(tmp, ag.conf) != 0) {
		slurm_error("harmonics: cannot write %s: %m", ag.conf);
		unlink(tmp);
		goto out;
	}
	slurm_info("harmonics: %s written with the coordinator's settings (%s)", ag.conf,
		   hm_sp.args.host);
	rc = 0;
out:
	if (o)
		json_object_put(o);
	free(reply);
	return rc;
}

/* What identifies a version of the file (all zero when it is missing). */
static void conf_id(struct stat *st)
{
	if (stat(ag.conf, st) != 0)
		memset(st, 0, sizeof(*st));
}

static bool conf_changed(const struct stat *a, const struct stat *b)
{
	return a->st_ino != b->st_ino || a->st_dev != b->st_dev || a->st_size != b->st_size ||
	       a->st_mtim.tv_sec != b->st_mtim.tv_sec || a->st_mtim.tv_nsec != b->st_mtim.tv_nsec;
}

/* The agent did not start: try again each time harmonics.conf changes. */
static void *watch(void *arg)
{
	struct stat last, now;
	hm_agent_args_t a;

	(void)arg;
	conf_id(&last);
	pthread_mutex_lock(&ag.mu);
	while (!ag.quit && !ag.running) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += HM_SP_CONF_WATCH_S;
		if (pthread_cond_timedwait(&ag.cv, &ag.mu, &until) != ETIMEDOUT || ag.quit)
			continue;
		pthread_mutex_unlock(&ag.mu);
		if (conf_to_fetch())
			(void)conf_fetch();
		conf_id(&now);
		if (conf_changed(&last, &now)) {
			last = now;
			agent_args(&a, HM_AGENT_F_DAEMONIZED);
			slurm_info("harmonics: %s changed: starting the node agent", ag.conf);
			if (ag.start(&a) == 0) { /* on failure the agent logged why */
				pthread_mutex_lock(&ag.mu);
				ag.running = true;
				continue;
			}
		}
		pthread_mutex_lock(&ag.mu);
	}
	pthread_mutex_unlock(&ag.mu);
	return NULL;
}

/* Start the agent (flags: HM_AGENT_F_*), or the watcher when it refuses. */
static void start_or_watch(uint32_t flags)
{
	hm_agent_args_t a;
	int rc = -1;

	if (conf_to_fetch() && conf_fetch() != 0) {
		slurm_info("harmonics: no %s: the node agent starts once the coordinator %s "
			   "gives its settings",
			   ag.conf, hm_sp.args.host);
		/* Before a daemonizing fork this watcher is lost: the fork handler
		   starts another one in the daemon. */
		ag.pending = !HM_SLURMD_DAEMONIZED_AT_INIT && (flags & HM_AGENT_F_DEFER_DAEMON);
	} else {
		agent_args(&a, flags);
		rc = ag.start(&a); /* on failure the agent logged why */
		if (rc == 1 && HM_SLURMD_DAEMONIZED_AT_INIT) {
			/* The agent reads the missing -D as a fork to come: here it is past. */
			slurm_info("harmonics: slurmd daemonized before loading its plugins: the "
				   "node agent starts in the daemon");
			agent_args(&a, HM_AGENT_F_DAEMONIZED);
			rc = ag.start(&a);
		} else if (rc == 1) {
			slurm_info("harmonics: slurmd daemonizes: the node agent starts after the "
				   "fork");
			ag.pending = true;
			return;
		}
	}
	ag.running = rc == 0;
	if (ag.running)
		return;
	ag.quit = false;
	ag.watching = pthread_create(&ag.watcher, NULL, watch, NULL) == 0;
	ag.watcher_pid = getpid();
	if (ag.watching)
		slurm_info("harmonics: the node agent starts when %s changes (checked every %d s)",
			   ag.conf, HM_SP_CONF_WATCH_S);
}

/* pthread_atfork child handler: in slurmd's daemon (see the top), start the agent. */
static void after_fork(void)
{
	pid_t sid = getsid(0);

	if (!ag.pending || sid == ag.init_sid || sid == getpid())
		return;
	ag.pending = false;
	/* One thread here: a watcher of the parent may have held these. */
	pthread_mutex_init(&ag.mu, NULL);
	pthread_cond_init(&ag.cv, NULL);
	ag.watching = false;
	start_or_watch(HM_AGENT_F_DAEMONIZED);
}

/* The fork handler stays registered for the process's life: keep harmonics.so mapped. */
static int atfork_register(void)
{
	static bool registered;
	Dl_info info;

	if (registered)
		return 0;
	if (!dladdr((void *)after_fork, &info) || !info.dli_fname ||
	    !dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE) ||
	    pthread_atfork(NULL, NULL, after_fork) != 0)
		return -1;
	registered = true;
	return 0;
}

void hm_sp_slurmd_start(void)
{
	const char *path = hm_sp.args.agent[0] ? hm_sp.args.agent : HM_AGENT_PATH;

	if (strcmp(path, "no") == 0) {
		slurm_info("harmonics: agent=no: no node agent; steps keep their launch-time "
			   "assignments");
		return;
	}
	if (!ag.handle && !(ag.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		slurm_error("harmonics: cannot load the node agent %s: %s; steps keep their "
			    "launch-time assignments",
			    path, dlerror());
		return;
	}
	ag.start = (int (*)(const hm_agent_args_t *))dlsym(ag.handle, "hm_agent_start");
	ag.stop = (int (*)(void))dlsym(ag.handle, "hm_agent_stop");
	if (!ag.start || !ag.stop) {
		slurm_error("harmonics: %s lacks hm_agent_start/hm_agent_stop: not a node agent",
			    path);
		ag.start = NULL;
		ag.stop = NULL;
		return;
	}
	if (hm_sp.args.conf[0])
		snprintf(ag.conf, sizeof(ag.conf), "%s", hm_sp.args.conf);
	else
		hm_conf_default_path(ag.conf, sizeof(ag.conf));
	ag.init_sid = getsid(0);
	/* Deferring needs the fork handler; without it the agent refuses, saying why.
	   A slurmd that daemonized before its plugins loaded needs neither. */
	start_or_watch(HM_SLURMD_DAEMONIZED_AT_INIT || atfork_register() == 0
			   ? HM_AGENT_F_DEFER_DAEMON
			   : 0);
}

void hm_sp_slurmd_stop(void)
{
	bool running;

	if (ag.watching && ag.watcher_pid == getpid()) {
		pthread_mutex_lock(&ag.mu);
		ag.quit = true;
		pthread_cond_signal(&ag.cv);
		pthread_mutex_unlock(&ag.mu);
		pthread_join(ag.watcher, NULL);
	}
	ag.watching = false;
	pthread_mutex_lock(&ag.mu);
	running = ag.running;
	ag.running = false;
	pthread_mutex_unlock(&ag.mu);
	if (running && ag.stop() != 0)
		slurm_error("harmonics: the node agent did not stop within %d ms; left detached",
			    HM_AGENT_STOP_BOUND_MS);
}
