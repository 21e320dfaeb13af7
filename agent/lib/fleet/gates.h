/* SPDX-License-Identifier: MIT */
/* gates.h — the named gates of a host: what a rollout's `--gate NAME`
 * runs there.  No command string travels through the store; a host maps
 * the name to a command it keeps in a root-owned file,
 * /etc/nodetune/gates.d/NAME.conf (NAME: [a-z0-9_-], 1 to 64):
 *
 *   # the canary gate "steps20"
 *   command = /usr/local/bin/nodetune-harness   absolute path, required
 *   arg = --steps                               one line per argument, in
 *   arg = 20                                    order (no shell, no splitting)
 *   user = nobody                               runs as (default nobody; never root
 *                                               nor a user whose primary group is 0)
 *   budget = 2m                                 a duration, 1s..1h (default 5m): the
 *                                               cap on a rollout's gate budget
 *   alpha = 0.01                                the A/B's false-alarm rate (ab --alpha),
 *                                               1e-06..0.5 (default ab's, 0.05): the
 *                                               chance that a policy that changes
 *                                               nothing fails this gate
 *
 * "key = value" lines with '#' comments (ini.h's syntax, no [section]); a
 * value is trimmed of blanks at both ends, so an argument cannot start or
 * end with one.  Anything else is refused as "file:line: what".
 */
#ifndef NODETUNE_GATES_H
#define NODETUNE_GATES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/log.h"

#define GATES_DIR "/etc/nodetune/gates.d"
#define GATE_NAME_MAX 64               /* without the NUL */
#define GATE_ARGS_MAX 64               /* argv entries, the command included */
#define GATE_USER_MAX 32               /* without the NUL */
#define GATE_DEFAULT_USER "nobody"
#define GATE_DEFAULT_BUDGET_S 300.0
#define GATE_MAX_BUDGET_S 3600.0
#define GATE_FILE_MAX (64u << 10)

/* Trust flag of gates_lookup: refuse a gates directory or file not owned
 * by root or writable by group or others (the value of
 * POLICY_TRUSTED_ONLY: pass policy_trust_flags()). */
#define GATES_TRUSTED_ONLY 0x1

struct gate {
	char name[GATE_NAME_MAX + 1];      /* "" after gates_parse */
	char *argv[GATE_ARGS_MAX + 1];     /* owned; argv[0] the command; NULL-terminated */
	unsigned argc;
	char user[GATE_USER_MAX + 1];
	uid_t uid;                         /* gates_lookup resolves user; 0 after gates_parse */
	gid_t gid;
	double budget_s;
	double alpha;                      /* ab's --alpha; 0: ab's default */
};

/* Is s a valid gate name ([a-z0-9_-]{1,64})? */
bool gates_name_valid(const char *s);

/* The gate called name in dir (GATES_DIR in production): read
 * dir/name.conf, parse it, resolve its user.  Returns 0 and fills *ret;
 * or with err: -EINVAL (a malformed name, or content), -ENOENT (no such
 * gate: "unknown gate 'NAME' (no DIR/NAME.conf)"), -EPERM (the directory
 * or file is untrusted, or the user is root or of primary group 0),
 * -ESRCH (the user does not exist), -EACCES, -ENOMEM.  *ret untouched on
 * error. */
int gates_lookup(const char *dir, const char *name, unsigned flags, struct gate *ret, struct nt_err *err);

/* Free what g owns and zero it; a zeroed gate is a no-op. */
void gates_release(struct gate *g);

#endif
