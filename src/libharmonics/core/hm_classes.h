/*
 * hm_classes.h - the one range of priority classes: 0 (highest) to
 * HM_PRIO_LEVELS_MAX - 1, everywhere (harmonics.conf PriorityLevels, the
 * policies, the wire, the runtime's HARMONICS_PRIO and its DSCP map). Eight is
 * what NICs and switches commonly offer (802.1p, DSCP classes).
 */
#ifndef HM_CLASSES_H
#define HM_CLASSES_H

#include <stdbool.h>
#include <stdlib.h>

#define HM_PRIO_LEVELS_MAX 8
#define HM_PRIO_MAX        (HM_PRIO_LEVELS_MAX - 1)

/*
 * What each class is marked with on the wire (docs/admin-guide.md, "The
 * fabric"): a DSCP per class on Ethernet (IP and RoCE) and an InfiniBand
 * service level. The defaults keep every class off the code points of
 * unmarked traffic (DSCP 0, SL 0): EF, AF41, AF31, AF21, AF11, CS2, then CS1
 * ("scavenger") for the two lowest; SL = class + 1. harmonics.conf's
 * ClassDscp= and ClassSL= replace them (0 only when written there).
 */
#define HM_CLASS_DSCP_DEFAULT "46,34,26,18,10,16,8,8"
#define HM_CLASS_SL_DEFAULT   "1,2,3,4,5,6,7,8"
#define HM_CLASS_DSCP_MAX     63
#define HM_CLASS_SL_MAX       15

/* "a,b,...": exactly HM_PRIO_LEVELS_MAX integers 0..max (digits only) into out;
   false (out partly written) otherwise. */
static inline bool hm_class_table_parse(const char *s, int max, int out[HM_PRIO_LEVELS_MAX])
{
	for (int c = 0; c < HM_PRIO_LEVELS_MAX; c++) {
		char *end;
		long v;

		if (!s || *s < '0' || *s > '9')
			return false;
		v = strtol(s, &end, 10);
		if (v > max || end - s > 2 || *end != (c + 1 < HM_PRIO_LEVELS_MAX ? ',' : '\0'))
			return false;
		out[c] = (int)v;
		s = end + (*end == ',');
	}
	return true;
}

#endif
