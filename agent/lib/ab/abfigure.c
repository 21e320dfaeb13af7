/* SPDX-License-Identifier: MIT */
/* abfigure.c — see abfigure.h. */
#include "ab/abfigure.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"

const char *abfigure_source_name(enum abfigure_source s)
{
	static const char *const names[] = { "wall time", "step reports", "--metric" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static int cmp_report(const void *x, const void *y)
{
	const struct step_report *a = *(const struct step_report *const *)x, *b = *(const struct step_report *const *)y;

	if (a->step != b->step)
		return (a->step > b->step) - (a->step < b->step);
	return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The index of phase name in ret, added when new (-1: no room). */
static int phase_index(struct abfigure_steps *ret, const char *name)
{
	for (int i = 0; i < ret->n_phases; i++)
		if (!strcmp(ret->phase[i], name))
			return i;
	if (ret->n_phases == STEPS_PHASES_MAX)
		return -1;
	snprintf(ret->phase[ret->n_phases], STEPS_NAME_MAX, "%s", name);
	return ret->n_phases++;
}

/* One step's lines g[0..n) (one per rank, or more) into step k of ret. */
static void merge_step(struct step_report *const *g, size_t n, int k, struct abfigure_steps *ret, double *samples,
		       double *skew, int *n_skew, unsigned *votes)
{
	const struct step_report *slow = g[0];
	double lo = g[0]->t, sum = 0;
	bool many = false;

	for (size_t i = 0; i < n; i++) {
		if (g[i]->t > slow->t)
			slow = g[i];
		lo = fmin(lo, g[i]->t);
		sum += g[i]->samples;
		many |= g[i]->rank != g[0]->rank;
	}
	ret->ms[k] = slow->t * 1000;
	samples[k] = sum;
	for (unsigned p = 0; p < slow->n_phases; p++) {
		int i = phase_index(ret, slow->phase[p]);

		if (i >= 0)
			ret->phase_ms[i][k] = slow->phase_s[p] * 1000;
	}
	if (many && lo > 0) {
		skew[(*n_skew)++] = slow->t / lo;
		votes[slow->rank]++;
	}
}

int abfigure_steps_merge(const struct steps *s, long long skip, struct abfigure_steps *ret, struct nt_err *err)
{
	struct abfigure_steps m = { .bad_lines = s->bad_lines };
	struct step_report **idx = calloc(s->n + 1, sizeof(*idx));
	double *samples = calloc(s->n + 1, sizeof(double)), *skew = calloc(s->n + 1, sizeof(double));
	unsigned *votes = calloc((size_t)(s->max_rank < 0 ? 0 : s->max_rank) + 1, sizeof(unsigned));
	unsigned char *seen = calloc((size_t)(s->max_rank < 0 ? 0 : s->max_rank) + 1, 1);
	int n_skew = 0, r = 0;
	size_t kept = 0;

	snprintf(m.first_bad, sizeof(m.first_bad), "%s", s->first_bad);
	m.ms = calloc(s->n + 1, sizeof(double));
	for (int p = 0; p < STEPS_PHASES_MAX && m.ms; p++)
		if (!(m.phase_ms[p] = calloc(s->n + 1, sizeof(double))))
			m.ms = (free(m.ms), NULL);
	if (!idx || !samples || !skew || !votes || !seen || !m.ms) {
		r = err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->r[i].step >= skip) {
			idx[kept++] = &s->r[i];
			if (!seen[s->r[i].rank]++)
				m.ranks++;
		}
	qsort(idx, kept, sizeof(*idx), cmp_report);
	for (size_t i = 0; i < kept;) {
		size_t j = i;

		while (j < kept && idx[j]->step == idx[i]->step)
			j++;
		merge_step(idx + i, j - i, m.n++, &m, samples, skew, &n_skew, votes);
		i = j;
	}
	m.samples = m.n ? stats_median(samples, (size_t)m.n) : 0;
	m.skew = n_skew ? stats_median(skew, (size_t)n_skew) : 0;
	for (int k = 1; k <= s->max_rank; k++)
		if (votes[k] > votes[m.slowest])
			m.slowest = k;
	m.slowest_share = n_skew ? (double)votes[m.slowest] / n_skew : 0;
out:
	free(idx);
	free(samples);
	free(skew);
	free(votes);
	free(seen);
	if (r < 0)
		abfigure_steps_release(&m);
	else
		*ret = m;
	return r;
}

void abfigure_steps_release(struct abfigure_steps *s)
{
	free(s->ms);
	s->ms = NULL;
	for (int p = 0; p < STEPS_PHASES_MAX; p++) {
		free(s->phase_ms[p]);
		s->phase_ms[p] = NULL;
	}
	s->n = 0;
}

double abfigure_steps_figure(const struct abfigure_steps *s)
{
	double total = 0;

	/* over all the steps kept: a stall is lost time, and a median would
	 * hide a preemption that hits a third of the steps */
	for (int i = 0; i < s->n; i++)
		total += s->ms[i];
	if (!(total > 0))
		return 0;
	return (s->samples > 0 ? s->samples : 1) * s->n * 1000 / total;
}

int abfigure_metric_compile(const char *regex, regex_t *ret, struct nt_err *err)
{
	char why[256];
	int rc = regcomp(ret, regex, REG_EXTENDED);

	if (rc) {
		regerror(rc, ret, why, sizeof(why));
		return err_set(err, -EINVAL, "--metric '%s': %s", regex, why);
	}
	if (ret->re_nsub != 1) {
		size_t n = ret->re_nsub;

		regfree(ret);
		return err_set(err, -EINVAL, "--metric '%s': %zu capture groups; exactly one, the value, is needed", regex,
			       n);
	}
	return 0;
}

#define LINE_MAX_BYTES (64u << 10)

/* The value of one matching line, or -1 when it does not match, -2 when the
 * group is not a number > 0. */
static double match_line(const regex_t *re, const char *line)
{
	regmatch_t g[2];
	char num[64], *end;
	size_t len;
	double v;

	if (regexec(re, line, 2, g, 0) != 0 || g[1].rm_so < 0)
		return -1;
	len = (size_t)(g[1].rm_eo - g[1].rm_so);
	if (len == 0 || len >= sizeof(num))
		return -2;
	memcpy(num, line + g[1].rm_so, len);
	num[len] = '\0';
	v = strtod(num, &end);
	return *end || !isfinite(v) || !(v > 0) ? -2 : v;
}

void abfigure_metric_scan(const regex_t *re, const char *buf, size_t len, double *ret_value, int *ret_n, int *ret_bad)
{
	char *line = malloc(LINE_MAX_BYTES + 1);
	double *vals = NULL;
	size_t n = 0, cap = 0;
	int bad = 0;

	*ret_value = 0;
	*ret_n = 0;
	for (size_t i = 0; line && i < len;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (buf + i)) : len - i;
		double v;

		if (l <= LINE_MAX_BYTES) {
			memcpy(line, buf + i, l);
			line[l] = '\0';                  /* a NUL inside ends the text */
			v = match_line(re, line);
			if (v == -2)
				bad++;
			if (v > 0) {
				if (n == cap) {
					double *t = realloc(vals, (cap = cap ? 2 * cap : 64) * sizeof(*vals));

					if (!t)
						break;
					vals = t;
				}
				vals[n++] = v;
			}
		}
		i += l + 1;
	}
	if (n) {
		*ret_value = stats_median(vals, n);
		*ret_n = (int)n;
	}
	if (ret_bad)
		*ret_bad = bad;
	free(vals);
	free(line);
}

double abfigure_metric_figure(double value, enum abfigure_kind kind)
{
	return kind == ABFIGURE_TIME ? 1.0 / value : value;
}
