/* SPDX-License-Identifier: MIT */
/* loader.c — see loader.h. */
#include "loader.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "nt_clock.h"

struct enc {                    /* an encoded batch waiting for the pin thread */
	uint64_t id;
	void *buf;
	size_t len;
	bool full;
};

struct slot {                   /* a decode buffer */
	void *mem;
	struct loader_batch b;
	bool ready, in_use;
};

struct loader {
	struct loader_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t *workers, pinner;
	int n_workers;
	bool pinner_started;
	bool stop;
	struct nt_err err;         /* the first failure of a worker or the pin thread */
	bool failed;
	uint64_t next_produce;      /* next id a worker takes */
	uint64_t next_pin;          /* next id the pin thread decodes */
	uint64_t next_consume;      /* next id the trainer takes */
	struct enc *enc;
	int n_enc;
	struct slot *slots;
	int n_slots;
	size_t payload;
	bool locked;
};

static void fail(struct loader *l, int code, const char *msg)
{
	pthread_mutex_lock(&l->mu);
	if (!l->failed) {
		l->failed = true;
		err_set(&l->err, code, "%s", msg);
	}
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static uint64_t first_sample(const struct loader_config *c, uint64_t id)
{
	return (id * (uint64_t)c->world + (uint64_t)c->rank) * (uint64_t)c->batch;
}

static void *alloc_buffer(struct loader *l)
{
	void *p = NULL;

	if (l->cfg.host_alloc)
		return l->cfg.host_alloc(l->payload);
	if (posix_memalign(&p, 4096, l->payload))
		return NULL;
	memset(p, 0, l->payload); /* first touch: on this thread's node */
	return p;
}

static void *worker_main(void *arg)
{
	struct loader *l = arg;
	const struct loader_config *c = &l->cfg;
	struct batch_data d = { .n = (uint32_t)c->batch, .dense_width = c->spec.dense_width,
				.sparse_width = c->spec.sparse_width };
	struct shard_reader *sr = NULL;
	struct nt_err err;

	d.dense = malloc((size_t)c->batch * c->spec.dense_width * 4 + 4);
	d.sparse = c->spec.sparse_width ? malloc((size_t)c->batch * c->spec.sparse_width * 4) : NULL;
	d.label = malloc((size_t)c->batch * 4);
	if (!d.dense || (c->spec.sparse_width && !d.sparse) || !d.label) {
		fail(l, -ENOMEM, "loader: out of memory");
		goto out;
	}
	if (c->data_dir && !(sr = shard_open(c->data_dir, &c->spec, &err))) {
		fail(l, err.code, err.msg);
		goto out;
	}
	for (;;) {
		uint64_t id;
		void *buf;
		size_t len;
		int e;

		pthread_mutex_lock(&l->mu);
		while (!l->stop && !l->failed && l->next_produce >= l->next_pin + (uint64_t)l->n_enc)
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->stop || l->failed) {
			pthread_mutex_unlock(&l->mu);
			break;
		}
		id = l->next_produce++;
		pthread_mutex_unlock(&l->mu);

		if (sr) {
			e = shard_read(sr, first_sample(c, id), &d, &err);
			if (e) {
				fail(l, err.code, err.msg);
				break;
			}
		} else {
			data_synth_batch(&c->spec, first_sample(c, id), &d);
		}
		if (batch_encode(&d, id, c->zstd_level, &buf, &len)) {
			fail(l, -EIO, "loader: encoding a batch failed");
			break;
		}
		pthread_mutex_lock(&l->mu);
		l->enc[id % (uint64_t)l->n_enc] = (struct enc){ id, buf, len, true };
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
	}
out:
	shard_close(sr);
	free(d.dense);
	free(d.sparse);
	free(d.label);
	return NULL;
}

static void *pin_main(void *arg)
{
	struct loader *l = arg;
	struct nt_err err;
	char msg[1100];

	for (;;) {
		uint64_t id;
		struct enc e;
		struct slot *s;
		int si;

		pthread_mutex_lock(&l->mu);
		id = l->next_pin;
		si = (int)(id % (uint64_t)l->n_slots);
		while (!l->stop && !l->failed &&
		       (!l->enc[id % (uint64_t)l->n_enc].full || l->enc[id % (uint64_t)l->n_enc].id != id ||
			l->slots[si].ready || l->slots[si].in_use))
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->stop || l->failed) {
			pthread_mutex_unlock(&l->mu);
			break;
		}
		e = l->enc[id % (uint64_t)l->n_enc];
		l->enc[id % (uint64_t)l->n_enc].full = false;
		l->next_pin++;
		pthread_cond_broadcast(&l->cv);   /* a worker may go on */
		pthread_mutex_unlock(&l->mu);

		s = &l->slots[si];
		if (!l->cfg.pin && !(s->mem = malloc(l->payload))) {
			free(e.buf);
			fail(l, -ENOMEM, "loader: out of memory");
			break;
		}
		if (batch_decode(e.buf, e.len, s->mem, l->payload, &s->b.data, &s->b.id, &err)) {
			snprintf(msg, sizeof(msg), "loader: batch %llu: %s", (unsigned long long)id, err.msg);
			free(e.buf);
			fail(l, err.code, msg);
			break;
		}
		free(e.buf);
		s->b.slot = si;
		s->b.base = s->mem;
		s->b.bytes = batch_payload_size(s->b.data.n, s->b.data.dense_width, s->b.data.sparse_width);
		pthread_mutex_lock(&l->mu);
		s->ready = true;
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
	}
	return NULL;
}

int loader_default_workers(int cpus, bool gpu)
{
	int n = cpus - 3;

	if (!gpu)
		return 2;
	return n < 2 ? 2 : n > 8 ? 8 : n;
}

struct loader *loader_start(const struct loader_config *cfg, struct nt_err *err)
{
	struct loader *l;

	/* no worker, no batch: the pin thread would wait for ever */
	if (cfg->workers < 1 && !cfg->frozen) {
		err_set(err, -EINVAL, "the loader needs at least one worker (--workers)");
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	l->cfg = *cfg;
	pthread_mutex_init(&l->mu, NULL);
	if (cfg->data_dir) {
		/* a bad data set is reported now, not at the first batch */
		struct shard_reader *r = shard_open(cfg->data_dir, &cfg->spec, err);

		if (!r) {
			pthread_mutex_destroy(&l->mu);
			pthread_cond_destroy(&l->cv);
			free(l);
			return NULL;
		}
		shard_close(r);
	}
	pthread_cond_init(&l->cv, NULL);
	l->payload = batch_payload_size((uint32_t)cfg->batch, cfg->spec.dense_width, cfg->spec.sparse_width);
	l->n_slots = cfg->frozen ? 1 : cfg->prefetch;
	l->n_enc = cfg->prefetch + cfg->workers;
	l->slots = calloc((size_t)l->n_slots, sizeof(*l->slots));
	l->enc = calloc((size_t)l->n_enc, sizeof(*l->enc));
	if (!l->slots || !l->enc) {
		err_set(err, -ENOMEM, "out of memory");
		loader_stop(l);
		return NULL;
	}
	if (cfg->pin || cfg->frozen) {
		l->locked = true;
		for (int i = 0; i < l->n_slots; i++) {
			l->slots[i].mem = alloc_buffer(l);
			if (!l->slots[i].mem) {
				err_set(err, -ENOMEM, "out of memory for %d pinned buffers of %zu bytes",
					 l->n_slots, l->payload);
				loader_stop(l);
				return NULL;
			}
			if (!cfg->host_alloc && mlock(l->slots[i].mem, l->payload) < 0)
				l->locked = false;  /* RLIMIT_MEMLOCK: still page-aligned, reused */
		}
	}
	if (cfg->frozen) {
		/* one batch, made and decoded here, reused every step */
		struct batch_data d = { .n = (uint32_t)cfg->batch, .dense_width = cfg->spec.dense_width,
					.sparse_width = cfg->spec.sparse_width };
		void *buf = NULL;
		size_t len;
		int e = -ENOMEM;

		d.dense = malloc((size_t)cfg->batch * cfg->spec.dense_width * 4 + 4);
		d.sparse = cfg->spec.sparse_width ? malloc((size_t)cfg->batch * cfg->spec.sparse_width * 4) : NULL;
		d.label = malloc((size_t)cfg->batch * 4);
		if (d.dense && d.label && (!cfg->spec.sparse_width || d.sparse)) {
			data_synth_batch(&cfg->spec, first_sample(cfg, 0), &d);
			e = batch_encode(&d, 0, 0, &buf, &len);
		}
		if (!e)
			e = batch_decode(buf, len, l->slots[0].mem, l->payload, &l->slots[0].b.data, &l->slots[0].b.id,
					 err);
		else
			err_set(err, e, "cannot make the frozen batch: %s", strerror(-e));
		l->slots[0].b.base = l->slots[0].mem;
		l->slots[0].b.bytes = l->payload;
		free(buf);
		free(d.dense);
		free(d.sparse);
		free(d.label);
		if (e) {
			loader_stop(l);
			return NULL;
		}
		return l;
	}
	l->workers = calloc((size_t)cfg->workers, sizeof(*l->workers));
	if (!l->workers) {
		err_set(err, -ENOMEM, "out of memory");
		loader_stop(l);
		return NULL;
	}
	for (int i = 0; i < cfg->workers; i++) {
		if (pthread_create(&l->workers[i], NULL, worker_main, l)) {
			err_set(err, -EIO, "cannot start loader worker %d", i);
			loader_stop(l);
			return NULL;
		}
		l->n_workers++;
	}
	if (pthread_create(&l->pinner, NULL, pin_main, l)) {
		err_set(err, -EIO, "cannot start the pin thread");
		loader_stop(l);
		return NULL;
	}
	l->pinner_started = true;
	return l;
}

int loader_next(struct loader *l, struct loader_batch **ret, double *wait_ms, struct nt_err *err)
{
	double t0 = nt_mono_ms();
	struct slot *s;

	if (l->cfg.frozen) {
		*ret = &l->slots[0].b;
		*wait_ms = 0;
		return 0;
	}
	pthread_mutex_lock(&l->mu);
	s = &l->slots[l->next_consume % (uint64_t)l->n_slots];
	while (!l->failed && !s->ready)
		pthread_cond_wait(&l->cv, &l->mu);
	/* batches decoded before a failure are still good: hand them out */
	if (!s->ready) {
		int e = err_set(err, l->err.code, "%s", l->err.msg);

		pthread_mutex_unlock(&l->mu);
		return e;
	}
	s->ready = false;
	s->in_use = true;
	l->next_consume++;
	pthread_mutex_unlock(&l->mu);
	*ret = &s->b;
	*wait_ms = nt_mono_ms() - t0;
	return 0;
}

void loader_release(struct loader *l, struct loader_batch *b)
{
	struct slot *s;

	if (l->cfg.frozen)
		return;
	s = &l->slots[b->slot];
	pthread_mutex_lock(&l->mu);
	if (!l->cfg.pin) {
		free(s->mem);
		s->mem = NULL;
	}
	s->in_use = false;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

void loader_stop(struct loader *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	for (int i = 0; i < l->n_workers; i++)
		pthread_join(l->workers[i], NULL);
	if (l->pinner_started)
		pthread_join(l->pinner, NULL);
	for (int i = 0; l->enc && i < l->n_enc; i++)
		if (l->enc[i].full)
			free(l->enc[i].buf);
	for (int i = 0; l->slots && i < l->n_slots; i++) {
		bool owned = l->cfg.pin || l->cfg.frozen;

		if (owned && l->cfg.host_alloc) {
			if (l->slots[i].mem)
				l->cfg.host_free(l->slots[i].mem);
			continue;
		}
		if (l->slots[i].mem && owned)
			munlock(l->slots[i].mem, l->payload);
		free(l->slots[i].mem);
	}
	free(l->enc);
	free(l->slots);
	free(l->workers);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l);
}

bool loader_locked(const struct loader *l)
{
	return l->locked;
}
