/* SPDX-License-Identifier: MIT */
/* test_batch.c — the loader's batch format: round trips (plain and zstd)
 * and every corruption detected. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zstd.h>

#include "batch.h"
#include "data.h"

static struct batch_data make(uint32_t n, struct data_spec *s)
{
	struct batch_data d = { n, s->dense_width, s->sparse_width, malloc(n * s->dense_width * 4),
				malloc(n * s->sparse_width * 4 + 4), malloc(n * 4) };

	data_synth_batch(s, 1000, &d);
	return d;
}

static void release(struct batch_data *d)
{
	free(d->dense);
	free(d->sparse);
	free(d->label);
}

static void roundtrip(int level)
{
	struct data_spec s = { 13, 104, 10000, 3 };
	struct batch_data d = make(300, &s), out;
	size_t cap = batch_payload_size(300, 13, 104), len;
	void *buf, *payload;
	uint64_t id;
	struct nt_err err;

	assert_int_equal(posix_memalign(&payload, 64, cap), 0);
	assert_int_equal(batch_encode(&d, 77, level, &buf, &len), 0);
	assert_int_equal(batch_decode(buf, len, payload, cap, &out, &id, &err), 0);
	assert_int_equal(id, 77);
	assert_int_equal(out.n, 300);
	assert_int_equal(out.dense_width, 13);
	assert_int_equal(out.sparse_width, 104);
	assert_memory_equal(out.dense, d.dense, 300 * 13 * 4);
	assert_memory_equal(out.sparse, d.sparse, 300 * 104 * 4);
	assert_memory_equal(out.label, d.label, 300 * 4);
	assert_int_equal((uintptr_t)out.dense % 64, 0);
	if (level)
		assert_true(len < sizeof(struct batch_header) + cap);   /* zstd made it smaller */
	free(buf);
	free(payload);
	release(&d);
}

static void test_roundtrip_plain(void **state) { (void)state; roundtrip(0); }
static void test_roundtrip_zstd(void **state) { (void)state; roundtrip(3); }

static void test_corruption(void **state)
{
	struct data_spec s = { 16, 0, 0, 3 };
	struct batch_data d = make(64, &s), out;
	size_t cap = batch_payload_size(64, 16, 0), len;
	unsigned char *buf;
	void *payload;
	struct nt_err err;

	(void)state;
	assert_int_equal(posix_memalign(&payload, 64, cap), 0);
	for (int level = 0; level <= 1; level++) {
		assert_int_equal(batch_encode(&d, 1, level, (void **)&buf, &len), 0);
		/* a flipped payload byte */
		buf[len / 2] ^= 0x40;
		assert_int_equal(batch_decode(buf, len, payload, cap, &out, NULL, &err), -EINVAL);
		assert_string_equal(err.msg, "checksum mismatch (corrupt data)");
		buf[len / 2] ^= 0x40;
		/* truncated */
		assert_int_equal(batch_decode(buf, len - 10, payload, cap, &out, NULL, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "truncated"));
		assert_int_equal(batch_decode(buf, 20, payload, cap, &out, NULL, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "less than a batch header"));
		/* not a batch, wrong version */
		buf[0] = 'X';
		assert_int_equal(batch_decode(buf, len, payload, cap, &out, NULL, &err), -EINVAL);
		assert_string_equal(err.msg, "not a batch (bad magic)");
		buf[0] = 'N';
		buf[4] = 9;
		assert_int_equal(batch_decode(buf, len, payload, cap, &out, NULL, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "unsupported batch version 9"));
		buf[4] = 1;
		/* too small an output buffer */
		assert_int_equal(batch_decode(buf, len, payload, 64, &out, NULL, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "exceeds"));
		assert_int_equal(batch_decode(buf, len, payload, cap, &out, NULL, &err), 0);
		assert_null(out.sparse);
		free(buf);
	}
	free(payload);
	release(&d);
}

static void test_checksum(void **state)
{
	char a[100] = { 0 }, b[100] = { 0 };

	(void)state;
	assert_true(batch_checksum(a, 100) == batch_checksum(b, 100));
	b[99] = 1;
	assert_true(batch_checksum(a, 100) != batch_checksum(b, 100));
	assert_true(batch_checksum(a, 99) != batch_checksum(a, 100));
}

/* ---- corruptions past the checksum: each made with the checksum fixed, as
 * a writer with a bug (or an attacker) would ----------------------------- */

struct enc {
	unsigned char *buf;
	size_t len, cap;            /* cap: the decode buffer's size */
	void *out;
	struct batch_header h;
};

static struct enc encode(int level)
{
	struct data_spec s = { 16, 8, 100, 3 };
	struct batch_data d = make(64, &s);
	struct enc e = { .cap = batch_payload_size(64, 16, 8) };

	assert_int_equal(batch_encode(&d, 9, level, (void **)&e.buf, &e.len), 0);
	assert_int_equal(posix_memalign(&e.out, 64, e.cap), 0);
	memcpy(&e.h, e.buf, sizeof(e.h));
	release(&d);
	return e;
}

static void enc_free(struct enc *e)
{
	free(e->buf);
	free(e->out);
}

/* the header's fields from e->h, the checksum recomputed over the stored bytes */
static void reseal(struct enc *e)
{
	e->h.stored_len = e->len - sizeof(e->h);
	e->h.checksum = batch_checksum(e->buf + sizeof(e->h), e->len - sizeof(e->h));
	memcpy(e->buf, &e->h, sizeof(e->h));
}

static void expect_decode_error(const struct enc *e, const char *msg)
{
	struct batch_data out = { .n = 12345 };
	uint64_t id = 777;
	struct nt_err err;

	assert_int_equal(batch_decode(e->buf, e->len, e->out, e->cap, &out, &id, &err), -EINVAL);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' does not contain '%s'", err.msg, msg);
	assert_int_equal(out.n, 12345);       /* unchanged */
	assert_int_equal(id, 777);
}

static void test_header_counts_exceed_buffer(void **state)
{
	struct enc e = encode(0);
	char msg[200];

	(void)state;
	/* more samples than the payload holds: the table no longer fits */
	e.h.n_samples = 0xffffffff;
	reseal(&e);
	expect_decode_error(&e, "bad tensor table entry 0 (dtype 0, 16 per sample, 4096 bytes at 128)");
	e.h.n_samples = 64;
	/* a payload length beyond the out buffer, or beyond 64 bits' worth */
	e.h.payload_len = 1ull << 63;
	reseal(&e);
	snprintf(msg, sizeof(msg), "payload of 9223372036854775808 bytes exceeds the %zu-byte buffer", e.cap);
	expect_decode_error(&e, msg);
	/* a stored length beyond the buffer given */
	e.h.payload_len = e.cap;
	reseal(&e);
	e.h.stored_len = UINT64_MAX;
	memcpy(e.buf, &e.h, sizeof(e.h));
	snprintf(msg, sizeof(msg), "truncated: header says 18446744073709551615 bytes follow, %zu do", e.len - 64);
	expect_decode_error(&e, msg);
	/* bytes after the batch */
	reseal(&e);
	e.h.stored_len -= 8;
	memcpy(e.buf, &e.h, sizeof(e.h));
	expect_decode_error(&e, "8 bytes after the batch's");
	/* a payload too short for the tensor table */
	reseal(&e);
	e.h.payload_len = 16;
	memcpy(e.buf, &e.h, sizeof(e.h));
	expect_decode_error(&e, "payload of 16 bytes cannot hold the tensor table");
	/* uncompressed, yet stored and payload lengths differ */
	e.h.payload_len = e.cap - 64;
	memcpy(e.buf, &e.h, sizeof(e.h));
	snprintf(msg, sizeof(msg), "stored and payload lengths differ (%zu, %zu) in an uncompressed batch", e.cap,
		 e.cap - 64);
	expect_decode_error(&e, msg);
	enc_free(&e);
}

/* Regression: sample count x width x 4 wrapped around 64 bits to 0, which
 * the old table check accepted as a tensor of 0 bytes, handing out a batch
 * of 2^31 samples of width 2^31 in a buffer of a few hundred bytes. */
static void test_tensor_table_overflow(void **state)
{
	struct enc e = encode(0);
	struct batch_tensor t[BATCH_TENSORS];

	(void)state;
	memcpy(t, e.buf + 64, sizeof(t));
	t[0].per_sample = 1u << 31;
	t[0].nbytes = 0;
	t[1].per_sample = 0;
	t[1].nbytes = 0;
	t[2].per_sample = 1u << 31;
	t[2].nbytes = 0;
	memcpy(e.buf + 64, t, sizeof(t));
	e.h.n_samples = 1u << 31;
	reseal(&e);
	expect_decode_error(&e, "bad tensor table: 2147483648 samples of widths 2147483648 and 0 overflow");
	/* a table whose tensors overlap it */
	enc_free(&e);
	e = encode(0);
	memcpy(t, e.buf + 64, sizeof(t));
	t[0].offset = 0;
	memcpy(e.buf + 64, t, sizeof(t));
	reseal(&e);
	expect_decode_error(&e, "bad tensor table entry 0 (dtype 0, 16 per sample, 4096 bytes at 0)");
	enc_free(&e);
}

/* offset of a zstd frame's content size field and its width; -1 if absent */
static int fcs_field(const unsigned char *f, int *width)
{
	static const int did_len[4] = { 0, 1, 2, 4 };
	int fhd = f[4], single = fhd >> 5 & 1, flag = fhd >> 6;

	*width = flag == 0 ? (single ? 1 : 0) : 1 << flag;   /* 0,1 / 2 / 4 / 8 */
	return *width ? 5 + !single + did_len[fhd & 3] : -1;
}

static void test_zstd_frames(void **state)
{
	struct enc e = encode(3);
	unsigned char *frame = e.buf + 64, *payload = malloc(e.cap);
	size_t stored = e.len - 64, n;
	int w, at;
	char msg[200];

	(void)state;
	/* a corrupted frame: a truncated one, one with a reserved block type */
	e.len -= 5;
	reseal(&e);
	expect_decode_error(&e, "zstd: ");
	e.len += 5;
	at = fcs_field(frame, &w);
	assert_true(at > 0 && w == 2);            /* a few KB: two bytes, minus 256 */
	frame[at + w] |= 6;                      /* the first block: type 3, reserved */
	reseal(&e);
	expect_decode_error(&e, "zstd: ");
	frame[at + w] &= (unsigned char)~6;
	frame[at + w] |= 2;                      /* was 2 (compressed) */
	/* not a zstd frame at all */
	memcpy(frame, "\0\0\0\0", 4);
	reseal(&e);
	expect_decode_error(&e, "zstd: not a zstd frame");
	enc_free(&e);

	/* a frame whose content size lies: it records the payload's length
	 * but holds 64 bytes fewer */
	e = encode(3);
	frame = e.buf + 64;
	assert_int_equal(ZSTD_decompress(payload, e.cap, frame, e.len - 64), e.cap);
	n = ZSTD_compress(frame, ZSTD_compressBound(e.cap), payload, e.cap - 64, 3);
	assert_false(ZSTD_isError(n));
	assert_true(64 + n <= e.len);
	e.len = 64 + n;
	at = fcs_field(frame, &w);
	assert_true(at > 0 && w == 2);
	frame[at] = (unsigned char)((e.cap - 256) & 0xff);
	frame[at + 1] = (unsigned char)((e.cap - 256) >> 8);
	reseal(&e);
	expect_decode_error(&e, "zstd: ");
	/* one that records another length than the header's */
	n = ZSTD_compress(frame, ZSTD_compressBound(e.cap), payload, e.cap - 64, 3);
	e.len = 64 + n;
	reseal(&e);
	snprintf(msg, sizeof(msg), "zstd: the frame holds %zu bytes, the batch header says %zu", e.cap - 64, e.cap);
	expect_decode_error(&e, msg);
	/* one that records no length */
	{
		ZSTD_CCtx *cc = ZSTD_createCCtx();

		assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0)));
		n = ZSTD_compress2(cc, frame, ZSTD_compressBound(e.cap), payload, e.cap);
		assert_false(ZSTD_isError(n));
		ZSTD_freeCCtx(cc);
		e.len = 64 + n;
		reseal(&e);
		expect_decode_error(&e, "zstd: the frame does not record its content size");
	}
	/* two frames: the payload's and another after it */
	n = ZSTD_compress(frame, ZSTD_compressBound(e.cap), payload, e.cap, 3);
	stored = ZSTD_compress(frame + n, ZSTD_compressBound(64), payload, 64, 3);
	assert_false(ZSTD_isError(stored));
	e.len = 64 + n + stored;
	reseal(&e);
	snprintf(msg, sizeof(msg), "zstd: %zu bytes after the %zu-byte frame", stored, n);
	expect_decode_error(&e, msg);
	/* and the checksum still guards all of it */
	e.len = 64 + n;
	reseal(&e);
	{
		struct batch_data out;
		struct nt_err err;

		assert_int_equal(batch_decode(e.buf, e.len, e.out, e.cap, &out, NULL, &err), 0);
		e.buf[64 + n / 2] ^= 1;
		expect_decode_error(&e, "checksum mismatch (corrupt data)");
	}
	free(payload);
	enc_free(&e);
}

/* Regression, found by fuzz_batch on the old decoder: a zstd batch with no
 * stored bytes and a payload length of 0 "decompressed" to nothing, and the
 * tensor table was then read from the 0-byte out buffer (72 bytes past it). */
static void test_empty_payload(void **state)
{
	struct batch_header h = { .version = BATCH_VERSION, .flags = BATCH_FLAG_ZSTD, .n_samples = 4,
				  .n_tensors = BATCH_TENSORS, .batch_id = 0xb100000102ull };
	struct batch_data out = { .n = 99 };
	unsigned char buf[sizeof(h)] = { 0 };
	void *o;
	struct nt_err err;

	(void)state;
	memcpy(h.magic, BATCH_MAGIC, 4);
	h.checksum = batch_checksum(buf, 0);
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(posix_memalign(&o, 64, 64), 0);
	assert_int_equal(batch_decode(buf, sizeof(buf), o, 0, &out, NULL, &err), -EINVAL);
	assert_string_equal(err.msg, "payload of 0 bytes cannot hold the tensor table");
	h.flags = 0;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(batch_decode(buf, sizeof(buf), o, 0, &out, NULL, &err), -EINVAL);
	assert_string_equal(err.msg, "payload of 0 bytes cannot hold the tensor table");
	assert_int_equal(out.n, 99);
	free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_plain),
		cmocka_unit_test(test_roundtrip_zstd),
		cmocka_unit_test(test_corruption),
		cmocka_unit_test(test_checksum),
		cmocka_unit_test(test_header_counts_exceed_buffer),
		cmocka_unit_test(test_tensor_table_overflow),
		cmocka_unit_test(test_zstd_frames),
		cmocka_unit_test(test_empty_payload),
	};

	return cmocka_run_group_tests_name("batch", tests, NULL, NULL);
}
