/* SPDX-License-Identifier: MIT */
/* ops.h — CPU compute kernels of the harness.
 *
 * Row-major float32.  Linear layers use OpenBLAS sgemm (its thread count is
 * set by the harness to follow the rank's CPU set); the rest are plain C
 * loops the compiler vectorizes.  Backward kernels accumulate into gradient
 * buffers (beta = 1), so gradient accumulation over micro-batches is free;
 * the caller zeroes gradients at the start of an accumulation window.
 */
#ifndef NODETUNE_KERNELS_CPU_OPS_H
#define NODETUNE_KERNELS_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

/* y[n][out] = x[n][in] . W[out][in]^T + b[out] */
void cpu_linear_fwd(const float *x, const float *W, const float *b, float *y,
		    int n, int in, int out);

/* dW += dy^T . x ; db += sum_n dy ; dx = dy . W (skipped when dx is NULL).
 * overwrite: dW = ..., db = ... instead (the first micro-batch of a step:
 * no separate zeroing pass over the gradients). */
void cpu_linear_bwd(const float *x, const float *W, const float *dy,
		    float *dx, float *dW, float *db, int n, int in, int out, int overwrite);

/* y = max(y, 0) in place */
void cpu_relu_fwd(float *y, size_t n);

/* dy *= (y > 0), in place (y is the ReLU output) */
void cpu_relu_bwd(const float *y, float *dy, size_t n);

/* Sum-pooled embedding bags: out[i][0..dim) = sum_j table[idx[i*idx_stride+j]];
 * out rows are written with stride out_stride (to land in a concatenation). */
void cpu_embbag_fwd(const float *table, const int32_t *idx, int idx_stride, float *out,
		    int n, int bag, int dim, int out_stride);

/* dtable[idx[i*idx_stride+j]] += dout[i] (rows of stride dout_stride);
 * overwrite: dtable (rows x dim) is zeroed first, right before the scatter,
 * so that it is cache-resident when the scatter reads it. */
void cpu_embbag_bwd(const float *dout, int dout_stride, const int32_t *idx, int idx_stride,
		    float *dtable, int rows, int n, int bag, int dim, int overwrite);

/* Binary cross-entropy with logits, mean over `scale_n` samples (the global
 * batch: n local samples of scale_n).  Returns the sum of losses of the n
 * local samples; writes dlogit[i] = (sigmoid(z_i) - y_i) / scale_n. */
double cpu_bce_logits(const float *logit, const float *label, float *dlogit,
		      int n, double scale_n);

/* w -= lr * g */
void cpu_sgd(float *w, const float *g, size_t n, float lr);

/* w -= lr * (g * scale): SGD on gradients summed over ranks (scale 1/world) */
void cpu_sgd_scaled(float *w, const float *g, size_t n, float lr, float scale);


#endif
