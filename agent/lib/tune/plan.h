/* SPDX-License-Identifier: MIT */
/* plan.h — policy x topology x N local ranks -> what would be done.
 *
 * Deterministic: the same inputs give the same plan.  Per local rank: its
 * GPU, CPUs, memory nodes and NIC; per host setting: path, current value,
 * wanted value; the job cgroup; the device IRQs to move.  Building a plan
 * changes nothing; reading the current values needs an fsroot (NULL for a
 * topology that is not this host's: "from" is then unknown).
 */
#ifndef NODETUNE_PLAN_H
#define NODETUNE_PLAN_H

#include <hwloc.h>
#include <jansson.h>
#include <stdio.h>

#include "base/fsroot.h"
#include "tune/policy.h"
#include "machine/topo.h"

#define PLAN_MAX_RANKS 4096
#define PLAN_MAX_NOTES 32
#define PLAN_VALUE_MAX 256

struct plan_rank {
	unsigned local_rank;
	int gpu;                 /* index into topo->gpus, -1 none */
	hwloc_bitmap_t cpus;     /* NULL: not bound */
	hwloc_bitmap_t mems;     /* NULL: no memory policy */
	char nic[128];           /* "" none */
};

struct plan_host {
	enum knob_id knob;
	char path[256];          /* below the fsroot */
	char from[PLAN_VALUE_MAX]; /* effective value now; "" unknown */
	char to[PLAN_VALUE_MAX];
};

struct plan_irq {
	unsigned irq;
	char device[16];         /* PCI bus id */
	char path[64];           /* proc/irq/N/smp_affinity_list */
	char from[PLAN_VALUE_MAX];
	char to[PLAN_VALUE_MAX];
};

struct plan {
	char policy_path[512];
	char summary[256];
	const char *memory_policy;   /* "none", "bind", ... (static) */
	const char *sched_policy;    /* NULL: leave */
	int sched_priority;
	int nice;                    /* only with has_nice */
	bool has_nice;
	bool export_gpu;
	struct plan_rank *ranks;
	unsigned n_ranks;
	struct plan_host *host;
	unsigned n_host;
	struct plan_irq *irqs;
	unsigned n_irqs;
	char cgroup[72];             /* "" none */
	unsigned cpu_weight;         /* 0: leave */
	hwloc_bitmap_t cgroup_cpus, cgroup_mems;
	hwloc_bitmap_t housekeeping;
	char *notes[PLAN_MAX_NOTES]; /* fallbacks taken, printed with the plan */
	unsigned n_notes;
};

/* Build the plan for nranks local ranks; nranks 0: the default, one rank
 * per GPU of t, or 1 on a machine without GPUs (every caller that does not
 * know its job's rank count passes 0: this is the one place that rule
 * lives).  root may be NULL (foreign topology).  Returns NULL with
 * err set: -EINVAL for an impossible plan (more ranks than CPUs, a GPU
 * without local CPUs, housekeeping outside the machine, a hugepage pool
 * the kernel does not have), -ENOMEM. */
struct plan *plan_build(const struct policy *p, const struct topo *t, unsigned nranks,
			const struct fsroot *root, struct nt_err *err);

/* plan_build for a job that holds only some of the machine's GPUs (a
 * Slurm step's): rank r uses gpus[r mod n_gpus] (indexes into t->gpus),
 * everything else as plan_build (housekeeping and host settings stay the
 * machine's).  n_gpus 0: all GPUs, as plan_build.  -EINVAL also for an
 * index that is not a GPU of t. */
struct plan *plan_build_gpus(const struct policy *p, const struct topo *t, unsigned nranks, const unsigned *gpus,
			     unsigned n_gpus, const struct fsroot *root, struct nt_err *err);

void plan_free(struct plan *pl);

/* The plan as a JSON document (new reference; NULL on out of memory).
 * Each host setting and IRQ is a setting object (plan_setting_json). */
json_t *plan_json(const struct plan *pl);

/* One setting as every document names it (plan, verify): {"knob":
 * "thp.enabled", "path": "/sys/..." (from the root, as the text shows it;
 * null when path is NULL), "current": the host's value (null when current
 * is NULL: unknown), "wanted": the policy's}.  New reference; NULL on out
 * of memory. */
json_t *plan_setting_json(enum knob_id knob, const char *path, const char *current, const char *wanted);

/* Human-readable plan.  Returns 0 or -EIO. */
int plan_print(FILE *out, const struct plan *pl, const struct topo *t);

#endif
