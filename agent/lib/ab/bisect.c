/* SPDX-License-Identifier: MIT */
/* bisect.c — ddmin over policy knobs; see bisect.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab/abrun.h"
#include "ab/bisect.h"
#include "ab/bisect_test.h"
#include "machine/knob.h"

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

	for (enum knob_id k = 0; k < KNOB_COUNT && n < BISECT_MAX; k++)
		if (knob_table[k].scope != KS_META && differs(good->v[k].value, bad->v[k].value))
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
	for (enum knob_id k = 0; k < KNOB_COUNT; k++) {
		const char *v = good->v[k].value;

		if (knob_table[k].scope == KS_META)
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

/* ---- the trial runner -------------------------------------------------- */

void bisect_knob_list(char *buf, size_t size, const int idx[], int n, uint64_t set)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && len < size; i++)
		if (set >> i & 1)
			len += (size_t)snprintf(buf + len, size - len, "%s%s.%s", len ? ", " : "",
						knob_table[idx[i]].section, knob_table[idx[i]].key);
}

static void progress(const struct bisect_run *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void progress(const struct bisect_run *b, const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	if (!b->progress)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	b->progress(line, b->arg);
}

int bisect_run_init(struct bisect_run *b, struct ab_config *cfg, const char *good_path,
		    const struct policy *good, const struct policy *bad, struct nt_err *err)
{
	b->cfg = cfg;
	b->good = good;
	b->bad = bad;
	b->alpha = cfg->alpha;
	b->n = bisect_delta(good, bad, b->idx);
	b->log = json_array();
	free(cfg->arm[0].policy);
	cfg->arm[0].policy = strdup(good_path);
	cfg->regression_only = true;
	if (!cfg->arm[0].policy || !b->log)
		return err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* Write candidate set to path and check that it loads and keeps to the
 * site limits (abrun_policy_check; the good and the bad policy each do, but
 * a mix can pass one: the hugetlb share of one's 2 MiB pages and the
 * other's 1 GiB pages): 0; BISECT_UNRESOLVED (an invalid combination: a key
 * that needs another, or a limit passed), recorded; -errno. */
static int write_candidate(struct bisect_run *b, uint64_t set, const char *path, const char *knobs)
{
	struct nt_err err = { 0 };
	FILE *f;
	int r;

	f = fopen(path, "we");
	if (!f)
		return -errno;
	r = bisect_write_candidate(f, b->good, b->bad, b->idx, b->n, set);
	if (fclose(f) != 0 || r < 0)
		return -EIO;
	if (abrun_policy_check(b->cfg, path, &err) < 0) {
		progress(b, "test %d {%s}: not testable: %s", b->tests, knobs, err.msg);
		json_array_append_new(b->log, json_pack("{s:i, s:s, s:s}", "test", b->tests, "knobs", knobs,
							"verdict", "untestable"));
		return BISECT_UNRESOLVED;
	}
	return 0;
}

/* Record a finished A/B test. */
static void log_test(struct bisect_run *b, const char *knobs, const struct ab_result *res)
{
	const char *verdict = stats_verdict_name(res->verdict);

	progress(b, "test %d {%s}: %s, B/A %.3f [%.3f, %.3f], p %.3g (alpha %.2g), %d + %d trials", b->tests, knobs,
		 verdict, res->ratio, res->ci_lo, res->ci_hi, res->p, b->cfg->alpha, res->trials[0], res->trials[1]);
	json_array_append_new(b->log, json_pack("{s:i, s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "test", b->tests, "knobs",
						knobs, "verdict", verdict, "ratio", res->ratio, "ci_low", res->ci_lo,
						"ci_high", res->ci_hi, "p_value", res->p, "alpha", b->cfg->alpha));
}

/* One test (a bisect_test_fn): an A/B of the good policy against good +
 * the subset set of bad. */
static int run_one_test(uint64_t set, void *arg)
{
	struct bisect_run *b = arg;
	struct ab_result res = { 0 };
	struct nt_err err = { 0 };
	char path[4200], knobs[2048];
	int r;

	snprintf(path, sizeof(path), "%s/candidate-%03d.conf", b->cfg->work_dir, ++b->tests);
	bisect_knob_list(knobs, sizeof(knobs), b->idx, b->n, set);
	r = write_candidate(b, set, path, knobs);
	if (r)
		return r;
	free(b->cfg->arm[1].policy);
	b->cfg->arm[1].policy = strdup(path);
	if (!b->cfg->arm[1].policy)
		return -ENOMEM;
	/* every test is another chance of a false alarm, which would send
	 * ddmin into a wrong subset: the tests share the bisection's alpha */
	b->cfg->alpha = bisect_alpha(b->alpha, b->tests);
	r = ab_run(b->cfg, &res, &err);
	if (r < 0) {
		snprintf(b->msg, sizeof(b->msg), "test %d {%s}: %s", b->tests, knobs, err.msg);
		return r;
	}
	if (res.error) {
		snprintf(b->msg, sizeof(b->msg), "test %d {%s}: %s", b->tests, knobs, res.error_msg);
		ab_result_release(&res);
		return -ECANCELED;
	}
	log_test(b, knobs, &res);
	r = res.verdict == VERDICT_REGRESSION ? BISECT_FAIL : BISECT_PASS;
	ab_result_release(&res);
	return r;
}

int bisect_search(struct bisect_run *b, uint64_t *ret_culprits, bool *ret_reproduced, struct nt_err *err)
{
	uint64_t culprits = 0;
	int r, tests = 0;
	bool reproduced;

	/* first: does the whole delta reproduce the regression? */
	r = run_one_test(b->n >= 64 ? ~0ull : (1ull << b->n) - 1, b);
	reproduced = r == BISECT_FAIL;
	if (reproduced)
		r = bisect_ddmin(b->n, run_one_test, b, &culprits, &tests);
	if (r < 0)
		return err_set(err, r, "%s", b->msg[0] ? b->msg : nt_strerror(-r));
	*ret_culprits = culprits;
	*ret_reproduced = reproduced;
	return 0;
}

void bisect_run_release(struct bisect_run *b)
{
	json_decref(b->log);
	b->log = NULL;
}
