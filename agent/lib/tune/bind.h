/* SPDX-License-Identifier: MIT */
/* bind.h — bind the calling process as one local rank of a plan, so that
 * the command exec'd next (and its threads and children, which inherit all
 * of it) runs where the plan says. */
#ifndef NODETUNE_BIND_H
#define NODETUNE_BIND_H

#include <stddef.h>

#include "tune/plan.h"

/* In this order: attach to the job cgroup (before the affinity: joining a
 * v1 cpuset resets it), sched_setaffinity to the rank's CPUs, set_mempolicy
 * (libnuma) over its nodes, scheduling policy and nice, and
 * CUDA_DEVICE_ORDER/CUDA_VISIBLE_DEVICES when the policy exports the GPU.
 * A job cgroup that does not exist (no apply ran) is skipped with a
 * warning in warn.  Returns 0 or -errno with err; the process may be
 * partly bound on error (it must not exec then). */
int bind_rank(const struct plan *pl, unsigned local_rank, char *warn, size_t warn_size, struct nt_err *err);

#endif
