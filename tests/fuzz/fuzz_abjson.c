/* fuzz_abjson.c — libFuzzer target: the harness's JSON summary as `ab`
 * reads it back (ab_parse_harness_json), over arbitrary bytes.  What it
 * accepts must hold what ab relies on: a throughput > 0, at least one
 * measured step, and finite, non-negative step and phase times. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ab_harness_run run;
	struct nt_err err = { 0 };

	if (ab_parse_harness_json((const char *)data, size, &run, &err) < 0)
		return 0;
	if (!(isfinite(run.metric) && run.metric > 0) || run.n_steps <= 0 || run.slowest < 0 ||
	    !(isfinite(run.skew) && run.skew >= 0))
		__builtin_trap();
	for (int s = 0; s < run.n_steps; s++) {
		if (!(isfinite(run.steps[s]) && run.steps[s] >= 0))
			__builtin_trap();
		for (int p = 0; p < 5; p++)
			if (!(isfinite(run.phase[p][s]) && run.phase[p][s] >= 0))
				__builtin_trap();
	}
	ab_harness_run_release(&run);
	return 0;
}
