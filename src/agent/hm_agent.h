/*
 * hm_agent.h - the C ABI of harmonics_agent.so, the node agent (issue 11,
 * docs/pacing.md contract A, docs/protocol.md contract B).
 *
 * The SPANK plugin loads the shared object in slurmd (S_CTX_SLURMD) with
 * dlopen(RTLD_NOW | RTLD_LOCAL), calls hm_agent_start() from slurm_spank_init()
 * and hm_agent_stop() from slurm_spank_slurmd_exit(). The agent is one thread
 * that never blocks its caller: start() returns after loading harmonics.conf
 * and creating the thread; everything that can wait (hwloc, munge, the
 * coordinator, the files) happens in the thread, bounded, retried with back-off.
 *
 * Exported symbols (version node HARMONICS_AGENT_1): hm_agent_start,
 * hm_agent_stop, hm_agent_node_name. Nothing else is visible.
 *
 * Compatibility: the caller sets args->size = sizeof(hm_agent_args_t) and
 * args->version = HM_AGENT_ABI_VERSION. A later ABI only appends members; the
 * agent reads the members that fit in args->size and refuses a larger version.
 */
#ifndef HM_AGENT_H
#define HM_AGENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HM_AGENT_ABI_VERSION 1
#define HM_AGENT_NO_UID      UINT32_MAX
/* hm_agent_stop() waits at most this long for the thread (see there). */
#define HM_AGENT_STOP_BOUND_MS 2000

/* Log levels passed to the callback (those of harmonics.conf LogLevel): the
   values of the agent's logging, hm_log.h's hm_log_level_t. */
enum { HM_AGENT_LOG_ERROR = 0, HM_AGENT_LOG_INFO, HM_AGENT_LOG_VERBOSE, HM_AGENT_LOG_DEBUG };

/* Receives one line (no newline, prefix "harmonics-agent NODE: " included). Called
 * from the agent's thread and from start()/stop(); must be thread-safe. */
typedef void (*hm_agent_log_fn)(int level, const char *msg);

typedef struct {
	uint32_t size;    /* sizeof(hm_agent_args_t) as compiled by the caller */
	uint32_t version; /* HM_AGENT_ABI_VERSION */
	/* Node name (slurmd -N, else the short host name); NULL or "": hm_agent_node_name(). */
	const char *node;
	/* harmonics.conf; NULL: $HARMONICS_CONF, else beside $SLURM_CONF or slurm.conf. */
	const char *conf_path;
	/* Log sink; NULL: stderr. Lines above the configured LogLevel are not sent. */
	hm_agent_log_fn log;
	/* SlurmUser's uid: the coordinator's frames are accepted from root and this uid
	   (HM_AGENT_NO_UID: root and the account "slurm", looked up at start). */
	uint32_t slurm_user_uid;
	/* hwloc XML of this node instead of discovering it (NULL: the machine, where
	   hwloc honours HWLOC_XMLFILE). */
	const char *topo_xml;
	/* HM_AGENT_F_* (appended in 0.2: an older caller's size ends before it; 0). */
	uint32_t flags;
} hm_agent_args_t;

/* slurmd will daemonize after its plugins load: instead of refusing, return 1
   (nothing logged) so that the caller starts the agent again after the fork. */
#define HM_AGENT_F_DEFER_DAEMON (1u << 0)
/* Called in the daemonized slurmd (the caller's fork handler): start here even
   though slurmd's command line has no -D. */
#define HM_AGENT_F_DAEMONIZED (1u << 1)

/*
 * Start the agent of this process (one per process). Returns 0 when the thread
 * runs, 1 when slurmd will daemonize and HM_AGENT_F_DEFER_DAEMON is set (start
 * again after the fork with HM_AGENT_F_DAEMONIZED), -1 otherwise with the
 * reason logged: bad args, a bad harmonics.conf (file:line), already started,
 * a slurmd that will daemonize after its plugins load without
 * HM_AGENT_F_DEFER_DAEMON (the thread would not survive the fork), thread
 * creation failed.
 * A missing harmonics.conf means the documented defaults. Never blocks on the
 * network. Safe to call again after a failed start or after stop().
 */
int hm_agent_start(const hm_agent_args_t *args);

/*
 * Stop the agent: wake the thread, which closes its connection and exits, and
 * join it. Returns 0 when joined (normally within about 100 ms), -1 when the
 * thread did not end within HM_AGENT_STOP_BOUND_MS (it was inside a munge call
 * or a name lookup; it is detached and exits on its own: the caller must not
 * unload the object then). Safe when start failed, was never called, or in a
 * forked child (the thread is not there: nothing to join).
 */
int hm_agent_stop(void);

/*
 * This process's node name: the last -N of slurmd's command line
 * (/proc/self/cmdline, parsed as slurmd's getopt does), else the host name up
 * to its first dot. Writes at most len bytes (NUL included); returns 0, or -1
 * when no valid name (1-63 of [A-Za-z0-9._-]) was found.
 */
int hm_agent_node_name(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
