/* SPDX-License-Identifier: MIT */
/* stats.c — see stats.h. */
#include "base/stats.h"
#include "base/stats_test.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double stats_median(const double *x, size_t n)
{
	double *s, m;

	if (n == 0 || !(s = malloc(n * sizeof(*s))))
		return NAN;
	memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

double stats_mad(const double *x, size_t n)
{
	double med = stats_median(x, n), *d, m;

	if (n == 0 || !(d = malloc(n * sizeof(*d))))
		return NAN;
	for (size_t i = 0; i < n; i++)
		d[i] = fabs(x[i] - med);
	m = stats_median(d, n);
	free(d);
	return m;
}

struct tagged {
	double v;
	int from_a;
};

static int cmp_tagged(const void *a, const void *b)
{
	return cmp_double(&((const struct tagged *)a)->v, &((const struct tagged *)b)->v);
}

double stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb, double *ret_u)
{
	size_t n = na + nb;
	struct tagged *t;
	double ra = 0, ties = 0, u, mu, sigma, z;

	if (ret_u)
		*ret_u = 0;
	if (!na || !nb || !(t = malloc(n * sizeof(*t))))
		return 1.0;
	for (size_t i = 0; i < na; i++)
		t[i] = (struct tagged){ a[i], 1 };
	for (size_t j = 0; j < nb; j++)
		t[na + j] = (struct tagged){ b[j], 0 };
	qsort(t, n, sizeof(*t), cmp_tagged);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		double rank;

		while (j + 1 < n && t[j + 1].v == t[i].v)
			j++;
		rank = (double)(i + j + 2) / 2.0;      /* average rank, 1-based */
		for (size_t k = i; k <= j; k++)
			if (t[k].from_a)
				ra += rank;
		ties += pow((double)(j - i + 1), 3) - (double)(j - i + 1);
		i = j + 1;
	}
	free(t);
	u = ra - (double)na * (na + 1) / 2.0;
	if (ret_u)
		*ret_u = u;
	mu = (double)na * nb / 2.0;
	sigma = sqrt((double)na * nb / 12.0 * ((n + 1) - ties / ((double)n * (n - 1))));
	if (sigma == 0)
		return 1.0;
	z = (fabs(u - mu) - 0.5) / sigma;          /* continuity correction */
	if (z < 0)
		z = 0;
	return erfc(z / sqrt(2.0));
}

double stats_hodges_lehmann(const double *a, size_t na, const double *b, size_t nb)
{
	double *d, m;

	if (!na || !nb || !(d = malloc(na * nb * sizeof(*d))))
		return NAN;
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			d[i * nb + j] = b[j] - a[i];
	m = stats_median(d, na * nb);
	free(d);
	return m;
}


/* The regularized incomplete beta I_x(a, b) by its continued fraction
 * (modified Lentz), on the side where it converges fast. */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	d = 1 / (fabs(d) < tiny ? tiny : d);
	h = d;
	for (int m = 1; m <= 300; m++) {
		double aa = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)), del;

		d = 1 + aa * d;
		c = 1 + aa / c;
		d = 1 / (fabs(d) < tiny ? tiny : d);
		c = fabs(c) < tiny ? tiny : c;
		h *= d * c;
		aa = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
		d = 1 + aa * d;
		c = 1 + aa / c;
		d = 1 / (fabs(d) < tiny ? tiny : d);
		c = fabs(c) < tiny ? tiny : c;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-14)
			break;
	}
	return h;
}

static double beta_inc(double a, double b, double x)
{
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double stats_t_p2(double t, double df)
{
	if (!(df > 0) || isnan(t))
		return NAN;
	return beta_inc(df / 2, 0.5, df / (df + t * t));
}

double stats_t_quantile(double p2, double df)
{
	double lo = 0, hi = 1;

	if (!(df > 0) || !(p2 > 0 && p2 < 1))
		return NAN;
	while (stats_t_p2(hi, df) > p2 && hi < 1e12)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;

		if (stats_t_p2(mid, df) > p2)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double stats_norm_p2(double z)
{
	return isnan(z) ? NAN : erfc(fabs(z) / M_SQRT2);
}

double stats_norm_quantile(double p2)
{
	double lo = 0, hi = 40;

	if (!(p2 > 0 && p2 < 1))
		return NAN;
	for (int i = 0; i < 200 && hi - lo > 1e-13; i++) {
		double mid = (lo + hi) / 2;

		if (stats_norm_p2(mid) > p2)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double stats_obf_spent(double alpha, double t)
{
	if (!(t > 0))
		return 0;
	if (t >= 1)
		return alpha;
	return stats_norm_p2(stats_norm_quantile(alpha) / sqrt(t));
}

int stats_trim_g(int n, double trim)
{
	int g = trim > 0 ? (int)floor(trim * n) : 0;

	/* at least two values left */
	return n - 2 * g >= 2 ? g : (n - 2) / 2;
}

int stats_block_ratio(const double *d, size_t n, double alpha, struct stats_blocks *ret)
{
	return stats_block_ratio_trim(d, n, alpha, 0, ret);
}

/* Yuen's trimmed t (Tukey and McLaughlin 1963; Yuen 1974; Wilcox,
 * Introduction to Robust Estimation, 4.1.1): g = floor(trim n) values cut
 * from each end, the mean of the h = n - 2g left; its standard error from
 * the winsorized variance s_w^2 (the g lowest set to the (g+1)th, the g
 * highest to the (n-g)th), se^2 = (n - 1) s_w^2 / (h (h - 1)), and
 * Student's t with h - 1 degrees of freedom.  trim 0 is the t test on the
 * mean. */
int stats_block_ratio_trim(const double *d, size_t n, double alpha, double trim, struct stats_blocks *ret)
{
	double *x, m = 0, wm = 0, ss = 0, se, q, df;
	int g, h;

	if (n < 2 || n > INT_MAX / 2 || !(alpha > 0 && alpha < 1) || !(trim >= 0 && trim < 0.5))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(d[i]))
			return -EINVAL;
	x = malloc(n * sizeof(*x));
	if (!x)
		return -ENOMEM;
	memcpy(x, d, n * sizeof(*x));
	qsort(x, n, sizeof(*x), cmp_double);
	g = stats_trim_g((int)n, trim);
	h = (int)n - 2 * g;
	for (int i = g; i < (int)n - g; i++)
		m += x[i];
	m /= h;
	/* winsorize in place: the g at each end set to their nearest kept value */
	for (int i = 0; i < g; i++) {
		x[i] = x[g];
		x[(int)n - 1 - i] = x[(int)n - g - 1];
	}
	for (size_t i = 0; i < n; i++)
		wm += x[i];
	wm /= (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - wm) * (x[i] - wm);
	free(x);
	df = h - 1;
	se = sqrt(ss / (double)h / (double)(h - 1));
	ret->n = (int)n;
	ret->trimmed = g;
	ret->df = df;
	ret->sd = se * sqrt((double)n);
	q = stats_t_quantile(alpha, df);
	ret->ratio = exp(m);
	ret->ci_lo = exp(m - q * se);
	ret->ci_hi = exp(m + q * se);
	/* TOST's interval: each one-sided test at alpha */
	q = 2 * alpha < 1 ? stats_t_quantile(2 * alpha, df) : 0;
	ret->eq_lo = exp(m - q * se);
	ret->eq_hi = exp(m + q * se);
	ret->p = se > 0 ? stats_t_p2(m / se, df) : (m == 0 ? 1.0 : 0.0);
	return 0;
}

/* Blocks needed for a (1 - alpha) interval of half width at most w (a
 * log) at block noise sd, with the degrees of freedom of the trimmed t at
 * trim.  At least 2; INT_MAX when sd is not finite or w not > 0. */
static int stats_blocks_for_width(double sd, double alpha, double w, double trim)
{
	double z = stats_norm_quantile(alpha), n0;

	if (!isfinite(sd) || !(w > 0))
		return INT_MAX;
	/* t's quantile is above the normal's at every df, so no n below
	 * (z sd / w)^2 is wide enough: the scan starts there (less one, for
	 * rounding), not at 2, with the same answer.  From 2 it computed up to
	 * 100,000 t quantiles for a noise no budget could judge, at each look:
	 * 30 of the 41 s of test_ab's A/As through ab_run. */
	n0 = isfinite(z) ? floor(z * sd / w * (z * sd / w)) - 1 : 2;
	for (int n = (int)fmin(fmax(n0, 2), 100000); n < 100000; n++)
		if (stats_t_quantile(alpha, n - 2 * stats_trim_g(n, trim) - 1) * sd / sqrt((double)n) <= w)
			return n;
	return INT_MAX;
}

int stats_blocks_needed(double sd, double alpha, double threshold, double trim)
{
	/* room: the interval's half width at most 2/3 of the threshold */
	return stats_blocks_for_width(sd, alpha, log1p(threshold) * 2 / 3, trim);
}

enum stats_verdict stats_verdict(double p, double ratio, double lo, double hi, double alpha, double threshold)
{
	/* p < alpha: the (1 - alpha) interval excludes 1, and so does the
	 * narrower (1 - 2 alpha) one, lo..hi */
	if (p < alpha && hi < 1 && ratio < 1 - threshold)
		return VERDICT_REGRESSION;
	if (p < alpha && lo > 1 && ratio > 1 + threshold)
		return VERDICT_IMPROVEMENT;
	if (lo >= 1 - threshold && hi <= 1 + threshold)
		return VERDICT_NO_DIFFERENCE;
	return VERDICT_INCONCLUSIVE;
}

const char *stats_verdict_name(enum stats_verdict v)
{
	static const char *const names[] = { "no-difference", "improvement", "regression", "inconclusive" };

	return names[v];
}
