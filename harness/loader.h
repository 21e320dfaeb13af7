/* SPDX-License-Identifier: MIT */
/* loader.h — the prefetching loader.
 *
 *   workers (--workers) ──encoded batches──> pin thread ──> ring of pinned
 *   buffers (--prefetch, allocated once) ──> the training loop
 *
 * Workers produce each batch as one contiguous serialized buffer (batch.h,
 * optionally zstd) from the synthetic generator or shard files.  The pin
 * thread checks and decodes them, in order, into buffers allocated once:
 * page-aligned, first touched by the loader (so they land on the rank's NUMA
 * node under its memory policy) and mlock'd where permitted, or, on a GPU,
 * from the host_alloc the GPU trainer passes (cudaHostAlloc).  --no-pin
 * decodes into a fresh malloc'd buffer per batch instead.  On the CPU the
 * pinned buffer is the device buffer; on a GPU the trainer's preload thread
 * copies each batch's payload (base, bytes: one contiguous range) to the
 * device on a copy stream (gpu_train.h).
 *
 * Batch k of this rank (k = step * accum + micro-batch) holds the global
 * samples (k * world + rank) * batch ... + batch - 1.
 */
#ifndef NODETUNE_HARNESS_LOADER_H
#define NODETUNE_HARNESS_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "nt_err.h"

#include "batch.h"
#include "data.h"

struct loader_config {
	struct data_spec spec;
	int batch;              /* samples per micro-batch on this rank */
	int rank, world;
	int workers;            /* >= 1 (unless frozen) */
	int prefetch;           /* pinned buffers, >= 1 */
	int zstd_level;         /* 0: uncompressed */
	bool pin;
	bool frozen;            /* one batch, reused: the data-path roofline */
	const char *data_dir;   /* NULL: synthetic */
	/* pinned buffers from here when set (cudaHostAlloc), else page-aligned
	 * and mlock'd; host_free gives them back */
	void *(*host_alloc)(size_t bytes);
	void (*host_free)(void *p);
};

struct loader_batch {
	struct batch_data data; /* tensors inside the (pinned) buffer */
	const void *base;       /* that buffer: the tensors are inside */
	size_t bytes;           /* [base, base + bytes) holds them all */
	uint64_t id;
	int slot;
};

struct loader;

/* The default worker count (no --workers) for a rank that may run on cpus
 * CPUs (its share of the host's when it is unbound and the local ranks
 * share them).  On the CPU, 2: the rank's CPUs compute, and the loader
 * keeps up with a training step there.  On a GPU the rank's CPUs do
 * little but feed it: every one left after the training, pin and copy
 * (preload) threads, at least 2 and at most 8 (on an H200 at batch 4096,
 * 2 workers gave 0.37-0.51 of the frozen-batch roofline, 8 gave
 * 0.95-0.99: bench/RESULTS.md section 7). */
int loader_default_workers(int cpus, bool gpu);

/* Start the threads.  NULL with err on error (bad data dir, no memory). */
struct loader *loader_start(const struct loader_config *cfg, struct nt_err *err);

/* The next batch in order; blocks.  *wait_ms: how long it blocked.
 * Returns 0, or -errno with err (a worker failed: -EINVAL a corrupt shard, ...).  A
 * failure stops the pipeline where it is met: batches already decoded are
 * still handed out, later ones never. */
int loader_next(struct loader *l, struct loader_batch **ret, double *wait_ms, struct nt_err *err);

/* Give a batch's buffer back. */
void loader_release(struct loader *l, struct loader_batch *b);

/* Stop and free; NULL is a no-op. */
void loader_stop(struct loader *l);

/* Whether the pinned buffers could be mlock'd (RLIMIT_MEMLOCK). */
bool loader_locked(const struct loader *l);

#endif
