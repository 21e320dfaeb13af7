/* SPDX-License-Identifier: MIT */
/* bind.c — see bind.h. */
#include "tune/bind.h"

#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/cpulist.h"
#include "tune/jobcg.h"

static int bind_affinity(hwloc_const_bitmap_t cpus, struct nt_err *err)
{
	int last = hwloc_bitmap_last(cpus), cpu, r = 0;
	size_t size = CPU_ALLOC_SIZE(last + 1);
	cpu_set_t *set = CPU_ALLOC(last + 1);
	char list[256];

	if (!set)
		return err_set(err, -ENOMEM, "out of memory");
	CPU_ZERO_S(size, set);
	hwloc_bitmap_foreach_begin(cpu, cpus) {
		CPU_SET_S((unsigned)cpu, size, set);
	} hwloc_bitmap_foreach_end();
	if (sched_setaffinity(0, size, set) < 0) {
		r = -errno;
		cpulist_format(cpus, list, sizeof(list));
		err_set(err, r, "sched_setaffinity(%s): %s", list, nt_strerror(-r));
	}
	CPU_FREE(set);
	return r;
}

static int bind_memory(const char *policy, hwloc_const_bitmap_t mems, struct nt_err *err)
{
	unsigned long mask[16] = { 0 };
	unsigned long maxnode = sizeof(mask) * 8;
	int mode, node, first = hwloc_bitmap_first(mems);
	char list[128];

	if (numa_available() < 0)
		return err_set(err, -ENOSYS, "memory policy %s: this kernel has no NUMA support", policy);
	if (!strcmp(policy, "preferred")) {
		mode = MPOL_PREFERRED;
		mask[first / (8 * sizeof(long))] |= 1ul << (first % (8 * sizeof(long)));
	} else {
		mode = !strcmp(policy, "interleave") ? MPOL_INTERLEAVE : MPOL_BIND;
		hwloc_bitmap_foreach_begin(node, mems) {
			if ((unsigned long)node < maxnode)
				mask[node / (8 * sizeof(long))] |= 1ul << (node % (8 * sizeof(long)));
		} hwloc_bitmap_foreach_end();
	}
	if (set_mempolicy(mode, mask, maxnode + 1) < 0) {
		int e = -errno;

		cpulist_format(mems, list, sizeof(list));
		return err_set(err, e, "set_mempolicy(%s, nodes %s): %s", policy, list, nt_strerror(-e));
	}
	return 0;
}

static int bind_sched(const struct plan *pl, struct nt_err *err)
{
	static const struct { const char *name; int policy; } map[] = {
		{ "other", SCHED_OTHER }, { "batch", SCHED_BATCH }, { "idle", SCHED_IDLE },
		{ "fifo", SCHED_FIFO }, { "rr", SCHED_RR },
	};
	int e;

	for (size_t i = 0; pl->sched_policy && i < sizeof(map) / sizeof(map[0]); i++) {
		struct sched_param sp = { .sched_priority = pl->sched_priority };

		if (strcmp(map[i].name, pl->sched_policy))
			continue;
		if (sched_setscheduler(0, map[i].policy, &sp) < 0) {
			e = -errno;
			return err_set(err, e, "sched_setscheduler(%s, priority %d): %s", pl->sched_policy,
				       pl->sched_priority, nt_strerror(-e));
		}
	}
	if (pl->has_nice && setpriority(PRIO_PROCESS, 0, pl->nice) < 0) {
		e = -errno;
		return err_set(err, e, "setpriority(nice %d): %s", pl->nice, nt_strerror(-e));
	}
	return 0;
}

int bind_rank(const struct plan *pl, unsigned local_rank, char *warn, size_t warn_size, struct nt_err *err)
{
	const struct plan_rank *rk;
	char buf[16];
	int r;

	warn[0] = '\0';
	if (local_rank >= pl->n_ranks)
		return err_set(err, -EINVAL, "local rank %u, but the plan has %u ranks", local_rank, pl->n_ranks);
	rk = &pl->ranks[local_rank];
	if (pl->cgroup[0]) {
		if (!jobcg_exists(pl->cgroup))
			snprintf(warn, warn_size, "job cgroup %s does not exist (no `nodetune apply` ran): not attached",
				 pl->cgroup);
		else if ((r = jobcg_attach(pl->cgroup, getpid(), err)) < 0)
			return r;
	}
	if (rk->cpus && (r = bind_affinity(rk->cpus, err)) < 0)
		return r;
	if (rk->mems && (r = bind_memory(pl->memory_policy, rk->mems, err)) < 0)
		return r;
	if ((r = bind_sched(pl, err)) < 0)
		return r;
	if (pl->export_gpu && rk->gpu >= 0) {
		snprintf(buf, sizeof(buf), "%d", rk->gpu);
		if (setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1) < 0 || setenv("CUDA_VISIBLE_DEVICES", buf, 1) < 0)
			return err_set(err, -ENOMEM, "setenv: out of memory");
	}
	return 0;
}
