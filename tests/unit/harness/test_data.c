/* SPDX-License-Identifier: MIT */
/* test_data.c — the synthetic generator and shard files; every corruption
 * of a manifest, a shard header or a chunk index is refused with a message
 * naming the file, the chunk and the offset, before anything is sized by it. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "data.h"
#include "test_util.h"

static struct data_spec spec = { 13, 104, 1000, 5 };

static struct batch_data alloc_batch(uint32_t n)
{
	struct batch_data d = { n, 13, 104, calloc(n * 13, 4), calloc(n * 104, 4), calloc(n, 4) };

	return d;
}

static void free_batch(struct batch_data *d)
{
	free(d->dense);
	free(d->sparse);
	free(d->label);
}

static void test_synth_deterministic_per_sample(void **state)
{
	struct batch_data a = alloc_batch(8), b = alloc_batch(4);
	int ones = 0;

	(void)state;
	data_synth_batch(&spec, 100, &a);
	data_synth_batch(&spec, 104, &b);   /* samples 104..107 = a's last four */
	assert_memory_equal(a.dense + 4 * 13, b.dense, 4 * 13 * 4);
	assert_memory_equal(a.sparse + 4 * 104, b.sparse, 4 * 104 * 4);
	assert_memory_equal(a.label + 4, b.label, 4 * 4);
	for (int i = 0; i < 8 * 104; i++)
		assert_true(a.sparse[i] >= 0 && a.sparse[i] < 1000);
	free_batch(&a);
	a = alloc_batch(1000);
	data_synth_batch(&spec, 0, &a);
	for (int i = 0; i < 1000; i++)
		ones += a.label[i] == 1.0f;
	assert_true(ones > 200 && ones < 800);  /* both classes */
	free_batch(&a);
	free_batch(&b);
}

static void test_shards_roundtrip(void **state)
{
	struct nt_err err;
	char dir[64];
	struct shard_reader *r;
	struct batch_data got = alloc_batch(300), want = alloc_batch(300);

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	/* 1000 samples in chunks of 64, 4 chunks a shard: 4 shards, last partial */
	assert_int_equal(data_write_shards(dir, &spec, 1000, 64, 4, 1, &err), 0);
	r = shard_open(dir, &spec, &err);
	if (!r)
		fail_msg("%s", err.msg);
	assert_int_equal(shard_samples(r), 1000);
	assert_int_equal(shard_read(r, 200, &got, &err), 0);  /* spans shards */
	data_synth_batch(&spec, 200, &want);
	assert_memory_equal(got.dense, want.dense, 300 * 13 * 4);
	assert_memory_equal(got.sparse, want.sparse, 300 * 104 * 4);
	assert_memory_equal(got.label, want.label, 300 * 4);
	/* reading past the end wraps around (epochs) */
	assert_int_equal(shard_read(r, 900, &got, &err), 0);
	data_synth_batch(&spec, 0, &want);
	assert_memory_equal(got.dense + 100 * 13, want.dense, 200 * 13 * 4);
	shard_close(r);
	free_batch(&got);
	free_batch(&want);
	test_rmrf(dir);
}

static void test_corrupt_and_truncated_shards(void **state)
{
	struct nt_err err;
	char dir[64], path[128], cmd[300];
	struct shard_reader *r;
	struct batch_data got = alloc_batch(100);
	struct data_spec other = spec;
	int fd;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(data_write_shards(dir, &spec, 512, 64, 4, 0, &err), 0);
	/* flip a byte inside shard 1's first chunk */
	snprintf(path, sizeof(path), "%s/shard-00001.nts", dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "\xff\xff", 2, 5000), 2);
	close(fd);
	r = shard_open(dir, &spec, &err);
	assert_non_null(r);
	assert_int_equal(shard_read(r, 0, &got, &err), 0);      /* shard 0 is fine */
	assert_int_equal(shard_read(r, 256, &got, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "shard-00001.nts: offset 64: chunk 0: checksum mismatch"));
	shard_close(r);

	/* shard 0 cut short */
	snprintf(cmd, sizeof(cmd), "truncate -s 3000 '%s/shard-00000.nts'", dir);
	assert_int_equal(system(cmd), 0);
	r = shard_open(dir, &spec, &err);
	assert_int_equal(shard_read(r, 0, &got, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "shard-00000.nts: offset"));
	assert_non_null(strstr(err.msg, "truncated"));
	shard_close(r);

	/* a data set for another model, a missing manifest */
	other.dense_width = 16;
	assert_null(shard_open(dir, &other, &err));
	assert_non_null(strstr(err.msg, "does not fit this model"));
	snprintf(cmd, sizeof(cmd), "%s/manifest", dir);
	unlink(cmd);
	assert_null(shard_open(dir, &spec, &err));
	assert_non_null(strstr(err.msg, "manifest: No such file"));
	free_batch(&got);
	test_rmrf(dir);
}

/* ---- the manifest --------------------------------------------------------- */

static const char good_manifest[] =
	"format=nodetune-shards-1\nsamples=1000\nchunk_samples=64\nchunks_per_shard=4\n"
	"dense_width=13\nsparse_width=104\nrows=1000\nseed=5\n";

/* parse text as manifest "M"; 0 or the error, its message in err.msg */
static int parse_manifest(const char *text, struct data_manifest *m, struct nt_err *err)
{
	return data_parse_manifest(text, strlen(text), "M", m, err);
}

/* good_manifest with the line starting with `key=` replaced by repl (NULL:
 * removed) */
static void manifest_with(char *buf, size_t size, const char *key, const char *repl)
{
	const char *p = strstr(good_manifest, key), *nl = strchr(p, '\n');

	snprintf(buf, size, "%.*s%s%s", (int)(p - good_manifest), good_manifest, repl ? repl : "",
		 repl ? nl : nl + 1);
}

static void expect_manifest_error(const char *text, const char *msg)
{
	struct data_manifest m = { .samples = 42 };
	struct nt_err err;

	assert_int_equal(parse_manifest(text, &m, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	assert_int_equal(m.samples, 42);   /* unchanged */
}

static void test_manifest_parse(void **state)
{
	struct data_manifest m;
	struct nt_err err;
	char text[2048], big[400];

	(void)state;
	assert_int_equal(parse_manifest(good_manifest, &m, &err), 0);
	assert_int_equal(m.samples, 1000);
	assert_int_equal(m.chunk_samples, 64);
	assert_int_equal(m.chunks_per_shard, 4);
	assert_int_equal(m.dense_width, 13);
	assert_int_equal(m.sparse_width, 104);
	assert_int_equal(m.rows, 1000);
	assert_int_equal(m.seed, 5);
	/* a blank line is fine, so is a missing final newline */
	snprintf(text, sizeof(text), "\n%.*s", (int)strlen(good_manifest) - 1, good_manifest);
	assert_int_equal(parse_manifest(text, &m, &err), 0);

	expect_manifest_error("hello world\n", "M: line 1: expected key=value, got 'hello world'");
	expect_manifest_error("\x01\x02garbage\x7f\n", "M: line 1: expected key=value, got '??garbage?'");
	manifest_with(text, sizeof(text), "rows=", "rows=1000\ncolour=blue");
	expect_manifest_error(text, "M: line 8: unknown key 'colour'");
	manifest_with(text, sizeof(text), "rows=", "rows=1000\nrows=5");
	expect_manifest_error(text, "M: line 8: duplicate key 'rows'");
	manifest_with(text, sizeof(text), "seed=", NULL);
	expect_manifest_error(text, "M: missing key 'seed'");
	manifest_with(text, sizeof(text), "format=", NULL);
	expect_manifest_error(text, "M: missing key 'format'");
	expect_manifest_error("", "M: missing key 'format'");
	manifest_with(text, sizeof(text), "samples=", "samples=12x");
	expect_manifest_error(text, "M: line 2: samples '12x': expected a whole number");
	manifest_with(text, sizeof(text), "samples=", "samples=-5");
	expect_manifest_error(text, "M: line 2: samples '-5': expected a whole number");
	manifest_with(text, sizeof(text), "samples=", "samples= 5");
	expect_manifest_error(text, "M: line 2: samples ' 5': expected a whole number");
	manifest_with(text, sizeof(text), "samples=", "samples=");
	expect_manifest_error(text, "M: line 2: samples '': expected a whole number");
	manifest_with(text, sizeof(text), "samples=", "samples=99999999999999999999999");
	expect_manifest_error(text, "M: line 2: samples '99999999999999999999999': expected a whole number");
	manifest_with(text, sizeof(text), "chunk_samples=", "chunk_samples=0");
	expect_manifest_error(text, "M: line 3: chunk_samples 0: expected 1..1048576");
	manifest_with(text, sizeof(text), "chunks_per_shard=", "chunks_per_shard=4294967297");
	expect_manifest_error(text, "M: line 4: chunks_per_shard 4294967297: expected 1..1048576");
	manifest_with(text, sizeof(text), "rows=", "rows=0");
	expect_manifest_error(text, "M: sparse_width 104 with rows 0: no index can be valid");
	manifest_with(text, sizeof(text), "format=", "format=nodetune-shards-2");
	expect_manifest_error(text, "M: line 1: format 'nodetune-shards-2', expected nodetune-shards-1");
	/* chunks too large to decode: refused before anything is allocated */
	snprintf(text, sizeof(text), "format=nodetune-shards-1\nsamples=1000\nchunk_samples=1048576\n"
		 "chunks_per_shard=4\ndense_width=65536\nsparse_width=0\nrows=0\nseed=1\n");
	expect_manifest_error(text, "M: chunks of 1048576 samples of widths 65536 and 0 take 274882101376 bytes, more than 268435456");
	/* a giant line, a NUL byte, a giant manifest */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(text, sizeof(text), "%s%s\n", good_manifest, big);
	expect_manifest_error(text, "M: line 9: longer than 255 bytes");
	{
		char nul[] = "samples=1\0\n";

		assert_int_equal(data_parse_manifest(nul, sizeof(nul) - 1, "M", &m, &err), -EINVAL);
		assert_string_equal(err.msg, "M: line 1: a NUL byte");
	}
	{
		char *huge = calloc(1, DATA_MANIFEST_MAX + 2);

		memset(huge, '\n', DATA_MANIFEST_MAX + 1);
		assert_int_equal(data_parse_manifest(huge, DATA_MANIFEST_MAX + 1, "M", &m, &err), -EINVAL);
		assert_string_equal(err.msg, "M: 65537 bytes, more than a manifest's 65536");
		free(huge);
	}
}

static void test_manifest_files(void **state)
{
	struct nt_err err;
	char dir[64], path[128];
	FILE *f;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(test_write(dir, "manifest", "samples=1000\nsamples=1000\n"), 0);
	assert_null(shard_open(dir, &spec, &err));
	snprintf(path, sizeof(path), "%s/manifest: line 2: duplicate key 'samples'", dir);
	assert_string_equal(err.msg, path);
	/* a giant manifest is refused before it is read */
	snprintf(path, sizeof(path), "%s/manifest", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 20000; i++)
		fputs("seed=1\n", f);
	fclose(f);
	assert_null(shard_open(dir, &spec, &err));
	assert_non_null(strstr(err.msg, "/manifest: larger than any manifest"));
	/* a directory where the manifest should be */
	unlink(path);
	mkdir(path, 0755);
	assert_null(shard_open(dir, &spec, &err));
	assert_non_null(strstr(err.msg, "/manifest: not a file"));
	test_rmrf(dir);
}

/* ---- a shard's header and index ------------------------------------------- */

struct shard_file {
	char dir[64], path[128];
	unsigned char *buf;         /* the whole of shard 0 */
	size_t len;
	struct data_manifest m;
	struct shard_layout layout;
	struct shard_header h;
};

/* 512 samples in chunks of 64, 4 a shard, uncompressed: shard 0 in memory */
static void shard_file_make(struct shard_file *s)
{
	struct nt_err err;
	char mpath[128], mbuf[1024];
	FILE *f;
	size_t n;

	assert_non_null(test_tmpdir(s->dir, sizeof(s->dir)));
	assert_int_equal(data_write_shards(s->dir, &spec, 512, 64, 4, 0, &err), 0);
	snprintf(mpath, sizeof(mpath), "%s/manifest", s->dir);
	f = fopen(mpath, "r");
	assert_non_null(f);
	n = fread(mbuf, 1, sizeof(mbuf), f);
	fclose(f);
	assert_int_equal(data_parse_manifest(mbuf, n, mpath, &s->m, &err), 0);
	assert_int_equal(data_shard_layout(&s->m, 0, &s->layout), 0);
	assert_int_equal(s->layout.n_chunks, 4);
	assert_int_equal(data_shard_layout(&s->m, 2, &s->layout), -ERANGE);
	assert_int_equal(data_shard_layout(&s->m, 0, &s->layout), 0);
	snprintf(s->path, sizeof(s->path), "%s/shard-00000.nts", s->dir);
	f = fopen(s->path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	s->len = (size_t)ftell(f);
	rewind(f);
	s->buf = malloc(s->len);
	assert_int_equal(fread(s->buf, 1, s->len, f), s->len);
	fclose(f);
	assert_int_equal(shard_parse_header(s->buf, 64, s->len, "S", &s->layout, &s->h, &err), 0);
	assert_int_equal(s->h.index_offset + 4 * 16, s->len);
}

static void shard_file_free(struct shard_file *s)
{
	free(s->buf);
	test_rmrf(s->dir);
}

static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }

static void expect_header_error(const struct shard_file *s, const unsigned char *hb, size_t len,
				uint64_t file_size, const char *msg)
{
	struct shard_header h = { .n_chunks = 99 };
	struct nt_err err;

	assert_int_equal(shard_parse_header(hb, len, file_size, "S", &s->layout, &h, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	assert_int_equal(h.n_chunks, 99);
}

static void test_shard_header_corruptions(void **state)
{
	struct shard_file s;
	unsigned char hb[64];
	char msg[300];

	(void)state;
	shard_file_make(&s);
	/* truncated header: a file shorter than one */
	expect_header_error(&s, s.buf, 40, 40, "S: offset 0: truncated header (the file holds 40 bytes, a header 64)");
	memcpy(hb, s.buf, 64);
	memcpy(hb, "NTSX", 4);
	expect_header_error(&s, hb, 64, s.len, "S: offset 0: not a shard (bad magic)");
	memcpy(hb, s.buf, 64);
	put32(hb + 4, 7);
	expect_header_error(&s, hb, 64, s.len, "S: offset 4: unsupported shard version 7");
	memcpy(hb, s.buf, 64);
	put32(hb + 8, 0xffffffff);
	expect_header_error(&s, hb, 64, s.len, "S: offset 8: 4294967295 chunks, the manifest implies 4");
	memcpy(hb, s.buf, 64);
	put32(hb + 12, 65);
	expect_header_error(&s, hb, 64, s.len, "S: offset 12: chunks of 65 samples, the manifest says 64");
	memcpy(hb, s.buf, 64);
	put64(hb + 16, 256);
	expect_header_error(&s, hb, 64, s.len, "S: offset 16: first sample 256, the manifest implies 0");
	/* the index: inside the header, past the end, wrapping around */
	memcpy(hb, s.buf, 64);
	put64(hb + 24, 8);
	expect_header_error(&s, hb, 64, s.len, "S: offset 24: the chunk index at offset 8 overlaps the header");
	put64(hb + 24, s.len);
	snprintf(msg, sizeof(msg), "S: offset 24: truncated: the chunk index (4 entries at offset %zu) runs past the end of the file (size %zu)",
		 s.len, s.len);
	expect_header_error(&s, hb, 64, s.len, msg);
	put64(hb + 24, UINT64_MAX - 16);
	snprintf(msg, sizeof(msg), "S: offset 24: truncated: the chunk index (4 entries at offset %llu) runs past the end of the file (size %zu)",
		 (unsigned long long)UINT64_MAX - 16, s.len);
	expect_header_error(&s, hb, 64, s.len, msg);
	/* trailing bytes after the index */
	snprintf(msg, sizeof(msg), "S: offset %zu: 100 bytes after the chunk index", s.len);
	expect_header_error(&s, s.buf, 64, s.len + 100, msg);
	shard_file_free(&s);
}

static void expect_index_error(const struct shard_file *s, const unsigned char *ib, size_t len, const char *msg)
{
	struct shard_index ix[4] = { { 1, 2 } };
	struct nt_err err;

	assert_int_equal(shard_parse_index(ib, len, &s->h, s->len, &s->layout, "S", ix, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	assert_int_equal(ix[0].offset, 1);   /* unchanged */
}

static void test_shard_index_corruptions(void **state)
{
	struct shard_file s;
	struct shard_index ix[4];
	unsigned char ib[64];
	struct nt_err err;
	char msg[300];
	uint64_t io, c2;

	(void)state;
	shard_file_make(&s);
	io = s.h.index_offset;
	memcpy(ib, s.buf + io, 64);
	assert_int_equal(shard_parse_index(ib, 64, &s.h, s.len, &s.layout, "S", ix, &err), 0);
	assert_int_equal(ix[0].offset, 64);
	memcpy(&c2, ib + 32, 8);                             /* chunk 2's offset */

	/* truncated index */
	snprintf(msg, sizeof(msg), "S: offset %llu: truncated chunk index (40 of 64 bytes)", (unsigned long long)io + 40);
	expect_index_error(&s, ib, 40, msg);
	/* a chunk length beyond the file: the case */
	put64(ib + 32 + 8, 0xffffffffull);
	snprintf(msg, sizeof(msg), "S: offset %llu: chunk 2: length 4294967295 runs past the end of the file (size %zu)",
		 (unsigned long long)c2, s.len);
	expect_index_error(&s, ib, 64, msg);
	/* an offset beyond the file */
	memcpy(ib, s.buf + io, 64);
	put64(ib + 32, 1ull << 40);
	snprintf(msg, sizeof(msg), "S: offset 1099511627776: chunk 2: starts past the end of the file (size %zu)", s.len);
	expect_index_error(&s, ib, 64, msg);
	/* offset + length wraps around */
	memcpy(ib, s.buf + io, 64);
	put64(ib + 32 + 8, UINT64_MAX - c2 + 10);
	snprintf(msg, sizeof(msg), "S: offset %llu: chunk 2: length %llu overflows the offset", (unsigned long long)c2,
		 (unsigned long long)(UINT64_MAX - c2 + 10));
	expect_index_error(&s, ib, 64, msg);
	/* over the header, over the chunk before, into the index */
	memcpy(ib, s.buf + io, 64);
	put64(ib, 10);
	expect_index_error(&s, ib, 64, "S: offset 10: chunk 0: overlaps the shard header");
	memcpy(ib, s.buf + io, 64);
	put64(ib + 32, c2 - 1);
	snprintf(msg, sizeof(msg), "S: offset %llu: chunk 2: overlaps the chunk before it", (unsigned long long)c2 - 1);
	expect_index_error(&s, ib, 64, msg);
	memcpy(ib, s.buf + io, 64);
	{
		uint64_t c3, len;

		memcpy(&c3, ib + 48, 8);
		len = io - c3 + 16;                          /* 16 bytes into the index */
		put64(ib + 48 + 8, len);
		snprintf(msg, sizeof(msg), "S: offset %llu: chunk 3: length %llu runs into the chunk index at offset %llu",
			 (unsigned long long)c3, (unsigned long long)len, (unsigned long long)io);
		expect_index_error(&s, ib, 64, msg);
	}
	/* a chunk shorter than a batch header */
	memcpy(ib, s.buf + io, 64);
	put64(ib + 8, 10);
	snprintf(msg, sizeof(msg), "S: offset 64: chunk 0: length 10, outside 64..%llu for chunks of 64 samples",
		 (unsigned long long)s.layout.max_chunk_len);
	expect_index_error(&s, ib, 64, msg);
	shard_file_free(&s);
}

/* The case end to end: an index length beyond the file reaches no
 * allocation (under ASan: no allocation-size-too-big abort); the error names
 * the shard, the chunk and its offset. */
static void test_shard_files_corrupt_index(void **state)
{
	struct shard_file s;
	struct shard_reader *r;
	struct batch_data got = alloc_batch(100);
	uint64_t io, c2, big = 0xffffffffull;
	struct nt_err err;
	char msg[400], cmd[300];
	int fd;

	(void)state;
	shard_file_make(&s);
	io = s.h.index_offset;
	memcpy(&c2, s.buf + io + 32, 8);
	fd = open(s.path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &big, 8, (off_t)(io + 32 + 8)), 8);
	close(fd);
	r = shard_open(s.dir, &spec, &err);
	assert_non_null(r);
	assert_int_equal(shard_read(r, 0, &got, &err), -EINVAL);
	snprintf(msg, sizeof(msg), "%s: offset %llu: chunk 2: length 4294967295 runs past the end of the file (size %zu)",
		 s.path, (unsigned long long)c2, s.len);
	assert_string_equal(err.msg, msg);
	/* shard 1 is untouched */
	assert_int_equal(shard_read(r, 256, &got, &err), 0);
	shard_close(r);

	/* a header cut short, an index cut short, a wrong magic */
	snprintf(cmd, sizeof(cmd), "truncate -s 40 '%s'", s.path);
	assert_int_equal(system(cmd), 0);
	r = shard_open(s.dir, &spec, &err);
	assert_int_equal(shard_read(r, 0, &got, &err), -EINVAL);
	snprintf(msg, sizeof(msg), "%s: offset 0: truncated header (the file holds 40 bytes, a header 64)", s.path);
	assert_string_equal(err.msg, msg);
	fd = open(s.path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, s.buf, s.len - 8), (ssize_t)(s.len - 8));
	close(fd);
	assert_int_equal(shard_read(r, 0, &got, &err), -EINVAL);
	snprintf(msg, sizeof(msg), "%s: offset 24: truncated: the chunk index (4 entries at offset %llu) runs past the end of the file (size %zu)",
		 s.path, (unsigned long long)io, s.len - 8);
	assert_string_equal(err.msg, msg);
	fd = open(s.path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "XXXX", 4), 4);
	assert_int_equal(write(fd, s.buf + 4, s.len - 4), (ssize_t)(s.len - 4));
	close(fd);
	assert_int_equal(shard_read(r, 0, &got, &err), -EINVAL);
	snprintf(msg, sizeof(msg), "%s: offset 0: not a shard (bad magic)", s.path);
	assert_string_equal(err.msg, msg);
	/* a shard missing from the set */
	unlink(s.path);
	assert_int_equal(shard_read(r, 0, &got, &err), -EINVAL);
	snprintf(msg, sizeof(msg), "%s: No such file or directory", s.path);
	assert_string_equal(err.msg, msg);
	shard_close(r);
	free_batch(&got);
	shard_file_free(&s);
}

/* A chunk that decodes but is not the one the index promises: another
 * chunk's bytes (wrong batch id), or a sparse index past the rows. */
static void test_shard_chunk_mismatch(void **state)
{
	struct shard_file s;
	struct shard_index ix[4];
	struct batch_data d;
	struct data_manifest m;
	void *out;
	size_t cap;
	struct nt_err err;
	char msg[300];

	(void)state;
	shard_file_make(&s);
	assert_int_equal(shard_parse_index(s.buf + s.h.index_offset, 64, &s.h, s.len, &s.layout, "S", ix, &err), 0);
	cap = batch_payload_size(64, 13, 104);
	assert_int_equal(posix_memalign(&out, 64, cap), 0);
	assert_int_equal(shard_decode_chunk(s.buf + ix[1].offset, &ix[1], 1, &s.m, &s.layout, "S", out, cap, &d, &err), 0);
	assert_int_equal(d.n, 64);
	/* chunk 1's bytes where chunk 2 should be */
	snprintf(msg, sizeof(msg), "S: offset %llu: chunk 2: batch id 1, expected 2", (unsigned long long)ix[1].offset);
	assert_int_equal(shard_decode_chunk(s.buf + ix[1].offset, &ix[1], 2, &s.m, &s.layout, "S", out, cap, &d, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	/* a data set of fewer rows than its indices address */
	m = s.m;
	m.rows = 3;
	assert_int_equal(shard_decode_chunk(s.buf + ix[0].offset, &ix[0], 0, &m, &s.layout, "S", out, cap, &d, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "S: offset 64: chunk 0: sample 0 has sparse index"));
	assert_non_null(strstr(err.msg, "outside 0..2"));
	/* a different width than the manifest's */
	m = s.m;
	m.dense_width = 12;
	assert_int_equal(shard_decode_chunk(s.buf + ix[0].offset, &ix[0], 0, &m, &s.layout, "S", out, cap, &d, &err), -EINVAL);
	assert_string_equal(err.msg, "S: offset 64: chunk 0: 64 samples of widths 13 and 104, expected 64 of 12 and 104");
	free(out);
	shard_file_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synth_deterministic_per_sample),
		cmocka_unit_test(test_shards_roundtrip),
		cmocka_unit_test(test_corrupt_and_truncated_shards),
		cmocka_unit_test(test_manifest_parse),
		cmocka_unit_test(test_manifest_files),
		cmocka_unit_test(test_shard_header_corruptions),
		cmocka_unit_test(test_shard_index_corruptions),
		cmocka_unit_test(test_shard_files_corrupt_index),
		cmocka_unit_test(test_shard_chunk_mismatch),
	};

	return cmocka_run_group_tests_name("data", tests, NULL, NULL);
}
