/* SPDX-License-Identifier: MIT */
/* child_test.h — child.c's fallbacks for kernels without close_range, for
 * its unit test (test_child.c); async-signal-safe as child.h's. */
#ifndef NODETUNE_CHILD_TEST_H
#define NODETUNE_CHILD_TEST_H

/* Close every fd from first on that /proc/self/fd lists, listing again
 * until a pass closes nothing (at most 16 passes).  0, or -errno when
 * /proc/self/fd cannot be read (nothing closed then). */
int child_close_by_proc(int first);

/* Close every number from first below RLIMIT_NOFILE's soft limit (at most
 * 1 << 20).  0, or -errno of getrlimit. */
int child_close_by_limit(int first);

#endif
