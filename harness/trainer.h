/* SPDX-License-Identifier: MIT */
/* trainer.h — the harness engine's contract with its trainer rows.
 *
 * The engine (engine.c) owns the options, the set-up that every device
 * shares (comm, model, the initial broadcast, the loader, --inject), the
 * step loop and its timing, the per-step records and the summary.  What
 * differs between devices is one row of struct trainer_ops, chosen by
 * --device (nccl-tests' struct testColl):
 *
 *   cpu_trainer   cpu_train.c: the model on the CPU kernels, DDP reducer
 *                 with a communication thread (ddp.h)
 *   cuda_trainer  gpu_train.cu: the model on the GPU, NCCL on a comm
 *                 stream, a preload copy stage; cuda_none.c supplies a row
 *                 that fails cleanly in builds without CUDA
 *
 * Every hook that can fail returns 0 or a negative errno and fills err
 * (common/nt_err.h) with one line that the engine prints behind
 * "nodetune-harness: rank R: ".
 */
#ifndef NODETUNE_HARNESS_TRAINER_H
#define NODETUNE_HARNESS_TRAINER_H

#include <stdbool.h>
#include <stddef.h>

#include "comm.h"
#include "inject.h"
#include "loader.h"
#include "model.h"
#include "nt_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one configuration: the options as parsed (engine.c's option table),
 * read by the engine and by both trainer rows. */
struct trainer_config {
	/* the model and the optimizer */
	struct model_config model;
	const char *model_name;
	int batch;                 /* samples per micro-batch (this rank) */
	int accum;                 /* micro-batches per step */
	double lr;
	unsigned long long seed;
	/* the reducer */
	double bucket_mb, first_bucket_mb;
	bool overlap;
	double timeout_s;          /* a peer silent this long is fatal */
	/* the loader */
	int workers, prefetch, zstd_level;   /* workers 0: chosen in set-up (loader_default_workers) */
	bool pin, frozen;
	const char *data;          /* shard directory, NULL: synthetic */
	/* the run */
	int steps, warmup, blas_threads;
	const char *device, *comm;
	const char *json, *dump, *inject;
	int inject_rank;           /* -1: every rank */
	bool quiet;
	const char *write_data;    /* --write-data DIR --samples N: write, exit */
	unsigned long long samples;
};

/* One step's record: phases in ms, and the step's global mean loss. */
struct step_rec {
	double data_wait, h2d, fwd, bwd, comm_exposed, comm, opt, total, loss;
};

/* What a row reports for the summary. */
struct trainer_info {
	int buckets;
	bool comm_boosted;         /* the communication thread runs raised */
	const char *gpu_name;      /* NULL: no "gpu" part in the summary */
	double h2d_gbps, pinned_gbps;
};

struct trainer;                    /* a row's own state, opaque to the engine */

struct trainer_ops {
	const char *name;          /* the --device value */
	/* Before comm is set up: whether the device is usable (NULL: it is). */
	int (*probe)(struct nt_err *err);
	/* After comm, before any memory is allocated: bind this rank to its
	 * device (NULL: nothing to do). */
	int (*select)(const struct comm *c, struct nt_err *err);
	/* The loader's buffers come from here when set (page-locked memory). */
	void *(*host_alloc)(size_t bytes);
	void (*host_free)(void *p);
	/* Train m (every rank already holds rank 0's weights) on the batches
	 * of ld, reducing over c.  NULL with err. */
	struct trainer *(*create)(const struct trainer_config *cfg, struct model *m, struct comm *c,
				  struct loader *ld, struct nt_err *err);
	/* One step (accum micro-batches, the reduction, the optimizer): its
	 * phases into r, calling the inject hooks of step s where the row's
	 * compute ends (trainer_inject_compute) and inject_step_end before
	 * its timed part ends.  On failure, *ret_bad_data says whether the
	 * input data was at fault (a corrupt shard: exit 2, else 3). */
	int (*step)(struct trainer *t, int s, struct inject *inj, struct step_rec *r, bool *ret_bad_data,
		    struct nt_err *err);
	/* The global mean loss of the step just done into r->loss (outside
	 * the timed part). */
	int (*loss)(struct trainer *t, struct step_rec *r, struct nt_err *err);
	/* After the first step: rebuild the buckets in the ready order seen. */
	void (*rebuild)(struct trainer *t);
	/* x[0..n) summed over the ranks, in the row's collective order. */
	int (*allreduce_d)(struct trainer *t, double *x, size_t n, struct nt_err *err);
	void (*info)(const struct trainer *t, struct trainer_info *ret);
	/* The trained weights into the host model's buffer, for
	 * --dump-weights (NULL: they are there already). */
	int (*fetch_weights)(struct trainer *t, struct nt_err *err);
	/* NULL is a no-op; before the loader stops (a row may read it). */
	void (*free)(struct trainer *t);
};

extern const struct trainer_ops cpu_trainer;
extern const struct trainer_ops cuda_trainer;

/* Run the inject hook that stretches compute (--inject slow:PCT) after
 * compute_ms of step s, counting the time it takes in r->bwd. */
void trainer_inject_compute(struct inject *inj, int s, double compute_ms, struct step_rec *r);

#ifdef __cplusplus
}
#endif

#endif
