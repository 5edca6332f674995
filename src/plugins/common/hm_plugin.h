/*
 * hm_plugin.h - the Slurm-side contract the three plugins share, without Slurm:
 * the job-control environment keys that the SPANK plugin sets at submission
 * and slurmctld keeps in the job record (job_ptr->spank_job_env), read by the
 * sched and select plugins; and the PluginDir loader with which those two wrap
 * Slurm's own plugins (sched_backfill.so, select_cons_tres.so).
 */
#ifndef HM_PLUGIN_H
#define HM_PLUGIN_H

#include <stdint.h>

/* Job-control environment: the resolved --comm-sched mode and --comm-profile
 * spec (also the user's environment twins of the options). */
#define HM_SPANK_ENV_MODE    "HARMONICS_COMM_SCHED"
#define HM_SPANK_ENV_PROFILE "HARMONICS_COMM_PROFILE"

/*
 * The value of key in env[0..n-1], an array of "KEY=VALUE" strings (NULL
 * entries skipped); NULL when absent. Points into env.
 */
const char *hm_plugin_env_get(char *const *env, uint32_t n, const char *key);

/* Told about each candidate that exists but does not load: its path and why. */
typedef void (*hm_plugin_open_fail_fn)(const char *path, const char *why);

/*
 * dlopen file from the first directory of plugindir (colon-separated, as
 * Slurm's PluginDir) where it exists, readable, and loads; RTLD_LAZY, as Slurm's
 * loader (a client lacks slurmctld's functions), and RTLD_LOCAL. Returns the
 * handle (never dlclose'd by the plugins) or NULL when no directory has a
 * loadable one; on_fail (may be NULL) hears about each that failed to load.
 */
void *hm_plugin_dlopen(const char *plugindir, const char *file, hm_plugin_open_fail_fn on_fail);

/*
 * The handle of file when the process has it loaded already from a directory
 * of plugindir (dlopen RTLD_NOLOAD: nothing is loaded), else NULL. How one
 * plugin reaches another's exported accessor (Slurm loads plugins RTLD_LOCAL).
 */
void *hm_plugin_find_loaded(const char *plugindir, const char *file);

/*
 * GPUs per node a job asked for in Slurm's tres_per_node ("gres/gpu:4",
 * "gres/gpu:a100:2,gres/nic:1"): the count of its gpu entry; 0 when none or
 * unreadable (the coordinator then takes every GPU of the node).
 */
int hm_plugin_gpus_per_node(const char *tres);

#endif
