/* culprit_test.h — what culprit.c exports for its unit test only
 * (tests/unit/ab/test_culprit.c): a name the test checks.  Nothing outside
 * culprit.c and its test includes this. */
#ifndef NODETUNE_CULPRIT_TEST_H
#define NODETUNE_CULPRIT_TEST_H

#include "ab/culprit.h"

/* "SCHED_FIFO", ...; "SCHED_?" for a number the kernel does not have. */
const char *culprit_policy_name(int policy);

#endif
