/* SPDX-License-Identifier: MIT */
/* test_parse.c — checked number parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/parse.h"

static void test_u64_valid(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(parse_u64("0", 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("18446744073709551615", UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(parse_u64("10", 10, &v), 0);
	assert_int_equal(v, 10);
}

static void test_u64_invalid_leaves_output(void **state)
{
	static const char *const bad[] = { "", " 1", "1 ", "-1", "+1", "0x10", "1e3", "abc", "12a" };
	uint64_t v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_u64(bad[i], UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_u64("11", 10, &v), -ERANGE);
	assert_int_equal(parse_u64("18446744073709551616", UINT64_MAX, &v), -ERANGE);
	assert_int_equal(v, 42);
	assert_int_equal(parse_u64(NULL, 1, &v), -EINVAL);
}

static void test_int(void **state)
{
	int v = 5;

	(void)state;
	assert_int_equal(parse_int("-3", -5, 5, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(parse_int("3", 0, 3, &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(parse_int("4", 0, 3, &v), -ERANGE);
	assert_int_equal(parse_int("-1", 0, 3, &v), -ERANGE);
	assert_int_equal(parse_int("yes", 0, 3, &v), -EINVAL);
	assert_int_equal(parse_int("1.5", 0, 3, &v), -EINVAL);
	assert_int_equal(parse_int("-", 0, 3, &v), -EINVAL);
	assert_int_equal(v, 3);
}

static void test_double(void **state)
{
	double v = 7;

	(void)state;
	assert_int_equal(parse_double("0.05", 1e-6, 0.5, &v), 0);
	assert_true(v == 0.05);
	assert_int_equal(parse_double("-.5", -1, 1, &v), 0);
	assert_true(v == -0.5);
	assert_int_equal(parse_double("+1e-6", 1e-6, 0.5, &v), 0);   /* both ends are in */
	assert_true(v == 1e-6);
	assert_int_equal(parse_double("0.5", 1e-6, 0.5, &v), 0);
	assert_true(v == 0.5);
	assert_int_equal(parse_double("0.5000001", 1e-6, 0.5, &v), -ERANGE);
	assert_int_equal(parse_double("9e-7", 1e-6, 0.5, &v), -ERANGE);
	assert_int_equal(parse_double("1e999", 0, 1e300, &v), -ERANGE);   /* beyond double */
	assert_int_equal(parse_double("nan", 0, 1, &v), -EINVAL);
	assert_int_equal(parse_double("inf", 0, 1, &v), -EINVAL);
	assert_int_equal(parse_double("-inf", -1e300, 1, &v), -ERANGE);   /* a sign first: strtod takes it, out of range */
	assert_int_equal(parse_double(" 0.1", 0, 1, &v), -EINVAL);
	assert_int_equal(parse_double("0.1 ", 0, 1, &v), -EINVAL);
	assert_int_equal(parse_double("5%", 0, 10, &v), -EINVAL);
	assert_int_equal(parse_double("", 0, 1, &v), -EINVAL);
	assert_int_equal(parse_double("-", 0, 1, &v), -EINVAL);
	assert_int_equal(parse_double(NULL, 0, 1, &v), -EINVAL);
	assert_true(v == 0.5);   /* untouched by every refusal */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_u64_valid),
		cmocka_unit_test(test_u64_invalid_leaves_output),
		cmocka_unit_test(test_int),
		cmocka_unit_test(test_double),
	};

	return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
