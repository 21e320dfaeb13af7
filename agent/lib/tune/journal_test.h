/* SPDX-License-Identifier: MIT */
/* journal_test.h — what journal.c exports for its unit test only
 * (tests/unit/tune/test_journal.c): steps of the module that the test checks one
 * by one.  Nothing outside journal.c and its test includes this. */
#ifndef NODETUNE_JOURNAL_TEST_H
#define NODETUNE_JOURNAL_TEST_H

#include "tune/journal.h"

/* %XX escaping of tab, newline, '%' and control bytes; exposed for tests. */
char *journal_escape(const char *s);

char *journal_unescape(const char *s);

/* Does a journal exist (changes in effect, or an apply that died)? */
bool journal_exists(const struct journal *j);

#endif
