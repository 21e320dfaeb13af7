/* SPDX-License-Identifier: MIT */
/* test_base64.c — strict base64: the RFC 4648 §10 vectors both ways, every
 * byte value round-trips, and each non-canonical form is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/base64.h"

static const struct {
	const char *plain, *encoded;
} rfc4648[] = {
	{ "", "" },
	{ "f", "Zg==" },
	{ "fo", "Zm8=" },
	{ "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" },
	{ "fooba", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy" },
};

static void test_rfc4648_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rfc4648) / sizeof(rfc4648[0]); i++) {
		size_t n = strlen(rfc4648[i].plain);
		char *enc = base64_encode_alloc(rfc4648[i].plain, n);
		char *dec = NULL;
		size_t len = 99;

		assert_non_null(enc);
		assert_string_equal(enc, rfc4648[i].encoded);
		assert_int_equal(base64_encoded_len(n), strlen(enc));
		assert_int_equal(base64_decode(enc, strlen(enc), &dec, &len), 0);
		assert_int_equal(len, n);
		assert_memory_equal(dec, rfc4648[i].plain, n);
		assert_int_equal(dec[len], '\0');
		free(enc);
		free(dec);
	}
}

static void test_all_bytes_round_trip(void **state)
{
	unsigned char bytes[256];

	(void)state;
	for (int i = 0; i < 256; i++)
		bytes[i] = (unsigned char)(255 - i);
	for (size_t n = 0; n <= sizeof(bytes); n += 37) {
		char *enc = base64_encode_alloc(bytes, n), *dec = NULL;
		size_t len = 0;

		assert_non_null(enc);
		assert_int_equal(base64_decode(enc, strlen(enc), &dec, &len), 0);
		assert_int_equal(len, n);
		assert_memory_equal(dec, bytes, n);
		free(enc);
		free(dec);
	}
}

static void test_refusals_leave_outputs(void **state)
{
	static const char *const bad[] = {
		"Zg",       /* length not a multiple of 4 */
		"Zg=",      /* idem */
		"Zh==",     /* non-zero unused bits (canonical is Zg==) */
		"Zm9=",     /* idem (canonical Zm8=) */
		"Z===",     /* three pads */
		"====",     /* nothing but padding */
		"Zg==Zm9v", /* padding inside */
		"Zm=v",     /* padding not at the end */
		"Zm9v\n",   /* whitespace */
		"Zm 9",     /* space */
		"Zm-_",     /* URL-safe alphabet */
		"Zm9\x80",  /* a byte outside ASCII */
	};
	char *dec = (char *)"untouched";
	size_t len = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(base64_decode(bad[i], strlen(bad[i]), &dec, &len), -EINVAL);
	/* an embedded NUL counts as a character, and is refused */
	assert_int_equal(base64_decode("Zm\0v", 4, &dec, &len), -EINVAL);
	assert_string_equal(dec, "untouched");
	assert_int_equal(len, 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4648_vectors),
		cmocka_unit_test(test_all_bytes_round_trip),
		cmocka_unit_test(test_refusals_leave_outputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
