/* bisect.c — ddmin over policy knobs; see bisect.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bisect.h"
#include "knob.h"

struct memo {
	uint64_t set[512];
	int result[512];
	int n;
};

static int run_test(struct memo *m, uint64_t set, bisect_test_fn test, void *ctx, int *tests)
{
	int r;

	for (int i = 0; i < m->n; i++)
		if (m->set[i] == set)
			return m->result[i];
	r = test(set, ctx);
	(*tests)++;
	if (r >= 0 && m->n < 512) {
		m->set[m->n] = set;
		m->result[m->n++] = r;
	}
	return r;
}

/* the k-th of g nearly equal chunks of the bits of c, in bit order */
static uint64_t chunk(uint64_t c, int g, int k)
{
	int size = __builtin_popcountll(c), lo = size * k / g, hi = size * (k + 1) / g, i = 0;
	uint64_t out = 0;

	for (int b = 0; b < 64; b++)
		if (c >> b & 1) {
			if (i >= lo && i < hi)
				out |= 1ull << b;
			i++;
		}
	return out;
}

int bisect_ddmin(int n, bisect_test_fn test, void *ctx, uint64_t *ret, int *tests)
{
	struct memo *m = calloc(1, sizeof(*m));
	uint64_t c = n >= 64 ? ~0ull : (1ull << n) - 1;
	int g = 2, r = 0;

	*tests = 0;
	if (!m)
		return -ENOMEM;
	m->set[0] = c;
	m->result[0] = BISECT_FAIL;         /* seen by the caller */
	m->n = 1;
	while (__builtin_popcountll(c) >= 2) {
		int size = __builtin_popcountll(c), found = 0;

		g = g > size ? size : g;
		/* a chunk alone fails: go into it */
		for (int k = 0; k < g && !found; k++) {
			uint64_t s = chunk(c, g, k);

			r = run_test(m, s, test, ctx, tests);
			if (r < 0)
				goto out;
			if (r == BISECT_FAIL) {
				c = s;
				g = 2;
				found = 1;
			}
		}
		/* a complement fails: drop that chunk (with 2 chunks the
		 * complements are the chunks, already tested) */
		for (int k = 0; k < g && !found && g > 2; k++) {
			uint64_t s = c & ~chunk(c, g, k);

			r = run_test(m, s, test, ctx, tests);
			if (r < 0)
				goto out;
			if (r == BISECT_FAIL) {
				c = s;
				g = g - 1 > 2 ? g - 1 : 2;
				found = 1;
			}
		}
		if (!found) {
			if (g >= size)
				break;      /* 1-minimal: no single element can go */
			g = 2 * g < size ? 2 * g : size;
		}
	}
	r = 0;
	*ret = c;
out:
	free(m);
	return r;
}

static bool differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b));
}

double bisect_alpha(double alpha, int k)
{
	const double pi = 3.14159265358979323846;

	return k < 1 ? alpha : alpha * 6.0 / (pi * pi * (double)k * (double)k);
}

int bisect_delta(const struct policy *good, const struct policy *bad, int idx[BISECT_MAX])
{
	int n = 0;

	for (unsigned k = 0; k < knob_count && n < BISECT_MAX; k++)
		if (strcmp(knob_table[k].section, "main") && differs(good->v[k].value, bad->v[k].value))
			idx[n++] = (int)k;
	return n;
}

int bisect_write_candidate(FILE *f, const struct policy *good, const struct policy *bad, const int idx[],
			   int n, uint64_t set)
{
	const char *section = NULL;

	fprintf(f, "# written by nodetune bisect: %s with these knobs from %s:", good->path, bad->path);
	for (int i = 0; i < n; i++)
		if (set >> i & 1)
			fprintf(f, " %s.%s", knob_table[idx[i]].section, knob_table[idx[i]].key);
	fprintf(f, "\n[main]\nsummary = bisect candidate\n");
	for (unsigned k = 0; k < knob_count; k++) {
		const char *v = good->v[k].value;

		if (!strcmp(knob_table[k].section, "main"))
			continue;
		for (int i = 0; i < n; i++)
			if (idx[i] == (int)k && (set >> i & 1))
				v = bad->v[k].value;
		if (!v)
			continue;
		if (!section || strcmp(section, knob_table[k].section))
			fprintf(f, "[%s]\n", section = knob_table[k].section);
		fprintf(f, "%s = %s\n", knob_table[k].key, v);
	}
	return ferror(f) ? -EIO : 0;
}
