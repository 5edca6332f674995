/*
 * nccl_comm.h - the communicators the interposer has seen: which one carries the
 * job's cross-node traffic (the paced one; the others are never held), and each
 * one's iteration detection and hold state. Internal to libharmonics-nccl.so.
 *
 * Reach: a communicator is cross-node when fewer of its ranks run on this node
 * than it has. Each rank, just before the real creation call, appends one byte
 * to a node-local file named after the communicator's key (the hash of its
 * ncclUniqueId, or of its parent's key, split ordinal and color); creation
 * returns only once every rank has entered it, so at the first collective the
 * file's size is the number of the communicator's ranks on this node. The file
 * lives in HARMONICS_NCCL_PEER_DIR, else beside HARMONICS_ASSIGN_FILE (the
 * job's per-node directory, emptied by the node agent when the job ends); its
 * name carries the node (SLURMD_NODENAME, else the host name) and the step.
 * Without a directory the reach stays unknown (one node only: local).
 * HARMONICS_NCCL_REACH=cross makes every communicator count as cross-node (a
 * site that paces NVLink traffic too; a one-GPU check).
 */
#ifndef NCCL_COMM_H
#define NCCL_COMM_H

#include <stdbool.h>
#include <stdint.h>

#include <nccl.h>

typedef enum { HM_REACH_UNKNOWN = 0, HM_REACH_LOCAL, HM_REACH_CROSS } hm_reach_t;

typedef struct hm_nccl_comm {
	ncclComm_t comm; /* NULL: a free entry */
	uint64_t key;    /* the same on every rank; 0 when unknown */
	int nranks;      /* -1 until known */
	int local;       /* its ranks on this node; -1 unknown */
	hm_reach_t reach;
	bool resolved;  /* reach looked at (first collective) */
	bool retired;   /* destroyed: reused only when the table is full */
	int class_prio; /* class it was created with; -1 none or not ours */
	int splits;     /* children made from it so far (their keys) */
	/* The calling threads' side, under the table's lock. */
	int64_t seq; /* collectives called on it */
	int64_t last_call_us;
	int64_t seen_marks;
	bool held; /* its current iteration has a hold: its collectives get end stamps */
	int64_t hold_seq; /* seq of the iteration's first collective (atomic: the trace) */
	/* The stream's side (host functions): atomics. */
	int64_t slot_prev_us; /* slot its previous burst applied; HM_PACE_NO_SLOT none */
	int64_t end_prev_us;  /* end of its previous burst's last collective; 0 none */
} hm_nccl_comm_t;

/* Keys common to all ranks: of a unique id; of a parent's child (split/shrink). */
uint64_t hm_nccl_key_id(const ncclUniqueId *id);
uint64_t hm_nccl_key_child(uint64_t parent_key, int ordinal, int color);

/* Before the real creation: count this rank in the node's file for key (best effort). */
void hm_nccl_comm_announce(uint64_t key);

/* After a successful creation (comm non-NULL): remember it. nranks -1: ask NCCL
 * later (ncclCommCount). reach: LOCAL when known (ncclCommInitAll), else UNKNOWN. */
void hm_nccl_comm_created(ncclComm_t comm, uint64_t key, int nranks, hm_reach_t reach,
			  int class_prio);

/* Key and class of comm (0 / -1 when unknown), and the next split ordinal. */
void hm_nccl_comm_parent(ncclComm_t comm, uint64_t *key, int *ordinal, int *class_prio);

/* At destroy/abort. */
void hm_nccl_comm_forget(ncclComm_t comm);

/*
 * A collective is called on comm (now_us; marks: hm_pace_iter_begin calls so
 * far; gap_us: the gap that starts an iteration). Returns the entry when comm is
 * the paced communicator (the cross-node one with the most ranks, the first
 * such; when none is known cross-node, the unknown one with the most ranks;
 * never a local one), else NULL: nothing more is done for the call. *fresh:
 * this collective starts an iteration of comm (its held flag is cleared).
 */
hm_nccl_comm_t *hm_nccl_comm_step(ncclComm_t comm, int64_t now_us, int64_t marks, int64_t gap_us,
				  bool *fresh);

/* Trace (HARMONICS_NCCL_TRACE=PATH, "%r" the rank): one line, printf-like; is it on? */
bool hm_nccl_tracing(void);
void hm_nccl_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
