/* SPDX-License-Identifier: MIT */
/* taskexit_test.h — what taskexit.c exports for its tests only
 * (tests/unit/observe/test_taskexit.c, tests/fuzz/fuzz_taskexit.c).  Nothing
 * outside taskexit.c and those files includes this. */
#ifndef NODETUNE_TASKEXIT_TEST_H
#define NODETUNE_TASKEXIT_TEST_H

#include "observe/taskexit.h"

/* Parse one datagram of a taskstats socket, buf[0..len): each netlink
 * message in it, each per-task record (TASKSTATS_TYPE_AGGR_PID; the
 * per-process sums, AGGR_TGID, repeat its threads' and are skipped) given to
 * fn with cpu set to the argument.  fn returns 0 to go on, or a negative
 * number to stop (returned as is, err untouched).  A kernel error message (NLMSG_ERROR) is -EIO with err
 * naming its errno; a malformed message -EINVAL with err naming the offset.
 * Records before the malformed message were given.  Returns the records
 * given (>= 0), or the error. */
int taskexit_parse(const void *buf, size_t len, int cpu, int (*fn)(const struct taskexit_rec *, void *), void *arg,
		   struct nt_err *err);

#endif
