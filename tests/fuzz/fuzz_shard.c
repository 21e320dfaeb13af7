/* SPDX-License-Identifier: MIT */
/* fuzz_shard.c — libFuzzer target: a shard file's bytes (the seeds are
 * shards of the small data set below, written by data_write_shards) through
 * the reader's checks: shard_parse_header against the manifest's layout of
 * shard 0 or 1, shard_parse_index, then shard_decode_chunk on every chunk,
 * all reading from the buffer.  Refusals are one line naming the file; a
 * chunk that decodes lies inside the out buffer (every tensor byte read). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the seeds' data set: 22 samples in chunks of 4, 3 a shard: 2 shards */
static const struct data_manifest fuzz_set = {
	.samples = 22, .chunk_samples = 4, .chunks_per_shard = 3,
	.dense_width = 4, .sparse_width = 8, .rows = 100, .seed = 7,
};

static const char name[] = "fuzz/shard.nts";

static void check_why(const char *why, size_t size)
{
	if (!memchr(why, '\0', size) || strchr(why, '\n') || strncmp(why, name, sizeof(name) - 1))
		__builtin_trap();
}

static void chunks(const uint8_t *data, const struct shard_header *h, const struct shard_index *ix,
		   const struct shard_layout *l)
{
	size_t cap = batch_payload_size(fuzz_set.chunk_samples, fuzz_set.dense_width, fuzz_set.sparse_width);
	unsigned char *out = NULL;
	struct nt_err err;

	if (posix_memalign((void **)&out, 64, cap))
		return;
	for (uint32_t c = 0; c < h->n_chunks; c++) {
		struct batch_data d;
		volatile float sink = 0;

		if (shard_decode_chunk(data + ix[c].offset, &ix[c], c, &fuzz_set, l, name, out, cap, &d, &err)) {
			check_why(err.msg, sizeof(err.msg));
			continue;
		}
		for (size_t i = 0; i < (size_t)d.n * d.dense_width; i++)
			sink += d.dense[i];
		for (size_t i = 0; i < (size_t)d.n * d.sparse_width; i++)
			if (d.sparse[i] < 0 || (uint32_t)d.sparse[i] >= fuzz_set.rows)
				__builtin_trap();
		for (size_t i = 0; i < d.n; i++)
			sink += d.label[i];
		(void)sink;
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (uint64_t shard = 0; shard < 2; shard++) {
		struct shard_layout l;
		struct shard_header h;
		struct shard_index *ix;
		struct nt_err err;

		if (data_shard_layout(&fuzz_set, shard, &l))
			__builtin_trap();
		if (shard_parse_header(data, size < sizeof(h) ? size : sizeof(h), size, name, &l, &h, &err)) {
			check_why(err.msg, sizeof(err.msg));
			continue;
		}
		/* the header placed the index at the end of the buffer */
		if (h.index_offset + (uint64_t)h.n_chunks * sizeof(*ix) != size)
			__builtin_trap();
		ix = malloc((size_t)h.n_chunks * sizeof(*ix) + 1);
		if (!ix)
			return 0;
		if (shard_parse_index(data + h.index_offset, size - h.index_offset, &h, size, &l, name, ix, &err))
			check_why(err.msg, sizeof(err.msg));
		else
			chunks(data, &h, ix, &l);
		free(ix);
	}
	return 0;
}
