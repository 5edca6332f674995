/*
 * select_place.h - contention-aware placement inside select_p_job_test
 * (select_place.c; docs/placement.md).
 */
#ifndef SELECT_PLACE_H
#define SELECT_PLACE_H

#include <stdbool.h>
#include <stdint.h>

/* cons_tres' select_p_job_test. */
typedef int (*hm_select_job_test_fn)(job_record_t *, bitstr_t *, uint32_t, uint32_t, uint32_t,
				     uint16_t, List, List *, bitstr_t *);

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
		    bitstr_t *exc_core_bitmap, int *rc);

/* The job ended: its recent placement leaves the overlay. */
void hm_select_forget(uint32_t job_id);

#endif
