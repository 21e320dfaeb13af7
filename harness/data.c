/* data.c — see data.h. */
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARD_MAGIC "NTS1"

struct shard_header {
	char magic[4];
	uint32_t version;
	uint32_t n_chunks;
	uint32_t chunk_samples;
	uint64_t first_sample;
	uint64_t index_offset;
	uint8_t reserved[32];
};

struct shard_index {
	uint64_t offset, len;
};

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

void data_synth(const struct data_spec *s, uint64_t g, float *dense, int32_t *sparse, float *label)
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

int data_write_shards(const char *dir, const struct data_spec *s, uint64_t samples,
		      uint32_t chunk_samples, uint32_t chunks_per_shard, int zstd_level,
		      char *why, size_t why_size)
{
	uint64_t n_chunks = (samples + chunk_samples - 1) / chunk_samples;
	struct batch_data d = { .dense_width = s->dense_width, .sparse_width = s->sparse_width };
	struct shard_index *idx = calloc(chunks_per_shard, sizeof(*idx));
	char path[4096];
	FILE *mf;
	int r = 0;

	d.dense = malloc((size_t)chunk_samples * s->dense_width * 4 + 4);
	d.sparse = malloc((size_t)chunk_samples * s->sparse_width * 4 + 4);
	d.label = malloc((size_t)chunk_samples * 4);
	if (!idx || !d.dense || !d.sparse || !d.label) {
		r = -ENOMEM;
		snprintf(why, why_size, "out of memory");
		goto out;
	}
	if (!s->sparse_width) {
		free(d.sparse);
		d.sparse = NULL;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(why, why_size, "%s: %s", dir, strerror(-r));
		goto out;
	}
	for (uint64_t c0 = 0, shard = 0; c0 < n_chunks && !r; c0 += chunks_per_shard, shard++) {
		uint32_t nc = (uint32_t)(n_chunks - c0 < chunks_per_shard ? n_chunks - c0 : chunks_per_shard);
		struct shard_header h = { .version = 1, .n_chunks = nc, .chunk_samples = chunk_samples,
					  .first_sample = c0 * chunk_samples };
		off_t off = sizeof(h);
		int fd;

		memcpy(h.magic, SHARD_MAGIC, 4);
		snprintf(path, sizeof(path), "%s/shard-%05llu.nts", dir, (unsigned long long)shard);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			r = -errno;
			snprintf(why, why_size, "%s: %s", path, strerror(-r));
			break;
		}
		for (uint32_t c = 0; c < nc && !r; c++) {
			uint64_t g0 = (c0 + c) * chunk_samples;
			void *buf;
			size_t len;

			d.n = (uint32_t)(samples - g0 < chunk_samples ? samples - g0 : chunk_samples);
			data_synth_batch(s, g0, &d);
			r = batch_encode(&d, c0 + c, zstd_level, &buf, &len);
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
			snprintf(why, why_size, "%s: %s", path, strerror(-r));
	}
	if (!r) {
		snprintf(path, sizeof(path), "%s/manifest", dir);
		mf = fopen(path, "w");
		if (!mf) {
			r = -errno;
			snprintf(why, why_size, "%s: %s", path, strerror(-r));
			goto out;
		}
		fprintf(mf, "format=nodetune-shards-1\nsamples=%llu\nchunk_samples=%u\nchunks_per_shard=%u\n"
			    "dense_width=%u\nsparse_width=%u\nrows=%u\nseed=%llu\n",
			(unsigned long long)samples, chunk_samples, chunks_per_shard, s->dense_width,
			s->sparse_width, s->rows, (unsigned long long)s->seed);
		if (fclose(mf) != 0) {
			r = -EIO;
			snprintf(why, why_size, "%s: write failed", path);
		}
	}
out:
	free(idx);
	free(d.dense);
	free(d.sparse);
	free(d.label);
	return r;
}

/* ---- reading shards ---------------------------------------------------- */

struct shard_reader {
	char dir[4096];
	uint64_t samples;
	uint32_t chunk_samples, chunks_per_shard;
	struct data_spec spec;
	int fd;                     /* the open shard */
	long long shard;            /* its number, -1 none */
	struct shard_index *index;  /* its chunk index */
	uint32_t n_chunks;
	long long chunk;            /* the decoded chunk, -1 none */
	uint64_t chunk_first;
	void *raw;                  /* encoded chunk */
	size_t raw_cap;
	void *payload;              /* decoded chunk */
	size_t payload_cap;
	struct batch_data cd;
};

struct shard_reader *shard_open(const char *dir, const struct data_spec *s, char *why, size_t why_size)
{
	struct shard_reader *r = calloc(1, sizeof(*r));
	char path[4200], line[256];
	unsigned long long v[7] = { 0 };
	int have = 0;
	FILE *f;

	if (!r) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	r->fd = -1;
	r->shard = r->chunk = -1;
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	snprintf(path, sizeof(path), "%s/manifest", dir);
	f = fopen(path, "r");
	if (!f) {
		snprintf(why, why_size, "%s: %s (write a data set with --write-data)", path, strerror(errno));
		free(r);
		return NULL;
	}
	static const char *const keys[] = { "samples", "chunk_samples", "chunks_per_shard", "dense_width",
					    "sparse_width", "rows", "seed" };
	while (fgets(line, sizeof(line), f)) {
		for (int k = 0; k < 7; k++) {
			size_t kl = strlen(keys[k]);

			if (!strncmp(line, keys[k], kl) && line[kl] == '=' && sscanf(line + kl + 1, "%llu", &v[k]) == 1)
				have |= 1 << k;
		}
	}
	fclose(f);
	if (have != 0x7f || !v[0] || !v[1] || !v[2]) {
		snprintf(why, why_size, "%s: incomplete or corrupt manifest", path);
		free(r);
		return NULL;
	}
	if (v[3] != s->dense_width || v[4] != s->sparse_width || (s->sparse_width && v[5] > s->rows)) {
		snprintf(why, why_size, "%s: data set of dense width %llu, sparse width %llu, %llu rows does not fit this model (%u, %u, %u)",
			 path, v[3], v[4], v[5], s->dense_width, s->sparse_width, s->rows);
		free(r);
		return NULL;
	}
	r->samples = v[0];
	r->chunk_samples = (uint32_t)v[1];
	r->chunks_per_shard = (uint32_t)v[2];
	r->spec = *s;
	r->payload_cap = batch_payload_size(r->chunk_samples, s->dense_width, s->sparse_width);
	if (posix_memalign(&r->payload, 64, r->payload_cap)) {
		snprintf(why, why_size, "out of memory");
		free(r);
		return NULL;
	}
	return r;
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
	return r->samples;
}

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

static int open_shard(struct shard_reader *r, long long shard, char *why, size_t why_size)
{
	struct shard_header h;
	char path[4200];
	size_t got;
	int e;

	snprintf(path, sizeof(path), "%s/shard-%05lld.nts", r->dir, shard);
	if (r->fd >= 0)
		close(r->fd);
	free(r->index);
	r->index = NULL;
	r->shard = -1;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		snprintf(why, why_size, "shard %s: %s", path, strerror(errno));
		return -EIO;
	}
	e = read_exact(r->fd, &h, sizeof(h), 0, &got);
	if (e || memcmp(h.magic, SHARD_MAGIC, 4) || h.version != 1 || h.chunk_samples != r->chunk_samples ||
	    h.n_chunks == 0 || h.n_chunks > r->chunks_per_shard) {
		snprintf(why, why_size, "shard %s: offset 0: %s", path, e ? "truncated header" : "bad shard header");
		return -EINVAL;
	}
	r->index = calloc(h.n_chunks, sizeof(*r->index));
	if (!r->index)
		return -ENOMEM;
	e = read_exact(r->fd, r->index, h.n_chunks * sizeof(*r->index), (off_t)h.index_offset, &got);
	if (e) {
		snprintf(why, why_size, "shard %s: offset %llu: truncated chunk index (%zu of %zu bytes)",
			 path, (unsigned long long)h.index_offset + got, got, h.n_chunks * sizeof(*r->index));
		return -EINVAL;
	}
	r->n_chunks = h.n_chunks;
	r->shard = shard;
	return 0;
}

static int load_chunk(struct shard_reader *r, long long chunk, char *why, size_t why_size)
{
	long long shard = chunk / r->chunks_per_shard;
	uint32_t c = (uint32_t)(chunk % r->chunks_per_shard);
	char path[4200], reason[160];
	struct shard_index ix;
	size_t got;
	int e;

	if (r->shard != shard && (e = open_shard(r, shard, why, why_size)) < 0)
		return e;
	snprintf(path, sizeof(path), "%s/shard-%05lld.nts", r->dir, shard);
	if (c >= r->n_chunks) {
		snprintf(why, why_size, "shard %s: has %u chunks, chunk %u needed", path, r->n_chunks, c);
		return -EINVAL;
	}
	ix = r->index[c];
	if (ix.len > r->raw_cap) {
		void *p = realloc(r->raw, ix.len);

		if (!p)
			return -ENOMEM;
		r->raw = p;
		r->raw_cap = ix.len;
	}
	e = read_exact(r->fd, r->raw, ix.len, (off_t)ix.offset, &got);
	if (e) {
		snprintf(why, why_size, "shard %s: offset %llu: truncated (chunk %u wants %llu bytes, %zu there)",
			 path, (unsigned long long)(ix.offset + got), c, (unsigned long long)ix.len, got);
		return -EINVAL;
	}
	e = batch_decode(r->raw, ix.len, r->payload, r->payload_cap, &r->cd, NULL, reason, sizeof(reason));
	if (e) {
		snprintf(why, why_size, "shard %s: offset %llu: chunk %u: %s", path,
			 (unsigned long long)ix.offset, c, reason);
		return -EINVAL;
	}
	r->chunk = chunk;
	r->chunk_first = (uint64_t)chunk * r->chunk_samples;
	return 0;
}

int shard_read(struct shard_reader *r, uint64_t g0, struct batch_data *d, char *why, size_t why_size)
{
	const uint32_t dw = r->spec.dense_width, sw = r->spec.sparse_width;

	for (uint32_t i = 0; i < d->n; i++) {
		uint64_t g = (g0 + i) % r->samples;
		long long chunk = (long long)(g / r->chunk_samples);
		uint64_t k;
		int e;

		if (chunk != r->chunk && (e = load_chunk(r, chunk, why, why_size)) < 0)
			return e;
		k = g - r->chunk_first;
		if (k >= r->cd.n) {
			snprintf(why, why_size, "shard data: sample %llu missing from its chunk", (unsigned long long)g);
			return -EINVAL;
		}
		memcpy(d->dense + (size_t)i * dw, r->cd.dense + k * dw, dw * 4);
		if (sw)
			memcpy(d->sparse + (size_t)i * sw, r->cd.sparse + k * sw, sw * 4);
		d->label[i] = r->cd.label[k];
		if (sw)
			for (uint32_t j = 0; j < sw; j++)
				if (d->sparse[(size_t)i * sw + j] < 0 || (uint32_t)d->sparse[(size_t)i * sw + j] >= r->spec.rows) {
					snprintf(why, why_size, "shard data: sample %llu has index %d out of range",
						 (unsigned long long)g, d->sparse[(size_t)i * sw + j]);
					return -EINVAL;
				}
	}
	return 0;
}
