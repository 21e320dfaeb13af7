/* SPDX-License-Identifier: MIT */
/* base64.h — strict base64 (RFC 4648 §4, the standard alphabet with '='
 * padding), the encoding etcd's JSON gateway uses for keys and values.
 *
 * The decoder accepts only the canonical form the encoder writes: a length
 * that is a multiple of 4, characters of the alphabet only (no whitespace,
 * no URL-safe '-' '_'), one or two '=' only at the very end, and zero bits
 * in the unused low bits of the last character (RFC 4648 §3.5), so every
 * byte string has exactly one accepted encoding.
 */
#ifndef NODETUNE_BASE64_H
#define NODETUNE_BASE64_H

#include <stddef.h>

/* The encoded length of n bytes, without the terminating NUL. */
size_t base64_encoded_len(size_t n);

/* Encode n bytes of src into dst, which has room for base64_encoded_len(n)
 * + 1 bytes; dst is NUL-terminated.  Never fails. */
void base64_encode(const void *src, size_t n, char *dst);

/* Encode n bytes of src into a new NUL-terminated string the caller frees.
 * Returns NULL (errno ENOMEM) when it cannot allocate. */
char *base64_encode_alloc(const void *src, size_t n);

/* Decode the n characters of src.  Returns 0 and sets *ret_data to a new
 * buffer of *ret_len bytes plus a terminating NUL (not counted), which the
 * caller frees; or -EINVAL when src is not strict canonical base64, -ENOMEM.
 * The outputs are untouched on error. */
int base64_decode(const char *src, size_t n, char **ret_data, size_t *ret_len);

#endif
