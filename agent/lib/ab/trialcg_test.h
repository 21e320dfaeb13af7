/* SPDX-License-Identifier: MIT */
/* trialcg_test.h — what trialcg.c exports for its unit test only
 * (tests/unit/ab/test_trialcg.c): steps the test checks one by one.  Nothing
 * outside trialcg.c and its test includes this. */
#ifndef NODETUNE_TRIALCG_TEST_H
#define NODETUNE_TRIALCG_TEST_H

#include "ab/trialcg.h"

/* Read the cgroups pid is in right now (proc/PID/cgroup below root, mapped
 * to the mounts of proc/self/mounts): e.g. the group a wrapper in the job
 * moved itself into to apply a quota.  Returns 0, -ENOENT (no such pid, or
 * its cgroups are not mounted here), -ENOTSUP (no cgroup mounted), -EINVAL
 * (a malformed file, with file:line) with err; *ret untouched on error. */
int trialcg_read_pid(const struct fsroot *root, pid_t pid, struct trialcg_stats *ret, struct nt_err *err);

/* Is pid in the group in every hierarchy of it (false when it has moved
 * elsewhere, or is gone)? */
bool trialcg_holds(const struct trialcg *cg, pid_t pid);

#endif
