/* SPDX-License-Identifier: MIT */
/* assert_count.c — every unit test shows that it checked something.
 *
 * Linked into each unit-test binary with -Wl,--wrap= for cmocka's
 * assertion functions and for _cmocka_run_group_tests (the Makefile's
 * UNIT_WRAP).  Each assertion made counts; each test runs through a
 * trampoline that zeroes the count, runs the test and, when the test
 * returned having made no assertion at all (an early return before its
 * checks, a loop over nothing), fails it, naming the test.  A test that
 * skips (test_skip_host, test_need: cmocka's skip() leaves by longjmp) or
 * fails never returns here.  A test that checks only through fail_msg on a
 * bad value (assert_no_leak) makes one test_checked() call for its
 * passing case.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static unsigned long n_asserts;

void test_checked(void); /* test_util.h */
void test_checked(void)
{
	n_asserts++;
}

#define WRAP(name, params, args)                  \
	void __real_##name params;                \
	void __wrap_##name params;                \
	void __wrap_##name params                 \
	{                                         \
		n_asserts++;                      \
		__real_##name args;               \
	}

WRAP(_assert_true, (const LargestIntegralType r, const char *const e, const char *const f, const int l), (r, e, f, l))
WRAP(_assert_return_code, (const LargestIntegralType r, size_t s, const LargestIntegralType e, const char *const x,
			   const char *const f, const int l), (r, s, e, x, f, l))
WRAP(_assert_int_equal, (const LargestIntegralType a, const LargestIntegralType b, const char *const f, const int l),
     (a, b, f, l))
WRAP(_assert_int_not_equal, (const LargestIntegralType a, const LargestIntegralType b, const char *const f, const int l),
     (a, b, f, l))
WRAP(_assert_float_equal, (const float a, const float b, const float e, const char *const f, const int l),
     (a, b, e, f, l))
WRAP(_assert_float_not_equal, (const float a, const float b, const float e, const char *const f, const int l),
     (a, b, e, f, l))
WRAP(_assert_string_equal, (const char *const a, const char *const b, const char *const f, const int l), (a, b, f, l))
WRAP(_assert_string_not_equal, (const char *const a, const char *const b, const char *const f, const int l),
     (a, b, f, l))
WRAP(_assert_memory_equal, (const void *const a, const void *const b, const size_t n, const char *const f, const int l),
     (a, b, n, f, l))
WRAP(_assert_memory_not_equal, (const void *const a, const void *const b, const size_t n, const char *const f,
				const int l), (a, b, n, f, l))
WRAP(_assert_in_range, (const LargestIntegralType v, const LargestIntegralType lo, const LargestIntegralType hi,
			const char *const f, const int l), (v, lo, hi, f, l))
WRAP(_assert_not_in_range, (const LargestIntegralType v, const LargestIntegralType lo, const LargestIntegralType hi,
			    const char *const f, const int l), (v, lo, hi, f, l))
WRAP(_assert_in_set, (const LargestIntegralType v, const LargestIntegralType s[], const size_t n, const char *const f,
		      const int l), (v, s, n, f, l))
WRAP(_assert_not_in_set, (const LargestIntegralType v, const LargestIntegralType s[], const size_t n,
			  const char *const f, const int l), (v, s, n, f, l))

/* the tests of the group being run: their own functions and names */
#define TRAMPOLINES 64
static CMUnitTestFunction orig[TRAMPOLINES];
static const char *names[TRAMPOLINES];

static void run_counted(int i, void **state)
{
	n_asserts = 0;
	orig[i](state);
	if (n_asserts == 0)
		fail_msg("%s returned without a single assertion: a check that never ran "
			 "(skip it by name with test_skip_host or test_need, or make it run)", names[i]);
}

/* one trampoline per test of a group: tramp_I runs test I */
#define T(i) static void tramp_##i(void **state) { run_counted(i, state); }
T(0) T(1) T(2) T(3) T(4) T(5) T(6) T(7)
T(8) T(9) T(10) T(11) T(12) T(13) T(14) T(15)
T(16) T(17) T(18) T(19) T(20) T(21) T(22) T(23)
T(24) T(25) T(26) T(27) T(28) T(29) T(30) T(31)
T(32) T(33) T(34) T(35) T(36) T(37) T(38) T(39)
T(40) T(41) T(42) T(43) T(44) T(45) T(46) T(47)
T(48) T(49) T(50) T(51) T(52) T(53) T(54) T(55)
T(56) T(57) T(58) T(59) T(60) T(61) T(62) T(63)
static const CMUnitTestFunction tramps[TRAMPOLINES] = {
	tramp_0, tramp_1, tramp_2, tramp_3, tramp_4, tramp_5, tramp_6, tramp_7,
	tramp_8, tramp_9, tramp_10, tramp_11, tramp_12, tramp_13, tramp_14, tramp_15,
	tramp_16, tramp_17, tramp_18, tramp_19, tramp_20, tramp_21, tramp_22, tramp_23,
	tramp_24, tramp_25, tramp_26, tramp_27, tramp_28, tramp_29, tramp_30, tramp_31,
	tramp_32, tramp_33, tramp_34, tramp_35, tramp_36, tramp_37, tramp_38, tramp_39,
	tramp_40, tramp_41, tramp_42, tramp_43, tramp_44, tramp_45, tramp_46, tramp_47,
	tramp_48, tramp_49, tramp_50, tramp_51, tramp_52, tramp_53, tramp_54, tramp_55,
	tramp_56, tramp_57, tramp_58, tramp_59, tramp_60, tramp_61, tramp_62, tramp_63,
};

int __real__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests, const size_t n,
				   CMFixtureFunction setup, CMFixtureFunction teardown);
int __wrap__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests, const size_t n,
				   CMFixtureFunction setup, CMFixtureFunction teardown);

int __wrap__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests, const size_t n,
				   CMFixtureFunction setup, CMFixtureFunction teardown)
{
	struct CMUnitTest *t;
	int r;

	if (n > TRAMPOLINES) {
		print_error("assert_count: %zu tests in group %s, more than %d: raise TRAMPOLINES\n", n, group_name,
			    TRAMPOLINES);
		return (int)n;
	}
	t = calloc(n ? n : 1, sizeof(*t));
	if (!t)
		return (int)n;
	memcpy(t, tests, n * sizeof(*t));
	for (size_t i = 0; i < n; i++) {
		orig[i] = tests[i].test_func;
		names[i] = tests[i].name;
		t[i].test_func = tramps[i];
	}
	r = __real__cmocka_run_group_tests(group_name, t, n, setup, teardown);
	free(t);
	return r;
}
