/* SPDX-License-Identifier: MIT */
/* cpu_train.c — the CPU trainer row (trainer.h): the model on the CPU
 * kernels (model.h), gradients reduced by the DDP reducer's communication
 * thread while backward goes on (ddp.h), SGD on the host weights. */
#include <errno.h>
#include <stdlib.h>

#include "../kernels/cpu/ops.h"
#include "ddp.h"
#include "trainer.h"
#include "nt_clock.h"

struct cpu_train {
	const struct trainer_config *cfg;
	struct model *m;
	struct loader *ld;
	struct ddp *dd;
	float *w, *g;
	size_t n_w;
	double loss;               /* this rank's loss sum of the last step */
};

static struct cpu_train *cpu(struct trainer *t)
{
	return (struct cpu_train *)t;
}

static struct trainer *cpu_create(const struct trainer_config *cfg, struct model *m, struct comm *c,
				  struct loader *ld, struct nt_err *err)
{
	struct ddp_config dc = { cfg->bucket_mb, cfg->first_bucket_mb, cfg->overlap, cfg->timeout_s, -10 };
	struct cpu_train *t = calloc(1, sizeof(*t));
	const struct model_param *params;
	int n_params;

	if (!t) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	*t = (struct cpu_train){ .cfg = cfg, .m = m, .ld = ld, .g = model_grads(m) };
	t->w = model_weights(m, &t->n_w);
	params = model_params(m, &n_params);
	t->dd = ddp_create(&dc, c, params, n_params, t->g);
	if (!t->dd) {
		free(t);
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	return (struct trainer *)t;
}

/* accum micro-batches; the reduction of the last overlaps its backward */
static int cpu_micro_batches(struct cpu_train *t, int s, struct inject *inj, struct step_rec *r,
			     struct nt_err *err)
{
	const struct trainer_config *cfg = t->cfg;

	t->loss = 0;
	/* no zeroing pass: the first micro-batch's backward writes g */
	for (int k = 0; k < cfg->accum; k++) {
		struct loader_batch *b;
		struct batch_view v;
		double wait, fwd, bwd;
		int e;

		if ((e = loader_next(t->ld, &b, &wait, err)))
			return e;
		v = (struct batch_view){ (int)b->data.n, b->data.dense, b->data.sparse, b->data.label };
		ddp_begin(t->dd, k == cfg->accum - 1);
		/* each rank's loss is the mean over its own samples of the
		 * step; averaging the gradients over ranks then gives the
		 * mean over the global batch, as one process would */
		t->loss += model_step(t->m, &v, (double)cfg->batch * cfg->accum, k == 0, ddp_on_ready, t->dd, &fwd,
				      &bwd);
		loader_release(t->ld, b);
		r->data_wait += wait;
		r->fwd += fwd;
		r->bwd += bwd;
		trainer_inject_compute(inj, s, fwd + bwd, r);
	}
	return 0;
}

static int cpu_step(struct trainer *tr, int s, struct inject *inj, struct step_rec *r, bool *ret_bad_data,
		    struct nt_err *err)
{
	struct cpu_train *t = cpu(tr);
	double t1;
	int e;

	*ret_bad_data = false;
	if ((e = cpu_micro_batches(t, s, inj, r, err))) {
		*ret_bad_data = true;
		return e;
	}
	if ((e = ddp_finish(t->dd, &r->comm_exposed, &r->comm, err)))
		return e;
	inject_step_end(inj, s);
	t1 = nt_mono_ms();
	cpu_sgd_scaled(t->w, t->g, t->n_w, (float)t->cfg->lr, ddp_scale(t->dd));
	r->opt = nt_mono_ms() - t1;
	return 0;
}

/* the global mean loss of the step */
static int cpu_loss(struct trainer *tr, struct step_rec *r, struct nt_err *err)
{
	struct cpu_train *t = cpu(tr);
	double stats[2] = { t->loss, (double)t->cfg->batch * t->cfg->accum };
	int e;

	if ((e = ddp_allreduce_double(t->dd, stats, 2, err)))
		return e;
	r->loss = stats[0] / stats[1];
	return 0;
}

static void cpu_rebuild(struct trainer *tr)
{
	ddp_rebuild(cpu(tr)->dd);
}

static int cpu_allreduce_d(struct trainer *tr, double *x, size_t n, struct nt_err *err)
{
	return ddp_allreduce_double(cpu(tr)->dd, x, n, err);
}

static void cpu_info(const struct trainer *tr, struct trainer_info *ret)
{
	const struct cpu_train *t = (const struct cpu_train *)tr;

	*ret = (struct trainer_info){ .buckets = ddp_bucket_count(t->dd), .comm_boosted = ddp_comm_boosted(t->dd) };
}

static void cpu_free(struct trainer *tr)
{
	struct cpu_train *t = cpu(tr);

	if (!t)
		return;
	ddp_free(t->dd);
	free(t);
}

const struct trainer_ops cpu_trainer = {
	.name = "cpu",
	.create = cpu_create,
	.step = cpu_step,
	.loss = cpu_loss,
	.rebuild = cpu_rebuild,
	.allreduce_d = cpu_allreduce_d,
	.info = cpu_info,
	.free = cpu_free,
};
