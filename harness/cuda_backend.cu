/* SPDX-License-Identifier: MIT */
// cuda_backend.cu — CUDA build information and the GPU probe.
#include "cuda_backend.h"

#include <cerrno>
#include <cstdio>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

extern "C" const char *cuda_build_info(void)
{
	static char s[96];

	snprintf(s, sizeof(s), "yes (CUDA runtime %d.%d, cuBLAS %d.%d)", CUDART_VERSION / 1000,
		 (CUDART_VERSION % 1000) / 10, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR);
	return s;
}

extern "C" const char *cuda_nccl_info(void)
{
	static char s[32];

	snprintf(s, sizeof(s), "%d.%d.%d", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
	return s;
}

extern "C" int cuda_probe(struct nt_err *err)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	cudaDeviceProp prop;

	if (e != cudaSuccess) {
		return err_set(err, -ENODEV, "no usable GPU: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
	}
	if (n == 0) {
		return err_set(err, -ENODEV, "no usable GPU: CUDA sees no device");
	}
	if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
		return err_set(err, -ENODEV, "no usable GPU: cannot query device 0");
	}
	err_set(err, 0, "%d GPU(s), device 0: %s (sm_%d%d)", n, prop.name, prop.major, prop.minor);
	return 0;
}
