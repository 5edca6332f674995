/*
 * nprof_burst.h - one communicator's bursts from NCCL's kernel events, without
 * NCCL: each kernel channel interval (GPU globaltimer, ns) joins the open burst
 * unless it starts more than gap after the burst's end; then the open burst is
 * complete (first kernel start to last kernel end) and a new one opens. So a
 * burst is known one iteration late, or at nprof_burst_flush.
 */
#ifndef NPROF_BURST_H
#define NPROF_BURST_H

#include <stdint.h>

typedef struct {
	uint64_t start_ns, end_ns; /* the open burst; end_ns 0: none open */
	uint64_t ops;              /* collectives and p2p operations begun */
	uint64_t kernels;          /* kernel channel intervals taken */
	uint64_t stale;            /* intervals that ended more than gap before the open burst */
	uint64_t bursts;           /* completed bursts */
	uint64_t burst_sum_ns;     /* their lengths */
} nprof_burst_t;

/* A kernel channel ran from start_ns to stop_ns. Returns the length (ns) of the
 * burst this completed, 0 when none; intervals with stop < start are ignored. */
uint64_t nprof_burst_kernel(nprof_burst_t *b, uint64_t start_ns, uint64_t stop_ns, uint64_t gap_ns);

/* Complete the open burst (communicator finalized): its length, 0 when none. */
uint64_t nprof_burst_flush(nprof_burst_t *b);

#endif
