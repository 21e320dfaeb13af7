/* test_fsroot.c — reads relative to a root, and their failure paths. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fsroot.h"
#include "test_util.h"

struct fixture {
	char dir[64];
	struct fsroot *root;
};

static int setup(void **state)
{
	static struct fixture fx;

	if (!test_tmpdir(fx.dir, sizeof(fx.dir)))
		return -1;
	test_write(fx.dir, "sys/a", "always [madvise] never\n\n");
	test_write(fx.dir, "sys/empty", "");
	test_write(fx.dir, "proc/big", "0123456789abcdef");
	test_write(fx.dir, "d/zeta", "z");
	test_write(fx.dir, "d/alpha", "a");
	test_write(fx.dir, "d/mid", "m");
	fx.root = fsroot_open(fx.dir);
	*state = &fx;
	return fx.root ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	fsroot_free(fx->root);
	test_rmrf(fx->dir);
	return 0;
}

static void test_read(void **state)
{
	struct fixture *fx = *state;
	char buf[64];

	assert_int_equal(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)), 22);
	assert_string_equal(buf, "always [madvise] never");
	/* a leading '/' means the same: paths are always below the root */
	assert_int_equal(fsroot_read(fx->root, "/sys/a", buf, sizeof(buf)), 22);
	assert_int_equal(fsroot_read(fx->root, "sys/empty", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
}

static void test_read_errors(void **state)
{
	struct fixture *fx = *state;
	char buf[8];

	assert_int_equal(fsroot_read(fx->root, "sys/missing", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(fsroot_read(fx->root, "proc/big", buf, sizeof(buf)), -EFBIG);
	assert_string_equal(buf, "");
	assert_int_equal(fsroot_read(fx->root, "sys", buf, sizeof(buf)), -EISDIR);
	assert_false(fsroot_exists(fx->root, "sys/missing"));
	assert_true(fsroot_exists(fx->root, "sys/a"));
}

static int eintr_left;
static ssize_t read_eintr_then_real(int fd, void *buf, size_t count)
{
	if (eintr_left > 0) {
		eintr_left--;
		errno = EINTR;
		return -1;
	}
	return read(fd, buf, count);
}

static ssize_t read_eio(int fd, void *buf, size_t count)
{
	(void)fd, (void)buf, (void)count;
	errno = EIO;
	return -1;
}

static ssize_t read_in_pieces(int fd, void *buf, size_t count)
{
	return read(fd, buf, count > 3 ? 3 : count); /* like a /proc seq file */
}

static void test_syscall_faults(void **state)
{
	struct fixture *fx = *state;
	struct fsroot_syscalls saved = fsroot_sys;
	char buf[64];

	fsroot_sys.read = read_eintr_then_real;
	eintr_left = 3;
	assert_int_equal(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)), 22);
	assert_int_equal(eintr_left, 0);

	fsroot_sys.read = read_in_pieces;
	assert_int_equal(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)), 22);
	assert_string_equal(buf, "always [madvise] never");

	fsroot_sys.read = read_eio;
	assert_int_equal(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)), -EIO);
	assert_string_equal(buf, "");
	fsroot_sys = saved;
}

static void test_list_sorted(void **state)
{
	struct fixture *fx = *state;
	char **names = NULL;

	assert_int_equal(fsroot_list(fx->root, "d", &names), 3);
	assert_string_equal(names[0], "alpha");
	assert_string_equal(names[1], "mid");
	assert_string_equal(names[2], "zeta");
	assert_null(names[3]);
	fsroot_names_free(names);
	names = NULL;
	assert_int_equal(fsroot_list(fx->root, "nope", &names), -ENOENT);
	assert_null(names);
	fsroot_names_free(NULL);
}

static void test_display_and_open(void **state)
{
	struct fixture *fx = *state;
	struct fsroot *host;
	char buf[256], want[256];

	snprintf(want, sizeof(want), "%s/sys/a", fx->dir);
	assert_string_equal(fsroot_display(fx->root, "/sys/a", buf, sizeof(buf)), want);
	host = fsroot_open("/");
	assert_non_null(host);
	assert_true(fsroot_is_host(host));
	assert_false(fsroot_is_host(fx->root));
	assert_string_equal(fsroot_display(host, "proc/meminfo", buf, sizeof(buf)), "/proc/meminfo");
	fsroot_free(host);
	assert_null(fsroot_open("/nonexistent/nodetune"));
	assert_int_equal(errno, ENOENT);
	fsroot_free(NULL);
}

/* The sampler's open-file cache: the same answers as plain reads, fresh
 * content on every read, files closed when a sweep finds them unread, and a
 * thread that exits reads as gone. */
static void test_cache(void **state)
{
	struct fixture *fx = *state;
	struct fsroot *live = fsroot_open("/");
	char buf[8192], rel[64], stat1[512];

	assert_non_null(live);
	fsroot_cache_enable(fx->root, true);
	assert_int_equal(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)), 22);
	assert_string_equal(buf, "always [madvise] never");
	assert_int_equal(fsroot_cache_size(fx->root), 1);
	/* rewritten in place: the kept file reads the new content */
	test_write(fx->dir, "sys/a", "always madvise [never]\n");
	assert_int_equal(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)), 22);
	assert_string_equal(buf, "always madvise [never]");
	assert_int_equal(fsroot_read(fx->root, "proc/big", buf, 8), -EFBIG);
	assert_int_equal(fsroot_read(fx->root, "sys/nope", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(fsroot_cache_size(fx->root), 2);
	/* read in this round: kept; unread for a whole round: closed */
	fsroot_cache_sweep(fx->root);
	assert_int_equal(fsroot_cache_size(fx->root), 2);
	assert_int_equal(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)), 22);
	fsroot_cache_sweep(fx->root);
	assert_int_equal(fsroot_cache_size(fx->root), 1);
	/* many files come and go (tombstones, then a rehash): still right */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 600; i++) {
			assert_true(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)) == 22);
			snprintf(rel, sizeof(rel), "d/f%d-%d", round, i);
			test_write(fx->dir, rel, rel);
			assert_int_equal(fsroot_read(fx->root, rel, buf, sizeof(buf)), (int)strlen(rel));
			assert_string_equal(buf, rel);
		}
		/* at most 512 are kept open; the rest were read the plain way */
		assert_int_equal(fsroot_cache_size(fx->root), 512);
		fsroot_cache_sweep(fx->root);
		assert_int_equal(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)), 22);
		fsroot_cache_sweep(fx->root);
		assert_int_equal(fsroot_cache_size(fx->root), 1);
	}
	/* a live /proc file regenerates: this thread's CPU time moves */
	fsroot_cache_enable(live, true);
	snprintf(rel, sizeof(rel), "proc/self/task/%d/schedstat", (int)gettid());
	assert_true(fsroot_read(live, rel, stat1, sizeof(stat1)) > 0);
	for (volatile unsigned long spin = 0; spin < 30000000; spin++)
		;
	assert_true(fsroot_read(live, rel, buf, sizeof(buf)) > 0);
	assert_true(strtoull(buf, NULL, 10) > strtoull(stat1, NULL, 10));
	assert_int_equal(fsroot_cache_size(live), 1);
	fsroot_free(live);         /* closes what it kept */
	fsroot_cache_enable(fx->root, false);
	assert_int_equal(fsroot_cache_size(fx->root), 0);
	assert_int_equal(fsroot_read(fx->root, "sys/a", buf, sizeof(buf)), 22);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_syscall_faults),
		cmocka_unit_test(test_list_sorted),
		cmocka_unit_test(test_display_and_open),
		cmocka_unit_test(test_cache),
	};

	return cmocka_run_group_tests_name("fsroot", tests, setup, teardown);
}
