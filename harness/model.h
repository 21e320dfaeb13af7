/* SPDX-License-Identifier: MIT */
/* model.h — the harness's models on the CPU.
 *
 * dlrm-small (DESIGN.md): 13 dense features; 26 embedding tables of 10,000
 * rows x 16, sum-pooled bags of 4; bottom MLP 13-256-128-16 (ReLU after every
 * layer); top MLP on the concatenation (16 + 26 x 16 = 432)-256-128-1 (ReLU
 * after each layer but the last); BCE-with-logits; SGD.
 * mlp: `depth` hidden layers of `width` (ReLU), then width-1; for
 * compute-heavy overlap studies.
 *
 * All weights live in one flat buffer w and all gradients in g, one
 * struct model_param per tensor, in registration order: bottom MLP,
 * embeddings, top MLP (PyTorch's module order in bench/torch_dlrm.py).
 * Backward runs top MLP, embeddings, bottom MLP, calling on_ready for each
 * parameter as soon as its gradient is final: the order DDP buckets follow.
 */
#ifndef NODETUNE_HARNESS_MODEL_H
#define NODETUNE_HARNESS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DLRM_DENSE 13
#define DLRM_TABLES 26
#define DLRM_ROWS 10000
#define DLRM_DIM 16
#define DLRM_BAG 4

enum model_kind { MODEL_DLRM_SMALL, MODEL_MLP };

struct model_config {
	enum model_kind kind;
	int mlp_depth, mlp_width;   /* MODEL_MLP */
	int rows;                   /* embedding rows (DLRM_ROWS; tests use fewer) */
};

struct model_param {
	char name[32];
	size_t offset;              /* into w and g, in floats */
	size_t count;
};

/* A batch as the model reads it (n samples). */
struct batch_view {
	int n;
	const float *dense;         /* [n][dense_width] */
	const int32_t *sparse;      /* [n][26][4] (dlrm) */
	const float *label;         /* [n] */
};

struct model;

/* Build with weights initialised from seed (identical on every rank), room
 * for batches of up to max_batch.  NULL on out of memory or bad config. */
struct model *model_create(const struct model_config *cfg, int max_batch, uint64_t seed);
void model_free(struct model *m);

int model_dense_width(const struct model_config *cfg);
const struct model_param *model_params(const struct model *m, int *ret_n);
float *model_weights(struct model *m, size_t *ret_n);
float *model_grads(struct model *m);

/* Forward, loss and backward of one micro-batch.  first: the first
 * micro-batch of a step, whose backward writes the gradients (no zeroing
 * pass); later micro-batches accumulate into them.  Loss is the mean over scale_n samples (this
 * rank's samples of the step: batch x accum), so that gradients averaged over
 * ranks equal single-process training on the global batch.
 * on_ready(ctx, p) is called when param p's gradient is final.  Returns the
 * sum of the n local losses.  fwd_ms/bwd_ms get the phase times. */
double model_step(struct model *m, const struct batch_view *b, double scale_n, bool first,
		  void (*on_ready)(void *ctx, int param), void *ctx,
		  double *fwd_ms, double *bwd_ms);

/* The structure, for other back ends (the GPU trainer) that run the same
 * model on the same flat weights: an MLP's layers (bottom or top; the mlp
 * model has only a top) with their param indexes, and the first embedding
 * table's param (-1 for mlp; table t is param emb0 + t). */
struct model_layer_info {
	int in, out;
	int pw, pb;                 /* param indexes of W [out][in] and b [out] */
	bool relu;
};

int model_layers(const struct model *m, bool top, struct model_layer_info *out, int max);
int model_emb_param0(const struct model *m);
const struct model_config *model_config_of(const struct model *m);

#endif
