/* SPDX-License-Identifier: MIT */
/* test_abfigure.c — the figure of an A/B trial: step reports merged over
 * ranks (the slowest rank makes a step, its phases are the step's, the
 * skew and the lagging rank), the steps skipped, the figure with and
 * without samples; --metric: the regex's one group, the median of the
 * matching lines, bad values counted and left out, and the direction. */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ab/abfigure.h"
#include "test_util.h"

static void merge(const char *text, long long skip, struct abfigure_steps *m)
{
	struct nt_err err = { 0 };
	struct steps s;

	assert_int_equal(steps_parse(text, strlen(text), "t", &s, &err), 0);
	assert_int_equal(abfigure_steps_merge(&s, skip, m, &err), 0);
	steps_release(&s);
}

/* Two ranks, lines out of order; rank 1 is the slower in two steps of
 * three; step 0 is skipped (a job's first step) */
static void test_merge_ranks(void **state)
{
	const char *text =
		"{\"step\": 1, \"t\": 0.100, \"samples\": 64, \"rank\": 1, \"phases\": {\"data\": 0.01, \"backward\": 0.06}}\n"
		"{\"step\": 0, \"t\": 9.0, \"samples\": 64, \"rank\": 0}\n"
		"{\"step\": 1, \"t\": 0.080, \"samples\": 64, \"rank\": 0, \"phases\": {\"data\": 0.02, \"backward\": 0.04}}\n"
		"{\"step\": 2, \"t\": 0.090, \"samples\": 64, \"rank\": 0, \"phases\": {\"data\": 0.01}}\n"
		"{\"step\": 2, \"t\": 0.120, \"samples\": 64, \"rank\": 1, \"phases\": {\"data\": 0.03, \"optimizer\": 0.01}}\n"
		"{\"step\": 3, \"t\": 0.110, \"samples\": 64, \"rank\": 0}\n"
		"{\"step\": 3, \"t\": 0.100, \"samples\": 64, \"rank\": 1}\n"
		"not json\n";
	struct abfigure_steps m;

	(void)state;
	merge(text, 1, &m);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.ranks, 2);
	assert_true(fabs(m.ms[0] - 100) < 1e-9 && fabs(m.ms[1] - 120) < 1e-9 && fabs(m.ms[2] - 110) < 1e-9);
	assert_true(fabs(m.samples - 128) < 1e-9);
	/* the phases of the slowest rank, by name in order of first sight */
	assert_int_equal(m.n_phases, 3);
	assert_string_equal(m.phase[0], "data");
	assert_string_equal(m.phase[1], "backward");
	assert_string_equal(m.phase[2], "optimizer");
	assert_true(fabs(m.phase_ms[1][0] - 60) < 1e-9 && fabs(m.phase_ms[0][1] - 30) < 1e-9);
	assert_true(m.phase_ms[1][2] == 0);      /* not said in step 3 */
	/* skew: 100/80, 120/90, 110/100; median 1.25; rank 1 slowest in 2 of 3 */
	assert_true(fabs(m.skew - 1.25) < 1e-9);
	assert_int_equal(m.slowest, 1);
	assert_true(fabs(m.slowest_share - 2.0 / 3) < 1e-9);
	assert_int_equal(m.bad_lines, 1);
	/* samples/s over the steps: 3 x 128 in 0.33 s */
	assert_true(fabs(abfigure_steps_figure(&m) - 3 * 128 / 0.330) < 1e-6);
	abfigure_steps_release(&m);
	/* nothing skipped: step 0's 9 s is a step too */
	merge(text, 0, &m);
	assert_int_equal(m.n, 4);
	assert_true(fabs(abfigure_steps_figure(&m) - 4 * 128 / 9.330) < 1e-6);
	abfigure_steps_release(&m);
}

/* One rank, no samples: steps/s; no skew; an empty report: figure 0 */
static void test_merge_plain(void **state)
{
	struct abfigure_steps m;

	(void)state;
	merge("{\"step\":5,\"t\":0.5}\n{\"step\":6,\"t\":0.25}\n{\"step\":7,\"t\":1}", 0, &m);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.ranks, 1);
	assert_true(m.skew == 0 && m.slowest == 0 && m.samples == 0);
	assert_true(fabs(abfigure_steps_figure(&m) - 3 / 1.75) < 1e-9);
	abfigure_steps_release(&m);
	merge("", 0, &m);
	assert_int_equal(m.n, 0);
	assert_true(abfigure_steps_figure(&m) == 0);
	abfigure_steps_release(&m);
	merge("{\"step\":0,\"t\":0.5}\n", 1, &m);     /* all skipped */
	assert_int_equal(m.n, 0);
	abfigure_steps_release(&m);
}

static void test_metric_compile(void **state)
{
	struct nt_err err = { 0 };
	regex_t re;

	(void)state;
	assert_int_equal(abfigure_metric_compile("it/s=([0-9.]+)", &re, &err), 0);
	regfree(&re);
	assert_int_equal(abfigure_metric_compile("it/s=[0-9.]+", &re, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "0 capture groups; exactly one"));
	assert_int_equal(abfigure_metric_compile("(a)(b)", &re, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "2 capture groups"));
	assert_int_equal(abfigure_metric_compile("(unclosed", &re, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "--metric '(unclosed': "));
}

static void test_metric_scan(void **state)
{
	const char *out = "epoch 1\n"
			  "throughput: 1000 samples/s\n"
			  "throughput: 1200 samples/s\n"
			  "throughput: abc samples/s\n"
			  "throughput: -5 samples/s\n"
			  "throughput: 1100 samples/s";        /* the last line, no newline */
	struct nt_err err = { 0 };
	double v;
	int n, bad;
	regex_t re;
	char *big;

	(void)state;
	assert_int_equal(abfigure_metric_compile("throughput: ([^ ]+) samples/s", &re, &err), 0);
	abfigure_metric_scan(&re, out, strlen(out), &v, &n, &bad);
	assert_int_equal(n, 3);
	assert_int_equal(bad, 2);
	assert_true(fabs(v - 1100) < 1e-9);
	abfigure_metric_scan(&re, "nothing\n", 8, &v, &n, &bad);
	assert_true(n == 0 && v == 0 && bad == 0);
	/* a line past 64 KiB is skipped, the next one taken */
	big = malloc(70000 + 64);
	memset(big, 'x', 70000);
	strcpy(big + 70000, " throughput: 7 samples/s\nthroughput: 9 samples/s\n");
	abfigure_metric_scan(&re, big, strlen(big), &v, &n, &bad);
	assert_true(n == 1 && fabs(v - 9) < 1e-9);
	free(big);
	regfree(&re);
	assert_true(fabs(abfigure_metric_figure(4, ABFIGURE_TIME) - 0.25) < 1e-12);
	assert_true(abfigure_metric_figure(4, ABFIGURE_THROUGHPUT) == 4);
	assert_string_equal(abfigure_source_name(ABFIGURE_STEPS), "step reports");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_ranks),
		cmocka_unit_test(test_merge_plain),
		cmocka_unit_test(test_metric_compile),
		cmocka_unit_test(test_metric_scan),
	};

	return cmocka_run_group_tests_name("abfigure", tests, NULL, NULL);
}
