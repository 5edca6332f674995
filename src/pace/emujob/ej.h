/*
 * ej.h - harmonics-emujob internals: an emulated data-parallel training job.
 * N ranks (processes) loop compute + a real ring all-reduce over TCP, with a
 * barrier that carries each rank's ready time up to rank 0 and the chosen slot
 * index back down, calling libharmonics-pace around the burst.
 *
 * Units: microseconds (_us), seconds (_s), bytes (_bytes).
 */
#ifndef EJ_H
#define EJ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hm_error.h"

typedef enum { EJ_COMPUTE_SLEEP, EJ_COMPUTE_BUSY } ej_compute_mode_t;

typedef struct {
	int nranks;         /* >= 1 */
	int rank;           /* [0, nranks) */
	int local;          /* > 0: fork this many ranks on loopback */
	char rdv_host[256]; /* rendezvous host (rank 0 listens there) */
	int rdv_port;       /* rendezvous TCP port */
	char model[64];     /* catalogue name or "" */
	double scale;       /* multiplies the model's bytes and compute */
	double bytes_scale; /* multiplies the model's bytes once more (a slower network) */
	double compute_s;   /* per-iteration compute */
	ej_compute_mode_t compute_mode;
	double jitter;    /* coefficient of variation of compute, [0, 0.5] (uniform) */
	double bytes;     /* all-reduce buffer size */
	int iterations;   /* measured iterations */
	int warmup;       /* extra iterations before them, not in the summary */
	double timeout_s; /* a silent peer for this long is an error */
	char tcp_cc[16];  /* per-socket congestion control, "" = system default */
	bool json;
	bool quiet;    /* no per-iteration lines */
	bool dry_run;  /* print the resolved job (JSON) and exit */
	int listen_fd; /* rank 0's rendezvous socket when inherited (--local), else -1 */
	char stop_file[256]; /* "" or: every rank ends after the iteration in which rank 0 saw it */
} ej_opts_t;

/* Parse argv (and SLURM_* defaults). HM_ERR_INVAL etc. with a message naming the
 * option, the bad value and what is accepted. *help set on --help. */
hm_rc_t ej_opts_parse(int argc, char **argv, ej_opts_t *o, bool *help, hm_err_t *err);
void ej_usage(FILE *f);

/* ---- network (ej_net.c) ---- */
typedef struct {
	int nranks, rank;
	int next_fd, prev_fd; /* ring neighbours, -1 when nranks == 1 */
	int up_fd;            /* rank > 0: control socket to rank 0 */
	int *down_fds;        /* rank 0: control sockets of ranks 1..n-1 (index = rank), owned */
	int timeout_ms;
} ej_net_t;

/* Rendezvous and ring setup; cleans up after itself on failure. */
hm_rc_t ej_net_open(ej_net_t *n, const ej_opts_t *o, hm_err_t *err);
void ej_net_close(ej_net_t *n); /* NULL-safe, idempotent */

/* A non-blocking listening socket on all addresses, port 0 = any; *port_out = the port. */
hm_rc_t ej_net_listen_any(int port, int *fd_out, int *port_out, hm_err_t *err);

/*
 * Barrier: every rank sends (iteration, ready_us) up; rank 0 calls plan(ctx,
 * max ready) and sends the slot down. Returns the slot in *slot on every rank,
 * and rank 0's *stop (in on rank 0, out on the others: the run ends here).
 */
typedef int64_t (*ej_plan_fn)(void *ctx, int64_t max_ready_us);
hm_rc_t ej_net_barrier(ej_net_t *n, uint32_t iter, int64_t ready_us, ej_plan_fn plan, void *ctx,
		       int64_t *slot, bool *stop, hm_err_t *err);

/* In-place sum all-reduce of count floats over the ring (reduce-scatter + all-gather). */
hm_rc_t ej_net_allreduce(ej_net_t *n, float *buf, size_t count, hm_err_t *err);

/* ---- the run (ej_run.c) ---- */
/* --dry-run: the resolved job and the traffic class it would use, as JSON. */
void ej_print_resolved(const ej_opts_t *o, FILE *out);
/* Run this rank to completion; rank 0 prints the results to out. */
hm_rc_t ej_run_rank(const ej_opts_t *o, FILE *out, hm_err_t *err);
/* Exit status of harmonics-emujob (--help, harmonics-emujob(1)). */
enum { EJ_EXIT_FAILED = 1, EJ_EXIT_USAGE = 2 };
/* --local: fork o->local ranks on 127.0.0.1 and wait for them. Exit status. */
int ej_run_local(ej_opts_t *o, FILE *out);

#endif
