/* jobcg.h — the job cgroup, through libcgroup, on cgroup v1, hybrid and v2
 * hosts: a cpuset (the ranks' CPUs and nodes) and a CPU weight (cpu.weight
 * on v2; cpu.shares = weight * 1024 / 100 where the cpu controller is on a
 * v1 hierarchy).  Live host only. */
#ifndef NODETUNE_JOBCG_H
#define NODETUNE_JOBCG_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/log.h"

/* Can this host have a job cgroup (libcgroup initialises, cpuset mounted)?
 * When not, why says so. */
bool jobcg_available(char *why, size_t size);

bool jobcg_exists(const char *name);

/* Create name with its cpuset and weight (weight 0: leave).  -EEXIST when it
 * exists (never take over someone else's group), other -errno with err. */
int jobcg_create(const char *name, const char *cpus, const char *mems, unsigned weight,
		 struct nt_err *err);

/* Move pid into name (cpuset and cpu controllers). */
int jobcg_attach(const char *name, pid_t pid, struct nt_err *err);

/* Delete name, moving any tasks left to the parent.  Missing: 0. */
int jobcg_delete(const char *name, struct nt_err *err);

#endif
