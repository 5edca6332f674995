/*
 * sched_harmonics.c - sched/harmonics: hosts the Harmonics Global Coordinator in
 * slurmctld and keeps backfill.
 *
 * init() loads harmonics.conf (beside slurm.conf) and the topology/tree switches
 * (or the file named by Topology=), restores the state file, starts the socket
 * server and a thread that mirrors running jobs into the coordinator, re-decides on job start/end
 * and per epoch, and writes each decision into the job's AdminComment. slurmctld locks are held
 * only to copy job fields and to store a comment; policy work runs unlocked.
 * Harmonics never stops Slurm (hm_sched_run.h): when the coordinator cannot
 * start, init() still succeeds, Harmonics runs disabled with the cause logged,
 * backfill schedules every job, --comm-sched jobs get "off=disabled(...)" in
 * AdminComment, and each scontrol reconfigure tries again.
 * Backfill: the installed sched_backfill.so is loaded and forwarded to unless
 * SchedulerParameters contains harmonics_no_backfill. After each round the
 * thread publishes the live view that select/harmonics_cons_tres places jobs
 * with (hm_live.h), through the two accessors this plugin exports.
 */
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
#include <unistd.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/gres.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/slurm_topology.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "hm_clock.h"
#include "hm_conf.h"
#include "hm_coord.h"
#include "hm_live_pub.h"
#include "hm_log.h"
#include "hm_plugin.h"
#include "hm_sched_run.h"
#include "hm_topo.h"

const char plugin_name[] = "Harmonics communication scheduler (keeps sched/backfill)";
const char plugin_type[] = "sched/harmonics";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define LOG_PREFIX        "sched/harmonics: "
#define NO_BACKFILL_PARAM "harmonics_no_backfill"
#define TICK_MS           1000
/* Nodes of a job whose GPU allocation is read (the per-node model takes the most). */
#define HM_MAX_HOSTS_PER_JOB_SCAN 1024

/* A running job as copied under the read lock. */
typedef struct {
	uint32_t job_id, uid;
	char *name, *nodes, *mode, *profile, *comment;
	char *gpu_ids; /* the GRES indexes it was given, NULL = unknown */
	int gpus_per_node;
	time_t start;
} snap_job_t;

static struct {
	void *bf_handle;
	int (*bf_init)(void);
	void (*bf_fini)(void);
	int (*bf_reconfig)(void);

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu; /* guards stop, reconfig and wake */
	pthread_cond_t cv;  /* the disabled thread's sleep */
	bool stop, reconfig;
	hm_coord_t *wake; /* the running coordinator, for sched_p_reconfig's wake-up */

	char conf_path[PATH_MAX];
	hm_sched_run_t run; /* the coordinator or why not: init(), then the thread only */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Static: select/harmonics_cons_tres may hold a view while this plugin stops. */
static hm_live_pub_t live = HM_LIVE_PUB_INIT;

static void log_sink(int level, const char *msg)
{
	switch (level) {
	case HM_LOG_ERROR:
		error(LOG_PREFIX "%s", msg);
		break;
	case HM_LOG_INFO:
		info(LOG_PREFIX "%s", msg);
		break;
	case HM_LOG_VERBOSE:
		verbose(LOG_PREFIX "%s", msg);
		break;
	default:
		debug(LOG_PREFIX "%s", msg);
		break;
	}
}

/* --- backfill -------------------------------------------------------- */

static bool backfill_wanted(void)
{
	return !(slurm_conf.sched_params && strstr(slurm_conf.sched_params, NO_BACKFILL_PARAM));
}

static void backfill_open_failed(const char *path, const char *why)
{
	error(LOG_PREFIX "%s: %s", path, why);
}

/* dlopen sched_backfill.so from PluginDir and start it. */
static int backfill_start(void)
{
	int rc = SLURM_ERROR;

	g.bf_handle =
	    hm_plugin_dlopen(slurm_conf.plugindir, "sched_backfill.so", backfill_open_failed);
	if (!g.bf_handle) {
		error(LOG_PREFIX
		      "sched_backfill.so not found in PluginDir %s (%s); running without "
		      "backfill",
		      slurm_conf.plugindir, dlerror());
		goto out;
	}
	g.bf_init = (int (*)(void))dlsym(g.bf_handle, "init");
	g.bf_fini = (void (*)(void))dlsym(g.bf_handle, "fini");
	g.bf_reconfig = (int (*)(void))dlsym(g.bf_handle, "sched_p_reconfig");
	if (!g.bf_init || !g.bf_fini || !g.bf_reconfig) {
		error(LOG_PREFIX "sched_backfill.so lacks init/fini/sched_p_reconfig; no backfill");
		g.bf_init = NULL;
		g.bf_fini = NULL;
		g.bf_reconfig = NULL;
		goto out;
	}
	rc = g.bf_init();
	if (rc == SLURM_SUCCESS)
		info(LOG_PREFIX "backfill kept (sched_backfill.so started)");
	else
		g.bf_fini = NULL;
out:
	return rc;
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

/*
 * The topology/tree switches slurmctld holds (switch_record_table), written as
 * topology.conf text for the libharmonics loader, so that the coordinator sees
 * exactly the racks Slurm uses. HM_ERR_NOTFOUND when there are none
 * (topology/none). take_lock: false in init(), whose caller holds slurmctld's
 * locks already (taking one there is fatal); the node read lock otherwise.
 */
static hm_rc_t topo_from_switches(void *arg, const hm_topo_opts_t *opts, hm_topo_t **topo,
				  hm_err_t *err)
{
	slurmctld_lock_t nl = {.node = READ_LOCK};
	bool take_lock = *(const bool *)arg;
	char *text = NULL;
	FILE *f;
	hm_rc_t rc;
	int nsw;

	if (take_lock)
		lock_slurmctld(nl);
	nsw = switch_record_table ? switch_record_cnt : 0;
	for (int i = 0; switch_record_table && i < switch_record_cnt; i++) {
		switch_record_t *sw = &switch_record_table[i];
		xstrfmtcat(text, "SwitchName=%s", sw->name);
		/* Upper levels list every node below them too: racks carry Nodes=. */
		if (sw->level == 0 && sw->nodes && sw->nodes[0])
			xstrfmtcat(text, " Nodes=%s", sw->nodes);
		else if (sw->level > 0 && sw->switches && sw->switches[0])
			xstrfmtcat(text, " Switches=%s", sw->switches);
		/* topology/tree stores 1 when topology.conf gives no LinkSpeed: only a
		   larger value is the admin's (bare numbers are Gbit/s, docs/topology.md). */
		if (sw->link_speed > 1)
			xstrfmtcat(text, " LinkSpeed=%u", sw->link_speed);
		xstrcat(text, "\n");
	}
	if (take_lock)
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
		verbose(LOG_PREFIX "topology from slurmctld's %d topology/tree switches", nsw);
	xfree(text);
	return rc;
}

/* Where the configuration comes from; take_lock as for topo_from_switches. */
static void run_env(hm_sched_env_t *env, const char *state_dir, const bool *take_lock)
{
	*env = (hm_sched_env_t){.conf_path = g.conf_path,
				.state_dir = state_dir,
				.slurm_user_id = slurm_conf.slurm_user_id,
				.switches = topo_from_switches,
				.switches_arg = (void *)take_lock,
				.slurm_version = SLURM_VERSION_STRING};
}

/* --- job mirror ------------------------------------------------------ */

/*
 * GPUs per node the job was given (its GRES allocation, summed over GPU types;
 * the largest node's count), or -1 when it has no GPU allocation record.
 */
static int alloc_gpus_per_node(job_record_t *job)
{
	ListIterator it;
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
		free(s[i].name);
		free(s[i].nodes);
		free(s[i].mode);
		free(s[i].profile);
		free(s[i].comment);
		free(s[i].gpu_ids);
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
	ListIterator it;
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
	ListIterator it;
	job_record_t *job;
	snap_job_t *s = NULL;
	int n = 0, cap = 0;

	lock_slurmctld(rl);
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

	lock_slurmctld(wl);
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
		    .name = s[i].name,
		    .nodes = s[i].nodes,
		    .gpus_per_node = s[i].gpus_per_node,
		    .gpu_ids = s[i].gpu_ids,
		    .mode = s[i].mode,
		    .profile = s[i].profile,
		    .start_s = (double)s[i].start,
		};
		jobs[i].comment = s[i].comment;
	}
	if (jobs)
		hm_coord_sync(g.run.coord, jobs, n, hm_real_s(), store_comment, NULL, NULL);
	else
		error(LOG_PREFIX "out of memory: job mirror round skipped");
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
	info(LOG_PREFIX "%scoordinator up: policy %s, epoch %.1f s, listening on %s:%d, config %s",
	     how, g.run.conf.policy, g.run.conf.epoch_s, g.run.conf.listen_addr,
	     hm_server_port(g.run.srv), g.conf_path);
}

static void log_disabled(const char *how)
{
	error(LOG_PREFIX "%sdisabled: %s; jobs run unscheduled (backfill kept, --comm-sched "
			 "accepted); fix it, then scontrol reconfigure",
	      how, g.run.why);
}

/* scontrol reconfigure, in the thread: start a disabled Harmonics, or
   reconfigure the running one (a broken file is refused, hm_sched_run.h). */
static void reload(void)
{
	slurmctld_lock_t cl = {.conf = READ_LOCK};
	const bool take_lock = true;
	bool was = g.run.enabled, started = false;
	hm_sched_env_t env;
	hm_err_t err = {0};
	char *state_dir;
	hm_rc_t rc;

	/* slurm_conf is rewritten by reconfigure: copy what we need under its lock. */
	lock_slurmctld(cl);
	state_dir = xstrdup(slurm_conf.state_save_location);
	unlock_slurmctld(cl);
	run_env(&env, state_dir, &take_lock);
	rc = hm_sched_run_reconfigure(&g.run, &env, &started, &err);
	xfree(state_dir);
	if (!was) {
		if (!started) {
			log_disabled("reconfigure: still ");
			return;
		}
		hm_log_set_level(g.run.conf.log_level);
		pthread_mutex_lock(&g.mu);
		g.wake = g.run.coord;
		pthread_mutex_unlock(&g.mu);
		log_up("reconfigure: enabled, ");
		return;
	}
	if (rc != HM_OK) {
		error(LOG_PREFIX "reconfigure: %s; the new harmonics.conf is refused, keeping the "
				 "previous configuration (the coordinator runs on)",
		      err.msg);
		return;
	}
	hm_log_set_level(g.run.conf.log_level);
	hm_live_pub_invalidate(&live);
	info(LOG_PREFIX "reconfigured from %s (policy %s), decisions kept", g.conf_path,
	     g.run.conf.policy);
}

static void *agent(void *arg)
{
	for (;;) {
		bool stop, reconf;

		pthread_mutex_lock(&g.mu);
		stop = g.stop;
		reconf = g.reconfig;
		g.reconfig = false;
		pthread_mutex_unlock(&g.mu);
		if (stop)
			break;
		if (reconf)
			reload();
		if (g.run.enabled) {
			sync_round();
			hm_live_pub_refresh(&live, g.run.coord, &g.run.conf, hm_real_s());
			hm_sched_run_metrics(&g.run);
			(void)hm_coord_wait_work(g.run.coord, TICK_MS);
			continue;
		}
		disabled_round();
		pthread_mutex_lock(&g.mu);
		if (!g.stop && !g.reconfig) {
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += TICK_MS / 1000;
			pthread_cond_timedwait(&g.cv, &g.mu, &until);
		}
		pthread_mutex_unlock(&g.mu);
	}
	return NULL;
}

/* --- plugin entry points ------------------------------------------------ */

static void teardown(void)
{
	if (g.thread_started) {
		pthread_mutex_lock(&g.mu);
		g.stop = true;
		pthread_cond_signal(&g.cv);
		if (g.wake)
			hm_coord_wake(g.wake);
		pthread_mutex_unlock(&g.mu);
		pthread_join(g.thread, NULL);
		g.thread_started = false;
	}
	hm_live_pub_clear(&live); /* placement as cons_tres from now on */
	pthread_mutex_lock(&g.mu);
	g.wake = NULL;
	pthread_mutex_unlock(&g.mu);
	hm_sched_run_stop(&g.run);
}

/*
 * Never fails: Slurm stops slurmctld when a scheduler plugin's init fails, and
 * Harmonics must not take the cluster down. A coordinator that cannot start
 * leaves Harmonics disabled (logged with the cause) and backfill scheduling.
 */
extern int init(void)
{
	const bool take_lock = false; /* slurmctld holds its locks around init() */
	hm_sched_env_t env;
	hm_err_t err = {0};

	info(LOG_PREFIX "harmonics %s, built for Slurm %s (running %s)", HM_VERSION,
	     HM_SLURM_VERSION_BUILT, SLURM_VERSION_STRING);
	hm_log_set_sink(log_sink);
	g.stop = false;
	g.reconfig = false;
	conf_path(g.conf_path, sizeof(g.conf_path));
	hm_sched_run_init(&g.run);
	run_env(&env, slurm_conf.state_save_location, &take_lock);
	if (hm_sched_run_start(&g.run, &env, &err) == HM_OK) {
		hm_log_set_level(g.run.conf.log_level);
		g.wake = g.run.coord;
	}
	if (pthread_create(&g.thread, NULL, agent, NULL) != 0) {
		error(LOG_PREFIX "cannot start the coordinator thread: %m; Harmonics disabled "
				 "until slurmctld restarts");
		teardown();
	} else {
		g.thread_started = true;
		if (g.run.enabled)
			log_up("");
		else
			log_disabled("");
	}
	if (backfill_wanted())
		backfill_start();
	else
		info(LOG_PREFIX "backfill off (SchedulerParameters=" NO_BACKFILL_PARAM ")");
	return SLURM_SUCCESS;
}

extern void fini(void)
{
	if (g.bf_fini)
		g.bf_fini(); /* never dlclose: its threads are joined, symbols may linger */
	g.bf_fini = NULL;
	g.bf_init = NULL;
	g.bf_reconfig = NULL;
	teardown();
	info(LOG_PREFIX "stopped");
	hm_log_set_sink(NULL);
}

extern int sched_p_reconfig(void)
{
	pthread_mutex_lock(&g.mu);
	g.reconfig = true;
	pthread_cond_signal(&g.cv);
	if (g.wake)
		hm_coord_wake(g.wake);
	pthread_mutex_unlock(&g.mu);
	if (g.bf_reconfig)
		g.bf_reconfig();
	return SLURM_SUCCESS;
}

/* The live view for select/harmonics_cons_tres (hm_live.h; exported, versioned). */
extern const hm_live_t *hm_sched_live_acquire_v1(double *fresh_s)
{
	return hm_live_pub_acquire(&live, fresh_s);
}

extern void hm_sched_live_release_v1(const hm_live_t *l)
{
	hm_live_pub_release(&live, l);
}
