/* SPDX-License-Identifier: MIT */
/* flap.c — see flap.h.
 *
 * Each key keeps the times of its last n drifts in a ring; the key is
 * contested when the oldest of those n lies within the window of the
 * newest.  Keys live in a growing array: a daemon watches tens of knobs,
 * so a linear search is the simplest thing that is fast enough.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "daemon/flap.h"
#include "base/parse.h"

struct flap_key {
	char *key;
	double *times;          /* ring of the last n drift times */
	unsigned next, filled;
	unsigned long total;
	bool contested;
};

struct flap {
	unsigned n;
	double window_s;
	struct flap_key *keys;
	unsigned n_keys, cap;
};

struct flap *flap_new(unsigned n, double window_s)
{
	struct flap *f;

	if (n < 1 || n > 1000 || !(window_s > 0) || !isfinite(window_s)) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->n = n;
	f->window_s = window_s;
	return f;
}

void flap_free(struct flap *f)
{
	if (!f)
		return;
	for (unsigned i = 0; i < f->n_keys; i++) {
		free(f->keys[i].key);
		free(f->keys[i].times);
	}
	free(f->keys);
	free(f);
}

int flap_parse(const char *spec, unsigned *ret_n, double *ret_window_s)
{
	const char *slash = strchr(spec, '/');
	char num[16];
	uint64_t n;
	double w;

	if (!slash || slash == spec || (size_t)(slash - spec) >= sizeof(num))
		return -EINVAL;
	memcpy(num, spec, (size_t)(slash - spec));
	num[slash - spec] = '\0';
	if (parse_u64(num, FLAP_N_MAX, &n) < 0 || n < 1)
		return -EINVAL;
	if (nt_duration_parse(slash + 1, FLAP_WINDOW_MIN_S, FLAP_WINDOW_MAX_S, &w) < 0)
		return -EINVAL;
	*ret_n = (unsigned)n;
	*ret_window_s = w;
	return 0;
}

static struct flap_key *key_find(const struct flap *f, const char *key)
{
	for (unsigned i = 0; i < f->n_keys; i++)
		if (!strcmp(f->keys[i].key, key))
			return &f->keys[i];
	return NULL;
}

static struct flap_key *key_add(struct flap *f, const char *key)
{
	struct flap_key *k;

	if (f->n_keys == f->cap) {
		unsigned cap = f->cap ? f->cap * 2 : 16;
		struct flap_key *grown = realloc(f->keys, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		f->keys = grown;
		f->cap = cap;
	}
	k = &f->keys[f->n_keys];
	memset(k, 0, sizeof(*k));
	k->key = strdup(key);
	k->times = calloc(f->n, sizeof(*k->times));
	if (!k->key || !k->times) {
		free(k->key);
		free(k->times);
		return NULL;
	}
	f->n_keys++;
	return k;
}

int flap_drift(struct flap *f, const char *key, double now)
{
	struct flap_key *k = key_find(f, key);
	double oldest;

	if (!k && !(k = key_add(f, key)))
		return -ENOMEM;
	k->total++;
	k->times[k->next] = now;
	k->next = (k->next + 1) % f->n;
	if (k->filled < f->n)
		k->filled++;
	if (k->contested || k->filled < f->n)
		return 0;
	oldest = k->times[k->next];      /* the ring is full: next is the oldest */
	if (now - oldest > f->window_s)
		return 0;
	k->contested = true;
	return 1;
}

bool flap_contested(const struct flap *f, const char *key)
{
	const struct flap_key *k = key_find(f, key);

	return k && k->contested;
}

unsigned long flap_total(const struct flap *f, const char *key)
{
	const struct flap_key *k = key_find(f, key);

	return k ? k->total : 0;
}

void flap_foreach(const struct flap *f, void (*fn)(const char *key, unsigned long total, bool contested, void *arg),
		  void *arg)
{
	for (unsigned i = 0; i < f->n_keys; i++)
		fn(f->keys[i].key, f->keys[i].total, f->keys[i].contested, arg);
}

void flap_reset(struct flap *f)
{
	for (unsigned i = 0; i < f->n_keys; i++) {
		f->keys[i].contested = false;
		f->keys[i].filled = 0;
		f->keys[i].next = 0;
	}
}
