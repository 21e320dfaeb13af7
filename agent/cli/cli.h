/* SPDX-License-Identifier: MIT */
/* cli.h — what the verbs of the nodetune command share: the exit codes of
 * DESIGN.md's contract, loading a policy verb's inputs, and writing the
 * result.  Each verb is one cmd_<verb>.c: its option table, its usage and
 * help, and its output; the work is libnodetune's.
 */
#ifndef NODETUNE_CLI_H
#define NODETUNE_CLI_H

#include <jansson.h>
#include <stdbool.h>

#include "ab/ab.h"
#include "base/fsroot.h"
#include "opts.h"
#include "tune/plan.h"
#include "tune/policy.h"
#include "machine/topo.h"

/* 0 success, 1 the check found a problem, 2 bad usage or input (nothing
 * changed), 3 runtime failure (what was changed is rolled back). */
enum { EXIT_PROBLEM = 1, EXIT_USAGE = 2, EXIT_RUNTIME = 3 };

/* Flush stdout and report a failed write (a full disk, a closed pipe):
 * then the exit code is 3, unless rc is already 2 or 3 (a result that
 * could not be written is not "a problem found", exit 1). */
int finish_stdout(int rc);

/* The exit code for a library error: out of memory, I/O, a busy or
 * interrupted resource, a result out of range are runtime failures (3);
 * anything else is bad usage or input (2). */
int exit_code_for(int err);

/* The etcd credentials of `fleet ...` and `daemon --fleet`:
 * /etc/nodetune/fleet.conf (--fleet-conf FILE: that one, which must exist)
 * with --cacert, --cert, --key, --user, --password-file over it.  0, or
 * EXIT_USAGE with the line said. */
struct fleet_creds;
int cli_fleet_creds(const struct opts *o, struct fleet_creds *ret);

/* This process is about to hold a secret (an etcd password, a signing
 * key): no core dump of it (PR_SET_DUMPABLE 0, and the soft RLIMIT_CORE
 * 0; the hard limit is kept, so a child may raise it again), and no
 * ptrace by another process of the same uid.  Its /proc/PID files become
 * root's (its own /proc/self still reads).  Once per process; a failure
 * is logged at debug and changes nothing else. */
void cli_guard_secrets(void);

/* The version of every --json document's shape: a document says
 * "schema": "nodetune.NAME/NT_JSON_VERSION" (docs/schema/NAME.schema.json). */
#define NT_JSON_VERSION 1

/* doc (consumed) as an object whose first key is "schema":
 * "nodetune.NAME/1", the rest as they were; NULL when doc is NULL, not an
 * object, or memory ran out. */
json_t *cli_schema_doc(const char *name, json_t *doc);

/* Write doc (consumed; NULL: out of memory), an object, to stdout,
 * indented, and a newline; its first key "schema": "nodetune.NAME/1" when
 * name is given (NULL: doc names its own schema, e.g. ab's report).  0, or
 * EXIT_RUNTIME (said, unless stdout failed: finish_stdout says that). */
int print_json(const char *name, json_t *doc);

/* Everything a policy verb works from. */
struct ctx {
	struct fsroot *root;     /* NULL for a foreign topology without --sysroot */
	struct policy *policy;
	struct topo *topo;
	struct plan *plan;
};

/* Load the policy (refusing untrusted files as root), the machine and,
 * with a policy, the plan for nranks local ranks (0: one per GPU, or 1);
 * the host's or --sysroot's fsroot when want_root.  Returns -1 to go on,
 * or an exit code (said; x released). */
int ctx_load(struct ctx *x, const struct opts *o, unsigned nranks, bool want_root);
void ctx_release(struct ctx *x);

/* A note_fn / watch note: log msg at level. */
void cli_note(int level, const char *msg, void *arg);

/* A policy file ab's trials under cfg may apply: it loads, and is within
 * the site limits (cfg->limits) on cfg's machine (abrun_policy_check).
 * 0, or an exit code (said as "WHAT: why": 2 for a bad or untrusted file
 * or a value beyond a limit). */
int cli_check_policy(const struct ab_config *cfg, const char *what, const char *policy);

/* An A/B arm can run: its policy as cli_check_policy says ("arm A: ..."),
 * its command exists.  0, or an exit code (said). */
int cli_check_arm(const struct ab_config *cfg, const struct ab_arm *arm);

/* Set cfg from the defaults (ab_config_defaults) and the A/B options the
 * user gave (--trials --steps --threshold --alpha --trim --budget --seed
 * --metric --metric-kind --skip-steps --limits). */
void cli_ab_config(const struct opts *o, struct ab_config *cfg);

/* The machine and the user of ab's trials under cfg, from --sysroot,
 * --topology (only with --sysroot) and --as-user; NODETUNE_SYSROOT set
 * for the job.  0, or EXIT_USAGE (said). */
int cli_ab_machine(const struct opts *o, struct ab_config *cfg);

/* The trial directory: --trial-dir's (made here, must not exist), else a
 * fresh /tmp/PREFIX-XXXXXX (ab_files_make).  0, or EXIT_RUNTIME (said). */
int cli_ab_files(const struct opts *o, const char *prefix, struct ab_files *f, struct ab_config *cfg);

/* Where apply's and revert's closing summary ("applied ...: 2 changes")
 * goes: stdout for apply and revert; stderr for run, whose stdout is the
 * job's; nowhere (a rollback after a failed write). */
enum say { SAY_STDOUT, SAY_STDERR, SAY_NOTHING };

/* Check x->policy against the site limits: --limits FILE, else
 * LIMITS_DEFAULT_PATH when it exists (tune/limits.h), trust-checked as
 * root (policy_trust_flags).  0, or an exit code (said): 2 for a policy
 * beyond them (the key and the limit named) or a bad limits file, 3 out
 * of memory. */
int cli_check_limits(const struct ctx *x, const struct opts *o);

/* Apply the host part of x->plan (cmd_apply.c; shared by apply and run),
 * after cli_check_limits.
 * Every change is logged (stderr); say is where the rest goes.  0, or an
 * exit code (said). */
int cli_apply(const struct ctx *x, const struct opts *o, enum say say);

/* The state dirs a journal may be in when --state-dir is not given:
 * nodetune apply's (JOURNAL_DEFAULT_DIR, /run/nodetune) and the daemon's
 * (DAEMON_DEFAULT_STATE_DIR, /var/lib/nodetune); NULL-terminated. */
extern const char *const cli_state_dirs[];

/* Revert what the journal in o->state_dir records (cmd_apply.c; shared by
 * revert, apply's rollback and run).  0, or an exit code (said). */
int cli_revert(const struct opts *o, enum say say);

/* The verbs, one per cmd_<verb>.c: the spec (options, usage, help) and
 * the function that runs it with the parsed options. */
#define VERB(v) extern const struct verb_spec v##_spec; int cmd_##v(struct opts *o)
VERB(discover);
VERB(plan);
VERB(keys);
VERB(apply);
VERB(revert);
VERB(verify);
VERB(exec);
VERB(run);
VERB(doctor);
VERB(ab);
VERB(observe);
VERB(bisect);
VERB(daemon);
VERB(status);
VERB(fleet_rollout);
VERB(fleet_resume);
VERB(fleet_timestamp);
VERB(fleet_abort);
VERB(fleet_status);
VERB(fleet_hosts);
VERB(fleet_keygen);
VERB(fleet_init_auth);
VERB(slurm);
VERB(policy_list);
VERB(policy_show);
VERB(policy_active);
VERB(policy_recommend);
VERB(policy_use);
#undef VERB

#endif
