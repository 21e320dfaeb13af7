/* SPDX-License-Identifier: MIT */
/* cgfollow_test.h — what cgfollow.c exports for its tests only
 * (tests/unit/ab/test_cgfollow.c).  Nothing outside cgfollow.c and those
 * files includes this. */
#ifndef NODETUNE_CGFOLLOW_TEST_H
#define NODETUNE_CGFOLLOW_TEST_H

#include "ab/cgfollow.h"

/* Did group g throttle, or hit a memory limit, during the trial? */
bool cgfollow_group_limited(const struct cgfollow_group *g);

#endif
