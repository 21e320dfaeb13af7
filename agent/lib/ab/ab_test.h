/* SPDX-License-Identifier: MIT */
/* ab_test.h — what ab.c exports for its unit test only
 * (tests/unit/ab/test_ab.c): the sequential design's steps, which the test
 * runs thousands of simulated experiments through.  Nothing outside ab.c
 * and its test includes this. */
#ifndef NODETUNE_AB_TEST_H
#define NODETUNE_AB_TEST_H

#include <stdbool.h>

#include "ab/ab.h"
#include "ab/abrun.h"

#define AB_MAX_TRIALS 400          /* both arms, warm-ups not counted: the last look */
#define AB_REFUSE_PAIRS 24         /* before a refusal: the sd of 12 pairs is off by 20% (one sd) */

/* The trial runner and the clock ab_run uses: abrun_trial and
 * nt_mono_s, or a test's (a simulated job on a simulated clock), so
 * that thousands of A/A experiments run through ab_run itself, its
 * schedule, ABBA pairing, looks and refusal (review B20).  NULL puts the
 * real one back.  Not thread-safe; a test's only. */
typedef int (*ab_trial_fn)(const struct ab_config *cfg, const regex_t *re, enum abfigure_source want,
			   const struct tlb_counter *tlb, int a, int index, struct ab_trial *t, struct ab_result *res,
			   struct nt_err *err);
void ab_test_inject(ab_trial_fn trial, double (*now)(void));

/* The blocks (of four trials) to run before the next look, n trials run:
 * the first look after cfg->trials per arm; each later one after half as
 * many trials again (n / 8 blocks, at least 1), so looks grow with log n;
 * never past AB_MAX_TRIALS. */
int ab_look_blocks(const struct ab_config *cfg, int n);

/* The information fraction of a look after n trials (n / 4 whole blocks),
 * elapsed_s into the experiment, trials_s of it spent in the blocks: the
 * blocks so far over those plus the blocks the rest of cfg->budget_s has
 * room for at the blocks' mean time (at most AB_MAX_TRIALS in all).
 * *ret_final: this is the last look (no block fits in the rest of the
 * budget, or AB_MAX_TRIALS is reached); the fraction is then 1. */
double ab_look_fraction(const struct ab_config *cfg, int n, double elapsed_s, double trials_s, bool *ret_final);

/* The spending so far: cumulative alpha, the last fraction, looks taken. */
struct ab_seq {
	double spent;
	double t;
	int looks;
};

/* The level of a look at fraction t (final: 1): the O'Brien-Fleming-type
 * alpha spent by max(t, s->t) less what s has spent; s is updated.  >= 0;
 * the levels of all the looks sum to at most cfg->alpha. */
double ab_seq_level(const struct ab_config *cfg, struct ab_seq *s, double t, bool final);

/* The verdict of one look over the pair differences d[0..n) (log B/A of
 * each AB pair) at level (the look's share of alpha): the trimmed t of
 * stats_block_ratio_trim at trim into *ret (ret->n 0: fewer than 2 pairs,
 * no estimate) and stats_verdict with TOST's interval.  A level of 0
 * decides nothing (inconclusive). */
enum stats_verdict ab_decide(double threshold, double trim, const double *d, int n, double level,
			     struct stats_blocks *ret);

/* Whether a look that decided nothing, after pairs pairs (at least
 * AB_REFUSE_PAIRS, pair_s seconds each, left_s of the budget left), should
 * stop as refused: at pair noise sd (log B/A), TOST's interval after all
 * the pairs the budget has room for (at most AB_MAX_TRIALS in all), at the
 * most the last look can spend (level), would still be wider (half width)
 * than the threshold, and the effect seen (ratio, B/A) would not be called
 * even if it held to the end: within the threshold, or |log ratio| within
 * the two-sided (1 - level) interval's half width then.  A refusal only
 * ever stops an experiment earlier and undecided: it adds no false alarm. */
bool ab_futile(const struct ab_config *cfg, int pairs, double pair_s, double left_s, double sd, double level,
	       double ratio);

/* How much of the change in the figure (ratio = B/A of a throughput) a
 * counter's change from a to b (A's and B's medians) can account for: its
 * cost (row->cost_ms per unit, an upper bound) over frame_ms, the time
 * its rate is per (A's step time, or 1000 for a rate per second), against
 * B's extra time per unit of A's, 1 / ratio - 1; a share of a rank CPU
 * (cost 0) is itself a share of its time.  E.g. throttling of 30 ms per
 * 100 ms step when B is 1/1.3 as fast: 1.0, all of it; 36 more page faults
 * per 100 ms step at 5 us each, against a 40% slowdown: 0.003.  Signed:
 * < 0 when the counter moved against the change.  NAN when the row's cost
 * is unknown (< 0), or the figure did not move (|ratio - 1| < 0.2%). */
double ab_share_of_change(const struct abwatch_row *row, double a, double b, double ratio, double frame_ms);

/* Judge one counter's explanation e from its a, b, noise and p (A's trials
 * against B's): it moved when the rank test says so (p < alpha) and its
 * change is beyond its own A/A noise (twice the smaller MAD of the two
 * arms: the spread of the arm that did not change) and its row's floor.
 * Its share of the change (ab_share_of_change) is NAN when the figure
 * itself moved less than the threshold (ab_figure_moved): a change below
 * what counts (a no-difference, whose interval lies within it) has
 * nothing for a counter to account for, and 55 more page faults a step
 * against a B/A of 0.9965 at --threshold 5 read as "all of the change,
 * bound 252%" (make demo, before).  It is claimed as a cause only when it
 * moved and can account for at least AB_CLAIM_SHARE of the change; a
 * counter that moved but cannot is listed as "also moved", never as a
 * cause. */
void ab_judge_counter(struct ab_explanation *e, const struct abwatch_row *row, double alpha, double ratio,
		      double threshold, double frame_ms);

/* Order res->expl: claimed first (a cause before a symptom, such as PSI,
 * that it explains), each by its share of the change (relevance); then
 * moved, each by its change over its noise; then the rest by
 * significance. */
void ab_rank_explanations(struct ab_result *res);

#endif
