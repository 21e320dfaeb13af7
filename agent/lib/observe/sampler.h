/* SPDX-License-Identifier: MIT */
/* sampler.h — the observer: host and process counters sampled at an
 * interval, each sample a record of what changed since the last one.
 *
 * Host: per-CPU %usr/%sys (/proc/stat), vmstat (THP, compaction, NUMA
 * balancing, faults), TLB shootdowns and device IRQs (/proc/interrupts), PSI,
 * and every SAMPLER_SLOW_EVERY-th sample (5 s at 10 Hz) the slower scans (memory cgroups against live
 * directories, cgroup CPU throttling).  Processes: each pid of the set with
 * all its threads (CPU time, switches, run-queue wait, CPUs used); with
 * `children`, the set grows with every descendant (mpirun's ranks),
 * looked for at every sample of the first 2 s (a launcher starting its
 * ranks), then with the slow scans.
 */
#ifndef NODETUNE_SAMPLER_H
#define NODETUNE_SAMPLER_H

#include <jansson.h>
#include <stdbool.h>

#include "base/fsroot.h"
#include "observe/obs.h"
#include "observe/tlb.h"

#define SAMPLER_MAX_PIDS 256

/* The /proc/vmstat counters of a sample, in the order of a record's
 * "vmstat" object. */
enum sampler_vm {
	SV_THP_FAULT_ALLOC,
	SV_THP_FAULT_FALLBACK,
	SV_COMPACT_STALL,
	SV_COMPACT_FAIL,
	SV_NUMA_HINT_FAULTS,
	SV_NUMA_PAGES_MIGRATED,
	SV_NUMA_MISS,
	SV_PGFAULT,
	SV_PGMAJFAULT,
	SAMPLER_VM
};

/* One row of sampler_vm_counters: name is the record's key and the field
 * of /proc/vmstat it is read from (all rows in one pass over the file). */
struct sampler_counter {
	const char *name;
	const char *unit;
	const char *source;
};

extern const struct sampler_counter sampler_vm_counters[SAMPLER_VM];
/* the slow scans (cgroup trees, descendants) every this many samples */
#define SAMPLER_SLOW_EVERY 50

struct sampler_snap {
	double t;                     /* seconds since the sampler started */
	struct obs_stat *stat;        /* NULL when /proc/stat could not be read */
	int64_t vm[SAMPLER_VM];        /* by enum sampler_vm; -1 absent */
	struct obs_irq irq;           /* irq.tlb is not used: see tlb below */
	uint64_t tlb;                 /* TLB shootdowns so far, from the sampler's source */
	bool tlb_ok;                  /* counted (the host can, and the read worked) */
	struct obs_psi psi;
	bool slow;                    /* the slow scans were taken */
	uint64_t throttled;
	long memcg_kernel, memcg_live;
	int n_procs;
	struct obs_proc proc[SAMPLER_MAX_PIDS];
};

struct sampler {
	struct fsroot *root;
	int pids[SAMPLER_MAX_PIDS];
	int n_pids;
	bool children;                /* add descendants of the pids */
	double t0;
	unsigned n;                   /* samples taken */
	long ticks_per_s;
	struct tlb_counter tlb;       /* TLB shootdowns: the source this host has, if any */
};

/* 0, or -errno (the root cannot be opened). */
int sampler_init(struct sampler *s, const char *root, const int *pids, int n_pids, bool children);
void sampler_release(struct sampler *s);
/* The counters this host cannot produce, each as "NAME: not countable on
 * this host (WHY)", joined by "; " into buf.  Returns how many (0: buf is
 * ""). */
int sampler_uncountable(const struct sampler *s, char *buf, size_t size);
/* Take a sample into snap (its stat buffer is allocated once and reused). */
void sampler_take(struct sampler *s, struct sampler_snap *snap);
void sampler_snap_release(struct sampler_snap *snap);
/* What changed from a to b, as one JSON record (a counter the host cannot
 * produce is null, never 0). */
json_t *sampler_record(const struct sampler *s, const struct sampler_snap *a, const struct sampler_snap *b);
/* The same as one line of text (no newline) into buf ("n/c": not
 * countable here). */
void sampler_line(const struct sampler *s, const struct sampler_snap *a, const struct sampler_snap *b, char *buf,
		  size_t size);
/* Processes of the set still alive at b. */
int sampler_alive(const struct sampler_snap *b);

#endif
