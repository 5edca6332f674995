/*
 * libFuzzer target for the node agent's reader of report files (outside input:
 * files the job's user writes). Build and run: tests/pace/fuzz.sh [SECONDS].
 * Any input either parses or fails with a message; a parsed report differences
 * with itself to an empty window and with nothing to finite, non-negative means.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "pace_report_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pace_report_t r;
	pace_window_t w, acc = {0};
	hm_err_t err = {0};

	if (pace_report_parse((const char *)data, size, "fuzz", &r, &err) != HM_OK) {
		if (err.msg[0] == '\0')
			abort(); /* every failure explains itself */
		return 0;
	}
	if (r.version < PACE_REPORT_MIN_VERSION)
		abort();
	if (pace_report_window(&r, &r, &w, &err) != HM_OK || w.samples != 0 || w.restarted)
		abort();
	if (pace_report_window(NULL, &r, &w, &err) != HM_OK || w.samples != r.iter_n)
		abort();
	pace_window_add(&acc, &w);
	pace_window_add(&acc, &w);
	if (!isfinite(acc.iter_us) || acc.iter_us < 0 || !isfinite(acc.iter_sd_us) ||
	    acc.iter_sd_us < 0 || !isfinite(acc.burst_us) || !isfinite(acc.compute_us))
		abort();
	return 0;
}
