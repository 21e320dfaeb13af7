/* ab.h — the A/B engine: two configurations (a policy, a command, or both),
 * randomized interleaved trials, statistics, stalls, and an explanation
 * from kernel counters.
 *
 * A trial applies its arm's policy (journaled, reverted after the trial),
 * runs the workload and reads its metric: the harness's JSON (samples/s and
 * per-step times), or for another command its wall time.  Trials come in
 * blocks of four, ABBA or BAAB at random (seeded), so linear drift cancels.
 */
#ifndef NODETUNE_AB_H
#define NODETUNE_AB_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "log.h"
#include "stats.h"

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
	double threshold;             /* practical difference, as a fraction (0.02) */
	double alpha;
	double budget_s;              /* more trials while inconclusive, until this */
	bool regression_only;         /* bisect: also stop once the CI excludes a
				       * slowdown beyond threshold (lo >= 1 - threshold) */
	unsigned long long seed;
	const char *nodetune;         /* this program, for `nodetune exec` */
	const char *harness;
	const char *state_dir;        /* for the per-trial applies */
	const char *work_dir;         /* trial outputs */
};

/* Parse "policy=FILE,cmd=COMMAND ARGS" into arm (the command is split on
 * spaces; no shell).  0, or -EINVAL with err. */
int ab_parse_spec(const char *spec, struct ab_arm *arm, struct nt_err *err);
void ab_arm_release(struct ab_arm *arm);

/* The counters an A/B explains with, per step of the trial.  The first
 * three come from the harness's own summary, the perf ones from the
 * trial's process tree, the rest from the host. */
enum ab_counter {
	AB_C_INVOL_SWITCHES,          /* harness: training thread */
	AB_C_RUNQ_WAIT_MS,            /* harness */
	AB_C_TLB_SHOOTDOWNS,          /* host: tlb.h's source */
	AB_C_COMPACT_STALL,           /* host: vmstat */
	AB_C_NUMA_HINT_FAULTS,
	AB_C_NUMA_PAGES_MIGRATED,
	AB_C_MINOR_FAULTS,            /* harness */
	AB_C_NUMA_MISS,               /* host: vmstat */
	AB_C_CPU_MIGRATIONS,          /* perf: the trial's process tree */
	AB_C_CONTEXT_SWITCHES,        /* perf */
	AB_C_CPU_PRESSURE_MS,         /* host: PSI */
	AB_C_NR_THROTTLED,            /* host: cgroup cpu.stat */
	AB_C_PAGE_FAULTS,             /* perf */
	AB_COUNTERS
};

/* "involuntary_switches", ... (the JSON and report name) */
const char *ab_counter_name(enum ab_counter c);

struct ab_explanation {
	const char *counter;
	const char *mechanism;
	double a, b;                  /* median per-step rate in each arm */
	double p;
};

struct ab_result {
	enum stats_verdict verdict;
	bool error;                   /* an arm failed */
	char error_msg[1024];         /* with the tail of its stderr */
	int trials[2];
	double *metric[2];            /* per trial: samples/s (higher is better) */
	double ratio, ci_lo, ci_hi, p;
	double alpha_used;            /* the level of the last look: alpha / looks */
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
	char grown_phase[32];         /* the phase whose median grew most, B over A */
	double grown_by_ms;
	struct ab_explanation expl[AB_COUNTERS];
	int n_expl;
	double elapsed_s;
	bool metric_is_wall;          /* foreign commands: 1 / wall time */
	char perf_note[160];          /* why perf events are not counted ("" when they are) */
	/* why a counter is not countable here ("" when it is): such a
	 * counter is left out of the explanations, never taken as 0 */
	char not_countable[AB_COUNTERS][320];
};

/* What ab reads back from one run of the harness (its --json summary). */
struct ab_harness_run {
	double metric;                /* samples/s at the median step:
				       * world_size x batch x accum x 1000 / step_ms_p50 */
	double *steps;                /* total ms of each measured (not warm-up) step */
	double *phase[5];             /* data wait, fwd, bwd, exposed comm, opt ms, per step */
	int n_steps;                  /* > 0 */
	double skew;                  /* rank_skew when world_size > 1, else 0 */
	int slowest;                  /* slowest_rank when world_size > 1, else 0 */
	double involuntary_switches, runqueue_wait_ms, minor_faults; /* null or missing: 0 */
};

/* ab asks for at most 1M steps (--steps) and 3 warm-up steps; the harness
 * writes ~250 bytes a step */
#define AB_HARNESS_MAX_STEPS 2000000
#define AB_HARNESS_JSON_MAX (512u << 20)

/* Parse the harness's JSON summary buf[0..len) (need not be NUL-terminated;
 * untrusted: the workload wrote it).  Every number ab uses must be finite
 * and >= 0, "steps" an array of objects with at least one measured step,
 * and the throughput > 0.  Returns 0 with *ret filled (release it with
 * ab_harness_run_release); -EINVAL (not such a document), -E2BIG (over the
 * bounds above) or -ENOMEM, with err, and *ret untouched. */
int ab_parse_harness_json(const char *buf, size_t len, struct ab_harness_run *ret, struct nt_err *err);

/* Free run's arrays (and NULL them); a zeroed run is a no-op. */
void ab_harness_run_release(struct ab_harness_run *run);

/* Run the experiment.  0 with res filled (res->verdict), or -errno with err
 * for bad input (exit 2); an arm that fails gives res->error (exit 3). */
int ab_run(const struct ab_config *cfg, struct ab_result *res, struct nt_err *err);
void ab_result_release(struct ab_result *res);

json_t *ab_json(const struct ab_config *cfg, const struct ab_result *res);
int ab_print(FILE *out, const struct ab_config *cfg, const struct ab_result *res);

#endif
