/* SPDX-License-Identifier: MIT */
/* test_nt_err.c — the error convention: code returned and recorded, a NULL
 * err allowed, long messages truncated, and the message always one line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "nt_err.h"

static void test_code_and_message(void **state)
{
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(err_set(&err, -ENOENT, "%s: %d", "policy.conf", 3), -ENOENT);
	assert_int_equal(err.code, -ENOENT);
	assert_string_equal(err.msg, "policy.conf: 3");
	assert_int_equal(err_set(NULL, -EIO, "nobody listens"), -EIO);
}

static void test_truncated(void **state)
{
	struct nt_err err = { 0 };
	char big[3000];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(err_set(&err, -E2BIG, "%s", big), -E2BIG);
	assert_int_equal(strlen(err.msg), sizeof(err.msg) - 1);
}

static void test_one_line(void **state)
{
	struct nt_err err = { 0 };

	(void)state;
	/* a file named with a newline, a JSON key with an escape sequence:
	 * nothing of theirs starts a line or moves a terminal's cursor */
	err_set(&err, -EINVAL, "%s: line %d: %s", "/tmp/a\nnodetune: applied", 2, "k\033[2J\t\x7f");
	assert_string_equal(err.msg, "/tmp/a?nodetune: applied: line 2: k?[2J??");
	/* UTF-8 in a path is left as it is */
	err_set(&err, -EINVAL, "%s", "/tmp/r\xc3\xa9sum\xc3\xa9");
	assert_string_equal(err.msg, "/tmp/r\xc3\xa9sum\xc3\xa9");
}

/* strerror's text in lower case after a colon; four in one message stay
 * apart; an unknown errno still reads as a message. */
static void test_strerror_mid_message(void **state)
{
	struct nt_err err = { 0 };

	(void)state;
	assert_string_equal(nt_strerror(ENOENT), "no such file or directory");
	err_set(&err, -EACCES, "%s: %s; %s; %s", "/x", nt_strerror(EACCES), nt_strerror(EEXIST),
		nt_strerror(EINVAL));
	assert_string_equal(err.msg, "/x: permission denied; file exists; invalid argument");
	assert_non_null(strstr(nt_strerror(99999), "nknown error"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_code_and_message),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_one_line),
		cmocka_unit_test(test_strerror_mid_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
