/* SPDX-License-Identifier: MIT */
/* test_trialcg.c — trial cgroups on this live host (root only: skipped with
 * the reason elsewhere), checked through /proc and the cgroup file system;
 * and on constructed trees (written by the test in the kernel's formats,
 * not captured): an unusable cgroupfs, a hybrid host's files read and
 * described.  Every group a test makes is removed in its teardown, also
 * when it fails. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "ab/trialcg.h"
#include "ab/trialcg_test.h"
#include "test_util.h"

struct live {
	struct fsroot *root;
	struct trialcg *cg[2];
	pid_t child[3];
};

static int live_setup(void **state)
{
	struct live *t = calloc(1, sizeof(*t));

	if (!t || !(t->root = fsroot_open("/")))
		return -1;
	*state = t;
	return 0;
}

/* Trial groups of this process left in any hierarchy. */
static size_t leftovers(void)
{
	return test_cgroup_leftovers(TRIALCG_PARENT);
}

static int live_teardown(void **state)
{
	struct live *t = *state;
	int bad = 0;

	for (int i = 0; i < 3; i++) {
		if (t->child[i] > 0) {
			kill(t->child[i], SIGKILL);
			waitpid(t->child[i], NULL, 0);
		}
	}
	for (int i = 0; i < 2; i++)
		bad |= trialcg_destroy(t->cg[i]) != 0;
	fsroot_free(t->root);
	free(t);
	return bad || leftovers() ? -1 : 0;
}

/* A live trial group named name, or skip with why. */
static struct trialcg *live_group(struct live *t, int i, const char *name)
{
	struct nt_err err = { 0 };

	if (geteuid() != 0)
		test_skip_host("root", "not root: creating cgroups needs root");
	t->cg[i] = trialcg_create(t->root, name, &err);
	/* whether the host can is read from /sys/fs/cgroup, not from the
	 * code under test: where it can, -ENOTSUP is a failure */
	if (!t->cg[i] && err.code == -ENOTSUP && !test_host_has_controller("cpu"))
		test_skip_host("cgroup-cpu", "no cpu cgroup controller on this host (/sys/fs/cgroup): %s", err.msg);
	if (!t->cg[i])
		fail_msg("trialcg_create: %s", err.msg);
	return t->cg[i];
}

/* The group's directory (of trialcg_paths) that holds file, into out; false
 * when none does. */
static bool group_file(const struct trialcg *cg, const char *file, char *out, size_t size)
{
	char paths[1024], *save = NULL;

	snprintf(paths, sizeof(paths), "%s", trialcg_paths(cg));
	for (char *p = strtok_r(paths, ", ", &save); p; p = strtok_r(NULL, ", ", &save)) {
		snprintf(out, size, "%s/%s", p, file);
		if (access(out, F_OK) == 0)
			return true;
	}
	return false;
}

static int write_file(const char *path, const char *value)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(value, f);
	return fclose(f);
}

/* Write the v2 file of the group, or where it has none the v1 one. */
static void set_limit(const struct trialcg *cg, const char *v2file, const char *v2value, const char *v1file,
		      const char *v1value)
{
	char path[1200];

	if (group_file(cg, v2file, path, sizeof(path)))
		assert_int_equal(write_file(path, v2value), 0);
	else if (group_file(cg, v1file, path, sizeof(path)))
		assert_int_equal(write_file(path, v1value), 0);
	else
		fail_msg("no %s or %s in %s", v2file, v1file, trialcg_paths(cg));
}

/* 20% of a CPU on the group: cpu.max (v2) or cpu.cfs_quota_us (v1). */
static void set_quota(const struct trialcg *cg)
{
	set_limit(cg, "cpu.max", "20000 100000", "cpu.cfs_quota_us", "20000");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void busy(double seconds)
{
	volatile uint64_t x = 0;

	for (double end = now() + seconds; now() < end;)
		for (int i = 0; i < 100000; i++)
			x += (uint64_t)i;
}

/* Fork a child that joins cg (as the A/B engine's child does, err NULL),
 * then runs fn; it exits 0 when fn returns. */
static pid_t spawn(const struct trialcg *cg, void (*fn)(void))
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (cg && trialcg_attach(cg, 0, NULL) < 0)
			_exit(99);
		fn();
		_exit(0);
	}
	return pid;
}

static void sit(void)
{
	for (;;)
		pause();
}

/* Wait until pid is in cg (at most 2 s). */
static void wait_in(const struct trialcg *cg, pid_t pid)
{
	for (int i = 0; i < 200 && !trialcg_holds(cg, pid); i++)
		usleep(10000);
	assert_true(trialcg_holds(cg, pid));
}

static void test_create_attach_destroy(void **state)
{
	struct live *t = *state;
	struct trialcg *cg = live_group(t, 0, "unit-attach");
	char rel[64], buf[4096], leaf[64], paths[1024];
	int n_paths = 1, n_lines = 0, status;

	t->child[0] = spawn(cg, sit);
	wait_in(cg, t->child[0]);
	snprintf(rel, sizeof(rel), "/proc/%d/cgroup", (int)t->child[0]);
	snprintf(leaf, sizeof(leaf), "/" TRIALCG_PARENT "/%d-unit-attach\n", (int)getpid());
	assert_true(fsroot_read_exact(t->root, rel + 1, buf, sizeof(buf)) > 0);
	for (const char *p = strstr(buf, leaf); p; p = strstr(p + 1, leaf))
		n_lines++;
	for (const char *p = strchr(trialcg_paths(cg), ','); p; p = strchr(p + 1, ','))
		n_paths++;
	print_message("%s: in %s\n%s", rel, trialcg_paths(cg), buf);
	assert_true(n_lines >= n_paths);      /* cpu,cpuacct co-mounted: one path, two names on its line */
	if (access("/sys/fs/cgroup/memory/tasks", F_OK) == 0)
		assert_non_null(strstr(buf, ":memory:/" TRIALCG_PARENT "/"));
	if (access("/sys/fs/cgroup/cpu/tasks", F_OK) == 0)
		assert_true(strstr(buf, ":cpu:/" TRIALCG_PARENT "/") || strstr(buf, ":cpu,cpuacct:/" TRIALCG_PARENT "/"));
	/* destroy with the child still in it: killed, directories gone */
	snprintf(paths, sizeof(paths), "%s", trialcg_paths(cg));
	assert_int_equal(trialcg_destroy(cg), 0);
	t->cg[0] = NULL;
	assert_int_equal(waitpid(t->child[0], &status, 0), t->child[0]);
	t->child[0] = 0;
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	for (char *save = NULL, *p = strtok_r(paths, ", ", &save); p; p = strtok_r(NULL, ", ", &save))
		assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(leftovers(), 0);
}

static void busy_second(void)
{
	busy(0.8);
}

static void test_cpu_quota_throttles(void **state)
{
	struct live *t = *state;
	struct trialcg *cg = live_group(t, 0, "unit-quota");
	struct trialcg_stats before, after;
	struct nt_err err = { 0 };
	char text[1024];

	set_quota(cg);
	if (trialcg_read(cg, &before, &err) < 0)
		fail_msg("%s", err.msg);
	t->child[0] = spawn(cg, busy_second);
	assert_int_equal(waitpid(t->child[0], NULL, 0), t->child[0]);
	t->child[0] = 0;
	if (trialcg_read(cg, &after, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(trialcg_describe(&before, &after, text, sizeof(text)), 0);
	print_message("%s: %s\n", after.paths, text);
	assert_true(trialcg_has(&after, TCG_CPU_NR_THROTTLED));
	assert_true(after.v[TCG_CPU_NR_THROTTLED] > before.v[TCG_CPU_NR_THROTTLED]);
	assert_true(after.v[TCG_CPU_THROTTLED_USEC] > before.v[TCG_CPU_THROTTLED_USEC]);
	assert_true(after.v[TCG_CPU_USAGE_USEC] > before.v[TCG_CPU_USAGE_USEC]);
	assert_true(after.quota_cpus > 0.19 && after.quota_cpus < 0.21);
	assert_non_null(strstr(text, "throttled in "));
	assert_non_null(strstr(text, "quota 0.2 CPU"));
}

static void touch_64m(void)
{
	size_t n = 64u << 20;
	volatile char *p = malloc(n);   /* volatile: the stores are the point */

	for (size_t i = 0; p && i < n; i += 4096)
		p[i] = 1;
	free((void *)p);
}

static void test_memory_limit_events(void **state)
{
	struct live *t = *state;
	struct trialcg *cg = live_group(t, 0, "unit-mem");
	struct trialcg_stats s;
	struct nt_err err = { 0 };
	char text[1024];

	set_limit(cg, "memory.max", "16M", "memory.limit_in_bytes", "16M");
	t->child[0] = spawn(cg, touch_64m);
	assert_int_equal(waitpid(t->child[0], NULL, 0), t->child[0]);   /* OOM-killed, or reclaimed */
	t->child[0] = 0;
	if (trialcg_read(cg, &s, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(trialcg_describe(NULL, &s, text, sizeof(text)), 0);
	print_message("%s: %s\n", s.paths, text);
	assert_int_equal(s.mem_limit, 16 << 20);
	if (trialcg_has(&s, TCG_MEM_MAX))
		assert_true(s.v[TCG_MEM_MAX] + s.v[TCG_MEM_HIGH] > 0);
	else
		assert_true(trialcg_has(&s, TCG_MEM_FAILCNT) && s.v[TCG_MEM_FAILCNT] > 0);
	assert_non_null(strstr(text, "limit 16.0 MiB"));
}

/* 2000 round trips over two pipes with a child of its own: ~4000 switches. */
static void ping_pong(void)
{
	int a[2], b[2];
	char c = 0;
	pid_t pid;

	if (pipe(a) < 0 || pipe(b) < 0)
		_exit(98);
	if ((pid = fork()) == 0) {
		for (int i = 0; i < 2000 && read(a[0], &c, 1) == 1; i++)
			if (write(b[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	for (int i = 0; i < 2000; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			break;
	waitpid(pid, NULL, 0);
}

static void test_perf_counts_the_cgroup_only(void **state)
{
	struct live *t = *state;
	struct trialcg *cg = live_group(t, 0, "unit-perf");
	struct trialcg_perf p = { 0, NULL };
	struct nt_err err = { 0 };
	uint64_t v0[TCG_PERF_N], v1[TCG_PERF_N], v2[TCG_PERF_N];
	int r = trialcg_perf_open(cg, &p, &err);

	if (r == -EACCES || r == -ENOTSUP || r == -ENOSYS)
		test_skip_host("perf", "perf events on the trial cgroup: %s", err.msg);
	if (r < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(trialcg_perf_read(&p, v0, &err), 0);
	t->child[0] = spawn(cg, ping_pong);            /* inside */
	assert_int_equal(waitpid(t->child[0], NULL, 0), t->child[0]);
	t->child[0] = 0;
	assert_int_equal(trialcg_perf_read(&p, v1, &err), 0);
	t->child[1] = spawn(NULL, ping_pong);          /* the same work outside */
	assert_int_equal(waitpid(t->child[1], NULL, 0), t->child[1]);
	t->child[1] = 0;
	assert_int_equal(trialcg_perf_read(&p, v2, &err), 0);
	trialcg_perf_close(&p);
	trialcg_perf_close(&p);                        /* twice: a no-op */
	print_message("inside: %llu switches, %llu ns task-clock; outside: %llu switches\n",
		      (unsigned long long)(v1[TCG_PERF_SWITCHES] - v0[TCG_PERF_SWITCHES]),
		      (unsigned long long)(v1[TCG_PERF_TASK_CLOCK] - v0[TCG_PERF_TASK_CLOCK]),
		      (unsigned long long)(v2[TCG_PERF_SWITCHES] - v1[TCG_PERF_SWITCHES]));
	assert_true(v1[TCG_PERF_SWITCHES] - v0[TCG_PERF_SWITCHES] >= 2000);
	assert_true(v1[TCG_PERF_TASK_CLOCK] > v0[TCG_PERF_TASK_CLOCK]);
	assert_true(v1[TCG_PERF_FAULTS] > v0[TCG_PERF_FAULTS]);
	assert_true(v2[TCG_PERF_SWITCHES] - v1[TCG_PERF_SWITCHES] < 100);
}

static const struct trialcg *moved_to;

/* A wrapper that moves itself to a group of its own, then works. */
static void move_and_work(void)
{
	if (trialcg_attach(moved_to, 0, NULL) < 0)
		_exit(97);
	busy(0.5);
	sit();
}

static void test_read_pid_moved_elsewhere(void **state)
{
	struct live *t = *state;
	struct trialcg *cg = live_group(t, 0, "unit-trial");
	struct trialcg *other = live_group(t, 1, "unit-moved");
	struct trialcg_stats s;
	struct nt_err err = { 0 };
	char text[1024];

	set_quota(other);
	moved_to = other;
	t->child[0] = spawn(cg, move_and_work);
	wait_in(other, t->child[0]);
	assert_false(trialcg_holds(cg, t->child[0]));
	usleep(600 * 1000);
	if (trialcg_read_pid(t->root, t->child[0], &s, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(trialcg_describe(NULL, &s, text, sizeof(text)), 0);
	print_message("%s: %s\n", s.paths, text);
	assert_non_null(strstr(s.paths, "-unit-moved"));
	assert_null(strstr(s.paths, "-unit-trial"));
	assert_true(s.quota_cpus > 0.19 && s.quota_cpus < 0.21);
	assert_true(s.v[TCG_CPU_NR_THROTTLED] > 0);
	assert_non_null(strstr(text, "throttled in "));
}

/* What an ab killed -9 leaves: its group (named for its pid, now dead)
 * holding a process of its job that PR_SET_PDEATHSIG did not reach.  A
 * child plays that ab: it makes the group, forks the job's process into
 * it and exits without destroying it; we are the orphan's subreaper, so
 * its end is ours to see.  trialcg_sweep kills it and removes the group;
 * a group of a live process is never touched. */
static void test_sweep_kills_what_a_dead_ab_left(void **state)
{
	struct live *t = *state;
	struct nt_err err = { 0 };
	char ours[1024];
	int p[2], status = 0, n;
	pid_t ab, orphan = 0;
	glob_t g;

	live_group(t, 0, "unit-live");               /* ours: alive, kept */
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	assert_int_equal(pipe(p), 0);
	ab = fork();
	assert_true(ab >= 0);
	if (ab == 0) {
		struct trialcg *cg = trialcg_create(t->root, "unit-stale", NULL);
		pid_t o;

		if (!cg)
			_exit(1);
		if ((o = fork()) == 0) {
			o = getpid();
			if (trialcg_attach(cg, 0, NULL) < 0 || write(p[1], &o, sizeof(o)) != sizeof(o))
				_exit(1);
			sit();
		}
		_exit(o > 0 ? 0 : 1);                /* no trialcg_destroy: killed -9 */
	}
	close(p[1]);
	n = (int)read(p[0], &orphan, sizeof(orphan));
	close(p[0]);
	assert_int_equal(waitpid(ab, &status, 0), ab);
	assert_true(n == sizeof(orphan) && orphan > 0);
	t->child[0] = orphan;                        /* killed by the teardown if this fails */
	/* (any ab starting on this host meanwhile sweeps it too: the count
	 * may be 0 here, the end is the same) */
	n = trialcg_sweep(t->root, &err);
	print_message("swept: %d group directories of pid %d (its job's pid %d)\n", n, (int)ab, (int)orphan);
	assert_true(n >= 0);
	for (int i = 0; i < 300 && waitpid(orphan, &status, WNOHANG) == 0; i++)
		usleep(10000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	t->child[0] = 0;
	snprintf(ours, sizeof(ours), "/sys/fs/cgroup/{*/,}" TRIALCG_PARENT "/%d-unit-stale", (int)ab);
	assert_int_equal(glob(ours, GLOB_BRACE, NULL, &g), GLOB_NOMATCH);   /* removed everywhere */
	snprintf(ours, sizeof(ours), "%s", trialcg_paths(t->cg[0]));
	ours[strcspn(ours, ",")] = '\0';
	assert_int_equal(access(ours, F_OK), 0);            /* a live pid's group is kept */
	prctl(PR_SET_CHILD_SUBREAPER, 0);
}

/* ---- constructed trees (typed in, not captured) --------------------------- */

static struct fsroot *tree(char *dir, size_t size, const char *mounts)
{
	struct fsroot *root;

	assert_non_null(test_tmpdir(dir, size));
	if (mounts)
		assert_int_equal(test_write(dir, "proc/self/mounts", mounts), 0);
	root = fsroot_open(dir);
	assert_non_null(root);
	return root;
}

/* trialcg_create on root fails with -ENOTSUP and a message holding want. */
static void refused(struct fsroot *root, const char *want)
{
	struct nt_err err = { 0 };

	assert_null(trialcg_create(root, "unit", &err));
	print_message("%s\n", err.msg);
	assert_int_equal(err.code, -ENOTSUP);
	assert_non_null(strstr(err.msg, want));
}

static void test_unusable_cgroupfs(void **state)
{
	char dir[64], stale[200];
	struct fsroot *root;
	struct nt_err err = { 0 };

	(void)state;
	root = tree(dir, sizeof(dir), NULL);
	refused(root, "proc/self/mounts: no such file");
	assert_null(trialcg_create(root, "../escape", &err));
	assert_int_equal(err.code, -EINVAL);
	fsroot_free(root);
	test_rmrf(dir);

	root = tree(dir, sizeof(dir), "tmpfs /tmp tmpfs rw 0 0\ncgroup /sys/fs/cgroup/systemd cgroup rw,name=systemd 0 0\n");
	refused(root, "no cgroup file system mounted");
	fsroot_free(root);
	test_rmrf(dir);

	root = tree(dir, sizeof(dir), "cgroup2 /sys/fs/cgroup cgroup2 ro,nosuid,nodev 0 0\n");
	refused(root, "read-only");
	fsroot_free(root);
	test_rmrf(dir);

	/* rw in the mount table, but the directory is no cgroup file system;
	 * the empty group of a dead nodetune (pid 4999999) is swept first */
	root = tree(dir, sizeof(dir), "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
	assert_int_equal(test_write(dir, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/" TRIALCG_PARENT "/4999999-old/x", ""), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/" TRIALCG_PARENT "/4999998-busy/cgroup.procs", ""), 0);
	snprintf(stale, sizeof(stale), "%s/sys/fs/cgroup/" TRIALCG_PARENT "/4999999-old/x", dir);
	assert_int_equal(unlink(stale), 0);
	refused(root, "is not a cgroup");
	assert_false(fsroot_exists(root, "sys/fs/cgroup/" TRIALCG_PARENT "/4999999-old"));
	assert_true(fsroot_exists(root, "sys/fs/cgroup/" TRIALCG_PARENT "/4999998-busy"));  /* not empty: kept */
	snprintf(stale, sizeof(stale), "sys/fs/cgroup/" TRIALCG_PARENT "/%d-unit", (int)getpid());
	assert_false(fsroot_exists(root, stale));                     /* its own: removed */
	fsroot_free(root);
	test_rmrf(dir);
}

/* An ab killed -9 after its leaf's rmdir, before its parent's, leaves an
 * empty nodetune-ab: the sweep removes it though it removed no group (it
 * once did only after removing one, and the empty parent stayed until the
 * next stale group; test_fleet_hold's clean-up found it).  A parent that
 * still holds a live pid's group is kept. */
static void test_sweep_removes_an_empty_parent(void **state)
{
	char dir[64], leaf[200];
	struct fsroot *root;
	struct nt_err err = { 0 };

	(void)state;
	root = tree(dir, sizeof(dir), "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"
				      "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n");
	assert_int_equal(test_write(dir, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n"), 0);
	snprintf(leaf, sizeof(leaf), "%s/sys/fs/cgroup/" TRIALCG_PARENT "/x", dir);
	test_mkdirs(leaf);                                   /* nodetune-ab, empty */
	assert_int_equal(test_write(dir, "proc/77/stat", "77 (nodetune) S\n"), 0);
	assert_int_equal(test_write(dir, "sys/fs/cgroup/memory/" TRIALCG_PARENT "/77-busy/cgroup.procs", ""), 0);
	assert_int_equal(trialcg_sweep(root, &err), 0);
	assert_false(fsroot_exists(root, "sys/fs/cgroup/" TRIALCG_PARENT));
	assert_true(fsroot_exists(root, "sys/fs/cgroup/memory/" TRIALCG_PARENT "/77-busy"));   /* pid 77 lives */
	fsroot_free(root);
	test_rmrf(dir);
}

/* A hybrid host's files for pid 42, which sits in "job" everywhere. */
static const struct { const char *rel, *content; } hybrid[] = {
	{ "proc/self/mounts", "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n"
			      "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
			      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n" },
	{ "proc/42/cgroup", "4:memory:/job\n3:cpu,cpuacct:/job\n1:name=systemd:/\n0::/job\n" },
	{ "sys/fs/cgroup/cpu,cpuacct/job/cpu.stat", "nr_periods 500\nnr_throttled 412\nthrottled_time 3100000000\n" },
	{ "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "50000\n" },
	{ "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n" },
	{ "sys/fs/cgroup/cpu,cpuacct/job/cpuacct.usage", "7000000000\n" },
	{ "sys/fs/cgroup/memory/job/memory.failcnt", "17\n" },
	{ "sys/fs/cgroup/memory/job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n" },
	{ "sys/fs/cgroup/memory/job/memory.usage_in_bytes", "1048576\n" },
	{ "sys/fs/cgroup/memory/job/memory.max_usage_in_bytes", "33449574\n" },
	{ "sys/fs/cgroup/memory/job/memory.limit_in_bytes", "33554432\n" },
	{ "sys/fs/cgroup/unified/job/cpu.stat", "usage_usec 6900000\nuser_usec 6800000\nsystem_usec 100000\n" },
	{ "sys/fs/cgroup/unified/job/cpu.pressure", "some avg10=1.00 avg60=0 avg300=0 total=2100000\n"
						    "full avg10=1.00 avg60=0 avg300=0 total=1900000\n" },
	{ "sys/fs/cgroup/unified/job/memory.pressure", "some avg10=0 avg60=0 avg300=0 total=0\n"
						       "full avg10=0 avg60=0 avg300=0 total=0\n" },
	{ "sys/fs/cgroup/unified/job/io.pressure", "some avg10=0 avg60=0 avg300=0 total=0\n"
						   "full avg10=0 avg60=0 avg300=0 total=0\n" },
};

static void test_read_pid_constructed_hybrid(void **state)
{
	char dir[64], text[1024];
	struct fsroot *root = tree(dir, sizeof(dir), NULL);
	struct trialcg_stats s, before;
	struct nt_err err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(hybrid) / sizeof(hybrid[0]); i++)
		assert_int_equal(test_write(dir, hybrid[i].rel, hybrid[i].content), 0);
	if (trialcg_read_pid(root, 42, &s, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(s.paths, "/sys/fs/cgroup/unified/job, /sys/fs/cgroup/cpu,cpuacct/job, "
			    "/sys/fs/cgroup/memory/job");
	assert_int_equal(s.v[TCG_CPU_USAGE_USEC], 6900000);   /* v2 first */
	assert_int_equal(s.v[TCG_CPU_THROTTLED_USEC], 3100000);
	assert_string_equal(s.quota, "cfs_quota_us 50000 period 100000");
	assert_int_equal(s.mem_limit, 33554432);
	assert_false(trialcg_has(&s, TCG_MEM_HIGH));
	assert_int_equal(trialcg_describe(NULL, &s, text, sizeof(text)), 0);
	assert_string_equal(text, "throttled in 412 of 500 periods (82%), 3.1 s in all; quota 0.5 CPU; "
			    "memory: 17 limit hits (failcnt), 1 OOM kills (limit 32.0 MiB, peak 31.9 MiB); "
			    "PSI cpu some 2.10 s, full 1.90 s");
	before = s;
	before.v[TCG_CPU_NR_PERIODS] = 400;
	before.v[TCG_CPU_NR_THROTTLED] = 400;
	before.v[TCG_MEM_FAILCNT] = 17;
	before.v[TCG_MEM_OOM_KILL] = 1;
	before.v[TCG_PSI_CPU_SOME_US] = 2100000;
	before.v[TCG_PSI_CPU_FULL_US] = 1900000;
	assert_int_equal(trialcg_describe(&before, &s, text, sizeof(text)), 0);
	assert_string_equal(text, "throttled in 12 of 100 periods (12%), 0.0 s in all; quota 0.5 CPU; "
			    "memory: no limit events (limit 32.0 MiB, peak 31.9 MiB); PSI no pressure");
	snprintf(before.paths, sizeof(before.paths), "/sys/fs/cgroup/unified/other");
	assert_int_equal(trialcg_describe(&before, &s, text, sizeof(text)), -EINVAL);
	assert_int_equal(trialcg_describe(NULL, &s, text, 20), -ENOBUFS);
	assert_int_equal(strlen(text), 19);
	assert_int_equal(trialcg_read_pid(root, 43, &s, &err), -ENOENT);
	fsroot_free(root);
	test_rmrf(dir);
}

static void test_describe_not_countable(void **state)
{
	struct trialcg_stats s;
	char text[512];

	(void)state;
	memset(&s, 0, sizeof(s));
	s.mem_limit = s.mem_high = -1;
	s.have = 1u << TCG_CPU_USAGE_USEC;
	snprintf(s.why, sizeof(s.why), "CPU throttling: no cpu controller");
	assert_int_equal(trialcg_describe(NULL, &s, text, sizeof(text)), 0);
	assert_string_equal(text, "not countable here: CPU throttling: no cpu controller");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_attach_destroy, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_cpu_quota_throttles, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_memory_limit_events, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_perf_counts_the_cgroup_only, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_read_pid_moved_elsewhere, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_sweep_kills_what_a_dead_ab_left, live_setup, live_teardown),
		cmocka_unit_test(test_unusable_cgroupfs),
		cmocka_unit_test(test_sweep_removes_an_empty_parent),
		cmocka_unit_test(test_read_pid_constructed_hybrid),
		cmocka_unit_test(test_describe_not_countable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
