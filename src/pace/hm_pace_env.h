/*
 * hm_pace_env.h - the assignment contract between its writers (the SPANK plugin
 * at launch through the environment, the node agent through the assignment file)
 * and the pacing runtime in the tasks (reader). docs/pacing.md is the reference.
 *
 * Every value is a plain decimal integer unless noted. Times are microseconds;
 * absolute times are CLOCK_REALTIME microseconds since the Unix epoch.
 * Slots of a job are at ORIGIN_US + SHIFT_US + k * PERIOD_US, k integer.
 */
#ifndef HM_PACE_ENV_H
#define HM_PACE_ENV_H

#include <stdlib.h>

#include "hm_classes.h"

/* Policy name that produced the assignment, or "off": never wait. */
#define HM_PACE_ENV_MODE "HARMONICS_MODE"
/* Slurm job id the assignment belongs to (informational, echoed in the report). */
#define HM_PACE_ENV_JOB_ID "HARMONICS_JOB_ID"
/* Slot period, microseconds, [0, 3.6e9]; 0 = free running (no slots). */
#define HM_PACE_ENV_PERIOD_US "HARMONICS_PERIOD_US"
/* Shift of this job's slot within the period, microseconds, [0, PERIOD_US);
 * with PERIOD_US=0 a one-time delay of the first burst (Cassini), [0, 3.6e9]. */
#define HM_PACE_ENV_SHIFT_US "HARMONICS_SHIFT_US"
/* Slot origin, CLOCK_REALTIME microseconds since the Unix epoch. */
#define HM_PACE_ENV_ORIGIN_US "HARMONICS_ORIGIN_US"
/* Late tolerance, microseconds: a burst later than slot + GUARD_US waits for the next
 * slot. Ignored (any value accepted) with PERIOD_US=0. */
#define HM_PACE_ENV_GUARD_US "HARMONICS_GUARD_US"
/* Priority class, 0 = highest, [0, 7]; mapped to NCCL_IB_TC / NCCL_IB_SL. */
#define HM_PACE_ENV_PRIO "HARMONICS_PRIO"
/* Scheduling epoch id that produced the assignment, >= 0. */
#define HM_PACE_ENV_EPOCH "HARMONICS_EPOCH"
/* After this CLOCK_REALTIME time (us since the epoch) the assignment (current and
 * next) is stale: never wait. */
#define HM_PACE_ENV_VALID_UNTIL_US "HARMONICS_VALID_UNTIL_US"

/* The next assignment, pending until NEXT_EFFECTIVE_US (the switch time, CLOCK_REALTIME
 * us); same meaning and ranges as the keys above. EFFECTIVE_US, MODE and EPOCH are
 * required once any NEXT_* key is given. */
#define HM_PACE_ENV_NEXT_EFFECTIVE_US "HARMONICS_NEXT_EFFECTIVE_US"
#define HM_PACE_ENV_NEXT_MODE         "HARMONICS_NEXT_MODE"
#define HM_PACE_ENV_NEXT_PERIOD_US    "HARMONICS_NEXT_PERIOD_US"
#define HM_PACE_ENV_NEXT_SHIFT_US     "HARMONICS_NEXT_SHIFT_US"
#define HM_PACE_ENV_NEXT_ORIGIN_US    "HARMONICS_NEXT_ORIGIN_US"
#define HM_PACE_ENV_NEXT_GUARD_US     "HARMONICS_NEXT_GUARD_US"
#define HM_PACE_ENV_NEXT_PRIO         "HARMONICS_NEXT_PRIO"
#define HM_PACE_ENV_NEXT_EPOCH        "HARMONICS_NEXT_EPOCH"

/* Optional path of a file of the same KEY=VALUE lines; replaced atomically (rename) on update. */
#define HM_PACE_ENV_ASSIGN_FILE "HARMONICS_ASSIGN_FILE"
/* Optional path where the runtime writes its measured profile (KEY=VALUE, see docs);
 * "%r" is replaced by the rank. */
#define HM_PACE_ENV_REPORT_FILE "HARMONICS_REPORT_FILE"

/* Runtime-only knobs (not written by the SPANK plugin). */
/* Rank of this task for the report (default: SLURM_PROCID, else 0). */
#define HM_PACE_ENV_RANK "HARMONICS_RANK"
/* Interposer: gap between collectives that starts a new iteration, microseconds. */
#define HM_PACE_ENV_NCCL_GAP_US "HARMONICS_NCCL_GAP_US"

/* The value of HARMONICS_MODE that disables pacing. */
#define HM_PACE_MODE_OFF "off"

/* The class tables harmonics.conf sets (ClassDscp=, ClassSL=), exported by
   the SPANK plugin to the tasks; unset or unreadable: hm_classes.h's defaults. */
#define HM_PACE_ENV_CLASS_DSCP "HARMONICS_CLASS_DSCP"
#define HM_PACE_ENV_CLASS_SL   "HARMONICS_CLASS_SL"

/* Entry prio of the table in environment variable env, else of the default text. */
static inline int hm_pace_class_lookup(int prio, const char *env, const char *def, int max)
{
	int t[HM_PRIO_LEVELS_MAX];

	if (prio < 0 || prio >= HM_PRIO_LEVELS_MAX)
		return -1;
	if (!hm_class_table_parse(getenv(env), max, t) && !hm_class_table_parse(def, max, t))
		return -1;
	return t[prio];
}

/*
 * DSCP of priority class prio (HARMONICS_PRIO), or -1 outside [0, 7]. IP's TOS
 * byte and RoCE's traffic class are DSCP << 2. The switches' (or tc's) DSCP ->
 * queue map is site configuration (docs/admin-guide.md, "The fabric").
 */
static inline int hm_pace_class_dscp(int prio)
{
	return hm_pace_class_lookup(prio, HM_PACE_ENV_CLASS_DSCP, HM_CLASS_DSCP_DEFAULT,
				    HM_CLASS_DSCP_MAX);
}

/* InfiniBand service level of class prio, or -1 outside [0, 7]. */
static inline int hm_pace_class_sl(int prio)
{
	return hm_pace_class_lookup(prio, HM_PACE_ENV_CLASS_SL, HM_CLASS_SL_DEFAULT,
				    HM_CLASS_SL_MAX);
}

#endif
