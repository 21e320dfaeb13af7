/* SPDX-License-Identifier: MIT */
/* bisect_test.h — what bisect.c exports for its unit test only
 * (tests/unit/ab/test_bisect.c): steps of the module that the test checks one
 * by one.  Nothing outside bisect.c and its test includes this. */
#ifndef NODETUNE_BISECT_TEST_H
#define NODETUNE_BISECT_TEST_H

#include "ab/bisect.h"

/* ddmin over n deltas (n <= BISECT_MAX), starting from all n, which the
 * caller has seen fail.  Each distinct subset is tested at most once.
 * 0 with *ret the 1-minimal failing subset and *tests the number of tests
 * run, or the test's -errno. */
int bisect_ddmin(int n, bisect_test_fn test, void *ctx, uint64_t *ret, int *tests);

/* The level of test k (1, 2, ...) of one bisection: alpha * 6 / (pi^2 k^2).
 * These sum to alpha over any number of tests, so the chance that any test
 * of the bisection raises a false alarm (and sends ddmin down a wrong
 * subset) stays at or below alpha, as for one `ab`. */
double bisect_alpha(double alpha, int k);

/* The knobs (indexes into knob_table) whose values differ between good and
 * bad, [main] excluded; returns how many (at most BISECT_MAX). */
int bisect_delta(const struct policy *good, const struct policy *bad, int idx[BISECT_MAX]);

/* Write the candidate: good's values, with bad's for the deltas in set.
 * 0, or -errno. */
int bisect_write_candidate(FILE *f, const struct policy *good, const struct policy *bad, const int idx[],
			   int n, uint64_t set);

#endif
