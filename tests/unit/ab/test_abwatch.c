/* SPDX-License-Identifier: MIT */
/* test_abwatch.c — one trial watched on this live host (root only: skipped
 * with the reason elsewhere): a pinned busy process beside the job named as
 * the culprit, a CPU quota on the trial cgroup seen as throttling; an
 * arm's trials merged from hand-built results and explained; and a watch
 * on a root with nothing mounted, every counter saying why it is missing.
 * Every process and cgroup a test makes is removed in its teardown, also
 * when it fails. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/resource.h>
#include <cmocka.h>

#include "ab/abwatch.h"
#include "ab/abwatch_test.h"
#include "test_util.h"

#define BURNER_COMM "abw-burner"
#define DAEMON_COMM "abw-daemon"

/* ---- live trials -------------------------------------------------------- */

struct live {
	struct fsroot *root;
	char tmp[64];               /* a temporary root, when one is used */
	struct abwatch *w;          /* begun, not yet ended */
	struct abwatch_trial trial;
	pid_t job, burner;
	pid_t ran;                  /* the job's pid, after it was reaped */
	pid_t daemon;               /* a daemonized process of the job (not our child) */
};

static int live_setup(void **state)
{
	struct live *t = calloc(1, sizeof(*t));

	if (!t || !(t->root = fsroot_open("/")))
		return -1;
	t->job = t->burner = -1;
	*state = t;
	return 0;
}

/* Trial groups of this process left in any hierarchy. */
static size_t leftovers(void)
{
	return test_cgroup_leftovers(TRIALCG_PARENT);
}

static void reap(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

static int live_teardown(void **state)
{
	struct live *t = *state;
	struct abwatch_trial discard;
	bool left;

	reap(&t->job);
	reap(&t->burner);
	if (t->daemon > 0)
		kill(t->daemon, SIGKILL);
	if (t->w) {                 /* a test failed between begin and end */
		abwatch_end(t->w, &discard, NULL);
		abwatch_trial_release(&discard);
	}
	abwatch_trial_release(&t->trial);
	fsroot_free(t->root);
	if (t->tmp[0])
		test_rmrf(t->tmp);
	left = leftovers() > 0;
	free(t);
	return left ? -1 : 0;
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

static int pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* A process not of the job, pinned to CPU 0 and named BURNER_COMM,
 * spinning until killed; returns once it runs under that name. */
static pid_t start_burner(void)
{
	int ready[2];
	char x;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (pin_cpu0() < 0 || prctl(PR_SET_NAME, BURNER_COMM) < 0 || write(ready[1], "x", 1) != 1)
			_exit(99);
		for (;;)
			busy(1);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &x, 1), 1);
	close(ready[0]);
	return pid;
}

struct job_spec {
	double seconds;             /* busy for this long (wall) */
	bool pin;                   /* on CPU 0 */
	bool daemon;                /* the job first starts a daemon: busy on CPU 0, then asleep until killed */
	const char *quota_v2, *quota_v1;   /* set on the trial cgroup before the job goes (NULL: none) */
	bool no_join;               /* the child does not join the trial cgroup itself (a child
				     * slower to join than abwatch_started is to sample) */
};

/* Write the quota on the group's cpu.max (v2) or cpu.cfs_quota_us (v1);
 * 0, or -ENOENT when no directory of the group has either. */
static int set_quota(const struct fsroot *root, const struct trialcg *cg, const struct job_spec *js)
{
	char paths[1024], rel[1100];
	const char *sep = ", ";
	int r = -ENOENT;

	snprintf(paths, sizeof(paths), "%s", trialcg_paths(cg));
	for (char *p = paths, *next; p && *p && r == -ENOENT; p = next) {
		next = strstr(p, sep);
		if (next) {
			*next = '\0';
			next += strlen(sep);
		}
		snprintf(rel, sizeof(rel), "%s/cpu.max", p);
		if (fsroot_exists(root, rel)) {
			r = fsroot_write(root, rel, js->quota_v2);
			continue;
		}
		snprintf(rel, sizeof(rel), "%s/cpu.cfs_quota_us", p);
		if (fsroot_exists(root, rel))
			r = fsroot_write(root, rel, js->quota_v1);
	}
	return r;
}

/* In the job: fork a process that forks the daemon and exits at once, so
 * that the daemon is reparented (to init) before a sample can see its
 * parent; its pid goes to fd. */
static void spawn_daemon(int fd, double seconds)
{
	pid_t mid = fork(), d;

	if (mid == 0) {
		d = fork();
		if (d == 0) {
			setsid();
			if (prctl(PR_SET_NAME, DAEMON_COMM) < 0 || pin_cpu0() < 0)
				_exit(99);
			busy(seconds);
			for (;;)
				pause();
		}
		_exit(d > 0 && write(fd, &d, sizeof(d)) == sizeof(d) ? 0 : 99);
	}
	if (mid < 0 || waitpid(mid, NULL, 0) != mid)
		_exit(98);
}

/* The A/B engine's sequence around one trial: begin (done), fork, the
 * child joins and waits, started, the child goes, ticks every 100 ms until
 * it exits, end.  The trial lands in t->trial. */
static void run_trial(struct live *t, const struct job_spec *js)
{
	struct nt_err err = { 0 };
	int go[2], report[2] = { -1, -1 }, status = -1, r;
	double deadline;
	char x = 'x';

	assert_int_equal(pipe(go), 0);
	if (js->daemon)
		assert_int_equal(pipe2(report, O_NONBLOCK), 0);
	t->job = fork();
	assert_true(t->job >= 0);
	if (t->job == 0) {
		close(go[1]);
		if ((!js->no_join && abwatch_child(t->w) < 0) || (js->pin && pin_cpu0() < 0) || read(go[0], &x, 1) != 1)
			_exit(99);
		if (js->daemon)
			spawn_daemon(report[1], js->seconds);
		busy(js->seconds);
		_exit(0);
	}
	close(go[0]);
	if (js->daemon) {
		close(report[1]);
		report[1] = -1;
	}
	r = abwatch_started(t->w, t->job, &err);
	if (r < 0)
		print_message("started: part of the watch did not start: %s\n", err.msg);
	if (js->quota_v2) {
		r = set_quota(t->root, abwatch_cgroup(t->w), js);
		if (r < 0) {
			close(go[1]);
			test_skip_host("cgroup-cpu", "no writable CPU quota on the trial cgroup (%s): %s",
				       trialcg_paths(abwatch_cgroup(t->w)), strerror(-r));
		}
	}
	assert_int_equal(write(go[1], &x, 1), 1);
	close(go[1]);
	deadline = now() + 20 * js->seconds + 10;   /* generous: under load, and 20% quota */
	while (waitpid(t->job, &status, WNOHANG) == 0 && now() < deadline) {
		abwatch_tick(t->w);
		nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	}
	assert_true(now() < deadline);
	t->ran = t->job;
	t->job = -1;                                /* reaped */
	if (js->daemon) {
		assert_int_equal(read(report[0], &t->daemon, sizeof(t->daemon)), sizeof(t->daemon));
		close(report[0]);
	}
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	r = abwatch_end(t->w, &t->trial, &err);
	t->w = NULL;
	if (r < 0)
		print_message("end: %s\n", err.msg);
}

/* A live watch on "/", or skip with why. */
static void live_begin(struct live *t, const char *label, bool need_cgroup)
{
	struct nt_err err = { 0 };

	if (geteuid() != 0)
		test_skip_host("root", "not root: creating cgroups needs root");
	t->w = abwatch_begin(t->root, label, &err);
	assert_non_null(t->w);
	/* whether the host can make one is read from /sys/fs/cgroup, not
	 * asked of abwatch: where it can, a watch without one is a failure */
	if (need_cgroup && !abwatch_cgroup(t->w)) {
		struct abwatch_trial nc;
		char why[256];
		bool can = test_host_has_controller("cpu");

		abwatch_end(t->w, &nc, NULL);
		t->w = NULL;
		snprintf(why, sizeof(why), "%s", nc.why[ABWATCH_THROTTLED_PERIODS]);
		abwatch_trial_release(&nc);
		if (can)
			fail_msg("the host has a cpu controller, but the watch made no trial cgroup: %s", why);
		test_skip_host("cgroup-cpu", "no cpu cgroup controller on this host (/sys/fs/cgroup): %s", why);
	}
}

static const struct culprit_task *find_task(const struct culprit_result *r, int pid)
{
	for (int i = 0; i < r->n_tasks; i++)
		if (r->tasks[i].pid == pid)
			return &r->tasks[i];
	return NULL;
}

static void print_counters(const struct abwatch_trial *tr)
{
	for (int c = 0; c < ABWATCH_N; c++)
		print_message("  %-22s %10.3f %s%s\n", abwatch_rows[c].name, tr->v[c], tr->why[c][0] ? "not countable: " : "",
			      tr->why[c]);
}

/* A busy process pinned beside the job on CPU 0: named, with its share;
 * the job itself is not a culprit. */
static void test_live_culprit_named(void **state)
{
	struct live *t = *state;
	const struct job_spec js = { .seconds = 0.6, .pin = true };
	const struct culprit_task *b;
	struct abwatch_arm arm[2];
	char text[4096], want[64];

	live_begin(t, "unit-culprit", false);
	t->burner = start_burner();
	run_trial(t, &js);
	print_counters(&t->trial);
	assert_true(t->trial.culprit_read);
	print_message("rank CPUs '%s', %.2f s, %d samples, %d culprits\n", t->trial.culprit.cpus,
		      t->trial.culprit.seconds, t->trial.culprit.samples, t->trial.culprit.n_culprits);
	assert_non_null(strchr(t->trial.culprit.cpus, '0'));
	b = find_task(&t->trial.culprit, t->burner);
	assert_non_null(b);
	assert_string_equal(b->comm, BURNER_COMM);
	assert_int_equal(b->top_cpu, 0);
	print_message("burner: %.1f%% of CPU 0\n", 100 * b->top_share);
	assert_true(b->top_share > 0.02);          /* ~50% alone, 10-30% on a loaded host */
	assert_true(t->trial.v[ABWATCH_FOREIGN_CPU_SHARE] >= b->top_share);
	assert_string_equal(t->trial.why[ABWATCH_FOREIGN_CPU_SHARE], "");
	assert_null(find_task(&t->trial.culprit, (int)getpid()));
	assert_null(find_task(&t->trial.culprit, (int)t->ran));    /* the job is not a culprit */
	for (int i = 0; i < t->trial.culprit.n_tasks; i++)
		assert_string_not_equal(t->trial.culprit.tasks[i].comm, "test_abwatch");
	/* perf: countable here, or says why; sharing CPU 0 means switches */
	if (!t->trial.why[ABWATCH_CG_SWITCHES][0])
		assert_true(t->trial.v[ABWATCH_CG_SWITCHES] > 0);
	for (int c = 0; c < ABWATCH_N; c++)
		if (t->trial.why[c][0])
			assert_true(t->trial.v[c] == 0);
	/* cgroup counters: countable with a trial cgroup, never a silent 0 */
	if (!t->trial.cg_read)
		assert_string_not_equal(t->trial.why[ABWATCH_THROTTLED_PERIODS], "");
	/* the text: B had the burner, A is an empty arm */
	abwatch_arm_init(&arm[0]);
	abwatch_arm_init(&arm[1]);
	assert_int_equal(abwatch_arm_add(&arm[1], &t->trial), 0);
	assert_true(abwatch_explain(&arm[0], &arm[1], -1, text, sizeof(text)) >= 1);
	print_message("%s", text);
	snprintf(want, sizeof(want), "pid %d (" BURNER_COMM ", SCHED_OTHER %d) in cgroup ", (int)t->burner,
		 getpriority(PRIO_PROCESS, 0));   /* the nice value this test runs at */
	assert_non_null(strstr(text, want));
	assert_non_null(strstr(text, "of CPU 0 during B trials, 0% during A"));
	abwatch_arm_release(&arm[0]);
	abwatch_arm_release(&arm[1]);
}

/* Is pid gone (or a zombie nobody reaps)? */
static bool gone(pid_t pid)
{
	char path[64], buf[512], *close;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	close = strrchr(buf, ')');
	return !close || close[1] != ' ' || close[2] == 'Z' || close[2] == 'X';
}

/* A job that daemonizes a process (reparented before any sample sees its
 * parent) on its own CPU: the daemon is in the trial cgroup, so it is the
 * job's, not a culprit; abwatch_end kills it with the group. */
static void test_live_daemon_is_the_jobs(void **state)
{
	struct live *t = *state;
	const struct job_spec js = { .seconds = 0.6, .pin = true, .daemon = true };

	live_begin(t, "unit-daemon", true);
	run_trial(t, &js);
	print_counters(&t->trial);
	assert_true(t->trial.culprit_read);
	assert_true(t->daemon > 0);
	print_message("job %d, daemon %d; rank CPUs '%s'\n", (int)t->ran, (int)t->daemon, t->trial.culprit.cpus);
	for (int i = 0; i < t->trial.culprit.n_tasks; i++) {
		print_message("  culprit pid %d (%s) %.1f%% of CPU %d\n", t->trial.culprit.tasks[i].pid,
			      t->trial.culprit.tasks[i].comm, 100 * t->trial.culprit.tasks[i].top_share,
			      t->trial.culprit.tasks[i].top_cpu);
		assert_int_not_equal(t->trial.culprit.tasks[i].pid, t->daemon);
		assert_string_not_equal(t->trial.culprit.tasks[i].comm, DAEMON_COMM);
	}
	assert_true(gone(t->daemon));
	t->daemon = -1;
}

/* abwatch_started moves the job into the trial cgroup itself: a child that
 * has not joined it yet when the watch takes its first sample is never
 * seen outside it (its cgroup in the culprit rows is the trial's, and the
 * hierarchy's root is not followed as one of the job's cgroups). */
static void test_live_parent_joins(void **state)
{
	struct live *t = *state;
	const struct job_spec js = { .seconds = 0.4, .pin = true, .no_join = true };
	const struct culprit_task *row = NULL;

	live_begin(t, "unit-join", true);
	run_trial(t, &js);
	assert_true(t->trial.culprit_read);
	for (int i = 0; i < t->trial.culprit.n_job; i++)
		if (t->trial.culprit.job[i].pid == (int)t->ran)
			row = &t->trial.culprit.job[i];
	assert_non_null(row);
	print_message("job %d in cgroup %s\n", (int)t->ran, row->cgroup);
	assert_non_null(strstr(row->cgroup, "/" TRIALCG_PARENT "/"));
	assert_non_null(strstr(row->cgroup, "unit-join"));
	for (int i = 0; t->trial.follow && i < t->trial.follow->n; i++) {
		print_message("followed %s%s\n", t->trial.follow->group[i].name,
			      t->trial.follow->group[i].job ? " (the job's)" : "");
		if (t->trial.follow->group[i].job)
			assert_non_null(strstr(t->trial.follow->group[i].name, "/" TRIALCG_PARENT "/"));
	}
}

/* 20% of a CPU on the trial cgroup, a job busy for 0.8 s: throttled, and
 * the text says so with the numbers. */
static void test_live_quota_throttled(void **state)
{
	struct live *t = *state;
	const struct job_spec js = { .seconds = 0.8, .quota_v2 = "20000 100000", .quota_v1 = "20000" };
	struct abwatch_arm arm[2];
	char text[4096];

	live_begin(t, "unit-quota", true);
	run_trial(t, &js);
	print_counters(&t->trial);
	assert_true(t->trial.cg_read);
	assert_string_equal(t->trial.why[ABWATCH_THROTTLED_PERIODS], "");
	assert_true(t->trial.v[ABWATCH_THROTTLED_PERIODS] > 0);
	assert_true(t->trial.v[ABWATCH_THROTTLED_MS] > 0);
	assert_true(t->trial.after.quota_cpus > 0.19 && t->trial.after.quota_cpus < 0.21);
	abwatch_arm_init(&arm[0]);
	abwatch_arm_init(&arm[1]);
	assert_int_equal(abwatch_arm_add(&arm[1], &t->trial), 0);
	assert_true(abwatch_explain(&arm[0], &arm[1], -1, text, sizeof(text)) >= 1);
	print_message("%s", text);
	assert_non_null(strstr(text, "B: throttled in "));
	assert_non_null(strstr(text, "quota 0.2 CPU"));
	assert_null(strstr(text, "\nA: "));          /* A had no cgroup counters: no line */
	abwatch_arm_release(&arm[0]);
	abwatch_arm_release(&arm[1]);
}

/* A root with nothing in it: no cgroup, no proc.  The watch still runs a
 * trivial job and every counter says why it is missing, never a bare 0. */
static void test_nothing_countable(void **state)
{
	struct live *t = *state;
	struct fsroot *empty;
	struct nt_err err = { 0 };
	const struct job_spec js = { .seconds = 0.05 };

	assert_non_null(test_tmpdir(t->tmp, sizeof(t->tmp)));
	assert_non_null(empty = fsroot_open(t->tmp));
	fsroot_free(t->root);
	t->root = empty;
	t->w = abwatch_begin(t->root, "unit-empty", &err);
	assert_non_null(t->w);
	assert_null(abwatch_cgroup(t->w));
	assert_int_equal(abwatch_child(t->w), 0);      /* nothing to join */
	run_trial(t, &js);
	print_counters(&t->trial);
	assert_false(t->trial.cg_read);
	assert_false(t->trial.culprit_read);
	for (int c = 0; c < ABWATCH_N; c++) {
		assert_string_not_equal(t->trial.why[c], "");
		assert_true(t->trial.v[c] == 0);
	}
	assert_non_null(strstr(t->trial.why[ABWATCH_THROTTLED_PERIODS], "no trial cgroup: "));
	assert_non_null(strstr(t->trial.why[ABWATCH_MEM_EVENTS], "cgroup"));
	assert_non_null(strstr(t->trial.why[ABWATCH_CG_SWITCHES], "perf counts the trial cgroup"));
	assert_non_null(strstr(t->trial.why[ABWATCH_FOREIGN_CPU_SHARE], "culprit watch: "));
}

/* Begun and ended without a job: every counter says the job did not
 * start; a bad label leaves the watch without a cgroup, not without a
 * watch. */
static void test_not_started(void **state)
{
	struct live *t = *state;
	struct nt_err err = { 0 };

	t->w = abwatch_begin(t->root, "bad/label", &err);
	assert_non_null(t->w);
	assert_null(abwatch_cgroup(t->w));
	assert_int_equal(abwatch_set_cpus(t->w, "0", &err), 0);
	assert_int_equal(abwatch_set_cpus(t->w, "3-1", &err), -EINVAL);
	assert_int_equal(abwatch_tick(t->w), 0);
	assert_int_equal(abwatch_end(t->w, &t->trial, &err), 0);
	t->w = NULL;
	for (int c = 0; c < ABWATCH_N; c++)
		assert_string_equal(t->trial.why[c], "the job was not started");
	assert_int_equal(abwatch_end(NULL, &t->trial, &err), -EINVAL);
	assert_string_equal(t->trial.why[ABWATCH_IRQ_SHARE], "no watch");
}

/* ---- an arm's trials merged ------------------------------------------- */

struct fake_cpu {
	int cpu;
	double seconds;
};

/* A task row (allocated: the trial owns it) on cpus[0..n). */
static void add_task(struct culprit_result *r, int pid, const char *comm, int policy, int prio,
		     const struct fake_cpu *cpus, int n)
{
	struct culprit_task *t;

	r->tasks = realloc(r->tasks, (size_t)(r->n_tasks + 1) * sizeof(*r->tasks));
	assert_non_null(r->tasks);
	t = &r->tasks[r->n_tasks++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	snprintf(t->cgroup, sizeof(t->cgroup), "/user.slice");
	t->policy = policy;
	t->priority = prio;
	t->threads = 1;
	t->top_cpu = -1;
	t->cpus = calloc((size_t)n, sizeof(*t->cpus));
	assert_non_null(t->cpus);
	for (int k = 0; k < n; k++) {
		t->cpus[t->n_cpus++] = (struct culprit_cpu_time){ cpus[k].cpu, cpus[k].seconds,
								  cpus[k].seconds / r->seconds };
		t->seconds += cpus[k].seconds;
		if (t->cpus[k].share > t->top_share) {
			t->top_share = t->cpus[k].share;
			t->top_cpu = cpus[k].cpu;
		}
	}
	r->n_culprits = r->n_tasks;
}

/* Rank CPU cpu's softirq time, with its NET_RX and TIMER counts. */
static void add_irq_cpu(struct culprit_result *r, int cpu, double softirq_s, uint64_t net_rx, uint64_t timer)
{
	struct culprit_cpu_irq *o;

	r->irq_cpus = realloc(r->irq_cpus, (size_t)(r->n_irq_cpus + 1) * sizeof(*r->irq_cpus));
	assert_non_null(r->irq_cpus);
	o = &r->irq_cpus[r->n_irq_cpus++];
	memset(o, 0, sizeof(*o));
	o->cpu = cpu;
	o->irq_seconds = 0;
	o->softirq_seconds = softirq_s;
	o->softirq_share = softirq_s / r->seconds;
	if (net_rx)
		o->softirqs[o->n_softirqs++] = (struct culprit_irq_count){ .label = "NET_RX", .count = net_rx };
	if (timer)
		o->softirqs[o->n_softirqs++] = (struct culprit_irq_count){ .label = "TIMER", .count = timer };
	o->irqs[o->n_irqs++] = (struct culprit_irq_count){ .label = "LOC", .name = "Local timer interrupts",
							    .count = 100 };
}

static void fake_trial(struct abwatch_trial *t, double seconds, const char *cpus)
{
	memset(t, 0, sizeof(*t));
	t->culprit_read = true;
	t->culprit.seconds = seconds;
	t->culprit.samples = (int)(seconds * 10);
	t->culprit.schedstat = true;
	snprintf(t->culprit.cpus, sizeof(t->culprit.cpus), "%s", cpus);
}

/* cpu.stat before and after: periods and throttled periods grown. */
static void fake_cgroup(struct abwatch_trial *t, uint64_t periods, uint64_t throttled, uint64_t throttled_us)
{
	struct trialcg_stats *s[2] = { &t->before, &t->after };

	t->cg_read = true;
	for (int i = 0; i < 2; i++) {
		s[i]->have = 1u << TCG_CPU_NR_PERIODS | 1u << TCG_CPU_NR_THROTTLED | 1u << TCG_CPU_THROTTLED_USEC;
		s[i]->v[TCG_CPU_NR_PERIODS] = 1000 + (uint64_t)i * periods;
		s[i]->v[TCG_CPU_NR_THROTTLED] = 70 + (uint64_t)i * throttled;
		s[i]->v[TCG_CPU_THROTTLED_USEC] = 5000 + (uint64_t)i * throttled_us;
		s[i]->quota_cpus = 0.5;
		snprintf(s[i]->quota, sizeof(s[i]->quota), "50000 100000");
		s[i]->mem_limit = s[i]->mem_high = -1;
		snprintf(s[i]->paths, sizeof(s[i]->paths), "sys/fs/cgroup/unified/nodetune-ab/1-x");
	}
}

static const struct culprit_task *find_comm(const struct culprit_result *r, int pid, const char *comm)
{
	for (int i = 0; i < r->n_tasks; i++)
		if (r->tasks[i].pid == pid && !strcmp(r->tasks[i].comm, comm))
			return &r->tasks[i];
	return NULL;
}

static double cpu_share(const struct culprit_task *t, int cpu)
{
	for (int k = 0; k < t->n_cpus; k++)
		if (t->cpus[k].cpu == cpu)
			return t->cpus[k].share;
	return -1;
}

/* The arms of the merge tests, from hand-built trials: two B trials,
 * "stress" 4242 in both (its seconds summed, its shares over 5 s), 77
 * "kworker/1:1" in the first, 4242 "cron" (a reused pid) in the second,
 * softirqs summed by label, throttling summed, an affinity change; one A
 * trial with none of it.  tr[] holds the trials (release them too). */
static void make_arms(struct abwatch_trial tr[3], struct abwatch_arm arm[2])
{
	struct abwatch_trial *b1 = &tr[0], *b2 = &tr[1], *a1 = &tr[2];

	fake_trial(b1, 2.0, "1");
	add_task(&b1->culprit, 4242, "stress", SCHED_FIFO, 50, (struct fake_cpu[]){ { 1, 0.2 } }, 1);
	add_task(&b1->culprit, 77, "kworker/1:1", SCHED_OTHER, 0, (struct fake_cpu[]){ { 1, 0.1 } }, 1);
	add_irq_cpu(&b1->culprit, 1, 0.02, 100, 0);
	fake_cgroup(b1, 100, 10, 200000);
	fake_trial(b2, 3.0, "1-2");
	add_task(&b2->culprit, 4242, "stress", SCHED_FIFO, 50, (struct fake_cpu[]){ { 1, 0.3 }, { 2, 0.6 } }, 2);
	add_task(&b2->culprit, 4242, "cron", SCHED_OTHER, 0, (struct fake_cpu[]){ { 2, 0.05 } }, 1);
	add_irq_cpu(&b2->culprit, 1, 0.28, 500, 10);
	add_irq_cpu(&b2->culprit, 2, 0.0, 0, 0);
	fake_cgroup(b2, 100, 20, 400000);
	b2->culprit.changes[b2->culprit.n_changes++] = (struct culprit_affinity_change){
		.pid = 9, .tid = 10, .comm = "rank0", .before = "1", .after = "0-3", .t = 1.5 };
	fake_trial(a1, 5.0, "1-2");
	add_irq_cpu(&a1->culprit, 1, 0.005, 20, 0);
	add_irq_cpu(&a1->culprit, 2, 0.0, 0, 0);
	fake_cgroup(a1, 200, 0, 0);
	abwatch_arm_init(&arm[0]);
	abwatch_arm_init(&arm[1]);
	assert_int_equal(abwatch_arm_add(&arm[0], a1), 0);
	assert_int_equal(abwatch_arm_add(&arm[1], b1), 0);
	assert_int_equal(abwatch_arm_add(&arm[1], b2), 0);
}

static void free_arms(struct abwatch_trial tr[3], struct abwatch_arm arm[2])
{
	abwatch_arm_release(&arm[0]);
	abwatch_arm_release(&arm[1]);
	assert_int_equal(arm[1].trials, 0);
	for (int i = 0; i < 3; i++)
		abwatch_trial_release(&tr[i]);
}

/* A job process row (the job's own tree), as add_task builds a culprit. */
static void add_job(struct culprit_result *r, int pid, const char *comm, int policy, int prio,
		    const struct fake_cpu *cpus, int n)
{
	struct culprit_result tmp = { .seconds = r->seconds };

	add_task(&tmp, pid, comm, policy, prio, cpus, n);
	r->job = realloc(r->job, (size_t)(r->n_job + 1) * sizeof(*r->job));
	assert_non_null(r->job);
	r->job[r->n_job++] = tmp.tasks[0];
	free(tmp.tasks);
}

/* The job's own tree merged by kind over an arm's trials (its pids differ
 * from trial to trial), and what B's command runs that A's does not leads
 * the evidence; the ranks, alike in both arms, say nothing. */
static void test_arm_job_tree(void **state)
{
	struct abwatch_trial tr[3];
	struct abwatch_arm arm[2];
	const struct culprit_task *h = NULL;
	char text[2048];

	(void)state;
	fake_trial(&tr[0], 2.0, "1");
	add_job(&tr[0].culprit, 100, "rank", SCHED_OTHER, 0, (struct fake_cpu[]){ { 1, 1.8 } }, 1);
	add_job(&tr[0].culprit, 500, "helper", SCHED_FIFO, 50, (struct fake_cpu[]){ { 1, 0.5 } }, 1);
	fake_trial(&tr[1], 3.0, "1");
	add_job(&tr[1].culprit, 200, "rank", SCHED_OTHER, 0, (struct fake_cpu[]){ { 1, 2.7 } }, 1);
	add_job(&tr[1].culprit, 600, "helper", SCHED_FIFO, 50, (struct fake_cpu[]){ { 1, 0.6 } }, 1);
	fake_trial(&tr[2], 5.0, "1");
	add_job(&tr[2].culprit, 300, "rank", SCHED_OTHER, 0, (struct fake_cpu[]){ { 1, 4.5 } }, 1);
	abwatch_arm_init(&arm[0]);
	abwatch_arm_init(&arm[1]);
	assert_int_equal(abwatch_arm_add(&arm[0], &tr[2]), 0);
	assert_int_equal(abwatch_arm_add(&arm[1], &tr[0]), 0);
	assert_int_equal(abwatch_arm_add(&arm[1], &tr[1]), 0);
	assert_int_equal(arm[1].culprit.n_job, 2);                 /* one row per kind */
	for (int i = 0; i < arm[1].culprit.n_job; i++)
		if (!strcmp(arm[1].culprit.job[i].comm, "helper"))
			h = &arm[1].culprit.job[i];
	assert_non_null(h);
	assert_int_equal(h->pid, 500);                             /* the first trial's */
	assert_true(fabs(h->seconds - 1.1) < 1e-9);
	assert_true(fabs(h->top_share - 0.22) < 1e-9);
	assert_int_equal(abwatch_explain(&arm[0], &arm[1], 0, text, sizeof(text)), 0);   /* A the slower: a victim */
	assert_int_equal(abwatch_explain(&arm[0], &arm[1], 1, text, sizeof(text)), 1);
	print_message("%s", text);
	assert_string_equal(text, "B's command runs pid 500 (helper, SCHED_FIFO 50) that took 22.0% of a CPU on the "
			    "rank CPUs (most on CPU 1); A has no such process\n");
	free_arms(tr, arm);
}

/* Short-lived processes over an arm's trials: a loop's group row (its
 * starter's pid, the name of what it runs) merged apart from its starter's
 * own row when the names are alike (a shell loop running `sh -c`), the
 * counts summed; the exit records' status over the trials (not counted in
 * one: not counted, and why). */
static void test_arm_short_lived(void **state)
{
	struct abwatch_trial tr[2];
	struct abwatch_arm arm;
	const struct culprit_task *own = NULL, *grp = NULL;

	(void)state;
	for (int i = 0; i < 2; i++) {
		fake_trial(&tr[i], 2.0, "1");
		add_task(&tr[i].culprit, 30, "sh", SCHED_OTHER, 0, (struct fake_cpu[]){ { 1, 0.1 } }, 1);
		add_task(&tr[i].culprit, 30, "sh", SCHED_OTHER, 0, (struct fake_cpu[]){ { 1, 0.5 + 0.2 * i } }, 1);
		tr[i].culprit.tasks[1].short_lived = 40 + 20 * i;
		snprintf(tr[i].culprit.tasks[1].started_by, sizeof(tr[i].culprit.tasks[1].started_by), "sh");
		tr[i].culprit.exits_counted = i == 0;
		snprintf(tr[i].culprit.exits_why, sizeof(tr[i].culprit.exits_why), "%s", i ? "taskstats: no" : "");
		tr[i].culprit.exits_seen = 100;
		tr[i].culprit.exits_lost = (uint64_t)i;
	}
	abwatch_arm_init(&arm);
	assert_int_equal(abwatch_arm_add(&arm, &tr[0]), 0);
	assert_int_equal(abwatch_arm_add(&arm, &tr[1]), 0);
	assert_int_equal(arm.culprit.n_tasks, 2);
	for (int i = 0; i < arm.culprit.n_tasks; i++) {
		if (arm.culprit.tasks[i].short_lived)
			grp = &arm.culprit.tasks[i];
		else
			own = &arm.culprit.tasks[i];
	}
	assert_non_null(own);
	assert_non_null(grp);
	assert_true(fabs(own->seconds - 0.2) < 1e-9);
	assert_true(fabs(grp->seconds - 1.2) < 1e-9);
	assert_int_equal(grp->short_lived, 100);
	assert_string_equal(grp->started_by, "sh");
	assert_false(arm.culprit.exits_counted);
	assert_string_equal(arm.culprit.exits_why, "taskstats: no");
	assert_int_equal(arm.culprit.exits_seen, 200);
	assert_int_equal(arm.culprit.exits_lost, 1);
	abwatch_arm_release(&arm);
	for (int i = 0; i < 2; i++)
		abwatch_trial_release(&tr[i]);
}

/* Two rows of one trial that merge into one row of the arm (two ranks of
 * one kind; a loop's short-lived processes at two nices and a starter's
 * row): the merged row holds the CPUs of both, sized for both (a
 * reservation per row was overrun, found under ASan). */
static void test_arm_rows_share_a_row(void **state)
{
	struct abwatch_trial tr;
	struct abwatch_arm arm;
	const struct culprit_task *rank;

	(void)state;
	fake_trial(&tr, 2.0, "0-2");
	add_job(&tr.culprit, 10, "rank", SCHED_OTHER, 0, (struct fake_cpu[]){ { 0, 0.5 }, { 1, 0.5 } }, 2);
	add_job(&tr.culprit, 11, "rank", SCHED_OTHER, 0, (struct fake_cpu[]){ { 2, 1.0 } }, 1);
	add_task(&tr.culprit, 30, "awk", SCHED_OTHER, 0, (struct fake_cpu[]){ { 0, 0.1 }, { 1, 0.1 } }, 2);
	add_task(&tr.culprit, 30, "awk", SCHED_OTHER, 10, (struct fake_cpu[]){ { 2, 0.2 } }, 1);
	tr.culprit.tasks[0].short_lived = 5;
	tr.culprit.tasks[1].short_lived = 7;
	abwatch_arm_init(&arm);
	assert_int_equal(abwatch_arm_add(&arm, &tr), 0);
	assert_int_equal(arm.culprit.n_job, 1);
	rank = &arm.culprit.job[0];
	assert_int_equal(rank->n_cpus, 3);
	assert_true(fabs(rank->seconds - 2.0) < 1e-9);
	assert_true(fabs(cpu_share(rank, 2) - 0.5) < 1e-9);
	/* the loop's two nices: two rows, as culprit.c made them */
	assert_int_equal(arm.culprit.n_tasks, 2);
	assert_int_equal(arm.culprit.tasks[0].short_lived + arm.culprit.tasks[1].short_lived, 12);
	abwatch_arm_release(&arm);
	abwatch_trial_release(&tr);
}

/* The merged B arm: seconds and shares, the order, IRQs, cgroup sums. */
static void test_arm_merge(void **state)
{
	struct abwatch_trial tr[3];
	struct abwatch_arm arm[2];
	const struct culprit_task *s;
	const struct culprit_cpu_irq *cpu1;

	(void)state;
	make_arms(tr, arm);
	assert_int_equal(arm[1].trials, 2);
	assert_int_equal(arm[1].culprit_trials, 2);
	assert_true(fabs(arm[1].culprit.seconds - 5.0) < 1e-9);
	assert_string_equal(arm[1].culprit.cpus, "1-2");
	assert_int_equal(arm[1].culprit.n_tasks, 3);
	assert_int_equal(arm[1].culprit.samples, 50);
	/* stress: 0.5 s on CPU 1, 0.6 s on CPU 2 over 5 s */
	s = find_comm(&arm[1].culprit, 4242, "stress");
	assert_non_null(s);
	assert_ptr_equal(s, &arm[1].culprit.tasks[0]);           /* the largest share first */
	assert_true(fabs(s->seconds - 1.1) < 1e-9);
	assert_true(fabs(cpu_share(s, 1) - 0.10) < 1e-9);
	assert_true(fabs(cpu_share(s, 2) - 0.12) < 1e-9);
	assert_int_equal(s->top_cpu, 2);
	assert_true(fabs(s->top_share - 0.12) < 1e-9);
	assert_int_equal(s->policy, SCHED_FIFO);
	assert_true(fabs(find_comm(&arm[1].culprit, 77, "kworker/1:1")->top_share - 0.02) < 1e-9);
	assert_true(fabs(find_comm(&arm[1].culprit, 4242, "cron")->top_share - 0.01) < 1e-9);
	/* softirqs: 0.30 s of 5 on CPU 1, NET_RX 600; LOC summed */
	assert_int_equal(arm[1].culprit.n_irq_cpus, 2);
	cpu1 = &arm[1].culprit.irq_cpus[0];
	assert_int_equal(cpu1->cpu, 1);
	assert_true(fabs(cpu1->softirq_share - 0.06) < 1e-9);
	assert_string_equal(cpu1->softirqs[0].label, "NET_RX");
	assert_int_equal(cpu1->softirqs[0].count, 600);
	assert_int_equal(cpu1->irqs[0].count, 200);
	assert_int_equal(arm[1].culprit.n_changes, 1);
	/* cgroup: 200 periods, 30 throttled, 0.6 s */
	assert_int_equal(arm[1].cg_trials, 2);
	assert_int_equal(arm[1].cg.v[TCG_CPU_NR_PERIODS], 200);
	assert_int_equal(arm[1].cg.v[TCG_CPU_NR_THROTTLED], 30);
	assert_int_equal(arm[1].cg.v[TCG_CPU_THROTTLED_USEC], 600000);
	free_arms(tr, arm);
}

/* A against B in words, and B as JSON. */
static void test_arm_explain_and_json(void **state)
{
	struct abwatch_trial tr[3];
	struct abwatch_arm arm[2];
	char text[4096];
	json_t *j, *tasks;
	int n;

	(void)state;
	make_arms(tr, arm);
	n = abwatch_explain(&arm[0], &arm[1], -1, text, sizeof(text));
	print_message("%s", text);
	assert_int_equal(n, 7);
	assert_non_null(strstr(text, "pid 4242 (stress, SCHED_FIFO 50) in cgroup /user.slice ran 12.0% of CPU 2 during B trials, "
				   "0% during A\n"));
	/* a pid reused by another program on the same CPU is another culprit */
	assert_non_null(strstr(text, "pid 4242 (cron, SCHED_OTHER 0) in cgroup /user.slice ran 1.0% of CPU 2 during B trials, "
				   "0% during A\n"));
	assert_non_null(strstr(text, "rank0's threads: allowed CPUs 1 -> 0-3 1 time in"));
	assert_non_null(strstr(text, "B: throttled in 30 of 200 periods (15%), 0.6 s in all; quota 0.5 CPU"));
	assert_non_null(strstr(text, "A: not throttled (0 of 200 periods)"));
	assert_non_null(strstr(text, "CPU 1: softirq 6.0% of the time during B (NET_RX 600, TIMER 10), 0.1% during A\n"));
	assert_null(strstr(text, "CPU 2: "));                      /* no difference there */
	/* A against itself: nothing to say */
	assert_int_equal(abwatch_explain(&arm[0], &arm[0], -1, text, sizeof(text)), 0);
	assert_string_equal(text, "");
	/* too small: the whole lines that fit */
	assert_int_equal(abwatch_explain(&arm[0], &arm[1], -1, text, 160), -ENOSPC);
	assert_true(strlen(text) > 0 && strlen(text) < 160 && text[strlen(text) - 1] == '\n');

	j = abwatch_arm_json(&arm[1]);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "trials")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "cgroup"), "throttled_periods")), 30);
	tasks = json_object_get(json_object_get(j, "culprit"), "tasks");
	assert_int_equal(json_array_size(tasks), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(tasks, 0), "pid")), 4242);
	assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "comm")), "stress");
	json_decref(j);
	j = abwatch_arm_json(&arm[0]);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "culprit"), "tasks")), 0);
	json_decref(j);
	free_arms(tr, arm);
}

/* A followed cgroup of a trial: throttled and throttled_us grown by the
 * given amounts, memory.events high by mem. */
static void add_group(struct abwatch_trial *t, const char *name, bool job, const char *quota, uint64_t throttled,
		      uint64_t throttled_us, uint64_t mem)
{
	struct cgfollow_group *g;

	if (!t->follow) {
		t->follow = calloc(1, sizeof(*t->follow));
		assert_non_null(t->follow);
	}
	t->follow->group = realloc(t->follow->group, (size_t)(t->follow->n + 1) * sizeof(*t->follow->group));
	assert_non_null(t->follow->group);
	g = &t->follow->group[t->follow->n++];
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->job = job;
	for (int i = 0; i < 2; i++) {
		struct trialcg_stats *s = i ? &g->after : &g->before;

		s->have = 1u << TCG_CPU_NR_PERIODS | 1u << TCG_CPU_NR_THROTTLED | 1u << TCG_CPU_THROTTLED_USEC |
			  1u << TCG_MEM_HIGH | 1u << TCG_MEM_MAX | 1u << TCG_MEM_OOM;
		s->v[TCG_CPU_NR_THROTTLED] = 5 + (uint64_t)i * throttled;
		s->v[TCG_CPU_THROTTLED_USEC] = 100 + (uint64_t)i * throttled_us;
		s->v[TCG_MEM_HIGH] = 1 + (uint64_t)i * mem;
		snprintf(s->quota, sizeof(s->quota), "%s", quota);
	}
}

/* The job moved itself into a cgroup with a CPU limit in the B trials: the
 * trial's throttling is that cgroup's, the evidence names it first (with
 * its quota, its throttling over the B trials, and A's), the trial cgroup
 * and the ancestors that did not throttle say nothing, and the JSON lists
 * the groups. */
static void test_arm_followed_groups(void **state)
{
	struct abwatch_trial tr[3];
	struct abwatch_arm arm[2];
	char text[4096];
	json_t *j, *g;

	(void)state;
	for (int i = 0; i < 3; i++) {
		fake_trial(&tr[i], 2.0, "1");
		fake_cgroup(&tr[i], 100, 0, 0);           /* the trial cgroup: not throttled */
	}
	for (int i = 0; i < 2; i++) {
		add_group(&tr[i], "/sys/fs/cgroup/nodetune-ab/1-B", true, "max 100000", 0, 0, 0);
		add_group(&tr[i], "/sys/fs/cgroup/wrap.slice", true, "50000 100000", 206, 4050000, 0);
		add_group(&tr[i], "/sys/fs/cgroup", false, "", 0, 0, 0);
		abwatch_fill_follow(&tr[i]);
	}
	add_group(&tr[2], "/sys/fs/cgroup/nodetune-ab/1-A", true, "max 100000", 0, 0, 0);
	add_group(&tr[2], "/sys/fs/cgroup/cpu/v1.slice", true, "cfs_quota_us 20000 period 100000", 0, 0, 2);
	add_group(&tr[2], "/sys/fs/cgroup", false, "", 0, 0, 0);
	abwatch_fill_follow(&tr[2]);
	assert_true(fabs(tr[0].v[ABWATCH_THROTTLED_MS] - 4050) < 1e-9);
	assert_true(fabs(tr[0].v[ABWATCH_THROTTLED_PERIODS] - 206) < 1e-9);
	assert_true(fabs(tr[2].v[ABWATCH_THROTTLED_MS]) < 1e-9);
	assert_true(fabs(tr[2].v[ABWATCH_MEM_EVENTS] - 2) < 1e-9);
	abwatch_arm_init(&arm[0]);
	abwatch_arm_init(&arm[1]);
	assert_int_equal(abwatch_arm_add(&arm[0], &tr[2]), 0);
	assert_int_equal(abwatch_arm_add(&arm[1], &tr[0]), 0);
	assert_int_equal(abwatch_arm_add(&arm[1], &tr[1]), 0);
	assert_int_equal(arm[1].follow_trials, 2);
	assert_int_equal(arm[1].n_groups, 2);            /* not the trial cgroup */
	assert_true(abwatch_explain(&arm[0], &arm[1], 1, text, sizeof(text)) >= 2);
	print_message("%s", text);
	assert_ptr_equal(strstr(text, "B's job ran in /sys/fs/cgroup/wrap.slice (cpu.max 50000 100000): throttled 412 times, "
				      "8.1 s in the B trials; A: not throttled (its job did not run there)\n"), text);
	assert_non_null(strstr(text, "A's job ran in /sys/fs/cgroup/cpu/v1.slice (cfs_quota_us 20000 period 100000): not "
				     "throttled; memory: 2 over high, 0 at max, 0 OOM, 0 OOM kills, 0 failcnt in the A trials; "
				     "B: not throttled (its job did not run there)\n"));
	assert_null(strstr(text, "nodetune-ab"));
	assert_null(strstr(text, "ran below"));
	j = abwatch_arm_json(&arm[1]);
	assert_non_null(j);
	g = json_object_get(j, "job_cgroups");
	assert_int_equal(json_array_size(g), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(g, 0), "name")), "/sys/fs/cgroup/wrap.slice");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(g, 0), "throttled_periods")), 412);
	assert_true(fabs(json_real_value(json_object_get(json_array_get(g, 0), "throttled_ms")) - 8100) < 1e-6);
	assert_true(json_is_false(json_object_get(json_array_get(g, 1), "job")));
	json_decref(j);
	abwatch_arm_release(&arm[0]);
	abwatch_arm_release(&arm[1]);
	for (int i = 0; i < 3; i++)
		abwatch_trial_release(&tr[i]);
}

/* An arm of trials without culprit or cgroup results: no rows, no text. */
static void test_arm_of_nothing(void **state)
{
	struct abwatch_trial t;
	struct abwatch_arm a, b;
	char text[256];
	json_t *j;

	(void)state;
	memset(&t, 0, sizeof(t));
	abwatch_arm_init(&a);
	abwatch_arm_init(&b);
	assert_int_equal(abwatch_arm_add(&a, &t), 0);
	assert_int_equal(a.trials, 1);
	assert_int_equal(a.culprit_trials + a.cg_trials, 0);
	assert_int_equal(abwatch_explain(&a, &b, -1, text, sizeof(text)), 0);
	assert_string_equal(text, "");
	j = abwatch_arm_json(&a);
	assert_non_null(j);
	assert_true(json_is_null(json_object_get(j, "culprit")));
	assert_true(json_is_null(json_object_get(j, "cgroup")));
	json_decref(j);
	abwatch_arm_release(&a);
	abwatch_arm_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_live_culprit_named, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_live_daemon_is_the_jobs, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_live_parent_joins, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_live_quota_throttled, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_nothing_countable, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_not_started, live_setup, live_teardown),
		cmocka_unit_test(test_arm_merge),
		cmocka_unit_test(test_arm_short_lived),
		cmocka_unit_test(test_arm_rows_share_a_row),
		cmocka_unit_test(test_arm_explain_and_json),
		cmocka_unit_test(test_arm_followed_groups),
		cmocka_unit_test(test_arm_of_nothing),
		cmocka_unit_test(test_arm_job_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
