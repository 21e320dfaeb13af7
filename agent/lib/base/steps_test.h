/* SPDX-License-Identifier: MIT */
/* steps_test.h — what steps.c exports for its tests only
 * (tests/unit/base/test_steps.c, tests/fuzz/fuzz_steps.c).  Nothing outside
 * steps.c and those files includes this. */
#ifndef NODETUNE_STEPS_TEST_H
#define NODETUNE_STEPS_TEST_H

#include "base/steps.h"

/* Parse one line (no newline; len bytes, NUL bytes refused).  0 with *ret
 * filled, or -EINVAL with err saying why ("'t' must be a number of seconds
 * >= 0"); *ret untouched on error. */
int steps_parse_line(const char *line, size_t len, struct step_report *ret, struct nt_err *err);

#endif
