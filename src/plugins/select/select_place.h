/*
 * select_place.h - contention-aware placement inside select_p_job_test
 * (select_place.c; docs/placement.md).
 */
#ifndef SELECT_PLACE_H
#define SELECT_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "select_compat.h"

/* Whether placement may steer this call (else it is cons_tres' alone). */
bool hm_select_steerable(const job_record_t *job, const bitstr_t *bitmap, uint32_t min_nodes,
			 uint32_t max_nodes, uint32_t req_nodes, uint16_t mode,
			 const void *preemptees);

/*
 * Place a steerable job: 1 when decided (*rc is the answer, bitmap the nodes on
 * success), 0 when the caller must ask cons_tres as usual (nothing changed).
 */
int hm_select_place(hm_select_job_test_fn ct, job_record_t *job, bitstr_t *bitmap,
		    uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes, uint16_t mode,
		    const hm_job_test_tail_t *tail, int *rc);

/* The job ended: its recent placement leaves the overlay. */
void hm_select_forget(uint32_t job_id);

#endif
