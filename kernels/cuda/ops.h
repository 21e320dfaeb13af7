/* SPDX-License-Identifier: MIT */
/* ops.h — CUDA compute kernels of the harness (kernels/cuda/ops.cu), with
 * the same contracts as kernels/cpu/ops.h: row-major float32, backward
 * kernels accumulate.  Pointers are device pointers; every call is
 * asynchronous on `stream` and returns 0 or a CUDA/cuBLAS error code. */
#ifndef NODETUNE_KERNELS_CUDA_OPS_H
#define NODETUNE_KERNELS_CUDA_OPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cuda_ops_ctx cuda_ops_ctx;   /* opaque: cuBLAS handle + stream */

cuda_ops_ctx *cuda_ops_create(void *stream);
void cuda_ops_free(cuda_ops_ctx *c);

/* y = x W^T + b, ReLU fused when relu */
int cuda_linear_fwd(cuda_ops_ctx *c, const float *x, const float *W, const float *b, float *y,
		    int n, int in, int out, int relu);
/* dy *= (y > 0) when relu; dW += dy^T x; db += sum dy; dx = dy W (dx may be NULL) */
int cuda_linear_bwd(cuda_ops_ctx *c, const float *x, const float *W, const float *y, float *dy,
		    float *dx, float *dW, float *db, int n, int in, int out, int relu);
int cuda_embbag_fwd(cuda_ops_ctx *c, const float *table, const int32_t *idx, int idx_stride,
		    float *out, int n, int bag, int dim, int out_stride);
int cuda_embbag_bwd(cuda_ops_ctx *c, const float *dout, int dout_stride, const int32_t *idx,
		    int idx_stride, float *dtable, int n, int bag, int dim);
/* All tables at once (dlrm: tables t = 0..n_tables-1 lie one after another,
 * rows x dim each, from `tables`): bag (i, t) sums the rows idx[i][t*bag ..]
 * into out[i][t*dim ..] (out_stride per sample); the backward adds dout's
 * columns back into dtables.  Same results as n_tables calls of the
 * single-table kernels, in one launch of dim-wide thread groups. */
int cuda_embbag_multi_fwd(cuda_ops_ctx *c, const float *tables, int rows, int n_tables, const int32_t *idx,
			  float *out, int out_stride, int n, int bag, int dim);
int cuda_embbag_multi_bwd(cuda_ops_ctx *c, const float *dout, int dout_stride, const int32_t *idx,
			  float *dtables, int rows, int n_tables, int n, int bag, int dim);
/* loss_sum (device, one double) += sum of losses; dlogit = (sigmoid - y) / scale_n */
int cuda_bce_logits(cuda_ops_ctx *c, const float *logit, const float *label, float *dlogit,
		    double *loss_sum, int n, double scale_n);
int cuda_sgd(cuda_ops_ctx *c, float *w, const float *g, size_t n, float lr);

#ifdef __cplusplus
}
#endif

#endif
