/* SPDX-License-Identifier: MIT */
/* fleet_gate.h — a canary's gate: an A/B test of the policy it runs
 * against the one a rollout brings, on the job of a named gate (gates.h),
 * by `nodetune ab` (this very binary, /proc/self/exe) in a child process
 * that the daemon's loop watches (it never waits for it):
 *
 *   nodetune ab --a policy=CURRENT --b policy=NEW [--sysroot DIR]
 *               [--topology FILE.xml] --budget SECONDS --trial-dir DIR --json
 *               --as-user USER -- COMMAND ARG...
 *
 * No shell: the gate file's command and arguments are the job's argv, and
 * the job runs as the gate's user (never root) in ab's trial cgroup.  Under
 * systemd as PID 1, with the daemon in a service, ab runs as a transient
 * service of its own (tune/sdunit.h), outside the daemon's sandbox, bound
 * to the daemon's unit; elsewhere it is the daemon's child, which gets
 * SIGTERM when the daemon dies (PR_SET_PDEATHSIG).  Either way a stopped ab
 * stops the job and reverts its arm, and ab owns nothing of the daemon's:
 * a session of its own (the child: child.h; the unit: systemd's) with
 * stdin from /dev/null, its stdout a pipe to the daemon, its stderr the
 * daemon's, and no other fd: the store's connections, the journal and the
 * status socket stay the daemon's.  ab keeps its per-trial journal in
 * TRIAL_DIR/state, under the daemon's state dir, so that a daemon started
 * after one that died mid-gate finds it and puts the host back
 * (fleet_gate_recover) before it applies its own policy.
 */
#ifndef NODETUNE_FLEET_GATE_H
#define NODETUNE_FLEET_GATE_H

#include "fleet/fleet.h"

#define FLEET_GATE_DIR "gate"         /* the trial dir, in the daemon's state dir */
#define FLEET_GATE_REPORT "gate-report.json"  /* the last gate's whole ab report, beside it */

struct fleet_gate_request {
	const char *current;          /* policy files: what runs (arm A) */
	const char *candidate;        /* and what the rollout brings (arm B) */
	char *const *argv;            /* the gate's job: argv[0] an absolute path, NULL-terminated */
	const char *user;             /* the gate's user (ab --as-user); NULL: ab's own (tests of ab only) */
	double budget_s;              /* ab's --budget; 0: ab's default */
	const char *sysroot, *topology;  /* NULL: the live host */
	const char *trial_dir;        /* ab's --trial-dir (made by ab; must not exist) */
	const char *report;           /* where ab's whole JSON report is kept when it ends (0600,
				       * replaced each gate); NULL: not kept */
	const char *limits;           /* ab's --limits, the daemon's site limits; NULL: ab's default */
	double alpha;                 /* ab's --alpha (the gate file's); 0: ab's default */
};

struct fleet_gate_result {
	char verdict[24];             /* regression, improvement, no-difference, inconclusive */
	double ratio, ci_lo, ci_hi;   /* B over A */
	char explanation[FLEET_TEXT_MAX];
};

struct fleet_gate;                /* a gate running */

/* Start the gate: ab as a transient service (sdunit_own) or a child.  0
 * with *ret; or -errno with err (nothing runs then). */
int fleet_gate_start(const struct fleet_gate_request *q, struct fleet_gate **ret, struct nt_err *err);

/* The end of ab's stdout that the caller polls (non-blocking): readable
 * when ab wrote or ended. */
int fleet_gate_fd(const struct fleet_gate *g);

/* Read what ab wrote so far, without blocking.  0: it still runs; 1: it
 * ended and *ret holds its verdict; -errno with err: it ended without one
 * (it failed, its output is not the JSON expected, or too large).  After
 * 1 or -errno, g is done: free it with fleet_gate_free. */
int fleet_gate_step(struct fleet_gate *g, struct fleet_gate_result *ret, struct nt_err *err);

/* Stop a gate still running (SIGTERM to ab, which stops the job and
 * reverts its arm; SIGKILL after 10 s, or its unit's TimeoutStopSec=),
 * reap it or wait for its unit, free g.  NULL: no-op. */
void fleet_gate_free(struct fleet_gate *g);

/* A gate that a dead daemon left in trial_dir: wait (up to wait_s) for an
 * ab still reverting it to let go of its journal's lock, revert what its
 * journal still holds, and remove trial_dir.  Returns the number of
 * settings restored (0: none, or no such dir); -errno with err when the
 * journal could not be reverted (kept then). */
int fleet_gate_recover(const char *trial_dir, const char *sysroot, double wait_s, struct nt_err *err);

/* The one version of ab's report (`nodetune ab --json`, ABREPORT_SCHEMA)
 * the gate reads: its "schema", "verdict" ("error" with "error"), "ratio",
 * "ci_low", "ci_high", "explanations"[].counter and .mechanism
 * (docs/schema/ab.schema.json; tests/unit/fleet/test_fleet_gate.c pins both
 * sides). */
#define FLEET_GATE_AB_SCHEMA "nodetune.ab/1"

#endif
