/* SPDX-License-Identifier: MIT */
/* data.h — where samples come from: a seeded synthetic generator,
 * deterministic per global sample index (so N ranks with batch B see exactly
 * the samples one rank with batch N*B sees), or shard files on disk written
 * by `nodetune-harness --write-data DIR`.
 *
 * Shard file (DIR/shard-NNNNN.nts): a 64-byte header (struct shard_header),
 * the chunks (each a batch in the loader's format, batch.h, with its own
 * checksum), and at the end of the file an index {offset, length} per chunk.
 * DIR/manifest holds key=value lines, each key once: format, samples,
 * chunk_samples, chunks_per_shard, dense_width, sparse_width, rows, seed.
 *
 * Everything read from disk is untrusted: the manifest, each header field
 * and each index entry are checked against the file size and the limits
 * below before they size an allocation, a read or a copy.  The checks are
 * pure functions of a buffer (data_parse_manifest, shard_parse_header,
 * shard_parse_index, shard_decode_chunk), shared by the reader and the fuzz
 * targets in tests/fuzz/.  Their messages are one line naming the file and
 * where in it: "DIR/shard-00003.nts: offset 123456: chunk 7: length ...".
 */
#ifndef NODETUNE_HARNESS_DATA_H
#define NODETUNE_HARNESS_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "nt_err.h"

#include "batch.h"

struct data_spec {
	uint32_t dense_width;
	uint32_t sparse_width;     /* 26*4 for dlrm-small, 0 for mlp */
	uint32_t rows;             /* embedding rows the indices address */
	uint64_t seed;
};

/* Fill d (n samples, buffers of d already allocated) with samples g0.. */
void data_synth_batch(const struct data_spec *s, uint64_t g0, struct batch_data *d);

/* Write `samples` synthetic samples into dir as shards.  0 or -errno with
 * err. */
int data_write_shards(const char *dir, const struct data_spec *s, uint64_t samples,
		      uint32_t chunk_samples, uint32_t chunks_per_shard, int zstd_level,
		      struct nt_err *err);

/* ---- the format and its limits ------------------------------------------ */

#define SHARD_MAGIC "NTS1"
#define SHARD_VERSION 1
#define DATA_FORMAT "nodetune-shards-1"          /* the manifest's format= */

#define DATA_MANIFEST_MAX        65536            /* bytes in a manifest */
#define DATA_LINE_MAX            256              /* bytes in one of its lines */
#define DATA_MAX_SAMPLES         (1ull << 40)
#define DATA_MAX_CHUNK_SAMPLES   (1u << 20)
#define DATA_MAX_CHUNKS_PER_SHARD (1u << 20)
#define DATA_MAX_WIDTH           (1u << 16)
#define DATA_MAX_CHUNK_PAYLOAD   (256u << 20)     /* a decoded chunk's bytes */

struct shard_header {              /* at offset 0, 64 bytes */
	char magic[4];
	uint32_t version;
	uint32_t n_chunks;
	uint32_t chunk_samples;
	uint64_t first_sample;
	uint64_t index_offset;     /* n_chunks entries, ending the file */
	uint8_t reserved[32];
};

struct shard_index {
	uint64_t offset, len;
};

struct data_manifest {
	uint64_t samples;
	uint32_t chunk_samples, chunks_per_shard;
	uint32_t dense_width, sparse_width, rows;
	uint64_t seed;
};

/* What the manifest says shard number `shard` holds. */
struct shard_layout {
	uint64_t shard;
	uint32_t n_chunks;
	uint32_t chunk_samples;
	uint64_t first_chunk;       /* the data set's chunk number of its chunk 0 */
	uint64_t first_sample;
	uint64_t max_chunk_len;     /* the most bytes an encoded chunk can take */
};

/* Parse a manifest (buf, len bytes, no NUL needed) into *ret.  Every key
 * must appear once; unknown keys, non-numbers, values outside the limits
 * above, lines of DATA_LINE_MAX bytes or more and NUL bytes are refused, and
 * so are chunks whose decoded size would pass DATA_MAX_CHUNK_PAYLOAD.
 * Returns 0, or -EINVAL with err ("NAME: line 3: duplicate key 'rows'");
 * *ret is unchanged on error. */
int data_parse_manifest(const char *buf, size_t len, const char *name, struct data_manifest *ret,
			struct nt_err *err);

/* The layout of shard number `shard` of the data set m (a parsed manifest).
 * 0, or -ERANGE when the data set has no such shard (*ret unchanged). */
int data_shard_layout(const struct data_manifest *m, uint64_t shard, struct shard_layout *ret);

/* Check a shard's header: buf holds the file's first len bytes (64 or, for
 * a shorter file, all of it), file_size is the file's size.  The header must
 * match want (chunk count, chunk size, first sample) and place the index
 * after the header and exactly at the end of the file.  Returns 0 with *ret
 * filled, or -EINVAL with err naming name and the field's offset (*ret
 * unchanged). */
int shard_parse_header(const void *buf, size_t len, uint64_t file_size, const char *name,
		       const struct shard_layout *want, struct shard_header *ret, struct nt_err *err);

/* Check a shard's chunk index: buf holds the len bytes read at
 * h->index_offset (h from shard_parse_header).  Every chunk must lie between
 * the header and the index, after the chunk before it, with a length from a
 * batch header's size to want->max_chunk_len; offset + length is computed
 * with an overflow check.  Returns 0 with ret[0..h->n_chunks) filled, or
 * -EINVAL with err naming name, the chunk and its offset (ret unchanged). */
int shard_parse_index(const void *buf, size_t len, const struct shard_header *h, uint64_t file_size,
		      const struct shard_layout *want, const char *name, struct shard_index *ret,
		      struct nt_err *err);

/* Decode chunk c of a shard (raw: the ix->len bytes at ix->offset) into out
 * (out_size bytes, 64-byte aligned) and check it against the data set: its
 * batch id, sample count, widths, and every sparse index below m->rows.
 * Returns 0 with *ret pointing into out, or -EINVAL with err naming name,
 * the chunk's offset and the chunk (*ret unchanged). */
int shard_decode_chunk(const void *raw, const struct shard_index *ix, uint32_t c, const struct data_manifest *m,
		       const struct shard_layout *l, const char *name, void *out, size_t out_size,
		       struct batch_data *ret, struct nt_err *err);

/* ---- reading a data set -------------------------------------------------- */

struct shard_reader;

/* Open dir for reading samples of spec s (widths must match).  NULL with
 * err on error: the manifest missing, unreadable, corrupt, or for another
 * model. */
struct shard_reader *shard_open(const char *dir, const struct data_spec *s, struct nt_err *err);
void shard_close(struct shard_reader *r);
uint64_t shard_samples(const struct shard_reader *r);

/* Read samples g0..g0+d->n (modulo the data set size) into d.  0, or
 * -EINVAL (corrupt or truncated data) / -EIO (a read failed) / -ENOMEM, with
 * err naming the shard file and byte offset. */
int shard_read(struct shard_reader *r, uint64_t g0, struct batch_data *d, struct nt_err *err);

#endif
