/* SPDX-License-Identifier: MIT */
/* test_obs.c — kernel counter readers on crafted trees. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/wait.h>

#include "observe/obs.h"
#include "observe/obs_test.h"
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


#define KVM "tests/fixtures/sysroot/debian12-kvm-2cpu"

/* A real capture: nodetune-harness with 6 threads on this 2-CPU VM, about
 * 15 s into a run (the sums were taken with awk over the captured files:
 * fields 14, 15 and 39 of each task/N/stat, the ctxt_switches lines of
 * task/N/status, the first two fields of task/N/schedstat). */
static void test_read_proc(void **state)
{
	struct fsroot *r = open_rel(KVM);
	struct obs_proc p;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(obs_read_proc(r, 11584, &p, &err), 0);
	assert_int_equal(p.n_threads, 6);
	assert_int_equal(p.utime, 1489);
	assert_int_equal(p.stime, 702);
	assert_int_equal(p.vol_switches, 103139);
	assert_int_equal(p.invol_switches, 196537);
	assert_true(p.run_ns == 22016929109ull);
	assert_true(p.wait_ns == 9500700990ull);
	assert_int_equal(p.n_cpus_seen, 2);
	assert_int_equal(obs_read_proc(r, 1, &p, &err), -ENOENT);
	fsroot_free(r);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	test_mkdirs(path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_proc_bad_and_comm(void **state)
{
	char dir[] = "/tmp/nodetune-test-observe-XXXXXX", cmd[4200];
	struct fsroot *r;
	struct obs_proc p;
	struct nt_err err = { 0 };

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* a comm with spaces and ')' is skipped whole */
	put(dir, "proc/7/task/7/stat", "7 (a) b (c)) S 1 7 7 0 -1 4194304 0 0 0 0 11 22 0 0 20 0 1 0 5 100 10 "
				       "1 1 1 1 1 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
	put(dir, "proc/7/task/8/stat", "8 (w) S 1 7 7 0 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0 5 100 10 "
				       "1 1 1 1 1 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n");
	put(dir, "proc/7/task/8/status", "Name:\tw\nvoluntary_ctxt_switches:\t4\nnonvoluntary_ctxt_switches:\t9\n");
	r = fsroot_open(dir);
	assert_non_null(r);
	assert_int_equal(obs_read_proc(r, 7, &p, &err), 0);
	assert_int_equal(p.n_threads, 2);
	assert_int_equal(p.utime, 16);
	assert_int_equal(p.stime, 28);
	assert_int_equal(p.invol_switches, 9);
	assert_int_equal(p.n_cpus_seen, 2);
	/* a truncated stat: file:line */
	put(dir, "proc/9/task/9/stat", "9 (x) S 1 2 3\n");
	assert_int_equal(obs_read_proc(r, 9, &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/proc/9/task/9/stat:1: expected at least 41 fields"));
	/* interrupts: a line without counts */
	put(dir, "proc/interrupts", "           CPU0       CPU1\n  1:  garbage\n");
	{
		struct obs_irq irq;

		assert_int_equal(obs_read_interrupts(r, &irq, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "/proc/interrupts:2: expected a count per CPU"));
	}
	fsroot_free(r);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_psi_interrupts(void **state)
{
	struct fsroot *r = open_rel(KVM), *h = open_rel(HAZ);
	struct obs_psi psi;
	struct obs_irq irq;
	struct nt_err err = { 0 };

	(void)state;
	obs_read_psi(r, &psi);
	assert_true(psi.present);
	assert_true(psi.cpu_some_us == 3815131281ull);
	assert_true(psi.io_some_us == 102357450ull && psi.io_full_us == 73134525ull);
	assert_true(psi.mem_some_us == 13924ull);
	obs_read_psi(h, &psi);           /* a kernel without PSI */
	assert_false(psi.present);
	assert_int_equal(obs_read_interrupts(r, &irq, &err), 0);
	assert_int_equal(irq.n_cpus, 2);
	assert_true(irq.tlb == 3773452ull + 3963226ull);
	assert_true(irq.device == 2226975ull);
	fsroot_free(r);
	fsroot_free(h);
}

/* perf events on a real child, opened between fork and exec as ab does */
static void test_perf_child(void **state)
{
	struct obs_perf p;
	uint64_t c[OBS_PERF_N];
	int go[2], status;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char x;

		close(go[1]);
		if (read(go[0], &x, 1) != 1)
			_exit(1);
		/* a child that faults pages in and sleeps (switches) */
		execlp("sh", "sh", "-c", "head -c 4000000 /dev/zero | cat >/dev/null; sleep 0.05", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	obs_perf_open(&p, pid);
	assert_int_equal(write(go[1], "x", 1), 1);
	close(go[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	if (!p.ok) {
		assert_true(p.why[0] != '\0');
		test_skip_host("perf", "perf events refused here, the fallback taken: %s", p.why);
	}
	assert_int_equal(obs_perf_read(&p, c), 0);
	/* inherited: the shell's children (head, cat, sleep) are counted */
	assert_true(c[OBS_PERF_FAULTS] > 100);
	assert_true(c[OBS_PERF_SWITCHES] > 2);
	obs_perf_close(&p);
	assert_int_equal(p.fd[0], -1);
	assert_int_equal(obs_perf_read(&p, c), -EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_stat),
		cmocka_unit_test(test_longest_sys_run),
		cmocka_unit_test(test_vmstat_memcg_throttling),
		cmocka_unit_test(test_read_proc),
		cmocka_unit_test(test_proc_bad_and_comm),
		cmocka_unit_test(test_psi_interrupts),
		cmocka_unit_test(test_perf_child),
	};

	return cmocka_run_group_tests_name("observe", tests, NULL, NULL);
}
