/* test_batch.c — the loader's batch format: round trips (plain and zstd)
 * and every corruption detected. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

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
	char why[128];

	assert_int_equal(posix_memalign(&payload, 64, cap), 0);
	assert_int_equal(batch_encode(&d, 77, level, &buf, &len), 0);
	assert_int_equal(batch_decode(buf, len, payload, cap, &out, &id, why, sizeof(why)), 0);
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
	char why[128];

	(void)state;
	assert_int_equal(posix_memalign(&payload, 64, cap), 0);
	for (int level = 0; level <= 1; level++) {
		assert_int_equal(batch_encode(&d, 1, level, (void **)&buf, &len), 0);
		/* a flipped payload byte */
		buf[len / 2] ^= 0x40;
		assert_int_equal(batch_decode(buf, len, payload, cap, &out, NULL, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, "checksum mismatch (corrupt data)");
		buf[len / 2] ^= 0x40;
		/* truncated */
		assert_int_equal(batch_decode(buf, len - 10, payload, cap, &out, NULL, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "truncated"));
		assert_int_equal(batch_decode(buf, 20, payload, cap, &out, NULL, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "less than a batch header"));
		/* not a batch, wrong version */
		buf[0] = 'X';
		assert_int_equal(batch_decode(buf, len, payload, cap, &out, NULL, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, "not a batch (bad magic)");
		buf[0] = 'N';
		buf[4] = 9;
		assert_int_equal(batch_decode(buf, len, payload, cap, &out, NULL, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "unsupported batch version 9"));
		buf[4] = 1;
		/* too small an output buffer */
		assert_int_equal(batch_decode(buf, len, payload, 64, &out, NULL, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "exceeds"));
		assert_int_equal(batch_decode(buf, len, payload, cap, &out, NULL, why, sizeof(why)), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_plain),
		cmocka_unit_test(test_roundtrip_zstd),
		cmocka_unit_test(test_corruption),
		cmocka_unit_test(test_checksum),
	};

	return cmocka_run_group_tests_name("batch", tests, NULL, NULL);
}
