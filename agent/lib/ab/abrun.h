/* SPDX-License-Identifier: MIT */
/* abrun.h — the A/B trial runner: one trial of one arm, start to end.
 *
 * A trial applies its arm's policy (journaled; reverted after the trial),
 * forks the arm's command (the default workload: the harness at world 2
 * under mpirun) in its own session (so its own process group, and no
 * controlling terminal) and trial cgroup (abwatch.h), owning nothing of
 * ab's (child.h: stdin /dev/null, its output in the trial's files, the
 * step report's fd as fd 3, no other fd), watches it to its end (a stop signal, SIGINT/SIGTERM/SIGHUP, ends it:
 * SIGTERM to the group, SIGKILL 3 s later), and reads its figure
 * (abfigure.h) and counters: the host's (before and after) and the watch's.
 * The engine (ab.h) decides which trials to run and what they show; the
 * report (abreport.h) prints it.
 *
 * Threads: none; signal handlers are process-wide (abrun_stops_catch).
 */
#ifndef NODETUNE_ABRUN_H
#define NODETUNE_ABRUN_H

#include <regex.h>
#include <signal.h>
#include <stdbool.h>

#include "ab/ab.h"
#include "ab/abwatch.h"
#include "observe/tlb.h"

/* One trial, as the engine weighs it. */
struct ab_trial {
	int arm;                      /* 0: A, 1: B */
	double metric;                /* the figure, higher is better */
	double wall;                  /* seconds */
	struct abfigure_steps st;        /* the step report merged over ranks (st.n 0: none) */
	double counter[AB_COUNTERS];  /* rates per step (per s without steps); shares as they are */
	struct abwatch_trial watch;       /* what the watch saw (owned) */
};

/* Can the policy file path be applied by cfg's trials: it loads (trusted
 * as root), and stays within the site limits (cfg->limits: limits.h) on
 * the machine the trials apply to (cfg->sysroot, cfg->topology)?  The
 * check each trial makes again before it applies; the verbs make it for
 * every arm before anything runs.  0, or -errno with err: policy_load's
 * and limits_check_file's (-EPERM: beyond a limit, the key named). */
int abrun_policy_check(const struct ab_config *cfg, const char *path, struct nt_err *err);

/* Run one trial of arm a (cfg->arm[a]); index: its number in the
 * experiment (its files are trial-NNN-A...), or < 0 for the arm's warm-up;
 * want: the figure's source (the warm-up trials find it: pass ABFIGURE_WALL);
 * re: the compiled --metric (NULL without one); tlb: the host's TLB
 * shootdown source.  A counter this host cannot count is marked in
 * res->not_countable.  Returns 0 with *t filled (release with
 * abrun_trial_free); -errno with err for bad input, a policy that cannot
 * be applied or reverted, or a stop signal (-EINTR: the job was stopped
 * and its policy reverted); 1 when the arm's command failed (res->error
 * and res->error_msg filled, with the tail of its stderr).  *t must be
 * freed in every case. */
int abrun_trial(const struct ab_config *cfg, const regex_t *re, enum abfigure_source want,
		const struct tlb_counter *tlb, int a, int index, struct ab_trial *t, struct ab_result *res,
		struct nt_err *err);

/* Free what t holds (not t); a zeroed t is a no-op. */
void abrun_trial_free(struct ab_trial *t);

/* Catch the stops (SIGINT, SIGTERM, SIGHUP) while trials run, the old
 * handlers into old (restore false; this also clears a stop seen before),
 * or put the old ones back (restore true). */
void abrun_stops_catch(struct sigaction old[3], bool restore);

#endif
