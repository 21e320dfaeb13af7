/* SPDX-License-Identifier: MIT */
/* test_flap.c — the contested-knob tracker: N drifts within the window make
 * a key contested, once; drifts spread wider than the window do not; keys
 * are independent; a reset forgets windows but keeps totals; --flap parsing.
 * Time is driven by hand. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/flap.h"

static void test_contested_after_n_in_window(void **state)
{
	struct flap *f = flap_new(3, 600);

	(void)state;
	assert_non_null(f);
	assert_int_equal(flap_drift(f, "proc/sys/vm/swappiness", 0), 0);
	assert_int_equal(flap_drift(f, "proc/sys/vm/swappiness", 100), 0);
	assert_false(flap_contested(f, "proc/sys/vm/swappiness"));
	assert_int_equal(flap_drift(f, "proc/sys/vm/swappiness", 599), 1);   /* 3 within 600 s */
	assert_true(flap_contested(f, "proc/sys/vm/swappiness"));
	assert_int_equal(flap_drift(f, "proc/sys/vm/swappiness", 600), 0);   /* said once */
	assert_true(flap_contested(f, "proc/sys/vm/swappiness"));
	assert_int_equal(flap_total(f, "proc/sys/vm/swappiness"), 4);
	assert_false(flap_contested(f, "sys/kernel/mm/transparent_hugepage/defrag"));
	assert_int_equal(flap_total(f, "never/seen"), 0);
	flap_free(f);
}

static void test_slow_drift_is_not_contested(void **state)
{
	struct flap *f = flap_new(3, 600);

	(void)state;
	/* one drift every 301 s: any three span 602 s > 600 */
	for (int i = 0; i < 20; i++)
		assert_int_equal(flap_drift(f, "k", i * 301.0), 0);
	assert_false(flap_contested(f, "k"));
	assert_int_equal(flap_total(f, "k"), 20);
	/* one more, 1 s after the last: the last three (301*18, 301*19,
	 * 301*19 + 1) span 302 s */
	assert_int_equal(flap_drift(f, "k", 19 * 301.0 + 1), 1);
	flap_free(f);
}

static void test_keys_independent_and_reset(void **state)
{
	struct flap *f = flap_new(2, 10);

	(void)state;
	assert_int_equal(flap_drift(f, "a", 0), 0);
	assert_int_equal(flap_drift(f, "b", 1), 0);
	assert_int_equal(flap_drift(f, "a", 2), 1);
	assert_true(flap_contested(f, "a"));
	assert_false(flap_contested(f, "b"));
	flap_reset(f);
	assert_false(flap_contested(f, "a"));
	assert_int_equal(flap_total(f, "a"), 2);     /* counters never go back */
	assert_int_equal(flap_drift(f, "a", 3), 0);  /* the window starts again */
	assert_int_equal(flap_drift(f, "a", 4), 1);
	flap_free(f);
}

static void test_n1_and_many_keys(void **state)
{
	struct flap *f = flap_new(1, 5);
	char key[32];

	(void)state;
	assert_int_equal(flap_drift(f, "x", 7), 1);  /* N=1: the first drift */
	for (int i = 0; i < 100; i++) {              /* the key array grows */
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(flap_drift(f, key, i), 1);
	}
	assert_true(flap_contested(f, "k0"));
	assert_true(flap_contested(f, "k99"));
	flap_free(f);
	flap_free(NULL);
}

static void count_cb(const char *key, unsigned long total, bool contested, void *arg)
{
	unsigned *n = arg;

	(void)key;
	n[0] += (unsigned)total;
	n[1] += contested;
}

static void test_foreach(void **state)
{
	struct flap *f = flap_new(2, 100);
	unsigned n[2] = { 0, 0 };

	(void)state;
	flap_drift(f, "a", 0);
	flap_drift(f, "a", 1);
	flap_drift(f, "b", 2);
	flap_foreach(f, count_cb, n);
	assert_int_equal(n[0], 3);
	assert_int_equal(n[1], 1);
	flap_free(f);
}

static void test_parse(void **state)
{
	unsigned n = 99;
	double w = -1;

	(void)state;
	assert_int_equal(flap_parse("3/600", &n, &w), 0);
	assert_int_equal(n, 3);
	assert_true(w == 600);
	assert_int_equal(flap_parse("1/0.5", &n, &w), 0);
	assert_true(w == 0.5);
	assert_int_equal(flap_parse("3/10m", &n, &w), 0);      /* a duration, with its unit */
	assert_true(w == 600);
	assert_int_equal(flap_parse("2/250ms", &n, &w), 0);
	assert_true(w == 0.25);
	static const char *const bad[] = { "", "3", "/600", "3/", "0/600", "3/0", "3/-1", "-3/600", "3/600x",
					   "x/600", "3/ 600", "1001/600", "3/inf", "3/nan", "3/1e99",
					   "3/10x", "3/m", "3/2y", "3/366d", "3/9000h" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = 42;
		assert_int_equal(flap_parse(bad[i], &n, &w), -EINVAL);
		assert_int_equal(n, 42);             /* untouched */
	}
	assert_null(flap_new(0, 10));
	assert_int_equal(errno, EINVAL);
	assert_null(flap_new(3, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contested_after_n_in_window),
		cmocka_unit_test(test_slow_drift_is_not_contested),
		cmocka_unit_test(test_keys_independent_and_reset),
		cmocka_unit_test(test_n1_and_many_keys),
		cmocka_unit_test(test_foreach),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests_name("flap", tests, NULL, NULL);
}
