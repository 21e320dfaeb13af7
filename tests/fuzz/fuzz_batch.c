/* SPDX-License-Identifier: MIT */
/* fuzz_batch.c — libFuzzer target: the loader's batch decoder
 * (batch_decode) over arbitrary bytes, twice: as they are, and with the
 * header's stored length and checksum made to match the bytes, so that the
 * zstd frame and the tensor table behind the checksum are reached too.  A
 * batch that decodes must lie inside the out buffer: every tensor byte is
 * read (ASan checks where). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_MAX (1u << 20)

static void decode(const uint8_t *buf, size_t len, size_t out_size)
{
	struct batch_data d;
	uint64_t id;
	struct nt_err err;
	unsigned char *out = NULL;
	volatile float sink = 0;

	if (posix_memalign((void **)&out, 64, out_size ? out_size : 64))
		return;
	if (batch_decode(buf, len, out, out_size, &d, &id, &err)) {
		if (!memchr(err.msg, '\0', sizeof(err.msg)) || strchr(err.msg, '\n'))
			__builtin_trap();
		free(out);
		return;
	}
	if (batch_payload_size(d.n, d.dense_width, d.sparse_width) > out_size)
		__builtin_trap();
	for (size_t i = 0; i < (size_t)d.n * d.dense_width; i++)
		sink += d.dense[i];
	for (size_t i = 0; d.sparse && i < (size_t)d.n * d.sparse_width; i++)
		sink += (float)d.sparse[i];
	for (size_t i = 0; i < d.n; i++)
		sink += d.label[i];
	(void)sink;
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct batch_header h;
	size_t out_size = 4096;
	uint8_t *copy;

	if (size >= sizeof(h)) {
		memcpy(&h, data, sizeof(h));
		/* an out buffer the header's payload fits, when it is not huge */
		if (h.payload_len <= OUT_MAX)
			out_size = (size_t)h.payload_len;
	}
	decode(data, size, out_size);
	if (size < sizeof(h))
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	h.stored_len = size - sizeof(h);
	h.checksum = batch_checksum(copy + sizeof(h), size - sizeof(h));
	memcpy(copy, &h, sizeof(h));
	decode(copy, size, out_size);
	free(copy);
	return 0;
}
