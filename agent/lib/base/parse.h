/* SPDX-License-Identifier: MIT */
/* parse.h — checked number parsing (never atoi). */
#ifndef NODETUNE_PARSE_H
#define NODETUNE_PARSE_H

#include <stdint.h>

#include "nt_duration.h"   /* durations: nt_duration_parse, shared with the harness */

/* Parse all of s as a decimal unsigned integer <= max (no sign, no spaces,
 * no trailing garbage).  Returns 0 and sets *ret, or -EINVAL (not a number)
 * or -ERANGE (above max); *ret is untouched on error. */
int parse_u64(const char *s, uint64_t max, uint64_t *ret);

/* Same for a signed int in [min, max]. */
int parse_int(const char *s, int min, int max, int *ret);

/* Parse all of s as a finite decimal number in [min, max]: a sign, a digit
 * or '.' first (no leading space, no inf or nan), nothing after it.
 * Returns 0 and sets *ret, -EINVAL (not such a number) or -ERANGE (beyond
 * double's range, or outside [min, max]); *ret is untouched on error. */
int parse_double(const char *s, double min, double max, double *ret);

#endif
