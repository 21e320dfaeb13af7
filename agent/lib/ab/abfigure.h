/* SPDX-License-Identifier: MIT */
/* abfigure.h — the figure an A/B trial is judged by, and where it came from.
 *
 * Three sources, in this order of preference:
 *   - --metric REGEX: the job prints its own figure (a line of its log),
 *     the first capture group of every matching line; the median of them is
 *     the trial's figure.  --metric-kind says its direction: throughput
 *     (higher is better) or time (lower is better, taken as 1 / value).
 *   - step reports (steps.h): the job wrote one JSON line per step and rank
 *     to NODETUNE_STEP_FILE / NODETUNE_STEP_FD; merged over ranks here into
 *     per-step times (a step lasts as long as its slowest rank), phases,
 *     samples and the skew between ranks.  The figure is samples/s over
 *     the steps (their samples over their summed time: a stall is lost
 *     time) when the job said its samples, else steps/s.
 *   - the wall time of the trial, 1 / seconds: the last resort.
 * With --metric the step reports, when there are some, still give the
 * steps, stalls and phases of the report.
 *
 * Everything read here is untrusted (the job wrote it): bounded, checked,
 * never half taken.
 */
#ifndef NODETUNE_ABFIGURE_H
#define NODETUNE_ABFIGURE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/log.h"
#include "base/steps.h"

enum abfigure_source { ABFIGURE_WALL, ABFIGURE_STEPS, ABFIGURE_METRIC };
enum abfigure_kind { ABFIGURE_THROUGHPUT, ABFIGURE_TIME };

/* "wall time", "step reports", "--metric" */
const char *abfigure_source_name(enum abfigure_source s);

/* A trial's step report merged over ranks. */
struct abfigure_steps {
	int n;                                   /* steps kept (0: none) */
	double *ms;                              /* each step's time: its slowest rank's t, in ms */
	double samples;                          /* a step's samples, over the ranks (median); 0: not said */
	int n_phases;                            /* phase names seen, in order of first appearance */
	char phase[STEPS_PHASES_MAX][STEPS_NAME_MAX];
	double *phase_ms[STEPS_PHASES_MAX];      /* per step: the slowest rank's time in that phase (0: not said) */
	int ranks;                               /* distinct ranks seen */
	double skew;                             /* median over steps of slowest / fastest rank (0: one rank) */
	int slowest;                             /* the rank slowest in most steps */
	double slowest_share;                    /* of the steps */
	unsigned bad_lines;                      /* lines the job wrote that were refused */
	char first_bad[256];
};

/* Merge s (lines in any order, several ranks) into *ret, dropping the steps
 * numbered below skip (one-time costs of a job's first steps).  0, or
 * -ENOMEM with err; a report with no step left gives ret->n == 0. */
int abfigure_steps_merge(const struct steps *s, long long skip, struct abfigure_steps *ret, struct nt_err *err);
void abfigure_steps_release(struct abfigure_steps *s);

/* The figure of merged steps: samples/s over them (a step's samples, as
 * the median step says them, times the steps, over their summed time), or
 * steps/s.  0 when there are no steps. */
double abfigure_steps_figure(const struct abfigure_steps *s);

/* Compile --metric's REGEX (POSIX extended): it must have exactly one
 * capture group, the value.  0, or -EINVAL with err saying why. */
int abfigure_metric_compile(const char *regex, regex_t *ret, struct nt_err *err);

/* Scan a job's output buf[0..len) line by line (a line is at most 64 KiB:
 * longer ones are skipped; NUL bytes end a line's text) for re: the first
 * group of each matching line must be a finite number > 0 (a bad value is
 * counted in *ret_bad, not taken).  The median of the good values in
 * *ret_value and their count in *ret_n (0: none, *ret_value 0). */
void abfigure_metric_scan(const regex_t *re, const char *buf, size_t len, double *ret_value, int *ret_n,
		       int *ret_bad);

/* The figure, higher is better, of a metric value of that kind. */
double abfigure_metric_figure(double value, enum abfigure_kind kind);

#endif
