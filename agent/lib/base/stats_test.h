/* SPDX-License-Identifier: MIT */
/* stats_test.h — what stats.c exports for its unit test only
 * (tests/unit/base/test_stats.c): the t and normal distributions' p-values
 * and quantiles, and the untrimmed block ratio, checked one by one.  Nothing outside stats.c and its test includes
 * this. */
#ifndef NODETUNE_STATS_TEST_H
#define NODETUNE_STATS_TEST_H

#include "base/stats.h"

/* Student's t: the two-sided p-value of t with df degrees of freedom
 * (df > 0; NAN otherwise), and the quantile q with P(|T| > q) = p2 (p2 in
 * (0, 1)). */
double stats_t_p2(double t, double df);

/* stats_block_ratio_trim at trim 0: the plain t on the blocks' log ratios
 * (stats.h says what each field holds).  0, or what _trim returns. */
int stats_block_ratio(const double *d, size_t n, double alpha, struct stats_blocks *ret);

/* The standard normal's two-sided p-value of z, 2 (1 - Phi(|z|)), and its
 * inverse: z with that p-value (p2 in (0, 1); NAN otherwise). */
double stats_norm_p2(double z);
double stats_norm_quantile(double p2);

#endif
