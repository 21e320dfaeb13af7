/* SPDX-License-Identifier: MIT */
/* data.c — see data.h.
 *
 *   the generator      data_synth, data_synth_batch
 *   writing shards     data_write_shards
 *   the manifest       data_parse_manifest (a table of keys and limits)
 *   a shard's checks   data_shard_layout, shard_parse_header,
 *                      shard_parse_index, shard_decode_chunk
 *   reading shards     shard_open, load_chunk, shard_read
 */
#include "data.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(struct shard_header) == 64, "the shard header is 64 bytes");
_Static_assert(sizeof(struct shard_index) == 16, "an index entry is 16 bytes");

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double unit(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return (double)(mix(*s) >> 11) / 9007199254740992.0;
}

/* Fill sample g (dense[dense_width], sparse[sparse_width], *label). */
static void data_synth(const struct data_spec *s, uint64_t g, float *dense, int32_t *sparse, float *label)
{
	uint64_t st = mix(s->seed * 0x2545f4914f6cdd1dull ^ (g + 1) * 0x9e3779b97f4a7c15ull);
	double z;

	for (uint32_t k = 0; k < s->dense_width; k++)
		dense[k] = s->sparse_width ? (float)(log1p(unit(&st) * 100.0) / log(101.0))
					   : (float)(unit(&st) * 2.0 - 1.0);
	for (uint32_t k = 0; k < s->sparse_width; k++) {
		double u = unit(&st);

		sparse[k] = (int32_t)(u * u * s->rows) % (int32_t)s->rows; /* popular rows first */
	}
	/* a label the model can learn: a noisy function of the features */
	if (s->sparse_width)
		z = 3.0 * (dense[0] - dense[1]) + 0.5 * ((sparse[0] % 7) - 3);
	else {
		z = 0;
		for (uint32_t k = 0; k < s->dense_width && k < 8; k++)
			z += 2.0 * dense[k];
	}
	*label = unit(&st) < 1.0 / (1.0 + exp(-z)) ? 1.0f : 0.0f;
}

void data_synth_batch(const struct data_spec *s, uint64_t g0, struct batch_data *d)
{
	for (uint32_t i = 0; i < d->n; i++)
		data_synth(s, g0 + i, d->dense + (size_t)i * s->dense_width,
			   d->sparse ? d->sparse + (size_t)i * s->sparse_width : NULL, d->label + i);
}

/* ---- writing shards ---------------------------------------------------- */

static int write_all(int fd, const void *p, size_t n, off_t off)
{
	const char *c = p;

	while (n) {
		ssize_t w = pwrite(fd, c, n, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		off += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Shard number `shard` of the data set: chunks c0 .. c0 + nc - 1, made in d
 * (buffers for chunk_samples samples), their index built in idx. */
static int write_shard(const char *dir, const struct data_spec *s, uint64_t shard, uint64_t c0, uint32_t nc,
		       uint64_t samples, uint32_t chunk_samples, int zstd_level, struct batch_data *d,
		       struct shard_index *idx, struct nt_err *err)
{
	struct shard_header h = { .version = SHARD_VERSION, .n_chunks = nc, .chunk_samples = chunk_samples,
				  .first_sample = c0 * chunk_samples };
	off_t off = sizeof(h);
	char path[4096];
	int fd, r = 0;

	memcpy(h.magic, SHARD_MAGIC, 4);
	snprintf(path, sizeof(path), "%s/shard-%05llu.nts", dir, (unsigned long long)shard);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = -errno;
		return err_set(err, r, "%s: %s", path, strerror(-r));
	}
	for (uint32_t c = 0; c < nc && !r; c++) {
		uint64_t g0 = (c0 + c) * chunk_samples;
		void *buf;
		size_t len;

		d->n = (uint32_t)(samples - g0 < chunk_samples ? samples - g0 : chunk_samples);
		data_synth_batch(s, g0, d);
		r = batch_encode(d, c0 + c, zstd_level, &buf, &len);
		if (r == 0) {
			r = write_all(fd, buf, len, off);
			idx[c] = (struct shard_index){ (uint64_t)off, len };
			off += (off_t)len;
			free(buf);
		}
	}
	h.index_offset = (uint64_t)off;
	if (!r)
		r = write_all(fd, idx, nc * sizeof(*idx), off);
	if (!r)
		r = write_all(fd, &h, sizeof(h), 0);
	if (!r && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r)
		err_set(err, r, "%s: %s", path, strerror(-r));
	return r;
}

static int write_manifest(const char *dir, const struct data_spec *s, uint64_t samples, uint32_t chunk_samples,
			  uint32_t chunks_per_shard, struct nt_err *err)
{
	char path[4096];
	FILE *mf;
	int r;

	snprintf(path, sizeof(path), "%s/manifest", dir);
	mf = fopen(path, "w");
	if (!mf) {
		r = -errno;
		return err_set(err, r, "%s: %s", path, strerror(-r));
	}
	fprintf(mf, "format=" DATA_FORMAT "\nsamples=%llu\nchunk_samples=%u\nchunks_per_shard=%u\n"
		    "dense_width=%u\nsparse_width=%u\nrows=%u\nseed=%llu\n",
		(unsigned long long)samples, chunk_samples, chunks_per_shard, s->dense_width,
		s->sparse_width, s->rows, (unsigned long long)s->seed);
	if (fclose(mf) != 0)
		return err_set(err, -EIO, "%s: write failed", path);
	return 0;
}

int data_write_shards(const char *dir, const struct data_spec *s, uint64_t samples,
		      uint32_t chunk_samples, uint32_t chunks_per_shard, int zstd_level,
		      struct nt_err *err)
{
	uint64_t n_chunks;
	struct batch_data d = { .dense_width = s->dense_width, .sparse_width = s->sparse_width };
	struct shard_index *idx;
	int r = 0;

	/* write only what the reader accepts */
	if (!samples || samples > DATA_MAX_SAMPLES || !chunk_samples || chunk_samples > DATA_MAX_CHUNK_SAMPLES ||
	    !chunks_per_shard || chunks_per_shard > DATA_MAX_CHUNKS_PER_SHARD || s->dense_width > DATA_MAX_WIDTH ||
	    s->sparse_width > DATA_MAX_WIDTH || s->rows > INT32_MAX || (s->sparse_width && !s->rows) ||
	    batch_payload_size(chunk_samples, s->dense_width, s->sparse_width) > DATA_MAX_CHUNK_PAYLOAD) {
		return err_set(err, -EINVAL, "%llu samples in chunks of %u, %u a shard, of widths %u and %u: outside the format's limits",
			 (unsigned long long)samples, chunk_samples, chunks_per_shard, s->dense_width, s->sparse_width);
	}
	n_chunks = (samples + chunk_samples - 1) / chunk_samples;
	idx = calloc(chunks_per_shard, sizeof(*idx));
	d.dense = malloc((size_t)chunk_samples * s->dense_width * 4 + 4);
	d.sparse = malloc((size_t)chunk_samples * s->sparse_width * 4 + 4);
	d.label = malloc((size_t)chunk_samples * 4);
	if (!idx || !d.dense || !d.sparse || !d.label) {
		r = err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (!s->sparse_width) {
		free(d.sparse);
		d.sparse = NULL;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		err_set(err, r, "%s: %s", dir, strerror(-r));
		goto out;
	}
	for (uint64_t c0 = 0, shard = 0; c0 < n_chunks && !r; c0 += chunks_per_shard, shard++)
		r = write_shard(dir, s, shard, c0,
				(uint32_t)(n_chunks - c0 < chunks_per_shard ? n_chunks - c0 : chunks_per_shard), samples,
				chunk_samples, zstd_level, &d, idx, err);
	if (!r)
		r = write_manifest(dir, s, samples, chunk_samples, chunks_per_shard, err);
out:
	free(idx);
	free(d.dense);
	free(d.sparse);
	free(d.label);
	return r;
}

/* ---- the manifest ------------------------------------------------------ */

enum manifest_key {
	MK_FORMAT, MK_SAMPLES, MK_CHUNK_SAMPLES, MK_CHUNKS_PER_SHARD, MK_DENSE_WIDTH, MK_SPARSE_WIDTH,
	MK_ROWS, MK_SEED, MK_COUNT
};

static const struct manifest_row {
	const char *key;
	uint64_t min, max;          /* numbers; format= is a string */
} manifest_rows[MK_COUNT] = {
	[MK_FORMAT]           = { "format", 0, 0 },
	[MK_SAMPLES]          = { "samples", 1, DATA_MAX_SAMPLES },
	[MK_CHUNK_SAMPLES]    = { "chunk_samples", 1, DATA_MAX_CHUNK_SAMPLES },
	[MK_CHUNKS_PER_SHARD] = { "chunks_per_shard", 1, DATA_MAX_CHUNKS_PER_SHARD },
	[MK_DENSE_WIDTH]      = { "dense_width", 0, DATA_MAX_WIDTH },
	[MK_SPARSE_WIDTH]     = { "sparse_width", 0, DATA_MAX_WIDTH },
	[MK_ROWS]             = { "rows", 0, INT32_MAX },  /* sparse indices are int32 */
	[MK_SEED]             = { "seed", 0, UINT64_MAX },
};

/* s as printable text for a message: at most 40 bytes, others as '?' */
static const char *printable(char *buf, size_t size, const char *s)
{
	size_t i = 0;

	for (; s[i] && i < 40 && i + 1 < size; i++)
		buf[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* A whole decimal number: digits only (no sign, space or base prefix). */
static int parse_u64(const char *s, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* One line (NUL-terminated, no newline) into v[]/have; 0 or -EINVAL with
 * err (prefixed by the caller). */
static int manifest_line(char *l, uint64_t v[MK_COUNT], unsigned *have, struct nt_err *err)
{
	char *eq = strchr(l, '='), shown[48];
	const struct manifest_row *row = NULL;
	int k;

	if (!eq) {
		return err_set(err, -EINVAL, "expected key=value, got '%s'", printable(shown, sizeof(shown), l));
	}
	*eq = '\0';
	for (k = 0; k < MK_COUNT && !row; k++)
		if (!strcmp(l, manifest_rows[k].key))
			row = &manifest_rows[k];
	if (!row) {
		return err_set(err, -EINVAL, "unknown key '%s'", printable(shown, sizeof(shown), l));
	}
	k = (int)(row - manifest_rows);
	if (*have & 1u << k) {
		return err_set(err, -EINVAL, "duplicate key '%s'", row->key);
	}
	*have |= 1u << k;
	if (k == MK_FORMAT) {
		if (strcmp(eq + 1, DATA_FORMAT)) {
			return err_set(err, -EINVAL, "format '%s', expected " DATA_FORMAT,
				 printable(shown, sizeof(shown), eq + 1));
		}
		return 0;
	}
	if (parse_u64(eq + 1, &v[k])) {
		return err_set(err, -EINVAL, "%s '%s': expected a whole number", row->key,
			 printable(shown, sizeof(shown), eq + 1));
	}
	if (v[k] < row->min || v[k] > row->max) {
		return err_set(err, -EINVAL, "%s %llu: expected %llu..%llu", row->key, (unsigned long long)v[k],
			 (unsigned long long)row->min, (unsigned long long)row->max);
	}
	return 0;
}

int data_parse_manifest(const char *buf, size_t len, const char *name, struct data_manifest *ret,
			struct nt_err *err)
{
	uint64_t v[MK_COUNT] = { 0 };
	unsigned have = 0, line = 0;
	char l[DATA_LINE_MAX];
	struct nt_err le;
	struct data_manifest m;
	size_t pos = 0, payload;

	if (len > DATA_MANIFEST_MAX) {
		return err_set(err, -EINVAL, "%s: %zu bytes, more than a manifest's %d", name, len, DATA_MANIFEST_MAX);
	}
	while (pos < len) {
		const char *s = buf + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;

		line++;
		pos += n + (nl != NULL);
		if (n >= sizeof(l)) {
			return err_set(err, -EINVAL, "%s: line %u: longer than %d bytes", name, line, DATA_LINE_MAX - 1);
		}
		if (memchr(s, '\0', n)) {
			return err_set(err, -EINVAL, "%s: line %u: a NUL byte", name, line);
		}
		if (n == 0)
			continue;                       /* a blank line */
		memcpy(l, s, n);
		l[n] = '\0';
		if (manifest_line(l, v, &have, &le))
			return err_set(err, -EINVAL, "%s: line %u: %s", name, line, le.msg);
	}
	for (int k = 0; k < MK_COUNT; k++) {
		if (!(have & 1u << k)) {
			return err_set(err, -EINVAL, "%s: missing key '%s'", name, manifest_rows[k].key);
		}
	}
	m = (struct data_manifest){
		.samples = v[MK_SAMPLES], .chunk_samples = (uint32_t)v[MK_CHUNK_SAMPLES],
		.chunks_per_shard = (uint32_t)v[MK_CHUNKS_PER_SHARD], .dense_width = (uint32_t)v[MK_DENSE_WIDTH],
		.sparse_width = (uint32_t)v[MK_SPARSE_WIDTH], .rows = (uint32_t)v[MK_ROWS], .seed = v[MK_SEED],
	};
	if (m.sparse_width && !m.rows) {
		return err_set(err, -EINVAL, "%s: sparse_width %u with rows 0: no index can be valid", name,
			 m.sparse_width);
	}
	payload = batch_payload_size(m.chunk_samples, m.dense_width, m.sparse_width);
	if (payload > DATA_MAX_CHUNK_PAYLOAD) {
		return err_set(err, -EINVAL, "%s: chunks of %u samples of widths %u and %u take %zu bytes, more than %u",
			 name, m.chunk_samples, m.dense_width, m.sparse_width, payload, DATA_MAX_CHUNK_PAYLOAD);
	}
	*ret = m;
	return 0;
}

/* ---- a shard's checks -------------------------------------------------- */

static uint64_t data_chunks(const struct data_manifest *m)
{
	return (m->samples + m->chunk_samples - 1) / m->chunk_samples;  /* samples <= 2^40 */
}

int data_shard_layout(const struct data_manifest *m, uint64_t shard, struct shard_layout *ret)
{
	uint64_t chunks = data_chunks(m), shards = (chunks + m->chunks_per_shard - 1) / m->chunks_per_shard;
	uint64_t first;

	if (shard >= shards)
		return -ERANGE;
	first = shard * m->chunks_per_shard;
	*ret = (struct shard_layout){
		.shard = shard,
		.n_chunks = (uint32_t)(chunks - first < m->chunks_per_shard ? chunks - first : m->chunks_per_shard),
		.chunk_samples = m->chunk_samples,
		.first_chunk = first,
		.first_sample = first * m->chunk_samples,
		.max_chunk_len = batch_encoded_max(m->chunk_samples, m->dense_width, m->sparse_width),
	};
	return 0;
}

int shard_parse_header(const void *buf, size_t len, uint64_t file_size, const char *name,
		       const struct shard_layout *want, struct shard_header *ret, struct nt_err *err)
{
	struct shard_header h;
	uint64_t index_len, end;

	if (len < sizeof(h) || file_size < sizeof(h)) {
		return err_set(err, -EINVAL, "%s: offset 0: truncated header (the file holds %llu bytes, a header %zu)",
			 name, (unsigned long long)file_size, sizeof(h));
	}
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, SHARD_MAGIC, 4)) {
		return err_set(err, -EINVAL, "%s: offset 0: not a shard (bad magic)", name);
	}
	if (h.version != SHARD_VERSION) {
		return err_set(err, -EINVAL, "%s: offset %zu: unsupported shard version %u", name,
			 offsetof(struct shard_header, version), h.version);
	}
	if (h.n_chunks != want->n_chunks) {
		return err_set(err, -EINVAL, "%s: offset %zu: %u chunks, the manifest implies %u", name,
			 offsetof(struct shard_header, n_chunks), h.n_chunks, want->n_chunks);
	}
	if (h.chunk_samples != want->chunk_samples) {
		return err_set(err, -EINVAL, "%s: offset %zu: chunks of %u samples, the manifest says %u", name,
			 offsetof(struct shard_header, chunk_samples), h.chunk_samples, want->chunk_samples);
	}
	if (h.first_sample != want->first_sample) {
		return err_set(err, -EINVAL, "%s: offset %zu: first sample %llu, the manifest implies %llu", name,
			 offsetof(struct shard_header, first_sample), (unsigned long long)h.first_sample,
			 (unsigned long long)want->first_sample);
	}
	if (h.index_offset < sizeof(h)) {
		return err_set(err, -EINVAL, "%s: offset %zu: the chunk index at offset %llu overlaps the header", name,
			 offsetof(struct shard_header, index_offset), (unsigned long long)h.index_offset);
	}
	index_len = (uint64_t)h.n_chunks * sizeof(struct shard_index);
	if (__builtin_add_overflow(h.index_offset, index_len, &end) || end > file_size) {
		return err_set(err, -EINVAL, "%s: offset %zu: truncated: the chunk index (%u entries at offset %llu) runs past the end of the file (size %llu)",
			 name, offsetof(struct shard_header, index_offset), h.n_chunks,
			 (unsigned long long)h.index_offset, (unsigned long long)file_size);
	}
	if (end < file_size) {
		return err_set(err, -EINVAL, "%s: offset %llu: %llu bytes after the chunk index", name,
			 (unsigned long long)end, (unsigned long long)(file_size - end));
	}
	*ret = h;
	return 0;
}

int shard_parse_index(const void *buf, size_t len, const struct shard_header *h, uint64_t file_size,
		      const struct shard_layout *want, const char *name, struct shard_index *ret,
		      struct nt_err *err)
{
	const size_t want_len = (size_t)h->n_chunks * sizeof(struct shard_index);
	const unsigned char *b = buf;
	uint64_t prev_end = sizeof(struct shard_header);

	if (len != want_len) {
		return err_set(err, -EINVAL, "%s: offset %llu: truncated chunk index (%zu of %zu bytes)", name,
			 (unsigned long long)h->index_offset + len, len, want_len);
	}
	for (uint32_t c = 0; c < h->n_chunks; c++) {
		struct shard_index ix;
		uint64_t end;

		memcpy(&ix, b + (size_t)c * sizeof(ix), sizeof(ix));
		if (ix.offset >= file_size) {
			return err_set(err, -EINVAL, "%s: offset %llu: chunk %u: starts past the end of the file (size %llu)",
				 name, (unsigned long long)ix.offset, c, (unsigned long long)file_size);
		}
		if (__builtin_add_overflow(ix.offset, ix.len, &end)) {
			return err_set(err, -EINVAL, "%s: offset %llu: chunk %u: length %llu overflows the offset", name,
				 (unsigned long long)ix.offset, c, (unsigned long long)ix.len);
		}
		if (end > file_size) {
			return err_set(err, -EINVAL, "%s: offset %llu: chunk %u: length %llu runs past the end of the file (size %llu)",
				 name, (unsigned long long)ix.offset, c, (unsigned long long)ix.len,
				 (unsigned long long)file_size);
		}
		if (ix.offset < prev_end) {
			return err_set(err, -EINVAL, "%s: offset %llu: chunk %u: overlaps the %s", name,
				 (unsigned long long)ix.offset, c, c ? "chunk before it" : "shard header");
		}
		if (end > h->index_offset) {
			return err_set(err, -EINVAL, "%s: offset %llu: chunk %u: length %llu runs into the chunk index at offset %llu",
				 name, (unsigned long long)ix.offset, c, (unsigned long long)ix.len,
				 (unsigned long long)h->index_offset);
		}
		if (ix.len < sizeof(struct batch_header) || ix.len > want->max_chunk_len) {
			return err_set(err, -EINVAL, "%s: offset %llu: chunk %u: length %llu, outside %zu..%llu for chunks of %u samples",
				 name, (unsigned long long)ix.offset, c, (unsigned long long)ix.len,
				 sizeof(struct batch_header), (unsigned long long)want->max_chunk_len, want->chunk_samples);
		}
		prev_end = end;
	}
	memcpy(ret, buf, want_len);
	return 0;
}

int shard_decode_chunk(const void *raw, const struct shard_index *ix, uint32_t c, const struct data_manifest *m,
		       const struct shard_layout *l, const char *name, void *out, size_t out_size,
		       struct batch_data *ret, struct nt_err *err)
{
	const uint64_t chunk = l->first_chunk + c, first = chunk * m->chunk_samples;
	uint32_t n;
	struct batch_data d;
	char reason[200];
	struct nt_err be;
	uint64_t id;

	if (c >= l->n_chunks || first >= m->samples) {
		snprintf(reason, sizeof(reason), "no such chunk (the shard holds %u)", l->n_chunks);
		goto bad;
	}
	n = (uint32_t)(m->samples - first < m->chunk_samples ? m->samples - first : m->chunk_samples);
	if (batch_decode(raw, (size_t)ix->len, out, out_size, &d, &id, &be)) {
		snprintf(reason, sizeof(reason), "%.*s", (int)sizeof(reason) - 1, be.msg);
		goto bad;
	}
	if (id != chunk) {
		snprintf(reason, sizeof(reason), "batch id %llu, expected %llu", (unsigned long long)id,
			 (unsigned long long)chunk);
		goto bad;
	}
	if (d.n != n || d.dense_width != m->dense_width || d.sparse_width != m->sparse_width) {
		snprintf(reason, sizeof(reason), "%u samples of widths %u and %u, expected %u of %u and %u",
			 d.n, d.dense_width, d.sparse_width, n, m->dense_width, m->sparse_width);
		goto bad;
	}
	for (size_t i = 0; i < (size_t)n * d.sparse_width; i++) {
		if (d.sparse[i] < 0 || (uint32_t)d.sparse[i] >= m->rows) {
			snprintf(reason, sizeof(reason), "sample %llu has sparse index %d, outside 0..%u",
				 (unsigned long long)(first + i / d.sparse_width), d.sparse[i], m->rows - 1);
			goto bad;
		}
	}
	*ret = d;
	return 0;
bad:
	return err_set(err, -EINVAL, "%s: offset %llu: chunk %u: %s", name, (unsigned long long)ix->offset, c, reason);
}

/* ---- reading shards ---------------------------------------------------- */

struct shard_reader {
	char dir[4096];
	struct data_manifest m;
	struct data_spec spec;
	int fd;                     /* the open shard */
	char path[4200];            /* its name */
	struct shard_layout layout; /* its layout; shard valid only when fd >= 0 */
	struct shard_index *index;  /* its chunk index */
	long long chunk;            /* the decoded chunk (of the data set), -1 none */
	uint64_t chunk_first;
	void *raw;                  /* encoded chunk */
	size_t raw_cap;
	void *payload;              /* decoded chunk */
	size_t payload_cap;
	struct batch_data cd;
};

static int read_exact(int fd, void *p, size_t n, off_t off, size_t *got)
{
	char *c = p;

	*got = 0;
	while (*got < n) {
		ssize_t k = pread(fd, c + *got, n - *got, off + (off_t)*got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EINVAL; /* truncated */
		*got += (size_t)k;
	}
	return 0;
}

/* dir/manifest into *ret.  0 or -errno with err. */
static int read_manifest(const char *dir, struct data_manifest *ret, struct nt_err *err)
{
	char path[4200], *buf;
	struct stat st;
	size_t got;
	int fd, e;

	snprintf(path, sizeof(path), "%s/manifest", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		err_set(err, e, "%s: %s (write a data set with --write-data)", path, strerror(-e));
		return e;
	}
	if (fstat(fd, &st) < 0) {
		e = -errno;
		err_set(err, e, "%s: %s", path, strerror(-e));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > DATA_MANIFEST_MAX) {
		e = -EINVAL;
		err_set(err, -EINVAL, "%s: %s", path, S_ISREG(st.st_mode) ? "larger than any manifest" : "not a file");
		goto out_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		e = -ENOMEM;
		err_set(err, -ENOMEM, "%s: out of memory", path);
		goto out_close;
	}
	e = read_exact(fd, buf, (size_t)st.st_size, 0, &got);
	if (e == -EINVAL)
		err_set(err, -EINVAL, "%s: changed while read (%zu of %lld bytes)", path, got, (long long)st.st_size);
	else if (e)
		err_set(err, e, "%s: %s", path, strerror(-e));
	else
		e = data_parse_manifest(buf, got, path, ret, err);
	free(buf);
out_close:
	close(fd);
	return e;
}

struct shard_reader *shard_open(const char *dir, const struct data_spec *s, struct nt_err *err)
{
	struct shard_reader *r = calloc(1, sizeof(*r));
	struct data_manifest m;

	if (!r) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	r->fd = -1;
	r->chunk = -1;
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	if (read_manifest(dir, &m, err))
		goto out_free;
	if (m.dense_width != s->dense_width || m.sparse_width != s->sparse_width ||
	    (s->sparse_width && m.rows > s->rows)) {
		err_set(err, -EINVAL, "%s/manifest: data set of dense width %u, sparse width %u, %u rows does not fit this model (%u, %u, %u)",
			 dir, m.dense_width, m.sparse_width, m.rows, s->dense_width, s->sparse_width, s->rows);
		goto out_free;
	}
	r->m = m;
	r->spec = *s;
	/* the manifest's limits keep this under DATA_MAX_CHUNK_PAYLOAD */
	r->payload_cap = batch_payload_size(m.chunk_samples, s->dense_width, s->sparse_width);
	if (posix_memalign(&r->payload, 64, r->payload_cap)) {
		err_set(err, -ENOMEM, "out of memory for a chunk of %zu bytes", r->payload_cap);
		goto out_free;
	}
	return r;
out_free:
	free(r);
	return NULL;
}

void shard_close(struct shard_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->index);
	free(r->raw);
	free(r->payload);
	free(r);
}

uint64_t shard_samples(const struct shard_reader *r)
{
	return r->m.samples;
}

static void close_shard(struct shard_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->index);
	r->index = NULL;
}

/* Open shard number `shard`, check its header and read its index. */
static int open_shard(struct shard_reader *r, uint64_t shard, struct nt_err *err)
{
	unsigned char hb[sizeof(struct shard_header)];
	struct shard_header h;
	struct stat st;
	size_t got, ilen;
	int e;

	close_shard(r);
	snprintf(r->path, sizeof(r->path), "%s/shard-%05llu.nts", r->dir, (unsigned long long)shard);
	if (data_shard_layout(&r->m, shard, &r->layout)) {
		return err_set(err, -EINVAL, "%s: beyond the data set of %llu samples", r->path,
			 (unsigned long long)r->m.samples);
	}
	r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0 || fstat(r->fd, &st) < 0) {
		e = -errno;
		err_set(err, e == -ENOENT ? -EINVAL : -EIO, "%s: %s", r->path, strerror(-e));
		close_shard(r);
		return e == -ENOENT ? -EINVAL : -EIO;  /* a shard missing from the set */
	}
	e = read_exact(r->fd, hb, (uint64_t)st.st_size < sizeof(hb) ? (size_t)st.st_size : sizeof(hb), 0, &got);
	if (!e)
		e = shard_parse_header(hb, got, (uint64_t)st.st_size, r->path, &r->layout, &h, err);
	else
		err_set(err, e, "%s: offset %zu: %s", r->path, got, e == -EINVAL ? "truncated header" : strerror(-e));
	if (e)
		goto out_close;
	ilen = (size_t)h.n_chunks * sizeof(*r->index);   /* n_chunks <= DATA_MAX_CHUNKS_PER_SHARD */
	r->index = malloc(ilen);
	if (!r->index) {
		e = -ENOMEM;
		err_set(err, -ENOMEM, "%s: out of memory for an index of %u chunks", r->path, h.n_chunks);
		goto out_close;
	}
	/* the index's place was checked against the file size */
	e = read_exact(r->fd, r->index, ilen, (off_t)h.index_offset, &got);
	if (e && e != -EINVAL) {
		err_set(err, e, "%s: offset %llu: %s", r->path, (unsigned long long)h.index_offset + got,
			 strerror(-e));
		goto out_close;
	}
	e = shard_parse_index(r->index, got, &h, (uint64_t)st.st_size, &r->layout, r->path, r->index, err);
	if (e)
		goto out_close;
	return 0;
out_close:
	close_shard(r);
	return e == -EINVAL ? -EINVAL : -EIO;
}

static int load_chunk(struct shard_reader *r, uint64_t chunk, struct nt_err *err)
{
	const uint64_t shard = chunk / r->m.chunks_per_shard;
	const uint32_t c = (uint32_t)(chunk % r->m.chunks_per_shard);
	const struct shard_index *ix;
	size_t got;
	int e;

	if ((r->fd < 0 || r->layout.shard != shard) && (e = open_shard(r, shard, err)) < 0)
		return e;
	if (c >= r->layout.n_chunks) {   /* cannot happen: chunk < the data set's chunks */
		return err_set(err, -EINVAL, "%s: has %u chunks, chunk %u needed", r->path, r->layout.n_chunks, c);
	}
	ix = &r->index[c];
	/* ix->len <= layout.max_chunk_len, a bound of the manifest's limits */
	if (ix->len > r->raw_cap) {
		void *p = realloc(r->raw, (size_t)ix->len);

		if (!p) {
			return err_set(err, -ENOMEM, "%s: offset %llu: chunk %u: out of memory for %llu bytes", r->path,
				 (unsigned long long)ix->offset, c, (unsigned long long)ix->len);
		}
		r->raw = p;
		r->raw_cap = (size_t)ix->len;
	}
	e = read_exact(r->fd, r->raw, (size_t)ix->len, (off_t)ix->offset, &got);
	if (e) {
		err_set(err, e == -EINVAL ? -EINVAL : -EIO, "%s: offset %llu: chunk %u: %s (%zu of %llu bytes read)", r->path,
			 (unsigned long long)(ix->offset + got), c, e == -EINVAL ? "truncated" : strerror(-e), got,
			 (unsigned long long)ix->len);
		return e == -EINVAL ? -EINVAL : -EIO;
	}
	r->chunk = -1;
	e = shard_decode_chunk(r->raw, ix, c, &r->m, &r->layout, r->path, r->payload, r->payload_cap, &r->cd, err);
	if (e)
		return e;
	r->chunk = (long long)chunk;
	r->chunk_first = chunk * r->m.chunk_samples;
	return 0;
}

int shard_read(struct shard_reader *r, uint64_t g0, struct batch_data *d, struct nt_err *err)
{
	const uint32_t dw = r->spec.dense_width, sw = r->spec.sparse_width;

	for (uint32_t i = 0; i < d->n; i++) {
		uint64_t g = (g0 + i) % r->m.samples, chunk = g / r->m.chunk_samples, k;
		int e;

		if ((long long)chunk != r->chunk && (e = load_chunk(r, chunk, err)) < 0)
			return e;
		/* the chunk was checked to hold chunk_samples samples (fewer
		 * only at the end of the data set) of the spec's widths */
		k = g - r->chunk_first;
		memcpy(d->dense + (size_t)i * dw, r->cd.dense + k * dw, (size_t)dw * 4);
		if (sw)
			memcpy(d->sparse + (size_t)i * sw, r->cd.sparse + k * sw, (size_t)sw * 4);
		d->label[i] = r->cd.label[k];
	}
	return 0;
}
