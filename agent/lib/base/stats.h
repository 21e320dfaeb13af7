/* SPDX-License-Identifier: MIT */
/* stats.h — the statistics of the A/B engine, as it uses them.
 *
 * The verdict's estimate comes from paired ABBA blocks (stats_block_ratio,
 * a t interval) and stats_verdict judges it against a practical threshold:
 * regression, improvement, no-difference or inconclusive; stats_blocks_needed
 * says what a budget can decide.  The counters' explanations use medians,
 * the MAD and Mann-Whitney U (two-sided, normal approximation with tie and
 * continuity corrections); the step times the Hodges-Lehmann shift (the
 * median of all pairwise differences). */
#ifndef NODETUNE_STATS_H
#define NODETUNE_STATS_H

#include <stddef.h>

/* The false-alarm rates the A/B engine takes: ab's --alpha (cli/opts.c)
 * and a gate file's alpha (fleet/gates.c), one range. */
#define STATS_ALPHA_MIN 1e-6
#define STATS_ALPHA_MAX 0.5

/* Median of x[0..n) (x is not modified); NAN for n = 0. */
double stats_median(const double *x, size_t n);

/* Median absolute deviation from the median. */
double stats_mad(const double *x, size_t n);

/* Mann-Whitney U of a against b: *ret_u is U of a; returns the two-sided
 * p-value (1 when either sample is empty or all values are tied). */
double stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb, double *ret_u);

/* Hodges-Lehmann estimate of the shift b - a: the median of all b_j - a_i. */
double stats_hodges_lehmann(const double *a, size_t na, const double *b, size_t nb);

double stats_t_quantile(double p2, double df);

/* The paired estimate of B/A.  A block is a run of trials of both arms
 * close in time (the A/B engine uses each adjacent AB or BA pair of its
 * ABBA blocks); d[i] is the difference of block i: the mean log metric of
 * its B trials minus that of its A trials.  Drift and the load of the
 * moment, shared within a block, cancel in d; what is left varies from
 * block to block and is what the interval is made of (a t interval on the
 * mean of d, n - 1 degrees of freedom), so trials that are not independent
 * of one another do not shrink it.  Needs n >= 2.
 *
 * stats_block_ratio_trim is the same on the trimmed mean of d (Yuen's
 * trimmed t): the stats_trim_g(n, trim) lowest and highest d are left out
 * of the estimate, and the interval's width comes from the winsorized
 * variance, with n - 2g - 1 degrees of freedom.  One block far off the rest
 * (a trial that ran at half speed all through) then moves neither the
 * estimate nor the width.  On normal noise it costs some blocks: the
 * asymptotic efficiency is about 0.97 at trim 0.1 and 0.94 at 0.2, and at
 * few blocks the lost degrees of freedom cost more at the small levels of
 * early looks.  trim in [0, 0.5); 0 is stats_block_ratio. */
struct stats_blocks {
	int n;                        /* blocks */
	double ratio;                 /* exp(mean d): B/A */
	double ci_lo, ci_hi;          /* the (1 - alpha) interval of the ratio: the difference test's */
	double eq_lo, eq_hi;          /* the (1 - 2 alpha) interval: TOST's (two one-sided tests at alpha) */
	double p;                     /* two-sided, of mean d = 0 */
	double sd;                    /* of d: the noise of one block's B/A, as a log (trimmed:
				       * the standard error times sqrt n) */
	double df;                    /* the t's degrees of freedom */
	int trimmed;                  /* blocks left out at each end */
};
int stats_block_ratio_trim(const double *d, size_t n, double alpha, double trim, struct stats_blocks *ret);

/* The blocks cut from each end of n at trim: floor(trim n), at most what
 * leaves 2. */
int stats_trim_g(int n, double trim);

/* The alpha a group-sequential design has spent by information fraction t
 * (Lan-DeMets, O'Brien-Fleming type, two-sided): 2 - 2 Phi(z_{1-alpha/2} /
 * sqrt(t)); 0 for t <= 0, alpha for t >= 1.  It spends almost nothing
 * early (alpha 0.05: 0.00009 at t = 0.25, 0.0056 at 0.5, 0.024 at 0.75),
 * so early looks stop only on a large effect and the last keeps most of
 * the power of a single test. */
double stats_obf_spent(double alpha, double t);

/* Blocks needed so that a (1 - alpha) interval of an A/A with that block
 * noise sd (a log, as above) fits within +-threshold, with room for the
 * estimate to wander by a third of it: the noise floor's verdict on what a
 * budget can decide.  trim: as stats_block_ratio_trim, whose degrees of
 * freedom it uses. */
int stats_blocks_needed(double sd, double alpha, double threshold, double trim);

enum stats_verdict { VERDICT_NO_DIFFERENCE, VERDICT_IMPROVEMENT, VERDICT_REGRESSION, VERDICT_INCONCLUSIVE };

/* For a higher-is-better metric (throughput) of B over A, ratio = B/A, at
 * level alpha (one look's share of the experiment's alpha): regression
 * when the difference test is significant (two-sided p < alpha: the
 * (1 - alpha) interval excludes 1) and the ratio is below 1 - threshold (a
 * real and practically large loss); improvement the mirror image;
 * no-difference when the equivalence test (TOST: two one-sided tests at
 * alpha) rejects a difference of the threshold, that is when lo..hi, the
 * (1 - 2 alpha) interval (stats_blocks' eq_lo, eq_hi), lies within
 * 1 +- threshold; inconclusive otherwise: more trials would decide. */
enum stats_verdict stats_verdict(double p, double ratio, double ci_lo, double ci_hi, double alpha,
				 double threshold);

const char *stats_verdict_name(enum stats_verdict v);

#endif
