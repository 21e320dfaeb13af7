/* SPDX-License-Identifier: MIT */
/* test_textbuf.c — lines appended whole or not at all; text from outside
 * made printable ASCII, or one line with its UTF-8 kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/textbuf.h"

static void test_append_whole_or_not(void **state)
{
	char buf[16];
	size_t len = 0;

	(void)state;
	assert_true(textbuf_appendf(buf, sizeof(buf), &len, "%s=%d;", "a", 1));
	assert_true(textbuf_appendf(buf, sizeof(buf), &len, "%s=%d;", "bb", 22));
	assert_string_equal(buf, "a=1;bb=22;");
	assert_int_equal(len, 10);
	/* 6 more bytes do not fit in 16 with the NUL: nothing of them stays */
	assert_false(textbuf_appendf(buf, sizeof(buf), &len, "cccccc"));
	assert_string_equal(buf, "a=1;bb=22;");
	assert_int_equal(len, 10);
	/* 5 do */
	assert_true(textbuf_appendf(buf, sizeof(buf), &len, "ccccc"));
	assert_int_equal(len, 15);
	assert_false(textbuf_appendf(buf, sizeof(buf), &len, "x"));
	assert_int_equal(len, 15);
}

static void test_printable(void **state)
{
	char s[] = "ok name\n\033[31m\t\x7f\xc3\xa9!";

	(void)state;
	assert_ptr_equal(textbuf_printable(s), s);
	assert_string_equal(s, "ok name?" "?[31m?" "?" "?" "?!"); /* split: no trigraphs */
}

static void test_unctrl(void **state)
{
	char s[] = "a\nb\033[2J\t\x7f caf\xc3\xa9";

	(void)state;
	assert_ptr_equal(textbuf_unctrl(s), s);
	assert_string_equal(s, "a?b?[2J?? caf\xc3\xa9");
}

/* security.md L12: a C1 control in UTF-8 (U+009B, CSI) and bytes outside
 * well-formed UTF-8 (a lone 0x9B, an overlong form, a surrogate, a cut
 * sequence) reach no terminal; other UTF-8 (2, 3 and 4 bytes) stays. */
static void test_unctrl_c1(void **state)
{
	char s[] = "x\xc2\x9b" "2J \x9b" "2J \xc0\xaf \xed\xa0\x80 \xc2\xa0\xe2\x82\xac\xf0\x9f\x98\x80 \xe2\x82";

	(void)state;
	textbuf_unctrl(s);
	assert_string_equal(s, "x??2J ?2J ?? ??? \xc2\xa0\xe2\x82\xac\xf0\x9f\x98\x80 ??");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_whole_or_not),
		cmocka_unit_test(test_printable),
		cmocka_unit_test(test_unctrl),
		cmocka_unit_test(test_unctrl_c1),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
