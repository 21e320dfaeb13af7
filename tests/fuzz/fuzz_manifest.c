/* SPDX-License-Identifier: MIT */
/* fuzz_manifest.c — libFuzzer target: a data set's manifest (key=value
 * lines) through data_parse_manifest, the parser shard_open runs on
 * DIR/manifest.  A refusal is one line naming the file; a manifest that
 * parses is within the format's limits, and its layout is computable
 * without overflow for the first and the last shard. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char name[] = "fuzz/manifest";
	struct data_manifest m;
	struct shard_layout first, last;
	uint64_t chunks, shards;
	struct nt_err err;

	if (data_parse_manifest((const char *)data, size, name, &m, &err)) {
		if (!memchr(err.msg, '\0', sizeof(err.msg)) || strchr(err.msg, '\n') || strncmp(err.msg, name, sizeof(name) - 1))
			__builtin_trap();
		return 0;
	}
	if (!m.samples || m.samples > DATA_MAX_SAMPLES || !m.chunk_samples ||
	    m.chunk_samples > DATA_MAX_CHUNK_SAMPLES || !m.chunks_per_shard ||
	    m.chunks_per_shard > DATA_MAX_CHUNKS_PER_SHARD || m.dense_width > DATA_MAX_WIDTH ||
	    m.sparse_width > DATA_MAX_WIDTH || (m.sparse_width && !m.rows) ||
	    batch_payload_size(m.chunk_samples, m.dense_width, m.sparse_width) > DATA_MAX_CHUNK_PAYLOAD)
		__builtin_trap();
	chunks = (m.samples + m.chunk_samples - 1) / m.chunk_samples;
	shards = (chunks + m.chunks_per_shard - 1) / m.chunks_per_shard;
	if (data_shard_layout(&m, 0, &first) || data_shard_layout(&m, shards - 1, &last) ||
	    data_shard_layout(&m, shards, &last) != -ERANGE)
		__builtin_trap();
	if (first.max_chunk_len == SIZE_MAX || !last.n_chunks || last.n_chunks > m.chunks_per_shard ||
	    last.first_sample >= m.samples)
		__builtin_trap();
	return 0;
}
