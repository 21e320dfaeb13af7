/* gpu_train.h — the harness's CUDA training loop (gpu_train.cu; a build
 * without nvcc has stubs in cuda_none.c that fail).
 *
 * The model is the CPU model's: same params, same flat weight layout, same
 * initial weights (copied from struct model), run with kernels/cuda/ops.h and
 * cuBLAS on a compute stream.
 *
 *   loader (pinned host buffers from gpu_host_alloc)
 *     └─ preload thread: cudaMemcpyAsync of each batch's payload on a copy
 *        stream into one of --prefetch device buffers, ahead of use
 *   compute stream: forward, loss, backward; an event per ready bucket
 *   comm stream:   waits on that event, ncclAllReduce of the bucket (in place
 *                  where its gradients are contiguous, else through a bucket
 *                  buffer), overlapping the rest of backward
 *   compute stream: waits for the comm stream, SGD (lr / world: NCCL sums)
 *
 * Buckets follow ddp_plan_buckets (ddp.h): reverse parameter order, then
 * rebuilt after the first step in the ready order seen.  Every wait on the
 * GPU is a poll with a deadline (--timeout): a peer that died or hangs makes
 * the waiting rank abort its NCCL communicator and fail with a message
 * naming the peer, as PyTorch's NCCL watchdog does.
 */
#ifndef NODETUNE_HARNESS_GPU_TRAIN_H
#define NODETUNE_HARNESS_GPU_TRAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "comm.h"
#include "loader.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gpu_train_config {
	int batch;                 /* samples per micro-batch (this rank) */
	int accum;                 /* micro-batches per step */
	float lr;
	double bucket_mb, first_bucket_mb;
	bool overlap;
	double timeout_s;
	int prefetch;              /* device batch buffers */
	bool frozen;               /* the loader hands out one batch: copy it once */
};

/* What one step took.  GPU phases are timed with CUDA events on their own
 * streams; data_wait_ms is host time waiting for a batch on the device. */
struct gpu_step {
	double data_wait_ms, h2d_ms, fwd_ms, bwd_ms, comm_exposed_ms, comm_ms, opt_ms;
	double loss_sum;           /* sum of this rank's sample losses */
};

/* This rank's GPU: local_rank modulo the devices visible, for the calling
 * thread.  0 with why naming it, -1 with why. */
int gpu_select(int local_rank, char *why, size_t why_size);

/* Page-locked host memory (cudaHostAlloc) for the loader's buffers. */
void *gpu_host_alloc(size_t bytes);
void gpu_host_free(void *p);

struct gpu_train;

/* Weights from m (every rank's copy must already be rank 0's); NCCL set up
 * over comm (its id broadcast through comm) when world > 1; the preload
 * thread started on ld.  NULL with why. */
struct gpu_train *gpu_train_create(const struct gpu_train_config *cfg, struct model *m, struct comm *comm,
				   struct loader *ld, char *why, size_t why_size);

/* One step: accum micro-batches and the reduction and SGD.  0, or -1 with
 * why; *bad_data is set when the failure is the loader's (a corrupt shard). */
int gpu_train_step(struct gpu_train *t, struct gpu_step *out, bool *bad_data, char *why, size_t why_size);

/* Rebuild the buckets in the ready order of the last step. */
void gpu_train_rebuild(struct gpu_train *t);
int gpu_train_buckets(const struct gpu_train *t);

/* The weights back into the host model's buffer (for --dump-weights). */
int gpu_train_fetch_weights(struct gpu_train *t, char *why, size_t why_size);

/* H2D bandwidth in GB/s: the loader's copies so far (bytes over copy time),
 * and the reference measured at create time: cudaMemcpy of the same size
 * from a cudaHostAlloc buffer (0 when not measured). */
void gpu_train_h2d(const struct gpu_train *t, double *loader_gbps, double *pinned_gbps);

/* The device's name, e.g. "NVIDIA H200". */
const char *gpu_train_device(const struct gpu_train *t);

void gpu_train_free(struct gpu_train *t);

#ifdef __cplusplus
}
#endif

#endif
