/* comm.h — the collective backends of the harness, behind one small table
 * of operations: MPI (mpirun), or none (a single process).  NCCL joins it
 * in the CUDA build.  All calls after comm_init come from one thread (the
 * DDP communication thread), except at start and end. */
#ifndef NODETUNE_HARNESS_COMM_H
#define NODETUNE_HARNESS_COMM_H

#include <stddef.h>

struct comm {
	const char *name;          /* "mpi", "none" */
	int rank, world;
	int local_rank, local_size;
	/* in-place sum over all ranks; 0 or -1 with why */
	int (*allreduce_sum)(struct comm *c, float *buf, size_t n, char *why, size_t why_size);
	int (*allreduce_sum_d)(struct comm *c, double *buf, size_t n, char *why, size_t why_size);
	int (*bcast)(struct comm *c, void *buf, size_t bytes, int root, char *why, size_t why_size);
	int (*barrier)(struct comm *c);
	void (*abort)(struct comm *c, int code);
	void (*fini)(struct comm *c);
};

/* Set up the backend: "mpi", "none" or "auto" (mpi under mpirun, none
 * alone).  0, or -1 with why. */
int comm_init(struct comm *c, const char *kind, int *argc, char ***argv, char *why, size_t why_size);

/* What was compiled in, e.g. "Open MPI 4.1.4" or "no". */
const char *comm_mpi_version(void);

#endif
