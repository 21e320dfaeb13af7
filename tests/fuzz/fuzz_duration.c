/* SPDX-License-Identifier: MIT */
/* fuzz_duration.c — libFuzzer target: nt_duration_parse, the parser of every
 * duration option and file key (--interval 100ms, --budget 5m).  What it
 * takes must be finite and within the range asked, and mean the same as
 * what it says: the digits read once more, times the unit named (a bare
 * number: seconds). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[64], *end;
	double v = -1, want;
	size_t n;

	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (nt_duration_parse(s, 0.001, 86400, &v) < 0) {
		if (v != -1)
			__builtin_trap();     /* untouched on error */
		return 0;
	}
	if (!isfinite(v) || v < 0.001 || v > 86400 || !(s[0] >= '0' && s[0] <= '9'))
		__builtin_trap();
	want = strtod(s, &end);
	n = strlen(end);
	if (n && strcmp(end, "ms") && strcmp(end, "s") && strcmp(end, "m") && strcmp(end, "h"))
		__builtin_trap();
	want *= !n ? 1 : !strcmp(end, "ms") ? 1e-3 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : 3600;
	if (fabs(want - v) > 1e-9 * want)
		__builtin_trap();
	return 0;
}
