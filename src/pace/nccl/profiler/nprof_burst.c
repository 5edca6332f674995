/* nprof_burst.c - bursts from kernel intervals (nprof_burst.h). */
#include "nprof_burst.h"

static uint64_t complete(nprof_burst_t *b)
{
	uint64_t len = b->end_ns - b->start_ns;

	b->bursts++;
	b->burst_sum_ns += len;
	b->start_ns = b->end_ns = 0;
	return len;
}

uint64_t nprof_burst_kernel(nprof_burst_t *b, uint64_t start_ns, uint64_t stop_ns, uint64_t gap_ns)
{
	uint64_t done = 0;

	if (!start_ns || stop_ns < start_ns)
		return 0;
	b->kernels++;
	if (b->end_ns && stop_ns + gap_ns < b->start_ns) {
		b->stale++; /* a late report from a burst already complete */
		return 0;
	}
	if (b->end_ns && start_ns > b->end_ns + gap_ns)
		done = complete(b);
	if (!b->end_ns) {
		b->start_ns = start_ns;
		b->end_ns = stop_ns;
		return done;
	}
	if (start_ns < b->start_ns)
		b->start_ns = start_ns;
	if (stop_ns > b->end_ns)
		b->end_ns = stop_ns;
	return done;
}

uint64_t nprof_burst_flush(nprof_burst_t *b)
{
	return b->end_ns ? complete(b) : 0;
}
