/* SPDX-License-Identifier: MIT */
/* test_nt_duration.c — the one rule for durations: a number and ms, s, m or
 * h, a bare number in seconds, strictly; the format read back; the examples
 * of a message taken within the option's own range. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "nt_duration.h"

static void test_parse(void **state)
{
	double v = -1;

	(void)state;
	assert_int_equal(nt_duration_parse("100ms", 0, 100, &v), 0);
	assert_true(v == 0.1);
	assert_int_equal(nt_duration_parse("200ms", 0.2, 100, &v), 0);   /* the range's own 0.2: taken */
	assert_true(v == 0.2);
	assert_int_equal(nt_duration_parse("30s", 0, 100, &v), 0);
	assert_true(v == 30);
	assert_int_equal(nt_duration_parse("5m", 0, 1000, &v), 0);
	assert_true(v == 300);
	assert_int_equal(nt_duration_parse("1.5h", 0, 1e6, &v), 0);
	assert_true(v == 5400);
	/* a bare number counts seconds, on every option */
	assert_int_equal(nt_duration_parse("0.25", 0, 100, &v), 0);
	assert_true(v == 0.25);
	assert_int_equal(nt_duration_parse("30", 0, 100, &v), 0);
	assert_true(v == 30);
	assert_int_equal(nt_duration_parse(".5s", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse("5 s", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse("-5s", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse("5sec", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse("5S", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse("1e3", 0, 1e6, &v), -EINVAL);
	assert_int_equal(nt_duration_parse("s", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse(".", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse("", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse("nan", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse("5ms", 0.01, 100, &v), -ERANGE);
	assert_int_equal(nt_duration_parse("2m", 0, 100, &v), -ERANGE);
	assert_int_equal(nt_duration_parse("99999999999999999999999999999", 0, 100, &v), -ERANGE);
	assert_int_equal(nt_duration_parse("999999999999999999999999999999999999s", 0, 100, &v), -ERANGE);
	assert_int_equal(nt_duration_parse("999999999999999999999999999999999999x", 0, 100, &v), -EINVAL);
	assert_int_equal(nt_duration_parse(NULL, 0, 100, &v), -EINVAL);
	assert_true(v == 30);    /* untouched by every failure */
}

static void test_format(void **state)
{
	static const double secs[] = { 0.001, 0.01, 0.2, 0.25, 1, 1.5, 59, 60, 90, 600, 3600, 5400, 14400, 86400 * 365 };
	static const char *const want[] = { "1ms", "10ms", "200ms", "250ms", "1s", "1.5s", "59s", "1m", "90s", "10m",
					    "1h", "90m", "4h", "8760h" };
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		double v = -1;

		nt_duration_format(secs[i], buf, sizeof(buf));
		assert_string_equal(buf, want[i]);
		assert_int_equal(nt_duration_parse(buf, secs[i], secs[i], &v), 0);    /* read back exactly */
	}
}

/* every example of the message, and both bounds, taken within the range */
static void expect_examples(double min_s, double max_s, const char *want)
{
	char buf[256], *p, *end;

	nt_duration_expected(min_s, max_s, buf, sizeof(buf));
	assert_string_equal(buf, want);
	p = strstr(buf, "e.g. ") + 5;
	end = strchr(p, ';');
	*end = '\0';
	for (char *tok = strtok(p, ", "); tok; tok = strtok(NULL, ", ")) {
		double v;

		assert_int_equal(nt_duration_parse(tok, min_s, max_s, &v), 0);
	}
}

static void test_expected(void **state)
{
	(void)state;
	/* doctor --window: 200ms at least, so never "e.g. 100ms" */
	expect_examples(0.2, 3600, "a duration from 200ms to 1h (e.g. 250ms, 30s, 5m; a bare number counts seconds)");
	expect_examples(0.01, 60, "a duration from 10ms to 1m (e.g. 100ms, 30s, 1m; a bare number counts seconds)");
	expect_examples(1, 86400 * 30, "a duration from 1s to 720h (e.g. 30s, 5m, 1h; a bare number counts seconds)");
	expect_examples(0.001, 0.005, "a duration from 1ms to 5ms (e.g. 1ms; a bare number counts seconds)");
	expect_examples(0.3, 0.4, "a duration from 300ms to 400ms (e.g. 300ms; a bare number counts seconds)");
}

static void test_expected_truncated(void **state)
{
	char buf[16];

	(void)state;
	nt_duration_expected(0.2, 3600, buf, sizeof(buf));
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_expected),
		cmocka_unit_test(test_expected_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
