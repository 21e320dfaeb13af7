/* SPDX-License-Identifier: MIT */
/* test_fsroot.c — reads relative to a root, and their failure paths; writes
 * that stay beneath the root, with openat2 and with the walk used without it. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/fsroot.h"
#include "base/fsroot_test.h"
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

/* ---- opening beneath the root ------------------------------------------ */

static int enosys_calls;
static long openat2_enosys(int dirfd, const char *path, struct open_how *how, size_t size)
{
	enosys_calls++;
	(void)dirfd;
	(void)path;
	(void)how;
	(void)size;
	errno = ENOSYS;
	return -1;
}

/* D/root is the root, D/outside/passwd a file beside it. */
static void beneath_tree(char *dir, size_t size, struct fsroot **ret)
{
	char path[256];

	assert_non_null(test_tmpdir(dir, size));
	test_write(dir, "outside/passwd", "root:x:0:0\n");
	test_write(dir, "root/sys/kernel/a", "0\n");
	test_write(dir, "root/sys/devices/system/cpu/cpufreq/policy0/scaling_governor", "powersave\n");
	test_write(dir, "root/proc/sys/vm/swappiness", "60\n");
#define LINK(target, rel)                                                   \
	do {                                                                \
		snprintf(path, sizeof(path), "%s/root/%s", dir, rel);       \
		test_mkdirs(path);                                          \
		assert_int_equal(symlink(target, path), 0);                 \
	} while (0)
	/* as the live sysfs has them: relative, mid-path, staying beneath */
	LINK("../cpufreq/policy0", "sys/devices/system/cpu/cpu0/cpufreq");
	LINK("a", "sys/kernel/same_dir");
	LINK("../../proc/sys", "sys/kernel/procsys");
	/* leading out */
	LINK("../../../outside/passwd", "sys/kernel/climb");
	snprintf(path, sizeof(path), "%s/outside/passwd", dir);
	LINK(path, "sys/kernel/absolute");
	snprintf(path, sizeof(path), "%s/outside", dir);
	LINK(path, "sys/kernel/absdir");
	LINK("../../..", "sys/kernel/up");
	LINK("loop", "sys/kernel/loop");
	LINK("/proc/self/fd/0", "sys/kernel/magic");
#undef LINK
	snprintf(path, sizeof(path), "%s/root", dir);
	*ret = fsroot_open(path);
	assert_non_null(*ret);
}

static void check_beneath(struct fsroot *root, const char *outside)
{
	static const struct {
		const char *rel;
		int want;
	} cases[] = {
		{ "sys/kernel/a", 0 },
		{ "/sys/kernel/a", 0 },                       /* leading '/' skipped, as everywhere */
		{ "sys/kernel/same_dir", 0 },
		{ "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", 0 },
		{ "sys/kernel/procsys/vm/swappiness", 0 },
		{ "sys/kernel/../kernel/a", 0 },              /* ".." that stays beneath */
		{ "sys/kernel/climb", -EXDEV },
		{ "sys/kernel/absolute", -EXDEV },
		{ "sys/kernel/absdir/passwd", -EXDEV },
		{ "sys/kernel/up/outside/passwd", -EXDEV },
		{ "../outside/passwd", -EXDEV },
		{ "sys/../../outside/passwd", -EXDEV },
		{ "sys/kernel/loop", -ELOOP },
		{ "sys/kernel/missing", -ENOENT },
		{ "sys/kernel/a/b", -ENOTDIR },
		{ "", -EINVAL },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = fsroot_open_beneath(root, cases[i].rel, O_RDONLY);

		if ((fd >= 0 ? 0 : fd) != cases[i].want)
			fail_msg("%s: got %d, want %d", cases[i].rel, fd >= 0 ? 0 : fd, cases[i].want);
		if (fd >= 0)
			close(fd);
		assert_int_equal(fsroot_check_beneath(root, cases[i].rel), cases[i].want);
	}
	/* /proc/self/fd/0 is a magic link: refused, whatever it points at */
	assert_true(fsroot_open_beneath(root, "sys/kernel/magic", O_RDONLY) < 0);
	/* writes go beneath: one through a symlink that stays, none out */
	assert_int_equal(fsroot_write(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance"), 0);
	assert_int_equal(fsroot_read(root, "sys/devices/system/cpu/cpufreq/policy0/scaling_governor", buf, sizeof(buf)),
			 11);
	assert_int_equal(fsroot_write(root, "sys/kernel/climb", "pwned"), -EXDEV);
	assert_int_equal(fsroot_write_exact(root, "sys/kernel/absolute", "pwned\n"), -EXDEV);
	assert_int_equal(fsroot_write(root, "../outside/passwd", "pwned"), -EXDEV);
	assert_int_equal(fsroot_write(root, "sys/kernel/up/outside/passwd", "pwned"), -EXDEV);
	/* the file outside is as it was */
	{
		FILE *f = fopen(outside, "r");

		assert_non_null(f);
		assert_non_null(fgets(buf, sizeof(buf), f));
		fclose(f);
		assert_string_equal(buf, "root:x:0:0\n");
	}
}

static void test_open_beneath(void **state)
{
	struct fsroot_syscalls saved = fsroot_sys;
	struct fsroot *root;
	char dir[64], outside[128];

	(void)state;
	beneath_tree(dir, sizeof(dir), &root);
	snprintf(outside, sizeof(outside), "%s/outside/passwd", dir);
	check_beneath(root, outside);            /* openat2 */
	fsroot_sys.openat2 = openat2_enosys;     /* a kernel before 5.6 */
	check_beneath(root, outside);            /* the component walk */
	fsroot_sys = saved;
	assert_true(enosys_calls > 20);
	fsroot_free(root);
	test_rmrf(dir);
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
		cmocka_unit_test(test_open_beneath),
	};

	return cmocka_run_group_tests_name("fsroot", tests, setup, teardown);
}
