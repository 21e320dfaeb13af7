/* SPDX-License-Identifier: MIT */
/* test_cpulist.c — Linux cpulist parsing and formatting. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/cpulist.h"

static void roundtrip(const char *in, const char *want)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	char buf[256];

	assert_int_equal(cpulist_parse(in, set), 0);
	assert_int_equal(cpulist_format(set, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
	hwloc_bitmap_free(set);
}

static void test_valid(void **state)
{
	(void)state;
	roundtrip("0-3,8,10-11", "0-3,8,10-11");
	roundtrip("", "");
	roundtrip("\n", "");
	roundtrip("5\n", "5");
	roundtrip("0-17,36-53", "0-17,36-53");
	roundtrip("3,1,2", "1-3");          /* the kernel never writes this, but it is a set */
	roundtrip("0-0", "0");
	roundtrip("65535", "65535");
}

static void test_invalid_leaves_set(void **state)
{
	static const char *const bad[] = {
		"3-1", "1,,2", "a", "1-", "-1", ",1", "1,", "65536", "1 2", "0x3", "1-2-3", "(null)",
	};
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	char buf[64];

	(void)state;
	hwloc_bitmap_set(set, 7);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cpulist_parse(bad[i], set), -EINVAL);
	assert_int_equal(cpulist_format(set, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "7");
	hwloc_bitmap_free(set);
}

static void test_format_limits(void **state)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	char small[4], *s;

	(void)state;
	assert_int_equal(cpulist_parse("0-3,8-11", set), 0);
	assert_int_equal(cpulist_format(set, small, sizeof(small)), -ENOSPC);
	s = cpulist_format_alloc(set);
	assert_string_equal(s, "0-3,8-11");
	free(s);
	hwloc_bitmap_fill(set);
	assert_int_equal(cpulist_format(set, small, sizeof(small)), -EINVAL);
	assert_null(cpulist_format_alloc(set));
	hwloc_bitmap_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid_leaves_set),
		cmocka_unit_test(test_format_limits),
	};

	return cmocka_run_group_tests_name("cpulist", tests, NULL, NULL);
}
