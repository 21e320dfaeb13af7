/* SPDX-License-Identifier: MIT */
/* trialcg.h — each A/B trial's job in a cgroup of its own, and what that
 * cgroup says: CPU throttling under a quota (cpu.stat), memory limit events
 * and reclaim (memory.events, or v1 failcnt and oom_control), pressure (PSI)
 * and perf software events counted for the cgroup alone
 * (PERF_FLAG_PID_CGROUP), so that launchers, wrappers and nodetune itself
 * never enter the explanation.
 *
 * A trial's group is "nodetune-ab/PID-NAME" (PID: the creating process) at
 * the root of every hierarchy it needs, found in proc/self/mounts below an
 * fsroot:
 *   - pure v2: the cgroup2 mount; nodetune-ab gets cpu, memory and io in its
 *     cgroup.subtree_control (it holds no process itself, so the "no
 *     internal processes" rule is kept), the trial is a leaf below it;
 *   - hybrid and v1: the v1 cpu, cpuacct, memory and perf_event
 *     hierarchies that are mounted, plus the cgroup2 mount where there is
 *     one (PSI, CPU usage and, perf_event not being bound to v1, the perf
 *     cgroup), each group created directly with mkdir.
 * A controller that v2 does not offer is read from its v1 hierarchy.  Where
 * no hierarchy can be written (not root, a read-only cgroupfs, no cgroup
 * mounted) trialcg_create fails with -ENOTSUP and says why: the A/B engine
 * then goes on without cgroup counters and reports them as "not countable
 * here: WHY", never as 0.
 *
 * Groups left by a nodetune that was killed (those whose PID is gone) are
 * swept by the next trialcg_create and by trialcg_sweep: what they still
 * hold (a job's descendants, which PR_SET_PDEATHSIG does not reach) is
 * killed and the group removed; trialcg_destroy removes the nodetune-ab
 * parent when it is empty.
 *
 * Live host for everything that creates; reading a pid's cgroups
 * (trialcg_read_pid) and describing stats also work on captured trees.
 */
#ifndef NODETUNE_TRIALCG_H
#define NODETUNE_TRIALCG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/fsroot.h"
#include "base/log.h"

/* The parent of every trial group, at the root of each hierarchy. */
#define TRIALCG_PARENT "nodetune-ab"

struct trialcg; /* opaque */

/* Create the trial group nodetune-ab/PID-name (name: 1 to 64 characters of
 * [A-Za-z0-9_.-], not starting with '.') in every usable hierarchy below
 * root (borrowed: it must outlive the group), and sweep the groups of dead
 * nodetune processes first (trialcg_sweep).  Returns the group (free with trialcg_destroy),
 * or NULL with err: -ENOTSUP when cgroups cannot be used here (the message
 * says why: no cgroup mount, read-only, not permitted, not a cgroup file
 * system), -EEXIST when the group exists already, -EINVAL for a bad name,
 * -ENOMEM.  Nothing is left behind on failure. */
struct trialcg *trialcg_create(const struct fsroot *root, const char *name, struct nt_err *err);

/* Sweep the trial groups of nodetune processes that are gone (PID in the
 * group's name no longer in proc/; a live one is never touched), in every
 * cgroup hierarchy below root: kill what each still holds and the groups
 * below it (as trialcg_destroy does, bounded at about 2 s a group) and
 * remove them.  For ab's start and the daemon's recovery of a gate whose
 * ab was killed.  Returns the number of groups removed (0: none, or not
 * removable: a group still busy is left for the next sweep), or -ENOTSUP
 * (-ENOMEM) with err when no cgroup file system is mounted below root. */
int trialcg_sweep(const struct fsroot *root, struct nt_err *err);

/* Kill what is left in the group and in groups the job made below it
 * (cgroup.kill where v2 has it, SIGKILL to each pid in every hierarchy;
 * waits until it is empty, at most about 2.5 s), remove its directories and the
 * nodetune-ab parents that are then empty, and free cg.  Processes that
 * moved themselves to another cgroup are not touched.  NULL is a no-op.
 * Returns 0, or -EBUSY (a group still held processes after the wait; its
 * directory is left) and other -errno of rmdir; cg is freed either way. */
int trialcg_destroy(struct trialcg *cg);

/* Move pid (0: the caller) into the group in every hierarchy, by writing it
 * to each cgroup.procs opened at create time.  With err NULL the only call
 * made is write(2): async-signal-safe, for the forked child before it
 * execs (all its descendants then follow).  Returns 0 or the -errno of the
 * first refused write (-ESRCH: no such pid; earlier hierarchies keep it). */
int trialcg_attach(const struct trialcg *cg, pid_t pid, struct nt_err *err);

/* The group's directories, ", " between them, for messages ("" none). */
const char *trialcg_paths(const struct trialcg *cg);

/* ---- what a cgroup says ------------------------------------------------ */

/* The counters, by enum; v[] of struct trialcg_stats. */
enum trialcg_counter {
	TCG_CPU_USAGE_USEC,        /* v2 cpu.stat usage_usec, v1 cpuacct.usage / 1000 */
	TCG_CPU_NR_PERIODS,        /* cpu.stat: quota periods that ran */
	TCG_CPU_NR_THROTTLED,      /* ... and those where the quota ran out */
	TCG_CPU_THROTTLED_USEC,    /* v2 throttled_usec, v1 throttled_time / 1000 */
	TCG_MEM_HIGH,              /* v2 memory.events: over memory.high (reclaim, throttled) */
	TCG_MEM_MAX,               /* v2: about to exceed memory.max (direct reclaim) */
	TCG_MEM_OOM,               /* v2: reclaim failed at the limit */
	TCG_MEM_OOM_KILL,          /* v2 memory.events, v1 memory.oom_control oom_kill */
	TCG_MEM_FAILCNT,           /* v1 memory.failcnt: charges that hit the limit */
	TCG_MEM_CURRENT,           /* bytes now (a gauge) */
	TCG_MEM_PEAK,              /* bytes at most (v2 memory.peak, v1 max_usage_in_bytes) */
	TCG_PSI_CPU_SOME_US,       /* the cgroup's PSI totals (v2 only) */
	TCG_PSI_CPU_FULL_US,
	TCG_PSI_MEM_SOME_US,
	TCG_PSI_MEM_FULL_US,
	TCG_PSI_IO_SOME_US,
	TCG_PSI_IO_FULL_US,
	TCG_N
};

/* Each counter's name (as the kernel's file names it, or nodetune's own
 * for PSI) and unit ("" a count, "us", "bytes"); gauges are not differences. */
extern const struct trialcg_counter_row {
	const char *name;
	const char *unit;
	bool gauge;
} trialcg_counters[TCG_N];

struct trialcg_stats {
	uint64_t v[TCG_N];
	uint32_t have;             /* bit (1u << TCG_x): v[TCG_x] was read */
	char quota[64];            /* "20000 100000" (cpu.max), "cfs_quota_us 20000 period 100000" (v1),
				    * "max 100000": no quota; "" unknown */
	double quota_cpus;         /* quota / period: 0.2 CPU; 0 when none or unknown */
	int64_t mem_limit;         /* memory.max or v1 limit_in_bytes; -1 none or unknown */
	int64_t mem_high;          /* v2 memory.high; -1 none or unknown */
	char paths[1024];          /* the cgroup directories read, ", " between them */
	char why[256];             /* what was not countable and why ("" all of it was) */
};

/* Is counter c in s? */
static inline bool trialcg_has(const struct trialcg_stats *s, enum trialcg_counter c)
{
	return (s->have >> c) & 1u;
}

/* Read the group's counters now.  Returns 0, or -ENOENT (the group's
 * directories are gone) with err; *ret is untouched on error. */
int trialcg_read(const struct trialcg *cg, struct trialcg_stats *ret, struct nt_err *err);

/* What changed from before to after (two reads of the same cgroups), in
 * words fit for the explanation: "throttled in 412 of 500 periods (82%),
 * 3.1 s in all; quota 0.5 CPU; memory: 12 over high, 3 at max, 1 OOM kill
 * (limit 32.0 MiB, peak 31.9 MiB); PSI cpu some 2.10 s, full 1.90 s", or
 * "not throttled (0 of 500 periods); ..." and "not countable here: WHY" for
 * what was not read.  before may be NULL (counts since the group was made).
 * Returns 0, -EINVAL when before and after were read from different
 * cgroups (buf holds ""), or -ENOBUFS when buf was too small (it holds a
 * truncated, NUL-terminated text). */
int trialcg_describe(const struct trialcg_stats *before, const struct trialcg_stats *after, char *buf,
		     size_t size);

/* ---- any cgroup: where a process runs, and its ancestors ------------------ */

struct procfs_cgroup;          /* observe/procfs.h: a parsed proc/PID/cgroup */

/* The hierarchies read: cgroup2, v1 cpu, cpuacct, memory, perf_event. */
#define TRIALCG_HIER_N 5

/* Where each hierarchy is mounted below a root ("" not mounted). */
struct trialcg_mounts {
	char rel[TRIALCG_HIER_N][256];
	bool ro[TRIALCG_HIER_N];
};

/* One cgroup: its directory in each hierarchy, below the root ("" none). */
struct trialcg_dirs {
	char dir[TRIALCG_HIER_N][512];
};

/* The cgroup mounts of proc/self/mounts below root.  0, or -ENOTSUP (none
 * mounted, or the file unreadable), -ENOMEM with err; *ret untouched on
 * error. */
int trialcg_mounts_read(const struct fsroot *root, struct trialcg_mounts *ret, struct nt_err *err);

/* The directories of the cgroups a process is in (pc: its proc/PID/cgroup,
 * parsed) under the mounts m: each hierarchy's line, v1 by its controller,
 * cgroup2 by ID 0.  0, or -ENOENT when none of its hierarchies is mounted
 * here; *ret untouched then. */
int trialcg_dirs_of(const struct trialcg_mounts *m, const struct procfs_cgroup *pc, struct trialcg_dirs *ret);

/* One level up, in each hierarchy of d that is not at its mount's root.
 * Returns true when any moved (false: d is the root cgroup everywhere,
 * unchanged). */
bool trialcg_dirs_parent(const struct trialcg_mounts *m, struct trialcg_dirs *d);

/* Read the counters of the cgroup d, as trialcg_read does for a trial's
 * group: a quota, throttling, memory events and PSI where the hierarchy has
 * them (the root cgroup has no cpu.max: quota ""), paths naming what was
 * read.  0, or -ENOENT (gone) with err; *ret untouched on error. */
int trialcg_read_dirs(const struct fsroot *root, const struct trialcg_dirs *d, struct trialcg_stats *ret,
		      struct nt_err *err);

/* ---- perf events counted for the cgroup -------------------------------- */

enum trialcg_perf_event {
	TCG_PERF_MIGRATIONS,       /* cpu-migrations */
	TCG_PERF_SWITCHES,         /* context-switches */
	TCG_PERF_FAULTS,           /* page-faults */
	TCG_PERF_TASK_CLOCK,       /* task-clock, ns */
	TCG_PERF_N
};

/* perf(1)'s names of the events, by enum. */
extern const char *const trialcg_perf_names[TCG_PERF_N];

struct trialcg_perf {
	int n_cpus;                /* configured CPUs */
	int *fd;                   /* [cpu * TCG_PERF_N + event], -1 for an offline CPU; NULL when closed */
};

/* Open the events for cg's cgroup (and its descendants), one fd per online
 * CPU and event: that is how cgroup events count, on the CPU where the
 * cgroup's tasks run.  They count from now, whichever process runs in the
 * group.  Returns 0 and fills *ret (close with trialcg_perf_close), or
 * -ENOTSUP (no perf cgroup directory: no cgroup2 mount and no v1
 * perf_event), -EACCES (kernel.perf_event_paranoid above 0 without
 * CAP_PERFMON, or a seccomp filter), -ENOSYS/-ENOENT (no perf events in this
 * kernel) with err saying so; *ret is untouched on error. */
int trialcg_perf_open(const struct trialcg *cg, struct trialcg_perf *ret, struct nt_err *err);

/* The counts so far, summed over the CPUs, into out (by enum).  0 or -EIO
 * with err; out is untouched on error. */
int trialcg_perf_read(const struct trialcg_perf *p, uint64_t out[TCG_PERF_N], struct nt_err *err);

/* Close the fds; p may be zeroed or closed already. */
void trialcg_perf_close(struct trialcg_perf *p);

#endif
