/* SPDX-License-Identifier: MIT */
/* fsroot_test.h — what fsroot.c exports for its unit test only
 * (tests/unit/base/test_fsroot.c): steps of the module that the test checks one
 * by one.  Nothing outside fsroot.c and its test includes this. */
#ifndef NODETUNE_FSROOT_TEST_H
#define NODETUNE_FSROOT_TEST_H

#include "base/fsroot.h"

/* Files kept open now. */
int fsroot_cache_size(const struct fsroot *root);

#endif
