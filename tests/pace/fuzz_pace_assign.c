/*
 * libFuzzer target for the assignment-file parser (outside input: the file the
 * Local Scheduler writes). Build and run: tests/pace/fuzz.sh [SECONDS].
 * Any input must either parse and validate, or fail with a message; never crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pace_assign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	pace_assign_t a;
	hm_err_t err = {0};

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	pace_assign_clear(&a);
	if (pace_assign_parse_text(&a, text, "fuzz", &err) == HM_OK &&
	    pace_assign_validate(&a, "fuzz", &err) == HM_OK && a.present && !a.off) {
		/* A validated assignment keeps the invariants the runtime relies on. */
		if (a.period_us <= 0 || a.shift_us >= a.period_us || pace_assign_guard_us(&a) < 0 ||
		    pace_assign_guard_us(&a) >= a.period_us)
			abort();
	} else if (err.rc != HM_OK && err.msg[0] == '\0') {
		abort(); /* every failure explains itself */
	}
	free(text);
	return 0;
}
