/* SPDX-License-Identifier: MIT */
/* test_procfs.c — the one parser of /proc/interrupts (and softirqs), of
 * /proc/PID/stat and of /proc/PID/cgroup: real lines, the tricky ones (a comm with spaces and ')',
 * offline CPUs, MIS with one count), every refusal, and the live host. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sched.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe/procfs.h"
#include "observe/procfs_test.h"
#include "test_util.h"

static void test_irqtab_parse(void **state)
{
	const char *ok = "   CPU0 CPU2\n 7: 1 2 chip 7-edge eth0\nMIS: 3\n\nNMI: 4 5 Non-maskable interrupts";
	struct procfs_irqtab t;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(procfs_irqtab_parse(ok, strlen(ok), &t, &err), 0);
	assert_int_equal(t.n_cols, 2);
	assert_int_equal(t.col_cpu[1], 2);
	assert_int_equal(t.n_rows, 3);
	assert_string_equal(t.rows[0].name, "eth0");
	assert_int_equal(t.counts[1], 2);
	assert_int_equal(t.counts[3], 0);            /* MIS: one count only */
	assert_string_equal(t.rows[2].name, "Non-maskable interrupts");
	assert_true(procfs_irqtab_numbered(&t, 0));
	assert_false(procfs_irqtab_numbered(&t, 1));
	assert_int_equal(procfs_irqtab_row_sum(&t, 2), 9);
	procfs_irqtab_free(&t);
	procfs_irqtab_free(&t);                      /* a zeroed table: no-op */
	procfs_irqtab_free(NULL);
	assert_int_equal(procfs_irqtab_parse("CPU0\n1 2 3\n", 11, &t, &err), -EINVAL);
	assert_string_equal(err.msg, "line 2: expected 'LABEL: count ...'");
	assert_int_equal(procfs_irqtab_parse("HI: 1\n", 6, &t, &err), -EINVAL);
	assert_string_equal(err.msg, "line 1: expected a header of 'CPUn' columns");
	assert_int_equal(procfs_irqtab_parse("CPUx\n", 5, &t, &err), -EINVAL);
	assert_int_equal(procfs_irqtab_parse("CPU4096\n", 8, &t, &err), -EINVAL);
	/* a device line without its counts (observe's loose parser refused it too) */
	assert_int_equal(procfs_irqtab_parse("CPU0 CPU1\n  1:  garbage\n", 24, &t, &err), -EINVAL);
	assert_string_equal(err.msg, "line 2: expected a count per CPU after a numbered 'IRQ:'");
	assert_int_equal(procfs_irqtab_parse("CPU0\n1: 1\0 2\n", 12, &t, &err), -EINVAL);
	assert_int_equal(procfs_irqtab_parse("", 0, &t, NULL), -EINVAL);
}

/* The file through a root: the message names it and the line. */
static void test_irqtab_read(void **state)
{
	char dir[64];
	struct procfs_irqtab t;
	struct nt_err err = { 0 };
	struct fsroot *root;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(test_write(dir, "proc/interrupts", "   CPU0\n  0:  5  IO-APIC 2-edge timer\nTLB:  9  TLB shootdowns\n"), 0);
	assert_int_equal(test_write(dir, "proc/softirqs", "   CPU0\nHI: 1\n x\n"), 0);
	root = fsroot_open(dir);
	assert_non_null(root);
	assert_int_equal(procfs_irqtab_read(root, "proc/interrupts", &t, &err), 0);
	assert_int_equal(t.n_rows, 2);
	assert_string_equal(t.rows[1].name, "TLB shootdowns");
	procfs_irqtab_free(&t);
	assert_int_equal(procfs_irqtab_read(root, "proc/softirqs", &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/proc/softirqs:3: expected 'LABEL: count ...'"));
	assert_int_equal(t.n_rows, 0);
	assert_int_equal(procfs_irqtab_read(root, "proc/nothere", &t, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/proc/nothere: "));
	fsroot_free(root);
	test_rmrf(dir);
}

static void test_pid_stat_parse(void **state)
{
	/* a real line (5.10), with a comm of spaces and ')' */
	const char *line = "4242 (a) b (c)) R 1 4242 4242 0 -1 4194560 151 0 0 0 17 3 0 0 20 -5 1 0 "
			   "123456 9875456 470 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 3 0 0 0 0 0";
	const char *rt = "7 (rcu_preempt) I 2 0 0 0 -1 2129984 0 0 0 0 0 9 0 0 -2 0 1 0 11 0 0 "
			 "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 1 1 0 0 0";
	struct procfs_pid_stat st;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(procfs_pid_stat_parse(line, strlen(line), &st, &err), 0);
	assert_int_equal(st.pid, 4242);
	assert_string_equal(st.comm, "a) b (c)");
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.utime, 17);
	assert_int_equal(st.stime, 3);
	assert_int_equal(st.ticks, 20);
	assert_int_equal(st.nice, -5);
	assert_int_equal(st.starttime, 123456);
	assert_int_equal(st.cpu, 3);
	assert_int_equal(st.policy, SCHED_OTHER);
	assert_int_equal(st.priority, -5);
	assert_false(st.kthread);
	assert_false(st.zombie);
	/* a kernel thread under SCHED_FIFO 1: the RT priority is its priority */
	assert_int_equal(procfs_pid_stat_parse(rt, strlen(rt), &st, &err), 0);
	assert_true(st.kthread);
	assert_int_equal(st.policy, SCHED_FIFO);
	assert_int_equal(st.priority, 1);
	assert_int_equal(st.cpu, 1);
	/* refusals, each leaving st as it was */
	st.pid = 99;
	assert_int_equal(procfs_pid_stat_parse("12 (x) R 1 2 3", 14, &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "expected at least 41 fields"));
	assert_int_equal(procfs_pid_stat_parse("12 x R 1", 8, &st, &err), -EINVAL);
	assert_string_equal(err.msg, "expected 'PID (comm) STATE ...'");
	assert_int_equal(procfs_pid_stat_parse("x (y) R 1", 9, &st, &err), -EINVAL);
	assert_string_equal(err.msg, "expected a pid before '(comm)'");
	assert_int_equal(procfs_pid_stat_parse("1 (y) R 1 a", 11, &st, &err), -EINVAL);
	assert_string_equal(err.msg, "field 5: expected a number");
	assert_int_equal(procfs_pid_stat_parse("1 (y)", 5, &st, &err), -EINVAL);
	assert_int_equal(st.pid, 99);
}

/* The processor field out of range, and this very process on the host. */
static void test_pid_stat_live(void **state)
{
	char line[512], rel[64];
	struct procfs_pid_stat st;
	struct nt_err err = { 0 };
	struct fsroot *root = fsroot_open("/");

	(void)state;
	/* fields 4 to 38 zero, processor (39) 4096, rt_priority, policy */
	snprintf(line, sizeof(line), "1 (x) S%s 4096 0 0",
		 " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0");
	assert_int_equal(procfs_pid_stat_parse(line, strlen(line), &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "(processor): 4096 is not a CPU"));
	assert_non_null(root);
	snprintf(rel, sizeof(rel), "proc/%d/stat", (int)getpid());
	assert_int_equal(procfs_pid_stat_read(root, rel, &st, &err), 0);
	assert_int_equal(st.pid, (int)getpid());
	assert_int_equal(st.ppid, (int)getppid());
	assert_true(st.cpu >= 0 && st.cpu < sysconf(_SC_NPROCESSORS_CONF));
	assert_int_equal(procfs_pid_stat_read(root, "proc/0/stat", &st, &err), -ENOENT);
	fsroot_free(root);
}

/* proc/PID/cgroup as captured: a hybrid host (this one: v1 controllers,
 * a named systemd hierarchy, the cgroup2 line last), a pure v2 host, then
 * every refusal, each leaving the output as it was. */
static void test_cgroup_parse(void **state)
{
	static const char hybrid[] = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/a56404e6978ecf04b8e0234ccef55f65\n"
				     "2:cpuacct:/\n1:cpu,cpuacct:/wrap.slice/job 1\n0::/\n";
	static const char v2[] = "0::/system.slice/nodetune-ab/123-A-1";
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "", "expected at least one line" },
		{ "\n", "expected at least one line" },
		{ "0::/\n\n", "line 2: expected 'ID:CONTROLLERS:PATH'" },
		{ "0:/", "line 1: expected 'ID:CONTROLLERS:PATH'" },
		{ "x::/", "line 1: expected a decimal hierarchy ID" },
		{ "-1::/", "line 1: expected a decimal hierarchy ID" },
		{ "99999999999::/", "line 1: expected a decimal hierarchy ID" },
		{ "0:cpu:/", "line 1: expected ID 0 with no controllers" },
		{ "3::/", "line 1: expected ID 0 with no controllers" },
		{ "3:cpu,,memory:/", "line 1: expected ID 0 with no controllers" },
		{ "3:cp u:/", "line 1: expected ID 0 with no controllers" },
		{ "0::x", "line 1: expected an absolute PATH" },
		{ "0::", "line 1: expected an absolute PATH" },
		{ "0::/a//b", "line 1: expected a PATH without empty components" },
		{ "0::/a/", "line 1: expected a PATH without empty components" },
		{ "0::/../../x", "line 1: expected a PATH without '.' or '..'" },
		{ "0::/a/./b", "line 1: expected a PATH without '.' or '..'" },
		{ "0::/a\tb", "line 1: expected a PATH without control characters" },
		{ "0::/\n1:cpu:/\n0::/x", "line 3: expected each hierarchy ID once" },
	};
	struct procfs_cgroup c, keep;
	const struct procfs_cgroup_line *l;
	struct nt_err err = { 0 };
	char many[2048];
	size_t n = 0;

	(void)state;
	assert_int_equal(procfs_cgroup_parse(hybrid, strlen(hybrid), &c, &err), 0);
	assert_int_equal(c.n, 6);
	assert_int_equal(c.line[0].id, 9);
	assert_string_equal(c.line[0].controllers, "name=systemd");
	assert_string_equal(c.line[2].path, "/process_api/a56404e6978ecf04b8e0234ccef55f65");
	l = procfs_cgroup_find(&c, "cpu");
	assert_non_null(l);
	assert_int_equal(l->id, 1);                 /* not 2:cpuacct, though it starts with "cpu" */
	assert_string_equal(l->path, "/wrap.slice/job 1");
	assert_int_equal(procfs_cgroup_find(&c, "cpuacct")->id, 2);
	assert_string_equal(procfs_cgroup_find(&c, NULL)->path, "/");
	assert_null(procfs_cgroup_find(&c, "perf_event"));
	assert_int_equal(procfs_cgroup_parse(v2, strlen(v2), &c, &err), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.line[0].id, 0);
	assert_string_equal(c.line[0].controllers, "");
	assert_string_equal(c.line[0].path, "/system.slice/nodetune-ab/123-A-1");
	assert_null(procfs_cgroup_find(&c, "cpu"));
	keep = c;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(procfs_cgroup_parse(bad[i].text, strlen(bad[i].text), &c, &err), -EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("'%s': got '%s', expected '%s'", bad[i].text, err.msg, bad[i].msg);
		assert_memory_equal(&c, &keep, sizeof(c));
	}
	assert_int_equal(procfs_cgroup_parse("0::/\0", 5, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "expected text, found a NUL byte");
	for (int i = 1; i <= 33; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "%d:c%d:/\n", i, i);
	assert_int_equal(procfs_cgroup_parse(many, n, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "line 33: expected at most 32 lines");
}

/* Read below a captured root (the message names the file and the line),
 * a gone pid, and this process on the host. */
static void test_cgroup_read(void **state)
{
	char dir[64];
	struct procfs_cgroup c;
	struct nt_err err = { 0 };
	struct fsroot *root;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(test_write(dir, "proc/7/cgroup", "0::/\n1:cpu:/a/../b\n"), 0);
	assert_int_equal(test_write(dir, "proc/8/cgroup", "1:cpu:/a\n0::/b\n"), 0);
	root = fsroot_open(dir);
	assert_non_null(root);
	assert_int_equal(procfs_cgroup_read(root, 7, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/proc/7/cgroup:2: expected a PATH without '.' or '..'"));
	assert_int_equal(procfs_cgroup_read(root, 8, &c, &err), 0);
	assert_string_equal(procfs_cgroup_find(&c, NULL)->path, "/b");
	assert_int_equal(procfs_cgroup_read(root, 9, &c, &err), -ENOENT);
	fsroot_free(root);
	test_rmrf(dir);
	root = fsroot_open("/");
	assert_non_null(root);
	assert_int_equal(procfs_cgroup_read(root, (int)getpid(), &c, &err), 0);
	assert_true(c.n >= 1);
	fsroot_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_irqtab_parse),
		cmocka_unit_test(test_irqtab_read),
		cmocka_unit_test(test_pid_stat_parse),
		cmocka_unit_test(test_pid_stat_live),
		cmocka_unit_test(test_cgroup_parse),
		cmocka_unit_test(test_cgroup_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
