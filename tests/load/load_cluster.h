/*
 * load_cluster.h - the cluster tests/load/coord_load drives: its hosts, its
 * running jobs (id, owner, hosts) and each host's jobs. Made up (a generated
 * topology, jobs over 1, 2, 4 or 8 consecutive hosts), or read from a real
 * Slurm's running jobs (`squeue -h -t R -o "%i %U %N"`).
 */
#ifndef LOAD_CLUSTER_H
#define LOAD_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "hm_topo.h"

typedef struct {
	uint32_t id, uid;
	int *hosts, nhosts; /* indexes into lc_t.hosts */
} lc_job_t;

typedef struct {
	char **hosts;
	int nhosts;
	lc_job_t *jobs;
	int njobs;
	int **on, *non; /* per host: indexes into jobs */
} lc_t;

/* njobs made-up jobs on topo's hosts; the first legit_jobs belong to legit_uid,
   the others to 50 other uids from 2000. 0, or -1 out of memory. */
int lc_synthetic(lc_t *c, const hm_topo_t *topo, int njobs, uint32_t legit_uid, int legit_jobs);

/* The hosts of nodes_expr (a hostlist) and the jobs of path, one per line:
   "JOBID UID NODELIST", every node one of the hosts. 0, or -1 with err. */
int lc_from_file(lc_t *c, const char *nodes_expr, const char *path, char *err, size_t len);

/* Job j's hosts as "a,b,c" (truncated to len). */
void lc_job_nodes(const lc_t *c, int j, char *out, size_t len);

void lc_free(lc_t *c);

#endif
