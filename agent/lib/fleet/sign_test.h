/* SPDX-License-Identifier: MIT */
/* sign_test.h — what sign.c exports for its tests only
 * (tests/unit/fleet/test_sign.c, tests/fuzz/fuzz_sign.c).  Nothing outside
 * sign.c and those files includes this. */
#ifndef NODETUNE_SIGN_TEST_H
#define NODETUNE_SIGN_TEST_H

#include "fleet/sign.h"

/* Is s a valid key-pair name ([a-z0-9_-]{1,64})? */
bool sign_key_name_valid(const char *s);

/* The canonical bytes of h and doc[0..len) (the form above), malloc'd, in
 * *ret (NUL-terminated, not counted) and *ret_len.  Returns 0, -EINVAL (a
 * field out of its syntax, len > SIGN_DOC_MAX) or -ENOMEM; outputs
 * untouched on error. */
int sign_canonical(const struct sign_header *h, const char *doc, size_t len, char **ret, size_t *ret_len);

#endif
