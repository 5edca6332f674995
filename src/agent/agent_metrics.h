/*
 * agent_metrics.h - the node agent's node_exporter textfile (MetricsDir=):
 * per running job, its tasks' pacing counters (docs/metrics.md). Single
 * thread: the agent's.
 */
#ifndef AGENT_METRICS_H
#define AGENT_METRICS_H

#include "agent_jobs.h"
#include "hm_error.h"

/* The text exposition of js's running jobs on node (malloc'd; NULL: out of memory). */
char *agent_metrics_text(const agent_jobs_t *js, const char *node);

/* Write it to dir/harmonics_<node>.prom through a temporary file and a rename. */
hm_rc_t agent_metrics_write(const agent_jobs_t *js, const char *dir, const char *node,
			    hm_err_t *err);

/* Remove dir/harmonics_<node>.prom (the agent stops: its jobs' series go). */
void agent_metrics_remove(const char *dir, const char *node);

#endif
