/* SPDX-License-Identifier: MIT */
/* test_cuda_ops.c — the CUDA kernels against the CPU kernels (which
 * test_model.c gradient-checks against double-precision finite
 * differences), on a GPU; skipped with the reason where there is none. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "test_util.h"

#include "../../../kernels/cpu/ops.h"
#include "cuda_backend.h"

#ifdef HAVE_CUDA
#include <cuda_runtime.h>
#include "../../../kernels/cuda/ops.h"

static float *up(const float *h, size_t n)
{
	float *d = NULL;

	assert_int_equal(cudaMalloc((void **)&d, n * 4 + 4), 0);
	assert_int_equal(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice), 0);
	return d;
}

static void down_cmp(const float *d, const float *want, size_t n, const char *what)
{
	float *h = malloc(n * 4);

	assert_int_equal(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost), 0);
	for (size_t i = 0; i < n; i++)
		if (fabsf(h[i] - want[i]) > 1e-4f * fmaxf(1.0f, fabsf(want[i])))
			fail_msg("%s[%zu]: gpu %g, cpu %g", what, i, (double)h[i], (double)want[i]);
	free(h);
}

static void fill(float *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8) / (float)(1 << 24) - 0.5f;
}
#endif

static void test_kernels_match_cpu(void **state)
{
	struct nt_err err;

	(void)state;
	if (cuda_probe(&err) < 0) {
		/* the harness's probe said no: a skip only where tests/host-caps.sh
		 * (nvidia-smi -L, /dev/nvidia0) finds no GPU either */
		test_skip_host("gpu", "%s", err.msg);
	}
#ifdef HAVE_CUDA
	enum { N = 37, IN = 29, OUT = 19, ROWS = 23, DIM = 16, BAG = 4 };
	float x[N * IN], W[OUT * IN], b[OUT], y[N * OUT], dy[N * OUT], dx[N * IN] = { 0 }, dW[OUT * IN] = { 0 },
	      db[OUT] = { 0 }, table[ROWS * DIM], eo[N * DIM], dt[ROWS * DIM] = { 0 }, lab[N], dl[N], w2[OUT * IN];
	int32_t idx[N * BAG];
	cuda_ops_ctx *c = cuda_ops_create(NULL);
	double *dloss, hloss, closs;

	assert_non_null(c);
	fill(x, N * IN, 1), fill(W, OUT * IN, 2), fill(b, OUT, 3), fill(dy, N * OUT, 4), fill(table, ROWS * DIM, 5);
	for (int i = 0; i < N * BAG; i++)
		idx[i] = (i * 7) % ROWS;
	for (int i = 0; i < N; i++)
		lab[i] = (float)(i % 2);

	float *gx = up(x, N * IN), *gW = up(W, OUT * IN), *gb = up(b, OUT), *gy = up(y, N * OUT);
	float *gdy = up(dy, N * OUT), *gdx = up(dx, N * IN), *gdW = up(dW, OUT * IN), *gdb = up(db, OUT);
	float *gt = up(table, ROWS * DIM), *geo = up(eo, N * DIM), *gdt = up(dt, ROWS * DIM), *gl = up(lab, N);
	float *gdl = up(dl, N);
	int32_t *gidx = NULL;

	assert_int_equal(cudaMalloc((void **)&gidx, sizeof(idx)), 0);
	assert_int_equal(cudaMemcpy(gidx, idx, sizeof(idx), cudaMemcpyHostToDevice), 0);

	cpu_linear_fwd(x, W, b, y, N, IN, OUT);
	cpu_relu_fwd(y, N * OUT);
	assert_int_equal(cuda_linear_fwd(c, gx, gW, gb, gy, N, IN, OUT, 1), 0);
	down_cmp(gy, y, N * OUT, "linear+relu forward");

	cpu_relu_bwd(y, dy, N * OUT);
	cpu_linear_bwd(x, W, dy, dx, dW, db, N, IN, OUT, 0);
	assert_int_equal(cuda_linear_bwd(c, gx, gW, gy, gdy, gdx, gdW, gdb, N, IN, OUT, 1), 0);
	down_cmp(gdx, dx, N * IN, "dx");
	down_cmp(gdW, dW, OUT * IN, "dW");
	down_cmp(gdb, db, OUT, "db");

	cpu_embbag_fwd(table, idx, BAG, eo, N, BAG, DIM, DIM);
	assert_int_equal(cuda_embbag_fwd(c, gt, gidx, BAG, geo, N, BAG, DIM, DIM), 0);
	down_cmp(geo, eo, N * DIM, "embedding bag forward");
	cpu_embbag_bwd(eo, DIM, idx, BAG, dt, ROWS, N, BAG, DIM, 0);
	assert_int_equal(cuda_embbag_bwd(c, geo, DIM, gidx, BAG, gdt, N, BAG, DIM), 0);
	down_cmp(gdt, dt, ROWS * DIM, "embedding bag backward");

	closs = cpu_bce_logits(x, lab, dl, N, N);
	assert_int_equal(cudaMalloc((void **)&dloss, sizeof(double)), 0);
	assert_int_equal(cudaMemset(dloss, 0, sizeof(double)), 0);
	assert_int_equal(cuda_bce_logits(c, gx, gl, gdl, dloss, N, N), 0);
	assert_int_equal(cudaMemcpy(&hloss, dloss, sizeof(double), cudaMemcpyDeviceToHost), 0);
	assert_true(fabs(hloss - closs) < 1e-6 * fmax(1, fabs(closs)));
	down_cmp(gdl, dl, N, "bce gradient");

	/* all tables in one launch = one call per table */
	{
		enum { T = 3 };
		float tabs[T * ROWS * DIM], z[N * (T + 1) * DIM] = { 0 }, dz[N * (T + 1) * DIM], dts[T * ROWS * DIM] = { 0 };
		int32_t ix[N * T * BAG];
		const int zw = (T + 1) * DIM;

		fill(tabs, T * ROWS * DIM, 6), fill(dz, N * zw, 7);
		for (int i = 0; i < N * T * BAG; i++)
			ix[i] = (i * 13 + i / 5) % ROWS;
		for (int t = 0; t < T; t++) {
			cpu_embbag_fwd(tabs + t * ROWS * DIM, ix + t * BAG, T * BAG, z + DIM * (t + 1), N, BAG, DIM, zw);
			cpu_embbag_bwd(dz + DIM * (t + 1), zw, ix + t * BAG, T * BAG, dts + t * ROWS * DIM, ROWS, N, BAG,
				       DIM, 0);
		}
		float *gtabs = up(tabs, T * ROWS * DIM), *gz = up(dz, N * zw), *gdz = up(dz, N * zw);
		float *gdts = up(dts, T * ROWS * DIM);
		int32_t *gix = NULL;

		assert_int_equal(cudaMemset(gdts, 0, sizeof(dts)), 0);
		assert_int_equal(cudaMalloc((void **)&gix, sizeof(ix)), 0);
		assert_int_equal(cudaMemcpy(gix, ix, sizeof(ix), cudaMemcpyHostToDevice), 0);
		assert_int_equal(cuda_embbag_multi_fwd(c, gtabs, ROWS, T, gix, gz + DIM, zw, N, BAG, DIM), 0);
		/* columns 0..DIM-1 are not the kernel's: compare the table columns */
		{
			float *h = malloc(sizeof(z));

			assert_int_equal(cudaMemcpy(h, gz, sizeof(z), cudaMemcpyDeviceToHost), 0);
			for (int i = 0; i < N; i++)
				for (int k = DIM; k < zw; k++)
					if (fabsf(h[i * zw + k] - z[i * zw + k]) > 1e-5f)
						fail_msg("multi-table forward [%d][%d]: gpu %g, cpu %g", i, k,
							 (double)h[i * zw + k], (double)z[i * zw + k]);
			free(h);
		}
		assert_int_equal(cuda_embbag_multi_bwd(c, gdz + DIM, zw, gix, gdts, ROWS, T, N, BAG, DIM), 0);
		down_cmp(gdts, dts, T * ROWS * DIM, "multi-table backward");
		cudaFree(gtabs), cudaFree(gz), cudaFree(gdz), cudaFree(gdts), cudaFree(gix);
	}

	memcpy(w2, W, sizeof(W));
	cpu_sgd(w2, dW, OUT * IN, 0.1f);
	assert_int_equal(cuda_sgd(c, gW, gdW, OUT * IN, 0.1f), 0);
	down_cmp(gW, w2, OUT * IN, "sgd");
	assert_int_equal(cudaDeviceSynchronize(), 0);
	cuda_ops_free(c);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernels_match_cpu),
	};

	return cmocka_run_group_tests_name("cuda_ops", tests, NULL, NULL);
}
