/* SPDX-License-Identifier: MIT */
/* base64.c — see base64.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/base64.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

void base64_encode(const void *src, size_t n, char *dst)
{
	const unsigned char *s = src;
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];

		*dst++ = alphabet[v >> 18 & 63];
		*dst++ = alphabet[v >> 12 & 63];
		*dst++ = alphabet[v >> 6 & 63];
		*dst++ = alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);

		*dst++ = alphabet[v >> 18 & 63];
		*dst++ = alphabet[v >> 12 & 63];
		*dst++ = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
		*dst++ = '=';
	}
	*dst = '\0';
}

char *base64_encode_alloc(const void *src, size_t n)
{
	char *dst;

	if (n > (SIZE_MAX - 4) / 4 * 3)
		return errno = ENOMEM, NULL;
	dst = malloc(base64_encoded_len(n) + 1);
	if (dst)
		base64_encode(src, n, dst);
	return dst;
}

/* the 6-bit value of c, or -1 when c is not in the alphabet */
static int sextet(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decode one group of 4 characters (the last may hold padding) into out;
 * returns the number of bytes (1-3) or -EINVAL. */
static int decode_quad(const char *q, int last, unsigned char *out)
{
	int pad = last ? (q[3] == '=') + (q[2] == '=' && q[3] == '=') : 0;
	int v[4] = { 0, 0, 0, 0 };

	for (int j = 0; j < 4 - pad; j++) {
		v[j] = sextet(q[j]);
		if (v[j] < 0)
			return -EINVAL;
	}
	/* the bits a padded group does not use must be zero (canonical) */
	if ((pad == 1 && (v[2] & 3)) || (pad == 2 && (v[1] & 15)))
		return -EINVAL;
	out[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
	out[1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
	out[2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
	return 3 - pad;
}

int base64_decode(const char *src, size_t n, char **ret_data, size_t *ret_len)
{
	unsigned char *out;
	size_t len = 0;

	if (n % 4)
		return -EINVAL;
	out = malloc(n / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i += 4) {
		int got = decode_quad(src + i, i + 4 == n, out + len);

		if (got < 0) {
			free(out);
			return got;
		}
		len += (size_t)got;
	}
	out[len] = '\0';
	*ret_data = (char *)out;
	*ret_len = len;
	return 0;
}
