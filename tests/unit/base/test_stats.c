/* SPDX-License-Identifier: MIT */
/* test_stats.c — the A/B statistics against values computed independently:
 * the textbook Mann-Whitney case (R: wilcox.test(1:5, 6:10, exact = FALSE)
 * gives W = 0, p-value = 0.01219), a tie case worked by hand, and the
 * Hodges-Lehmann shift of a small example. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/stats.h"
#include "base/stats_test.h"

static void test_mann_whitney_known(void **state)
{
	const double a[] = { 1, 2, 3, 4, 5 }, b[] = { 6, 7, 8, 9, 10 };
	/* by hand: combined ranks 1, 3, 3, 3, 6, 6, 6, 8, 9, 10, 11 (two groups
	 * of three ties); R_a = 21, U = 6; sigma^2 = 30/12 * (12 - 48/110)
	 * = 28.909; z = (|6 - 15| - 0.5) / 5.3768 = 1.5809; p = 0.1139 */
	const double ta[] = { 1, 2, 2, 3, 4 }, tb[] = { 2, 3, 3, 5, 6, 7 };
	double u, p;

	(void)state;
	p = stats_mann_whitney(a, 5, b, 5, &u);
	assert_true(u == 0);
	assert_true(fabs(p - 0.01219) < 5e-5);
	p = stats_mann_whitney(b, 5, a, 5, &u);      /* symmetric */
	assert_true(u == 25);
	assert_true(fabs(p - 0.01219) < 5e-5);
	p = stats_mann_whitney(ta, 5, tb, 6, &u);
	assert_true(u == 6);
	assert_true(fabs(p - 0.1139) < 5e-4);
	p = stats_mann_whitney(a, 5, a, 5, &u);
	assert_true(fabs(p - 1.0) < 1e-12);          /* identical samples */
	assert_true(stats_mann_whitney(a, 0, b, 5, &u) == 1.0);
}

static void test_median_mad_hl(void **state)
{
	const double x[] = { 5, 1, 4, 2, 3 }, y[] = { 4, 1, 3, 2 };
	const double a[] = { 1, 2, 3 }, b[] = { 2, 4, 6 };

	(void)state;
	assert_true(stats_median(x, 5) == 3);
	assert_true(stats_median(y, 4) == 2.5);
	assert_true(isnan(stats_median(x, 0)));
	assert_true(stats_mad(x, 5) == 1);           /* |x - 3| = 2 2 1 1 0 */
	/* b - a over all pairs: -1 0 1 1 2 3 3 4 5: median 2 */
	assert_true(stats_hodges_lehmann(a, 3, b, 3) == 2);
	assert_true(stats_hodges_lehmann(b, 3, a, 3) == -2);
}

static void test_verdicts(void **state)
{
	static const struct { double p, ratio, lo, hi; enum stats_verdict want; } cases[] = {
		{ 0.001, 0.875, 0.85, 0.90, VERDICT_REGRESSION },
		{ 0.009, 0.948, 0.912, 0.988, VERDICT_REGRESSION },   /* interval reaches past 0.98: still a loss */
		{ 0.001, 1.075, 1.05, 1.10, VERDICT_IMPROVEMENT },
		{ 0.40, 1.00, 0.99, 1.01, VERDICT_NO_DIFFERENCE },
		{ 0.001, 0.99, 0.985, 0.995, VERDICT_NO_DIFFERENCE },  /* significant but within the threshold */
		{ 0.20, 0.97, 0.90, 1.05, VERDICT_INCONCLUSIVE },      /* too wide */
		{ 0.08, 0.93, 0.90, 0.97, VERDICT_INCONCLUSIVE },      /* below, not yet significant */
		{ 0.01, 0.99, 0.975, 0.995, VERDICT_INCONCLUSIVE },    /* real but smaller than the threshold, not yet equivalent */
		{ 0.05, 1.075, 1.05, 1.10, VERDICT_INCONCLUSIVE },     /* p at alpha is not below it */
		{ 0.05, 0.875, 0.85, 0.90, VERDICT_INCONCLUSIVE },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(stats_verdict(cases[i].p, cases[i].ratio, cases[i].lo, cases[i].hi, 0.05, 0.02), cases[i].want);
	assert_string_equal(stats_verdict_name(VERDICT_REGRESSION), "regression");
	assert_string_equal(stats_verdict_name(VERDICT_INCONCLUSIVE), "inconclusive");
}

/* Student's t against printed tables (two-sided 5% and 1% points) and
 * mpmath's regularized incomplete beta (p of t = 0.480384 at df 3:
 * 0.663808). */
static void test_student_t(void **state)
{
	(void)state;
	assert_true(fabs(stats_t_quantile(0.05, 1) - 12.7062) < 1e-3);
	assert_true(fabs(stats_t_quantile(0.05, 3) - 3.182446) < 1e-5);
	assert_true(fabs(stats_t_quantile(0.05, 10) - 2.228139) < 1e-5);
	assert_true(fabs(stats_t_quantile(0.01, 5) - 4.032143) < 1e-5);
	assert_true(fabs(stats_t_quantile(0.05, 1e6) - 1.959966) < 1e-4);
	assert_true(fabs(stats_t_p2(2.228139, 10) - 0.05) < 1e-6);
	assert_true(fabs(stats_t_p2(0.480384, 3) - 0.663808) < 1e-5);
	assert_true(fabs(stats_t_p2(-0.480384, 3) - 0.663808) < 1e-5);
	assert_true(stats_t_p2(0, 7) == 1.0);
	assert_true(stats_t_p2(INFINITY, 7) == 0.0);          /* the incomplete beta at 0 */
	assert_true(stats_t_p2(-1e200, 7) == 0.0);
	assert_true(isnan(stats_t_p2(1, 0)) && isnan(stats_t_quantile(0, 4)) && isnan(stats_t_quantile(0.05, -1)));
}

/* Four blocks with B/A differences (logs) 0.01, -0.02, 0.03, 0: mean
 * 0.005, sd 0.020817, t 0.480384 at 3 df. */
static void test_block_ratio(void **state)
{
	const double d[] = { 0.01, -0.02, 0.03, 0.0 }, same[] = { 0.02, 0.02, 0.02 }, bad[] = { 0.01, NAN };
	const double guard[] = { 0.01, -0.02, 0.03, 0.0, NAN };
	struct stats_blocks b;

	(void)state;
	assert_int_equal(stats_block_ratio(d, 4, 0.05, &b), 0);
	assert_int_equal(b.n, 4);
	assert_true(fabs(b.ratio - exp(0.005)) < 1e-12);
	assert_true(fabs(b.sd - 0.0208167) < 1e-6);
	assert_true(fabs(b.p - 0.663808) < 1e-5);
	assert_true(fabs(b.ci_lo - exp(0.005 - 3.182446 * 0.0208167 / 2)) < 1e-5);
	assert_true(fabs(b.ci_hi - exp(0.005 + 3.182446 * 0.0208167 / 2)) < 1e-5);
	/* no spread at all: the interval is the point, p 0 for a shift */
	assert_int_equal(stats_block_ratio(same, 3, 0.05, &b), 0);
	assert_true(b.sd == 0 && b.p == 0 && fabs(b.ci_lo - exp(0.02)) < 1e-12 && fabs(b.ci_hi - exp(0.02)) < 1e-12);
	assert_int_equal(stats_block_ratio(d, 1, 0.05, &b), -EINVAL);
	/* two blocks are enough (1 df); the value after the n given is never read */
	assert_int_equal(stats_block_ratio(d, 2, 0.05, &b), 0);
	assert_int_equal(b.n, 2);
	assert_int_equal(stats_block_ratio(guard, 4, 0.05, &b), 0);
	assert_true(fabs(b.p - 0.663808) < 1e-5);
	assert_int_equal(stats_block_ratio(bad, 2, 0.05, &b), -EINVAL);
	assert_int_equal(stats_block_ratio(d, 4, 0, &b), -EINVAL);
}

/* The blocks an A/A needs: more noise, more blocks (quadratically, once
 * the t quantile settles); a noiseless one needs the minimum. */
static void test_blocks_needed(void **state)
{
	int n1, n2, n3;

	(void)state;
	assert_int_equal(stats_blocks_needed(0, 0.05, 0.02, 0), 2);
	n1 = stats_blocks_needed(0.01, 0.05, 0.02, 0);
	n2 = stats_blocks_needed(0.02, 0.05, 0.02, 0);
	n3 = stats_blocks_needed(0.04, 0.05, 0.02, 0);
	assert_true(n1 >= 4 && n1 <= 8);
	assert_true(n2 > n1 && n3 > 3 * n2 && n3 < 5 * n2);
	/* n1 is the first n that fits */
	assert_true(stats_t_quantile(0.05, n1 - 1) * 0.01 / sqrt(n1) <= log1p(0.02) * 2 / 3);
	assert_true(stats_t_quantile(0.05, n1 - 2) * 0.01 / sqrt(n1 - 1) > log1p(0.02) * 2 / 3);
	assert_int_equal(stats_blocks_needed(NAN, 0.05, 0.02, 0), 2147483647);
	/* trimmed: fewer degrees of freedom, so more blocks for the same sd */
	assert_true(stats_blocks_needed(0.01, 0.05, 0.02, 0.2) > n1);
	assert_true(stats_blocks_needed(0.04, 0.05, 0.02, 0.2) > n3);
}

/* The scan for the blocks needed starts at the normal's bound, (z sd /
 * w)^2, not at 2: the same first n as a scan from 2 (done here, the
 * reference), over noises, levels and trims; and a noise no budget can
 * judge is INT_MAX at once. */
static void test_blocks_needed_from_bound(void **state)
{
	static const double sds[] = { 0.003, 0.01, 0.03, 0.08, 0.2 }, alphas[] = { 0.05, 0.01, 0.001 },
			    trims[] = { 0, 0.1, 0.25 };
	const double threshold = 0.02, w = log1p(threshold) * 2 / 3;

	(void)state;
	for (size_t i = 0; i < sizeof(sds) / sizeof(sds[0]); i++)
		for (size_t j = 0; j < sizeof(alphas) / sizeof(alphas[0]); j++)
			for (size_t k = 0; k < sizeof(trims) / sizeof(trims[0]); k++) {
				int want = 2;

				while (stats_t_quantile(alphas[j], want - 2 * stats_trim_g(want, trims[k]) - 1) * sds[i] /
					       sqrt((double)want) > w)
					want++;
				assert_int_equal(stats_blocks_needed(sds[i], alphas[j], threshold, trims[k]), want);
			}
	assert_int_equal(stats_blocks_needed(5.0, 0.05, 0.01, 0.1), 2147483647);
}

/* Yuen's trimmed t on ten pairs, one of them a trial at half speed
 * (+0.6): 20% trimmed, two pairs cut from each end.  The trimmed mean of
 * the six left is 0.0025 and the winsorized standard error 0.0059512
 * (worked by hand from the definitions: se^2 = (n - 1) s_w^2 / (h (h - 1)),
 * h = 6), 5 degrees of freedom; the plain t is dragged by the outlier. */
static void test_trimmed(void **state)
{
	const double d[] = { 0.01, -0.02, 0.015, 0.0, -0.005, 0.02, -0.01, 0.005, 0.6, -0.03 };
	const double se = 0.005951190357119041;
	struct stats_blocks b, plain;

	(void)state;
	assert_int_equal(stats_block_ratio_trim(d, 10, 0.05, 0.2, &b), 0);
	assert_int_equal(b.n, 10);
	assert_int_equal(b.trimmed, 2);
	assert_true(b.df == 5);
	assert_true(fabs(b.ratio - exp(0.0025)) < 1e-12);
	assert_true(fabs(b.sd - se * sqrt(10)) < 1e-12);
	assert_true(fabs(b.p - stats_t_p2(0.0025 / se, 5)) < 1e-12);
	/* t(0.975, 5) = 2.570582, t(0.95, 5) = 2.015048 */
	assert_true(fabs(log(b.ci_hi) - (0.0025 + 2.570582 * se)) < 1e-6);
	assert_true(fabs(log(b.ci_lo) - (0.0025 - 2.570582 * se)) < 1e-6);
	assert_true(fabs(log(b.eq_hi) - (0.0025 + 2.015048 * se)) < 1e-6);
	assert_int_equal(stats_block_ratio(d, 10, 0.05, &plain), 0);
	assert_true(plain.trimmed == 0 && plain.df == 9 && plain.sd > 15 * se && plain.ratio > 1.05);
	/* trim 0 is the plain t */
	assert_int_equal(stats_block_ratio_trim(d, 10, 0.05, 0, &b), 0);
	assert_true(b.sd == plain.sd && b.p == plain.p && b.ci_lo == plain.ci_lo);
	/* never fewer than two left */
	assert_int_equal(stats_trim_g(3, 0.45), 0);
	assert_int_equal(stats_trim_g(4, 0.45), 1);
	assert_int_equal(stats_trim_g(9, 0.2), 1);
	assert_int_equal(stats_trim_g(10, 0.2), 2);
	assert_int_equal(stats_trim_g(1, 0.2), 0);            /* too few to leave two: none cut */
	assert_int_equal(stats_block_ratio_trim(d, 10, 0.05, 0.5, &b), -EINVAL);
	assert_int_equal(stats_block_ratio_trim(d, 10, 0.05, -0.1, &b), -EINVAL);
}

/* The normal's tail and the O'Brien-Fleming-type spending (Lan-DeMets):
 * values from the normal table and from Jennison and Turnbull's table of
 * the spending function at alpha 0.05. */
static void test_spending(void **state)
{
	(void)state;
	assert_true(fabs(stats_norm_quantile(0.05) - 1.959964) < 1e-6);
	assert_true(fabs(stats_norm_p2(-2.575829) - 0.01) < 1e-6);
	assert_true(isnan(stats_norm_quantile(0)) && isnan(stats_norm_quantile(1)));
	assert_true(stats_obf_spent(0.05, 0) == 0 && stats_obf_spent(0.05, -1) == 0);
	assert_true(stats_obf_spent(0.05, 1) == 0.05 && stats_obf_spent(0.05, 2) == 0.05);
	assert_true(fabs(stats_obf_spent(0.05, 0.25) - 0.0000889) < 2e-6);
	assert_true(fabs(stats_obf_spent(0.05, 0.5) - 0.00557) < 2e-5);
	assert_true(fabs(stats_obf_spent(0.05, 0.75) - 0.0236) < 2e-4);
	for (double t = 0.05; t < 1; t += 0.05)     /* increasing: every look spends >= 0 */
		assert_true(stats_obf_spent(0.05, t) < stats_obf_spent(0.05, t + 0.05));
}

/* TOST's interval is the (1 - 2 alpha) one: inside the (1 - alpha) one. */
static void test_tost_interval(void **state)
{
	const double d[] = { 0.01, -0.02, 0.015, 0.0, -0.005, 0.02, -0.01, 0.005 };
	struct stats_blocks b;

	(void)state;
	assert_int_equal(stats_block_ratio(d, 8, 0.05, &b), 0);
	assert_true(b.ci_lo < b.eq_lo && b.eq_lo < b.ratio && b.ratio < b.eq_hi && b.eq_hi < b.ci_hi);
	/* t(0.95, 7) = 1.894579 */
	assert_true(fabs(log(b.eq_hi / b.ratio) - 1.894579 * b.sd / sqrt(8)) < 1e-6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spending),
		cmocka_unit_test(test_tost_interval),
		cmocka_unit_test(test_trimmed),
		cmocka_unit_test(test_mann_whitney_known),
		cmocka_unit_test(test_median_mad_hl),
		cmocka_unit_test(test_verdicts),
		cmocka_unit_test(test_student_t),
		cmocka_unit_test(test_block_ratio),
		cmocka_unit_test(test_blocks_needed),
		cmocka_unit_test(test_blocks_needed_from_bound),
	};

	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
