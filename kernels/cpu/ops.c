/* SPDX-License-Identifier: MIT */
/* ops.c — see ops.h. */
#include "ops.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* The hot loops are compiled for AVX-512 and AVX2 as well as the baseline,
 * and the best one is picked at load time (GCC function multiversioning), so
 * one portable binary runs vector-wide wherever it can. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HOT
#endif

void cpu_linear_fwd(const float *x, const float *W, const float *b, float *y,
		    int n, int in, int out)
{
	for (int i = 0; i < n; i++)
		memcpy(y + (size_t)i * out, b, (size_t)out * sizeof(float));
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in,
		    1.0f, x, in, W, in, 1.0f, y, out);
}

HOT static void bias_grad(const float *dy, float *db, int n, int out, int overwrite)
{
	if (overwrite)
		memset(db, 0, (size_t)out * sizeof(float));
	for (int i = 0; i < n; i++) {
		const float *r = dy + (size_t)i * out;

		for (int o = 0; o < out; o++)
			db[o] += r[o];
	}
}

void cpu_linear_bwd(const float *x, const float *W, const float *dy,
		    float *dx, float *dW, float *db, int n, int in, int out, int overwrite)
{
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n,
		    1.0f, dy, out, x, in, overwrite ? 0.0f : 1.0f, dW, in);
	bias_grad(dy, db, n, out, overwrite);
	if (dx)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out,
			    1.0f, dy, out, W, in, 0.0f, dx, in);
}

HOT void cpu_relu_fwd(float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

HOT void cpu_relu_bwd(const float *y, float *dy, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dy[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* Rows are 16 floats (one 64-byte line) in dlrm-small: a fixed width lets
 * the compiler keep a row in one vector register; rows a few samples ahead
 * are prefetched, since lookups are random. */
#define EMB_PREFETCH 4

HOT static void embbag_fwd16(const float *table, const int32_t *idx, int idx_stride, float *out,
			     int n, int bag, int out_stride)
{
	for (int i = 0; i < n; i++) {
		float acc[16] = { 0 };
		float *o = out + (size_t)i * out_stride;

		if (i + EMB_PREFETCH < n)
			for (int j = 0; j < bag; j++)
				__builtin_prefetch(table + (size_t)idx[(size_t)(i + EMB_PREFETCH) * idx_stride + j] * 16);
		/* out's rows lie 1.7 KB apart (the concatenation), idx's 416 B:
		 * too far apart for the hardware's stride prefetch within a page */
		if (i + 2 * EMB_PREFETCH < n) {
			__builtin_prefetch(out + (size_t)(i + 2 * EMB_PREFETCH) * out_stride, 1);
			__builtin_prefetch(idx + (size_t)(i + 4 * EMB_PREFETCH) * idx_stride);
		}
		for (int j = 0; j < bag; j++) {
			const float *row = table + (size_t)idx[(size_t)i * idx_stride + j] * 16;

			for (int d = 0; d < 16; d++)
				acc[d] += row[d];
		}
		for (int d = 0; d < 16; d++)
			o[d] = acc[d];
	}
}

void cpu_embbag_fwd(const float *table, const int32_t *idx, int idx_stride, float *out,
		    int n, int bag, int dim, int out_stride)
{
	if (dim == 16) {
		embbag_fwd16(table, idx, idx_stride, out, n, bag, out_stride);
		return;
	}
	for (int i = 0; i < n; i++) {
		float *o = out + (size_t)i * out_stride;

		memset(o, 0, (size_t)dim * sizeof(float));
		for (int j = 0; j < bag; j++) {
			const float *row = table + (size_t)idx[(size_t)i * idx_stride + j] * dim;

			for (int d = 0; d < dim; d++)
				o[d] += row[d];
		}
	}
}

HOT static void embbag_bwd16(const float *dout, int dout_stride, const int32_t *idx, int idx_stride,
			     float *dtable, int n, int bag)
{
	for (int i = 0; i < n; i++) {
		const float *g = dout + (size_t)i * dout_stride;

		if (i + EMB_PREFETCH < n)
			for (int j = 0; j < bag; j++)
				__builtin_prefetch(dtable + (size_t)idx[(size_t)(i + EMB_PREFETCH) * idx_stride + j] * 16, 1);
		/* dout's rows are the concatenation's (1.7 KB apart), idx's 416 B */
		if (i + 2 * EMB_PREFETCH < n) {
			__builtin_prefetch(dout + (size_t)(i + 2 * EMB_PREFETCH) * dout_stride);
			__builtin_prefetch(idx + (size_t)(i + 4 * EMB_PREFETCH) * idx_stride);
		}
		for (int j = 0; j < bag; j++) {
			float *row = dtable + (size_t)idx[(size_t)i * idx_stride + j] * 16;

			for (int d = 0; d < 16; d++)
				row[d] += g[d];
		}
	}
}

void cpu_embbag_bwd(const float *dout, int dout_stride, const int32_t *idx, int idx_stride,
		    float *dtable, int rows, int n, int bag, int dim, int overwrite)
{
	if (overwrite)
		memset(dtable, 0, (size_t)rows * dim * sizeof(float));
	if (dim == 16) {
		embbag_bwd16(dout, dout_stride, idx, idx_stride, dtable, n, bag);
		return;
	}
	for (int i = 0; i < n; i++) {
		const float *g = dout + (size_t)i * dout_stride;

		for (int j = 0; j < bag; j++) {
			float *row = dtable + (size_t)idx[(size_t)i * idx_stride + j] * dim;

			for (int d = 0; d < dim; d++)
				row[d] += g[d];
		}
	}
}

double cpu_bce_logits(const float *logit, const float *label, float *dlogit,
		      int n, double scale_n)
{
	double sum = 0.0;

	for (int i = 0; i < n; i++) {
		double z = logit[i], y = label[i];
		/* log(1 + e^z) - y z, stable for both signs of z */
		double l = (z > 0 ? z + log1p(exp(-z)) : log1p(exp(z))) - y * z;
		double s = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));

		sum += l;
		dlogit[i] = (float)((s - y) / scale_n);
	}
	return sum;
}

HOT void cpu_sgd(float *w, const float *g, size_t n, float lr)
{
	for (size_t i = 0; i < n; i++)
		w[i] -= lr * g[i];
}

HOT void cpu_sgd_scaled(float *w, const float *g, size_t n, float lr, float scale)
{
	for (size_t i = 0; i < n; i++)
		w[i] -= lr * (g[i] * scale);
}
