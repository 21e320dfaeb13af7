/* SPDX-License-Identifier: MIT */
/* batch.c — see batch.h.
 *
 *   checksum           batch_checksum
 *   layout             tensor_table, batch_payload_size (overflow-checked)
 *   encode             batch_encode
 *   decode             batch_decode: header, stored bytes, zstd frame,
 *                      tensor table, each checked before it is used
 */
#include "batch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

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

/* The tensor table of n samples of these widths, and the payload bytes it
 * implies (*ret_payload).  0, or -EOVERFLOW when a size does not fit in 64
 * bits. */
static int tensor_table(uint32_t n, uint32_t dw, uint32_t sw, struct batch_tensor t[BATCH_TENSORS],
			uint64_t *ret_payload)
{
	static const uint32_t dtype[BATCH_TENSORS] = { 0, 1, 0 };
	const uint32_t per[BATCH_TENSORS] = { dw, sw, 1 };
	uint64_t off = ALIGN64(BATCH_TENSORS * sizeof(struct batch_tensor));

	for (int i = 0; i < BATCH_TENSORS; i++) {
		uint64_t nbytes, end;

		if (__builtin_mul_overflow((uint64_t)n, (uint64_t)per[i] * 4, &nbytes) ||
		    __builtin_add_overflow(off, nbytes, &end) || end > UINT64_MAX - 63)
			return -EOVERFLOW;
		t[i] = (struct batch_tensor){ dtype[i], per[i], off, nbytes };
		off = ALIGN64(end);
	}
	*ret_payload = off;
	return 0;
}

size_t batch_payload_size(uint32_t n, uint32_t dense_width, uint32_t sparse_width)
{
	struct batch_tensor t[BATCH_TENSORS];
	uint64_t plen;

	if (tensor_table(n, dense_width, sparse_width, t, &plen) || plen > SIZE_MAX)
		return SIZE_MAX;
	return (size_t)plen;
}

size_t batch_encoded_max(uint32_t n, uint32_t dense_width, uint32_t sparse_width)
{
	size_t plen = batch_payload_size(n, dense_width, sparse_width), bound;

	if (plen == SIZE_MAX || plen > SIZE_MAX / 2)
		return SIZE_MAX;
	bound = ZSTD_compressBound(plen);
	if (ZSTD_isError(bound) || bound > SIZE_MAX / 2)
		return SIZE_MAX;
	return sizeof(struct batch_header) + (bound > plen ? bound : plen);
}

int batch_encode(const struct batch_data *d, uint64_t id, int zstd_level,
		 void **ret_buf, size_t *ret_len)
{
	struct batch_tensor t[BATCH_TENSORS];
	struct batch_header h = { .version = BATCH_VERSION, .n_samples = d->n,
				  .n_tensors = BATCH_TENSORS, .batch_id = id };
	unsigned char *payload, *out;
	size_t plen, cap, stored;
	uint64_t plen64;

	if (tensor_table(d->n, d->dense_width, d->sparse_width, t, &plen64) || plen64 > SIZE_MAX / 2)
		return -ENOMEM;
	plen = (size_t)plen64;
	h.payload_len = plen;
	memcpy(h.magic, BATCH_MAGIC, 4);
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

/* Decompress the stored bytes (one zstd frame that records its content
 * size, exactly payload_len bytes) into o.  0 or -EINVAL with err. */
static int unzstd(const unsigned char *src, size_t stored, unsigned char *o, size_t payload_len,
		  struct nt_err *err)
{
	unsigned long long fcs = ZSTD_getFrameContentSize(src, stored);
	size_t csz, n;

	if (fcs == ZSTD_CONTENTSIZE_ERROR) {
		return err_set(err, -EINVAL, "zstd: not a zstd frame");
	}
	if (fcs == ZSTD_CONTENTSIZE_UNKNOWN) {
		return err_set(err, -EINVAL, "zstd: the frame does not record its content size");
	}
	if (fcs != payload_len) {
		return err_set(err, -EINVAL, "zstd: the frame holds %llu bytes, the batch header says %zu",
			 fcs, payload_len);
	}
	csz = ZSTD_findFrameCompressedSize(src, stored);
	if (ZSTD_isError(csz)) {
		return err_set(err, -EINVAL, "zstd: %s", ZSTD_getErrorName(csz));
	}
	if (csz != stored) {
		return err_set(err, -EINVAL, "zstd: %zu bytes after the %zu-byte frame", stored - csz, csz);
	}
	/* a capacity of exactly payload_len: nothing beyond it is written */
	n = ZSTD_decompress(o, payload_len, src, stored);
	if (ZSTD_isError(n)) {
		return err_set(err, -EINVAL, "zstd: %s", ZSTD_getErrorName(n));
	}
	if (n != payload_len) {
		return err_set(err, -EINVAL, "zstd: decompressed %zu bytes, the batch header says %zu", n, payload_len);
	}
	return 0;
}

/* The header of buf (len bytes) checked against len, out_size and the
 * checksum.  0 or -EINVAL with err; *ret filled either way. */
static int check_header(const unsigned char *b, size_t len, size_t out_size, struct batch_header *h,
			struct nt_err *err)
{
	size_t follow;

	if (len < sizeof(*h)) {
		return err_set(err, -EINVAL, "truncated: %zu bytes, less than a batch header", len);
	}
	memcpy(h, b, sizeof(*h));
	follow = len - sizeof(*h);
	if (memcmp(h->magic, BATCH_MAGIC, 4)) {
		return err_set(err, -EINVAL, "not a batch (bad magic)");
	}
	if (h->version != BATCH_VERSION || h->n_tensors != BATCH_TENSORS || (h->flags & ~BATCH_FLAG_ZSTD)) {
		return err_set(err, -EINVAL, "unsupported batch version %u (tensors %u, flags %#x)",
			 h->version, h->n_tensors, h->flags);
	}
	if (h->stored_len > follow) {
		return err_set(err, -EINVAL, "truncated: header says %llu bytes follow, %zu do",
			 (unsigned long long)h->stored_len, follow);
	}
	if (h->stored_len < follow) {
		return err_set(err, -EINVAL, "%llu bytes after the batch's %llu stored bytes",
			 (unsigned long long)(follow - h->stored_len), (unsigned long long)h->stored_len);
	}
	if (batch_checksum(b + sizeof(*h), h->stored_len) != h->checksum) {
		return err_set(err, -EINVAL, "checksum mismatch (corrupt data)");
	}
	if (h->payload_len > out_size) {
		return err_set(err, -EINVAL, "payload of %llu bytes exceeds the %zu-byte buffer",
			 (unsigned long long)h->payload_len, out_size);
	}
	if (h->payload_len < BATCH_TENSORS * sizeof(struct batch_tensor)) {
		return err_set(err, -EINVAL, "payload of %llu bytes cannot hold the tensor table",
			 (unsigned long long)h->payload_len);
	}
	if (!(h->flags & BATCH_FLAG_ZSTD) && h->stored_len != h->payload_len) {
		return err_set(err, -EINVAL, "stored and payload lengths differ (%llu, %llu) in an uncompressed batch",
			 (unsigned long long)h->stored_len, (unsigned long long)h->payload_len);
	}
	return 0;
}

int batch_decode(const void *buf, size_t len, void *out, size_t out_size,
		 struct batch_data *ret, uint64_t *ret_id, struct nt_err *err)
{
	const unsigned char *b = buf;
	struct batch_tensor t[BATCH_TENSORS], want[BATCH_TENSORS];
	struct batch_header h;
	unsigned char *o = out;
	uint64_t plen;
	int e;

	e = check_header(b, len, out_size, &h, err);
	if (e)
		return e;
	/* from here on payload_len <= out_size and stored_len == len - 64 */
	if (h.flags & BATCH_FLAG_ZSTD) {
		e = unzstd(b + sizeof(h), (size_t)h.stored_len, o, (size_t)h.payload_len, err);
		if (e)
			return e;
	} else {
		memcpy(o, b + sizeof(h), (size_t)h.payload_len);
	}
	/* the table must be the one the sample count and widths imply */
	memcpy(t, o, sizeof(t));
	if (tensor_table(h.n_samples, t[0].per_sample, t[1].per_sample, want, &plen)) {
		return err_set(err, -EINVAL, "bad tensor table: %u samples of widths %u and %u overflow",
			 h.n_samples, t[0].per_sample, t[1].per_sample);
	}
	for (int i = 0; i < BATCH_TENSORS; i++) {
		if (memcmp(&t[i], &want[i], sizeof(t[i]))) {
			return err_set(err, -EINVAL, "bad tensor table entry %d (dtype %u, %u per sample, %llu bytes at %llu)",
				 i, t[i].dtype, t[i].per_sample, (unsigned long long)t[i].nbytes,
				 (unsigned long long)t[i].offset);
		}
	}
	if (plen != h.payload_len) {
		return err_set(err, -EINVAL, "payload of %llu bytes, its tensor table needs %llu",
			 (unsigned long long)h.payload_len, (unsigned long long)plen);
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
