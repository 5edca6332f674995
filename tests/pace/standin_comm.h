/*
 * standin_comm.h - STAND-IN communicators over local sockets, inside the stand-in
 * NCCL/CUDA library (tests only; standin_comm.c). Internal to the stand-in.
 */
#ifndef STANDIN_COMM_H
#define STANDIN_COMM_H

#include <nccl.h>

/* A new id whose root (a thread of this process) waits on a loopback port. 0 / -1. */
int standin_unique_id(ncclUniqueId *id);
/* Join id's communicator: returns 1 once all nranks joined (*comm set), 0 when id is
 * not a stand-in socket id (record-only comm), -1 on failure. */
int standin_comm_init(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank);
/* A collective's barrier, on the stream's worker; nothing for a record-only comm. */
void standin_comm_barrier(ncclComm_t comm);
/* 0 and the value, or -1 for a record-only comm. */
int standin_comm_count(ncclComm_t comm, int *n);
int standin_comm_rank(ncclComm_t comm, int *r);
void standin_comm_destroy(ncclComm_t comm);

#endif
