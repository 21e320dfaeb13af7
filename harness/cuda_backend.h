/* SPDX-License-Identifier: MIT */
/* cuda_backend.h — what the harness knows about CUDA, whether or not it was
 * built with it (cuda_backend.cu with nvcc; cuda_none.c without). */
#ifndef NODETUNE_HARNESS_CUDA_BACKEND_H
#define NODETUNE_HARNESS_CUDA_BACKEND_H

#include <stddef.h>

#include "nt_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "yes (CUDA runtime 13.0, cuBLAS 13.x)" or "no (built without nvcc)". */
const char *cuda_build_info(void);
/* "2.28.x" or "no". */
const char *cuda_nccl_info(void);
/* 0 when a usable GPU exists (err->msg then names it, err->code 0),
 * -ENODEV with err otherwise. */
int cuda_probe(struct nt_err *err);

#ifdef __cplusplus
}
#endif

#endif
