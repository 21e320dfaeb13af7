/* SPDX-License-Identifier: MIT */
/* fuzz_abmetric.c — libFuzzer target: `ab --metric REGEX` over a job's
 * output (untrusted: the job wrote it).  The first input byte picks one of
 * a few regexes users write; the rest is the output.  A value taken is a
 * finite number > 0, and the count never exceeds the lines. */
#include <math.h>
#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ab/abfigure.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const regexes[] = {
		"throughput: ([0-9.e+-]+) samples/s",
		"step [0-9]+ took ([^ ]+) ms",
		"^([0-9]+)$",
		"loss=[^ ]* it/s=(.*)",
	};
	/* compiled once: the regex is the user's, the output is what is fuzzed */
	static regex_t re[4];
	static int compiled;
	struct nt_err err = { 0 };
	size_t lines = 1;
	double v;
	int n, bad;

	if (!compiled) {
		for (int i = 0; i < 4; i++)
			if (abfigure_metric_compile(regexes[i], &re[i], &err) < 0)
				__builtin_trap();
		compiled = 1;
	}
	if (!size)
		return 0;
	abfigure_metric_scan(&re[data[0] % 4], (const char *)data + 1, size - 1, &v, &n, &bad);
	for (size_t i = 1; i < size; i++)
		lines += data[i] == '\n';
	if (n < 0 || bad < 0 || (size_t)(n + bad) > lines || (n && (!isfinite(v) || !(v > 0))) || (!n && v != 0))
		__builtin_trap();
	return 0;
}
