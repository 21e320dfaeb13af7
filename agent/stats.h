/* stats.h — the statistics of the A/B engine.
 *
 * Mann-Whitney U (two-sided, normal approximation with tie and continuity
 * corrections), the Hodges-Lehmann shift (median of all pairwise
 * differences), a seeded percentile bootstrap of the ratio of means, and the
 * verdict: regression, improvement, no-difference or inconclusive, against
 * a practical threshold. */
#ifndef NODETUNE_STATS_H
#define NODETUNE_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Median of x[0..n) (x is not modified); NAN for n = 0. */
double stats_median(const double *x, size_t n);

/* Median absolute deviation from the median. */
double stats_mad(const double *x, size_t n);

/* Mann-Whitney U of a against b: *ret_u is U of a; returns the two-sided
 * p-value (1 when either sample is empty or all values are tied). */
double stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb, double *ret_u);

/* Hodges-Lehmann estimate of the shift b - a: the median of all b_j - a_i. */
double stats_hodges_lehmann(const double *a, size_t na, const double *b, size_t nb);

/* Percentile bootstrap (resamples, seed) of mean(b) / mean(a): the point
 * ratio in *ret_ratio, the (1-alpha) interval in *ret_lo, *ret_hi.
 * Returns 0, or -EINVAL for an empty sample or a zero mean. */
int stats_bootstrap_ratio(const double *a, size_t na, const double *b, size_t nb, int resamples,
			  double alpha, uint64_t seed, double *ret_ratio, double *ret_lo, double *ret_hi);

enum stats_verdict { VERDICT_NO_DIFFERENCE, VERDICT_IMPROVEMENT, VERDICT_REGRESSION, VERDICT_INCONCLUSIVE };

/* For a higher-is-better metric (throughput) of B over A, ratio = B/A with
 * its interval: regression when the rank test is significant (p < alpha),
 * the interval lies below 1 and the ratio is below 1 - threshold (a real
 * and practically large loss); improvement the mirror image; no-difference
 * when the whole interval lies within 1 +- threshold (equivalence);
 * inconclusive otherwise: more trials would decide. */
enum stats_verdict stats_verdict(double p, double ratio, double ci_lo, double ci_hi, double alpha,
				 double threshold);

const char *stats_verdict_name(enum stats_verdict v);

#endif
