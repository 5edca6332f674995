/*
 * libFuzzer target for the assignment-file parser (outside input: the file the
 * node agent writes) and the slot plan over what it accepts. Build and run:
 * tests/pace/fuzz.sh [SECONDS]. Any input must either parse and validate, or fail
 * with a message; never crash. A validated assignment keeps the invariants the
 * runtime relies on, and the plan returns a slot on the governing grid, after the
 * last one used.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hm_pace.h"
#include "pace_assign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_sched(const pace_sched_t *s)
{
	if (pace_sched_kind(s) == PACE_KIND_SLOTTED &&
	    (s->shift_us >= s->period_us || pace_sched_guard_us(s) < 0 ||
	     pace_sched_guard_us(s) >= s->period_us || s->origin_us < 0))
		abort();
}

/* Plan a few ready times around the switch and check every slot. */
static void check_plan(const pace_assign_t *a)
{
	int64_t t = a->has_next ? a->next_effective_us : a->cur.origin_us;
	int64_t after = HM_PACE_NO_SLOT;

	for (int64_t d = -3000000; d <= 3000000; d += 750000) {
		int64_t r = t + d, slot;
		long de = -1;
		const pace_sched_t *g;

		slot = pace_assign_plan(a, r, after, -1, &de);
		if (slot == HM_PACE_NO_SLOT)
			continue;
		if (after != HM_PACE_NO_SLOT && slot <= after)
			abort(); /* a slot is used once */
		g = pace_assign_at(a, slot);
		if (pace_sched_kind(g) == PACE_KIND_SLOTTED) {
			if ((slot - g->origin_us - g->shift_us) % g->period_us != 0)
				abort(); /* on the governing grid */
			if (slot + pace_sched_guard_us(g) < r)
				abort(); /* never a slot the burst is too late for */
		} else if (pace_sched_kind(g) != PACE_KIND_DELAY || de != g->epoch) {
			abort(); /* only a delay is a slot off the grid */
		}
		after = slot;
	}
}

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
	    pace_assign_validate(&a, "fuzz", &err) == HM_OK && a.present) {
		check_sched(&a.cur);
		if (a.has_next)
			check_sched(&a.next);
		if (pace_assign_max_wait_us(&a) < 0)
			abort();
		check_plan(&a);
	} else if (err.rc != HM_OK && err.msg[0] == '\0') {
		abort(); /* every failure explains itself */
	}
	free(text);
	return 0;
}
