/* SPDX-License-Identifier: MIT */
/* html_test.h — what html.c exports for its unit test only
 * (tests/unit/ab/test_html.c): steps of the module that the test checks one
 * by one.  Nothing outside html.c and its test includes this. */
#ifndef NODETUNE_HTML_TEST_H
#define NODETUNE_HTML_TEST_H

#include "ab/html.h"

/* The page to f.  0, or -EIO when f failed. */
int html_ab_page(FILE *f, const struct ab_config *cfg, const struct ab_result *res);

#endif
