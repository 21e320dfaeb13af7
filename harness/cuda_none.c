/* cuda_none.c — the CUDA entry points of a build without nvcc: --device cuda
 * then fails with a clear message (exit 3). */
#include "cuda_backend.h"

#include <stdio.h>

const char *cuda_build_info(void)
{
	return "no (built without nvcc)";
}

const char *cuda_nccl_info(void)
{
	return "no";
}

int cuda_probe(char *why, size_t why_size)
{
	snprintf(why, why_size, "this nodetune-harness was built without CUDA (no nvcc at build time)");
	return -1;
}
