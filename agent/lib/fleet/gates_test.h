/* SPDX-License-Identifier: MIT */
/* gates_test.h — what gates.c exports for its tests only
 * (tests/unit/fleet/test_gates.c, tests/fuzz/fuzz_gates.c).  Nothing outside
 * gates.c and those files includes this. */
#ifndef NODETUNE_GATES_TEST_H
#define NODETUNE_GATES_TEST_H

#include "fleet/gates.h"

/* Parse a gate file's content buf[0..len) (need not be NUL-terminated),
 * named shown in messages.  The user is checked for syntax, not resolved.
 * Returns 0 and fills *ret (release with gates_release); or -EINVAL
 * ("shown:line: what"), -EFBIG, -ENOMEM with err; *ret untouched on
 * error. */
int gates_parse(const char *buf, size_t len, const char *shown, struct gate *ret, struct nt_err *err);

#endif
