/*
 * hm_slurm_compat.h - what differs between the Slurm releases Harmonics builds
 * against (22.05 to 26.05) for code inside slurmctld, in one place: where the
 * internal headers are, the list types, slurmctld's topology/tree switches
 * (a global table until 24.05, topology_g_get from then on) and a partition's
 * topology (25.05+).
 *
 * Include it after Slurm's "config.h" (m4/hm_slurm.m4); guards compare
 * SLURM_VERSION_NUMBER of the configured tree. The select plugin and other
 * slurmctld plugins include it too; hm_slurm_compat.c holds the functions.
 */
#ifndef HM_SLURM_COMPAT_H
#define HM_SLURM_COMPAT_H

#include <stdbool.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

/* Releases as MAJOR, MINOR (the micro release never changes an interface here). */
#define HM_SLURM_AT_LEAST(major, minor) \
	(SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(major, minor, 0))

#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
/* 23.02 moved the plugin interfaces from src/common to src/interfaces. */
#if HM_SLURM_AT_LEAST(23, 2)
#include "src/interfaces/gres.h"
#include "src/interfaces/mcs.h"
#include "src/interfaces/select.h"
#include "src/interfaces/topology.h"
#else
#include "src/common/gres.h"
#include "src/common/slurm_mcs.h"
#include "src/common/select.h"
#include "src/common/slurm_topology.h"
/* The topology.yaml topology of the partition the job runs in (Topology=,
   25.05+), NULL for the cluster default and on every release before 25.05.
   The caller holds the job read lock; the string is Slurm's. */
const char *hm_slurm_job_topology(const job_record_t *job);

#endif
#include "src/common/assoc_mgr.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

/* 23.11 has list_t, list_itr_t and job_details_t (24.11 dropped List and
   ListIterator, 26.05 the job_details tag); C11 allows a typedef twice. */
#if !HM_SLURM_AT_LEAST(23, 11)
typedef struct xlist list_t;
typedef struct listIterator list_itr_t;
typedef struct job_details job_details_t;
/* The topology.yaml topology of the partition the job runs in (Topology=,
   25.05+), NULL for the cluster default and on every release before 25.05.
   The caller holds the job read lock; the string is Slurm's. */
const char *hm_slurm_job_topology(const job_record_t *job);

#endif

/* One switch of slurmctld's topology/tree, as topology.conf would name it. */
typedef struct {
	const char *name, *nodes, *switches;
	int level;
	unsigned link_speed;
} hm_slurm_switch_t;

typedef void (*hm_slurm_switch_fn)(void *arg, const hm_slurm_switch_t *sw);

/*
 * Call fn for each topology/tree switch slurmctld holds (the default topology
 * from 25.05), in table order; returns how many (0: topology/none, block, or
 * none loaded). The caller holds slurmctld's node read lock.
 */
int hm_slurm_switches(hm_slurm_switch_fn fn, void *arg);

/*
 * Whether uid is one of slurmctld's operators: root, SlurmUser, or
 * AdminLevel=Operator or Administrator in the accounting database (as squeue
 * decides who sees other users' jobs under PrivateData=jobs). slurmctld's
 * validate_operator(uid_t), alike in 22.05 to 26.05 (proc_req.c; 24.11 adds
 * validate_operator_locked beside it); it takes the assoc_mgr's user read lock
 * itself: call it holding no slurmctld or assoc_mgr lock. Inline, so that only
 * its caller (the coordinator's host) references the symbol, not the select
 * plugin.
 */
static inline bool hm_slurm_is_operator(uint32_t uid)
{
	return validate_operator((uid_t)uid);
}

/*
 * Whether uid coordinates the account (sacctmgr add coordinator), as squeue
 * lets a coordinator see the jobs of its accounts under PrivateData=jobs
 * (job_mgr.c, proc_req.c). Slurm asks assoc_mgr_is_user_acct_coord: (db_conn,
 * uid, acct) in 22.05.8, with an is_locked flag in 23.11 to 26.05 (23.02 not
 * read; false: it takes the assoc_mgr's user read lock itself, so call it as
 * hm_slurm_is_operator, holding no slurmctld or assoc_mgr lock).
 * Under MCSParameters=privatedata Slurm shows jobs by MCS label instead and no
 * coordinator sees more: false then. acct_db_conn is slurmctld's; the function
 * loads the user list from it only when accounting has none yet.
 */
static inline bool hm_slurm_is_acct_coord(uint32_t uid, const char *account)
{
	if (!account || !*account || slurm_mcs_get_privatedata())
		return false;
#if HM_SLURM_AT_LEAST(23, 11)
	return assoc_mgr_is_user_acct_coord(acct_db_conn, uid, (char *)account, false);
#else
	return assoc_mgr_is_user_acct_coord(acct_db_conn, uid, (char *)account);
#endif
}

/* How many records the topology plugin holds (switches of topology/tree, blocks
   of topology/block), without copying them; same lock as hm_slurm_switches. */
int hm_slurm_topo_records(void);

/* The topology.yaml topology of the partition the job runs in (Topology=,
   25.05+), NULL for the cluster default and on every release before 25.05.
   The caller holds the job read lock; the string is Slurm's. */
const char *hm_slurm_job_topology(const job_record_t *job);

#endif
