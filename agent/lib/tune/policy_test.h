/* SPDX-License-Identifier: MIT */
/* policy_test.h — what policy.c exports for its tests only
 * (tests/unit/tune/test_policy.c, the tests that read a policy back by key,
 * tests/fuzz/fuzz_policy.c).  Nothing outside policy.c and those files
 * includes this. */
#ifndef NODETUNE_POLICY_TEST_H
#define NODETUNE_POLICY_TEST_H

#include "tune/policy.h"

/* The policy p as one self-contained policy text: every key the chain of
 * files set, with its value, under its [section], in knob-table order, each
 * after a comment "# from FILE:LINE" (control characters in FILE shown as
 * '?'), and no include= line.  policy_parse_buffer of the text gives the
 * same value for every key as p.  Returns the text (malloc'd,
 * NUL-terminated; its length in *ret_len when ret_len is not NULL), or NULL
 * (out of memory). */
char *policy_to_text(const struct policy *p, size_t *ret_len);

/* policy_value and policy_int for a key by name, for callers that hold a
 * name from outside the code (tests, fuzz targets, a user's input); the key
 * must be a row of knob_table (asserted).  Code that knows its knob uses the
 * enum. */
const char *policy_get(const struct policy *p, const char *section, const char *key);
long long policy_get_int(const struct policy *p, const char *section, const char *key,
			 long long def);

/* Does the policy equal "changes nothing and binds nothing"? */
bool policy_is_empty(const struct policy *p);

#endif
