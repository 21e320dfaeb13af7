/* SPDX-License-Identifier: MIT */
/* abwatch.h — what the A/B engine watches around one trial, and the sum of
 * an arm's trials.
 *
 * One struct abwatch follows one trial's job from before its fork to after
 * its end:
 *   - the job runs in a cgroup of its own (trialcg.h: nodetune-ab/PID-LABEL),
 *     whose cpu.stat, memory events and PSI are read before and after, and
 *     whose context switches, migrations and page faults are counted by perf
 *     for that cgroup alone;
 *   - cgfollow.h follows the job's processes (pid and start time) into
 *     every cgroup they run in, the trial cgroup or one they moved to (a
 *     wrapper with a CPU limit), and its ancestors: throttling, quota,
 *     memory events and PSI of each, at first sight and at the end;
 *   - culprit.h watches who else ran on the CPUs the job used, the IRQs and
 *     softirqs there, and affinity changes of the job's threads.  The job is
 *     the forked pid, its descendants, and every process found in the trial
 *     cgroup at a tick (so a daemonized descendant, reparented to init, is
 *     still the job's when it stayed in the group).
 * What cannot be counted here (no cgroup mount, not root, no perf, no proc)
 * does not stop the trial: each counter it takes away has its reason in
 * abwatch_trial.why[], and its value is 0 only as a placeholder, never to be
 * read as "nothing happened".
 *
 * Lifecycle (fork and exec are the caller's):
 *     w = abwatch_begin(root, label, err);    before fork
 *     child:  abwatch_child(w); wait for the parent; exec
 *     parent: abwatch_started(w, pid, err); let the child go
 *             while running: abwatch_tick(w) every ~100 ms
 *             after waitpid: abwatch_end(w, &trial, err)   (frees w)
 * then per arm: abwatch_arm_init, abwatch_arm_add for each trial, abwatch_explain(A, B),
 * abwatch_arm_json, abwatch_arm_release; abwatch_trial_release for each trial.
 *
 * Threads: none; one watch is used by one thread (culprit.h's rule).
 */
#ifndef NODETUNE_ABWATCH_H
#define NODETUNE_ABWATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ab/cgfollow.h"
#include "ab/culprit.h"
#include "base/fsroot.h"
#include "base/log.h"
#include "ab/trialcg.h"

/* The per-trial figures the explanations rank, by enum; abwatch_rows[] holds
 * each one's row. */
enum abwatch_counter {
	ABWATCH_THROTTLED_PERIODS,     /* cpu.stat nr_throttled of the job's most throttled cgroup: the
					* trial cgroup, or one its processes moved to, or an ancestor */
	ABWATCH_THROTTLED_MS,          /* its throttled time (v2 throttled_usec, v1 throttled_time), ms */
	ABWATCH_CG_CPU_PRESSURE_MS,    /* its PSI cpu some, ms (cgroup2 only) */
	ABWATCH_CG_MEM_PRESSURE_MS,    /* its PSI memory some, ms (cgroup2 only) */
	ABWATCH_MEM_EVENTS,            /* v2 memory.events high+max+oom, else v1 memory.failcnt, of the
					* job's cgroup that had the most (as above) */
	ABWATCH_CG_SWITCHES,           /* perf context-switches of the cgroup */
	ABWATCH_CG_MIGRATIONS,         /* perf cpu-migrations of the cgroup */
	ABWATCH_CG_FAULTS,             /* perf page-faults of the cgroup */
	ABWATCH_FOREIGN_CPU_SHARE,     /* the largest share of one rank CPU taken by one task not of the job */
	ABWATCH_IRQ_SHARE,             /* the largest irq+softirq time share of one rank CPU (proc/stat) */
	ABWATCH_AFFINITY_CHANGES,      /* changes of a job thread's allowed CPUs seen */
	ABWATCH_JOB_HELPER_CPU_SHARE,  /* the largest share of one rank CPU taken by one of the job's own
					* processes not of its busiest kind (culprit_job_helper_share) */
	ABWATCH_N
};

/* Where a counter is read.  A part of the watch may be missing as a whole
 * (no cgroup, no perf): its reason then stands for all of its counters. */
enum abwatch_source {
	ABWATCH_SRC_HOST,              /* the whole host, read by the engine around a trial (ab.h), not by the watch */
	ABWATCH_SRC_CGROUP,            /* the trial cgroup's files */
	ABWATCH_SRC_PERF,              /* a perf event counting the trial cgroup (the row's perf) */
	ABWATCH_SRC_CULPRIT,           /* the culprit watch (culprit.h) */
	ABWATCH_SRC_N
};

/* One counter, one row: what the A/B engine needs to read, scale, judge
 * and name it.  The engine's host counters (ab.h's enum ab_counter) are
 * rows of the same kind. */
struct abwatch_row {
	const char *name;          /* "throttled_periods", as reports and JSON print it */
	const char *unit;          /* "" a count, "ms", "share" (0..1) */
	const char *mechanism;     /* what a change of it points at: "CPU quota throttling", ... */
	enum abwatch_source source;
	enum trialcg_perf_event perf;   /* ABWATCH_SRC_PERF: the event */
	bool rate;                 /* a count over the trial, judged per step (per s without
				    * steps); false: a share or a count taken as it is */
	double floor;              /* its A/A floor: the least change (in those units) that
				    * can explain anything, however quiet the arms were */
	double cost_ms;            /* the most one unit of it can cost the job, in ms (an upper
				    * bound; 1 for a time in ms): how much of a slowdown its change
				    * can account for; 0: a share of a rank CPU, itself a share of
				    * its time; < 0: not estimable (a count whose cost is unknown) */
	bool symptom;              /* a symptom that other rows name the cause of (PSI: stalled
				    * for want of CPU or memory): a claimed cause ranks before it */
};

extern const struct abwatch_row abwatch_rows[ABWATCH_N];

#define ABWATCH_WHY_LEN 256

struct abwatch; /* one trial's watch (opaque) */

/* Before fork: create the trial's cgroup nodetune-ab/PID-LABEL below root
 * (borrowed: it must outlive the watch).  When cgroups cannot be used
 * (-ENOTSUP: none mounted, not root, read-only; -EEXIST; -EINVAL: a label
 * that is not 1 to 64 of [A-Za-z0-9_.-]) the watch goes on without them
 * and the trial says why for each cgroup counter.  Returns the watch (freed
 * by abwatch_end), or NULL with err only on -ENOMEM. */
struct abwatch *abwatch_begin(const struct fsroot *root, const char *label, struct nt_err *err);

/* In the forked child, before exec: join the trial cgroup (a no-op without
 * one).  Async-signal-safe: the only system call is write(2).  0, or the
 * -errno of the refused write (the child should then exit). */
int abwatch_child(const struct abwatch *w);

/* In the parent right after fork, while the child waits for it (so nothing
 * the job does is missed): the child moved into the trial cgroup (whether
 * or not it has joined it yet), the cgroup's counters "before", its perf events
 * opened, the culprit watch started with pid as the job.  Each part that
 * cannot start leaves its counters not countable (with why) and the others
 * go on.  Returns 0 when every part started, else the -errno of the first
 * that did not, with err (-EINVAL: pid <= 0, or called twice; -ENOMEM;
 * -ENOTSUP, -EACCES: perf; -ENOENT: no proc below root). */
int abwatch_started(struct abwatch *w, pid_t pid, struct nt_err *err);

/* While the job runs, every ~100 ms: the processes in the trial cgroup
 * become the job's, and the culprit watch takes a sample.  0, or -errno
 * of the sample (skipped; the next one picks the time up).  A watch not
 * started is a no-op. */
int abwatch_tick(struct abwatch *w);

/* One trial's figures. */
struct abwatch_trial {
	double v[ABWATCH_N];
	char why[ABWATCH_N][ABWATCH_WHY_LEN];   /* "" countable; else why not (v[] is then 0) */
	bool cg_read;                   /* before and after hold the trial cgroup's counters */
	struct trialcg_stats before, after;
	bool culprit_read;              /* culprit holds a result */
	struct culprit_result culprit;  /* owned: abwatch_trial_release */
	struct cgfollow_result *follow; /* the job's cgroups (cgfollow.h); NULL: not followed.
					 * Owned: abwatch_trial_release */
};

/* After the job ended (waited for): the cgroup's counters "after", the perf
 * counts, the culprit result; then the cgroup is destroyed (what is left in
 * it is killed) and w is freed, in every case (NULL: -EINVAL).  *ret is
 * always filled, the counters that could not be read with their why (also
 * when abwatch_started was never called), and must be released with
 * abwatch_trial_release.  Returns 0, or the -errno of the first part that
 * failed with err (-EBUSY: the cgroup could not be emptied and is left). */
int abwatch_end(struct abwatch *w, struct abwatch_trial *ret, struct nt_err *err);

/* Free what t holds (not t); a zeroed t, or NULL, is a no-op. */
void abwatch_trial_release(struct abwatch_trial *t);

/* ---- an arm: its trials summed ----------------------------------------- */

struct abwatch_arm {
	int trials;                     /* added */
	int cg_trials;                  /* of them, with cgroup counters (summed in cg) */
	int culprit_trials;             /* ... with a culprit result (merged in culprit) */
	/* The cgroup counters' deltas summed over cg_trials, in the form
	 * trialcg_describe(NULL, &cg) reads: "have" holds the counters every
	 * one of those trials had; gauges (memory.current, peak) the largest;
	 * quota, limits, paths and why those of the first trial. */
	struct trialcg_stats cg;
	/* The culprit results merged: a process is the same one when its pid
	 * and comm are; its seconds (and per-CPU seconds) summed, shares over
	 * culprit.seconds (the sum of the trials'); IRQ and softirq rows summed
	 * by label per CPU, irq/softirq seconds summed (shares likewise);
	 * affinity changes concatenated up to CULPRIT_MAX_CHANGES; rank CPUs
	 * the union.  tasks[] is sorted by top_share and may hold more than
	 * CULPRIT_MAX_TASKS rows.  The job's own processes (job[]) are merged
	 * by kind, comm, policy and priority, since their pids differ from
	 * trial to trial; a kind's row keeps the first trial's pid. */
	struct culprit_result culprit;
	/* The job's cgroups (cgfollow) over the trials that followed them,
	 * merged by name: each one's deltas summed over the trials it was
	 * seen in, its quota the first trial's.  The trial cgroups (a new one
	 * each trial, nodetune-ab/...) are left out: cg holds them. */
	int follow_trials;
	int n_groups;
	struct abwatch_group *groups;
};

/* A cgroup the job of an arm ran in (or below), its trials summed. */
struct abwatch_group {
	char name[520];                 /* cgfollow_group's */
	bool job;                       /* a process of the job was in it, in some trial */
	int trials;                     /* the trials it was seen in */
	char quota[64];                 /* trialcg_stats' */
	uint32_t have;                  /* the counters every one of those trials had */
	uint64_t v[TCG_N];              /* deltas summed (gauges: the largest) */
};

/* An empty arm. */
void abwatch_arm_init(struct abwatch_arm *a);

/* Add trial t to arm a.  0, or -ENOMEM (a is then as it was, or has t's
 * cgroup counters but not its culprit rows: still consistent). */
int abwatch_arm_add(struct abwatch_arm *a, const struct abwatch_trial *t);

/* Free what a holds and make it empty again; NULL is a no-op. */
void abwatch_arm_release(struct abwatch_arm *a);

/* The evidence for the report, arm A against arm B, one line each ending
 * in '\n':
 *   - what the job's own tree does differently (culprit_describe_job, which
 *     names what took more CPU in the slower arm, slower: 0 A, 1 B, -1 not
 *     known: either): "B's
 *     command runs pid 4242 (helper, SCHED_FIFO 50) that took 11.0% of a
 *     CPU on the rank CPUs (most on CPU 1); A has no such process";
 *   - culprits (culprit_describe_top over the merged results): "pid 4242
 *     (stress, SCHED_FIFO 50) ran 9.8% of CPU 1 during B trials, 0% during
 *     A"; then the affinity changes by kind, those that differ between the
 *     arms with their counts per arm, those alike summed up in one line
 *     (culprit_describe_changes);
 *   - a cgroup the job ran in, other than its trial cgroup, that throttled
 *     or hit a memory limit in either arm, the most throttled first (at
 *     most 3): "B's job ran in /sys/fs/cgroup/wrap.slice (cpu.max 50000
 *     100000): throttled 412 times, 8.1 s in the B trials; A: not
 *     throttled" ("ran below" for an ancestor of the job's cgroups; the
 *     arm that throttled more is named first; memory events follow);
 *   - when either arm was throttled or hit a memory limit, one line per arm
 *     with cgroup counters (trialcg_describe): "B: throttled in 412 of 500
 *     periods (82%), 3.1 s in all; quota 0.5 CPU; ...";
 *   - a rank CPU whose irq or softirq share differs by ABWATCH_IRQ_MIN_DIFF
 *     (one percentage point) or more, with its busiest lines (at most 3
 *     lines, largest difference first): "CPU 1: softirq 12.0% of the time
 *     during B (NET_RX 48210, TIMER 812), 0.1% during A"; a CPU that was
 *     not a rank CPU of the other arm reads "not a rank CPU during A".
 * Returns the number of lines (0: nothing to say, buf ""), or -ENOSPC when
 * buf was too small (it holds the whole lines that fit), -ENOMEM. */
#define ABWATCH_IRQ_MIN_DIFF 0.01
int abwatch_explain(const struct abwatch_arm *a, const struct abwatch_arm *b, int slower, char *buf, size_t size);

/* The arm for the JSON report (a new reference; NULL on ENOMEM):
 *   {"trials", "seconds", "cgroup": {"trials", "periods",
 *    "throttled_periods", "throttled_ms", "cpu_pressure_ms", "mem_events"
 *    (null where not counted), "quota_cpus", "paths", "text"} or null,
 *    "culprit": culprit_json of the merged result with its top
 *    CULPRIT_MAX_TASKS tasks, or null, "job_cgroups": [{"name", "job",
 *    "trials", "quota", "throttled_periods", "throttled_ms", "mem_events",
 *    "cpu_pressure_ms"} (null where not counted)] or null when not followed} */
json_t *abwatch_arm_json(const struct abwatch_arm *a);

#endif
