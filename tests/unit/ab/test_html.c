/* SPDX-License-Identifier: MIT */
/* test_html.c — the A/B HTML report: self-contained, every stall marked,
 * every trial drawn, arm text escaped, written atomically. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ab/ab.h"
#include "ab/html.h"
#include "ab/html_test.h"
#include "test_util.h"

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A: 100 steps near 10 ms with 2 stalls; B: 80 near 11 ms with 1 stall */
static void fill(struct ab_config *cfg, struct ab_result *res)
{
	memset(cfg, 0, sizeof(*cfg));
	memset(res, 0, sizeof(*res));
	snprintf(cfg->arm[0].name, 2, "A");
	snprintf(cfg->arm[1].name, 2, "B");
	cfg->arm[0].policy = "policies/baseline.conf";
	cfg->arm[1].argv[0] = "./train";
	cfg->arm[1].argv[1] = "--tag=<b>&'\"";
	cfg->threshold = 0.02;
	cfg->alpha = 0.05;
	res->verdict = VERDICT_REGRESSION;
	res->ratio = 0.91;
	res->ci_lo = 0.88;
	res->ci_hi = 0.94;
	res->p = 0.001;
	res->alpha_used = 0.05;
	res->n_series[0] = 100;
	res->n_series[1] = 80;
	for (int a = 0; a < 2; a++) {
		res->series[a] = calloc((size_t)res->n_series[a], sizeof(double));
		for (int i = 0; i < res->n_series[a]; i++)
			res->series[a][i] = (a ? 11 : 10) + (i % 7) * 0.1;
		res->step_p50[a] = a ? 11.3 : 10.3;
		res->stall_limit[a] = 3 * res->step_p50[a];
		res->trials[a] = a ? 4 : 5;
		res->metric[a] = calloc((size_t)res->trials[a], sizeof(double));
		for (int i = 0; i < res->trials[a]; i++)
			res->metric[a][i] = (a ? 45000 : 50000) + 300.0 * i;
	}
	res->series[0][10] = 40;
	res->series[0][60] = 400;           /* far above the chart: drawn on its edge */
	res->series[1][33] = 50;
	res->stalls[0] = 2;
	res->stalls[1] = 1;
	res->rank_skew[0] = 1.02;
	res->rank_skew[1] = 1.61;
	res->slowest_rank[1] = 3;
	res->slowest_share[1] = 0.75;
	res->n_expl = 1;
	res->expl[0] = (struct ab_explanation){ .counter = "tlb_shootdowns", .mechanism = "munmap/madvise churn",
						.unit = "per step", .a = 0.1, .b = 9.5, .noise = 0.2, .p = 0.001,
						.claimed = true };
	res->source = ABFIGURE_STEPS;
	snprintf(res->figure, sizeof(res->figure), "samples/s over the reported steps");
	res->per_step = true;
	res->blocks = 4;
	res->evidence = strdup("pid 4242 (stress, SCHED_FIFO 50) ran 9.8% of CPU 1 during B trials, 0% during A <x>\n");
	res->job_table = strdup("arm  pid      comm\nB    4310     <helper>\n");
}

static char *render(const struct ab_config *cfg, const struct ab_result *res)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(html_ab_page(f, cfg, res), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void release(struct ab_result *res)
{
	for (int a = 0; a < 2; a++) {
		free(res->series[a]);
		free(res->metric[a]);
	}
	free(res->evidence);
	free(res->job_table);
}

/* a level sequential looks made tiny is printed as it is, never "100.0%" */
static void test_page_sequential_level(void **state)
{
	struct ab_config cfg;
	struct ab_result res;
	char *html;

	(void)state;
	fill(&cfg, &res);
	res.alpha_used = 6.9e-06;
	res.looks = 4;
	html = render(&cfg, &res);
	assert_non_null(strstr(html, "<tr><th>99.99931% CI (sequential: 4 looks, the last at level 6.9e-06) (t over "));
	assert_null(strstr(html, "100.0%"));
	free(html);
	release(&res);
}

static void test_page(void **state)
{
	struct ab_config cfg;
	struct ab_result res;
	char *html, *poly;

	(void)state;
	fill(&cfg, &res);
	html = render(&cfg, &res);
	assert_true(!strncmp(html, "<!DOCTYPE html>\n", 16));
	assert_non_null(strstr(html, "</html>\n"));
	assert_non_null(strstr(html, "<title>nodetune ab: regression</title>"));
	assert_non_null(strstr(html, "class=\"verdict regression\""));
	/* the three charts; every stall marked once; every trial drawn */
	assert_non_null(strstr(html, "<svg id=\"series\""));
	assert_non_null(strstr(html, "<svg id=\"distributions\""));
	assert_non_null(strstr(html, "<svg id=\"trials\""));
	assert_int_equal(count(html, "<circle class=\"stall\""), 3);
	assert_int_equal(count(html, "<circle class=\"trial-a\""), 5);
	assert_int_equal(count(html, "<circle class=\"trial-b\""), 4);
	assert_non_null(strstr(html, "stall in A, step 60: 400.00 ms"));
	/* the interval's level as it is: alpha 0.05 at one look */
	assert_non_null(strstr(html, "<tr><th>95% CI (t over "));
	/* one point per step in each line */
	poly = strstr(html, "<polyline class=\"arm-a\"");
	assert_non_null(poly);
	*strstr(poly, "\"/>") = '\0';
	assert_int_equal(count(poly, ","), 100);
	*(poly + strlen(poly)) = '"';
	/* self-contained: nothing to fetch, nothing to run */
	assert_null(strstr(html, "http"));
	assert_null(strstr(html, "<script"));
	assert_null(strstr(html, "src="));
	assert_null(strstr(html, "url("));
	assert_null(strstr(html, "@import"));
	/* the arms as given, escaped */
	assert_non_null(strstr(html, "<code>policies/baseline.conf</code>"));
	assert_non_null(strstr(html, "./train --tag=&lt;b&gt;&amp;&#39;&quot;</code>"));
	assert_non_null(strstr(html, "<td>tlb_shootdowns</td>"));
	assert_non_null(strstr(html, "A 1.020, B 1.610; slowest in B: rank 3 (75% of trials)"));
	/* the culprits and throttling the watches found, escaped */
	assert_non_null(strstr(html, "<pre id=\"evidence\">pid 4242 (stress, SCHED_FIFO 50) ran 9.8% of CPU 1 "
				     "during B trials, 0% during A &lt;x&gt;\n</pre>"));
	assert_null(strstr(html, "not countable"));
	/* the job's processes, escaped, after the evidence */
	assert_non_null(strstr(html, "<pre id=\"job-table\">arm  pid      comm\nB    4310     &lt;helper&gt;\n</pre>"));
	assert_true(strstr(html, "id=\"job-table\"") > strstr(html, "id=\"evidence\""));
	free(html);
	/* a counter this host cannot produce: said so, with the reason */
	snprintf(res.not_countable[AB_C_CPU_PRESSURE_MS], sizeof(res.not_countable[0]), "no /proc/pressure <psi=0>");
	html = render(&cfg, &res);
	assert_non_null(strstr(html, "<tr class=\"nc\"><td>cpu_pressure_ms</td><td colspan=\"5\">not countable on "
				     "this host: no /proc/pressure &lt;psi=0&gt;</td></tr>"));
	free(html);
	release(&res);
}

static void test_foreign_and_error(void **state)
{
	struct ab_config cfg;
	struct ab_result res;
	char *html;

	(void)state;
	fill(&cfg, &res);
	/* a foreign command: no per-step data, the trials chart only */
	free(res.series[0]);
	free(res.series[1]);
	res.series[0] = res.series[1] = NULL;
	res.n_series[0] = res.n_series[1] = 0;
	res.source = ABFIGURE_WALL;
	snprintf(res.figure, sizeof(res.figure), "1 / wall time of a trial");
	html = render(&cfg, &res);
	assert_null(strstr(html, "<svg id=\"series\""));
	assert_null(strstr(html, "<svg id=\"distributions\""));
	assert_non_null(strstr(html, "<svg id=\"trials\""));
	assert_non_null(strstr(html, "1 / wall time"));
	free(html);
	/* an arm that failed: the error, escaped, and nothing else */
	res.error = true;
	snprintf(res.error_msg, sizeof(res.error_msg), "arm B (trial-001-B) failed (exit 2): x <y>");
	html = render(&cfg, &res);
	assert_non_null(strstr(html, "<title>nodetune ab: error</title>"));
	assert_non_null(strstr(html, "failed (exit 2): x &lt;y&gt;</pre>"));
	assert_null(strstr(html, "<svg"));
	free(html);
	release(&res);
}

static void test_write_atomic(void **state)
{
	struct ab_config cfg;
	struct ab_result res;
	struct nt_err err = { 0 };
	char dir[] = "/tmp/nodetune-test-report-XXXXXX", path[256], tmp[300];
	struct stat st;

	(void)state;
	fill(&cfg, &res);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.html", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	assert_int_equal(html_ab_write(path, &cfg, &res, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size > 2000);
	assert_int_not_equal(stat(tmp, &st), 0);
	unlink(path);
	/* a directory that is not there: an error naming the file */
	snprintf(path, sizeof(path), "%s/no/r.html", dir);
	assert_int_equal(html_ab_write(path, &cfg, &res, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/no/r.html.tmp"));
	rmdir(dir);
	release(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page),
		cmocka_unit_test(test_page_sequential_level),
		cmocka_unit_test(test_foreign_and_error),
		cmocka_unit_test(test_write_atomic),
	};

	return cmocka_run_group_tests_name("html", tests, NULL, NULL);
}
