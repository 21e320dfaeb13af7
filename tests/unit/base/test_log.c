/* SPDX-License-Identifier: MIT */
/* test_log.c — log lines: one line each, the level checked before the
 * arguments are evaluated.  (The error carrier is test_nt_err.c.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/log.h"

/* A log line is one line whatever its arguments hold (a path, a store
 * value, a process's name): control characters are shown as '?'. */
static void test_one_line(void **state)
{
	char buf[256] = { 0 };
	FILE *f = tmpfile();
	int saved = dup(2);
	ssize_t n;

	(void)state;
	assert_non_null(f);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fileno(f), 2), 2);
	log_set_prefix("nodetune");
	log_msg(LOG_ERR, "bad value '%s' in %s", "x\nnodetune: applied\033[2J", "k\t");
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	n = pread(fileno(f), buf, sizeof(buf) - 1, 0);
	fclose(f);
	assert_true(n > 0);
	assert_string_equal(buf, "nodetune: bad value 'x?nodetune: applied?[2J' in k?\n");
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

/* syslog prefixes under journald only: JOURNAL_STREAM must name stderr */
static void test_journal_stream(void **state)
{
	struct stat st;
	char v[64];

	(void)state;
	unsetenv("JOURNAL_STREAM");
	assert_false(log_stderr_is_journal());
	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", v, 1);
	assert_true(log_stderr_is_journal());
	/* inherited by a process whose stderr is another file */
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino + 1);
	setenv("JOURNAL_STREAM", v, 1);
	assert_false(log_stderr_is_journal());
	snprintf(v, sizeof(v), "%llu:%llux", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", v, 1);
	assert_false(log_stderr_is_journal());
	setenv("JOURNAL_STREAM", "", 1);
	assert_false(log_stderr_is_journal());
	unsetenv("JOURNAL_STREAM");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_line),
		cmocka_unit_test(test_level_checked_before_arguments),
		cmocka_unit_test(test_journal_stream),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
