/* SPDX-License-Identifier: MIT */
/* nt_duration.h — the one rule for durations, shared by the agent (every
 * option and file that takes a time) and the harness (--timeout): a decimal
 * number and a unit, ms, s, m or h; a bare number counts seconds.  The
 * messages that refuse one give examples from the option's own range, so
 * an example shown is always one that is taken.
 */
#ifndef NODETUNE_NT_DURATION_H
#define NODETUNE_NT_DURATION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parse all of s as a duration in seconds: a decimal number (digits, an
 * optional fraction: "1.5"; no sign, no exponent, no spaces) and an
 * optional unit, one of ms, s, m, h; a bare number counts seconds.
 * Returns 0 and sets *ret_s, or -EINVAL (not a duration, an unknown unit)
 * or -ERANGE (not within [min_s, max_s]); *ret_s is untouched on error. */
int nt_duration_parse(const char *s, double min_s, double max_s, double *ret_s);

/* Write sec (>= 0) into buf as people write a duration, in the largest unit
 * that shows it whole: "250ms", "1.5s", "5m", "2h"; nt_duration_parse
 * reads it back as sec (to %g's 6 digits).  Always NUL-terminated. */
void nt_duration_format(double sec, char *buf, size_t size);

/* Write into buf what a duration option within [min_s, max_s] expects, for
 * a message after "expected ": "a duration from 200ms to 1h (e.g. 250ms,
 * 30s, 5m; a bare number counts seconds)".  Every example is taken by
 * nt_duration_parse within that range (at most one per unit, at most three;
 * the bounds themselves when no round value fits).  Always NUL-terminated. */
void nt_duration_expected(double min_s, double max_s, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
