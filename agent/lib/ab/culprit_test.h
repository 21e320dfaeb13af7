/* SPDX-License-Identifier: MIT */
/* culprit_test.h — what culprit.c exports for its unit test only
 * (tests/unit/ab/test_culprit.c): a name the test checks.  Nothing outside
 * culprit.c and its test includes this. */
#ifndef NODETUNE_CULPRIT_TEST_H
#define NODETUNE_CULPRIT_TEST_H

#include "ab/culprit.h"
#include "observe/taskexit.h"

/* "SCHED_FIFO", ...; "SCHED_?" for a number the kernel does not have. */
const char *culprit_policy_name(int policy);

/* One exit record into the watch, as the taskstats listener gives it at a
 * sample (after the listing of proc, before the swap of the thread
 * tables): a test gives records a captured tree cannot.  Returns 0. */
int culprit_exit_record(struct culprit *c, const struct taskexit_rec *x);

#endif
