/* SPDX-License-Identifier: MIT */
/* test_culprit.c — who else ran on the job's CPUs: a constructed proc tree
 * moved between two samples, the live host (a pinned spinner beside a
 * "job" child), and the A-vs-B text. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <cmocka.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "ab/culprit.h"
#include "ab/abwatch.h"
#include "ab/culprit_test.h"
#include "test_util.h"

/* ---- a constructed proc tree ---------------------------------------------- */

struct fake_task {
	int pid, tid, ppid;
	const char *comm;
	unsigned flags;
	int nice, cpu, rt_prio, policy;
	unsigned long long run_ns;
	const char *allowed;
	bool zombie;                 /* exited, not yet reaped: state Z */
	double born;                 /* its start, seconds after boot (stat field 22): 0, at boot */
};

static void write_task(const char *dir, const struct fake_task *t, const char *cgroup)
{
	char rel[128], buf[1024];
	size_t n;

	/* fields 1..52 of proc(5): the ones read are set, the rest 0 */
	n = (size_t)snprintf(buf, sizeof(buf), "%d (%s) %c %d 0 0 0 0 %u 0 0 0 0 %llu 0 0 0 20 %d 1 0 %.0f 0 0", t->tid,
			     t->comm, t->zombie ? 'Z' : 'R', t->ppid, t->flags, t->run_ns / 10000000ull, t->nice,
			     t->born * (double)sysconf(_SC_CLK_TCK));
	for (int f = 25; f <= 38; f++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, " 0");
	snprintf(buf + n, sizeof(buf) - n, " %d %d %d 0 0 0 0 0 0 0 0 0 0 0\n", t->cpu, t->rt_prio, t->policy);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", t->pid, t->tid);
	assert_int_equal(test_write(dir, rel, buf), 0);
	if (t->pid == t->tid) {
		snprintf(rel, sizeof(rel), "proc/%d/stat", t->pid);
		assert_int_equal(test_write(dir, rel, buf), 0);
		snprintf(rel, sizeof(rel), "proc/%d/cgroup", t->pid);
		assert_int_equal(test_write(dir, rel, cgroup), 0);
	}
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/schedstat", t->pid, t->tid);
	snprintf(buf, sizeof(buf), "%llu 1234 56\n", t->run_ns);
	assert_int_equal(test_write(dir, rel, buf), 0);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/status", t->pid, t->tid);
	snprintf(buf, sizeof(buf), "Name:\t%s\nState:\tR (running)\nCpus_allowed:\tf\nCpus_allowed_list:\t%s\n"
		 "voluntary_ctxt_switches:\t1\n", t->comm, t->allowed ? t->allowed : "0-3");
	assert_int_equal(test_write(dir, rel, buf), 0);
}

#define JOB 100
#define NS(s) ((unsigned long long)((s) * 1e9))

/* The host at the start (0) and the end (1) of the trial. */
static void write_tree(const char *dir, int end)
{
	const struct fake_task tasks[] = {
		/* the job: 1.5 s on CPU 1; a thread re-pinned mid-trial; a child
		 * that has exited by the end (a zombie) */
		{ JOB, JOB, 1, "trainer", 0x400040, 0, 1, 0, 0, NS(10 + 1.5 * end), "1", false, 0 },
		{ JOB, 101, 1, "trainer", 0x400040, 0, 1, 0, 0, NS(1), end ? "0-1" : "1", false, 0 },
		{ 150, 150, JOB, "worker", 0x400040, 0, 1, 0, 0, NS(5 + 0.2 * end), "1-2", end, 0 },
		/* nodetune exec binding the rank it is about to exec: the policy, not a change */
		{ 160, 160, JOB, "nodetune", 0x400040, 0, 1, 0, 0, NS(1), end ? "1" : "0-3", false, 0 },
		/* a SCHED_FIFO 50 neighbour on CPU 1: 0.4 s */
		{ 200, 200, 1, "str\033[2Jess", 0x400040, 0, 1, 50, SCHED_FIFO, NS(3 + 0.4 * end), NULL, false, 0 },
		/* ksoftirqd/1: 0.1 s */
		{ 300, 300, 2, "ksoftirqd/1", 0x208040, 0, 1, 0, SCHED_OTHER, NS(2 + 0.1 * end), NULL, false, 0 },
		/* busy, but on CPU 3, not a rank CPU */
		{ 400, 400, 1, "bash", 0x400000, 5, 3, 0, SCHED_OTHER, NS(1 + 1.0 * end), NULL, false, 0 },
		/* idle all along on CPU 1 */
		{ 500, 500, 1, "sleepy", 0x400000, -5, 1, 0, SCHED_BATCH, NS(7), NULL, false, 0 },
	};
	/* a thread of stress born between the samples: 0.1 s, all counted */
	const struct fake_task born = { 200, 201, 1, "str\033[2Jess", 0x400040, 0, 1, 50, SCHED_FIFO, NS(0.1), NULL, false, 0 };
	char buf[1024];

	for (size_t i = 0; i < sizeof(tasks) / sizeof(tasks[0]); i++)
		write_task(dir, &tasks[i], tasks[i].pid == 200 ? "12:cpu,cpuacct:/noisy\007\n1:name=systemd:/sys\n0::/v2\n"
					 : tasks[i].pid == 300 ? "0::/\n"
					 /* the job moved itself during the trial */
					 : tasks[i].pid == JOB && end ? "3:cpu:/limited\n1:name=systemd:/user\n"
					 /* an exited process reads as in the root cgroup */
					 : tasks[i].pid == 150 && end ? "3:cpu:/\n1:name=systemd:/\n"
					 : "1:name=systemd:/user\n");
	if (end)
		write_task(dir, &born, "");
	test_write(dir, "proc/self", "not a pid\n");
	snprintf(buf, sizeof(buf), "%d.00 1.00\n", end ? 102 : 100);
	test_write(dir, "proc/uptime", buf);
	/* /proc/stat: CPU 1's irq 10 -> 12, softirq 5 -> 25 (ticks) */
	snprintf(buf, sizeof(buf), "cpu  1 1 1 1 1 1 1 0\ncpu0 1 0 1 100 0 0 0 0\ncpu1 1 0 1 100 0 %d %d 0\n"
		 "cpu2 1 0 1 100 0 0 0 0\ncpu3 1 0 1 100 0 0 0 0\nintr 0\n", end ? 12 : 10, end ? 25 : 5);
	test_write(dir, "proc/stat", buf);
	snprintf(buf, sizeof(buf), "           CPU0       CPU1       CPU2       CPU3\n"
		 "  0:         10          0          0          0   IO-APIC   2-edge      timer\n"
		 " 24:          0        %d          0          0   PCI-MSI 524288-edge      nvme0q1\n"
		 " 25:          0          5          0          0   PCI-MSI 524289-edge      mlx5_comp0\n"
		 "LOC:       1000       %d       1000       1000   Local timer interrupts\n"
		 "TLB:          1         %d          3          4   TLB shootdowns\n"
		 "ERR:          0\n", end ? 400 : 100, end ? 2500 : 2000, end ? 12 : 2);
	test_write(dir, "proc/interrupts", buf);
	snprintf(buf, sizeof(buf), "                    CPU0       CPU1       CPU2       CPU3\n"
		 "          HI:          0          0          0          0\n"
		 "       TIMER:         10         %d         30         40\n"
		 "      NET_RX:          0       %d          0          0\n", end ? 70 : 20, end ? 1100 : 100);
	test_write(dir, "proc/softirqs", buf);
}

static const struct culprit_task *find_pid(const struct culprit_result *r, int pid)
{
	for (int i = 0; i < r->n_tasks; i++)
		if (r->tasks[i].pid == pid)
			return &r->tasks[i];
	return NULL;
}

static void check_tree_tasks(const struct culprit_result *r)
{
	const struct culprit_task *t;

	assert_string_equal(r->cpus, "1");          /* where the job ran */
	assert_false(r->cpus_given);
	assert_true(fabs(r->seconds - 2.0) < 1e-9);
	assert_int_equal(r->samples, 2);
	assert_true(r->schedstat);
	assert_int_equal(r->n_culprits, 2);         /* not the job, its child, bash (CPU 3), sleepy */
	assert_int_equal(r->n_tasks, 2);
	t = &r->tasks[0];
	assert_int_equal(t->pid, 200);
	assert_string_equal(t->comm, "str?[2Jess");    /* a name is anyone's: printable only */
	assert_string_equal(t->cgroup, "/noisy?");
	assert_string_equal(culprit_policy_name(t->policy), "SCHED_FIFO");
	assert_int_equal(t->priority, 50);
	assert_false(t->kthread);
	assert_int_equal(t->threads, 2);            /* the born thread counted */
	assert_int_equal(t->top_cpu, 1);
	assert_true(fabs(t->top_share - 0.25) < 1e-9);
	assert_int_equal(t->n_cpus, 1);
	assert_true(fabs(t->cpus[0].seconds - 0.5) < 1e-9);
	t = &r->tasks[1];
	assert_int_equal(t->pid, 300);
	assert_true(t->kthread);
	assert_string_equal(t->cgroup, "/");
	assert_string_equal(culprit_policy_name(t->policy), "SCHED_OTHER");
	assert_true(fabs(t->top_share - 0.05) < 1e-9);
	assert_null(find_pid(r, JOB));
	assert_null(find_pid(r, 150));
	/* the job's rows, with their main thread's allowed CPUs (not thread
	 * 101's, which moved to 0-1), and the cgroup each was in at the end
	 * (the job moved itself to /limited), or when last seen alive (the
	 * worker, a zombie at the end, reads as in / then) */
	assert_int_equal(r->n_job, 2);
	for (int i = 0; i < r->n_job; i++) {
		assert_true(r->job[i].pid == JOB || r->job[i].pid == 150);
		assert_string_equal(r->job[i].allowed, r->job[i].pid == JOB ? "1" : "1-2");
		assert_string_equal(r->job[i].cgroup, r->job[i].pid == JOB ? "/limited" : "/user");
	}
}

static void check_tree_irqs(const struct culprit_result *r)
{
	const struct culprit_cpu_irq *o;
	long hz = sysconf(_SC_CLK_TCK);

	assert_int_equal(r->n_irq_cpus, 1);
	o = &r->irq_cpus[0];
	assert_int_equal(o->cpu, 1);
	assert_int_equal(o->n_irqs, 3);             /* the busiest first; 25 did not move */
	assert_string_equal(o->irqs[0].label, "LOC");
	assert_string_equal(o->irqs[0].name, "Local timer interrupts");
	assert_int_equal(o->irqs[0].count, 500);
	assert_string_equal(o->irqs[1].label, "24");
	assert_string_equal(o->irqs[1].name, "nvme0q1");
	assert_int_equal(o->irqs[1].count, 300);
	assert_string_equal(o->irqs[2].label, "TLB");
	assert_int_equal(o->irqs[2].count, 10);
	assert_int_equal(o->n_softirqs, 2);
	assert_string_equal(o->softirqs[0].label, "TIMER");
	assert_int_equal(o->softirqs[0].count, 50);
	assert_string_equal(o->softirqs[1].label, "NET_RX");
	assert_int_equal(o->softirqs[1].count, 1000);
	assert_true(fabs(o->irq_seconds - 2.0 / hz) < 1e-9);
	assert_true(fabs(o->softirq_seconds - 20.0 / hz) < 1e-9);
	assert_true(fabs(o->softirq_share - 10.0 / hz) < 1e-9);
	assert_int_equal(r->n_changes, 1);
	assert_int_equal(r->changes[0].pid, JOB);
	assert_int_equal(r->changes[0].tid, 101);
	assert_string_equal(r->changes[0].comm, "trainer");
	assert_string_equal(r->changes[0].before, "1");
	assert_string_equal(r->changes[0].after, "0-1");
	assert_true(fabs(r->changes[0].t - 2.0) < 1e-9);
}

/* r's row of short-lived processes of comm; NULL: none. */
static const struct culprit_task *find_short(const struct culprit_result *r, const char *comm)
{
	for (int i = 0; i < r->n_tasks; i++)
		if (r->tasks[i].short_lived && !strcmp(r->tasks[i].comm, comm))
			return &r->tasks[i];
	return NULL;
}

/* A watch of the job JOB over the tree in a new dir (its start taken),
 * the tree then moved to its end. */
static struct culprit *tree_watch(char dir[64], struct fsroot **root)
{
	struct nt_err err = { 0 };
	struct culprit *c;
	int job = JOB;

	assert_non_null(test_tmpdir(dir, 64));
	write_tree(dir, 0);
	*root = fsroot_open(dir);
	assert_non_null(*root);
	c = culprit_start(*root, &job, 1, &err);
	assert_non_null(c);
	write_tree(dir, 1);
	return c;
}

static void test_tree(void **state)
{
	struct culprit_result r = { 0 };
	struct nt_err err = { 0 };
	struct culprit *c;
	struct fsroot *root;
	char dir[64];
	json_t *j;

	(void)state;
	c = tree_watch(dir, &root);
	assert_int_equal(culprit_stop(c, &r, &err), 0);
	check_tree_tasks(&r);
	check_tree_irqs(&r);
	j = culprit_json(&r);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "tasks"), 0), "policy")),
			    "SCHED_FIFO");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(json_object_get(j, "irqs"), 0),
									    "softirqs"), "NET_RX")), 1000);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(j, "tasks"), 0), "top_cpu")),
			 r.tasks[0].top_cpu);
	/* allowed CPUs: a job row's list, null for others (not read) */
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(j, "tasks"), 0), "allowed_cpus")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "job"), 0), "allowed_cpus")),
			    r.job[0].allowed);
	json_decref(j);
	r.tasks[0].top_cpu = -1;        /* a task seen on no CPU: null, not -1 */
	j = culprit_json(&r);
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(j, "tasks"), 0), "top_cpu")));
	json_decref(j);
	culprit_result_free(&r);
	culprit_result_free(NULL);
	assert_int_equal(culprit_stop(NULL, &r, &err), -EINVAL);
	fsroot_free(root);
	test_rmrf(dir);
}

/* Tasks no sample saw, from their exit records (as the taskstats listener
 * gives them between the listing and the swap): a neighbour's loop of
 * short processes is one row under the process that started them; a chain
 * (the job's `sh -c` that ran `true`, the child's record first) is the
 * job's; a thread of a sampled process adds to it; the rest of a task a
 * sample saw is put on the CPU it exited on, and a sampled process of a
 * group's kind that exited joins the group; one whose starter is unknown
 * says so. */
static void test_exits(void **state)
{
	struct culprit_result r = { 0 }, a = { .seconds = 2 };
	struct nt_err err = { 0 };
	struct culprit *c;
	struct fsroot *root;
	char dir[64], buf[2048];
	const struct culprit_task *t;
	json_t *j, *x;
	struct taskexit_rec rec;

	(void)state;
	c = tree_watch(dir, &root);
	assert_int_equal(culprit_sample(c), 0);
#define EXIT(PID, TGID, PPID, COMM, CPU, SEC) do { \
		rec = (struct taskexit_rec){ .cpu = (CPU), .pid = (PID), .tgid = (TGID), .ppid = (PPID), \
					     .run_ns = NS(SEC), .run_exact = true }; \
		snprintf(rec.comm, sizeof(rec.comm), "%s", (COMM)); \
		assert_int_equal(culprit_exit_record(c, &rec), 0); \
	} while (0)
	for (int i = 0; i < 10; i++)
		EXIT(600 + i, 600 + i, 200, "awk", 1, 0.05);    /* a neighbour's loop */
	EXIT(701, 701, 700, "true", 1, 0.2);                     /* the job's sh -c true: the child first */
	EXIT(700, 700, JOB, "sh", 1, 0.01);
	EXIT(102, JOB, 1, "trainer", 1, 0.3);                    /* a thread of the job's trainer */
	EXIT(150, 150, JOB, "worker", 1, 5.3);                   /* the zombie worker: 0.1 s since the sample */
	EXIT(151, 151, JOB, "worker", 1, 0.05);                  /* and one no sample saw */
	EXIT(800, 800, 999, "cr\033on", 1, 0.1);                 /* started by a process never seen */
	EXIT(900, 900, 400, "gcc", 3, 1.0);                      /* on CPU 3, not a rank CPU */
	/* thread 101 of the trainer, seen, exits with ticks (no delay
	 * accounting): not compared with schedstat's time, nothing added */
	rec = (struct taskexit_rec){ .cpu = 1, .pid = 101, .tgid = JOB, .ppid = 1, .run_ns = NS(9), .run_exact = false };
	assert_int_equal(culprit_exit_record(c, &rec), 0);
	/* exited before a sample listed it, and then listed as a zombie not
	 * yet reaped: the sample has its time, the record adds none */
	EXIT(950, 950, JOB, "zomb", 1, 0.1);
	write_task(dir, &(struct fake_task){ 950, 950, JOB, "zomb", 0x400040, 0, 1, 0, 0, NS(0.1), NULL, true, 101 },
		   "1:name=systemd:/user\n");
	/* a thread gone before its process was first listed: the process's */
	EXIT(961, 960, JOB, "late-thr", 1, 0.05);
	write_task(dir, &(struct fake_task){ 960, 960, JOB, "late", 0x400040, 0, 1, 0, 0, NS(0.02), NULL, false, 101 },
		   "1:name=systemd:/user\n");
#undef EXIT
	assert_int_equal(culprit_stop(c, &r, &err), 0);
	assert_true(r.exits_counted);
	assert_int_equal(r.exits_seen, 20);
	assert_int_equal(r.exits_lost, 0);
	/* others: stress (0.25), the awk loop under it (0.25), the orphan
	 * (0.05), ksoftirqd (0.05) */
	assert_int_equal(r.n_culprits, 4);
	t = find_short(&r, "awk");
	assert_non_null(t);
	assert_int_equal(t->short_lived, 10);
	assert_int_equal(t->pid, 200);
	assert_string_equal(t->started_by, "str?[2Jess");
	assert_string_equal(t->cgroup, "/noisy?");               /* its starter's */
	assert_true(fabs(t->seconds - 0.5) < 1e-9);
	assert_int_equal(t->top_cpu, 1);
	assert_true(fabs(t->top_share - 0.25) < 1e-9);
	t = find_short(&r, "cr?on");
	assert_non_null(t);
	assert_int_equal(t->pid, 800);
	assert_string_equal(t->started_by, "");
	/* the job: its trainer with the unseen thread, the worker group (the
	 * sampled zombie joined), sh and true under the trainer, the zombie
	 * once, the late process with its thread */
	assert_int_equal(r.n_job, 6);
	for (int i = 0; i < r.n_job; i++) {
		t = &r.job[i];
		if (!strcmp(t->comm, "trainer")) {
			assert_int_equal(t->short_lived, 0);
			assert_true(fabs(t->seconds - 1.8) < 1e-9);
		} else if (!strcmp(t->comm, "worker")) {
			assert_int_equal(t->short_lived, 2);
			assert_true(fabs(t->seconds - 0.35) < 1e-9);
		} else if (!strcmp(t->comm, "true")) {
			assert_int_equal(t->short_lived, 1);
			assert_int_equal(t->pid, JOB);
			assert_string_equal(t->started_by, "trainer");
			assert_true(fabs(t->seconds - 0.2) < 1e-9);
		} else if (!strcmp(t->comm, "zomb")) {
			assert_int_equal(t->short_lived, 0);
			assert_true(fabs(t->seconds - 0.1) < 1e-9);
		} else if (!strcmp(t->comm, "late")) {
			assert_int_equal(t->short_lived, 0);
			assert_true(fabs(t->seconds - 0.07) < 1e-9);
		} else {
			assert_string_equal(t->comm, "sh");
			assert_true(fabs(t->seconds - 0.01) < 1e-9);
		}
	}
	/* the text: a culprit line, the job's line, its table */
	assert_true(culprit_describe_top(&a, &r, buf, sizeof(buf)) >= 2);
	print_message("%s", buf);
	assert_non_null(strstr(buf, "10 short-lived processes (awk, SCHED_OTHER 0) started by pid 200 (str?[2Jess) in "
				    "cgroup /noisy? ran 25.0% of CPU 1 during B trials, 0% during A\n"));
	assert_int_equal(culprit_describe_job(&a, &r, -1, buf, sizeof(buf)), 3);
	print_message("%s", buf);
	assert_non_null(strstr(buf, "B's command starts short-lived processes (true, SCHED_OTHER 0; 1 in its trials, "
				    "started by pid 100 (trainer)) that took 10.0% of a CPU on the rank CPUs (most on CPU "
				    "1); A has no such process\n"));
	assert_true(culprit_job_table(&a, &r, buf, sizeof(buf)) > 0);
	print_message("%s", buf);
	assert_non_null(strstr(buf, "B    (2)      worker "));
	assert_non_null(strstr(buf, "(N) in the pid column: N short-lived processes"));
	/* JSON: the row's count and starter, the result's records */
	j = culprit_json(&r);
	assert_non_null(j);
	x = json_object_get(j, "exits");
	assert_true(json_is_true(json_object_get(x, "counted")));
	assert_int_equal(json_integer_value(json_object_get(x, "records")), 20);
	assert_true(json_is_null(json_object_get(x, "why")));
	x = NULL;
	for (size_t i = 0; i < json_array_size(json_object_get(j, "tasks")); i++) {
		json_t *row = json_array_get(json_object_get(j, "tasks"), i);

		if (!strcmp(json_string_value(json_object_get(row, "comm")), "awk"))
			x = json_object_get(row, "short_lived");
	}
	assert_int_equal(json_integer_value(json_object_get(x, "processes")), 10);
	assert_string_equal(json_string_value(json_object_get(x, "started_by")), "str?[2Jess");
	json_decref(j);
	culprit_result_free(&r);
	fsroot_free(root);
	test_rmrf(dir);

	/* a kernel before taskstats v12 (no tgid): a task no sample saw is
	 * neither a row nor a guess; the result says why */
	c = tree_watch(dir, &root);
	assert_int_equal(culprit_sample(c), 0);
	rec = (struct taskexit_rec){ .cpu = 1, .pid = 600, .ppid = 200, .run_ns = NS(0.5), .run_exact = true };
	assert_int_equal(culprit_exit_record(c, &rec), 0);
	assert_int_equal(culprit_stop(c, &r, &err), 0);
	assert_false(r.exits_counted);
	assert_non_null(strstr(r.exits_why, "before version 12"));
	assert_null(find_short(&r, ""));
	culprit_result_free(&r);
	fsroot_free(root);
	test_rmrf(dir);
}

/* The rank CPUs given by the caller; a bad list refused. */
static void test_tree_given_cpus(void **state)
{
	struct culprit_result r = { 0 };
	struct nt_err err = { 0 };
	struct culprit *c;
	struct fsroot *root;
	char dir[64];

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	write_tree(dir, 0);
	root = fsroot_open(dir);
	c = culprit_start(root, NULL, 0, &err);
	assert_non_null(c);
	assert_int_equal(culprit_set_cpus(c, "1,3-", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "rank CPUs '1,3-'"));
	assert_int_equal(culprit_set_cpus(c, "3", &err), 0);
	assert_int_equal(culprit_add_pids(c, (int[]){ JOB }, 1), 0);
	write_tree(dir, 1);
	assert_int_equal(culprit_stop(c, &r, &err), 0);
	assert_string_equal(r.cpus, "3");
	assert_true(r.cpus_given);
	assert_int_equal(r.n_tasks, 1);
	assert_int_equal(r.tasks[0].pid, 400);
	assert_int_equal(r.tasks[0].priority, 5);    /* nice */
	assert_true(fabs(r.tasks[0].top_share - 0.5) < 1e-9);
	culprit_result_free(&r);
	fsroot_free(root);
	test_rmrf(dir);
}

/* A thread's start-up placement is not an affinity change: a launcher
 * (taskset) seen twice before it bound itself, bound 0.35 s after its
 * start, says nothing.  A change is: a thread of the job that ran for 50 s
 * before the trial, re-pinned by the first sample; a child re-pinned 1.35 s
 * after its start. */
static void write_settle(const char *dir, double now, const char *launcher_cpus, const char *child_cpus)
{
	const struct fake_task tasks[] = {
		{ JOB, JOB, 1, "trainer", 0x400040, 0, 1, 0, 0, NS(10), "1", .born = 50 },
		{ JOB, 101, 1, "trainer", 0x400040, 0, 1, 0, 0, NS(1), now > 100 ? "0-1" : "1", .born = 50 },
		{ 170, 170, JOB, now > 100.1 ? "worker" : "taskset", 0x400040, 0, 1, 0, 0, NS(1), launcher_cpus,
		  .born = 100.05 },
		{ 171, 171, JOB, "loader", 0x400040, 0, 1, 0, 0, NS(1), child_cpus, .born = 100.15 },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(tasks) / sizeof(tasks[0]); i++)
		if (tasks[i].pid != 170 || launcher_cpus)
			if (tasks[i].pid != 171 || child_cpus)
				write_task(dir, &tasks[i], "0::/nt\n");
	snprintf(buf, sizeof(buf), "%.2f 1.00\n", now);
	test_write(dir, "proc/uptime", buf);
}

static void test_startup_placement(void **state)
{
	struct culprit_result r = { 0 };
	struct nt_err err = { 0 };
	struct culprit *c;
	struct fsroot *root;
	char dir[64];
	int job = JOB;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	write_settle(dir, 100, NULL, NULL);
	root = fsroot_open(dir);
	assert_non_null(root);
	c = culprit_start(root, &job, 1, &err);
	assert_non_null(c);
	write_settle(dir, 100.1, "0-3", NULL);       /* the launcher, seen before it binds */
	assert_int_equal(culprit_sample(c), 0);
	write_settle(dir, 100.2, "0-3", "0-3");      /* exec'd, not bound yet; the loader born */
	assert_int_equal(culprit_sample(c), 0);
	write_settle(dir, 100.4, "1", "0-3");        /* bound */
	assert_int_equal(culprit_sample(c), 0);
	write_settle(dir, 101.5, "1", "2");          /* the loader re-pinned */
	assert_int_equal(culprit_stop(c, &r, &err), 0);
	assert_int_equal(r.n_changes, 2);
	for (int i = 0; i < r.n_changes; i++) {
		assert_int_not_equal(r.changes[i].pid, 170);
		assert_true(r.changes[i].tid == 101 || r.changes[i].tid == 171);
	}
	culprit_result_free(&r);
	fsroot_free(root);
	test_rmrf(dir);
}

/* ---- live ------------------------------------------------------------------- */

static pid_t child(int cpu, bool busy)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(20);               /* never outlive a broken test */
		for (;;) {
			struct timespec t0, t;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			do
				clock_gettime(CLOCK_MONOTONIC, &t);
			while (busy || (t.tv_nsec - t0.tv_nsec + 1000000000L * (t.tv_sec - t0.tv_sec)) < 1000000L);
			usleep(10000);   /* the job: 1 ms of work every ~11 ms */
		}
	}
	/* pinned by the parent, before the first sample: a child pinning
	 * itself may run late (behind a SCHED_FIFO hog on its CPU), after the
	 * test's own change, and undo it */
	{
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		assert_int_equal(sched_setaffinity(pid, sizeof(set), &set), 0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Stop (SIGSTOP, waited for) or continue PID, a child of this test. */
static void hold(pid_t pid, bool stop)
{
	int status;

	assert_int_equal(kill(pid, stop ? SIGSTOP : SIGCONT), 0);
	if (stop) {
		assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
		assert_true(WIFSTOPPED(status));
	}
}

/* Sample for ms milliseconds; at half time, widen the job's CPUs. */
/* PID's time on a CPU so far, in ns, as the kernel counts it (the first
 * field of /proc/PID/schedstat); -1 when unreadable. */
static long long cpu_ns(pid_t pid)
{
	char path[64];
	long long ns = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	if (fscanf(f, "%lld", &ns) != 1)
		ns = -1;
	fclose(f);
	return ns;
}

/* Sample every 50 ms until the hog BUSY has run WANT_NS more (an event,
 * with a deadline of 20 s: a loaded host gives it its CPU later, never
 * less of it in the end); the job is let onto CPU 0 halfway, once it is
 * past its start-up (CULPRIT_SETTLE_S: a change before that is where it
 * starts).  Returns the hog's ns over the trial. */
static void live_trial(struct culprit *c, pid_t job, pid_t busy, long long want_ns)
{
	long long b0 = cpu_ns(busy), b = b0;
	bool moved = false;

	assert_true(b0 >= 0);
	for (int t = 0; b - b0 < want_ns || !moved; t += 50) {
		if (t >= 20000)
			fail_msg("the hog ran %lld ms in 20 s, not %lld", (b - b0) / 1000000, want_ns / 1000000);
		/* t: ms since the first sample, at most the job's age */
		if (!moved && b - b0 >= want_ns / 2 && t >= 1000 * CULPRIT_SETTLE_S + 100) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(0, &set);
			CPU_SET(1, &set);
			assert_int_equal(sched_setaffinity(job, sizeof(set), &set), 0);
			moved = true;
		}
		usleep(50000);
		assert_int_equal(culprit_sample(c), 0);
		b = cpu_ns(busy);
	}
}

static void live(bool fifo)
{
	struct culprit_result r = { 0 };
	struct nt_err err = { 0 };
	struct sched_param sp = { .sched_priority = 10 };
	struct fsroot *root = fsroot_open("/");
	const struct culprit_task *t;
	cpu_set_t mine, zero;
	pid_t job, busy;
	struct culprit *c;
	long long ran, b0;
	double kshare;

	if (sched_getaffinity(0, sizeof(mine), &mine) < 0 || !CPU_ISSET(0, &mine) || !CPU_ISSET(1, &mine)) {
		fsroot_free(root);
		test_skip_host("cpus2", "CPUs 0 and 1 are needed (a second CPU is missing)");
	}
	CPU_ZERO(&zero);
	CPU_SET(0, &zero);
	sched_setaffinity(0, sizeof(zero), &zero);  /* we sample from CPU 0 */
	job = child(1, false);
	busy = child(1, true);
	if (fifo && sched_setscheduler(busy, SCHED_FIFO, &sp) < 0) {
		reap(busy);
		reap(job);
		sched_setaffinity(0, sizeof(mine), &mine);
		fsroot_free(root);
		test_skip_host("root", "SCHED_FIFO refused (%s): not root, or no CAP_SYS_NICE", strerror(errno));
	}
	/* the hog is stopped at the culprit's first sample and at its last
	 * (culprit_stop's), and the kernel's count read there: both figures
	 * cover the same time.  Read around the loop instead, the start and
	 * the stop counted in the culprit's and not in the kernel's: under
	 * ASan at load 25-37, 15 of 20 FIFO runs differed by 5-19 points */
	hold(busy, true);
	b0 = cpu_ns(busy);
	c = culprit_start(root, &job, 1, &err);
	hold(busy, false);
	assert_non_null(c);
	assert_true(b0 >= 0);
	assert_int_equal(culprit_set_cpus(c, "1", &err), 0);
	live_trial(c, job, busy, 500000000LL);
	hold(busy, true);
	assert_int_equal(culprit_stop(c, &r, &err), 0);
	ran = cpu_ns(busy) - b0;
	reap(busy);
	reap(job);
	sched_setaffinity(0, sizeof(mine), &mine);
	t = find_pid(&r, busy);
	assert_non_null(t);
	kshare = (double)ran / 1e9 / r.seconds;
	print_message("live%s: busy pid %d: %.1f%% of CPU %d (the kernel: %.1f%%, %.3f s of %.3f); %d samples, %.2f ms "
		      "each (max %.2f)\n", fifo ? " fifo" : "", busy, 100 * t->top_share, t->top_cpu, 100 * kshare,
		      (double)ran / 1e9, r.seconds, r.samples, r.sample_ms_mean, r.sample_ms_max);
	assert_int_equal(t->top_cpu, 1);
	/* the share is what the kernel counted for the hog over the trial,
	 * whatever else loads CPU 1 (other tests, a loaded host).  Margin:
	 * the hog stopped at both ends, the two windows are the same; in 40
	 * runs at load 44-46 (bench/timing_margins.sh, culprit_dev_pp) they
	 * differed by 0.000 plain (ASan: RESULTS.md §14.2) */
	if (fabs(t->top_share - kshare) > 0.05)
		fail_msg("culprit says %.3f of CPU 1, the kernel %.3f", t->top_share, kshare);
	/* SCHED_FIFO 10 runs ahead of every SCHED_OTHER task on its CPU, so
	 * it has all of it but the RT throttle's 5% (sched_rt_runtime_us):
	 * measured shortfall p99 0.010 in 20 runs (culprit_fifo_short), so 0.5
	 * is 50x that; at load 44-47 on 2026-11-28, 0.217 plain and 0.276
	 * under ASan (other sessions' real-time tasks on CPU 1): 2.3x and 1.8x,
	 * left as it is, since a lower bound would no longer tell FIFO from a
	 * SCHED_OTHER hog (RESULTS.md §14.2) */
	if (fifo)
		assert_true(t->top_share > 0.5);
	assert_string_equal(culprit_policy_name(t->policy), fifo ? "SCHED_FIFO" : "SCHED_OTHER");
	/* SCHED_OTHER's figure is the nice value, inherited from this test's
	 * (`nice make unit`) */
	assert_int_equal(t->priority, fifo ? 10 : getpriority(PRIO_PROCESS, 0));
	assert_null(find_pid(&r, job));
	assert_null(find_pid(&r, getpid()));
	assert_int_equal(r.n_changes, 1);
	assert_int_equal(r.changes[0].pid, job);
	assert_string_equal(r.changes[0].before, "1");
	assert_string_equal(r.changes[0].after, "0-1");
	culprit_result_free(&r);
	fsroot_free(root);
}

static void test_live_other(void **state)
{
	(void)state;
	live(false);
}

static void test_live_fifo(void **state)
{
	(void)state;
	live(true);
}

/* ---- A against B -------------------------------------------------------------- */

/* Affinity changes by kind, A against B: the job's own threads settling
 * alike in both arms are one line at the end; what B does and A does not
 * leads, with its counts per arm. */
static void test_describe_changes(void **state)
{
	struct culprit_result a = { 0 }, b = { 0 };
	char buf[1024];

	(void)state;
	for (int i = 0; i < 16; i++) {       /* the harness's threads, both arms: 2 per trial */
		a.changes[a.n_changes++] = (struct culprit_affinity_change){ .pid = 100 + i, .tid = 200 + i,
			.comm = "nodetune-harnes", .before = "1", .after = "0", .t = 0.2 };
		b.changes[b.n_changes++] = (struct culprit_affinity_change){ .pid = 300 + i, .tid = 400 + i,
			.comm = "nodetune-harnes", .before = "1", .after = "0", .t = 0.2 };
	}
	for (int i = 0; i < 4; i++)          /* B's helper, moved onto rank CPU 1 */
		b.changes[b.n_changes++] = (struct culprit_affinity_change){ .pid = 500 + i, .tid = 500 + i,
			.comm = "helper", .before = "0-1", .after = "1", .t = 1.5 };
	assert_int_equal(culprit_describe_changes(&a, 8, &b, 8, buf, sizeof(buf)), 2);
	print_message("%s", buf);
	assert_string_equal(buf, "helper's threads: allowed CPUs 0-1 -> 1 4 times in 8 B trials, 0 in 8 A "
			    "(first pid 500 thread 500, 1.5 s into a trial)\n"
			    "alike in both arms, so not a difference: 1 kind of affinity change (16 in A, 16 in B), "
			    "e.g. nodetune-harnes's threads 1 -> 0\n");
	/* alike within a factor of 2 per trial; 16 over 8 trials against 16 over 2 is not */
	assert_int_equal(culprit_describe_changes(&a, 8, &a, 8, buf, sizeof(buf)), 1);
	assert_non_null(strstr(buf, "alike in both arms"));
	assert_int_equal(culprit_describe_changes(&a, 8, &a, 2, buf, sizeof(buf)), 1);
	assert_non_null(strstr(buf, "nodetune-harnes's threads: allowed CPUs 1 -> 0 16 times in 2 B trials, 16 in 8 A"));
	assert_int_equal(culprit_describe_changes(NULL, 0, NULL, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(culprit_describe_changes(&a, 8, &b, 8, buf, 40), -ENOSPC);
}

/* The job's own tree, A against B: a real-time helper only B's command
 * starts leads; the ranks, alike in both, say nothing; a helper in both
 * that takes far more in B is named with A's figure. */
static void test_describe_job(void **state)
{
	struct culprit_cpu_time r0 = { 0, 9.5, 0.95 }, r1 = { 1, 9.5, 0.95 }, h1 = { 1, 1.1, 0.11 };
	struct culprit_cpu_time w1a = { 1, 0.2, 0.02 }, w1b = { 1, 3.0, 0.30 };
	struct culprit_task ja[3] = {
		{ .pid = 10, .comm = "rank", .top_cpu = 0, .top_share = 0.95, .seconds = 9.5, .n_cpus = 1, .cpus = &r0 },
		{ .pid = 11, .comm = "rank", .top_cpu = 1, .top_share = 0.95, .seconds = 9.5, .n_cpus = 1, .cpus = &r1 },
		{ .pid = 12, .comm = "worker", .top_cpu = 1, .top_share = 0.02, .seconds = 0.2, .n_cpus = 1, .cpus = &w1a },
	};
	struct culprit_task jb[4] = {
		{ .pid = 20, .comm = "rank", .top_cpu = 0, .top_share = 0.95, .seconds = 9.5, .n_cpus = 1, .cpus = &r0 },
		{ .pid = 21, .comm = "rank", .top_cpu = 1, .top_share = 0.95, .seconds = 9.5, .n_cpus = 1, .cpus = &r1 },
		{ .pid = 4242, .comm = "helper", .policy = SCHED_FIFO, .priority = 50, .top_cpu = 1, .top_share = 0.11,
		  .seconds = 1.1, .n_cpus = 1, .cpus = &h1 },
		{ .pid = 22, .comm = "worker", .top_cpu = 1, .top_share = 0.30, .seconds = 3.0, .n_cpus = 1, .cpus = &w1b },
	};
	struct culprit_result a = { .seconds = 10, .n_job = 3, .job = ja }, b = { .seconds = 10, .n_job = 4, .job = jb };
	char buf[1024];

	(void)state;
	assert_int_equal(culprit_describe_job(&a, &b, -1, buf, sizeof(buf)), 2);
	print_message("%s", buf);
	assert_string_equal(buf, "B's command runs pid 22 (worker, SCHED_OTHER 0) that took 30.0% of a CPU on the rank "
			    "CPUs (most on CPU 1); in A it took 2.0%\n"
			    "B's command runs pid 4242 (helper, SCHED_FIFO 50) that took 11.0% of a CPU on the rank "
			    "CPUs (most on CPU 1); A has no such process\n");
	assert_int_equal(culprit_describe_job(&a, &a, -1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(culprit_describe_job(&b, &a, -1, buf, sizeof(buf)), 2);       /* the mirror: A's command */
	assert_non_null(strstr(buf, "A's command runs pid 4242 (helper, SCHED_FIFO 50)"));
	assert_int_equal(culprit_describe_job(&a, &b, -1, buf, 60), -ENOSPC);
	assert_int_equal(culprit_describe_job(&a, &b, 0, buf, sizeof(buf)), 0);   /* A slower: B's take more, victims */
	assert_int_equal(culprit_describe_job(&a, &b, 1, buf, sizeof(buf)), 2);

	/* per trial: the largest share of one rank CPU of a process not of the
	 * busiest kind (the two ranks, 19 s together) */
	assert_true(fabs(culprit_job_helper_share(&a) - 0.02) < 1e-12);
	assert_true(fabs(culprit_job_helper_share(&b) - 0.30) < 1e-12);
	/* the helper alone, without the worker: its 11% */
	b.n_job = 3;
	assert_true(fabs(culprit_job_helper_share(&b) - 0.11) < 1e-12);
	/* one kind only (the ranks), none at all, no result: 0 */
	a.n_job = 2;
	assert_true(culprit_job_helper_share(&a) == 0);
	a.n_job = 0;
	assert_true(culprit_job_helper_share(&a) == 0);
	assert_true(culprit_job_helper_share(NULL) == 0);
	/* a helper busier than each rank but not than both together is still the helper */
	jb[2].seconds = 12;
	jb[2].top_share = 0.98;
	assert_true(fabs(culprit_job_helper_share(&b) - 0.98) < 1e-12);
}

/* The job's processes as a table: a row per arm for each kind, the busiest
 * kind first (the two ranks, 19 s of 10 s: 190% of a CPU), a kind one arm
 * lacks said so, the kinds past the limit counted; bad sizes. */
static void test_job_table(void **state)
{
	struct culprit_cpu_time r0 = { 0, 9.5, 0.95 }, r1 = { 1, 9.5, 0.95 }, h1 = { 1, 1.1, 0.11 };
	struct culprit_cpu_time w1a = { 1, 0.2, 0.02 }, w1b = { 1, 3.0, 0.30 }, small = { 1, 0.01, 0.001 };
	struct culprit_task ja[3] = {
		{ .pid = 10, .comm = "rank", .cgroup = "/nt/a", .allowed = "0", .top_cpu = 0, .top_share = 0.95,
		  .seconds = 9.5, .n_cpus = 1, .cpus = &r0 },
		{ .pid = 11, .comm = "rank", .cgroup = "/nt/a", .allowed = "1", .top_cpu = 1, .top_share = 0.95,
		  .seconds = 9.5, .n_cpus = 1, .cpus = &r1 },
		{ .pid = 12, .comm = "worker", .cgroup = "/nt/a", .top_cpu = 1, .top_share = 0.02, .seconds = 0.2,
		  .n_cpus = 1, .cpus = &w1a },
	};
	struct culprit_task jb[9] = {
		{ .pid = 20, .comm = "rank", .cgroup = "/nt/b", .allowed = "0", .top_cpu = 0, .top_share = 0.95,
		  .seconds = 9.5, .n_cpus = 1, .cpus = &r0 },
		{ .pid = 21, .comm = "rank", .cgroup = "/nt/b", .allowed = "1", .top_cpu = 1, .top_share = 0.95,
		  .seconds = 9.5, .n_cpus = 1, .cpus = &r1 },
		{ .pid = 4242, .comm = "helper", .cgroup = "/limited", .allowed = "0-1", .policy = SCHED_FIFO,
		  .priority = 50, .top_cpu = 1, .top_share = 0.11, .seconds = 1.1, .n_cpus = 1, .cpus = &h1 },
		{ .pid = 22, .comm = "worker", .cgroup = "/nt/b", .allowed = "0-1", .top_cpu = 1, .top_share = 0.30,
		  .seconds = 3.0, .n_cpus = 1, .cpus = &w1b },
		{ .pid = 30, .comm = "k1", .top_cpu = 1, .top_share = 0.001, .seconds = 0.01, .n_cpus = 1, .cpus = &small },
		{ .pid = 31, .comm = "k2", .top_cpu = 1, .top_share = 0.001, .seconds = 0.01, .n_cpus = 1, .cpus = &small },
		{ .pid = 32, .comm = "k3", .top_cpu = 1, .top_share = 0.001, .seconds = 0.01, .n_cpus = 1, .cpus = &small },
		{ .pid = 33, .comm = "k4", .top_cpu = -1, .top_share = 0, .seconds = 0.004, .n_cpus = 0 },
	};
	struct culprit_result a = { .seconds = 10, .n_job = 3, .job = ja }, b = { .seconds = 10, .n_job = 4, .job = jb };
	char buf[2048];

	(void)state;
	assert_int_equal(culprit_job_table(&a, &b, buf, sizeof(buf)), 3);
	print_message("%s", buf);
	assert_string_equal(buf,
			    "arm  pid      comm             policy                CPU  top  allowed      cgroup\n"
			    "A    10+1     rank             SCHED_OTHER 0      190.0%  0    0|1          /nt/a\n"
			    "B    20+1     rank             SCHED_OTHER 0      190.0%  0    0|1          /nt/b\n"
			    "A    12       worker           SCHED_OTHER 0        2.0%  1    ?            /nt/a\n"
			    "B    22       worker           SCHED_OTHER 0       30.0%  1    0-1          /nt/b\n"
			    "A    -        helper           SCHED_FIFO 50          -   (no such process in A)\n"
			    "B    4242     helper           SCHED_FIFO 50       11.0%  1    0-1          /limited\n");
	/* one kind in many processes: the busiest's pid and top CPU, the
	 * others counted, their allowed lists as far as they fit */
	{
		struct culprit_task many[12];
		struct culprit_result m = { .seconds = 10, .n_job = 12, .job = many };

		for (int i = 0; i < 12; i++) {
			many[i] = ja[0];
			many[i].pid = 100 + i;
			many[i].seconds = i == 7 ? 2 : 0.5;
			many[i].top_cpu = i;
			snprintf(many[i].allowed, sizeof(many[i].allowed), "%d", i);
		}
		assert_int_equal(culprit_job_table(&m, NULL, buf, sizeof(buf)), 1);
		print_message("%s", buf);
		assert_non_null(strstr(buf, "\nA    107+11   rank             SCHED_OTHER 0       75.0%  7    0|1|2|3|4|5|... /nt/a\n"));
	}
	/* more kinds than the limit: the rest counted in one line */
	b.n_job = 8;
	assert_int_equal(culprit_job_table(&a, &b, buf, sizeof(buf)), CULPRIT_TABLE_KINDS);
	assert_non_null(strstr(buf, "B    30       k1 "));
	assert_non_null(strstr(buf, "B    31       k2 "));
	assert_null(strstr(buf, "k3"));
	assert_non_null(strstr(buf, "\n(2 more kinds, each 0.1% of a CPU or less)\n"));
	assert_string_equal(strstr(buf, "\n(2 more"), "\n(2 more kinds, each 0.1% of a CPU or less)\n");
	/* one arm only (B not watched), none at all */
	assert_int_equal(culprit_job_table(&a, NULL, buf, sizeof(buf)), 2);
	assert_non_null(strstr(buf, "B    -        worker "));
	assert_int_equal(culprit_job_table(NULL, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	a.n_job = 0;
	b.n_job = 0;
	assert_int_equal(culprit_job_table(&a, &b, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	/* too small: whole lines only */
	b.n_job = 4;
	assert_int_equal(culprit_job_table(&a, &b, buf, 200), -ENOSPC);
	assert_int_equal(buf[strlen(buf) - 1], '\n');
	assert_int_equal(culprit_job_table(&a, &b, buf, 0), -ENOSPC);
}

static void test_describe(void **state)
{
	struct culprit_cpu_time on1 = { 1, 0.98, 0.098 }, k1 = { 1, 0.3, 0.03 }, k1a = { 1, 0.003, 0.0003 };
	struct culprit_result a = { 0 }, b = { 0 };
	struct culprit_task tb[2] = {
		{ .pid = 4242, .comm = "stress", .cgroup = "/noisy", .policy = SCHED_FIFO, .priority = 50, .top_cpu = 1,
		  .top_share = 0.098, .n_cpus = 1, .cpus = &on1 },
		{ .pid = 12, .comm = "ksoftirqd/1", .kthread = true, .top_cpu = 1, .top_share = 0.0003, .n_cpus = 1,
		  .cpus = &k1a },
	};
	struct culprit_task ta = { .pid = 12, .comm = "ksoftirqd/1", .kthread = true, .top_cpu = 1, .top_share = 0.03,
				   .n_cpus = 1, .cpus = &k1 };
	char buf[512];

	(void)state;
	b.tasks = tb;
	b.n_tasks = 2;
	assert_int_equal(culprit_describe_top(&a, &b, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "pid 4242 (stress, SCHED_FIFO 50) in cgroup /noisy ran 9.8% of CPU 1 during B trials, 0% during A\n");
	a.tasks = &ta;
	a.n_tasks = 1;
	a.n_changes = 1;
	a.changes[0] = (struct culprit_affinity_change){ .pid = 7, .tid = 8, .comm = "python3", .before = "1",
							 .after = "0-1", .t = 0.5 };
	assert_int_equal(culprit_describe_top(&a, &b, buf, sizeof(buf)), 2);   /* the changes are describe_changes' */
	assert_string_equal(buf, "pid 4242 (stress, SCHED_FIFO 50) in cgroup /noisy ran 9.8% of CPU 1 during B trials, 0% during A\n"
			    "pid 12 (ksoftirqd/1, kernel thread, SCHED_OTHER 0) ran 3.0% of CPU 1 during A trials, "
			    "0.0% during B\n");
	assert_int_equal(culprit_describe_top(&a, &b, buf, 100), -ENOSPC);
	assert_string_equal(buf, "pid 4242 (stress, SCHED_FIFO 50) in cgroup /noisy ran 9.8% of CPU 1 during B trials, 0% during A\n");
	assert_int_equal(culprit_describe_top(&b, &b, buf, sizeof(buf)), 0);   /* no difference */
	assert_string_equal(buf, "");
}

/* ---- captured softirq load (review G9, C16) ------------------------------
 *
 * tests/fixtures/softirq-load: the real files of this machine at the start
 * and end of two 3 s windows, A quiet, B with a UDP flood on CPU 1 (its
 * README says how, and what the files hold).  Each window runs through
 * culprit_start and culprit_stop on a tree whose proc/ holds the start
 * files, then the end files; the two results through abwatch_arm_add and
 * abwatch_explain, as ab's report does.  The counts below are read off
 * the files (the README), not off nodetune. */
static void captured_window(const char *dir, const char *fixture, struct culprit_result *r)
{
	static const char *const files[] = { "interrupts", "softirqs", "stat", "uptime" };
	struct nt_err err = { 0 };
	struct fsroot *root;
	struct culprit *c;
	char cmd[1024], src[512];

	for (int end = 0; end < 2; end++) {
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(src, sizeof(src), "tests/fixtures/softirq-load/%s-%s/proc/%s", fixture, end ? "end" : "start",
				 files[i]);
			snprintf(cmd, sizeof(cmd), "mkdir -p '%s/proc' && cp '%s/%s' '%s/proc/%s'", dir, test_srcdir(), src,
				 dir, files[i]);
			assert_int_equal(system(cmd), 0);
		}
		if (end)
			break;
		assert_non_null(root = fsroot_open(dir));
		if (!(c = culprit_start(root, NULL, 0, &err)))
			fail_msg("culprit_start: %s", err.msg);
		assert_int_equal(culprit_set_cpus(c, "1", &err), 0);
	}
	assert_int_equal(culprit_stop(c, r, &err), 0);
	fsroot_free(root);
}

static const struct culprit_irq_count *softirq_of(const struct culprit_result *r, int cpu, const char *label)
{
	for (int i = 0; i < r->n_irq_cpus; i++)
		for (int k = 0; r->irq_cpus[i].cpu == cpu && k < r->irq_cpus[i].n_softirqs; k++)
			if (!strcmp(r->irq_cpus[i].softirqs[k].label, label))
				return &r->irq_cpus[i].softirqs[k];
	return NULL;
}

static void test_captured_softirq(void **state)
{
	struct abwatch_trial t[2];
	struct abwatch_arm arm[2];
	const struct culprit_irq_count *rx;
	char dir[64], buf[2048];
	long hz = sysconf(_SC_CLK_TCK);

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	memset(t, 0, sizeof(t));
	for (int a = 0; a < 2; a++) {
		char sub[128];

		snprintf(sub, sizeof(sub), "%s/%c", dir, "ab"[a]);
		captured_window(sub, a ? "b" : "a", &t[a].culprit);
		t[a].culprit_read = true;
	}
	/* B: CPU 1's NET_RX grew by 118970, its softirq time by 15 ticks in 3.18 s */
	assert_non_null(rx = softirq_of(&t[1].culprit, 1, "NET_RX"));
	assert_int_equal(rx->count, 118970);
	assert_true(fabs(t[1].culprit.seconds - 3.18) < 1e-6);
	assert_int_equal(t[1].culprit.n_irq_cpus, 1);      /* the rank CPU only */
	assert_true(fabs(t[1].culprit.irq_cpus[0].softirq_seconds - 15.0 / hz) < 1e-9);
	/* A: 5506 NET_RX, 4 ticks in 3.11 s */
	assert_non_null(rx = softirq_of(&t[0].culprit, 1, "NET_RX"));
	assert_int_equal(rx->count, 5506);
	assert_true(fabs(t[0].culprit.irq_cpus[0].softirq_seconds - 4.0 / hz) < 1e-9);
	/* the report's line: B's softirq share of CPU 1 against A's */
	for (int a = 0; a < 2; a++) {
		abwatch_arm_init(&arm[a]);
		assert_int_equal(abwatch_arm_add(&arm[a], &t[a]), 0);
	}
	assert_true(abwatch_explain(&arm[0], &arm[1], 1, buf, sizeof(buf)) > 0);
	print_message("%s", buf);
	assert_non_null(strstr(buf, "CPU 1: softirq 4.7% of the time during B (NET_RX 118970"));
	assert_non_null(strstr(buf, "1.3% during A"));
	for (int a = 0; a < 2; a++) {
		abwatch_arm_release(&arm[a]);
		abwatch_trial_release(&t[a]);
	}
	test_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_exits),
		cmocka_unit_test(test_tree_given_cpus),
		cmocka_unit_test(test_live_other),
		cmocka_unit_test(test_live_fifo),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_startup_placement),
		cmocka_unit_test(test_describe_changes),
		cmocka_unit_test(test_describe_job),
		cmocka_unit_test(test_job_table),
		cmocka_unit_test(test_captured_softirq),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
