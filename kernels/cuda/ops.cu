/* SPDX-License-Identifier: MIT */
// ops.cu — see ops.h.
#include "ops.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cstdlib>

struct cuda_ops_ctx {
	cublasHandle_t blas;
	cudaStream_t stream;
};

extern "C" cuda_ops_ctx *cuda_ops_create(void *stream)
{
	cuda_ops_ctx *c = (cuda_ops_ctx *)calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->stream = (cudaStream_t)stream;
	if (cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS) {
		free(c);
		return NULL;
	}
	cublasSetStream(c->blas, c->stream);
	return c;
}

extern "C" void cuda_ops_free(cuda_ops_ctx *c)
{
	if (!c)
		return;
	cublasDestroy(c->blas);
	free(c);
}

static int last(void)
{
	return (int)cudaGetLastError();
}

__global__ void k_bias_relu(float *y, const float *b, int n, int out, int relu)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i < (size_t)n * out) {
		float v = y[i] + b[i % out];

		y[i] = relu && v < 0.0f ? 0.0f : v;
	}
}

__global__ void k_relu_bwd(const float *y, float *dy, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i < n && y[i] <= 0.0f)
		dy[i] = 0.0f;
}

// db[o] += sum_i dy[i][o]: one thread per output column
__global__ void k_bias_grad(const float *dy, float *db, int n, int out)
{
	int o = blockIdx.x * blockDim.x + threadIdx.x;
	float s = 0.0f;

	if (o >= out)
		return;
	for (int i = 0; i < n; i++)
		s += dy[(size_t)i * out + o];
	db[o] += s;
}

extern "C" int cuda_linear_fwd(cuda_ops_ctx *c, const float *x, const float *W, const float *b, float *y,
			       int n, int in, int out, int relu)
{
	const float one = 1.0f, zero = 0.0f;
	size_t total = (size_t)n * out;

	// row-major y[n][out] = x[n][in] W[out][in]^T  ==  column-major y^T = W x^T
	if (cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, W, in, x, in, &zero, y, out))
		return -1;
	k_bias_relu<<<(unsigned)((total + 255) / 256), 256, 0, c->stream>>>(y, b, n, out, relu);
	return last();
}

extern "C" int cuda_linear_bwd(cuda_ops_ctx *c, const float *x, const float *W, const float *y, float *dy,
			       float *dx, float *dW, float *db, int n, int in, int out, int relu)
{
	const float one = 1.0f, zero = 0.0f;
	size_t total = (size_t)n * out;

	if (relu)
		k_relu_bwd<<<(unsigned)((total + 255) / 256), 256, 0, c->stream>>>(y, dy, total);
	// dW[out][in] += dy^T x  ==  column-major dW^T[in][out] += x^T dy
	if (cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &one, x, in, dy, out, &one, dW, in))
		return -1;
	k_bias_grad<<<(out + 127) / 128, 128, 0, c->stream>>>(dy, db, n, out);
	// dx[n][in] = dy[n][out] W[out][in]  ==  column-major dx^T = W^T dy^T
	if (dx && cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &one, W, in, dy, out, &zero, dx, in))
		return -1;
	return last();
}

// one block per sample, one thread per embedding column
__global__ void k_embbag_fwd(const float *table, const int32_t *idx, int idx_stride, float *out,
			     int bag, int dim, int out_stride)
{
	int i = blockIdx.x, d = threadIdx.x;
	float s = 0.0f;

	if (d >= dim)
		return;
	for (int j = 0; j < bag; j++)
		s += table[(size_t)idx[(size_t)i * idx_stride + j] * dim + d];
	out[(size_t)i * out_stride + d] = s;
}

__global__ void k_embbag_bwd(const float *dout, int dout_stride, const int32_t *idx, int idx_stride,
			     float *dtable, int bag, int dim)
{
	int i = blockIdx.x, d = threadIdx.x;

	if (d >= dim)
		return;
	float g = dout[(size_t)i * dout_stride + d];
	for (int j = 0; j < bag; j++)
		atomicAdd(&dtable[(size_t)idx[(size_t)i * idx_stride + j] * dim + d], g);
}

extern "C" int cuda_embbag_fwd(cuda_ops_ctx *c, const float *table, const int32_t *idx, int idx_stride,
			       float *out, int n, int bag, int dim, int out_stride)
{
	k_embbag_fwd<<<n, dim, 0, c->stream>>>(table, idx, idx_stride, out, bag, dim, out_stride);
	return last();
}

extern "C" int cuda_embbag_bwd(cuda_ops_ctx *c, const float *dout, int dout_stride, const int32_t *idx,
			       int idx_stride, float *dtable, int n, int bag, int dim)
{
	k_embbag_bwd<<<n, dim, 0, c->stream>>>(dout, dout_stride, idx, idx_stride, dtable, bag, dim);
	return last();
}

// one thread per (sample, table, column): consecutive threads read
// consecutive columns of one row (coalesced); idx is [n][n_tables * bag]
__global__ void k_embbag_multi_fwd(const float *tables, int rows, int n_tables, const int32_t *idx, float *out,
				   int out_stride, int n, int bag, int dim)
{
	size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	int d = (int)(g % dim), t = (int)(g / dim % n_tables);
	size_t i = g / dim / n_tables;
	const int32_t *ix;
	const float *tab;
	float s = 0.0f;

	if (i >= (size_t)n)
		return;
	ix = idx + (i * n_tables + t) * bag;
	tab = tables + (size_t)t * rows * dim;
	for (int j = 0; j < bag; j++)
		s += tab[(size_t)ix[j] * dim + d];
	out[i * out_stride + (size_t)t * dim + d] = s;
}

__global__ void k_embbag_multi_bwd(const float *dout, int dout_stride, const int32_t *idx, float *dtables,
				   int rows, int n_tables, int n, int bag, int dim)
{
	size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	int d = (int)(g % dim), t = (int)(g / dim % n_tables);
	size_t i = g / dim / n_tables;
	const int32_t *ix;
	float *tab, v;

	if (i >= (size_t)n)
		return;
	ix = idx + (i * n_tables + t) * bag;
	tab = dtables + (size_t)t * rows * dim;
	v = dout[i * dout_stride + (size_t)t * dim + d];
	for (int j = 0; j < bag; j++)
		atomicAdd(&tab[(size_t)ix[j] * dim + d], v);
}

extern "C" int cuda_embbag_multi_fwd(cuda_ops_ctx *c, const float *tables, int rows, int n_tables,
				     const int32_t *idx, float *out, int out_stride, int n, int bag, int dim)
{
	size_t total = (size_t)n * n_tables * dim;

	if (total)
		k_embbag_multi_fwd<<<(unsigned)((total + 255) / 256), 256, 0, c->stream>>>(tables, rows, n_tables, idx,
											  out, out_stride, n, bag, dim);
	return last();
}

extern "C" int cuda_embbag_multi_bwd(cuda_ops_ctx *c, const float *dout, int dout_stride, const int32_t *idx,
				     float *dtables, int rows, int n_tables, int n, int bag, int dim)
{
	size_t total = (size_t)n * n_tables * dim;

	if (total)
		k_embbag_multi_bwd<<<(unsigned)((total + 255) / 256), 256, 0, c->stream>>>(dout, dout_stride, idx,
											  dtables, rows, n_tables, n, bag, dim);
	return last();
}

__global__ void k_bce(const float *logit, const float *label, float *dlogit, double *loss_sum, int n,
		      double scale_n)
{
	__shared__ double part[256];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	double l = 0.0;

	if (i < n) {
		double z = logit[i], y = label[i];
		double s = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));

		l = (z > 0 ? z + log1p(exp(-z)) : log1p(exp(z))) - y * z;
		dlogit[i] = (float)((s - y) / scale_n);
	}
	part[threadIdx.x] = l;
	__syncthreads();
	for (int k = blockDim.x / 2; k > 0; k >>= 1) {
		if ((int)threadIdx.x < k)
			part[threadIdx.x] += part[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(loss_sum, part[0]);
}

extern "C" int cuda_bce_logits(cuda_ops_ctx *c, const float *logit, const float *label, float *dlogit,
			       double *loss_sum, int n, double scale_n)
{
	k_bce<<<(n + 255) / 256, 256, 0, c->stream>>>(logit, label, dlogit, loss_sum, n, scale_n);
	return last();
}

__global__ void k_sgd(float *w, const float *g, size_t n, float lr)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i < n)
		w[i] -= lr * g[i];
}

extern "C" int cuda_sgd(cuda_ops_ctx *c, float *w, const float *g, size_t n, float lr)
{
	k_sgd<<<(unsigned)((n + 255) / 256), 256, 0, c->stream>>>(w, g, n, lr);
	return last();
}
