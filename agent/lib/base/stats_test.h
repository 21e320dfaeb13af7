/* SPDX-License-Identifier: MIT */
/* stats_test.h — what stats.c exports for its unit test only
 * (tests/unit/base/test_stats.c): the t distribution's p-value and a sample
 * size, checked one by one.  Nothing outside stats.c and its test includes
 * this. */
#ifndef NODETUNE_STATS_TEST_H
#define NODETUNE_STATS_TEST_H

#include "base/stats.h"

/* Student's t: the two-sided p-value of t with df degrees of freedom
 * (df > 0; NAN otherwise), and the quantile q with P(|T| > q) = p2 (p2 in
 * (0, 1)). */
double stats_t_p2(double t, double df);

/* Blocks needed for a (1 - alpha) interval of half width at most w (a
 * log) at block noise sd, with the degrees of freedom of the trimmed t at
 * trim.  At least 2; INT_MAX when sd is not finite or w not > 0. */
int stats_blocks_for_width(double sd, double alpha, double w, double trim);

#endif
