/* SPDX-License-Identifier: MIT */
/* abwatch_test.h — what abwatch.c exports for its unit test only
 * (tests/unit/ab/test_abwatch.c): the rank CPUs given by hand, and the trial
 * cgroup, for a test to set a limit on.  Nothing outside abwatch.c and its
 * test includes this. */
#ifndef NODETUNE_ABWATCH_TEST_H
#define NODETUNE_ABWATCH_TEST_H

#include "ab/abwatch.h"

/* The CPUs the job's ranks are bound to (a cpulist), when the caller knows
 * them; without it the rank CPUs are those the job ran on (culprit.h).
 * Any time before abwatch_end.  0, or -EINVAL with err (a bad list); the
 * watch is unchanged on error. */
int abwatch_set_cpus(struct abwatch *w, const char *cpulist, struct nt_err *err);

/* The trial cgroup of w (NULL when there is none): for its paths, or for a
 * test to set a limit on it.  Owned by w. */
const struct trialcg *abwatch_cgroup(const struct abwatch *w);

/* The job's followed cgroups (t->follow) into t's throttling and memory
 * rows: the most throttled one stands for the trial when it had more than
 * the trial cgroup (or the trial cgroup was not countable). */
void abwatch_fill_follow(struct abwatch_trial *t);

#endif
