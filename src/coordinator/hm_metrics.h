/*
 * hm_metrics.h - the coordinator's Prometheus metrics (docs/metrics.md).
 *
 * Two halves. hm_metrics.c renders the engine as the text exposition format
 * (version 0.0.4): the host's thread calls hm_metrics_srv_refresh once per
 * round, which takes the engine's mutex for the views it copies (never a
 * slurmctld lock) and publishes the text. hm_metrics_http.c serves the latest
 * published text on MetricsListen at GET /metrics from a thread of its own: a
 * scrape copies that text under a small mutex and touches nothing else, so a
 * scraper can neither slow the coordinator nor see half a round.
 *
 * The listener's bounds: at most HM_MX_MAX_CONNS connections at once (more
 * are closed at once), HM_MX_TIMEOUT_MS for a request to arrive and again for
 * its reply to leave, a request line and headers of at most
 * HM_MX_REQ_MAX_BYTES; GET and HEAD only; HTTP/1.0 replies, one request per
 * connection.
 */
#ifndef HM_METRICS_H
#define HM_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "hm_error.h"

#define HM_MX_MAX_CONNS     16
#define HM_MX_TIMEOUT_MS    2000
#define HM_MX_REQ_MAX_BYTES 4096

/* Upper bounds of the decision duration histogram, seconds (+Inf follows). */
#define HM_MX_DURATION_BOUNDS                                                                      \
	{                                                                                          \
		0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5                 \
	}
#define HM_MX_NBUCKETS 12

/* How a running job was placed, read from its AdminComment at first sight. */
typedef enum {
	HM_MX_PLACE_BETTER,    /* the select plugin chose a lower score than cons_tres's */
	HM_MX_PLACE_SAME,      /* it kept cons_tres's choice (equal score, or unknown) */
	HM_MX_PLACE_CONS_TRES, /* no placement entry: cons_tres alone placed it */
	HM_MX_PLACE_N
} hm_mx_place_t;

/* The engine's counters (hm_coord_int.h; under its mutex). */
typedef struct {
	unsigned long decisions;              /* policy runs */
	unsigned long changes;                /* job decisions that changed */
	unsigned long dur_le[HM_MX_NBUCKETS]; /* runs per bucket (not cumulative) */
	unsigned long dur_inf;                /* runs above the last bound */
	double dur_sum_s;                     /* wall clock of every run */
	unsigned long placements[HM_MX_PLACE_N];
} hm_coord_mx_t;

/* Count one policy run of wall_s seconds that changed nchanged decisions. */
void hm_coord_mx_decision(hm_coord_mx_t *m, double wall_s, int nchanged);

/* The placement outcome an AdminComment records (NULL = none). */
hm_mx_place_t hm_mx_place_outcome(const char *comment);

/* Its name as the label value ("better", "same", "cons_tres"). */
const char *hm_mx_place_name(hm_mx_place_t p);

struct hm_coord;

/* Count a job seen for the first time with its AdminComment (placement outcome). */
void hm_coord_note_placement(struct hm_coord *c, const char *comment);

/*
 * The text exposition of c into *text (malloc'd, NUL-terminated, *len without
 * the NUL). slurm_version: the running Slurm's ("" or NULL: "none", outside
 * Slurm). Takes the engine's mutex once per view, briefly.
 */
hm_rc_t hm_metrics_render(struct hm_coord *c, const char *slurm_version, char **text, size_t *len,
			  hm_err_t *err);

typedef struct hm_metrics_srv hm_metrics_srv_t;

/*
 * Listen on "A.B.C.D:PORT" (PORT 0: any, tests) and start the thread; until
 * the first refresh a scrape gets 503. slurm_version is copied. Errors name
 * the address and errno.
 */
hm_rc_t hm_metrics_srv_start(const char *listen, const char *slurm_version, hm_metrics_srv_t **out,
			     hm_err_t *err);

/* The bound port. */
int hm_metrics_srv_port(const hm_metrics_srv_t *s);

/* Render c and publish the text (a failure is logged; the last text stays). NULL s:
   nothing. */
void hm_metrics_srv_refresh(hm_metrics_srv_t *s, struct hm_coord *c);

/* Stop the thread, close every connection, free. NULL is fine. */
void hm_metrics_srv_stop(hm_metrics_srv_t *s);

#endif
