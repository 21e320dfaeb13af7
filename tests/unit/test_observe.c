/* test_observe.c — kernel counter readers on crafted trees. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "observe.h"
#include "test_util.h"

#define HAZ "tests/fixtures/sysroot/gpu-host-hazards"

static struct fsroot *open_rel(const char *rel)
{
	char path[4096];
	struct fsroot *r = fsroot_open(test_path(path, sizeof(path), rel));

	assert_non_null(r);
	return r;
}

static void stat_line(char *buf, size_t size, const uint64_t v[4][4])
{
	size_t n = (size_t)snprintf(buf, size, "cpu  1 2 3 4\n");

	for (int c = 0; c < 4; c++)
		n += (size_t)snprintf(buf + n, size - n, "cpu%d %llu 0 %llu %llu 0 0 0 0\n", c,
				      (unsigned long long)v[c][0], (unsigned long long)v[c][1], (unsigned long long)v[c][2]);
}

static void test_read_stat(void **state)
{
	struct fsroot *r = open_rel(HAZ);
	struct obs_stat *s = calloc(2, sizeof(*s));
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(obs_read_stat(r, "proc/stat.series/003", &s[0], &err), 0);
	assert_int_equal(obs_read_stat(r, "proc/stat.series/004", &s[1], &err), 0);
	assert_int_equal(s[0].n_cpus, 4);
	assert_true(obs_sys_percent(&s[0], &s[1], 3) >= 99.9);   /* 7 system + 3 softirq of 10 */
	assert_true(fabs(obs_sys_percent(&s[0], &s[1], 0) - 10.0) < 1e-9);
	assert_true(obs_sys_percent(&s[0], &s[0], 0) < 0);      /* no time passed */
	assert_int_equal(obs_read_stat(r, "proc/nope", &s[0], &err), -ENOENT);
	assert_int_equal(obs_read_stat(r, "proc/cgroups", &s[0], &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no 'cpuN' lines"));
	free(s);
	fsroot_free(r);
}

static void test_longest_sys_run(void **state)
{
	struct obs_stat *s = calloc(12, sizeof(*s));
	uint64_t v[4][4] = { { 0 } };
	char dir[64], buf[512], name[32];
	struct fsroot *r;
	struct nt_err err = { 0 };
	double avg = 0;
	int cpu = -1;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	/* CPU 2 in the kernel for intervals 3..9 (7 of them), the rest idle */
	for (int i = 0; i < 12; i++) {
		for (int c = 0; c < 4; c++) {
			int busy = c == 2 && i >= 3 && i <= 9;

			v[c][0] += i ? (busy ? 0 : 1) : 0;
			v[c][1] += i ? (busy ? 10 : 0) : 0;
			v[c][2] += i ? (busy ? 0 : 9) : 0;
		}
		stat_line(buf, sizeof(buf), v);
		snprintf(name, sizeof(name), "s%02d", i);
		test_write(dir, name, buf);
	}
	r = fsroot_open(dir);
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "s%02d", i);
		assert_int_equal(obs_read_stat(r, name, &s[i], &err), 0);
	}
	assert_int_equal(obs_longest_sys_run(s, 12, 95.0, &cpu, &avg), 7);
	assert_int_equal(cpu, 2);
	assert_true(fabs(avg - 25.0) < 1e-9);        /* 100 on one CPU, 0 on three */
	assert_int_equal(obs_longest_sys_run(s, 3, 95.0, &cpu, &avg), 0);
	fsroot_free(r);
	free(s);
	test_rmrf(dir);
}

static void test_vmstat_memcg_throttling(void **state)
{
	struct fsroot *r = open_rel(HAZ);
	long kernel, live;
	char path[256];
	uint64_t thr, per;

	(void)state;
	assert_int_equal(obs_vmstat(r, "compact_stall"), 45122);
	assert_int_equal(obs_vmstat(r, "compact"), -1);       /* whole keys only */
	assert_int_equal(obs_vmstat(r, "no_such_counter"), -1);
	obs_memcg(r, &kernel, &live);
	assert_int_equal(kernel, 70213);
	assert_int_equal(live, 4);
	assert_true(fabs(obs_worst_throttling(r, path, sizeof(path), &thr, &per) - 0.41234) < 1e-9);
	assert_string_equal(path, "sys/fs/cgroup/cpu/kubepods/cpu.stat");
	assert_int_equal(thr, 41234);
	assert_int_equal(per, 100000);
	fsroot_free(r);

	r = open_rel("tests/fixtures/sysroot/gpu-host-tuned");
	obs_memcg(r, &kernel, &live);
	assert_int_equal(kernel, -1);
	assert_int_equal(obs_worst_throttling(r, path, sizeof(path), &thr, &per), 0);
	fsroot_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_stat),
		cmocka_unit_test(test_longest_sys_run),
		cmocka_unit_test(test_vmstat_memcg_throttling),
	};

	return cmocka_run_group_tests_name("observe", tests, NULL, NULL);
}
