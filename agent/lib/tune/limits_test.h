/* SPDX-License-Identifier: MIT */
/* limits_test.h — what limits.c exports for its tests only
 * (tests/unit/tune/test_limits.c, tests/unit/fleet/test_fleet_host.c,
 * tests/fuzz/fuzz_limits.c).  Nothing outside limits.c and those files
 * includes this. */
#ifndef NODETUNE_LIMITS_TEST_H
#define NODETUNE_LIMITS_TEST_H

#include "tune/limits.h"

/* Parse limits from buf[0..len) (untrusted, need not be NUL-terminated),
 * named name in messages.  Returns the limits or NULL with err: -EINVAL,
 * -EFBIG, -ENOMEM. */
struct limits *limits_parse_buffer(const char *buf, size_t len, const char *name, struct nt_err *err);

#endif
