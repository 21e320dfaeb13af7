/* test_log.c — error carrier and log level. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "log.h"

static void test_err_set(void **state)
{
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(err_set(&err, -EINVAL, "%s:%d: bad value '%s'", "f.conf", 12, "x"), -EINVAL);
	assert_int_equal(err.code, -EINVAL);
	assert_string_equal(err.msg, "f.conf:12: bad value 'x'");
	assert_int_equal(err_set(NULL, -ENOENT, "ignored"), -ENOENT);
}

static void test_err_set_truncates(void **state)
{
	struct nt_err err;
	char big[4000];

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	err_set(&err, -E2BIG, "%s", big);
	assert_int_equal(strlen(err.msg), sizeof(err.msg) - 1);
}

static int evaluated;
static int side_effect(void)
{
	return ++evaluated;
}

static void test_level_checked_before_arguments(void **state)
{
	(void)state;
	log_set_level(LOG_NOTICE);
	evaluated = 0;
	log_msg(LOG_DEBUG, "%d", side_effect());
	assert_int_equal(evaluated, 0);
	log_set_level(LOG_DEBUG);
	log_msg(LOG_DEBUG, "debug output from test_log: %d", side_effect());
	assert_int_equal(evaluated, 1);
	log_set_level(LOG_NOTICE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_err_set),
		cmocka_unit_test(test_err_set_truncates),
		cmocka_unit_test(test_level_checked_before_arguments),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
