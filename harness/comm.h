/* SPDX-License-Identifier: MIT */
/* comm.h — the collective backends of the harness, behind one small table
 * of operations: MPI (mpirun), TCP (the torchrun environment: RANK,
 * WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or none (a single process).  All calls after comm_init come from one thread (the
 * DDP communication thread), except at start and end. */
#ifndef NODETUNE_HARNESS_COMM_H
#define NODETUNE_HARNESS_COMM_H

#include <stddef.h>

#include "nt_err.h"

struct comm;

/* What a backend does: one const table per backend (mpi, tcp, none). */
struct comm_ops {
	const char *name;          /* "mpi", "tcp", "none" */
	/* in-place sum over all ranks; 0 or -errno with err */
	int (*allreduce_sum)(struct comm *c, float *buf, size_t n, struct nt_err *err);
	int (*allreduce_sum_d)(struct comm *c, double *buf, size_t n, struct nt_err *err);
	int (*bcast)(struct comm *c, void *buf, size_t bytes, int root, struct nt_err *err);
	int (*barrier)(struct comm *c);
	void (*abort)(struct comm *c, int code);
	void (*fini)(struct comm *c);
};

struct comm {
	const struct comm_ops *ops;
	void *priv;                /* the backend's own state */
	int rank, world;
	int local_rank, local_size;
};

/* Set up the backend: "mpi", "tcp", "none" or "auto" (mpi under mpirun,
 * tcp in a torchrun environment of more than one rank, none alone).
 * wait_s bounds the TCP rendezvous and MPI_Init (comm_deadline_set).  0,
 * or -errno with err. */
int comm_init(struct comm *c, const char *kind, int *argc, char ***argv, double wait_s, struct nt_err *err);

/* The TCP backend (comm_tcp.c): rendezvous at MASTER_ADDR:MASTER_PORT. */
int comm_tcp_setup(struct comm *c, double wait_s, struct nt_err *err);

/* A deadline on a blocking set-up step that has no timeout of its own
 * (MPI_Init, which waits for every rank; the first broadcast; NCCL's
 * init): when it is not cleared within wait_s seconds, SIGALRM writes
 * "nodetune-harness: [rank R: ]WHAT not done within --timeout (N s): a peer
 * rank stopped responding" to stderr and the process exits 3 (_exit: a
 * library blocked inside a collective cannot be unwound).  rank < 0: not
 * known yet.  One deadline at a time; comm_deadline_clear() ends it and
 * restores the previous SIGALRM handler. */
void comm_deadline_set(double wait_s, int rank, const char *what);
void comm_deadline_clear(void);

/* What was compiled in: "yes (MPI 3.1, Open MPI 4.1.4)", or "no (...why)"
 * (nodetune-harness --version's mpi: line). */
const char *comm_mpi_version(void);

#endif
