/* cuda_none.c — the CUDA entry points of a build without nvcc (and of the
 * sanitizer build): --device cuda then fails with a clear message (exit 3). */
#include "cuda_backend.h"
#include "gpu_train.h"

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

/* never reached: main checks cuda_probe first */
int gpu_select(int local_rank, char *why, size_t why_size)
{
	(void)local_rank;
	return cuda_probe(why, why_size);
}

void *gpu_host_alloc(size_t bytes)
{
	(void)bytes;
	return NULL;
}

void gpu_host_free(void *p)
{
	(void)p;
}

struct gpu_train *gpu_train_create(const struct gpu_train_config *cfg, struct model *m, struct comm *comm,
				   struct loader *ld, char *why, size_t why_size)
{
	(void)cfg, (void)m, (void)comm, (void)ld;
	cuda_probe(why, why_size);
	return NULL;
}

int gpu_train_step(struct gpu_train *t, struct gpu_step *out, bool *bad_data, char *why, size_t why_size)
{
	(void)t, (void)out;
	*bad_data = false;
	return cuda_probe(why, why_size);
}

void gpu_train_rebuild(struct gpu_train *t)
{
	(void)t;
}

int gpu_train_buckets(const struct gpu_train *t)
{
	(void)t;
	return 0;
}

int gpu_train_fetch_weights(struct gpu_train *t, char *why, size_t why_size)
{
	(void)t;
	return cuda_probe(why, why_size);
}

void gpu_train_h2d(const struct gpu_train *t, double *loader_gbps, double *pinned_gbps)
{
	(void)t;
	*loader_gbps = *pinned_gbps = 0;
}

const char *gpu_train_device(const struct gpu_train *t)
{
	(void)t;
	return "none";
}

void gpu_train_free(struct gpu_train *t)
{
	(void)t;
}
