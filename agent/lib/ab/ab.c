/* SPDX-License-Identifier: MIT */
/* ab.c — see ab.h: the engine and its decision.
 *
 * Divisions: specs; defaults and files; the counters (their rows); the
 * statistics and the decision (each look's analysis: the verdict from the
 * pairs, steps, phases, ranks, counters, evidence); the schedule (warm-up,
 * ABBA blocks, looks, refusal) in ab_run.  The trials themselves are
 * abrun.c's; the report is abreport.c's.
 */
#include "ab/ab.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ab/ab_test.h"
#include "ab/abrun.h"
#include "ab/abwatch.h"
#include "base/fsroot.h"
#include "observe/tlb.h"
#include "nt_clock.h"

#define AB_CLAIM_SHARE 0.10        /* a cause accounts for at least this share of the change */

/* ---- specs ------------------------------------------------------------- */

void ab_arm_release(struct ab_arm *arm)
{
	free(arm->policy);
	for (int i = 0; i < AB_MAX_ARGS && arm->argv[i]; i++)
		free(arm->argv[i]);
	memset(arm->argv, 0, sizeof(arm->argv));
	arm->policy = NULL;
}

int ab_parse_spec(const char *spec, struct ab_arm *arm, struct nt_err *err)
{
	/* policy=FILE[,cmd=COMMAND ARGS...]: cmd= is last and takes the rest
	 * (split on spaces; no shell ever sees it) */
	const char *cmd = !strncmp(spec, "cmd=", 4) ? spec : strstr(spec, ",cmd=");
	size_t head = cmd ? (size_t)(cmd - spec) : strlen(spec);
	char *copy = strndup(spec, head), *item, *save = NULL;
	int r = 0, n = 0;

	if (!copy)
		return err_set(err, -ENOMEM, "out of memory");
	for (item = strtok_r(copy, ",", &save); item && !r; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		if (!eq) {
			r = err_set(err, -EINVAL, "spec '%s': expected key=value (policy=FILE, cmd=COMMAND)", spec);
			break;
		}
		*eq = '\0';
		if (strcmp(item, "policy")) {
			r = err_set(err, -EINVAL, "spec '%s': unknown key '%s' (policy, cmd)", spec, item);
			break;
		}
		free(arm->policy);
		arm->policy = strdup(eq + 1);
		if (!arm->policy)
			r = err_set(err, -ENOMEM, "out of memory");
	}
	free(copy);
	if (r || !cmd)
		return r;
	cmd += cmd[0] == ',' ? 5 : 4;
	copy = strdup(cmd);
	if (!copy)
		return err_set(err, -ENOMEM, "out of memory");
	for (item = strtok_r(copy, " ", &save); item && n < AB_MAX_ARGS - 1; item = strtok_r(NULL, " ", &save))
		if (!(arm->argv[n++] = strdup(item)))
			r = err_set(err, -ENOMEM, "out of memory");
	free(copy);
	if (!n && !r)
		r = err_set(err, -EINVAL, "spec '%s': cmd= is empty", spec);
	return r;
}

/* ---- defaults and files ------------------------------------------------ */

void ab_config_defaults(struct ab_config *cfg)
{
	cfg->trials = 8;
	cfg->steps = 30;
	cfg->warmup = 3;
	cfg->batch = 2048;
	cfg->threshold = 0.02;
	cfg->alpha = 0.05;
	cfg->trim = 0.1;
	cfg->budget_s = 300;
	cfg->seed = 1;
	cfg->skip_steps = 1;
	cfg->metric_kind = ABFIGURE_THROUGHPUT;
}

/* name next to the running program into buf, when it is there and
 * executable; else name itself (found along PATH when run). */
static void find_sibling(const char *name, char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n > 0) {
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + strlen(name) + 2 < size) {
			strcpy(slash + 1, name);
			if (access(buf, X_OK) == 0)
				return;
		}
	}
	snprintf(buf, size, "%s", name);
}

/* The rest of f and cfg, once f->work exists. */
static void files_fill(struct ab_files *f, struct ab_config *cfg)
{
	snprintf(f->state, sizeof(f->state), "%s/state", f->work);
	find_sibling("nodetune", f->nodetune, sizeof(f->nodetune));
	find_sibling("nodetune-harness", f->harness, sizeof(f->harness));
	cfg->nodetune = f->nodetune;
	cfg->harness = f->harness;
	cfg->state_dir = f->state;
	cfg->work_dir = f->work;
}

int ab_files_make(struct ab_files *f, const char *prefix, struct ab_config *cfg, struct nt_err *err)
{
	snprintf(f->work, sizeof(f->work), "/tmp/%s-XXXXXX", prefix);
	if (!mkdtemp(f->work))
		return err_set(err, -errno, "mkdtemp: %s", nt_strerror(errno));
	files_fill(f, cfg);
	return 0;
}

int ab_files_make_in(struct ab_files *f, const char *dir, struct ab_config *cfg, struct nt_err *err)
{
	if ((size_t)snprintf(f->work, sizeof(f->work), "%s", dir) >= sizeof(f->work))
		return err_set(err, -ENAMETOOLONG, "--trial-dir %.64s...: too long", dir);
	if (mkdir(f->work, 0700) < 0)
		return err_set(err, -errno, "--trial-dir %s: %s", dir,
			       errno == EEXIST ? "exists already (a trial directory is made fresh)" : nt_strerror(errno));
	files_fill(f, cfg);
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

int ab_as_user(struct ab_config *cfg, const char *name, struct nt_err *err)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int e = getpwnam_r(name, &pw, buf, sizeof(buf), &res);

	if (e || !res)
		return err_set(err, -ESRCH, "--as-user %.64s: no such user%s%s", name, e ? ": " : "", e ? nt_strerror(e) : "");
	if (pw.pw_uid == 0)
		return err_set(err, -EPERM, "--as-user %.64s: uid 0: the job never runs as root through --as-user", name);
	if (pw.pw_gid == 0)
		return err_set(err, -EPERM, "--as-user %.64s: primary group 0 (root's): the job never runs with root's group "
			       "through --as-user", name);
	/* the job gets that user's login names, not ours (as sudo's env_reset) */
	if ((size_t)snprintf(cfg->as_env[0], sizeof(cfg->as_env[0]), "HOME=%s", pw.pw_dir) >= sizeof(cfg->as_env[0]) ||
	    (size_t)snprintf(cfg->as_env[3], sizeof(cfg->as_env[3]), "SHELL=%s", pw.pw_shell) >= sizeof(cfg->as_env[3]))
		return err_set(err, -ENAMETOOLONG, "--as-user %.64s: its home or shell is too long", name);
	snprintf(cfg->as_env[1], sizeof(cfg->as_env[1]), "USER=%s", pw.pw_name);
	snprintf(cfg->as_env[2], sizeof(cfg->as_env[2]), "LOGNAME=%s", pw.pw_name);
	cfg->as_user = true;
	cfg->as_uid = pw.pw_uid;
	cfg->as_gid = pw.pw_gid;
	return 0;
}

void ab_files_remove(const char *work)
{
	nftw(work, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int ab_default_command(struct ab_config *cfg, char *const *command)
{
	for (int a = 0; a < 2 && command; a++) {
		if (cfg->arm[a].argv[0])
			continue;
		for (int k = 0; command[k] && k < AB_MAX_ARGS - 1; k++) {
			cfg->arm[a].argv[k] = strdup(command[k]);
			if (!cfg->arm[a].argv[k])
				return -ENOMEM;
		}
	}
	return 0;
}

/* ---- the counters ------------------------------------------------------ */

/* The host's counters, read around each trial by abrun.c: TLB shootdowns
 * (tlb.h's source), /proc/vmstat's compaction and NUMA counters, the
 * host's PSI cpu some total.  Rows like abwatch's. */
static const struct abwatch_row host_rows[AB_C_TRIAL_FIRST] = {
	/* name, unit, mechanism,
	 *	source, perf event, rate, A/A floor, cost of one unit (ms), symptom */
	[AB_C_TLB_SHOOTDOWNS] = { "tlb_shootdowns", "", "munmap/madvise churn (TLB shootdowns)",
		ABWATCH_SRC_HOST, 0, true, 1, 0.01, false },
	[AB_C_COMPACT_STALL] = { "compact_stall", "", "THP compaction",
		ABWATCH_SRC_HOST, 0, true, 0.05, 5, false },
	[AB_C_NUMA_HINT_FAULTS] = { "numa_hint_faults", "", "automatic NUMA balancing",
		ABWATCH_SRC_HOST, 0, true, 10, 0.005, false },
	[AB_C_NUMA_PAGES_MIGRATED] = { "numa_pages_migrated", "", "automatic NUMA balancing",
		ABWATCH_SRC_HOST, 0, true, 10, 0.1, false },
	[AB_C_NUMA_MISS] = { "numa_miss", "", "placement (remote memory)",
		ABWATCH_SRC_HOST, 0, true, 10, -1, false },
	[AB_C_CPU_PRESSURE_MS] = { "cpu_pressure_ms", "ms", "CPU contention (PSI: runnable, no CPU)",
		ABWATCH_SRC_HOST, 0, true, 0.5, 1, true },
};

const struct abwatch_row *ab_counter_row(enum ab_counter c)
{
	if ((unsigned)c < AB_C_TRIAL_FIRST)
		return &host_rows[c];
	return (unsigned)c < AB_COUNTERS ? &abwatch_rows[c - AB_C_TRIAL_FIRST] : NULL;
}

/* ---- the statistics and the decision ---------------------------------- */

/* Every step of an arm's trials (phase < 0: the step's time; else that
 * phase's), in run order. */
static void pooled(const struct ab_trial *tr, int n, int arm, int phase, double **ret, size_t *ret_n)
{
	size_t total = 0, k = 0;

	for (int i = 0; i < n; i++)
		if (tr[i].arm == arm)
			total += (size_t)tr[i].st.n;
	*ret = calloc(total + 1, sizeof(double));
	for (int i = 0; i < n && *ret; i++)
		if (tr[i].arm == arm)
			for (int s = 0; s < tr[i].st.n; s++)
				(*ret)[k++] = phase < 0 ? tr[i].st.ms[s] : tr[i].st.phase_ms[phase][s];
	*ret_n = k;
}

enum stats_verdict ab_decide(double threshold, double trim, const double *d, int n, double level,
			     struct stats_blocks *ret)
{
	/* a look that spends nothing still reports its estimate (at a
	 * nominal level), and decides nothing */
	memset(ret, 0, sizeof(*ret));
	if (stats_block_ratio_trim(d, (size_t)(n > 0 ? n : 0), level > 0 ? level : 1e-9, trim, ret) < 0) {
		ret->n = 0;
		return VERDICT_INCONCLUSIVE;
	}
	if (!(level > 0))
		return VERDICT_INCONCLUSIVE;
	return stats_verdict(ret->p, ret->ratio, ret->eq_lo, ret->eq_hi, level, threshold);
}

/* The figure of each trial, arm by arm; the verdict from the pairs: each
 * ABBA (BAAB) block of trials 4b..4b+3 is two adjacent pairs, AB and BA,
 * each one difference of log figures.  Linear drift cancels over the two
 * pairs of a block, the load of the moment within a pair. */
static void analyse_metric(const struct ab_config *cfg, const struct ab_trial *tr, int n, double alpha,
			   struct ab_result *res)
{
	double *m[2], d[512];
	int k[2] = { 0, 0 }, nb = 0;
	struct stats_blocks sb;

	for (int a = 0; a < 2; a++) {
		m[a] = calloc((size_t)n + 1, sizeof(double));
		free(res->metric[a]);
		res->metric[a] = m[a];
	}
	for (int i = 0; i < n && m[0] && m[1]; i++)
		m[tr[i].arm][k[tr[i].arm]++] = tr[i].metric;
	res->trials[0] = k[0];
	res->trials[1] = k[1];
	for (int i = 0; i + 1 < 4 * (n / 4) && nb < 512; i += 2) {
		const struct ab_trial *x = &tr[i], *y = &tr[i + 1];

		if (x->arm != y->arm)
			d[nb++] = x->arm ? log(x->metric) - log(y->metric) : log(y->metric) - log(x->metric);
	}
	res->alpha_used = alpha;
	res->blocks = nb;
	res->verdict = ab_decide(cfg->threshold, cfg->trim, d, nb, alpha, &sb);
	if (sb.n == 0) {
		res->ratio = res->ci_lo = res->ci_hi = res->eq_lo = res->eq_hi = res->p = 1;
		return;
	}
	res->ratio = sb.ratio;
	res->ci_lo = sb.ci_lo;
	res->ci_hi = sb.ci_hi;
	res->eq_lo = sb.eq_lo;
	res->eq_hi = sb.eq_hi;
	res->p = sb.p;
	res->noise = sb.sd;
	res->trimmed = sb.trimmed;
	/* the typical pair's spread, one outlier pair left out (1.4826 MAD:
	 * the sd of a normal) */
	res->noise_typical = 1.4826 * stats_mad(d, (size_t)nb);
}

/* Per-step times: the median, the stalls, the shift between the arms, and
 * the series over time (kept in res, with where each trial ends). */
static void analyse_steps(const struct ab_trial *tr, int n, struct ab_result *res)
{
	double *steps[2];
	size_t ns[2];

	for (int a = 0; a < 2; a++) {
		double med, mad, limit;

		pooled(tr, n, a, -1, &steps[a], &ns[a]);
		/* a job without step reports: no step statistics (0, never
		 * NaN, which JSON cannot carry) */
		med = ns[a] ? stats_median(steps[a], ns[a]) : 0;
		mad = ns[a] ? stats_mad(steps[a], ns[a]) : 0;
		res->step_p50[a] = med;
		limit = fmax(3 * med, med + 10 * mad);
		res->stalls[a] = 0;
		res->stall_ms[a] = 0;
		res->stall_limit[a] = limit;
		for (size_t s = 0; s < ns[a]; s++)
			if (steps[a][s] > limit) {
				res->stalls[a]++;
				res->stall_ms[a] += steps[a][s];
			}
	}
	res->hl_shift_ms = ns[0] && ns[1] ? stats_hodges_lehmann(steps[0], ns[0], steps[1], ns[1]) : 0;
	for (int a = 0; a < 2; a++) {
		int t = 0, end = 0;

		free(res->series[a]);
		free(res->trial_end[a]);
		res->series[a] = steps[a];
		res->n_series[a] = (int)ns[a];
		res->trial_end[a] = calloc((size_t)res->trials[a] + 1, sizeof(int));
		for (int i = 0; i < n && res->trial_end[a]; i++)
			if (tr[i].arm == a)
				res->trial_end[a][t++] = end += tr[i].st.n;
	}
}

/* The mean of phase name's time per step over an arm's steps (a step that
 * did not report it spent 0 ms in it; -1: the arm has no steps).  The mean,
 * not the median: a pause every tenth step is a tenth of its length per
 * step, and would be 0 at the median. */
static double phase_mean(const struct ab_trial *tr, int n, int arm, const char *name)
{
	double sum = 0;
	long steps = 0;

	for (int i = 0; i < n; i++) {
		if (tr[i].arm != arm)
			continue;
		steps += tr[i].st.n;
		for (int p = 0; p < tr[i].st.n_phases; p++)
			if (!strcmp(tr[i].st.phase[p], name))
				for (int s = 0; s < tr[i].st.n; s++)
					sum += tr[i].st.phase_ms[p][s];
	}
	return steps ? sum / (double)steps : -1;
}

/* The phase (by the names the job reported) whose mean per step changed
 * most from A to B. */
static void analyse_phases(const struct ab_trial *tr, int n, struct ab_result *res)
{
	res->grown_phase[0] = '\0';
	res->grown_by_ms = 0;
	for (int i = 0; i < n; i++)
		for (int p = 0; p < tr[i].st.n_phases; p++) {
			const char *name = tr[i].st.phase[p];
			double ma, mb;

			if (!strcmp(name, res->grown_phase))
				continue;
			ma = phase_mean(tr, n, 0, name);
			mb = phase_mean(tr, n, 1, name);
			if (ma >= 0 && mb >= 0 && fabs(mb - ma) > fabs(res->grown_by_ms)) {
				res->grown_by_ms = mb - ma;
				snprintf(res->grown_phase, sizeof(res->grown_phase), "%s", name);
			}
		}
}

/* Stragglers: the skew between ranks, and which rank lags. */
static void analyse_ranks(const struct ab_trial *tr, int n, struct ab_result *res)
{
	for (int a = 0; a < 2; a++) {
		double sk[512];
		int ns_ = 0, votes[64] = { 0 }, best = 0;

		for (int i = 0; i < n && ns_ < 512; i++)
			if (tr[i].arm == a && tr[i].st.skew > 0) {
				sk[ns_++] = tr[i].st.skew;
				if (tr[i].st.slowest >= 0 && tr[i].st.slowest < 64)
					votes[tr[i].st.slowest]++;
			}
		for (int r = 1; r < 64; r++)
			if (votes[r] > votes[best])
				best = r;
		res->rank_skew[a] = ns_ ? stats_median(sk, (size_t)ns_) : 0;
		res->slowest_rank[a] = best;
		res->slowest_share[a] = ns_ ? (double)votes[best] / ns_ : 0;
	}
}

double ab_share_of_change(const struct abwatch_row *row, double a, double b, double ratio, double frame_ms)
{
	double f = 1 / ratio - 1, x;

	if (row->cost_ms < 0 || !(fabs(ratio - 1) >= 0.002) || !(frame_ms > 0))
		return NAN;
	x = row->cost_ms > 0 ? (b - a) * row->cost_ms / frame_ms : b - a;
	return x / f;
}

bool ab_figure_moved(double ratio, double threshold)
{
	/* as stats_verdict asks of a regression or an improvement */
	return ratio < 1 - threshold || ratio > 1 + threshold;
}

void ab_judge_counter(struct ab_explanation *e, const struct abwatch_row *row, double alpha, double ratio,
		      double threshold, double frame_ms)
{
	bool figure_moved = ab_figure_moved(ratio, threshold);

	e->moved = e->p < alpha && fabs(e->b - e->a) > fmax(2 * e->noise, row->floor);
	e->share = figure_moved ? ab_share_of_change(row, e->a, e->b, ratio, frame_ms) : NAN;
	e->claimed = e->moved && e->share >= AB_CLAIM_SHARE;
}

/* The explanations: each countable counter, A's trials against B's,
 * judged by ab_judge_counter. */
static void analyse_counters(const struct ab_config *cfg, const struct ab_trial *tr, int n, struct ab_result *res)
{
	res->n_expl = 0;
	for (int c = 0; c < AB_COUNTERS; c++) {
		const struct abwatch_row *row = ab_counter_row(c);
		double ca[512], cb[512];
		int na = 0, nb = 0;
		struct ab_explanation *e;

		if (res->not_countable[c][0])
			continue;       /* a 0 that means "cannot see" explains nothing */
		for (int i = 0; i < n && na < 512 && nb < 512; i++) {
			if (tr[i].arm == 0)
				ca[na++] = tr[i].counter[c];
			else
				cb[nb++] = tr[i].counter[c];
		}
		e = &res->expl[res->n_expl++];
		e->counter = row->name;
		e->mechanism = row->mechanism;
		e->unit = !row->rate ? row->unit : res->per_step ? "per step" : "per s";
		e->a = stats_median(ca, (size_t)na);
		e->b = stats_median(cb, (size_t)nb);
		e->noise = fmin(stats_mad(ca, (size_t)na), stats_mad(cb, (size_t)nb));
		e->p = stats_mann_whitney(ca, (size_t)na, cb, (size_t)nb, NULL);
		ab_judge_counter(e, row, cfg->alpha, res->ratio, cfg->threshold, res->per_step ? res->step_p50[0] : 1000);
		e->symptom = row->symptom;
	}
}

/* The explanations: claimed ones first (a cause before a symptom that it
 * explains: CPU quota throttling before "CPU contention (PSI)"), each by how
 * much of the change it can account for (a helper that took a quarter of
 * the rank's CPU before the page faults of its start-up, however steady
 * those were); then those that also moved, each by its change over its
 * noise; then the rest by significance. */
static double strength(const struct ab_explanation *x)
{
	return fabs(x->b - x->a) / (x->noise + 1e-9 + 1e-3 * fmax(fabs(x->a), fabs(x->b)));
}

void ab_rank_explanations(struct ab_result *res)
{
	for (int i = 0; i < res->n_expl; i++)
		for (int j = i + 1; j < res->n_expl; j++) {
			struct ab_explanation *x = &res->expl[i], *y = &res->expl[j];
			bool swap = y->claimed != x->claimed ? y->claimed
				    : x->claimed && x->symptom != y->symptom ? x->symptom
				    : y->moved != x->moved ? y->moved
				    : x->claimed ? y->share > x->share
				    : x->moved ? strength(y) > strength(x)
				    : y->p < x->p - 1e-12 || (fabs(y->p - x->p) < 1e-12 && strength(y) > strength(x));

			if (swap) {
				struct ab_explanation t = *x;

				*x = *y;
				*y = t;
			}
		}
}

/* Who else ran on the ranks' CPUs, throttling, IRQs: each arm's watches
 * summed, and the lines that tell them apart. */
static void analyse_evidence(const struct ab_trial *tr, int n, struct ab_result *res)
{
	struct abwatch_arm arm[2];
	char buf[4096];
	int r;

	for (int a = 0; a < 2; a++)
		abwatch_arm_init(&arm[a]);
	for (int i = 0; i < n; i++)
		abwatch_arm_add(&arm[tr[i].arm], &tr[i].watch);
	free(res->evidence);
	buf[0] = '\0';
	r = abwatch_explain(&arm[0], &arm[1], res->ratio < 1 ? 1 : res->ratio > 1 ? 0 : -1, buf, sizeof(buf));
	res->evidence = (r > 0 || r == -ENOSPC) && buf[0] ? strdup(buf) : NULL;
	free(res->job_table);
	buf[0] = '\0';
	r = culprit_job_table(arm[0].culprit_trials ? &arm[0].culprit : NULL,
			      arm[1].culprit_trials ? &arm[1].culprit : NULL, buf, sizeof(buf));
	res->job_table = (r > 0 || r == -ENOSPC) && buf[0] ? strdup(buf) : NULL;
	for (int a = 0; a < 2; a++) {
		json_decref(res->arm_json[a]);
		res->arm_json[a] = abwatch_arm_json(&arm[a]);
		abwatch_arm_release(&arm[a]);
	}
}

/* alpha: the level of this look (see ab_run) */
static void analyse(const struct ab_config *cfg, const struct ab_trial *tr, int n, double alpha, struct ab_result *res)
{
	analyse_metric(cfg, tr, n, alpha, res);
	analyse_steps(tr, n, res);
	analyse_phases(tr, n, res);
	analyse_ranks(tr, n, res);
	analyse_counters(cfg, tr, n, res);
	ab_rank_explanations(res);
	analyse_evidence(tr, n, res);
}

/* What the figure is, in words, for a source. */
static void name_figure(const struct ab_config *cfg, const struct ab_trial *w, struct ab_result *res)
{
	res->per_step = w->st.n > 0;
	switch (res->source) {
	case ABFIGURE_METRIC:
		snprintf(res->figure, sizeof(res->figure), "--metric (%s)",
			 cfg->metric_kind == ABFIGURE_TIME ? "a time: 1 / value" : "a throughput");
		break;
	case ABFIGURE_STEPS:
		snprintf(res->figure, sizeof(res->figure), "%s over the reported steps",
			 w->st.samples > 0 ? "samples/s" : "steps/s");
		break;
	default:
		snprintf(res->figure, sizeof(res->figure), "1 / wall time of a trial");
	}
}

/* The trial runner and the clock of ab_run: the real ones, or a test's
 * (ab_test_inject). */
static ab_trial_fn trial_fn = abrun_trial;
static double (*now_fn)(void) = nt_mono_s;

void ab_test_inject(ab_trial_fn trial, double (*now)(void))
{
	trial_fn = trial ? trial : abrun_trial;
	now_fn = now ? now : nt_mono_s;
}

/* ---- the schedule ------------------------------------------------------ */

/* The warm-up: one trial of each arm, discarded.  The first runs of an
 * experiment are cold (binaries, page cache, allocator), a one-time effect
 * that ABBA blocks, which cancel linear drift, do not remove.  They also
 * find the figure's source: --metric, else step reports when both wrote
 * one, else the wall time. */
static int warm_up(const struct ab_config *cfg, const regex_t *re, const struct tlb_counter *tlb, struct ab_result *res,
		   struct nt_err *err)
{
	struct ab_trial w[2];
	int r = 0;

	memset(w, 0, sizeof(w));
	for (int a = 0; a < 2 && !r; a++)
		r = trial_fn(cfg, re, cfg->metric ? ABFIGURE_METRIC : ABFIGURE_WALL, tlb, a, -1 - a, &w[a], res, err);
	if (!r) {
		res->source = cfg->metric ? ABFIGURE_METRIC : w[0].st.n && w[1].st.n ? ABFIGURE_STEPS : ABFIGURE_WALL;
		name_figure(cfg, &w[0], res);
		if (!w[0].st.n != !w[1].st.n)
			log_msg(LOG_WARNING, "only arm %s wrote step reports in its warm-up: both are judged by %s",
				w[0].st.n ? "A" : "B", res->figure);
	}
	abrun_trial_free(&w[0]);
	abrun_trial_free(&w[1]);
	return r;
}

/* Would an A/A at this noise decide within the budget?  Else refuse: the
 * verdict stays inconclusive and the report says the budget it needs.
 * level: what the last look could still spend (no-difference needs the
 * (1 - 2 level) interval within the threshold: TOST). */
static void needed_budget(const struct ab_config *cfg, double start, double trials_s, double level,
			  struct ab_result *res)
{
	int need = stats_blocks_needed(res->noise, 2 * level, cfg->threshold, cfg->trim);
	double pair_s = res->blocks ? trials_s / res->blocks : 0;

	/* the warm-up and the looks' own time, then the pairs (-1: never) */
	res->needed_s = need == INT_MAX ? -1 : (now_fn() - start - trials_s) + need * pair_s;
}

/* Refuse when the budget cannot resolve the threshold at all: when, at the
 * noise seen so far (after AB_REFUSE_PAIRS pairs; the smaller of the sd and
 * the typical pair's spread, since one stalled pair inflates the sd and
 * more pairs dilute it), TOST's interval after every pair the budget still
 * has room for (at most AB_MAX_TRIALS in all), at the most the last look
 * can spend (level), would be wider (its half width) than the threshold.
 * Then neither a no-difference nor an effect of the threshold's size can
 * be called, only a far larger effect; so an effect seen now that would
 * be called if it held to the end (beyond the threshold, and beyond the
 * half width of the (1 - level) interval the end of the budget would
 * have) goes on to its verdict: the noisy neighbour of docs/ab.md, which
 * makes B a third as fast at a pair noise near 100%, was refused after 26
 * pairs where a look later called it a regression.  The point estimate
 * alone never refuses: early on it wanders (an A/A whose first pairs read
 * 0.986, a true 2% slowdown read as 0.991 after 26 pairs).  The budget the
 * report states is the one an A/A at this noise needs. */
bool ab_futile(const struct ab_config *cfg, int pairs, double pair_s, double left_s, double sd, double level,
	       double ratio)
{
	/* the pairs at the end: those run and those the rest of the budget
	 * has room for, at most AB_MAX_TRIALS in all */
	int n = pairs + (pair_s > 0 && left_s > 0 ? (int)fmin(left_s / pair_s, AB_MAX_TRIALS / 2 - pairs) : 0), df;
	double hw_eq, hw_effect, lr;

	if (pairs < AB_REFUSE_PAIRS)
		return false;
	if (!isfinite(sd) || !(level > 0))
		return true;
	df = n - 2 * stats_trim_g(n, cfg->trim) - 1;
	/* as stats_block_ratio_trim: no TOST quantile past a level of 1/2 */
	hw_eq = (2 * level < 1 ? stats_t_quantile(2 * level, df) : 0) * sd / sqrt(n);
	if (hw_eq <= log1p(cfg->threshold))
		return false;
	hw_effect = stats_t_quantile(level, df) * sd / sqrt(n);
	/* the effect seen, if it held to the end, would be called there: a
	 * ratio beyond the threshold (as stats_verdict asks) whose interval
	 * is clear of 1; then go on */
	if (!(ratio > 0))
		return true;
	lr = log(ratio);
	return !(ab_figure_moved(ratio, cfg->threshold) && fabs(lr) > hw_effect);
}

static bool refuse(const struct ab_config *cfg, double start, double trials_s, double level, struct ab_result *res)
{
	needed_budget(cfg, start, trials_s, level, res);
	res->refused = false;
	if (res->verdict != VERDICT_INCONCLUSIVE || res->blocks < AB_REFUSE_PAIRS)
		return false;
	res->refused = ab_futile(cfg, res->blocks, trials_s / res->blocks, cfg->budget_s - (now_fn() - start),
				 fmin(res->noise, res->noise_typical), level, res->ratio);
	return res->refused;
}

/* One block of four trials, ABBA (first 0) or BAAB (first 1), appended to
 * *tr (n used, cap allocated).  Returns 0, or a trial's error (its trial
 * freed, the block cut short). */
static int run_block(const struct ab_config *cfg, const regex_t *re, const struct tlb_counter *tlb, int first,
		     struct ab_trial **tr, int *n, int *cap, struct ab_result *res, struct nt_err *err)
{
	static const int order[4] = { 0, 1, 1, 0 };
	int r = 0;

	for (int k = 0; k < 4 && !r; k++) {
		if (*n == *cap) {
			int c = *cap ? 2 * *cap : 16;
			struct ab_trial *tmp = realloc(*tr, (size_t)c * sizeof(**tr));

			if (!tmp)
				return err_set(err, -ENOMEM, "out of memory");
			*tr = tmp;
			*cap = c;
		}
		r = trial_fn(cfg, re, res->source, tlb, order[k] ^ first, *n, &(*tr)[*n], res, err);
		if (r == 0)
			(*n)++;
		else
			abrun_trial_free(&(*tr)[*n]);
	}
	return r;
}

/* ---- the sequential design --------------------------------------------
 *
 * The experiment looks at its pairs several times and stops at the first
 * look that decides.  Each look is a chance of a false alarm, so the
 * experiment's alpha is spent over the looks, by how far along the
 * experiment is, not split evenly over every look it could take:
 *
 *   - Information fraction.  At a look after n pairs, t = n / N, where N is
 *     the pairs the budget allows: n plus the pairs the rest of the budget
 *     has room for at the time a pair has taken so far (re-estimated at
 *     every look, from the measured time of the blocks; the warm-up and the
 *     looks' own time are in the elapsed time).  t never goes back.  The
 *     look is the last (t = 1) when not one more block fits in the budget,
 *     or the trials' cap (AB_MAX_TRIALS) is reached; the experiment then
 *     stops whatever that look says.
 *   - Spending (Lan and DeMets 1983, O'Brien-Fleming type): by fraction t
 *     the experiment has spent alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt t)
 *     (stats_obf_spent), alpha(1) = alpha.  A look spends the increment
 *     level_k = alpha(t_k) - alpha(t_{k-1}): at alpha 0.05 and four looks
 *     (t = .25, .5, .75, 1) that is 0.00009, 0.0055, 0.018, 0.026, where
 *     splitting alpha over the ten looks the schedule could take gave
 *     0.005 each.
 *   - Each look tests at its own level (Bonferroni over the looks actually
 *     taken): a regression or improvement when the two-sided t test of the
 *     mean log pair ratio has p < level_k (and the effect is beyond the
 *     threshold), a no-difference when TOST at level_k rejects a difference
 *     of the threshold: the (1 - 2 level_k) interval within 1 +- threshold
 *     (stats_verdict).  By the union bound the chance of any false alarm
 *     over all looks is at most sum level_k = alpha(t_K) <= alpha, and so is
 *     the chance of a false no-difference when B truly differs by the
 *     threshold.  This needs no joint distribution of the looks, so it holds
 *     with the t statistic's estimated variance and with a look schedule
 *     that depends on measured time; the exact group-sequential boundaries
 *     (the recursive integration of Armitage, McPherson and Rowe) would let
 *     the last look of four spend about 0.043 instead of 0.026, for a
 *     bound that holds only for the z statistic.  The pair time the
 *     schedule uses is the sum of an A and a B trial, which under A = B is
 *     uncorrelated with the pair's difference, so the schedule does not
 *     peek at the effect.
 *   - Variance reduction.  The pairs already are: AB and BA trials
 *     adjacent in time, so drift and the load of the moment cancel (an
 *     order of magnitude on this machine: pair noise against trial noise).
 *     A warm-up covariate (CUPED) is not used: an arm's policy is in force
 *     from its first step, so its warm-up steps are post-treatment, and
 *     regressing on them would take part of the effect away with the noise.
 *
 * tests/unit/ab/test_ab.c runs thousands of simulated A/A and A/B
 * experiments through ab_look_blocks, ab_look_fraction, ab_seq_level and
 * ab_decide, and thousands of A/A ones through ab_run itself (a simulated
 * trial and clock, ab_test_inject: the blocks, the pairing and the
 * refusal as they are), and checks the false-alarm rate against its
 * binomial bound. */

int ab_look_blocks(const struct ab_config *cfg, int n)
{
	int b = n == 0 ? (cfg->trials + 1) / 2 : (n / 8 > 1 ? n / 8 : 1);

	/* never past the cap: the last look is at AB_MAX_TRIALS */
	return n + 4 * b > AB_MAX_TRIALS && n + 4 <= AB_MAX_TRIALS ? (AB_MAX_TRIALS - n) / 4 : b;
}

double ab_look_fraction(const struct ab_config *cfg, int n, double elapsed_s, double trials_s, bool *ret_final)
{
	int blocks = n / 4, more;
	double block_s = blocks > 0 ? trials_s / blocks : 0, left = cfg->budget_s - elapsed_s;

	*ret_final = n >= AB_MAX_TRIALS || !(block_s > 0) || !(left >= block_s);
	if (*ret_final)
		return 1;
	more = (int)fmin(floor(left / block_s), (AB_MAX_TRIALS - n) / 4);
	return (double)blocks / (blocks + more);
}

double ab_seq_level(const struct ab_config *cfg, struct ab_seq *s, double t, bool final)
{
	double spent, level;

	t = final ? 1 : fmin(fmax(t, s->t), 1);
	spent = fmax(stats_obf_spent(cfg->alpha, t), s->spent);
	level = spent - s->spent;
	s->spent = spent;
	s->t = t;
	s->looks++;
	return level;
}

/* One look at the n trials run, elapsed since start, trials_s of it in the
 * blocks: its level from the design (seq), the analysis at that level
 * into res.  Returns true when the experiment stops here: a verdict, the
 * budget's last look, a refusal, or (bisect, which asks only "regression
 * or not") a slowdown beyond the threshold excluded. */
static bool look(const struct ab_config *cfg, struct ab_seq *seq, const struct ab_trial *tr, int n, double start,
		 double trials_s, struct ab_result *res)
{
	bool final;
	double t = ab_look_fraction(cfg, n, now_fn() - start, trials_s, &final);

	analyse(cfg, tr, n, ab_seq_level(cfg, seq, t, final), res);
	res->looks = seq->looks;
	res->info_frac = seq->t;
	res->alpha_spent = seq->spent;
	if (res->verdict != VERDICT_INCONCLUSIVE || final)
		return true;
	if (refuse(cfg, start, trials_s, cfg->alpha - seq->spent, res))
		return true;
	return cfg->regression_only && res->ci_lo >= 1 - cfg->threshold;
}

int ab_run(const struct ab_config *cfg, struct ab_result *res, struct nt_err *err)
{
	struct ab_trial *tr = NULL;
	int n = 0, cap = 0, r = 0;
	uint64_t rng = cfg->seed * 0x9e3779b97f4a7c15ull + 1;
	double start = now_fn(), trials_s = 0;
	struct ab_seq seq = { 0 };
	struct fsroot *host = fsroot_open("/");
	struct tlb_counter tlb = { .source = TLB_SRC_NONE, .why = "/ cannot be opened" };
	struct sigaction old[3];
	regex_t re;

	memset(res, 0, sizeof(*res));
	if (cfg->metric && abfigure_metric_compile(cfg->metric, &re, err) < 0) {
		fsroot_free(host);
		return err->code;
	}
	abrun_stops_catch(old, false);
	/* TLB shootdowns from the source this host has (a probe decides,
	 * once for the experiment), or not countable, said so */
	if (host)
		tlb_counter_open(&tlb, host, tlb_sources_from_env());
	r = warm_up(cfg, cfg->metric ? &re : NULL, &tlb, res, err);
	for (;;) {
		int blocks = ab_look_blocks(cfg, n);

		if (r)
			break;
		for (int b = 0; b < blocks && !r; b++) {
			double t0 = now_fn();

			if (n > 0 && b > 0 && now_fn() - start > cfg->budget_s)
				break;      /* out of time: look at the whole blocks run */
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			r = run_block(cfg, cfg->metric ? &re : NULL, &tlb, (int)(rng & 1), &tr, &n, &cap, res, err);
			trials_s += now_fn() - t0;
		}
		if (r || look(cfg, &seq, tr, n, start, trials_s, res))
			break;
	}
	if (!r && res->verdict == VERDICT_INCONCLUSIVE && !res->refused)
		needed_budget(cfg, start, trials_s, seq.spent < cfg->alpha ? cfg->alpha - seq.spent : res->alpha_used,
			      res);
	res->elapsed_s = now_fn() - start;
	for (int i = 0; i < n; i++)
		abrun_trial_free(&tr[i]);
	free(tr);
	tlb_counter_close(&tlb);
	fsroot_free(host);
	if (cfg->metric)
		regfree(&re);
	abrun_stops_catch(old, true);
	return r < 0 ? r : 0;
}

void ab_result_release(struct ab_result *res)
{
	for (int a = 0; a < 2; a++) {
		free(res->metric[a]);
		free(res->series[a]);
		free(res->trial_end[a]);
		json_decref(res->arm_json[a]);
	}
	free(res->evidence);
	free(res->job_table);
	memset(res, 0, sizeof(*res));
}

