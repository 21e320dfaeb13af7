/* SPDX-License-Identifier: MIT */
/* html.c — the A/B experiment as one self-contained HTML page.
 *
 * Everything is inline: CSS in a <style>, the charts as inline SVG drawn
 * here, no script, no font, no link to anything, so the page opens the same
 * on an air-gapped host and in a mail attachment.  Three charts: per-step
 * time over the experiment for A and B with the stalls marked, the two
 * distributions of step times, and each trial's metric per arm.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ab/ab.h"
#include "ab/abreport.h"
#include "ab/html.h"
#include "ab/html_test.h"

#define W 900.0                 /* chart width, px */
#define ML 64.0                 /* left margin (axis labels) */
#define MR 16.0
#define MT 14.0
#define MB 40.0

static const char *const colour[2] = { "#1f77b4", "#e8710a" };

/* Write s with HTML's five special characters escaped. */
static void html_escape(FILE *f, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
}

static void arm_text(FILE *f, const struct ab_arm *arm)
{
	if (arm->policy) {
		fputs("policy <code>", f);
		html_escape(f, arm->policy);
		fputs("</code>", f);
	}
	if (arm->argv[0]) {
		fputs(arm->policy ? ", command <code>" : "command <code>", f);
		for (int i = 0; arm->argv[i]; i++) {
			if (i)
				fputc(' ', f);
			html_escape(f, arm->argv[i]);
		}
		fputs("</code>", f);
	} else {
		fputs(arm->policy ? ", " : "", f);
		fputs("the harness (dlrm-small, world 2 under mpirun)", f);
	}
}

/* a round step for about n ticks over [0, hi] */
static double tick_step(double hi, int n)
{
	double raw = hi / n, mag = pow(10, floor(log10(raw))), m = raw / mag;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * mag;
}

static void y_axis(FILE *f, double lo, double hi, double h, const char *label)
{
	double step = tick_step(hi - lo, 5);

	for (double v = ceil(lo / step) * step; v <= hi + 1e-9; v += step) {
		double y = MT + (h - MT - MB) * (1 - (v - lo) / (hi - lo));

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%g</text>\n",
			ML, y, W - MR, y, ML - 6, y + 4, v);
	}
	fprintf(f, "<text x=\"14\" y=\"%.1f\" class=\"label\" transform=\"rotate(-90 14 %.1f)\" "
		   "text-anchor=\"middle\">%s</text>\n", (h - MB + MT) / 2, (h - MB + MT) / 2, label);
}

static void x_axis(FILE *f, double lo, double hi, double h, const char *label)
{
	double step = tick_step(hi - lo, 8);

	for (double v = ceil(lo / step) * step; v <= hi + 1e-9; v += step) {
		double x = ML + (W - ML - MR) * (v - lo) / (hi - lo);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">%g</text>\n",
			x, h - MB, x, h - MB + 4, x, h - MB + 17, v);
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>\n", ML, h - MB, W - MR,
		h - MB);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"label\" text-anchor=\"middle\">%s</text>\n",
		(ML + W - MR) / 2, h - 6, label);
}

static void legend(FILE *f, double x, double y, const char *extra)
{
	for (int a = 0; a < 2; a++)
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%s</text>\n",
			x + a * 60, y, colour[a], x + a * 60 + 16, y + 10, a ? "B" : "A");
	if (extra)
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" class=\"stall-key\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%s</text>\n", x + 126, y + 6, x + 134, y + 10, extra);
}

/* Per-step time over the experiment.  The y range stops at 4 x the larger
 * median so that one huge stall does not flatten the rest; points above are
 * drawn on the top edge, and every stall's marker carries its value. */
static void chart_series(FILE *f, const struct ab_result *res)
{
	const double h = 320;
	double ymax = 0, top = 4 * fmax(res->step_p50[0], res->step_p50[1]);
	int n = res->n_series[0] > res->n_series[1] ? res->n_series[0] : res->n_series[1];

	for (int a = 0; a < 2; a++)
		for (int i = 0; i < res->n_series[a]; i++)
			ymax = fmax(ymax, res->series[a][i]);
	ymax = fmin(ymax, top) * 1.08;
	if (ymax <= 0 || n < 2)
		return;
	fprintf(f, "<svg id=\"series\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		   "aria-label=\"per-step time over the experiment\">\n", W, h, W, h);
	y_axis(f, 0, ymax, h, "step time (ms)");
	x_axis(f, 0, n - 1, h, "measured step, trials of each arm in the order they ran");
	for (int a = 0; a < 2; a++) {
		/* the stall threshold of this arm */
		double y = MT + (h - MT - MB) * (1 - fmin(res->stall_limit[a], ymax) / ymax);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" class=\"limit\">"
			   "<title>stall threshold %s: %.2f ms</title></line>\n", ML, y, W - MR, y, colour[a],
			a ? "B" : "A", res->stall_limit[a]);
		fprintf(f, "<polyline class=\"arm-%c\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" points=\"",
			a ? 'b' : 'a', colour[a]);
		for (int i = 0; i < res->n_series[a]; i++)
			fprintf(f, "%.1f,%.1f ", ML + (W - ML - MR) * i / (n - 1),
				MT + (h - MT - MB) * (1 - fmin(res->series[a][i], ymax) / ymax));
		fputs("\"/>\n", f);
	}
	for (int a = 0; a < 2; a++)
		for (int i = 0; i < res->n_series[a]; i++)
			if (res->series[a][i] > res->stall_limit[a])
				fprintf(f, "<circle class=\"stall\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" stroke=\"%s\">"
					   "<title>stall in %s, step %d: %.2f ms (threshold %.2f ms)</title></circle>\n",
					ML + (W - ML - MR) * i / (n - 1),
					MT + (h - MT - MB) * (1 - fmin(res->series[a][i], ymax) / ymax), colour[a],
					a ? "B" : "A", i, res->series[a][i], res->stall_limit[a]);
	legend(f, W - MR - 260, MT, "stall");
	fputs("</svg>\n", f);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* The two distributions of per-step time: histograms as a share of each
 * arm's steps (the arms may have different counts), 1st to 99th percentile
 * of both together, the tails folded into the end bins. */
static void chart_hist(FILE *f, const struct ab_result *res)
{
	enum { BINS = 48 };
	const double h = 260;
	size_t n = (size_t)res->n_series[0] + (size_t)res->n_series[1];
	double *all = malloc((n + 1) * sizeof(double)), lo, hi, share[2][BINS] = { { 0 } }, smax = 0;

	if (!all || n < 4) {
		free(all);
		return;
	}
	memcpy(all, res->series[0], (size_t)res->n_series[0] * sizeof(double));
	memcpy(all + res->n_series[0], res->series[1], (size_t)res->n_series[1] * sizeof(double));
	qsort(all, n, sizeof(double), cmp_double);
	lo = all[n / 100];
	hi = all[n - 1 - n / 100];
	free(all);
	if (hi <= lo)
		hi = lo + 1;
	for (int a = 0; a < 2; a++) {
		for (int i = 0; i < res->n_series[a]; i++) {
			int b = (int)((res->series[a][i] - lo) / (hi - lo) * BINS);

			share[a][b < 0 ? 0 : b >= BINS ? BINS - 1 : b] += 1.0 / res->n_series[a];
		}
		for (int b = 0; b < BINS; b++)
			smax = fmax(smax, share[a][b]);
	}
	smax *= 1.1;
	fprintf(f, "<svg id=\"distributions\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		   "aria-label=\"distributions of step time\">\n", W, h, W, h);
	y_axis(f, 0, smax * 100, h, "% of the arm's steps");
	x_axis(f, lo, hi, h, "step time (ms)");
	for (int a = 0; a < 2; a++) {
		fprintf(f, "<path class=\"hist-%c\" fill=\"%s\" fill-opacity=\"0.3\" stroke=\"%s\" d=\"M%.1f,%.1f",
			a ? 'b' : 'a', colour[a], colour[a], ML, h - MB);
		for (int b = 0; b < BINS; b++) {
			double y = MT + (h - MT - MB) * (1 - share[a][b] / smax);

			fprintf(f, " L%.1f,%.1f L%.1f,%.1f", ML + (W - ML - MR) * b / BINS, y,
				ML + (W - ML - MR) * (b + 1) / BINS, y);
		}
		fprintf(f, " L%.1f,%.1f Z\"/>\n", W - MR, h - MB);
		/* the arm's median */
		if (res->step_p50[a] >= lo && res->step_p50[a] <= hi) {
			double x = ML + (W - ML - MR) * (res->step_p50[a] - lo) / (hi - lo);

			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" class=\"median\">"
				   "<title>median %s: %.2f ms</title></line>\n", x, MT, x, h - MB, colour[a],
				a ? "B" : "A", res->step_p50[a]);
		}
	}
	legend(f, W - MR - 130, MT, NULL);
	fputs("</svg>\n", f);
}

/* Each trial's metric, one row per arm, with the arm's median. */
static void chart_trials(FILE *f, const struct ab_result *res)
{
	const double h = 150, rows[2] = { 45, 90 };
	double lo = INFINITY, hi = -INFINITY;

	for (int a = 0; a < 2; a++)
		for (int i = 0; i < res->trials[a]; i++) {
			lo = fmin(lo, res->metric[a][i]);
			hi = fmax(hi, res->metric[a][i]);
		}
	if (!(hi > lo)) {
		lo = lo - 1;
		hi = hi + 1;
	}
	{
		double pad = (hi - lo) * 0.05;

		lo -= pad;
		hi += pad;
	}
	fprintf(f, "<svg id=\"trials\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		   "aria-label=\"metric of each trial\">\n", W, h, W, h);
	x_axis(f, lo, hi, h, res->figure);
	for (int a = 0; a < 2; a++) {
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"label\" text-anchor=\"end\">%s</text>\n", ML - 8,
			rows[a] + 5, a ? "B" : "A");
		for (int i = 0; i < res->trials[a]; i++)
			fprintf(f, "<circle class=\"trial-%c\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" fill-opacity=\"0.6\">"
				   "<title>%s trial %d: %.6g</title></circle>\n", a ? 'b' : 'a',
				ML + (W - ML - MR) * (res->metric[a][i] - lo) / (hi - lo),
				rows[a] + ((i % 5) - 2) * 3.0, colour[a], a ? "B" : "A", i + 1, res->metric[a][i]);
		if (res->trials[a]) {
			double med = stats_median(res->metric[a], (size_t)res->trials[a]);

			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\">"
				   "<title>median %s: %.6g</title></line>\n",
				ML + (W - ML - MR) * (med - lo) / (hi - lo), rows[a] - 14,
				ML + (W - ML - MR) * (med - lo) / (hi - lo), rows[a] + 14, colour[a], a ? "B" : "A", med);
		}
	}
	fputs("</svg>\n", f);
}

static const char css[] =
	"body{font:14px/1.4 sans-serif;margin:24px;color:#222;max-width:960px}"
	"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}"
	".verdict{font-size:22px;font-weight:bold;padding:6px 10px;display:inline-block;border-radius:4px}"
	".regression{background:#fdd;color:#900}.improvement{background:#dfd;color:#060}"
	".no-difference{background:#eee}.inconclusive{background:#ffe9b3}.error{background:#fdd;color:#900}"
	"table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #ddd}"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:13px;word-break:break-all}"
	"svg{display:block;margin:4px 0 12px}.grid{stroke:#e4e4e4}.axis{stroke:#888}"
	".tick{font-size:11px;fill:#444}.label{font-size:12px;fill:#222}"
	".limit{stroke-dasharray:5 4;stroke-width:1}.median{stroke-dasharray:2 3;stroke-width:1.5}"
	".stall{fill:#d00;stroke-width:1.5}.stall-key{fill:#d00}";

/* The counters, A against B, claimed ones bold; then those not countable. */
static void explanations(FILE *f, const struct ab_result *res)
{
	fprintf(f, "<h2>Explanations</h2>\n<p>Counters %s of trial, A against B, each with its own Mann-Whitney p; "
		   "claimed (bold) only beyond their noise within an arm.</p>\n<table>\n<tr><th>counter</th><th>A</th>"
		   "<th>B</th><th>noise</th><th>p</th><th>mechanism</th></tr>\n", res->per_step ? "per step" : "per second");
	for (int i = 0; i < res->n_expl; i++)
		fprintf(f, "<tr%s><td>%s</td><td class=\"n\">%.3f</td><td class=\"n\">%.3f</td><td class=\"n\">%.3g</td>"
			   "<td class=\"n\">%.3g</td><td>%s</td></tr>\n", res->expl[i].claimed ? " style=\"font-weight:bold\"" : "",
			res->expl[i].counter, res->expl[i].a, res->expl[i].b, res->expl[i].noise, res->expl[i].p,
			res->expl[i].mechanism);
	for (int c = 0; c < AB_COUNTERS; c++)
		if (res->not_countable[c][0]) {
			fprintf(f, "<tr class=\"nc\"><td>%s</td><td colspan=\"5\">not countable on this host: ",
				ab_counter_row(c)->name);
			html_escape(f, res->not_countable[c]);
			fputs("</td></tr>\n", f);
		}
	fputs("</table>\n", f);
}

int html_ab_page(FILE *f, const struct ab_config *cfg, const struct ab_result *res)
{
	const char *verdict = res->error ? "error" : stats_verdict_name(res->verdict);
	char host[256] = "?", when[64] = "?", ci[128];
	time_t now = time(NULL);
	struct tm tm;

	gethostname(host, sizeof(host) - 1);
	if (localtime_r(&now, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %z", &tm);
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		   "<title>nodetune ab: %s</title>\n<style>%s</style>\n</head>\n<body>\n", verdict, css);
	fputs("<h1>nodetune ab</h1>\n<p>", f);
	html_escape(f, host);
	fprintf(f, ", %s</p>\n<p><span class=\"verdict %s\" id=\"verdict\">%s</span></p>\n", when, verdict, verdict);
	fputs("<table>\n", f);
	for (int a = 0; a < 2; a++) {
		fprintf(f, "<tr><th style=\"color:%s\">%s</th><td>", colour[a], a ? "B" : "A");
		arm_text(f, &cfg->arm[a]);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	if (res->error) {
		fputs("<h2>Error</h2>\n<pre>", f);
		html_escape(f, res->error_msg);
		fputs("</pre>\n</body>\n</html>\n", f);
		return ferror(f) ? -EIO : 0;
	}
	abreport_ci_name(cfg->alpha, res->alpha_used, res->looks, ci, sizeof(ci));
	fprintf(f, "<h2>Effect</h2>\n<table>\n"
		   "<tr><th>B / A, %s</th><td class=\"n\" id=\"ratio\">%.4f</td></tr>\n"
		   "<tr><th>%s (%s over %d AB pairs, %d cut from each end)</th><td class=\"n\">[%.4f, %.4f]</td></tr>\n"
		   "<tr><th>p</th><td class=\"n\">%.3g (level of the last look %.3g; threshold %.1f%%)</td></tr>\n"
		   "<tr><th>noise</th><td class=\"n\">one pair's B/A varies by %.2f%% (%s)</td></tr>\n"
		   "<tr><th>trials</th><td class=\"n\">A %d, B %d, after one discarded warm-up trial each; %.0f s</td></tr>\n",
		res->figure, res->ratio, ci, res->trimmed ? "trimmed t" : "t", res->blocks,
		res->trimmed, res->ci_lo, res->ci_hi, res->p, res->alpha_used, cfg->threshold * 100,
		(exp(res->noise) - 1) * 100, res->trimmed ? "sd, winsorized" : "sd", res->trials[0], res->trials[1],
		res->elapsed_s);
	if (res->n_series[0] || res->n_series[1])
		fprintf(f, "<tr><th>median step</th><td class=\"n\">A %.2f ms, B %.2f ms; Hodges-Lehmann shift %+.2f ms</td></tr>\n"
			   "<tr><th>largest phase change</th><td class=\"n\">%s %+.2f ms</td></tr>\n"
			   "<tr><th>stalls</th><td class=\"n\" id=\"stalls\">A %d (%.0f ms), B %d (%.0f ms)</td></tr>\n",
			res->step_p50[0], res->step_p50[1], res->hl_shift_ms,
			res->grown_phase[0] ? res->grown_phase : "-", res->grown_by_ms, res->stalls[0], res->stall_ms[0],
			res->stalls[1], res->stall_ms[1]);
	if (res->rank_skew[0] > 0 || res->rank_skew[1] > 0)
		fprintf(f, "<tr><th>rank skew (slowest / fastest compute)</th><td class=\"n\" id=\"skew\">A %.3f, B %.3f; "
			   "slowest in B: rank %d (%.0f%% of trials)</td></tr>\n", res->rank_skew[0], res->rank_skew[1],
			res->slowest_rank[1], res->slowest_share[1] * 100);
	fputs("</table>\n", f);
	if (res->n_series[0] + res->n_series[1] > 1) {
		fputs("<h2>Per-step time</h2>\n<p>Dashed: each arm's stall threshold, max(3 &times; median, "
		      "median + 10 MAD); red: stalls.  Points above the chart are drawn on its top edge.</p>\n", f);
		chart_series(f, res);
		fputs("<h2>Distribution of step times</h2>\n", f);
		chart_hist(f, res);
	}
	fputs("<h2>Trials</h2>\n", f);
	chart_trials(f, res);
	explanations(f, res);
	if (res->evidence && res->evidence[0]) {
		fputs("<h2>Evidence</h2>\n<pre id=\"evidence\">", f);
		html_escape(f, res->evidence);
		fputs("</pre>\n", f);
	}
	if (res->job_table && res->job_table[0]) {
		fputs("<h2>The job's processes on the rank CPUs</h2>\n<p>By kind (comm, policy, priority); CPU is a share "
		      "of one CPU over the arm's trials; pid, allowed CPUs and cgroup are its first trial's.</p>\n"
		      "<pre id=\"job-table\">", f);
		html_escape(f, res->job_table);
		fputs("</pre>\n", f);
	}
	fputs("</body>\n</html>\n", f);
	return ferror(f) ? -EIO : 0;
}

int html_ab_write(const char *path, const struct ab_config *cfg, const struct ab_result *res, struct nt_err *err)
{
	char tmp[4096];
	FILE *f;
	int r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return err_set(err, -ENAMETOOLONG, "%s: name too long", path);
	f = fopen(tmp, "we");
	if (!f)
		return err_set(err, -errno, "%s: %s", tmp, nt_strerror(errno));
	r = html_ab_page(f, cfg, res);
	if (fclose(f) != 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r) {
		unlink(tmp);
		return err_set(err, r, "%s: %s", path, nt_strerror(-r));
	}
	return 0;
}
