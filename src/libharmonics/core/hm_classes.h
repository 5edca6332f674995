/*
 * hm_classes.h - the one range of priority classes: 0 (highest) to
 * HM_PRIO_LEVELS_MAX - 1, everywhere (harmonics.conf PriorityLevels, the
 * policies, the wire, the runtime's HARMONICS_PRIO and its DSCP map). Eight is
 * what NICs and switches commonly offer (802.1p, DSCP classes).
 */
#ifndef HM_CLASSES_H
#define HM_CLASSES_H

#define HM_PRIO_LEVELS_MAX 8
#define HM_PRIO_MAX        (HM_PRIO_LEVELS_MAX - 1)

#endif
