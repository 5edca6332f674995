/*
 * hm_ctld_host.c - the Global Coordinator hosted in slurmctld (hm_ctld_host.h),
 * shared by job_submit/harmonics and sched/harmonics.
 *
 * The thread loads harmonics.conf (beside slurm.conf) and the topology/tree
 * switches (or the file named by Topology=), restores the state file, starts
 * the socket server, mirrors running jobs into the coordinator, re-decides on
 * job start/end and per epoch, and writes each decision into the job's
 * AdminComment. slurmctld locks are held only to copy job fields and to store
 * a comment; policy work runs unlocked. Harmonics never stops Slurm
 * (hm_sched_run.h): when the coordinator cannot start, Harmonics runs disabled
 * with the cause logged, --comm-sched jobs get "off=disabled(...)" in
 * AdminComment, and each scontrol reconfigure tries again. After each round
 * the thread publishes the live view that select/harmonics_cons_tres places
 * jobs with (hm_live.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_NODELETE */
#endif
#include "config.h" /* Slurm's (see m4/hm_slurm.m4) */

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "hm_clock.h"
#include "hm_conf.h"
#include "hm_coord.h"
#include "hm_ctld_host.h"
#include "hm_live_pub.h"
#include "hm_log.h"
#include "hm_plugin.h"
#include "hm_sched_run.h"
#include "hm_slurm_compat.h"
#include "hm_topo.h"

#define TICK_MS 1000
/* How often the thread looks whether slurmctld has read its state: the steps
   wait for the coordinator after a slurmctld restart. */
#define READY_POLL_MS 50
/* How long a start retries a busy ListenPort (a controller leaving control). */
#define LISTEN_RETRY_MS      5000
#define LISTEN_RETRY_STEP_MS 250
/* Nodes of a job whose GPU allocation is read (the per-node model takes the most). */
#define HM_MAX_HOSTS_PER_JOB_SCAN 1024
/* How long stop waits for the thread; a thread blocked this long on a slurmctld
   lock is taken to wait for the caller's own lock (reconfigure unloads plugins
   under slurmctld's write locks) and left to stop by itself. */
#define STOP_WAIT_MS      10000
#define STOP_LOCK_WAIT_MS 2000
#define STOP_POLL_MS      20

/* A running job as copied under the read lock. */
typedef struct {
	uint32_t job_id, uid;
	char *account; /* who coordinates it sees it under PrivateData=jobs */
	char *name, *nodes, *mode, *profile, *comment;
	char *gpu_ids;  /* the GRES indexes it was given, NULL = unknown */
	char *topology; /* its partition's topology.yaml topology, NULL = the default */
	int gpus_per_node;
	time_t start;
} snap_job_t;

static struct {
	char prefix[64]; /* "job_submit/harmonics: " */

	pthread_mutex_t mu; /* guards the members below up to run */
	pthread_cond_t cv;  /* the thread's sleeps; its exit */
	bool alive;         /* a thread runs (detached: it may outlive a stop) */
	bool stop, reconfig;
	bool orphan;             /* stop gave up waiting: the thread stops the coordinator */
	bool restart;            /* started again before an orphan left: it runs on */
	hm_coord_t *wake;        /* the running coordinator, for reconfig's wake-up */
	long lock_wait_since_ms; /* the thread waits for a slurmctld lock since (0: not) */

	time_t conf_seen; /* slurm_conf.last_update at the last (re)load */
	char conf_path[PATH_MAX];
	char ctld_addr[256]; /* slurm_conf.control_addr[backup_inx] at the last (re)load */
	hm_sched_run_t run;  /* the coordinator or why not: the thread only */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Static: select/harmonics_cons_tres may hold a view while the host stops. */
static hm_live_pub_t live = HM_LIVE_PUB_INIT;

static long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* lock_slurmctld, telling stop that the thread waits for it. */
static void host_lock(slurmctld_lock_t l)
{
	pthread_mutex_lock(&g.mu);
	g.lock_wait_since_ms = mono_ms();
	pthread_mutex_unlock(&g.mu);
	lock_slurmctld(l);
	pthread_mutex_lock(&g.mu);
	g.lock_wait_since_ms = 0;
	pthread_mutex_unlock(&g.mu);
}

static bool stopping(void)
{
	bool s;

	pthread_mutex_lock(&g.mu);
	s = g.stop;
	pthread_mutex_unlock(&g.mu);
	return s;
}

/* Sleep up to ms on the thread's condition (stop, reconfig, wake-ups). */
static void nap(int ms)
{
	struct timespec until;

	pthread_mutex_lock(&g.mu);
	if (!g.stop && !g.reconfig) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += ms / 1000;
		until.tv_nsec += (long)(ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&g.cv, &g.mu, &until);
	}
	pthread_mutex_unlock(&g.mu);
}

static void log_sink(int level, const char *msg)
{
	switch (level) {
	case HM_LOG_ERROR:
		error("%s%s", g.prefix, msg);
		break;
	case HM_LOG_INFO:
		info("%s%s", g.prefix, msg);
		break;
	case HM_LOG_VERBOSE:
		verbose("%s%s", g.prefix, msg);
		break;
	default:
		debug("%s%s", g.prefix, msg);
		break;
	}
}

/* --- configuration --------------------------------------------------- */

/* harmonics.conf beside slurm.conf ($HARMONICS_CONF wins, for tests). */
static void conf_path(char *buf, size_t len)
{
	const char *env = getenv("HARMONICS_CONF");
	const char *sc = slurm_conf.slurm_conf;
	const char *slash = sc ? strrchr(sc, '/') : NULL;

	if (env && *env)
		snprintf(buf, len, "%s", env);
	else if (slash)
		snprintf(buf, len, "%.*s/%s", (int)(slash - sc), sc, HM_CONF_FILE_NAME);
	else
		hm_conf_default_path(buf, len);
}

/* One switch as a topology.conf line. */
static void switch_line(void *arg, const hm_slurm_switch_t *sw)
{
	char **text = arg;

	xstrfmtcat(*text, "SwitchName=%s", sw->name);
	/* Upper levels list every node below them too: racks carry Nodes=. */
	if (sw->level == 0 && sw->nodes && sw->nodes[0])
		xstrfmtcat(*text, " Nodes=%s", sw->nodes);
	else if (sw->level > 0 && sw->switches && sw->switches[0])
		xstrfmtcat(*text, " Switches=%s", sw->switches);
	/* topology/tree stores 1 when topology.conf gives no LinkSpeed: only a
	   larger value is the admin's (bare numbers are Gbit/s, docs/topology.md). */
	if (sw->link_speed > 1)
		xstrfmtcat(*text, " LinkSpeed=%u", sw->link_speed);
	xstrcat(*text, "\n");
}

/*
 * The topology/tree switches slurmctld holds (hm_slurm_switches), written as
 * topology.conf text for the libharmonics loader, so that the coordinator sees
 * exactly the racks Slurm uses. HM_ERR_NOTFOUND when there are none
 * (topology/none). Under the node read lock (the thread, never a plugin's init).
 */
static hm_rc_t topo_from_switches(void *arg, const hm_topo_opts_t *opts, hm_topo_t **topo,
				  hm_err_t *err)
{
	slurmctld_lock_t nl = {.node = READ_LOCK};
	char *text = NULL;
	FILE *f;
	hm_rc_t rc;
	int nsw;

	(void)arg;
	host_lock(nl);
	nsw = hm_slurm_switches(switch_line, &text);
	unlock_slurmctld(nl);
	if (!text)
		return HM_ERR_NOTFOUND;
	f = fmemopen(text, strlen(text), "r");
	if (!f) {
		xfree(text);
		return hm_err_set(err, HM_ERR_NOMEM, "fmemopen: %s", strerror(errno));
	}
	rc = hm_topo_load_slurm(f, "topology/tree switches", opts, topo, err);
	fclose(f);
	if (rc == HM_OK)
		verbose("%stopology from slurmctld's %d topology/tree switches", g.prefix, nsw);
	xfree(text);
	return rc;
}

/* The server's workers ask slurmctld who its operators are, and who coordinates
   an account (hm_server.h); no slurmctld lock held. */
static bool is_operator(uint32_t uid, void *arg)
{
	(void)arg;
	return hm_slurm_is_operator(uid);
}

static bool coordinates(uint32_t uid, const char *account, void *arg)
{
	(void)arg;
	return hm_slurm_is_acct_coord(uid, account);
}

static const hm_server_operator_t operators = {.is_operator = is_operator,
					       .coordinates = coordinates};

/* Where the configuration comes from. */
static void run_env(hm_sched_env_t *env, const char *state_dir)
{
	*env = (hm_sched_env_t){.conf_path = g.conf_path,
				.state_dir = state_dir,
				.slurm_user_id = slurm_conf.slurm_user_id,
				.switches = topo_from_switches,
				.switches_arg = NULL,
				.slurm_version = SLURM_VERSION_STRING,
				.ctld_addr = g.ctld_addr,
				.op = &operators};
}

/* --- job mirror ------------------------------------------------------ */

/*
 * GPUs per node the job was given (its GRES allocation, summed over GPU types;
 * the largest node's count), or -1 when it has no GPU allocation record.
 */
static int alloc_gpus_per_node(job_record_t *job)
{
	list_itr_t *it;
	gres_state_t *gs;
	uint64_t per_node[HM_MAX_HOSTS_PER_JOB_SCAN] = {0}, most = 0;
	bool any = false;

	if (!job->gres_list_alloc)
		return -1;
	it = list_iterator_create(job->gres_list_alloc);
	while ((gs = list_next(it))) {
		gres_job_state_t *gj = gs->gres_data;

		if (!gs->gres_name || strcmp(gs->gres_name, "gpu") != 0 || !gj ||
		    !gj->gres_cnt_node_alloc)
			continue;
		any = true;
		for (uint32_t n = 0; n < gj->node_cnt && n < HM_MAX_HOSTS_PER_JOB_SCAN; n++)
			per_node[n] += gj->gres_cnt_node_alloc[n];
	}
	list_iterator_destroy(it);
	for (int n = 0; n < HM_MAX_HOSTS_PER_JOB_SCAN; n++)
		most = per_node[n] > most ? per_node[n] : most;
	return any ? (int)(most < 1024 ? most : 1024) : -1;
}

static void snap_free(snap_job_t *s, int n)
{
	for (int i = 0; s && i < n; i++) {
		free(s[i].account);
		free(s[i].name);
		free(s[i].nodes);
		free(s[i].mode);
		free(s[i].profile);
		free(s[i].comment);
		free(s[i].gpu_ids);
		free(s[i].topology);
	}
	free(s);
}

/*
 * The GPU indexes the job was given on each of its nodes (GRES with File=, so
 * that Slurm tracks which GPUs: gres_bit_alloc), as hm_coord_gpu_ids_format
 * writes them; NULL when unknown (no such record, or too long).
 */
static char *alloc_gpu_ids(job_record_t *job)
{
	static uint32_t masks[HM_MAX_HOSTS_PER_JOB_SCAN]; /* the coordinator thread's */
	static const char *names[HM_MAX_HOSTS_PER_JOB_SCAN];
	char buf[256];
	list_itr_t *it;
	gres_state_t *gs;
	int n = 0;

	if (!job->gres_list_alloc || !job->node_bitmap)
		return NULL;
	for (int i = 0; i < node_record_count && n < HM_MAX_HOSTS_PER_JOB_SCAN; i++)
		if (bit_test(job->node_bitmap, i) && node_record_table_ptr[i]) {
			names[n] = node_record_table_ptr[i]->name;
			masks[n++] = 0;
		}
	it = list_iterator_create(job->gres_list_alloc);
	while ((gs = list_next(it))) {
		gres_job_state_t *gj = gs->gres_data;

		if (!gs->gres_name || strcmp(gs->gres_name, "gpu") != 0 || !gj ||
		    !gj->gres_bit_alloc)
			continue;
		for (uint32_t k = 0; k < gj->node_cnt && k < (uint32_t)n; k++) {
			bitstr_t *b = gj->gres_bit_alloc[k];

			for (int gpu = 0; b && gpu < bit_size(b) && gpu < 32; gpu++)
				if (bit_test(b, gpu))
					masks[k] |= 1u << gpu;
		}
	}
	list_iterator_destroy(it);
	return hm_coord_gpu_ids_format(names, masks, n, buf, sizeof(buf)) ? strdup(buf) : NULL;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Copy the running jobs that concern us; read locks only, no slow work. */
static int snapshot(snap_job_t **out, bool all_jobs)
{
	slurmctld_lock_t rl = {.job = READ_LOCK, .node = READ_LOCK};
	list_itr_t *it;
	job_record_t *job;
	snap_job_t *s = NULL;
	int n = 0, cap = 0;

	host_lock(rl);
	if (!job_list)
		goto unlock;
	it = list_iterator_create(job_list);
	while ((job = list_next(it))) {
		const char *mode;
		if (!IS_JOB_RUNNING(job) || !job->nodes)
			continue;
		mode = hm_plugin_env_get(job->spank_job_env, job->spank_job_env_size,
					 HM_SPANK_ENV_MODE);
		if (!mode && !all_jobs)
			continue;
		if (n == cap) {
			snap_job_t *ns = realloc(s, sizeof(*s) * (size_t)(cap ? cap * 2 : 16));
			if (!ns)
				break;
			s = ns;
			cap = cap ? cap * 2 : 16;
		}
		memset(&s[n], 0, sizeof(s[n]));
		s[n].job_id = job->job_id;
		s[n].uid = job->user_id;
		s[n].account = dup_or_null(job->account);
		s[n].name = dup_or_null(job->name);
		s[n].nodes = dup_or_null(job->nodes);
		s[n].mode = dup_or_null(mode);
		s[n].profile = dup_or_null(hm_plugin_env_get(
		    job->spank_job_env, job->spank_job_env_size, HM_SPANK_ENV_PROFILE));
		s[n].comment = dup_or_null(job->admin_comment);
		/* What it was given, else what it asked for, else every GPU of its hosts. */
		s[n].gpus_per_node = alloc_gpus_per_node(job);
		if (s[n].gpus_per_node <= 0)
			s[n].gpus_per_node = hm_plugin_gpus_per_node(job->tres_per_node);
		s[n].gpu_ids = alloc_gpu_ids(job);
		s[n].topology = dup_or_null(hm_slurm_job_topology(job));
		s[n].start = job->start_time;
		n++;
	}
	list_iterator_destroy(it);
unlock:
	unlock_slurmctld(rl);
	*out = s;
	return n;
}

/* Store a new AdminComment unless the job or its comment changed meanwhile. */
static void store_comment(void *arg, uint32_t job_id, const char *old, const char *new_comment)
{
	slurmctld_lock_t wl = {.job = WRITE_LOCK};
	job_record_t *job;

	host_lock(wl);
	job = find_job_record(job_id);
	if (job && IS_JOB_RUNNING(job) && !xstrcmp(job->admin_comment, old)) {
		xfree(job->admin_comment);
		job->admin_comment = xstrdup(new_comment);
		last_job_update = time(NULL);
	}
	unlock_slurmctld(wl);
}

/* One round: copy the running jobs under slurmctld's locks, then hm_coord_sync. */
static void sync_round(void)
{
	snap_job_t *s = NULL;
	hm_coord_sync_job_t *jobs;
	int n = snapshot(&s, strcasecmp(g.run.conf.default_mode, "off") != 0);

	jobs = calloc((size_t)(n > 0 ? n : 1), sizeof(*jobs));
	for (int i = 0; jobs && i < n; i++) {
		jobs[i].info = (hm_coord_job_info_t){
		    .job_id = s[i].job_id,
		    .uid = s[i].uid,
		    .account = s[i].account,
		    .name = s[i].name,
		    .nodes = s[i].nodes,
		    .gpus_per_node = s[i].gpus_per_node,
		    .gpu_ids = s[i].gpu_ids,
		    .mode = s[i].mode,
		    .profile = s[i].profile,
		    .start_s = (double)s[i].start,
		    .topology = s[i].topology,
		};
		jobs[i].comment = s[i].comment;
	}
	if (jobs)
		hm_coord_sync(g.run.coord, jobs, n, hm_real_s(), store_comment, NULL, NULL);
	else
		error("%sout of memory: job mirror round skipped", g.prefix);
	free(jobs);
	snap_free(s, n);
}

/*
 * Disabled: the --comm-sched jobs that run say so in AdminComment, once per
 * cause ("harmonics:e0@TIME off=disabled(harmonics.conf:3);").
 */
static void disabled_round(void)
{
	snap_job_t *s = NULL;
	int n = snapshot(&s, false);
	char buf[HM_CONF_PATH_MAX];
	hm_conf_t defaults;

	hm_conf_defaults(&defaults); /* AdminCommentMaxBytes: harmonics.conf is not in force */
	for (int i = 0; i < n; i++)
		if (s[i].mode && strcasecmp(s[i].mode, "off") != 0 &&
		    hm_sched_disabled_comment(s[i].comment, g.run.tag, hm_real_s(),
					      defaults.admin_comment_max_bytes, buf, sizeof(buf)))
			store_comment(NULL, s[i].job_id, s[i].comment, buf);
	snap_free(s, n);
}

static void log_up(const char *how)
{
	info("%s%scoordinator up: policy %s, epoch %.1f s, listening on %s:%d, config %s", g.prefix,
	     how, g.run.conf.policy, g.run.conf.epoch_s, g.run.conf.listen_addr,
	     hm_server_port(g.run.srv), g.conf_path);
}

static void log_disabled(const char *how)
{
	error("%s%sdisabled: %s; jobs run unscheduled (--comm-sched accepted); fix it, then "
	      "scontrol reconfigure",
	      g.prefix, how, g.run.why);
}

static void set_wake(hm_coord_t *c)
{
	pthread_mutex_lock(&g.mu);
	g.wake = c;
	pthread_mutex_unlock(&g.mu);
}

/* What a (re)load needs from slurm_conf, copied under its lock (reconfigure
   rewrites it); the caller xfree()s *state_dir. */
static void conf_copy(char **state_dir)
{
	slurmctld_lock_t cl = {.conf = READ_LOCK};

	host_lock(cl);
	conf_path(g.conf_path, sizeof(g.conf_path));
	*state_dir = xstrdup(slurm_conf.state_save_location);
	/* The SlurmctldHost line slurmctld found itself in (backup_inx). */
	snprintf(g.ctld_addr, sizeof(g.ctld_addr), "%s",
		 backup_inx >= 0 && backup_inx < (int)slurm_conf.control_cnt &&
			 slurm_conf.control_addr[backup_inx]
		     ? slurm_conf.control_addr[backup_inx]
		     : "");
	g.conf_seen = slurm_conf.last_update;
	unlock_slurmctld(cl);
}

/* slurm.conf was read again (scontrol reconfigure) since the last load. */
static bool conf_changed(void)
{
	slurmctld_lock_t cl = {.conf = READ_LOCK};
	time_t t;

	host_lock(cl);
	t = slurm_conf.last_update;
	unlock_slurmctld(cl);
	return t != g.conf_seen;
}

/* The primary controller has read its configuration and recovered its jobs:
   its state-save thread runs (slurmctld starts it right after read_slurm_conf;
   job_list alone exists earlier with slurmdbd, and a backup in standby has no
   such thread). */
static bool ctld_ready(void)
{
	slurmctld_lock_t rl = {.job = READ_LOCK};
	bool ready;

	host_lock(rl);
	ready = job_list != NULL && slurmctld_config.thread_id_save != (pthread_t)0;
	unlock_slurmctld(rl);
	return ready;
}

static void start_coord(void)
{
	hm_sched_env_t env;
	hm_err_t err = {0};
	char *state_dir = NULL;

	pthread_mutex_lock(&g.mu);
	g.reconfig = false; /* this start reads everything anew */
	pthread_mutex_unlock(&g.mu);
	conf_copy(&state_dir);
	run_env(&env, state_dir);
	/* A controller taking control may find ListenPort still held by the one that
	   left it (it stops its coordinator within a tick, then saves the state):
	   try again for a while, reading the state anew each time. */
	for (int ms = 0;
	     hm_sched_run_start(&g.run, &env, &err) != HM_OK &&
	     strncmp(g.run.tag, "listen-", 7) == 0 && ms < LISTEN_RETRY_MS && !stopping();
	     ms += LISTEN_RETRY_STEP_MS)
		nap(LISTEN_RETRY_STEP_MS);
	if (g.run.enabled) {
		hm_log_set_level(g.run.conf.log_level);
		set_wake(g.run.coord);
		log_up("");
	} else {
		log_disabled("");
	}
	xfree(state_dir);
}

/* scontrol reconfigure: start a disabled Harmonics, or reconfigure the running
   one (a broken file is refused, hm_sched_run.h). */
static void reload(void)
{
	bool was = g.run.enabled, started = false;
	hm_sched_env_t env;
	hm_err_t err = {0};
	char *state_dir = NULL;
	hm_rc_t rc;

	conf_copy(&state_dir);
	run_env(&env, state_dir);
	rc = hm_sched_run_reconfigure(&g.run, &env, &started, &err);
	xfree(state_dir);
	if (!was) {
		if (!started) {
			log_disabled("reconfigure: still ");
			return;
		}
		hm_log_set_level(g.run.conf.log_level);
		set_wake(g.run.coord);
		log_up("reconfigure: enabled, ");
		return;
	}
	if (rc != HM_OK) {
		error("%sreconfigure: %s; the new harmonics.conf is refused, keeping the previous "
		      "configuration (the coordinator runs on)",
		      g.prefix, err.msg);
		return;
	}
	hm_log_set_level(g.run.conf.log_level);
	hm_live_pub_invalidate(&live);
	info("%sreconfigured from %s (policy %s), decisions kept", g.prefix, g.conf_path,
	     g.run.conf.policy);
}

/* Until stop, or until this slurmctld leaves control (a backup's primary came
   back, scontrol takeover): wait for slurmctld's state, start, then one round
   per tick. Leaving, the caller stops the coordinator (state saved, ListenPort
   freed for the controller in charge) and waits for control again. */
static void run_loop(void)
{
	while (!stopping() && !ctld_ready()) {
		pthread_mutex_lock(&g.mu);
		g.reconfig = false; /* the start reads everything anew */
		pthread_mutex_unlock(&g.mu);
		nap(READY_POLL_MS);
	}
	if (stopping())
		return;
	start_coord();
	while (!stopping()) {
		bool reconf;

		if (!ctld_ready()) {
			info("%sslurmctld left control (standby or exit): coordinator "
			     "stopped, state saved; it starts again when this "
			     "controller is in control",
			     g.prefix);
			return;
		}

		pthread_mutex_lock(&g.mu);
		reconf = g.reconfig;
		g.reconfig = false;
		pthread_mutex_unlock(&g.mu);
		if (reconf || conf_changed())
			reload();
		if (g.run.enabled) {
			sync_round();
			hm_live_pub_refresh(&live, g.run.coord, &g.run.conf, hm_real_s());
			hm_sched_run_metrics(&g.run);
			(void)hm_coord_wait_work(g.run.coord, TICK_MS);
			continue;
		}
		disabled_round();
		nap(TICK_MS);
	}
}

/* The thread: it stops the coordinator itself, so that a stop that could not
   wait for it (hm_ctld_host_stop) leaves nothing behind. */
static void *host_main(void *arg)
{
	(void)arg;
	for (;;) {
		hm_sched_run_init(&g.run);
		run_loop();
		hm_live_pub_clear(&live); /* placement as cons_tres from now on */
		set_wake(NULL);
		hm_sched_run_stop(&g.run);
		pthread_mutex_lock(&g.mu);
		if (!g.stop) { /* started again while it stopped: run on */
			pthread_mutex_unlock(&g.mu);
			continue;
		}
		if (g.orphan)
			info("%sstopped (after slurmctld released its locks)", g.prefix);
		g.alive = false;
		g.orphan = false;
		pthread_cond_broadcast(&g.cv);
		pthread_mutex_unlock(&g.mu);
		return NULL;
	}
}

/* The thread is detached and may outlive a stop: keep this object mapped. */
static void pin_self(void)
{
	static bool pinned;
	Dl_info info;

	if (pinned || !dladdr((void *)hm_ctld_host_start, &info) || !info.dli_fname)
		return;
	pinned = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE) != NULL;
}

/* slurmctld calls no job_submit fini when it exits (only in memory-leak debug
   builds): stop at exit, so that the state file is saved. */
static void host_atexit(void)
{
	hm_ctld_host_stop();
}

/* --- API ----------------------------------------------------------------- */

void hm_ctld_host_start(const char *plugin_type)
{
	static bool at_exit;
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	pin_self();
	if (!at_exit)
		at_exit = atexit(host_atexit) == 0;
	pthread_mutex_lock(&g.mu);
	snprintf(g.prefix, sizeof(g.prefix), "%s: ", plugin_type);
	hm_log_set_sink(log_sink);
	g.stop = false;
	g.reconfig = false;
	if (g.alive) { /* a previous stop could not wait: that thread runs on */
		g.orphan = false;
		pthread_mutex_unlock(&g.mu);
		info("%sthe coordinator's thread runs on", g.prefix);
		return;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, host_main, NULL);
	pthread_attr_destroy(&attr);
	g.alive = rc == 0;
	pthread_mutex_unlock(&g.mu);
	if (rc != 0)
		error("%scannot start the coordinator thread: %s; Harmonics disabled until "
		      "slurmctld restarts",
		      g.prefix, strerror(rc));
	else
		verbose("%scoordinator thread started: it starts once slurmctld has read its "
			"state",
			g.prefix);
}

void hm_ctld_host_stop(void)
{
	long deadline = mono_ms() + STOP_WAIT_MS;

	pthread_mutex_lock(&g.mu);
	if (!g.alive || g.orphan) { /* stopped, or left to stop by itself */
		pthread_mutex_unlock(&g.mu);
		return;
	}
	g.stop = true;
	pthread_cond_broadcast(&g.cv);
	if (g.wake)
		hm_coord_wake(g.wake);
	while (g.alive) {
		struct timespec until;
		long now = mono_ms();

		if (now >= deadline ||
		    (g.lock_wait_since_ms && now - g.lock_wait_since_ms >= STOP_LOCK_WAIT_MS)) {
			g.orphan = true;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += STOP_POLL_MS * 1000000L;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&g.cv, &g.mu, &until);
	}
	if (g.orphan) {
		pthread_mutex_unlock(&g.mu);
		info("%sstopping: the coordinator's thread waits for slurmctld's locks and stops "
		     "once it has them",
		     g.prefix);
		return;
	}
	pthread_mutex_unlock(&g.mu);
	info("%sstopped", g.prefix);
	hm_log_set_sink(NULL);
}

void hm_ctld_host_reconfig(void)
{
	pthread_mutex_lock(&g.mu);
	g.reconfig = true;
	pthread_cond_broadcast(&g.cv);
	if (g.wake)
		hm_coord_wake(g.wake);
	pthread_mutex_unlock(&g.mu);
}

const hm_live_t *hm_ctld_host_live_acquire(double *fresh_s)
{
	return hm_live_pub_acquire(&live, fresh_s);
}

void hm_ctld_host_live_release(const hm_live_t *l)
{
	hm_live_pub_release(&live, l);
}
