/* SPDX-License-Identifier: MIT */
/* culprit.h — who else used the job's CPUs during a trial.
 *
 * The A/B engine watches each trial with one struct culprit: it gives the
 * job's pids (every thread and descendant of them is the job too,
 * descendants looked for at every sample) and, where it knows them, the
 * CPUs the ranks were bound to.  At the end it gets the tasks other than
 * the job's that ran on those CPUs and for how long, the IRQs and softirqs
 * counted there, the irq/softirq time of /proc/stat, and every change of a
 * job thread's allowed CPUs.
 *
 * How a task's time is put on a CPU, without a tracer: every sample reads
 * each thread's proc/PID/task/TID/schedstat (its run time, ns); a thread
 * whose run time moved has its stat read too, and the run time since the
 * last sample is put on the CPU it was last seen on (stat field 39,
 * "processor").  This is an approximation:
 *   - exact for a thread that stays on one CPU (pinned: the typical noisy
 *     neighbour, an RT burst, a per-CPU kernel thread such as ksoftirqd/N);
 *   - a thread that moves between CPUs within one interval has all of that
 *     interval's time put on the CPU where it last ran;
 *   - a task born and gone between two samples is not seen by a sample;
 *     on the host's proc its exit record (observe/taskexit.h: taskstats,
 *     one listener per CPU) gives its CPU time and the CPU it exited on,
 *     and the result puts it in a row of the processes of its name,
 *     policy and nice that one sampled process started (a shell loop's
 *     `true`s: a row "short-lived", its count, the starter's pid and
 *     name; a real-time one's priority reads 0, taskstats has no
 *     rt_priority).  Without taskstats (not root, a kernel without it, a
 *     captured tree) they are not seen and the result says why
 *     (exits_why);
 *   - a pid reused within the trial is counted as the first process of that
 *     pid (its name and policy are the first one's);
 *   - a descendant of the job whose parent exited before it was seen
 *     (reparented to init) is not known as the job's.
 * Without schedstat (a kernel lacking CONFIG_SCHED_INFO) utime+stime, in
 * clock ticks, stands in, read from stat every sample.
 * The sched_switch tracepoint would make it exact; it is not used (yet).
 *
 * Threads: none.  The caller calls culprit_sample() every 50-100 ms from
 * its sampler loop, on the thread that calls the other functions (the
 * /proc/stat reader of obs.c shares one buffer per process: not from
 * two threads at once).  culprit_start() and culprit_stop() take a sample
 * themselves.  The process calling them (nodetune) is never a culprit.
 *
 * Cost: a sample lists proc and each proc/PID/task, reads one small
 * schedstat per thread (kept open: pread) and stat only for the threads
 * that ran, and drains the exit records (one recv per CPU, and one per
 * record); the result says the mean and the largest cost of a sample.
 * The exit records of tasks no sample saw are kept until the end (at most
 * CULPRIT_MAX_EXITS, 64 bytes each; beyond, counted in exits_lost).
 * The process table is capped (CULPRIT_MAX_PROCS): beyond it new processes
 * are not followed, and the result says so (procs_dropped).
 */
#ifndef NODETUNE_CULPRIT_H
#define NODETUNE_CULPRIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/fsroot.h"
#include "base/log.h"

#define CULPRIT_MAX_TASKS 16       /* rows of a result's tasks[] */
#define CULPRIT_MAX_IRQ_ROWS 8     /* IRQ lines kept per CPU, the busiest */
#define CULPRIT_MAX_SOFTIRQS 16    /* softirq rows kept per CPU */
#define CULPRIT_MAX_CHANGES 32     /* affinity changes kept */
#define CULPRIT_MAX_PROCS 65536    /* processes followed in one trial */
#define CULPRIT_MAX_EXITS 65536    /* exit records of tasks no sample saw, kept in one trial */
#define CULPRIT_LIST_LEN 256       /* a cpulist as text */
#define CULPRIT_SETTLE_S 0.5       /* a thread's start-up: where it places itself, not a change */
/* Without the caller's CPUs, the rank CPUs are those the job's threads ran
 * on for at least this share of the trial. */
#define CULPRIT_RANK_MIN_SHARE 0.01

struct culprit; /* one trial's watch (opaque) */

/* One CPU of the rank set that a task ran on. */
struct culprit_cpu_time {
	int cpu;
	double seconds;
	double share;                /* of the trial: seconds / trial seconds */
};

/* One process (all its threads) other than the job's. */
struct culprit_task {
	int pid;
	int threads;                 /* its threads that ran, over the trial */
	char comm[32];
	char cgroup[256];            /* the path of its cpu controller's line of
				      * proc/PID/cgroup, else the v2 ("0::")
				      * line's, else the first line's: for the
				      * job's processes as of the last sample that
				      * could read it, for others when first seen */
	int policy;                  /* SCHED_OTHER, SCHED_FIFO, ... (the kernel's numbers) */
	int priority;                /* rt_priority for FIFO and RR, else nice */
	bool kthread;                /* a kernel thread (PF_KTHREAD) */
	double seconds;              /* on the rank CPUs, all of them */
	int top_cpu;                 /* the rank CPU where its share is largest */
	double top_share;            /* that share: the sort key */
	char allowed[CULPRIT_LIST_LEN];   /* a job process's allowed CPUs (its main
				      * thread's Cpus_allowed_list at the last sample);
				      * "" for others, or when not read */
	int n_cpus;
	struct culprit_cpu_time *cpus;   /* the rank CPUs it ran on, by CPU */
	int short_lived;             /* > 0: this row is that many processes that
				      * lived between two samples (seen by their
				      * exit records; with those a sample caught
				      * that exited too), of comm, policy and nice,
				      * started by pid (started_by its comm), or by
				      * a process not known (started_by "", pid
				      * one of theirs) */
	char started_by[32];
};

/* One line of /proc/interrupts or /proc/softirqs and its count on a CPU. */
struct culprit_irq_count {
	char label[16];              /* "24", "LOC", "NET_RX" */
	char name[64];               /* the device ("nvme0q1"), or the line's
				      * text ("Local timer interrupts"); "" for softirqs */
	uint64_t count;
};

/* What interrupted one rank CPU. */
struct culprit_cpu_irq {
	int cpu;
	double irq_seconds, softirq_seconds;   /* /proc/stat irq, softirq; -1: not read */
	double irq_share, softirq_share;       /* of the trial */
	int n_irqs;                  /* the busiest lines, by count */
	struct culprit_irq_count irqs[CULPRIT_MAX_IRQ_ROWS];
	int n_softirqs;              /* in the file's order, the ones that moved */
	struct culprit_irq_count softirqs[CULPRIT_MAX_SOFTIRQS];
};

/* A job thread whose allowed CPUs (Cpus_allowed_list, which a cpuset
 * change moves too) changed during the trial, CULPRIT_SETTLE_S or more
 * after its start (before that: where it starts, a launcher binding
 * itself before it execs the job). */
struct culprit_affinity_change {
	int pid, tid;
	char comm[32];
	char before[CULPRIT_LIST_LEN], after[CULPRIT_LIST_LEN];
	double t;                    /* seconds into the trial it was seen */
};

struct culprit_result {
	char cpus[CULPRIT_LIST_LEN]; /* the rank CPUs, a cpulist */
	bool cpus_given;             /* by the caller (else from the job's own run time) */
	double seconds;              /* the trial */
	int samples;
	double sample_ms_mean, sample_ms_max;   /* what a sample cost */
	bool schedstat;              /* run times from schedstat (else ticks) */
	int procs_dropped;           /* not followed: the table was full */
	int n_culprits;              /* all the processes found on the rank CPUs */
	int n_tasks;                 /* the top ones kept, by top_share */
	struct culprit_task *tasks;
	int n_job;                   /* the job's own processes (the forked pid's tree, and
				      * those the caller added) that ran on a rank CPU, the top
				      * CULPRIT_MAX_TASKS by top_share, in the same rows */
	struct culprit_task *job;
	int n_irq_cpus;              /* one per rank CPU */
	struct culprit_cpu_irq *irq_cpus;
	int n_changes;
	struct culprit_affinity_change changes[CULPRIT_MAX_CHANGES];
	bool exits_counted;          /* tasks no sample saw: counted by their exit records */
	char exits_why[160];         /* why not ("" when counted) */
	uint64_t exits_seen;         /* exit records received */
	uint64_t exits_lost;         /* not delivered (a lower bound: taskexit_lost), or not kept (CULPRIT_MAX_EXITS) */
};

/* Start watching: takes the first sample (the baseline) and the first
 * reading of proc/interrupts, proc/softirqs and proc/stat, below root
 * (which the watch does not keep: it opens its own on the same path).
 * job_pids[0..n) are the job (n may be 0: culprit_add_pids later).
 * Returns the watch, or NULL with err (-ENOMEM; -ENOENT when root has no
 * proc). */
struct culprit *culprit_start(const struct fsroot *root, const int *job_pids, int n, struct nt_err *err);

/* Count pids[0..n) as the job too (from the next sample on; their time
 * so far is taken out of the culprits as well).  0, or -ENOMEM. */
int culprit_add_pids(struct culprit *c, const int *pids, int n);

/* The CPUs the ranks were bound to, a cpulist ("2-5,9"); without it the
 * rank CPUs are those where the job's threads ran at least
 * CULPRIT_RANK_MIN_SHARE of the trial.  0, or -EINVAL with err (a bad list,
 * a CPU >= OBS_MAX_CPUS); the watch is unchanged on error. */
int culprit_set_cpus(struct culprit *c, const char *cpulist, struct nt_err *err);

/* One sample: every thread's run time, the job's descendants, the job
 * threads' allowed CPUs.  0, or -errno when proc cannot be listed (the
 * sample is then skipped: the next one picks the time up). */
int culprit_sample(struct culprit *c);

/* End the trial: a last sample and the second reading of the files, into
 * *ret (the caller frees it with culprit_result_free).  The watch is freed
 * in every case (NULL is a no-op returning -EINVAL).  0, or -errno with err
 * (-ENOMEM; proc unreadable); *ret is untouched on error.  A file that
 * cannot be read leaves its part empty (irq_seconds -1), not an error. */
int culprit_stop(struct culprit *c, struct culprit_result *ret, struct nt_err *err);

/* Free what a result holds (not r itself); NULL is a no-op. */
void culprit_result_free(struct culprit_result *r);

/* The result as JSON (a new reference; NULL on ENOMEM). */
json_t *culprit_json(const struct culprit_result *r);

/* The lines that explain A against B, one per culprit whose share of a
 * rank CPU differs most between the two, by half a percent of a CPU or
 * more (at most 3, largest first), e.g.
 *   pid 4242 (stress, SCHED_FIFO 50) in cgroup /noisy ran 9.8% of CPU 1 during B trials, 0% during A
 * or, for a row of short-lived processes,
 *   340 short-lived processes (awk, SCHED_OTHER 0) started by pid 17 (sh) in cgroup /x ran 30.0% of CPU 1 ...
 * (a kernel thread reads "(ksoftirqd/1, kernel thread, SCHED_OTHER 0)").
 * A process is the same in both when
 * its pid and comm are.  Lines end in '\n'.  Returns the number of lines
 * (0: nothing to say, buf ""), or -ENOSPC when buf was too small (it then
 * holds the lines that fit). */
int culprit_describe_top(const struct culprit_result *a, const struct culprit_result *b, char *buf, size_t size);

/* The job threads' affinity changes, A against B, by kind (a program's
 * threads going from one list of allowed CPUs to another; pids differ
 * between trials, programs do not), counted per arm over its trials
 * (trials_a, trials_b; the counts end in "+" where an arm kept only its
 * first CULPRIT_MAX_CHANGES).  A kind seen alike in both arms (in both, at
 * rates per trial within a factor of 2: the job's own threads settling,
 * say) is no difference: all of them are summed up in one last line,
 *   alike in both arms, so not a difference: 1 kind of affinity change (16 in A, 16 in B), e.g. ...
 * The kinds that differ come first, by the difference of their rates, at
 * most 3:
 *   python3's threads: allowed CPUs 1 -> 0-1 12 times in 8 B trials, 0 in 8 A (first pid 7 thread 8, 0.5 s into a trial)
 * Lines end in '\n'.  Returns the number of lines (0: none, buf ""), or
 * -ENOSPC when buf was too small (it holds the whole lines that fit). */
int culprit_describe_changes(const struct culprit_result *a, int trials_a, const struct culprit_result *b,
			     int trials_b, char *buf, size_t size);

/* What the job's own tree does differently, A against B: its processes
 * grouped by kind (comm, policy and priority: pids differ from trial to
 * trial), each kind's time on the rank CPUs over its arm's time.  A kind
 * that took 2% of a CPU or more in one arm and at most half of that (less
 * 1%) in the other is a line, largest difference first, at most 3; with
 * slower 0 (A) or 1 (B) only the kinds that took more in the slower arm
 * (in the faster one a process that took more is the slowdown's victim,
 * not its cause), with -1 either:
 *   B's command runs pid 4242 (helper, SCHED_FIFO 50) that took 11.0% of a CPU on the rank CPUs (most on
 *   CPU 1); A has no such process
 * or "...; in A it took 5.0%".  A kind of short-lived processes (seen by
 * their exit records) reads
 *   B's command starts short-lived processes (awk, SCHED_OTHER 0; 340 in its trials, started by pid 17 (sh))
 *   that took 30.0% of a CPU on the rank CPUs (most on CPU 1); A has no such process
 * Lines end in '\n'.  Returns the number of lines (0: none, buf ""), or
 * -ENOSPC when buf was too small (it holds the whole lines that fit). */
int culprit_describe_job(const struct culprit_result *a, const struct culprit_result *b, int slower, char *buf,
			 size_t size);

/* The job's own processes as a table, A against B: one row per arm for each
 * kind (comm, policy and priority: pids differ from trial to trial), the
 * CULPRIT_TABLE_KINDS kinds that took the most of a rank CPU in either arm,
 * largest first, after a header line:
 *   arm  pid      comm             policy                CPU  top  allowed      cgroup
 *   A    -        helper           SCHED_FIFO 50          -   (no such process in A)
 *   B    4242     helper           SCHED_FIFO 50       11.0%  1    0-1          /limited
 * CPU is the kind's time on the rank CPUs over the arm's time (a share of
 * one CPU); top the rank CPU where it ran most; pid, allowed CPUs (its main
 * thread's, "?" when not read) and cgroup are those of the arm's first (in
 * a merged arm: first trial's) busiest process of the kind.  For a kind of
 * short-lived processes pid reads "(N)", their count, and a line under the
 * table says so.  The kinds past
 * the limit are counted in one last line:
 *   (2 more kinds, each 0.4% of a CPU or less)
 * Lines end in '\n'.  Returns the number of kinds shown (0: the job ran
 * nothing on the rank CPUs in either arm, buf ""), -ENOSPC when buf was too
 * small (it holds the whole lines that fit), -ENOMEM. */
#define CULPRIT_TABLE_KINDS 5
int culprit_job_table(const struct culprit_result *a, const struct culprit_result *b, char *buf, size_t size);

/* The largest share of one rank CPU that one of the job's own processes
 * (r->job) took, among those not of its busiest kind (comm, policy and
 * priority; the kind with the most time on the rank CPUs: its ranks, whose
 * pids differ from trial to trial): what a helper that the job's command
 * starts (an agent its wrapper runs, a real-time helper) took from the
 * ranks.  0 when the job has one kind only, or r is NULL.  Two ranks of
 * one kind are both the busiest kind; a helper of the ranks' own kind
 * cannot be told from them and is not counted. */
double culprit_job_helper_share(const struct culprit_result *r);

/* qsort order of culprit_task: the largest share of a rank CPU first, then
 * the most seconds, then the pid. */
int culprit_task_cmp(const void *a, const void *b);

#endif
