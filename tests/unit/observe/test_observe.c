/* SPDX-License-Identifier: MIT */
/* test_observe.c — the observer's loop on this host: a command's records
 * and exit status, a failed record stops it, a duration ends it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <time.h>

#include "observe/observe.h"
#include "test_util.h"

struct seen {
	int records;
	int fail_at;        /* the record that fails (0: none) */
};

static int count_record(const struct sampler *s, const struct sampler_snap *a, const struct sampler_snap *b,
			void *arg)
{
	struct seen *seen = arg;

	(void)s;
	assert_true(b->t >= a->t);
	return ++seen->records == seen->fail_at ? -EIO : 0;
}

static void test_command_status(void **state)
{
	char *cmd[] = { "sh", "-c", "sleep 0.05; exit 3", NULL };
	struct seen seen = { 0 };
	struct observe_config cfg = { .command = cmd, .interval_ms = 10, .record = count_record, .arg = &seen };
	struct nt_err err = { 0 };
	int status = -1;

	(void)state;
	assert_int_equal(observe_run(&cfg, &status, &err), 0);
	assert_int_equal(status, 3);
	assert_true(seen.records >= 1);   /* the last one after the command ended */
}

static void test_record_failure_stops(void **state)
{
	char *cmd[] = { "sleep", "30", NULL };
	struct seen seen = { .fail_at = 2 };
	struct observe_config cfg = { .command = cmd, .interval_ms = 10, .record = count_record, .arg = &seen };
	struct nt_err err = { 0 };
	int status = -1;

	(void)state;
	assert_int_equal(observe_run(&cfg, &status, &err), -EIO);
	assert_int_equal(seen.records, 2);
	assert_int_equal(status, -1);     /* untouched */
}

static void test_duration(void **state)
{
	struct seen seen = { 0 };
	struct observe_config cfg = { .interval_ms = 10, .duration_s = 0.1, .record = count_record, .arg = &seen };
	struct nt_err err = { 0 };
	int status = -1;
	struct timespec t0, t1;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(observe_run(&cfg, &status, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(status, 0);
	/* a sample of a busy host can take longer than the interval: at
	 * least one record, and it stops soon after the duration */
	assert_true(seen.records >= 1);
	assert_true(t1.tv_sec - t0.tv_sec < 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_status),
		cmocka_unit_test(test_record_failure_stops),
		cmocka_unit_test(test_duration),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
