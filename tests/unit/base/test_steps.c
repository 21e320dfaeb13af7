/* SPDX-License-Identifier: MIT */
/* test_steps.c — step reports: the protocol's required and optional keys,
 * every refusal with its reason, a whole report with bad lines counted (not
 * fatal) and a torn last line, the bounds, and reading a file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/steps.h"
#include "base/steps_test.h"
#include "test_util.h"

static int line(const char *s, struct step_report *r, struct nt_err *err)
{
	return steps_parse_line(s, strlen(s), r, err);
}

static void test_line(void **state)
{
	struct step_report r;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(line("{\"step\": 7, \"t\": 0.25}", &r, &err), 0);
	assert_int_equal(r.step, 7);
	assert_true(r.t == 0.25);
	assert_int_equal(r.rank, 0);
	assert_true(r.samples == 0);
	assert_int_equal(r.n_phases, 0);
	assert_int_equal(line("{\"step\": 1, \"t\": 1, \"samples\": 512, \"rank\": 3, \"extra\": [1], "
			      "\"phases\": {\"data\": 0.1, \"forward\": 0.2, \"backward_2\": 0}}", &r, &err), 0);
	assert_int_equal(r.rank, 3);
	assert_true(r.samples == 512);
	assert_int_equal(r.n_phases, 3);
	assert_string_equal(r.phase[1], "forward");
	assert_true(r.phase_s[1] == 0.2);
}

static void test_refusals(void **state)
{
	static const struct { const char *in, *why; } cases[] = {
		{ "{\"t\": 1}", "'step' must be a whole number" },
		{ "{\"step\": -1, \"t\": 1}", "'step' must be" },
		{ "{\"step\": 1.5, \"t\": 1}", "'step' must be" },
		{ "{\"step\": 1}", "'t' must be a number of seconds" },
		{ "{\"step\": 1, \"t\": -0.1}", "'t' must be" },
		{ "{\"step\": 1, \"t\": \"1\"}", "'t' must be" },
		{ "{\"step\": 1, \"t\": 2e6}", "'t' must be" },
		{ "{\"step\": 1, \"t\": 1, \"rank\": 70000}", "'rank' must be" },
		{ "{\"step\": 1, \"t\": 1, \"rank\": -2}", "'rank' must be" },
		{ "{\"step\": 1, \"t\": 1, \"samples\": -5}", "'samples' must be" },
		{ "{\"step\": 1, \"t\": 1, \"phases\": [1]}", "'phases' must be an object" },
		{ "{\"step\": 1, \"t\": 1, \"phases\": {\"Data\": 1}}", "a phase name" },
		{ "{\"step\": 1, \"t\": 1, \"phases\": {\"data\": -1}}", "phase 'data' must be" },
		{ "{\"step\": 1, \"step\": 2, \"t\": 1}", "not JSON" },
		{ "[1, 2]", "not a JSON object" },
		{ "step 1", "not JSON" },
	};
	struct step_report r = { .step = 99 };
	struct nt_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(line(cases[i].in, &r, &err), -EINVAL);
		if (!strstr(err.msg, cases[i].why))
			fail_msg("%s: '%s' does not say '%s'", cases[i].in, err.msg, cases[i].why);
		assert_int_equal(r.step, 99);                     /* untouched */
	}
	assert_int_equal(steps_parse_line("{\"step\":1,\"t\":1}\0", 18, &r, &err), -EINVAL);
	{
		char big[STEPS_LINE_MAX + 2];

		memset(big, ' ', sizeof(big));
		assert_int_equal(steps_parse_line(big, sizeof(big), &r, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "at most"));
	}
}

static void test_report(void **state)
{
	const char *text = "{\"step\": 0, \"t\": 0.1, \"rank\": 0}\n"
			   "\n"
			   "{\"step\": 0, \"t\": 0.2, \"rank\": 1}\n"
			   "garbage\n"
			   "{\"step\": 1, \"t\": 0.3, \"rank\": 1}\n"
			   "{\"step\": 2, \"t\": 0.4, \"rank\": 0}";    /* no newline: still taken */
	struct steps s;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(steps_parse(text, strlen(text), "job.steps", &s, &err), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.max_rank, 1);
	assert_int_equal(s.bad_lines, 1);
	assert_string_equal(s.first_bad, "job.steps:4: not JSON: '[' or '{' expected near 'garbage'");
	assert_true(s.r[3].t == 0.4);
	steps_release(&s);
	assert_int_equal(steps_parse("", 0, "empty", &s, &err), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.max_rank, -1);
	steps_release(&s);
}

static void test_read(void **state)
{
	char dir[64], path[128];
	struct steps s;
	struct nt_err err = { 0 };

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	test_write(dir, "steps", "{\"step\": 0, \"t\": 0.5}\n{\"step\": 1, \"t\": 0.25}\n");
	snprintf(path, sizeof(path), "%s/steps", dir);
	assert_int_equal(steps_read(path, 1 << 20, &s, &err), 0);
	assert_int_equal(s.n, 2);
	steps_release(&s);
	assert_int_equal(steps_read(path, 10, &s, &err), 0);       /* bounded: a torn first line */
	assert_int_equal(s.n, 0);
	assert_int_equal(s.bad_lines, 1);
	steps_release(&s);
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(steps_read(path, 1 << 20, &s, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/none: no such file"));
	test_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_read),
	};

	return cmocka_run_group_tests_name("steps", tests, NULL, NULL);
}
