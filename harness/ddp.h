/* SPDX-License-Identifier: MIT */
/* ddp.h — data-parallel gradient reduction with bucketing and overlap.
 *
 * Gradients are grouped into buckets (cap --bucket-mb, default 25 MB; the
 * first bucket 1 MB), first in reverse parameter order, then, after the first
 * step, rebuilt in the order gradients were observed to become ready.  When
 * the last gradient of a bucket is ready, the bucket is handed to a
 * communication thread, which copies it into the bucket buffer, all-reduces
 * it (in place where the bucket's gradients are one contiguous range), while
 * backward goes on (overlap).  The gradients are then sums over ranks: the
 * optimizer multiplies by ddp_scale() (1/world) in the pass it makes anyway.  With
 * overlap off, every bucket is reduced after backward.  A micro-batch that
 * only accumulates (no sync) reduces nothing.
 */
#ifndef NODETUNE_HARNESS_DDP_H
#define NODETUNE_HARNESS_DDP_H

#include <stdbool.h>
#include <stddef.h>

#include "comm.h"
#include "model.h"

struct ddp_config {
	double bucket_mb;          /* cap */
	double first_bucket_mb;
	bool overlap;
	double timeout_s;          /* a reduction not done by then is fatal */
	int comm_nice;             /* nice value of the communication thread (-10) */
};

struct ddp;

/* NULL on out of memory.  grads: the model's flat gradient buffer. */
struct ddp *ddp_create(const struct ddp_config *cfg, struct comm *comm,
		       const struct model_param *params, int n_params, float *grads);
void ddp_free(struct ddp *d);

/* Start a micro-batch: sync = whether its gradients are reduced. */
void ddp_begin(struct ddp *d, bool sync);

/* Backward says param p's gradient is final (the model's on_ready). */
void ddp_on_ready(void *ctx, int p);

/* Wait until every bucket of this step is reduced.  *exposed_ms: the time
 * spent waiting here (communication not hidden behind backward);
 * *comm_ms: the time the communication thread spent in all-reduces.
 * Returns 0, or -errno with err (-ETIMEDOUT: a reduction not done within
 * timeout_s; else the code of the failed collective). */
int ddp_finish(struct ddp *d, double *exposed_ms, double *comm_ms, struct nt_err *err);

/* Rebuild the buckets in the ready order seen in the last synced step. */
void ddp_rebuild(struct ddp *d);

/* Sum of x over ranks (through the communication thread). */
int ddp_allreduce_double(struct ddp *d, double *x, size_t n, struct nt_err *err);

int ddp_bucket_count(const struct ddp *d);

/* The bucket plan, shared by the CPU reducer and the GPU one: params taken
 * in `order`, the first bucket up to first_mb, the others up to cap_mb (a
 * parameter larger than the cap gets a bucket of its own).  end[i] is one
 * past the last index into order of bucket i (end holds n_params).  Returns
 * the number of buckets. */
/* The params idx[0..n) of one bucket: *ret_count floats in all; returns
 * their lowest offset when they form one contiguous range of the gradient
 * buffer (reduced in place there), else (size_t)-1 (copied through a
 * bucket buffer). */
size_t ddp_bucket_span(const struct model_param *params, const int *idx, int n, size_t *ret_count);

int ddp_plan_buckets(const struct model_param *params, int n_params, const int *order, double first_mb,
		     double cap_mb, int *end);

/* Whether the communication thread runs at the raised priority. */
bool ddp_comm_boosted(const struct ddp *d);

/* What summed gradients are multiplied by to be averages: 1 / world. */
float ddp_scale(const struct ddp *d);

#endif
