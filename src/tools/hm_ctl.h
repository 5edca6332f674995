/*
 * hm_ctl.h - harmonicsctl's logic: requests for its commands and human tables
 * of the replies. Kept out of the entry file so tests can drive it.
 */
#ifndef HM_CTL_H
#define HM_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hm_error.h"

/* HM_CTL_EXPLAIN is "job ID --explain", not a command word. */
typedef enum {
	HM_CTL_STATUS,
	HM_CTL_JOBS,
	HM_CTL_RACKS,
	HM_CTL_NODES,
	HM_CTL_JOB,
	HM_CTL_EXPLAIN
} hm_ctl_cmd_t;

/* Command word to enum; HM_ERR_INVAL naming the word and the accepted ones. */
hm_rc_t hm_ctl_parse_cmd(const char *word, hm_ctl_cmd_t *cmd, hm_err_t *err);

/* Request JSON for a command (job_id only for HM_CTL_JOB and HM_CTL_EXPLAIN). Writes
   into buf. */
void hm_ctl_request(hm_ctl_cmd_t cmd, uint32_t job_id, char *buf, size_t len);

/*
 * Print a reply: as indented JSON (json) or as a table. A reply with "ok": false
 * prints its error to err_out and returns HM_ERR_AUTH/HM_ERR_NOTFOUND/HM_ERR_PROTO
 * by its code; a reply that is not JSON is HM_ERR_PROTO.
 */
hm_rc_t hm_ctl_print(hm_ctl_cmd_t cmd, const char *reply_json, bool json, const char *where,
		     FILE *out, FILE *err_out);

#endif
