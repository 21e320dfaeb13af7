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

#include "stats.h"

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

static void test_bootstrap(void **state)
{
	const double a[] = { 100, 102, 98, 101, 99, 100 }, b[] = { 90, 92, 88, 91, 89, 90 };
	double r, lo, hi, r2, lo2, hi2;

	(void)state;
	assert_int_equal(stats_bootstrap_ratio(a, 6, b, 6, 2000, 0.05, 7, &r, &lo, &hi), 0);
	assert_true(fabs(r - 0.9) < 1e-12);
	assert_true(lo <= r && r <= hi);
	assert_true(lo > 0.87 && hi < 0.93);         /* tight: the samples barely vary */
	assert_int_equal(stats_bootstrap_ratio(a, 6, b, 6, 2000, 0.05, 7, &r2, &lo2, &hi2), 0);
	assert_true(lo == lo2 && hi == hi2);         /* seeded: reproducible */
	assert_int_equal(stats_bootstrap_ratio(a, 6, a, 6, 500, 0.05, 1, &r, &lo, &hi), 0);
	assert_true(r == 1 && lo > 0.98 && hi < 1.02);
	assert_int_equal(stats_bootstrap_ratio(a, 0, b, 6, 500, 0.05, 1, &r, &lo, &hi), -EINVAL);
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
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(stats_verdict(cases[i].p, cases[i].ratio, cases[i].lo, cases[i].hi, 0.05, 0.02), cases[i].want);
	assert_string_equal(stats_verdict_name(VERDICT_REGRESSION), "regression");
	assert_string_equal(stats_verdict_name(VERDICT_INCONCLUSIVE), "inconclusive");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mann_whitney_known),
		cmocka_unit_test(test_median_mad_hl),
		cmocka_unit_test(test_bootstrap),
		cmocka_unit_test(test_verdicts),
	};

	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
