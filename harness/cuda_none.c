/* SPDX-License-Identifier: MIT */
/* cuda_none.c — the CUDA entry points of a build without nvcc (and of the
 * sanitizer build): the cuda trainer row's probe fails with a clear message,
 * so --device cuda exits 3 before anything is set up. */
#include <errno.h>
#include <stdio.h>

#include "cuda_backend.h"
#include "trainer.h"

const char *cuda_build_info(void)
{
	return "no (built without nvcc)";
}

const char *cuda_nccl_info(void)
{
	return "no";
}

int cuda_probe(struct nt_err *err)
{
	return err_set(err, -ENODEV, "this nodetune-harness was built without CUDA (no nvcc at build time)");
}

static int none_probe(struct nt_err *err)
{
	struct nt_err e = { 0 };

	cuda_probe(&e);
	return err_set(err, e.code, "--device cuda: %s", e.msg);
}

/* never reached: the engine checks the probe first */
static struct trainer *none_create(const struct trainer_config *cfg, struct model *m, struct comm *c,
				   struct loader *ld, struct nt_err *err)
{
	(void)cfg, (void)m, (void)c, (void)ld;
	none_probe(err);
	return NULL;
}

static void none_free(struct trainer *t)
{
	(void)t;
}

const struct trainer_ops cuda_trainer = {
	.name = "cuda",
	.probe = none_probe,
	.create = none_create,
	.free = none_free,
};
