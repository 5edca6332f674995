/*
 * hm_pace.h - libharmonics-pace: hold each iteration's communication burst to
 * the job's assigned slot and measure the real iteration profile.
 *
 * Use from a training loop (or the NCCL interposer, or harmonics-emujob):
 *
 *   hm_pace_t *p = hm_pace_init();          // reads the environment (hm_pace_env.h)
 *   for (;;) {
 *           hm_pace_iter_begin(p);          // start of an iteration (compute)
 *           ...compute...
 *           hm_pace_comm_begin(p);          // waits until the slot (or not: fail-open)
 *           ...collectives...
 *           hm_pace_comm_end(p);
 *   }
 *   hm_pace_fini(p);                        // writes the final report
 *
 * Fail-open: with no assignment, HARMONICS_MODE=off, a garbage value or a stale
 * assignment, the runtime never waits; a garbage or stale assignment prints one
 * warning line on stderr ("harmonics-pace: ..."). Measurement always runs.
 *
 * Clocks: slots are on CLOCK_REALTIME (cluster clocks synchronised by NTP/PTP);
 * all times are microseconds (int64_t _us).
 *
 * Threads: every call is thread-safe (one mutex per handle, uncontended in a
 * training loop); the NCCL interposer calls comm_begin/comm_end from the CUDA
 * host-function thread while the application thread calls iter_begin.
 * Exported symbols: hm_pace_* only.
 */
#ifndef HM_PACE_H
#define HM_PACE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct hm_pace hm_pace_t;

/*
 * Slot ids. A slot id IS the slot's start time: CLOCK_REALTIME microseconds since
 * the Unix epoch (API version 1; in version 0 it was an index on the grid). So a
 * planner that hands its slot id to other ranks makes them all wait for the same
 * instant, whichever assignment (current or next) each of them holds.
 * HM_PACE_NO_SLOT means "do not wait".
 */
#define HM_PACE_NO_SLOT INT64_MIN

/* Measured profile, the same figures that go into the report file. */
typedef struct {
	int64_t iterations;       /* iterations begun */
	int64_t bursts;           /* bursts begun */
	int64_t paced;            /* bursts held to a slot */
	int64_t late;             /* bursts started after their slot, within the guard */
	int64_t skipped;          /* slots passed over because the burst was too late */
	int64_t unpaced;          /* bursts that did not wait (fail-open, off, stale, free) */
	double period_us;         /* mean interval between iteration starts */
	double burst_offset_us;   /* mean burst start minus iteration start (incl. wait) */
	double burst_us;          /* mean burst length (comm_begin release -> comm_end) */
	double wait_us;           /* mean time held waiting for the slot */
	double slot_error_us;     /* mean |burst start - slot| over paced bursts */
	double slot_error_max_us; /* max |burst start - slot| */
	/*
	 * Cumulative counters since hm_pace_init (report version 2): a reader differences
	 * two reads for exact window statistics. Unsigned; sums wrap modulo 2^64, so
	 * difference them with unsigned subtraction.
	 */
	uint64_t iter_n;          /* iteration period samples */
	uint64_t iter_sum_us;     /* sum of the samples */
	uint64_t iter_sq_sum_us2; /* sum of their squares, us^2 */
	uint64_t compute_n; /* compute samples: burst ready - iteration start, waits excluded */
	uint64_t compute_sum_us;
	uint64_t burst_n;      /* bursts with an end stamp */
	uint64_t burst_sum_us; /* their lengths (release -> last comm_end) */
	uint64_t slot_misses;  /* skipped slots + late bursts */
	int64_t applied_epoch; /* EPOCH of the last burst an assignment governed; -1 before any */
	int64_t burst_epoch;   /* EPOCH that governed the last burst; -1 when none (stale, none) */
} hm_pace_stats_t;

/*
 * Create a runtime from the environment. Never fails except on out-of-memory
 * (then NULL, and every hm_pace_* call accepts NULL as "do nothing").
 * Owned by the caller: release with hm_pace_fini().
 */
hm_pace_t *hm_pace_init(void);

/* Write the final report (when HARMONICS_REPORT_FILE is set) and free. NULL is fine. */
void hm_pace_fini(hm_pace_t *p);

/* True when an assignment is present, valid and not stale now. */
bool hm_pace_active(hm_pace_t *p);

/* Start of an iteration. Also polls HARMONICS_ASSIGN_FILE (at most every 100 ms). */
void hm_pace_iter_begin(hm_pace_t *p);

/*
 * Decide the slot for a burst whose participants are all ready at ready_us
 * (CLOCK_REALTIME): the first slot s with s + guard >= ready_us; with a pending
 * next assignment (switch time T), the current one's slot if it starts before T,
 * else the next one's first slot at or after T (docs/pacing.md, contract C). A
 * one-time delay (period 0, shift > 0) gives ready_us + shift once per epoch.
 * A multi-rank job plans once (e.g. rank 0, with the maximum ready time over
 * ranks) and hands the slot id to every rank so that all take the same decision.
 * Also polls the assignment file and writes the periodic report.
 * Returns the slot id (its start time, never at or before the last slot used), or
 * HM_PACE_NO_SLOT when the burst must not wait (inactive, off, free running).
 */
int64_t hm_pace_plan(hm_pace_t *p, int64_t ready_us);

/*
 * hm_pace_plan for a burst of a collective whose ranks may be skewed (the NCCL
 * interposer): the slot follows from what every rank of the collective shares,
 * the assignment, the slot the same communicator's previous burst used
 * (after_slot, HM_PACE_NO_SLOT for none) and that burst's end (from_us, which
 * the collective makes common to its ranks), never from this rank's ready time,
 * so that all ranks apply the same slot: the first slot after after_slot that
 * starts at or after from_us. A rank ready after that slot goes at once (the
 * others wait for it), unless it is more than max(guard, period - guard) behind:
 * then its own next slot, as hm_pace_plan (the next slot is within its guard).
 * schedule without a grid: hm_pace_plan(p, ready_us). docs/pacing.md, "one slot
 * for all ranks".
 */
int64_t hm_pace_plan_shared(hm_pace_t *p, int64_t ready_us, int64_t from_us, int64_t after_slot);

/* The priority class the paced NCCL communicator actually carries ([0, 7]; -1 none
 * or unknown), set by the interposer at its creation: the report's NCCL_CLASS. */
void hm_pace_set_nccl_class(hm_pace_t *p, int prio);

/* Start time (CLOCK_REALTIME us) of a slot id: the id itself; -1 for HM_PACE_NO_SLOT.
 * p is not used (NULL is fine); kept for source compatibility. */
int64_t hm_pace_slot_us(hm_pace_t *p, int64_t slot);

/* Slot period of the assignment in force now, microseconds; 0 when free running,
 * off, stale or without an assignment. (Replaces slot_us(1) - slot_us(0).) */
int64_t hm_pace_period_us(hm_pace_t *p);

/*
 * Begin a burst in slot `slot` (from hm_pace_plan, here or on another rank): sleep
 * until that time (clock_nanosleep TIMER_ABSTIME, restarted on EINTR), record the
 * burst start. HM_PACE_NO_SLOT, a slot already past, an inactive runtime, or a slot
 * further away than the assignment allows (two periods plus the guard; see
 * docs/pacing.md): no wait.
 */
void hm_pace_comm_begin_slot(hm_pace_t *p, int64_t slot);

/* hm_pace_comm_begin_slot(p, hm_pace_plan(p, now)). */
void hm_pace_comm_begin(hm_pace_t *p);

/* End of the burst (now, or at end_us CLOCK_REALTIME for deferred stamps). */
void hm_pace_comm_end(hm_pace_t *p);
void hm_pace_comm_end_at(hm_pace_t *p, int64_t end_us);

/*
 * A burst length measured by NCCL's own profiler events (libnccl-profiler-harmonics.so:
 * first kernel start to last kernel end of one iteration's collectives on the
 * measured communicator, GPU timestamps). From the first call on, these alone
 * make BURST_N / BURST_SUM_US: hm_pace_comm_end_at then only marks the burst end
 * (for the compute measurement), so the two sources never double count.
 * Negative lengths are ignored; NULL is fine.
 */
void hm_pace_burst_measured(hm_pace_t *p, int64_t burst_us);

/* Current measured profile. */
void hm_pace_stats(hm_pace_t *p, hm_pace_stats_t *out);

/*
 * Write the report now to HARMONICS_REPORT_FILE (atomically: temp + rename).
 * Returns 0, or -1 with errno when it could not be written (or none is configured:
 * ENOENT). The runtime also writes it once per second from hm_pace_iter_begin.
 */
int hm_pace_report(hm_pace_t *p);

/* Priority class [0, 7] of the assignment in force now, or -1 when none or off
 * (for NCCL_IB_TC/SL and ncclConfig_t.trafficClass). */
int hm_pace_prio(hm_pace_t *p);

/*
 * Mark the outgoing traffic of socket fd (IPv4) with the class in force:
 * IP_TOS = hm_pace_class_dscp(class) << 2 (hm_pace_env.h), so switches (and tc
 * filters) can queue it by class; Linux also derives the socket's local
 * priority from it. Call again when the class may have changed. Returns the
 * DSCP set, -1 when there is no class (nothing is changed: the socket keeps
 * what it carries), or -2 with errno when setsockopt failed.
 */
int hm_pace_mark_socket(hm_pace_t *p, int fd);

/* CLOCK_REALTIME now, microseconds since the Unix epoch. */
int64_t hm_pace_now_us(void);

/* Process-wide runtime shared by the NCCL interposer and explicit callers
 * (created on first use, freed at exit). Never NULL except on out-of-memory. */
hm_pace_t *hm_pace_default(void);

/* Number of hm_pace_iter_begin() calls on the default runtime (for the interposer's
 * explicit iteration marks). */
int64_t hm_pace_iter_marks(hm_pace_t *p);

#endif
