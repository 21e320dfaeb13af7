/* SPDX-License-Identifier: MIT */
/* parse.h — checked number parsing (never atoi). */
#ifndef NODETUNE_PARSE_H
#define NODETUNE_PARSE_H

#include <stdint.h>

/* Parse all of s as a decimal unsigned integer <= max (no sign, no spaces,
 * no trailing garbage).  Returns 0 and sets *ret, or -EINVAL (not a number)
 * or -ERANGE (above max); *ret is untouched on error. */
int parse_u64(const char *s, uint64_t max, uint64_t *ret);

/* Same for a signed int in [min, max]. */
int parse_int(const char *s, int min, int max, int *ret);

/* Parse all of s as a duration in seconds: a decimal number (digits, an
 * optional fraction: "1.5"; no sign, no exponent, no spaces) and an
 * optional unit, one of ms, s, m, h.  A bare number counts bare_unit_s
 * seconds (0.001 for an option counted in milliseconds, 1 for seconds).
 * Returns 0 and sets *ret_s, or -EINVAL (not a duration, an unknown unit)
 * or -ERANGE (not within [min_s, max_s]); *ret_s is untouched on error. */
int parse_duration(const char *s, double bare_unit_s, double min_s, double max_s, double *ret_s);

#endif
