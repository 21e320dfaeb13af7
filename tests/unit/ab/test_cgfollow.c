/* SPDX-License-Identifier: MIT */
/* test_cgfollow.c — following a job's processes into the cgroups they move
 * to, on trees the test constructs (not captures: proc/PID/stat lines with
 * only state, parent and start time filled, cpu.stat and memory.events
 * typed in, in the kernel's formats): a pure cgroup2 host (cpu.max,
 * memory.events) and a hybrid one (v1 cpu: cfs_quota_us, throttled_time);
 * descendants through forks, a pid recycled by an unrelated process, a
 * group and its ancestors read at first sight and at the end. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ab/cgfollow.h"
#include "ab/cgfollow_test.h"
#include "test_util.h"

/* proc/PID/stat of a process: its state, parent and start time (field 22). */
static void put_stat_in(const char *dir, int pid, const char *comm, char state, int ppid, unsigned long long start)
{
	char rel[64], line[512];

	snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
	snprintf(line, sizeof(line), "%d (%s) %c %d 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 %llu 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		 pid, comm, state, ppid, start);
	assert_int_equal(test_write(dir, rel, line), 0);
}

static void put_stat(const char *dir, int pid, const char *comm, int ppid, unsigned long long start)
{
	put_stat_in(dir, pid, comm, 'S', ppid, start);
}

static void put_cgroup(const char *dir, int pid, const char *text)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "proc/%d/cgroup", pid);
	assert_int_equal(test_write(dir, rel, text), 0);
}

static const struct cgfollow_group *find(const struct cgfollow_result *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->group[i].name, name))
			return &r->group[i];
	return NULL;
}

/* cgroup2: the job (100) in its trial group forks a wrapper (101) that
 * moved to wrap.slice, whose child (102) is there too; an unrelated 300
 * sits in other.slice.  After the first tick 100 exits and its pid is
 * taken by an unrelated process in other.slice: not the job's. */
static void test_follow_v2(void **state)
{
	char dir[64];
	struct fsroot *root;
	struct cgfollow *f;
	struct cgfollow_result *r = malloc(sizeof(*r));
	const struct cgfollow_group *g;
	struct nt_err err = { 0 };

	(void)state;
	assert_non_null(r);
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(test_write(dir, "proc/self/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n"), 0);
	put_stat(dir, 100, "sh", 1, 500);
	put_cgroup(dir, 100, "0::/nodetune-ab/1-A\n");
	put_stat(dir, 101, "wrap", 100, 600);
	put_cgroup(dir, 101, "0::/wrap.slice\n");
	put_stat(dir, 102, "job", 101, 700);
	put_cgroup(dir, 102, "0::/wrap.slice\n");
	put_stat(dir, 300, "other", 1, 50);
	put_cgroup(dir, 300, "0::/other.slice\n");
	assert_int_equal(test_write(dir, "sys/fs/cgroup/cpu.stat", "usage_usec 9\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/nodetune-ab/1-A/cpu.stat",
				    "usage_usec 1\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/nodetune-ab/cpu.stat", "usage_usec 1\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/wrap.slice/cpu.stat",
				    "usage_usec 100\nnr_periods 10\nnr_throttled 2\nthrottled_usec 5000\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/wrap.slice/cpu.max", "50000 100000\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/wrap.slice/memory.events",
				    "low 0\nhigh 1\nmax 0\noom 0\noom_kill 0\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/other.slice/cpu.stat",
				    "usage_usec 100\nnr_periods 10\nnr_throttled 2\nthrottled_usec 5000\n"), 0);
	root = fsroot_open(dir);
	assert_non_null(root);

	assert_null(cgfollow_start(root, 0, &err));
	assert_int_equal(err.code, -EINVAL);
	f = cgfollow_start(root, 100, &err);
	assert_non_null(f);
	/* the job ran: wrap.slice throttled, 100's pid recycled */
	assert_int_equal(test_write(dir, "sys/fs/cgroup/wrap.slice/cpu.stat",
				    "usage_usec 900\nnr_periods 500\nnr_throttled 412\nthrottled_usec 8105000\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/wrap.slice/memory.events",
				    "low 0\nhigh 4\nmax 0\noom 0\noom_kill 1\n"), 0);
	put_stat(dir, 100, "other", 1, 900);
	put_cgroup(dir, 100, "0::/other.slice\n");
	put_stat(dir, 103, "late", 102, 800);        /* a grandchild born after the start */
	put_cgroup(dir, 103, "0::/wrap.slice/inner\n");
	assert_int_equal(test_write(dir, "sys/fs/cgroup/wrap.slice/inner/cpu.stat", "usage_usec 1\n"), 0);
	assert_int_equal(cgfollow_tick(f), 0);
	assert_int_equal(cgfollow_stop(f, r, &err), 0);

	assert_int_equal(r->procs, 4);                /* 100 (the first), 101, 102, 103 */
	assert_null(find(r, "/sys/fs/cgroup/other.slice"));
	g = find(r, "/sys/fs/cgroup/wrap.slice");
	assert_non_null(g);
	assert_true(g->job);
	assert_string_equal(g->after.quota, "50000 100000");
	assert_int_equal(cgfollow_group_delta(g, TCG_CPU_NR_THROTTLED), 410);
	assert_int_equal(cgfollow_group_delta(g, TCG_CPU_THROTTLED_USEC), 8100000);
	assert_int_equal(cgfollow_group_delta(g, TCG_MEM_HIGH), 3);
	assert_int_equal(cgfollow_group_delta(g, TCG_MEM_OOM_KILL), 1);
	assert_true(cgfollow_group_limited(g));
	g = find(r, "/sys/fs/cgroup/wrap.slice/inner");
	assert_non_null(g);
	assert_true(g->job);
	assert_false(cgfollow_group_limited(g));
	g = find(r, "/sys/fs/cgroup/nodetune-ab/1-A");
	assert_non_null(g);
	assert_true(g->job);
	assert_false(cgfollow_group_limited(g));
	g = find(r, "/sys/fs/cgroup/nodetune-ab");   /* an ancestor only */
	assert_non_null(g);
	assert_false(g->job);
	g = find(r, "/sys/fs/cgroup");
	assert_non_null(g);
	assert_false(g->job);
	assert_int_equal(r->n, 5);
	cgfollow_result_free(r);
	fsroot_free(root);
	test_rmrf(dir);
	free(r);
}

/* Hybrid: v1 cpu (the quota and throttled_time, ns) beside a cgroup2 mount
 * without controllers; the group is shown by its v1 cpu directory.  A
 * child that has exited when first seen (a zombie) reads as in the root
 * cgroups: not where the job runs. */
static void test_follow_v1(void **state)
{
	char dir[64];
	struct fsroot *root;
	struct cgfollow *f;
	struct cgfollow_result *r = malloc(sizeof(*r));
	const struct cgfollow_group *g;
	struct nt_err err = { 0 };

	(void)state;
	assert_non_null(r);
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(test_write(dir, "proc/self/mounts",
				    "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
				    "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"), 0);
	put_stat(dir, 10, "sh", 1, 5);
	put_cgroup(dir, 10, "2:cpuacct:/\n1:cpu:/wrap\n0::/\n");
	assert_int_equal(test_write(dir, "sys/fs/cgroup/cpu/wrap/cpu.stat",
				    "nr_periods 10\nnr_throttled 3\nthrottled_time 7000000\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/cpu/wrap/cpu.cfs_quota_us", "50000\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/cpu/wrap/cpu.cfs_period_us", "100000\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/cpu/cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/unified/cpu.pressure",
				    "some avg10=0.00 avg60=0.00 avg300=0.00 total=10\n"), 0);
	root = fsroot_open(dir);
	assert_non_null(root);
	f = cgfollow_start(root, 10, &err);
	assert_non_null(f);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/cpu/wrap/cpu.stat",
				    "nr_periods 90\nnr_throttled 83\nthrottled_time 2007000000\n"), 0);
	put_stat_in(dir, 11, "sh", 'Z', 10, 6);
	put_cgroup(dir, 11, "2:cpuacct:/\n1:cpu:/\n0::/\n");
	assert_int_equal(cgfollow_tick(f), 0);
	assert_int_equal(cgfollow_stop(f, r, &err), 0);
	g = find(r, "/sys/fs/cgroup/cpu/wrap");
	assert_non_null(g);
	assert_true(g->job);
	assert_string_equal(g->after.quota, "cfs_quota_us 50000 period 100000");
	assert_int_equal(cgfollow_group_delta(g, TCG_CPU_NR_THROTTLED), 80);
	assert_int_equal(cgfollow_group_delta(g, TCG_CPU_THROTTLED_USEC), 2000000);
	assert_int_equal(r->n, 2);                    /* wrap (with unified's root) and the root */
	g = find(r, "/sys/fs/cgroup/unified");         /* the root, by its first directory */
	assert_non_null(g);
	assert_false(g->job);                         /* an ancestor only: the zombie's read is no place */
	cgfollow_result_free(r);
	assert_int_equal(cgfollow_stop(NULL, r, &err), -EINVAL);
	assert_int_equal(r->n, 0);
	fsroot_free(root);
	test_rmrf(dir);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_follow_v2),
		cmocka_unit_test(test_follow_v1),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
