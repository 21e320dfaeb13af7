/* data.h — where samples come from: a seeded synthetic generator,
 * deterministic per global sample index (so N ranks with batch B see exactly
 * the samples one rank with batch N*B sees), or shard files on disk written
 * by `nodetune-harness --write-data DIR`.
 *
 * Shard file (DIR/shard-NNNNN.nts): a 64-byte header (magic "NTS1", version,
 * chunk count, samples per chunk, first sample, index offset), the chunks
 * (each a batch in the loader's format, batch.h, with its own checksum), and
 * an index {offset, length} per chunk.  DIR/manifest holds key=value lines:
 * samples, chunk_samples, chunks_per_shard, dense_width, sparse_width, seed.
 */
#ifndef NODETUNE_HARNESS_DATA_H
#define NODETUNE_HARNESS_DATA_H

#include <stdint.h>

#include "batch.h"

struct data_spec {
	uint32_t dense_width;
	uint32_t sparse_width;     /* 26*4 for dlrm-small, 0 for mlp */
	uint32_t rows;             /* embedding rows the indices address */
	uint64_t seed;
};

/* Fill sample g (dense[dense_width], sparse[sparse_width], *label). */
void data_synth(const struct data_spec *s, uint64_t g, float *dense, int32_t *sparse, float *label);

/* Fill d (n samples, buffers of d already allocated) with samples g0.. */
void data_synth_batch(const struct data_spec *s, uint64_t g0, struct batch_data *d);

/* Write `samples` synthetic samples into dir as shards.  0 or -errno with
 * why. */
int data_write_shards(const char *dir, const struct data_spec *s, uint64_t samples,
		      uint32_t chunk_samples, uint32_t chunks_per_shard, int zstd_level,
		      char *why, size_t why_size);

struct shard_reader;

/* Open dir for reading samples of spec s (widths must match).  NULL with
 * why on error. */
struct shard_reader *shard_open(const char *dir, const struct data_spec *s, char *why, size_t why_size);
void shard_close(struct shard_reader *r);
uint64_t shard_samples(const struct shard_reader *r);

/* Read samples g0..g0+d->n (modulo the data set size) into d.  0, or
 * -EINVAL/-EIO with why naming the shard file and byte offset. */
int shard_read(struct shard_reader *r, uint64_t g0, struct batch_data *d, char *why, size_t why_size);

#endif
