/* bisect.h — knob-level delta debugging between a good and a bad policy.
 *
 * The delta is every knob whose value differs between the two (after their
 * includes are resolved; [main] keys are not knobs).  A candidate is the good
 * policy with a subset of the delta taken from the bad one; the test is an
 * A/B of the good policy against the candidate, and a `regression` verdict
 * is a failure.  ddmin (Zeller and Hildebrandt, "Simplifying and Isolating
 * Failure-Inducing Input", 2002) then finds a 1-minimal failing subset: no
 * single knob of it can be dropped and still reproduce the regression.  That
 * finds interactions too (two knobs that regress only together).
 */
#ifndef NODETUNE_BISECT_H
#define NODETUNE_BISECT_H

#include <stdint.h>
#include <stdio.h>

#include "log.h"
#include "policy.h"

#define BISECT_MAX 64

enum { BISECT_PASS = 0, BISECT_FAIL = 1, BISECT_UNRESOLVED = 2 };

/* Test the subset `set` (bit i: delta i).  BISECT_PASS, BISECT_FAIL,
 * BISECT_UNRESOLVED (the candidate could not be tested, e.g. an invalid
 * combination), or -errno to abort. */
typedef int (*bisect_test_fn)(uint64_t set, void *ctx);

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
