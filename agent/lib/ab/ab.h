/* SPDX-License-Identifier: MIT */
/* ab.h — the A/B engine: two configurations (a policy, a command, or both),
 * randomized interleaved trials, statistics, stalls, and an explanation
 * from kernel counters.  This header is the experiment's configuration,
 * result and decision (ab.c); one trial is run by abrun.h, and the result
 * printed by abreport.h.
 *
 * A trial applies its arm's policy (journaled, reverted after the trial),
 * runs the workload in a cgroup of its own (abwatch.h: throttling, memory
 * events, PSI and perf events of the job alone; who else ran on its CPUs)
 * and reads its figure (abfigure.h): --metric from its output, else its
 * step reports (NODETUNE_STEP_FILE / NODETUNE_STEP_FD, which every job is
 * given, the harness included), else its wall time.  Trials come in blocks
 * of four, ABBA or BAAB at random (seeded); the verdict's interval is made
 * of the B/A of adjacent AB and BA pairs (stats_block_ratio), so drift and
 * the load of the moment cancel and trials need not be independent.
 */
#ifndef NODETUNE_AB_H
#define NODETUNE_AB_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "ab/abfigure.h"
#include "ab/abwatch.h"
#include "base/log.h"
#include "base/stats.h"

#define AB_MAX_ARGS 64

struct ab_arm {
	char name[2];                 /* "A", "B" */
	char *policy;                 /* NULL: no policy */
	char *argv[AB_MAX_ARGS];      /* the command, NULL-terminated; argv[0] NULL: the harness */
};

struct ab_config {
	struct ab_arm arm[2];
	int trials;                   /* per arm, at first (multiple of 2) */
	int steps, warmup;            /* of the harness */
	int batch;
	const char *metric;           /* --metric REGEX (NULL: step reports, else wall time) */
	enum abfigure_kind metric_kind;
	long long skip_steps;         /* step reports: steps numbered below this are dropped */
	double threshold;             /* practical difference, as a fraction (0.02) */
	double alpha;
	double trim;                  /* of the pairs, cut from each end of the verdict's mean (0.1) */
	double budget_s;              /* more trials while inconclusive, until this */
	bool regression_only;         /* bisect: also stop once the CI excludes a
				       * slowdown beyond threshold (lo >= 1 - threshold) */
	unsigned long long seed;
	const char *nodetune;         /* this program, for `nodetune exec` */
	const char *harness;
	const char *state_dir;        /* for the per-trial applies */
	const char *work_dir;         /* trial outputs */
	const char *sysroot;          /* the tree the trials apply to; NULL: / */
	const char *topology;         /* its topology XML; NULL: read from sysroot */
	const char *limits;           /* the site limits (limits.h) each arm's policy is held to;
				       * NULL: LIMITS_DEFAULT_PATH when it exists */
	bool as_user;                 /* run the job as as_uid/as_gid (ab_as_user) */
	uid_t as_uid;                 /* never 0 */
	gid_t as_gid;                 /* never 0 */
	char as_env[4][512];          /* HOME=, USER=, LOGNAME=, SHELL= of that user (ab_as_user) */
};

/* Run cfg's job as the user called name (--as-user): getpwnam, never uid
 * 0 nor primary gid 0.  The job is moved into its trial cgroup first, then takes the user's
 * gid (its only group) and uid, with no new privileges (prctl), and execs.
 * 0, or with err: -ESRCH (no such user), -EPERM (root's uid or group); cfg
 * unchanged on error. */
int ab_as_user(struct ab_config *cfg, const char *name, struct nt_err *err);

/* The A/B defaults, the only copy of them: 8 trials per arm (4 blocks at
 * the first look), 30 steps after 3 warm-up steps of batch 2048, the first
 * reported step skipped, threshold 2%, alpha 0.05, 10% of the pairs
 * trimmed from each end of the verdict's mean, a budget of 300 s,
 * seed 1.  Sets those fields of cfg; leaves the arms, the
 * programs and the directories alone. */
void ab_config_defaults(struct ab_config *cfg);

/* Where an experiment keeps its files, and the programs it runs. */
struct ab_files {
	char work[1024];              /* the trial directory, made by ab_files_make */
	char state[1040];             /* work/state: the per-trial applies' journal */
	char nodetune[4096];          /* this program's sibling nodetune, else "nodetune" (PATH) */
	char harness[4096];           /* likewise nodetune-harness */
};

/* Make a fresh trial directory /tmp/<prefix>-XXXXXX (mkdtemp) in f, find
 * the programs next to the running one (/proc/self/exe) or leave them to
 * PATH, and point cfg's nodetune, harness, state_dir and work_dir at f
 * (which must outlive cfg's use).  0, or -errno with err (*f and cfg
 * unchanged then but for f->work). */
int ab_files_make(struct ab_files *f, const char *prefix, struct ab_config *cfg, struct nt_err *err);

/* As ab_files_make, with the trial directory dir (--trial-dir), made here
 * (0700): it must not exist.  0, or -errno with err (-EEXIST). */
int ab_files_make_in(struct ab_files *f, const char *dir, struct ab_config *cfg, struct nt_err *err);

/* Remove the trial directory work and everything below it (best effort:
 * what cannot be removed is left). */
void ab_files_remove(const char *work);

/* Give the arms of cfg that name no command a copy of command
 * (NULL-terminated; at most AB_MAX_ARGS - 1 words are taken; NULL: no
 * change).  0, or -ENOMEM (the arms keep what was copied; ab_arm_release
 * frees it). */
int ab_default_command(struct ab_config *cfg, char *const *command);

/* Parse "policy=FILE,cmd=COMMAND ARGS" into arm (the command is split on
 * spaces; no shell).  0, or -EINVAL with err. */
int ab_parse_spec(const char *spec, struct ab_arm *arm, struct nt_err *err);
void ab_arm_release(struct ab_arm *arm);

/* The counters an A/B explains with, each a row (ab_counter_row): the
 * host's (its share of them is the job's and everyone else's), then the
 * trial's own (abwatch.h's rows: its cgroup and the CPUs its ranks used),
 * in abwatch's order.  Adding a trial counter is adding a row to abwatch;
 * adding a host counter, a row here, in ab.c's host_rows and in abrun.c's
 * host_counters (and its vm_rows, for a /proc/vmstat counter). */
enum ab_counter {
	AB_C_TLB_SHOOTDOWNS,          /* host: tlb.h's source */
	AB_C_COMPACT_STALL,           /* host: vmstat */
	AB_C_NUMA_HINT_FAULTS,
	AB_C_NUMA_PAGES_MIGRATED,
	AB_C_NUMA_MISS,
	AB_C_CPU_PRESSURE_MS,         /* host: PSI */
	AB_C_TRIAL_FIRST,             /* the trial's abwatch row 0 (AB_C_TRIAL_FIRST + enum abwatch_counter) */
	AB_COUNTERS = AB_C_TRIAL_FIRST + ABWATCH_N
};

/* The row of counter c (0 <= c < AB_COUNTERS): its name (as the JSON and
 * report print it), unit, mechanism, source, whether it is a rate, and its
 * A/A floor.  Static storage; NULL for c out of range. */
const struct abwatch_row *ab_counter_row(enum ab_counter c);

struct ab_explanation {
	const char *counter;
	const char *mechanism;
	const char *unit;             /* "per step", "per s", "share of a CPU", ... */
	double a, b;                  /* the median over each arm's trials */
	double noise;                 /* the smaller spread (MAD) within one arm: its A/A noise */
	double p;                     /* Mann-Whitney, A's trials against B's */
	bool moved;                   /* significantly (p < alpha), beyond its A/A noise and floor */
	double share;                 /* of the figure's change it can account for at most
				       * (ab_share_of_change; NAN: not estimable) */
	bool claimed;                 /* a cause: moved, and share >= 10% */
	bool symptom;                 /* its row's: a claimed cause ranks before it */
};

struct ab_result {
	enum stats_verdict verdict;
	bool error;                   /* an arm failed */
	char error_msg[1024];         /* with the tail of its stderr */
	int trials[2];
	double *metric[2];            /* per trial: the figure (higher is better) */
	enum abfigure_source source;     /* where the figures came from (the weakest of the trials') */
	char figure[64];              /* what the figure is, in words */
	bool per_step;                /* counters per step (else per second of trial) */
	double ratio, ci_lo, ci_hi, p;
	double eq_lo, eq_hi;          /* the (1 - 2 alpha_used) interval: TOST's, for no-difference */
	int trimmed;                  /* pairs left out at each end of the verdict's mean */
	double alpha_used;            /* the level of the last look (its share of alpha; ab.c's design) */
	double alpha_spent;           /* by all the looks taken */
	int looks;
	double info_frac;             /* the information fraction of the last look (1: the budget's last) */
	int blocks;                   /* AB pairs (two in each ABBA block) behind the interval */
	double noise;                 /* sd of one pair's B/A (a log): the noise floor (trimmed:
				       * from the winsorized variance, as the test sees it) */
	double noise_typical;         /* 1.4826 MAD of the same: the typical pair's */
	bool refused;                 /* the noise needs more than the budget: no verdict */
	double needed_s;              /* the budget an A/A at this noise needs to decide (-1: none would) */
	double hl_shift_ms;           /* Hodges-Lehmann shift of step times B - A */
	double step_p50[2];
	double *series[2];            /* per-step times of the measured trials, in run order */
	int n_series[2];
	int *trial_end[2];            /* series index where each trial ends */
	double stall_limit[2];        /* max(3 x median, median + 10 MAD) */
	int stalls[2];
	double stall_ms[2];
	double rank_skew[2];          /* median over trials of slowest/fastest rank compute (0: world 1) */
	int slowest_rank[2];          /* the rank slowest in most trials */
	double slowest_share[2];      /* in that share of the trials */
	char grown_phase[STEPS_NAME_MAX];   /* the phase whose mean per step grew most, B over A */
	double grown_by_ms;
	struct ab_explanation expl[AB_COUNTERS];
	int n_expl;
	double elapsed_s;
	char *evidence;               /* lines naming culprits, throttling, IRQs (abwatch) */
	char *job_table;              /* the job's processes by kind, per arm (culprit_job_table) */
	json_t *arm_json[2];          /* each arm's watches summed (abwatch) */
	/* why a counter is not countable here ("" when it is): such a
	 * counter is left out of the explanations, never taken as 0 */
	char not_countable[AB_COUNTERS][320];
};

/* Run the experiment.  0 with res filled (res->verdict), or -errno with err
 * for bad input (exit 2); an arm that fails gives res->error (exit 3). */
int ab_run(const struct ab_config *cfg, struct ab_result *res, struct nt_err *err);

/* Did the figure move by what counts: B/A beyond 1 -+ threshold, as
 * stats_verdict asks of a regression or an improvement (the point
 * estimate: an experiment cut short may not have proven it yet)?  Only
 * then is a counter claimed as a cause of the change. */
bool ab_figure_moved(double ratio, double threshold);
void ab_result_release(struct ab_result *res);

#endif
