/* SPDX-License-Identifier: MIT */
/* procfs.h — the parser of each /proc file that more than one module
 * reads: the per-CPU tables of /proc/interrupts and /proc/softirqs, a
 * task's /proc/PID/stat (or /proc/PID/task/TID/stat) line, and the cgroups
 * of a process (/proc/PID/cgroup, v1 and v2 lines; ab/culprit.c's
 * read_cgroup still parses that line a second time, its own way).
 *
 * Owns: the formats, strictly (each file's content is untrusted: a process
 * names itself, and a captured tree may be anything); the callers (observe,
 * sampler, culprit, trialcg) own what the numbers mean.  Every parser is
 * fuzzed (tests/fuzz/fuzz_procirq.c, fuzz_pidstat.c, fuzz_pidcgroup.c).  Nothing here allocates but
 * the irq table, which procfs_irqtab_free releases.
 */
#ifndef NODETUNE_PROCFS_H
#define NODETUNE_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/fsroot.h"
#include "base/log.h"

/* The most CPUs a table or a stat line may name (OBS_MAX_CPUS). */
#define PROCFS_MAX_CPUS 4096

/* ---- /proc/interrupts and /proc/softirqs ------------------------------ */

#define PROCFS_IRQ_FILE_MAX (1u << 22)   /* proc/interrupts of a 4096-CPU host fits */
#define PROCFS_IRQTAB_MAX_ROWS 16384

/* One row's names. */
struct procfs_irq_row {
	char label[16];              /* "24", "LOC", "NET_RX" */
	char name[64];               /* the device ("nvme0q1"), or the line's
				      * text ("Local timer interrupts"); "" for softirqs */
};

struct procfs_irqtab {
	int n_cols;                  /* CPUs of the header ("CPU0 CPU1 CPU3") */
	int *col_cpu;                /* the CPU of each column, each < PROCFS_MAX_CPUS */
	int n_rows;
	struct procfs_irq_row *rows;
	uint64_t *counts;            /* n_rows x n_cols; a missing count is 0 */
};

/* Read relpath below root (one read, at most PROCFS_IRQ_FILE_MAX bytes) and
 * parse it.  0, or -errno with err naming the file (and the line); the
 * table is then empty (safe to free). */
int procfs_irqtab_read(const struct fsroot *root, const char *relpath, struct procfs_irqtab *ret,
		       struct nt_err *err);

/* Is row i a numbered (device) line ("24:"), not a named one ("LOC:")? */
bool procfs_irqtab_numbered(const struct procfs_irqtab *t, int i);

/* The sum of row i over every CPU column. */
uint64_t procfs_irqtab_row_sum(const struct procfs_irqtab *t, int i);

/* procfs_irqtab_free(NULL) and a zeroed table are no-ops; the table is
 * zeroed after. */
void procfs_irqtab_free(struct procfs_irqtab *t);

/* ---- /proc/PID/stat ----------------------------------------------------- */

#define PROCFS_PF_KTHREAD 0x00200000u   /* task flags (field 9): include/linux/sched.h */

struct procfs_pid_stat {
	int pid;
	char comm[32];               /* as the task named itself: any bytes but NUL */
	char state;                  /* 'R', 'S', 'D', 'Z', ... */
	int ppid;
	unsigned long long flags;
	uint64_t utime, stime;       /* clock ticks */
	uint64_t ticks;              /* utime + stime */
	int nice;
	uint64_t starttime;          /* clock ticks after boot: with pid, a task's identity */
	int cpu;                     /* the CPU it last ran on (processor), < PROCFS_MAX_CPUS */
	int rt_priority;
	int policy;                  /* SCHED_OTHER, SCHED_FIFO, ... */
	int priority;                /* rt_priority for SCHED_FIFO/RR, else nice */
	bool kthread;                /* flags & PF_KTHREAD */
	bool zombie;                 /* state Z or X: it has exited */
};

/* Parse one stat line, buf[0..len) (not NUL-terminated): "PID (comm) S
 * f4 f5 ...", where comm may hold spaces and ')' (fields count from the
 * last ')'), through field 41 (policy).  Returns 0 and fills *ret; -EINVAL
 * (with err: "expected ...") when a field is missing or not a number, or
 * the processor is out of range; *ret untouched on error. */
int procfs_pid_stat_parse(const char *buf, size_t len, struct procfs_pid_stat *ret, struct nt_err *err);

/* Read relpath ("proc/PID/stat", "proc/PID/task/TID/stat") below root and
 * parse it.  0; -ENOENT when the task is gone (ENOENT, ESRCH); -errno or
 * -EINVAL with err naming the file.  *ret untouched on error. */
int procfs_pid_stat_read(const struct fsroot *root, const char *relpath, struct procfs_pid_stat *ret,
			 struct nt_err *err);

/* ---- /proc/PID/cgroup ----------------------------------------------------- */

#define PROCFS_CGROUP_MAX_LINES 32       /* v1 has at most 16 hierarchies, plus the v2 line */
#define PROCFS_CGROUP_PATH_MAX 512

/* One line: a hierarchy and the process's cgroup in it. */
struct procfs_cgroup_line {
	unsigned id;                 /* the hierarchy's ID; 0 the cgroup2 one */
	char controllers[128];       /* "cpu,cpuacct", "name=systemd"; "" on the cgroup2 line */
	char path[PROCFS_CGROUP_PATH_MAX];   /* "/" or "/a/b": absolute, no "", "." or ".." component,
					      * no control character */
};

struct procfs_cgroup {
	int n;
	struct procfs_cgroup_line line[PROCFS_CGROUP_MAX_LINES];
};

/* Read proc/PID/cgroup below root and parse it.  0; -ENOENT when the
 * process is gone (ENOENT, ESRCH: no err); -errno or -EINVAL with err
 * naming the file.  *ret untouched on error. */
int procfs_cgroup_read(const struct fsroot *root, int pid, struct procfs_cgroup *ret, struct nt_err *err);

/* The line of the hierarchy that has controller ("cpu": not "cpuacct"),
 * or with controller NULL the cgroup2 line; NULL when there is none. */
const struct procfs_cgroup_line *procfs_cgroup_find(const struct procfs_cgroup *c, const char *controller);

#endif
