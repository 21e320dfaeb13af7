/* SPDX-License-Identifier: MIT */
/* knob_test.h — what knob.c exports for its unit test only
 * (tests/unit/machine/test_kstate.c): steps of the module that the test checks one
 * by one.  Nothing outside knob.c and its test includes this. */
#ifndef NODETUNE_KNOB_TEST_H
#define NODETUNE_KNOB_TEST_H

#include "machine/knob.h"

/* Parse a choice file's content: the bracketed form or one plain word,
 * which must be one of allowed (NULL-terminated).  Copies the selected
 * value into out.  Returns 0 or -EINVAL. */
int knob_parse_choice(const char *content, const char *const *allowed, char *out, size_t size);

#endif
