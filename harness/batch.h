/* SPDX-License-Identifier: MIT */
/* batch.h — the loader's batch format: one contiguous buffer.
 *
 *   header (64 bytes): magic "NTB1", version, flags (zstd), sample count,
 *                      tensor count, batch id, payload length, stored
 *                      length, checksum of the stored bytes
 *   stored bytes:      the payload, zstd-compressed when flagged
 *   payload:           tensor table {dtype, elem per sample, offset, bytes}
 *                      then the tensors, each 64-byte aligned
 *
 * Tensors: 0 dense float32 [n][dense_width], 1 sparse int32 [n][26*4]
 * (empty for mlp), 2 label float32 [n].  Decoding checks everything and
 * writes the payload into a caller buffer (a pinned one), where the
 * tensors are used in place.
 */
#ifndef NODETUNE_HARNESS_BATCH_H
#define NODETUNE_HARNESS_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "nt_err.h"

#define BATCH_MAGIC "NTB1"
#define BATCH_VERSION 1
#define BATCH_FLAG_ZSTD 1u
#define BATCH_TENSORS 3

struct batch_header {
	char magic[4];
	uint16_t version;
	uint16_t flags;
	uint32_t n_samples;
	uint32_t n_tensors;
	uint64_t batch_id;
	uint64_t payload_len;
	uint64_t stored_len;
	uint64_t checksum;
	uint8_t reserved[16];
};

struct batch_tensor {
	uint32_t dtype;          /* 0 float32, 1 int32 */
	uint32_t per_sample;     /* elements per sample */
	uint64_t offset;         /* from the payload start */
	uint64_t nbytes;
};

/* Host-side tensors of a batch (the generator's output). */
struct batch_data {
	uint32_t n;
	uint32_t dense_width, sparse_width;   /* sparse_width 0: none */
	float *dense;
	int32_t *sparse;
	float *label;
};

/* Payload bytes for n samples of these widths; SIZE_MAX when that does not
 * fit in a size_t (a caller given untrusted widths checks for it). */
size_t batch_payload_size(uint32_t n, uint32_t dense_width, uint32_t sparse_width);

/* The most bytes batch_encode can make of n samples of these widths (the
 * header and a zstd frame's worst case); SIZE_MAX when that does not fit. */
size_t batch_encoded_max(uint32_t n, uint32_t dense_width, uint32_t sparse_width);

/* Serialize d as batch id into a new buffer (*ret_buf, freed by the caller,
 * *ret_len bytes).  zstd_level 0: stored uncompressed.  0 or -ENOMEM/-EIO. */
int batch_encode(const struct batch_data *d, uint64_t id, int zstd_level,
		 void **ret_buf, size_t *ret_len);

/* Check buf (len bytes: one batch, nothing after it) and decode its payload
 * into out (out_size bytes, 64-byte aligned), pointing *ret at the tensors
 * inside out.  Every header field is checked before it is used: the stored
 * length against len, the payload length against out_size, the checksum,
 * a zstd frame's recorded content size against the payload length (a frame
 * that records none is refused), the decompressed length, and the tensor
 * table against the one the sample count and widths imply (sizes computed
 * with overflow checks).  Nothing is written past out + payload length.
 * Returns 0, or -EINVAL with err (one line, no file name: the caller adds
 * where the batch came from); *ret and *ret_id are unchanged on error. */
int batch_decode(const void *buf, size_t len, void *out, size_t out_size,
		 struct batch_data *ret, uint64_t *ret_id, struct nt_err *err);

/* The checksum used (64-bit, word-wise multiply-xor). */
uint64_t batch_checksum(const void *p, size_t n);

#endif
