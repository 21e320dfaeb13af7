/* fleet_gate.h — a canary's gate: an A/B test of the policy it runs
 * against the one a rollout brings, on a real job, by `nodetune ab` (this
 * very binary, /proc/self/exe) in a child process:
 *
 *   nodetune ab --a policy=CURRENT --b policy=NEW [--sysroot DIR]
 *               [--topology XML] --budget SECONDS --json -- sh -c CMD
 *
 * with NODETUNE_SYSROOT set for the job when the host is simulated.  ab
 * applies each arm's policy for its trials and puts the host back after;
 * the gate reads its verdict, ratio, confidence interval and explanation
 * from ab's JSON.  ab keeps its per-trial journal in its own trial directory
 * (ab has no --state-dir); state_dir holds the two policy files.
 */
#ifndef NODETUNE_FLEET_GATE_H
#define NODETUNE_FLEET_GATE_H

#include "fleet/fleet.h"

struct fleet_gate_request {
	const char *current;          /* policy files: what runs (arm A) */
	const char *candidate;        /* and what the rollout brings (arm B) */
	const char *cmd;              /* the job, run by sh -c */
	double budget_s;              /* ab's --budget; 0: ab's default */
	const char *sysroot, *topology;  /* NULL: the live host */
	const char *state_dir;        /* unused by ab (its journal is in its trial directory) */
};

struct fleet_gate_result {
	char verdict[24];             /* regression, improvement, no-difference, inconclusive */
	double ratio, ci_lo, ci_hi;   /* B over A */
	char explanation[FLEET_TEXT_MAX];
};

/* Run the gate.  0 with *ret; or -errno with err (ab could not start, it
 * failed, its output is not the JSON expected); *ret untouched then. */
int fleet_gate_run(const struct fleet_gate_request *q, struct fleet_gate_result *ret, struct nt_err *err);

/* ab's JSON report (untrusted text) into *ret.  0 or -EINVAL with err. */
int fleet_gate_parse(const char *buf, size_t len, struct fleet_gate_result *ret, struct nt_err *err);

#endif
