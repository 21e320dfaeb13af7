/* SPDX-License-Identifier: MIT */
/* fuzz_steps.c — libFuzzer target: step reports, the lines any job writes
 * to NODETUNE_STEP_FILE, through steps_parse (which runs steps_parse_line on
 * each line).  What is taken must hold what the A/B engine relies on: a
 * step >= 0, finite times >= 0, a rank in range, named phases; and then
 * the merge over ranks (abfigure.c) and its figure: finite, >= 0, the
 * slowest rank one that reported. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ab/abfigure.h"
#include "base/steps.h"
#include "base/steps_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nt_err err = { 0 };
	struct steps s;

	if (steps_parse((const char *)data, size, "fuzz", &s, &err) < 0)
		return 0;
	if (s.bad_lines && (!s.first_bad[0] || strchr(s.first_bad, '\n')))
		__builtin_trap();
	for (size_t i = 0; i < s.n; i++) {
		const struct step_report *r = &s.r[i];

		if (r->step < 0 || !isfinite(r->t) || r->t < 0 || r->rank < 0 || r->rank > STEPS_RANK_MAX ||
		    r->rank > s.max_rank || r->n_phases > STEPS_PHASES_MAX)
			__builtin_trap();
		for (unsigned k = 0; k < r->n_phases; k++)
			if (!r->phase[k][0] || !isfinite(r->phase_s[k]) || r->phase_s[k] < 0)
				__builtin_trap();
	}
	{
		struct abfigure_steps m;
		double fig;

		if (abfigure_steps_merge(&s, (long long)(size % 3), &m, &err) == 0) {
			fig = abfigure_steps_figure(&m);
			if (!isfinite(fig) || fig < 0 || m.n < 0 || (size_t)m.n > s.n || m.slowest < 0 ||
			    (m.n && m.slowest > s.max_rank) || m.n_phases > STEPS_PHASES_MAX)
				__builtin_trap();
			for (int i = 0; i < m.n; i++)
				if (!isfinite(m.ms[i]) || m.ms[i] < 0)
					__builtin_trap();
			abfigure_steps_release(&m);
		}
	}
	steps_release(&s);
	return 0;
}
