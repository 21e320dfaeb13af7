/* SPDX-License-Identifier: MIT */
/* obs.h — cheap kernel counters, read below an fsroot: per-CPU time
 * from /proc/stat, /proc/vmstat, the TLB-shootdown line of /proc/interrupts,
 * memory cgroups (/proc/cgroups against live directories), cgroup CPU
 * throttling (cpu.stat), PSI.  Used by the doctor (and the A/B engine). */
#ifndef NODETUNE_OBS_H
#define NODETUNE_OBS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/fsroot.h"
#include "base/log.h"
#include "observe/procfs.h"

#define OBS_MAX_CPUS PROCFS_MAX_CPUS

struct obs_cpu {               /* jiffies of one CPU */
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};

struct obs_stat {
	int n_cpus;                /* highest cpuN + 1 seen */
	bool present[OBS_MAX_CPUS];
	struct obs_cpu cpu[OBS_MAX_CPUS];
};

/* Parse proc/stat (or relpath, for a captured series).  0, -ENOENT, or
 * -EINVAL with err naming file:line. */
int obs_read_stat(const struct fsroot *root, const char *relpath, struct obs_stat *ret,
		  struct nt_err *err);

/* The longest run of consecutive sample intervals, in samples[0..n), during
 * which one CPU spent at least min_pct in the kernel: *ret_cpu, its length
 * in intervals and the average %sys of all CPUs over the same run.  Returns
 * the run length (0 when none). */
int obs_longest_sys_run(const struct obs_stat *samples, int n, double min_pct, int *ret_cpu,
			double *ret_avg_sys);

/* The value of key in proc/vmstat, or -1 when absent. */
int64_t obs_vmstat(const struct fsroot *root, const char *key);

/* Memory cgroups: the kernel's count (/proc/cgroups "memory" num_cgroups;
 * -1 unknown) and the live directories of the memory hierarchy (v1
 * sys/fs/cgroup/memory, else the v2 root; -1 unknown). */
void obs_memcg(const struct fsroot *root, long *ret_kernel, long *ret_live);

/* A cgroup whose CPU quota throttles it: the worst ratio nr_throttled /
 * nr_periods among the cpu.stat files found (v1 cpu hierarchy and v2), at
 * most depth 3.  Returns the ratio (0 when none) and its path (relative). */
double obs_worst_throttling(const struct fsroot *root, char *path, size_t size,
			    uint64_t *ret_throttled, uint64_t *ret_periods);

/* nr_throttled summed over the same cpu.stat files (a cgroup counted once
 * per hierarchy it is found in). */
uint64_t obs_total_throttled(const struct fsroot *root);

/* ---- a process and all its threads ------------------------------------ */

struct obs_proc {
	int pid;
	int n_threads;
	uint64_t utime, stime;        /* clock ticks, all threads */
	uint64_t vol_switches, invol_switches;
	uint64_t run_ns, wait_ns;     /* schedstat: on CPU, waiting on a run queue */
	int n_cpus_seen;              /* distinct CPUs the threads last ran on */
};

/* Sum proc/PID/task/TID/{stat,status,schedstat} over the threads.  0;
 * -ENOENT when the process is gone; -EINVAL with err naming file:line. A
 * thread that exits while it is read is skipped. */
int obs_read_proc(const struct fsroot *root, int pid, struct obs_proc *ret, struct nt_err *err);

/* ---- pressure stall information (proc/pressure) ----------------------- */

struct obs_psi {
	bool present;
	uint64_t cpu_some_us, mem_some_us, mem_full_us, io_some_us, io_full_us;  /* total= */
	uint64_t cpu_full_us;         /* a cgroup's (the host-wide line is 0) */
};

void obs_read_psi(const struct fsroot *root, struct obs_psi *ret);

/* The same totals of one cgroup v2 directory (relpath below root): its
 * cpu.pressure, memory.pressure and io.pressure.  ret->present is false
 * when none of them could be read (no PSI, not a v2 cgroup). */
void obs_read_cgroup_psi(const struct fsroot *root, const char *cgdir, struct obs_psi *ret);

/* ---- proc/interrupts --------------------------------------------------- */

struct obs_irq {
	uint64_t tlb;                 /* TLB shootdowns, all CPUs (see tlb.h: the
				       * line may exist and never move) */
	bool has_tlb_line;
	uint64_t device;              /* numbered (device) IRQs, all CPUs */
	int n_cpus;
};

/* 0, or -errno / -EINVAL with err. */
int obs_read_interrupts(const struct fsroot *root, struct obs_irq *ret, struct nt_err *err);

/* ---- perf_event_open software counters -------------------------------- */

enum { OBS_PERF_MIGRATIONS, OBS_PERF_SWITCHES, OBS_PERF_FAULTS, OBS_PERF_N };

struct obs_perf {
	int fd[OBS_PERF_N];
	bool ok;
	char why[160];                /* why not, when !ok */
};

/* Count cpu-migrations, context-switches and page-faults of pid and every
 * thread and child it creates from now on (inherit), starting when it calls
 * exec (enable_on_exec): open them between fork and exec.  Falls back
 * cleanly: where perf events are refused (perf_event_paranoid, seccomp, no
 * kernel support) p->ok is false and p->why says why. */
void obs_perf_open(struct obs_perf *p, int pid);
void obs_perf_close(struct obs_perf *p);

#endif
