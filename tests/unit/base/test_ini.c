/* SPDX-License-Identifier: MIT */
/* test_ini.c — the strict line reader of small configuration files: what
 * it hands on, and each refusal as "name:line: what". */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/ini.h"

/* Collects "section|key|value|line;" of every assignment. */
static int collect(const char *section, const char *key, const char *value, int line, void *arg,
		   struct nt_err *err)
{
	char *out = arg;
	size_t n = strlen(out);

	(void)err;
	snprintf(out + n, 1024 - n, "%s|%s|%s|%d;", section, key, value, line);
	return 0;
}

static int stop_at_two(const char *section, const char *key, const char *value, int line, void *arg,
		       struct nt_err *err)
{
	(void)section, (void)key, (void)value, (void)arg;
	return line == 2 ? err_set(err, -ERANGE, "f:%d: stop", line) : 0;
}

static void test_assignments(void **state)
{
	static const char text[] = "\xef\xbb\xbf# comment\nk0 = v0\n; other\n[sec.1]\n  a.b-c_d =  x y  \r\nempty =\n";
	char out[1024] = "";
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(ini_parse("f", text, sizeof(text) - 1, collect, out, &err), 0);
	assert_string_equal(out, "|k0|v0|2;sec.1|a.b-c_d|x y|5;sec.1|empty||6;");
	/* not NUL-terminated: only len bytes are read */
	out[0] = '\0';
	assert_int_equal(ini_parse("f", "a = 1\nb = 2", 5, collect, out, &err), 0);
	assert_string_equal(out, "|a|1|1;");
	/* the callback's error stops the read */
	assert_int_equal(ini_parse("f", "a=1\nb=2\nc=3\n", 12, stop_at_two, NULL, &err), -ERANGE);
	assert_string_equal(err.msg, "f:2: stop");
}

static void expect_refusal(const char *text, size_t len, const char *want)
{
	char out[1024] = "";
	struct nt_err err = { 0 };

	assert_int_equal(ini_parse("f", text, len, collect, out, &err), -EINVAL);
	if (!strstr(err.msg, want))
		fail_msg("got '%s', expected '%s'", err.msg, want);
}

static void test_refusals(void **state)
{
	static char big[INI_MAX_LINE + 8];

	(void)state;
	expect_refusal("a = 1\nno equals sign\n", 21, "f:2: expected 'key = value'");
	expect_refusal("[open\n", 6, "f:1: malformed section header");
	expect_refusal("[a b]\n", 6, "f:1: malformed section name");
	expect_refusal("[a] x\n", 6, "f:1: malformed section header");
	expect_refusal("k y = 1\n", 8, "f:1: malformed key 'k y'");
	expect_refusal(" = 1\n", 5, "f:1: malformed key");
	expect_refusal("a = 1\nb = \x01\n", 12, "f:2: control character 0x01");
	expect_refusal("a = 1\0\n", 7, "f:1: control character 0x00");
	expect_refusal("a = 1\rb\r\n", 10, "f:1: control character 0x0d");  /* found by fuzz_gates */
	expect_refusal("a = \x7f\n", 6, "f:1: control character 0x7f");
	memset(big, 'x', sizeof(big));
	expect_refusal(big, sizeof(big), "f:1: line longer than 4096 bytes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_assignments),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
