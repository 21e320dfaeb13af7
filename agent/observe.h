/* observe.h — cheap kernel counters, read below an fsroot: per-CPU time
 * from /proc/stat, /proc/vmstat, the TLB-shootdown line of /proc/interrupts,
 * memory cgroups (/proc/cgroups against live directories), cgroup CPU
 * throttling (cpu.stat), PSI.  Used by the doctor (and the A/B engine). */
#ifndef NODETUNE_OBSERVE_H
#define NODETUNE_OBSERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "fsroot.h"
#include "log.h"

#define OBS_MAX_CPUS 4096

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

/* %sys of cpu between two samples (0..100; -1 when it did not run). */
double obs_sys_percent(const struct obs_stat *a, const struct obs_stat *b, int cpu);

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

#endif
