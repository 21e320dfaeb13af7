/* SPDX-License-Identifier: MIT */
/* kstate.h — the kernel state that matters for training throughput.
 *
 * Read from /sys and /proc below an fsroot.  A missing file leaves its field
 * unknown and adds a note (the caller shows it as a warning); content that
 * cannot be parsed is an error naming the file (and line).  The fields that
 * are policy knobs (THP, NUMA balancing, the governor) are read from their
 * knob_table rows' files with the rows' readers (knob.h).
 */
#ifndef NODETUNE_KSTATE_H
#define NODETUNE_KSTATE_H

#include <stdint.h>

#include "base/fsroot.h"
#include "base/log.h"

struct kstate_hugepages {
	int node;                  /* NUMA OS index; -1 for the global pool */
	uint64_t size_kb;
	uint64_t total;
	uint64_t free;
};

/* A NUMA node's memory as its nodeN/meminfo says (numactl -H's size, free). */
struct kstate_node_mem {
	int node;                  /* NUMA OS index */
	uint64_t total_bytes;      /* MemTotal */
	uint64_t free_bytes;       /* MemFree */
};

#define KSTATE_MAX_NOTES 16

struct kstate {
	char thp_enabled[16];      /* "always", "madvise", "never"; "" unknown */
	char thp_defrag[16];       /* "always", "defer", "defer+madvise", ... */
	int numa_balancing;        /* 0..3 (kernel.numa_balancing); -1 unknown */
	struct kstate_hugepages *hugepages;
	unsigned n_hugepages;
	struct kstate_node_mem *node_mem; /* by node; none for a tree without nodeN/meminfo */
	unsigned n_node_mem;
	char governor[64];         /* common scaling_governor, "mixed", "" unknown */
	char *isolated_cpus;       /* cpulist ("" none); NULL unknown */
	char *nohz_full;           /* cpulist ("" none); NULL unknown */
	int64_t swap_total_bytes;  /* -1 unknown */
	int cgroup_version;        /* 1 (legacy or hybrid), 2 (unified); 0 unknown */
	char cgroup_mode[16];      /* "legacy", "hybrid", "unified"; "" unknown */
	char *notes[KSTATE_MAX_NOTES]; /* fields left unknown, and why */
	unsigned n_notes;
};

/* Read everything.  Returns 0 and fills *ret (release with kstate_release),
 * or -EINVAL for garbage (err->msg names the file, with :line where the
 * format has lines), -ENOMEM; *ret is untouched on error. */
int kstate_read(const struct fsroot *root, struct kstate *ret, struct nt_err *err);

/* Free what kstate_read allocated; a zeroed struct is fine. */
void kstate_release(struct kstate *ks);

#endif
