/* test_data.c — the synthetic generator and shard files. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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
	char dir[64], why[512];
	struct shard_reader *r;
	struct batch_data got = alloc_batch(300), want = alloc_batch(300);

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	/* 1000 samples in chunks of 64, 4 chunks a shard: 4 shards, last partial */
	assert_int_equal(data_write_shards(dir, &spec, 1000, 64, 4, 1, why, sizeof(why)), 0);
	r = shard_open(dir, &spec, why, sizeof(why));
	if (!r)
		fail_msg("%s", why);
	assert_int_equal(shard_samples(r), 1000);
	assert_int_equal(shard_read(r, 200, &got, why, sizeof(why)), 0);  /* spans shards */
	data_synth_batch(&spec, 200, &want);
	assert_memory_equal(got.dense, want.dense, 300 * 13 * 4);
	assert_memory_equal(got.sparse, want.sparse, 300 * 104 * 4);
	assert_memory_equal(got.label, want.label, 300 * 4);
	/* reading past the end wraps around (epochs) */
	assert_int_equal(shard_read(r, 900, &got, why, sizeof(why)), 0);
	data_synth_batch(&spec, 0, &want);
	assert_memory_equal(got.dense + 100 * 13, want.dense, 200 * 13 * 4);
	shard_close(r);
	free_batch(&got);
	free_batch(&want);
	test_rmrf(dir);
}

static void test_corrupt_and_truncated_shards(void **state)
{
	char dir[64], why[512], path[128], cmd[300];
	struct shard_reader *r;
	struct batch_data got = alloc_batch(100);
	struct data_spec other = spec;
	int fd;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(data_write_shards(dir, &spec, 512, 64, 4, 0, why, sizeof(why)), 0);
	/* flip a byte inside shard 1's first chunk */
	snprintf(path, sizeof(path), "%s/shard-00001.nts", dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "\xff\xff", 2, 5000), 2);
	close(fd);
	r = shard_open(dir, &spec, why, sizeof(why));
	assert_non_null(r);
	assert_int_equal(shard_read(r, 0, &got, why, sizeof(why)), 0);      /* shard 0 is fine */
	assert_int_equal(shard_read(r, 256, &got, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "shard-00001.nts: offset 64: chunk 0: checksum mismatch"));
	shard_close(r);

	/* shard 0 cut short */
	snprintf(cmd, sizeof(cmd), "truncate -s 3000 '%s/shard-00000.nts'", dir);
	assert_int_equal(system(cmd), 0);
	r = shard_open(dir, &spec, why, sizeof(why));
	assert_int_equal(shard_read(r, 0, &got, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "shard-00000.nts: offset"));
	assert_non_null(strstr(why, "truncated"));
	shard_close(r);

	/* a data set for another model, a missing manifest */
	other.dense_width = 16;
	assert_null(shard_open(dir, &other, why, sizeof(why)));
	assert_non_null(strstr(why, "does not fit this model"));
	snprintf(cmd, sizeof(cmd), "%s/manifest", dir);
	unlink(cmd);
	assert_null(shard_open(dir, &spec, why, sizeof(why)));
	assert_non_null(strstr(why, "manifest: No such file"));
	free_batch(&got);
	test_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synth_deterministic_per_sample),
		cmocka_unit_test(test_shards_roundtrip),
		cmocka_unit_test(test_corrupt_and_truncated_shards),
	};

	return cmocka_run_group_tests_name("data", tests, NULL, NULL);
}
