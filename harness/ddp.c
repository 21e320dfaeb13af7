/* SPDX-License-Identifier: MIT */
/* ddp.c — see ddp.h. */
#include "ddp.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nt_clock.h"

struct bucket {
	int *params;
	int n_params;
	int pending;               /* params not yet ready this step */
	size_t count;              /* floats */
	float *view;               /* its gradients when they are one contiguous
				    * range of the gradient buffer: reduced in place */
	float *buf;                /* otherwise: a buffer they are copied through */
	bool queued, done;
};

enum job_kind { JOB_BUCKET, JOB_DOUBLES, JOB_QUIT };

struct ddp {
	struct ddp_config cfg;
	struct comm *comm;
	const struct model_param *params;
	int n_params;
	float *grads;
	struct bucket *buckets;
	int n_buckets;
	int *bucket_of;            /* param -> bucket */
	int *order;                /* ready order observed */
	int n_order;
	bool sync;
	int step;

	pthread_t thread;
	bool thread_started;
	bool comm_boosted;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int *queue;                /* bucket indexes, FIFO */
	int q_head, q_tail;
	enum job_kind job;         /* JOB_DOUBLES / JOB_QUIT requests */
	double *dbl;
	size_t n_dbl;
	bool dbl_done;
	int done_count;
	bool failed;
	struct nt_err err;
	double comm_ms;
	const char *current;       /* what the thread is doing, for timeouts */
};

/* Sum the bucket over ranks, in place in the gradient buffer where it is one
 * contiguous range (gradient-as-bucket-view), else through a copy.  The
 * division by the world size is left to the optimizer (ddp_scale()), which
 * reads the gradients once anyway. */
static void reduce_bucket(struct ddp *d, struct bucket *b)
{
	float *data = b->view;
	struct nt_err e;
	size_t off = 0;
	double t0;

	if (d->comm->world == 1)
		return;
	if (!data) {
		for (int i = 0; i < b->n_params; i++) {
			const struct model_param *p = &d->params[b->params[i]];

			memcpy(b->buf + off, d->grads + p->offset, p->count * sizeof(float));
			off += p->count;
		}
		data = b->buf;
	}
	t0 = nt_mono_ms();
	if (d->comm->ops->allreduce_sum(d->comm, data, b->count, &e)) {
		pthread_mutex_lock(&d->mu);
		d->failed = true;
		d->err = e;
		pthread_cond_broadcast(&d->cv);
		pthread_mutex_unlock(&d->mu);
		return;
	}
	pthread_mutex_lock(&d->mu);
	d->comm_ms += nt_mono_ms() - t0;
	pthread_mutex_unlock(&d->mu);
	if (b->view)
		return;
	off = 0;
	for (int i = 0; i < b->n_params; i++) {
		const struct model_param *p = &d->params[b->params[i]];

		memcpy(d->grads + p->offset, b->buf + off, p->count * sizeof(float));
		off += p->count;
	}
}

static void *comm_main(void *arg)
{
	struct ddp *d = arg;
	struct nt_err e;

	/* A shared-memory all-reduce needs every rank's communication thread
	 * on a CPU at the same time.  When ranks fill all cores with compute,
	 * plain time-slicing makes them miss each other and the reduction
	 * stretches over many slices.  Run this thread ahead of compute: a
	 * higher priority (negative nice) where allowed (CAP_SYS_NICE, e.g.
	 * root); without it the thread keeps the process's priority, and
	 * ddp_comm_boosted() says so (the summary reports it). */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), d->cfg.comm_nice) == 0)
		d->comm_boosted = true;
	/* named, so that top -H, the observer and tests can tell it apart */
	pthread_setname_np(pthread_self(), "nt-ddp-comm");

	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (d->q_head == d->q_tail && d->job == JOB_BUCKET)
			pthread_cond_wait(&d->cv, &d->mu);
		if (d->job == JOB_QUIT)
			break;
		if (d->job == JOB_DOUBLES) {
			int r;

			pthread_mutex_unlock(&d->mu);
			r = d->comm->ops->allreduce_sum_d(d->comm, d->dbl, d->n_dbl, &e);
			pthread_mutex_lock(&d->mu);
			if (r) {
				d->failed = true;
				d->err = e;
			}
			d->job = JOB_BUCKET;
			d->dbl_done = true;
			pthread_cond_broadcast(&d->cv);
			continue;
		}
		int bi = d->queue[d->q_head++ % d->n_buckets];

		pthread_mutex_unlock(&d->mu);
		reduce_bucket(d, &d->buckets[bi]);
		pthread_mutex_lock(&d->mu);
		d->buckets[bi].done = true;
		d->done_count++;
		pthread_cond_broadcast(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

static void free_buckets(struct ddp *d)
{
	for (int i = 0; d->buckets && i < d->n_buckets; i++) {
		free(d->buckets[i].params);
		free(d->buckets[i].buf);
	}
	free(d->buckets);
	d->buckets = NULL;
	d->n_buckets = 0;
}

int ddp_plan_buckets(const struct model_param *params, int n_params, const int *order, double first_mb,
		     double cap_mb, int *end)
{
	size_t cap_first = (size_t)(first_mb * 1048576.0 / 4), cap = (size_t)(cap_mb * 1048576.0 / 4);
	int n = 0, start = 0;

	while (start < n_params) {
		size_t limit = n == 0 ? cap_first : cap, count = 0;
		int e = start;

		while (e < n_params && (e == start || count + params[order[e]].count <= limit))
			count += params[order[e++]].count;
		end[n++] = e;
		start = e;
	}
	return n;
}

size_t ddp_bucket_span(const struct model_param *params, const int *idx, int n, size_t *ret_count)
{
	size_t count = 0, lo = (size_t)-1, hi = 0;

	/* contiguous: lowest offset + count is the highest end */
	for (int i = 0; i < n; i++) {
		const struct model_param *p = &params[idx[i]];

		count += p->count;
		lo = p->offset < lo ? p->offset : lo;
		hi = p->offset + p->count > hi ? p->offset + p->count : hi;
	}
	*ret_count = count;
	return n > 0 && hi - lo == count ? lo : (size_t)-1;
}

/* Buckets over params in the given order (ddp_plan_buckets), each reduced
 * in place where its gradients are one contiguous range. */
static int build_buckets(struct ddp *d, const int *order)
{
	int *end = calloc((size_t)d->n_params, sizeof(int)), n, start = 0;

	free_buckets(d);
	d->buckets = calloc((size_t)d->n_params, sizeof(*d->buckets));
	if (!d->buckets || !end) {
		free(end);
		return -ENOMEM;
	}
	n = ddp_plan_buckets(d->params, d->n_params, order, d->cfg.first_bucket_mb, d->cfg.bucket_mb, end);
	for (int bi = 0; bi < n; start = end[bi++]) {
		struct bucket *b = &d->buckets[d->n_buckets];
		size_t lo;

		b->n_params = end[bi] - start;
		b->params = malloc((size_t)b->n_params * sizeof(int));
		if (!b->params) {
			free(end);
			return -ENOMEM;
		}
		memcpy(b->params, order + start, (size_t)b->n_params * sizeof(int));
		lo = ddp_bucket_span(d->params, b->params, b->n_params, &b->count);
		if (lo != (size_t)-1) {
			b->view = d->grads + lo;
		} else if (!(b->buf = malloc(b->count * sizeof(float)))) {
			free(end);
			return -ENOMEM;
		}
		for (int i = 0; i < b->n_params; i++)
			d->bucket_of[b->params[i]] = d->n_buckets;
		d->n_buckets++;
	}
	free(end);
	return 0;
}

struct ddp *ddp_create(const struct ddp_config *cfg, struct comm *comm,
		       const struct model_param *params, int n_params, float *grads)
{
	struct ddp *d = calloc(1, sizeof(*d));
	int *rev;

	if (!d)
		return NULL;
	d->cfg = *cfg;
	d->comm = comm;
	d->params = params;
	d->n_params = n_params;
	d->grads = grads;
	d->bucket_of = calloc((size_t)n_params, sizeof(int));
	d->order = calloc((size_t)n_params, sizeof(int));
	d->queue = calloc((size_t)n_params, sizeof(int));
	rev = calloc((size_t)n_params, sizeof(int));
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	if (!d->bucket_of || !d->order || !d->queue || !rev) {
		free(rev);
		ddp_free(d);
		return NULL;
	}
	for (int i = 0; i < n_params; i++)
		rev[i] = n_params - 1 - i;   /* reverse parameter order */
	if (build_buckets(d, rev) || pthread_create(&d->thread, NULL, comm_main, d)) {
		free(rev);
		ddp_free(d);
		return NULL;
	}
	d->thread_started = true;
	free(rev);
	return d;
}

void ddp_free(struct ddp *d)
{
	if (!d)
		return;
	if (d->thread_started) {
		pthread_mutex_lock(&d->mu);
		d->job = JOB_QUIT;
		pthread_cond_broadcast(&d->cv);
		pthread_mutex_unlock(&d->mu);
		pthread_join(d->thread, NULL);
	}
	free_buckets(d);
	free(d->bucket_of);
	free(d->order);
	free(d->queue);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	free(d);
}

static void enqueue(struct ddp *d, int bi)
{
	d->buckets[bi].queued = true;
	d->queue[d->q_tail++ % d->n_buckets] = bi;
	pthread_cond_broadcast(&d->cv);
}

void ddp_begin(struct ddp *d, bool sync)
{
	d->sync = sync;
	if (!sync)
		return;
	pthread_mutex_lock(&d->mu);
	for (int i = 0; i < d->n_buckets; i++) {
		d->buckets[i].pending = d->buckets[i].n_params;
		d->buckets[i].queued = d->buckets[i].done = false;
	}
	d->q_head = d->q_tail = 0;
	d->done_count = 0;
	d->comm_ms = 0;
	d->n_order = 0;
	pthread_mutex_unlock(&d->mu);
}

void ddp_on_ready(void *ctx, int p)
{
	struct ddp *d = ctx;
	int bi;

	if (!d->sync)
		return;
	d->order[d->n_order++] = p;
	bi = d->bucket_of[p];
	if (--d->buckets[bi].pending == 0 && d->cfg.overlap) {
		pthread_mutex_lock(&d->mu);
		enqueue(d, bi);
		pthread_mutex_unlock(&d->mu);
	}
}

int ddp_finish(struct ddp *d, double *exposed_ms, double *comm_ms, struct nt_err *err)
{
	double t0 = nt_mono_ms();
	struct timespec deadline;
	int r = 0;

	deadline = nt_deadline(CLOCK_REALTIME, d->cfg.timeout_s);
	pthread_mutex_lock(&d->mu);
	if (!d->cfg.overlap)
		for (int i = 0; i < d->n_buckets; i++)
			enqueue(d, i);
	while (!d->failed && d->done_count < d->n_buckets) {
		if (pthread_cond_timedwait(&d->cv, &d->mu, &deadline) == ETIMEDOUT) {
			int next = d->q_head < d->q_tail ? d->queue[d->q_head % d->n_buckets] : -1;

			if (d->comm->world == 2)
				err_set(err, -ETIMEDOUT, "all-reduce of gradient bucket %d (step %d) not done after %.0f s: peer rank %d stopped responding",
					 next, d->step, d->cfg.timeout_s, 1 - d->comm->rank);
			else
				err_set(err, -ETIMEDOUT, "all-reduce of gradient bucket %d (step %d) not done after %.0f s: one of the %d peer ranks stopped responding",
					 next, d->step, d->cfg.timeout_s, d->comm->world - 1);
			r = -ETIMEDOUT;
			break;
		}
	}
	if (!r && d->failed) {
		r = err_set(err, d->err.code, "%s", d->err.msg);
	}
	if (comm_ms)
		*comm_ms = d->comm_ms;
	pthread_mutex_unlock(&d->mu);
	*exposed_ms = nt_mono_ms() - t0;
	d->step++;
	return r;
}

void ddp_rebuild(struct ddp *d)
{
	if (d->n_order == d->n_params)
		build_buckets(d, d->order);
}

int ddp_allreduce_double(struct ddp *d, double *x, size_t n, struct nt_err *err)
{
	int r = 0;

	if (d->comm->world == 1)
		return 0;
	struct timespec deadline;

	deadline = nt_deadline(CLOCK_REALTIME, d->cfg.timeout_s);
	pthread_mutex_lock(&d->mu);
	d->dbl = x;
	d->n_dbl = n;
	d->dbl_done = false;
	d->job = JOB_DOUBLES;
	pthread_cond_broadcast(&d->cv);
	while (!d->dbl_done && !d->failed)
		if (pthread_cond_timedwait(&d->cv, &d->mu, &deadline) == ETIMEDOUT) {
			err_set(err, -ETIMEDOUT, "loss all-reduce (step %d) not done after %.0f s: %s stopped responding",
				 d->step, d->cfg.timeout_s, d->comm->world == 2 ? (d->comm->rank ? "peer rank 0" : "peer rank 1")
										 : "a peer rank");
			pthread_mutex_unlock(&d->mu);
			return -ETIMEDOUT;
		}
	if (d->failed) {
		r = err_set(err, d->err.code, "%s", d->err.msg);
	}
	pthread_mutex_unlock(&d->mu);
	return r;
}

int ddp_bucket_count(const struct ddp *d)
{
	return d->n_buckets;
}

bool ddp_comm_boosted(const struct ddp *d)
{
	return d->comm_boosted;
}

float ddp_scale(const struct ddp *d)
{
	return 1.0f / (float)d->comm->world;
}
