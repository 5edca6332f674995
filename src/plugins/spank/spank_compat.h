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

/* slurmd without -D: up to 23.11 it loads its plugins (S_CTX_SLURMD's init)
   and then daemonizes (fork, setsid, fork); from 24.05 it daemonizes first
   (main(): xdaemon() before _slurmd_init()), so a thread started in init is
   already in the daemon (read in 23.11.11, 24.11.7, 25.11.7 and 26.05.3's
   slurmd.c; 24.05, not vendored here, is taken to have moved it with
   slurmd's re-exec on reconfigure). 1 when init runs in the process that
   stays. */
#define HM_SLURMD_DAEMONIZED_AT_INIT (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0))

#endif
