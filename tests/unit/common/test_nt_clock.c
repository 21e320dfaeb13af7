/* SPDX-License-Identifier: MIT */
/* test_nt_clock.c — the one clock: each reading agrees with clock_gettime
 * on its clock and in its unit, and a deadline lies the asked time ahead,
 * its nanoseconds carried into seconds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "nt_clock.h"

static double ts_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_readings(void **state)
{
	double m0 = ts_s(CLOCK_MONOTONIC), m;

	(void)state;
	m = nt_mono_s();
	assert_true(m >= m0 && m - m0 < 1);
	m = nt_mono_ms() / 1e3;
	assert_true(m >= m0 && m - m0 < 1);
	m = (double)nt_mono_ns() / 1e9;
	assert_true(m >= m0 && m - m0 < 1);
	assert_true(nt_wall_s() - (double)time(NULL) > -1 && nt_wall_s() - (double)time(NULL) < 2);
	assert_true(nt_clock_s(CLOCK_BOOTTIME) >= ts_s(CLOCK_MONOTONIC) - 1);
}

static void test_deadline(void **state)
{
	struct timespec d;
	double now, at;

	(void)state;
	for (int k = 0; k < 300; k++) {     /* every hundredth of a second: some carry */
		double s = k / 100.0 + 0.005;

		now = ts_s(CLOCK_MONOTONIC);
		d = nt_deadline(CLOCK_MONOTONIC, s);
		at = (double)d.tv_sec + (double)d.tv_nsec / 1e9;
		assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
		assert_true(at - now >= s - 1e-6 && at - now < s + 0.5);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readings),
		cmocka_unit_test(test_deadline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
