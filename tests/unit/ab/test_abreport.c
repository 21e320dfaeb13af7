/* SPDX-License-Identifier: MIT */
/* test_abreport.c — the interval's name: its level as printed never rounds
 * to 100%, and a level that sequential looks made smaller than the
 * experiment's alpha says so. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ab/abreport.h"

static void expect_name(double alpha, double level_alpha, int looks, const char *want)
{
	char buf[128];

	abreport_ci_name(alpha, level_alpha, looks, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_ci_name(void **state)
{
	(void)state;
	/* one look at the experiment's alpha: its level, plainly */
	expect_name(0.05, 0.05, 1, "95% CI");
	expect_name(0.025, 0.025, 1, "97.5% CI");
	expect_name(0.01, 0.01, 1, "99% CI");
	expect_name(1e-6, 1e-6, 1, "99.9999% CI");
	/* the report's case: 1 - 6.9e-06 printed as 100.0% before */
	expect_name(0.05, 6.9e-06, 4, "99.99931% CI (sequential: 4 looks, the last at level 6.9e-06)");
	expect_name(0.05, 0.0013, 2, "99.87% CI (sequential: 2 looks, the last at level 0.0013)");
	/* TOST's (1 - 2 alpha) interval */
	expect_name(0.1, 0.1, 1, "90% CI");
}

static void test_ci_name_short_buffer(void **state)
{
	char buf[8];

	(void)state;
	abreport_ci_name(0.05, 6.9e-06, 4, buf, sizeof(buf));
	assert_true(strlen(buf) < sizeof(buf));
	assert_string_equal(buf, "99.9993");     /* cut, terminated */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ci_name),
		cmocka_unit_test(test_ci_name_short_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
