/*
 * spank_compat.h - what differs between Slurm releases (22.05 to 26.05) for the
 * SPANK plugin, in one place. spank.h and slurm.h are the only Slurm headers it
 * uses; the plugin is rebuilt per major.minor (plugin_version).
 */
#ifndef SPANK_COMPAT_H
#define SPANK_COMPAT_H

#include <slurm/slurm.h>

/* hostlist_t: a pointer type up to 23.02, the struct itself from 23.11 (used as
   hostlist_t *). Whatever slurm_hostlist_create returns. */
typedef __typeof__(slurm_hostlist_create("")) hm_hostlist_t;

#endif
