/* SPDX-License-Identifier: MIT */
/* model.c — see model.h. */
#include "model.h"
#include "model_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../kernels/cpu/ops.h"
#include "nt_clock.h"

struct layer {
	int in, out;
	int pw, pb;        /* param indexes of W and b */
	int relu;
	float *y;          /* output activations [max_batch][out] */
	float *dy;         /* gradient of the output */
};

struct model {
	struct model_config cfg;
	int max_batch;
	struct model_param *params;
	int n_params;
	float *w, *g;
	size_t n_w;
	struct layer *bot, *top;   /* dlrm: bottom and top MLP; mlp: top only */
	int n_bot, n_top;
	int emb_param0;            /* param index of table 0 */
	float *z, *dz;             /* dlrm concatenation [max_batch][432] */
	float *dlogit;
};

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [-a, a) */
static float uniform(uint64_t *s, float a)
{
	return (float)((double)(splitmix64(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0) * a;
}

static int add_param(struct model *m, const char *name, size_t count)
{
	struct model_param *p = &m->params[m->n_params];

	snprintf(p->name, sizeof(p->name), "%s", name);
	p->offset = m->n_w;
	p->count = count;
	m->n_w += count;
	return m->n_params++;
}

static void *xalloc(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, n ? n : 64))
		return NULL;
	memset(p, 0, n);
	return p;
}

/* Weights and gradients: 2 MiB aligned and marked for transparent huge
 * pages (hosts commonly run THP in madvise mode), since the embedding bags
 * touch them at random: 4 KiB pages would miss the TLB on most lookups. */
static void *xalloc_huge(size_t n)
{
	const size_t huge = 2u << 20;
	size_t len = (n + huge - 1) / huge * huge;
	void *p = NULL;

	if (posix_memalign(&p, huge, len ? len : huge))
		return NULL;
	madvise(p, len, MADV_HUGEPAGE);   /* advice: failure is harmless */
	memset(p, 0, len);
	return p;
}

static int mlp_layers(struct model *m, struct layer *ls, const int *dims, int n, int relu_last,
		      const char *prefix)
{
	char name[32];

	for (int i = 0; i < n; i++) {
		ls[i].in = dims[i];
		ls[i].out = dims[i + 1];
		ls[i].relu = i < n - 1 || relu_last;
		snprintf(name, sizeof(name), "%s%d.weight", prefix, i);
		ls[i].pw = add_param(m, name, (size_t)dims[i] * dims[i + 1]);
		snprintf(name, sizeof(name), "%s%d.bias", prefix, i);
		ls[i].pb = add_param(m, name, (size_t)dims[i + 1]);
		ls[i].y = xalloc((size_t)m->max_batch * ls[i].out * sizeof(float));
		ls[i].dy = xalloc((size_t)m->max_batch * ls[i].out * sizeof(float));
		if (!ls[i].y || !ls[i].dy)
			return -1;
	}
	return 0;
}

int model_dense_width(const struct model_config *cfg)
{
	return cfg->kind == MODEL_DLRM_SMALL ? DLRM_DENSE : cfg->mlp_width;
}

struct model *model_create(const struct model_config *cfg, int max_batch, uint64_t seed)
{
	static const int bot_dims[] = { DLRM_DENSE, 256, 128, DLRM_DIM };
	static const int top_dims[] = { DLRM_DIM * (DLRM_TABLES + 1), 256, 128, 1 };
	struct model *m = calloc(1, sizeof(*m));
	int max_params;

	if (!m || max_batch <= 0)
		goto out_fail;
	m->cfg = *cfg;
	if (!m->cfg.rows)
		m->cfg.rows = DLRM_ROWS;
	m->max_batch = max_batch;
	if (cfg->kind == MODEL_MLP && (cfg->mlp_depth < 1 || cfg->mlp_width < 1))
		goto out_fail;
	max_params = 2 * 8 + DLRM_TABLES + 2 * (cfg->kind == MODEL_MLP ? cfg->mlp_depth + 1 : 0);
	m->params = calloc((size_t)max_params, sizeof(*m->params));
	if (!m->params)
		goto out_fail;
	if (cfg->kind == MODEL_DLRM_SMALL) {
		m->n_bot = 3;
		m->n_top = 3;
		m->bot = calloc(3, sizeof(*m->bot));
		m->top = calloc(3, sizeof(*m->top));
		if (!m->bot || !m->top || mlp_layers(m, m->bot, bot_dims, 3, 1, "bot."))
			goto out_fail;
		m->emb_param0 = m->n_params;
		for (int t = 0; t < DLRM_TABLES; t++) {
			char name[32];

			snprintf(name, sizeof(name), "emb.%d", t);
			add_param(m, name, (size_t)m->cfg.rows * DLRM_DIM);
		}
		if (mlp_layers(m, m->top, top_dims, 3, 0, "top."))
			goto out_fail;
		m->z = xalloc((size_t)max_batch * top_dims[0] * sizeof(float));
		m->dz = xalloc((size_t)max_batch * top_dims[0] * sizeof(float));
		if (!m->z || !m->dz)
			goto out_fail;
	} else {
		int *dims = calloc((size_t)cfg->mlp_depth + 2, sizeof(int));

		if (!dims)
			goto out_fail;
		for (int i = 0; i <= cfg->mlp_depth; i++)
			dims[i] = cfg->mlp_width;
		dims[cfg->mlp_depth + 1] = 1;
		m->n_top = cfg->mlp_depth + 1;
		m->top = calloc((size_t)m->n_top, sizeof(*m->top));
		if (!m->top || mlp_layers(m, m->top, dims, m->n_top, 0, "mlp.")) {
			free(dims);
			goto out_fail;
		}
		free(dims);
	}
	m->dlogit = xalloc((size_t)max_batch * sizeof(float));
	m->w = xalloc_huge(m->n_w * sizeof(float));
	m->g = xalloc_huge(m->n_w * sizeof(float));
	if (!m->dlogit || !m->w || !m->g)
		goto out_fail;

	/* PyTorch-like init: Linear U(-1/sqrt(in), 1/sqrt(in)); embeddings
	 * U(-1/sqrt(rows), 1/sqrt(rows)); one stream per tensor */
	for (int p = 0; p < m->n_params; p++) {
		uint64_t s = seed * 1000003u + (uint64_t)p;
		float a = 0.05f;
		struct layer *ls[2] = { m->bot, m->top };
		int nl[2] = { m->n_bot, m->n_top };

		for (int k = 0; k < 2; k++)
			for (int i = 0; i < nl[k]; i++)
				if (ls[k][i].pw == p || ls[k][i].pb == p)
					a = 1.0f / sqrtf((float)ls[k][i].in);
		if (cfg->kind == MODEL_DLRM_SMALL && p >= m->emb_param0 && p < m->emb_param0 + DLRM_TABLES)
			a = 1.0f / sqrtf((float)m->cfg.rows);
		for (size_t i = 0; i < m->params[p].count; i++)
			m->w[m->params[p].offset + i] = uniform(&s, a);
	}
	return m;
out_fail:
	model_free(m);
	return NULL;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	for (int i = 0; m->bot && i < m->n_bot; i++) {
		free(m->bot[i].y);
		free(m->bot[i].dy);
	}
	for (int i = 0; m->top && i < m->n_top; i++) {
		free(m->top[i].y);
		free(m->top[i].dy);
	}
	free(m->bot);
	free(m->top);
	free(m->z);
	free(m->dz);
	free(m->dlogit);
	free(m->w);
	free(m->g);
	free(m->params);
	free(m);
}

const struct model_param *model_params(const struct model *m, int *ret_n)
{
	*ret_n = m->n_params;
	return m->params;
}

float *model_weights(struct model *m, size_t *ret_n)
{
	if (ret_n)
		*ret_n = m->n_w;
	return m->w;
}

float *model_grads(struct model *m)
{
	return m->g;
}

int model_layers(const struct model *m, bool top, struct model_layer_info *out, int max)
{
	const struct layer *ls = top ? m->top : m->bot;
	int n = top ? m->n_top : m->n_bot;

	for (int i = 0; i < n && i < max; i++)
		out[i] = (struct model_layer_info){ ls[i].in, ls[i].out, ls[i].pw, ls[i].pb, ls[i].relu != 0 };
	return n;
}

int model_emb_param0(const struct model *m)
{
	return m->cfg.kind == MODEL_DLRM_SMALL ? m->emb_param0 : -1;
}

const struct model_config *model_config_of(const struct model *m)
{
	return &m->cfg;
}

#define W(m, p) ((m)->w + (m)->params[p].offset)
#define G(m, p) ((m)->g + (m)->params[p].offset)

static const float *mlp_fwd(struct model *m, struct layer *ls, int nl, const float *x, int n)
{
	for (int i = 0; i < nl; i++) {
		cpu_linear_fwd(x, W(m, ls[i].pw), W(m, ls[i].pb), ls[i].y, n, ls[i].in, ls[i].out);
		if (ls[i].relu)
			cpu_relu_fwd(ls[i].y, (size_t)n * ls[i].out);
		x = ls[i].y;
	}
	return x;
}

/* Backward through ls from dy of the last layer (already in ls[nl-1].dy);
 * writes dx of the first layer into dx (NULL: not needed). */
static void mlp_bwd(struct model *m, struct layer *ls, int nl, const float *x, float *dx, int n,
		    bool first, void (*on_ready)(void *, int), void *ctx)
{
	for (int i = nl - 1; i >= 0; i--) {
		const float *in = i ? ls[i - 1].y : x;
		float *din = i ? ls[i - 1].dy : dx;

		if (ls[i].relu)
			cpu_relu_bwd(ls[i].y, ls[i].dy, (size_t)n * ls[i].out);
		cpu_linear_bwd(in, W(m, ls[i].pw), ls[i].dy, din, G(m, ls[i].pw), G(m, ls[i].pb),
			       n, ls[i].in, ls[i].out, first);
		if (on_ready) {
			on_ready(ctx, ls[i].pb);
			on_ready(ctx, ls[i].pw);
		}
	}
}

static const float *forward(struct model *m, const struct batch_view *b)
{
	const int zw = DLRM_DIM * (DLRM_TABLES + 1), n = b->n;
	const float *bo;

	if (m->cfg.kind == MODEL_MLP)
		return mlp_fwd(m, m->top, m->n_top, b->dense, n);
	bo = mlp_fwd(m, m->bot, m->n_bot, b->dense, n);
	for (int i = 0; i < n; i++)
		memcpy(m->z + (size_t)i * zw, bo + (size_t)i * DLRM_DIM, DLRM_DIM * sizeof(float));
	for (int t = 0; t < DLRM_TABLES; t++)
		cpu_embbag_fwd(W(m, m->emb_param0 + t), b->sparse + t * DLRM_BAG, DLRM_TABLES * DLRM_BAG,
			       m->z + DLRM_DIM * (t + 1), n, DLRM_BAG, DLRM_DIM, zw);
	return mlp_fwd(m, m->top, m->n_top, m->z, n);
}

void model_forward(struct model *m, const struct batch_view *b, float *out)
{
	memcpy(out, forward(m, b), (size_t)b->n * sizeof(float));
}

double model_step(struct model *m, const struct batch_view *b, double scale_n, bool first,
		  void (*on_ready)(void *ctx, int param), void *ctx,
		  double *fwd_ms, double *bwd_ms)
{
	const int zw = DLRM_DIM * (DLRM_TABLES + 1), n = b->n;
	double t0 = nt_mono_ms(), t1, loss;
	const float *logit = forward(m, b);

	t1 = nt_mono_ms();
	loss = cpu_bce_logits(logit, b->label, m->top[m->n_top - 1].dy, n, scale_n);
	if (m->cfg.kind == MODEL_MLP) {
		mlp_bwd(m, m->top, m->n_top, b->dense, NULL, n, first, on_ready, ctx);
	} else {
		struct layer *l3 = &m->bot[m->n_bot - 1];

		mlp_bwd(m, m->top, m->n_top, m->z, m->dz, n, first, on_ready, ctx);
		for (int t = DLRM_TABLES - 1; t >= 0; t--) {
			cpu_embbag_bwd(m->dz + DLRM_DIM * (t + 1), zw, b->sparse + t * DLRM_BAG,
				       DLRM_TABLES * DLRM_BAG, G(m, m->emb_param0 + t), m->cfg.rows, n,
				       DLRM_BAG, DLRM_DIM, first);
			if (on_ready)
				on_ready(ctx, m->emb_param0 + t);
		}
		for (int i = 0; i < n; i++)
			memcpy(l3->dy + (size_t)i * DLRM_DIM, m->dz + (size_t)i * zw, DLRM_DIM * sizeof(float));
		mlp_bwd(m, m->bot, m->n_bot, b->dense, NULL, n, first, on_ready, ctx);
	}
	if (fwd_ms)
		*fwd_ms = t1 - t0;
	if (bwd_ms)
		*bwd_ms = nt_mono_ms() - t1;
	return loss;
}
