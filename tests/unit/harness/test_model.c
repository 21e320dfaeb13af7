/* SPDX-License-Identifier: MIT */
/* test_model.c — gradient checks of the CPU kernels through both models:
 * analytic gradients (float32 kernels) against central finite differences
 * of an independent double-precision reference of the same network. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../../kernels/cpu/ops.h"
#include "data.h"
#include "model.h"
#include "model_test.h"

#define N 3          /* samples */
#define ROWS 50      /* embedding rows, small so finite differences are cheap */

/* ---- the double-precision reference --------------------------------------- */

struct ref {
	const struct model_param *p;
	int np;
	double *w;
	const struct batch_view *b;
	enum model_kind kind;
	int depth;
};

static const double *P(const struct ref *r, const char *name)
{
	for (int i = 0; i < r->np; i++)
		if (!strcmp(r->p[i].name, name))
			return r->w + r->p[i].offset;
	fail_msg("no parameter %s", name);
	return NULL;
}

/* y[out] = W x + b, then ReLU */
static void lin(const double *W, const double *b, const double *x, double *y, int in, int out, int relu)
{
	for (int o = 0; o < out; o++) {
		double s = b[o];

		for (int k = 0; k < in; k++)
			s += W[(size_t)o * in + k] * x[k];
		y[o] = relu && s < 0 ? 0 : s;
	}
}

static double ref_loss(const struct ref *r)
{
	double loss = 0;
	static double h1[1024], h2[1024], z[432], t1[256], t2[256], logit;
	char name[32];

	for (int i = 0; i < r->b->n; i++) {
		if (r->kind == MODEL_DLRM_SMALL) {
			double x[DLRM_DENSE];

			for (int k = 0; k < DLRM_DENSE; k++)
				x[k] = r->b->dense[i * DLRM_DENSE + k];
			lin(P(r, "bot.0.weight"), P(r, "bot.0.bias"), x, h1, 13, 256, 1);
			lin(P(r, "bot.1.weight"), P(r, "bot.1.bias"), h1, h2, 256, 128, 1);
			lin(P(r, "bot.2.weight"), P(r, "bot.2.bias"), h2, z, 128, 16, 1);
			for (int t = 0; t < DLRM_TABLES; t++) {
				snprintf(name, sizeof(name), "emb.%d", t);
				for (int d = 0; d < DLRM_DIM; d++) {
					double s = 0;

					for (int j = 0; j < DLRM_BAG; j++)
						s += P(r, name)[(size_t)r->b->sparse[(i * DLRM_TABLES + t) * DLRM_BAG + j] * DLRM_DIM + d];
					z[16 + 16 * t + d] = s;
				}
			}
			lin(P(r, "top.0.weight"), P(r, "top.0.bias"), z, t1, 432, 256, 1);
			lin(P(r, "top.1.weight"), P(r, "top.1.bias"), t1, t2, 256, 128, 1);
			lin(P(r, "top.2.weight"), P(r, "top.2.bias"), t2, &logit, 128, 1, 0);
		} else {
			double cur[64], nxt[64];
			int w = 16;

			for (int k = 0; k < w; k++)
				cur[k] = r->b->dense[i * w + k];
			for (int l = 0; l <= r->depth; l++) {
				char wn[32], bn[32];

				snprintf(wn, sizeof(wn), "mlp.%d.weight", l);
				snprintf(bn, sizeof(bn), "mlp.%d.bias", l);
				lin(P(r, wn), P(r, bn), cur, l < r->depth ? nxt : &logit, w, l < r->depth ? w : 1, l < r->depth);
				memcpy(cur, nxt, sizeof(cur));
			}
		}
		double y = r->b->label[i];

		loss += (logit > 0 ? logit + log1p(exp(-logit)) : log1p(exp(logit))) - y * logit;
	}
	return loss / r->b->n;
}

/* ---- the check ------------------------------------------------------------- */

static void gradcheck(const struct model_config *cfg)
{
	struct data_spec spec = { (uint32_t)model_dense_width(cfg),
				  cfg->kind == MODEL_DLRM_SMALL ? DLRM_TABLES * DLRM_BAG : 0, ROWS, 7 };
	float dense[N * 64], label[N];
	int32_t sparse[N * DLRM_TABLES * DLRM_BAG];
	struct batch_data bd = { N, spec.dense_width, spec.sparse_width, dense, sparse, label };
	struct batch_view v = { N, dense, sparse, label };
	struct model *m = model_create(cfg, N, 3);
	const struct model_param *params;
	size_t nw;
	float *w, *g;
	int np, checked = 0;
	double worst = 0;
	struct ref r;

	assert_non_null(m);
	data_synth_batch(&spec, 100, &bd);
	/* the same embedding rows in several bags: accumulation is exercised */
	if (spec.sparse_width)
		sparse[1] = sparse[0];
	params = model_params(m, &np);
	w = model_weights(m, &nw);
	g = model_grads(m);
	memset(g, 0x7f, nw * sizeof(float));   /* garbage: the first micro-batch must overwrite it */
	model_step(m, &v, N, true, NULL, NULL, NULL, NULL);

	r = (struct ref){ params, np, malloc(nw * sizeof(double)), &v, cfg->kind, cfg->mlp_depth };
	for (size_t i = 0; i < nw; i++)
		r.w[i] = w[i];
	/* every parameter tensor: its largest-gradient entry and a few others */
	for (int p = 0; p < np; p++) {
		size_t off = params[p].offset, cnt = params[p].count, best = off;

		for (size_t i = off; i < off + cnt; i++)
			if (fabsf(g[i]) > fabsf(g[best]))
				best = i;
		for (int k = 0; k < 4; k++) {
			size_t i = k == 0 ? best : off + (size_t)(rand() % (int)cnt);
			double save = r.w[i], h = 1e-6 * fmax(1.0, fabs(save)), lp, lm, num, err;

			r.w[i] = save + h;
			lp = ref_loss(&r);
			r.w[i] = save - h;
			lm = ref_loss(&r);
			r.w[i] = save;
			num = (lp - lm) / (2 * h);
			err = fabs(num - g[i]) / fmax(1e-4, fabs(num) + fabs(g[i]));
			if (err > worst)
				worst = err;
			if (err > 2e-3)
				fail_msg("%s[%zu]: analytic %.8g, numeric %.8g (relative error %.2e)",
					 params[p].name, i - off, (double)g[i], num, err);
			checked++;
		}
	}
	print_message("%d gradients checked over %d tensors, worst relative error %.2e\n", checked, np, worst);
	free(r.w);
	model_free(m);
}

static void test_gradcheck_dlrm(void **state)
{
	struct model_config cfg = { MODEL_DLRM_SMALL, 0, 0, ROWS };

	(void)state;
	gradcheck(&cfg);
}

static void test_gradcheck_mlp(void **state)
{
	struct model_config cfg = { MODEL_MLP, 3, 16, 0 };

	(void)state;
	gradcheck(&cfg);
}

/* the forward pass agrees with the reference too (no transposed GEMM) */
static void test_forward_matches_reference(void **state)
{
	struct model_config cfg = { MODEL_DLRM_SMALL, 0, 0, ROWS };
	struct data_spec spec = { 13, DLRM_TABLES * DLRM_BAG, ROWS, 9 };
	float dense[N * 13], label[N], logit[N], dl[N];
	int32_t sparse[N * DLRM_TABLES * DLRM_BAG];
	struct batch_data bd = { N, 13, spec.sparse_width, dense, sparse, label };
	struct batch_view v = { N, dense, sparse, label };
	struct model *m = model_create(&cfg, N, 5);
	const struct model_param *params;
	size_t nw;
	float *w;
	int np;
	struct ref r;
	double loss_ref, loss;

	(void)state;
	data_synth_batch(&spec, 0, &bd);
	params = model_params(m, &np);
	w = model_weights(m, &nw);
	r = (struct ref){ params, np, malloc(nw * sizeof(double)), &v, MODEL_DLRM_SMALL, 0 };
	for (size_t i = 0; i < nw; i++)
		r.w[i] = w[i];
	model_forward(m, &v, logit);
	loss = cpu_bce_logits(logit, label, dl, N, N) / N;
	loss_ref = ref_loss(&r);
	assert_true(fabs(loss - loss_ref) < 1e-5 * fmax(1, fabs(loss_ref)));
	free(r.w);
	model_free(m);
}

/* the first micro-batch writes the gradients, later ones add to them */
static void test_accumulation(void **state)
{
	struct model_config cfg = { MODEL_DLRM_SMALL, 0, 0, ROWS };
	struct data_spec spec = { 13, DLRM_TABLES * DLRM_BAG, ROWS, 9 };
	float dense[N * 13], label[N];
	int32_t sparse[N * DLRM_TABLES * DLRM_BAG];
	struct batch_data bd = { N, 13, spec.sparse_width, dense, sparse, label };
	struct batch_view v = { N, dense, sparse, label };
	struct model *m = model_create(&cfg, N, 5);
	size_t nw;
	float *g = model_grads(m), *once;

	(void)state;
	model_weights(m, &nw);
	data_synth_batch(&spec, 0, &bd);
	memset(g, 0x7f, nw * sizeof(float));
	model_step(m, &v, N, true, NULL, NULL, NULL, NULL);
	once = malloc(nw * sizeof(float));
	memcpy(once, g, nw * sizeof(float));
	model_step(m, &v, N, false, NULL, NULL, NULL, NULL);
	for (size_t i = 0; i < nw; i++)
		if (fabsf(g[i] - 2 * once[i]) > 1e-6f * fmaxf(1.0f, fabsf(once[i])))
			fail_msg("gradient %zu: %g after two micro-batches, %g after one", i, (double)g[i], (double)once[i]);
	model_step(m, &v, N, true, NULL, NULL, NULL, NULL);  /* a new step starts over */
	assert_memory_equal(g, once, nw * sizeof(float));
	free(once);
	model_free(m);
}

static void test_init_is_deterministic(void **state)
{
	struct model_config cfg = { MODEL_DLRM_SMALL, 0, 0, ROWS };
	struct model *a = model_create(&cfg, 4, 11), *b = model_create(&cfg, 64, 11), *c = model_create(&cfg, 4, 12);
	size_t na, nb;
	float *wa = model_weights(a, &na), *wb = model_weights(b, &nb);

	(void)state;
	assert_int_equal(na, nb);
	assert_memory_equal(wa, wb, na * sizeof(float));        /* batch size does not matter */
	assert_memory_not_equal(wa, model_weights(c, NULL), na * sizeof(float));
	model_free(a);
	model_free(b);
	model_free(c);
	model_free(NULL);
}

/* What the GPU trainer builds its copy from: DESIGN.md's layers, with the
 * param indexes of the flat layout. */
static void test_layer_info(void **state)
{
	struct model_config cfg = { MODEL_DLRM_SMALL, 0, 0, ROWS }, mc = { MODEL_MLP, 3, 64, 0 };
	struct model *m = model_create(&cfg, 4, 1), *p = model_create(&mc, 4, 1);
	struct model_layer_info li[8];
	const struct model_param *pa;
	int n, np;
	static const int bot[] = { 13, 256, 128, 16 }, top[] = { 432, 256, 128, 1 };

	(void)state;
	pa = model_params(m, &np);
	assert_int_equal(model_layers(m, false, li, 8), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(li[i].in, bot[i]);
		assert_int_equal(li[i].out, bot[i + 1]);
		assert_true(li[i].relu);                       /* ReLU after every bottom layer */
		assert_int_equal(pa[li[i].pw].count, (size_t)bot[i] * bot[i + 1]);
		assert_int_equal(pa[li[i].pb].count, (size_t)bot[i + 1]);
	}
	assert_int_equal(model_layers(m, true, li, 8), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(li[i].in, top[i]);
		assert_int_equal(li[i].out, top[i + 1]);
		assert_int_equal(li[i].relu, i < 2);           /* not after the last */
	}
	assert_int_equal(model_emb_param0(m), 6);
	for (int t = 0; t < 26; t++) {
		assert_int_equal(pa[6 + t].count, (size_t)ROWS * 16);
		if (t)                                         /* tables back to back */
			assert_int_equal(pa[6 + t].offset, pa[5 + t].offset + pa[5 + t].count);
	}
	assert_int_equal(model_config_of(m)->rows, ROWS);

	assert_int_equal(model_layers(p, false, li, 8), 0);
	n = model_layers(p, true, li, 8);
	assert_int_equal(n, 4);
	assert_int_equal(li[3].in, 64);
	assert_int_equal(li[3].out, 1);
	assert_false(li[3].relu);
	assert_int_equal(model_emb_param0(p), -1);
	model_free(m);
	model_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gradcheck_dlrm),
		cmocka_unit_test(test_gradcheck_mlp),
		cmocka_unit_test(test_forward_matches_reference),
		cmocka_unit_test(test_accumulation),
		cmocka_unit_test(test_init_is_deterministic),
		cmocka_unit_test(test_layer_info),
	};

	return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
