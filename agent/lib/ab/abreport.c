/* SPDX-License-Identifier: MIT */
/* abreport.c — see abreport.h.
 *
 * Divisions: the JSON report; the text report.
 */
#include "ab/abreport.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* ---- the JSON report ---------------------------------------------------- */


static json_t *explanations_json(const struct ab_result *res)
{
	json_t *ex = json_array();

	for (int i = 0; i < res->n_expl; i++) {
		const struct ab_explanation *e = &res->expl[i];

		json_array_append_new(ex, json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:b, s:b, s:o}", "counter",
						    e->counter, "mechanism", e->mechanism, "unit", e->unit, "a", e->a,
						    "b", e->b, "noise", e->noise, "p_value", e->p, "moved", e->moved,
						    "claimed", e->claimed,
						    "share_of_change", isfinite(e->share) ? json_real(e->share)
						    : json_null()));
	}
	return ex;
}

static json_t *evidence_json(const struct ab_result *res)
{
	json_t *ev = json_array();
	const char *p = res->evidence;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		json_array_append_new(ev, json_stringn(p, len));
		p += len + (nl != NULL);
	}
	return ev;
}

json_t *abreport_json(const struct ab_config *cfg, const struct ab_result *res)
{
	json_t *doc, *ma, *mb, *nc;

	if (res->error)
		return json_pack("{s:s, s:s, s:s}", "schema", ABREPORT_SCHEMA, "verdict", "error", "error",
				 res->error_msg);
	ma = json_array();
	mb = json_array();
	for (int i = 0; i < res->trials[0]; i++)
		json_array_append_new(ma, json_real(res->metric[0][i]));
	for (int i = 0; i < res->trials[1]; i++)
		json_array_append_new(mb, json_real(res->metric[1][i]));
	doc = json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:f, s:f, s:f, s:o, s:o, s:o}",
			"schema", ABREPORT_SCHEMA, "verdict", stats_verdict_name(res->verdict), "ratio", res->ratio, "ci_low", res->ci_lo,
			"ci_high", res->ci_hi, "p_value", res->p, "trials_a", res->trials[0], "trials_b", res->trials[1],
			"pairs", res->blocks, "noise", res->noise, "hodges_lehmann_step_ms", res->hl_shift_ms,
			"threshold", cfg->threshold,
			"stalls", json_pack("{s:{s:i, s:f, s:f}, s:{s:i, s:f, s:f}, s:s, s:f}",
					    "a", "count", res->stalls[0], "ms", res->stall_ms[0], "step_ms_p50", res->step_p50[0],
					    "b", "count", res->stalls[1], "ms", res->stall_ms[1], "step_ms_p50", res->step_p50[1],
					    "grown_phase", res->grown_phase, "grown_by_ms", res->grown_by_ms),
			"explanations", explanations_json(res),
			"metric", json_pack("{s:s, s:s, s:s, s:o, s:o}", "source", abfigure_source_name(res->source),
					    "name", res->figure, "counters", res->per_step ? "per step" : "per s", "a", ma,
					    "b", mb));
	if (!doc)
		return NULL;
	json_object_set_new(doc, "elapsed_s", json_real(res->elapsed_s));
	json_object_set_new(doc, "alpha", json_real(cfg->alpha));
	json_object_set_new(doc, "trim", json_real(cfg->trim));
	json_object_set_new(doc, "trimmed_pairs", json_integer(res->trimmed));
	json_object_set_new(doc, "noise_mad", json_real(res->noise_typical));
	json_object_set_new(doc, "alpha_last_look", json_real(res->alpha_used));
	json_object_set_new(doc, "alpha_spent", json_real(res->alpha_spent));
	json_object_set_new(doc, "looks", json_integer(res->looks));
	json_object_set_new(doc, "information_fraction", json_real(res->info_frac));
	json_object_set_new(doc, "tost_low", json_real(res->eq_lo));
	json_object_set_new(doc, "tost_high", json_real(res->eq_hi));
	json_object_set_new(doc, "refused", json_boolean(res->refused));
	json_object_set_new(doc, "needed_budget_s", res->needed_s > 0 ? json_real(res->needed_s) : json_null());
	json_object_set_new(doc, "evidence", evidence_json(res));
	json_object_set_new(doc, "watch", json_pack("{s:O?, s:O?}", "a", res->arm_json[0], "b", res->arm_json[1]));
	if (res->rank_skew[0] > 0 || res->rank_skew[1] > 0)
		json_object_set_new(doc, "rank_skew", json_pack("{s:f, s:f, s:i, s:i, s:f, s:f}", "a", res->rank_skew[0],
			"b", res->rank_skew[1], "slowest_rank_a", res->slowest_rank[0], "slowest_rank_b",
			res->slowest_rank[1], "slowest_share_a", res->slowest_share[0], "slowest_share_b",
			res->slowest_share[1]));
	nc = json_object();
	for (int c = 0; c < AB_COUNTERS; c++)
		if (res->not_countable[c][0])
			json_object_set_new(nc, ab_counter_row(c)->name, json_string(res->not_countable[c]));
	json_object_set_new(doc, "not_countable", nc);
	return doc;
}

/* ---- the text report ---------------------------------------------------- */

void abreport_ci_name(double alpha, double level_alpha, int looks, char *buf, size_t size)
{
	/* enough decimals for a's first two significant digits: 95, 99.87,
	 * 99.99931; then no trailing zeros */
	int d = level_alpha > 0 ? (int)ceil(-log10(level_alpha * 100)) + 1 : 1;
	int n;

	d = d < 0 ? 0 : d > 10 ? 10 : d;
	n = snprintf(buf, size, "%.*f", d, (1 - level_alpha) * 100);
	while (n > 0 && (size_t)n < size && strchr(buf, '.') && (buf[n - 1] == '0' || buf[n - 1] == '.'))
		buf[--n] = '\0';
	if (n < 0 || (size_t)n >= size)
		return;
	if (level_alpha < alpha * (1 - 1e-9))
		snprintf(buf + n, size - (size_t)n, "%% CI (sequential: %d look%s, the last at level %.2g)", looks,
			 looks == 1 ? "" : "s", level_alpha);
	else
		snprintf(buf + n, size - (size_t)n, "%% CI");
}

static void print_effect(FILE *out, const struct ab_config *cfg, const struct ab_result *res)
{
	fprintf(out, "verdict: %s (B vs A, threshold %.1f%%, alpha %.2f spent over %d look%s: %.3g)\n",
		res->refused ? "inconclusive, refused" : stats_verdict_name(res->verdict), cfg->threshold * 100,
		cfg->alpha, res->looks, res->looks == 1 ? "" : "s", res->alpha_spent);
	char ci[128], eq[128];

	abreport_ci_name(cfg->alpha, res->alpha_used, res->looks, ci, sizeof(ci));
	abreport_ci_name(2 * cfg->alpha, 2 * res->alpha_used, res->looks, eq, sizeof(eq));
	fprintf(out, "effect: B/A of %s = %.4f, %s [%.4f, %.4f], p = %.3g (%s over %d AB pairs of ABBA blocks",
		res->figure, res->ratio, ci, res->ci_lo, res->ci_hi, res->p, res->trimmed ? "trimmed t" : "t",
		res->blocks);
	if (res->trimmed)
		fprintf(out, ", the %d lowest and %d highest left out", res->trimmed, res->trimmed);
	fprintf(out, "; last look's level %.3g), %d + %d trials, %.0f s\n", res->alpha_used, res->trials[0],
		res->trials[1], res->elapsed_s);
	fprintf(out, "equivalence (TOST at %.3g): %s [%.4f, %.4f] %s 1 +- %.1f%%\n", res->alpha_used, eq,
		res->eq_lo, res->eq_hi,
		res->eq_lo >= 1 - cfg->threshold && res->eq_hi <= 1 + cfg->threshold ? "within" : "not within",
		cfg->threshold * 100);
	fprintf(out, "noise: one pair's B/A varies by %.2f%% (%s)", (exp(res->noise) - 1) * 100,
		res->trimmed ? "sd of the trimmed mean's pairs, winsorized" : "sd");
	if (res->needed_s > 0 && res->verdict == VERDICT_INCONCLUSIVE)
		fprintf(out, "; deciding at %.1f%% needs a budget of about %.0f s (--budget)", cfg->threshold * 100,
			res->needed_s);
	else if (res->needed_s < 0 && res->verdict == VERDICT_INCONCLUSIVE)
		fprintf(out, "; no budget decides at %.1f%%", cfg->threshold * 100);
	fputc('\n', out);
	if (res->refused)
		fprintf(out, "refused: the noise exceeds what --threshold %.1f%% can judge within --budget %.0f s; "
			"no verdict is given\n", cfg->threshold * 100, cfg->budget_s);
}

/* text's lines, each indented by two spaces. */
static void print_indented(FILE *out, const char *text)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(out, "  %.*s\n", len, p);
		p += len + (nl != NULL);
	}
}

int abreport_print(FILE *out, const struct ab_config *cfg, const struct ab_result *res)
{
	int shown = 0;
	bool moved = ab_figure_moved(res->ratio, cfg->threshold);

	if (res->error) {
		fprintf(out, "verdict: error — %s\n", res->error_msg);
		return ferror(out) ? -EIO : 0;
	}
	print_effect(out, cfg, res);
	if (res->n_series[0] || res->n_series[1]) {
		fprintf(out, "steps: p50 A %.2f ms, B %.2f ms; Hodges-Lehmann shift %+.2f ms; largest phase change (mean per step): %s %+.2f ms\n",
			res->step_p50[0], res->step_p50[1], res->hl_shift_ms, res->grown_phase[0] ? res->grown_phase : "-",
			res->grown_by_ms);
		fprintf(out, "stalls (> max(3 x median, median + 10 MAD)): A %d (%.0f ms), B %d (%.0f ms)\n",
			res->stalls[0], res->stall_ms[0], res->stalls[1], res->stall_ms[1]);
	} else {
		fprintf(out, "steps: none reported (no step report, so no stalls or phases: see NODETUNE_STEP_FILE)\n");
	}
	if (res->rank_skew[0] > 0 || res->rank_skew[1] > 0)
		fprintf(out, "ranks: step skew (slowest / fastest) A %.3f, B %.3f; slowest in B: rank %d (%.0f%% of steps)\n",
			res->rank_skew[0], res->rank_skew[1], res->slowest_rank[1], res->slowest_share[1] * 100);
	fprintf(out, "explanations (counters %s of trial, A -> B; a cause moved beyond its A/A noise and can "
		"account for 10%% or more of the change):\n", res->per_step ? "per step" : "per second");
	for (int i = 0; i < res->n_expl && res->expl[i].claimed; i++, shown++) {
		const struct ab_explanation *e = &res->expl[i];
		char share[64];

		/* the share is a bound (each unit at its row's highest cost):
		 * beyond 1 it says the counter can account for all of it */
		if (e->share > 1)
			snprintf(share, sizeof(share), "can account for all of the change, bound %.0f%%", 100 * e->share);
		else
			snprintf(share, sizeof(share), "up to %.0f%% of the change", 100 * e->share);
		fprintf(out, "  %d. %-22s %10.3f -> %10.3f %s (noise %.3g, p = %.3g; %s)  => %s\n", i + 1, e->counter,
			e->a, e->b, e->unit, e->noise, e->p, share, e->mechanism);
	}
	if (!shown && !moved)
		fprintf(out, "  (B/A %.4f is within 1 +- %.1f%%: no change that counts for a counter to account "
			"for)\n", res->ratio, cfg->threshold * 100);
	else if (!shown)
		fprintf(out, "  (no counter moved beyond its noise by enough to account for the change)\n");
	for (int i = shown; i < res->n_expl && res->expl[i].moved; i++) {
		const struct ab_explanation *e = &res->expl[i];
		char share[48];

		if (!isfinite(e->share) && !moved)
			snprintf(share, sizeof(share), "the figure moved less than the threshold");
		else if (!isfinite(e->share))
			snprintf(share, sizeof(share), "its share not estimable");
		else if (e->share < 0)
			snprintf(share, sizeof(share), "moved against the change");
		else
			snprintf(share, sizeof(share), "at most %.1f%% of the change", 100 * e->share);
		fprintf(out, "  also moved: %s %.3f -> %.3f %s (p = %.3g; %s)\n", e->counter, e->a, e->b, e->unit, e->p,
			share);
	}
	if (res->evidence && res->evidence[0]) {
		fprintf(out, "evidence:\n");
		print_indented(out, res->evidence);
	}
	for (int c = 0; c < AB_COUNTERS; c++)
		if (res->not_countable[c][0])
			fprintf(out, "  (%s: not countable on this host: %s)\n", ab_counter_row(c)->name, res->not_countable[c]);
	if (res->job_table && res->job_table[0]) {
		fprintf(out, "the job's processes on the rank CPUs, by kind (CPU: a share of one CPU over the arm's trials; "
			"pid, allowed CPUs, cgroup: its first trial's):\n");
		print_indented(out, res->job_table);
	}
	return ferror(out) ? -EIO : 0;
}

