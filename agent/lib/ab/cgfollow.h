/* SPDX-License-Identifier: MIT */
/* cgfollow.h — the cgroups a trial's job actually runs in, wherever it goes.
 *
 * The job starts in its trial cgroup (trialcg.h), but its command may move
 * itself elsewhere: a wrapper that puts the job in a cgroup with a CPU
 * limit, a container runtime, a launcher.  A CPU quota there throttles the
 * job, and nothing in the trial cgroup shows it.  One struct cgfollow
 * follows one trial's job:
 *   - its processes, each known by pid AND start time (proc/PID/stat field
 *     22), so a pid that the kernel recycles for another process is never
 *     taken for the job's: the forked pid, the pids the caller adds (those
 *     found in the trial cgroup), and every process whose parent is one of
 *     them, alive, and started no later than it (through forks, to any
 *     depth, looked for at every tick);
 *   - for each of them, at every tick, the cgroups it is in
 *     (proc/PID/cgroup, v1 and v2 lines, parsed by observe/procfs), and the
 *     ancestors of each up to the root;
 *   - each such cgroup's counters (trialcg_read_dirs: cpu.stat throttling,
 *     cpu.max or cfs_quota_us/cfs_period_us, memory.events, PSI) read when
 *     it is first seen and at the end: its delta is the trial's.
 * A cgroup first seen during the trial (the job moved there after the
 * start) counts from the tick it was seen: at most one tick (~100 ms) of
 * its counters is missed.  A process that lives and dies between two ticks
 * is not seen.  Processes other than the job's are listed once per tick
 * and, once found not to be the job's, not read again until the next full
 * pass (every CGFOLLOW_FULL_PASS ticks), which keeps a tick cheap.
 *
 * Works below an fsroot (a captured tree in the unit tests).  Threads:
 * none; one follower is used by one thread.
 */
#ifndef NODETUNE_CGFOLLOW_H
#define NODETUNE_CGFOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ab/trialcg.h"
#include "base/fsroot.h"
#include "base/log.h"

#define CGFOLLOW_MAX_GROUPS 32       /* cgroups followed in one trial, ancestors included */
#define CGFOLLOW_MAX_PROCS 4096      /* the job's processes followed in one trial */
#define CGFOLLOW_FULL_PASS 10        /* ticks between two reads of every process's stat */

/* One cgroup the job ran in (or an ancestor of one), with its counters. */
struct cgfollow_group {
	char name[520];              /* where it is shown: the directory of its CPU controller
				      * (v1 cpu where its quota is v1's), below the root, with a
				      * leading '/': "/sys/fs/cgroup/wrap.slice" */
	bool job;                    /* a process of the job was in it (false: an ancestor only) */
	struct trialcg_stats before, after;   /* after - before is the trial's (trialcg_describe) */
};

struct cgfollow_result {
	int procs;                   /* the job's processes seen */
	int procs_dropped;           /* ... not followed: the table was full */
	int groups_dropped;          /* cgroups not followed: CGFOLLOW_MAX_GROUPS reached */
	int n;
	struct cgfollow_group *group;   /* [n], in the order seen; owned: cgfollow_result_free */
};

struct cgfollow; /* one trial's follower (opaque) */

/* Start following job (the forked pid, still waiting to exec) below root
 * (borrowed: it must outlive the follower); reads the cgroup mounts and
 * takes the first tick.  Returns the follower, or NULL with err: -EINVAL
 * (pid <= 0), -ENOTSUP (no cgroup mounted here), -ENOMEM. */
struct cgfollow *cgfollow_start(const struct fsroot *root, pid_t job, struct nt_err *err);

/* Count pid as the job's too (a process found in the trial cgroup: a
 * daemonized descendant, reparented to init).  Its start time is read now;
 * 0, -ENOENT (gone), -ENOSPC (the table is full), -ENOMEM. */
int cgfollow_add_pid(struct cgfollow *f, pid_t pid);

/* One tick: new processes of the job, and the cgroups each is in now.
 * 0, or -errno when proc cannot be listed (skipped: the next tick looks
 * again).  NULL is a no-op. */
int cgfollow_tick(struct cgfollow *f);

/* End: a last tick, then every group's counters "after", into *ret (a
 * group whose "after" cannot be read, gone with its last process, keeps
 * its last reading: after = the last one seen at a tick).  f is freed in
 * every case.  0, or -EINVAL (NULL), -ENOMEM with err; *ret is filled
 * either way (no groups on error) and freed with cgfollow_result_free. */
int cgfollow_stop(struct cgfollow *f, struct cgfollow_result *ret, struct nt_err *err);

/* Free what r holds (not r) and empty it; NULL is a no-op. */
void cgfollow_result_free(struct cgfollow_result *r);

/* Free f without a result (a trial that ends before it was read); NULL is
 * a no-op. */
void cgfollow_free(struct cgfollow *f);

/* after - before of counter c of g (0 when either read lacks it). */
uint64_t cgfollow_group_delta(const struct cgfollow_group *g, enum trialcg_counter c);

#endif
