/* SPDX-License-Identifier: MIT */
/* model_test.h — what the unit tests reach in model.c and the program does
 * not (tests/unit/harness/test_model.c). */
#ifndef NODETUNE_HARNESS_MODEL_TEST_H
#define NODETUNE_HARNESS_MODEL_TEST_H

#include "model.h"

/* Forward only: logits of b into out[n]. */
void model_forward(struct model *m, const struct batch_view *b, float *out);

#endif
