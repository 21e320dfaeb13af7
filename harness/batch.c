/* batch.c — see batch.h. */
#include "batch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

uint64_t batch_checksum(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	h ^= h >> 32;
	return h * 0xff51afd7ed558ccdull;
}

static void tensor_table(uint32_t n, uint32_t dw, uint32_t sw, struct batch_tensor t[BATCH_TENSORS])
{
	size_t off = ALIGN64(BATCH_TENSORS * sizeof(struct batch_tensor));

	t[0] = (struct batch_tensor){ 0, dw, off, (uint64_t)n * dw * 4 };
	off = ALIGN64(off + t[0].nbytes);
	t[1] = (struct batch_tensor){ 1, sw, off, (uint64_t)n * sw * 4 };
	off = ALIGN64(off + t[1].nbytes);
	t[2] = (struct batch_tensor){ 0, 1, off, (uint64_t)n * 4 };
}

size_t batch_payload_size(uint32_t n, uint32_t dense_width, uint32_t sparse_width)
{
	struct batch_tensor t[BATCH_TENSORS];

	tensor_table(n, dense_width, sparse_width, t);
	return ALIGN64(t[2].offset + t[2].nbytes);
}

int batch_encode(const struct batch_data *d, uint64_t id, int zstd_level,
		 void **ret_buf, size_t *ret_len)
{
	struct batch_tensor t[BATCH_TENSORS];
	size_t plen = batch_payload_size(d->n, d->dense_width, d->sparse_width);
	struct batch_header h = { .version = BATCH_VERSION, .n_samples = d->n,
				  .n_tensors = BATCH_TENSORS, .batch_id = id, .payload_len = plen };
	unsigned char *payload, *out;
	size_t cap, stored;

	memcpy(h.magic, BATCH_MAGIC, 4);
	tensor_table(d->n, d->dense_width, d->sparse_width, t);
	cap = zstd_level ? ZSTD_compressBound(plen) : plen;
	out = malloc(sizeof(h) + cap);
	if (!out)
		return -ENOMEM;
	/* uncompressed: build the payload right in place; compressed: in a
	 * scratch buffer first */
	payload = zstd_level ? malloc(plen) : out + sizeof(h);
	if (!payload) {
		free(out);
		return -ENOMEM;
	}
	memset(payload, 0, plen);
	memcpy(payload, t, sizeof(t));
	memcpy(payload + t[0].offset, d->dense, t[0].nbytes);
	if (t[1].nbytes)
		memcpy(payload + t[1].offset, d->sparse, t[1].nbytes);
	memcpy(payload + t[2].offset, d->label, t[2].nbytes);
	if (zstd_level) {
		stored = ZSTD_compress(out + sizeof(h), cap, payload, plen, zstd_level);
		free(payload);
		if (ZSTD_isError(stored)) {
			free(out);
			return -EIO;
		}
		h.flags = BATCH_FLAG_ZSTD;
	} else {
		stored = plen;
	}
	h.stored_len = stored;
	h.checksum = batch_checksum(out + sizeof(h), stored);
	memcpy(out, &h, sizeof(h));
	*ret_buf = out;
	*ret_len = sizeof(h) + stored;
	return 0;
}

int batch_decode(const void *buf, size_t len, void *out, size_t out_size,
		 struct batch_data *ret, uint64_t *ret_id, char *why, size_t why_size)
{
	const unsigned char *b = buf;
	struct batch_tensor t[BATCH_TENSORS];
	struct batch_header h;
	unsigned char *o = out;

	if (len < sizeof(h)) {
		snprintf(why, why_size, "truncated: %zu bytes, less than a batch header", len);
		return -EINVAL;
	}
	memcpy(&h, b, sizeof(h));
	if (memcmp(h.magic, BATCH_MAGIC, 4)) {
		snprintf(why, why_size, "not a batch (bad magic)");
		return -EINVAL;
	}
	if (h.version != BATCH_VERSION || h.n_tensors != BATCH_TENSORS || (h.flags & ~BATCH_FLAG_ZSTD)) {
		snprintf(why, why_size, "unsupported batch version %u (tensors %u, flags %#x)",
			 h.version, h.n_tensors, h.flags);
		return -EINVAL;
	}
	if (h.stored_len > len - sizeof(h)) {
		snprintf(why, why_size, "truncated: header says %llu bytes follow, %zu do",
			 (unsigned long long)h.stored_len, len - sizeof(h));
		return -EINVAL;
	}
	if (batch_checksum(b + sizeof(h), h.stored_len) != h.checksum) {
		snprintf(why, why_size, "checksum mismatch (corrupt data)");
		return -EINVAL;
	}
	if (h.payload_len > out_size) {
		snprintf(why, why_size, "payload of %llu bytes exceeds the %zu-byte buffer",
			 (unsigned long long)h.payload_len, out_size);
		return -EINVAL;
	}
	if (h.flags & BATCH_FLAG_ZSTD) {
		size_t n = ZSTD_decompress(o, out_size, b + sizeof(h), h.stored_len);

		if (ZSTD_isError(n) || n != h.payload_len) {
			snprintf(why, why_size, "zstd: %s", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
			return -EINVAL;
		}
	} else {
		if (h.stored_len != h.payload_len) {
			snprintf(why, why_size, "stored and payload lengths differ");
			return -EINVAL;
		}
		memcpy(o, b + sizeof(h), h.payload_len);
	}
	memcpy(t, o, sizeof(t));
	for (int i = 0; i < BATCH_TENSORS; i++) {
		if (t[i].offset % 64 || t[i].offset + t[i].nbytes > h.payload_len ||
		    t[i].nbytes != (uint64_t)h.n_samples * t[i].per_sample * 4 || t[i].dtype > 1) {
			snprintf(why, why_size, "bad tensor table entry %d", i);
			return -EINVAL;
		}
	}
	ret->n = h.n_samples;
	ret->dense_width = t[0].per_sample;
	ret->sparse_width = t[1].per_sample;
	ret->dense = (float *)(o + t[0].offset);
	ret->sparse = t[1].nbytes ? (int32_t *)(o + t[1].offset) : NULL;
	ret->label = (float *)(o + t[2].offset);
	if (ret_id)
		*ret_id = h.batch_id;
	return 0;
}
