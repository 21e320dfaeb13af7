/* SPDX-License-Identifier: MIT */
/* gates.c — see gates.h.
 *
 * Divisions: names; one assignment of a gate file; parsing; lookup (the
 * directory, the file, the user).
 */
#include "fleet/gates.h"
#include "fleet/gates_test.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/ini.h"
#include "base/parse.h"
#include "base/stats.h"
#include "base/userfile.h"
#include "tune/policy.h"

/* callers pass policy_trust_flags() */
_Static_assert(GATES_TRUSTED_ONLY == POLICY_TRUSTED_ONLY, "one trust flag");

/* ---- names ------------------------------------------------------------------- */

bool gates_name_valid(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-");

	return n >= 1 && n <= GATE_NAME_MAX && !s[n];
}

/* A user name as useradd takes it: [a-z_][a-z0-9_-]*, at most 32. */
static bool user_name_valid(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-");

	return n >= 1 && n <= GATE_USER_MAX && !s[n] && !(s[0] >= '0' && s[0] <= '9') && s[0] != '-';
}

/* ---- one assignment ---------------------------------------------------------- */

struct parse_state {
	const char *shown;
	struct gate g;
	int line_command, line_user, line_budget, line_alpha;
};

static int once(struct parse_state *st, int *seen, const char *key, int line, struct nt_err *err)
{
	if (*seen)
		return err_set(err, -EINVAL, "%s:%d: duplicate key '%s' (first set at line %d)", st->shown, line, key,
			       *seen);
	*seen = line;
	return 0;
}

static int set_budget(struct parse_state *st, const char *value, int line, struct nt_err *err)
{
	char expected[160];

	if (nt_duration_parse(value, 1, GATE_MAX_BUDGET_S, &st->g.budget_s) == 0)
		return 0;
	nt_duration_expected(1, GATE_MAX_BUDGET_S, expected, sizeof(expected));
	return err_set(err, -EINVAL, "%s:%d: budget '%.64s': expected %s", st->shown, line, value, expected);
}

/* A decimal probability in [STATS_ALPHA_MIN, STATS_ALPHA_MAX], as ab's
 * --alpha takes it. */
static int set_alpha(struct parse_state *st, const char *value, int line, struct nt_err *err)
{
	if (parse_double(value, STATS_ALPHA_MIN, STATS_ALPHA_MAX, &st->g.alpha) == 0)
		return 0;
	return err_set(err, -EINVAL, "%s:%d: alpha '%.64s': expected a probability from %g to %g", st->shown, line,
		       value, STATS_ALPHA_MIN, STATS_ALPHA_MAX);
}

/* An argument (or the command, at index 0). */
static int set_arg(struct parse_state *st, unsigned i, const char *value, int line, struct nt_err *err)
{
	if (i >= GATE_ARGS_MAX)
		return err_set(err, -EINVAL, "%s:%d: more than %d arguments", st->shown, line, GATE_ARGS_MAX - 1);
	st->g.argv[i] = strdup(value);
	return st->g.argv[i] ? 0 : err_set(err, -ENOMEM, "out of memory");
}

/* ini_fn: one "key = value" of a gate file into the parse_state at arg. */
static int on_assignment(const char *section, const char *key, const char *value, int line, void *arg,
			 struct nt_err *err)
{
	struct parse_state *st = arg;
	int r;

	if (section[0])
		return err_set(err, -EINVAL, "%s:%d: a gate file has no [sections]", st->shown, line);
	if (!strcmp(key, "command")) {
		if ((r = once(st, &st->line_command, key, line, err)) < 0)
			return r;
		if (value[0] != '/')
			return err_set(err, -EINVAL, "%s:%d: command '%.64s': expected an absolute path", st->shown,
				       line, value);
		return set_arg(st, 0, value, line, err);
	}
	if (!strcmp(key, "arg"))
		return set_arg(st, st->g.argc++ + 1, value, line, err);
	if (!strcmp(key, "user")) {
		if ((r = once(st, &st->line_user, key, line, err)) < 0)
			return r;
		if (!user_name_valid(value))
			return err_set(err, -EINVAL, "%s:%d: user '%.64s': expected a user name", st->shown, line,
				       value);
		snprintf(st->g.user, sizeof(st->g.user), "%s", value);
		return 0;
	}
	if (!strcmp(key, "budget")) {
		if ((r = once(st, &st->line_budget, key, line, err)) < 0)
			return r;
		return set_budget(st, value, line, err);
	}
	if (!strcmp(key, "alpha")) {
		if ((r = once(st, &st->line_alpha, key, line, err)) < 0)
			return r;
		return set_alpha(st, value, line, err);
	}
	return err_set(err, -EINVAL, "%s:%d: unknown key '%.64s' (command, arg, user, budget, alpha)", st->shown,
		       line, key);
}

/* ---- parsing ------------------------------------------------------------------- */

int gates_parse(const char *buf, size_t len, const char *shown, struct gate *ret, struct nt_err *err)
{
	struct parse_state st = { .shown = shown };
	int r;

	if (len > GATE_FILE_MAX)
		return err_set(err, -EFBIG, "%s: too large for a gate (%zu bytes, limit %u)", shown, len, GATE_FILE_MAX);
	snprintf(st.g.user, sizeof(st.g.user), "%s", GATE_DEFAULT_USER);
	st.g.budget_s = GATE_DEFAULT_BUDGET_S;
	r = ini_parse(shown, buf, len, on_assignment, &st, err);
	if (r == 0 && !st.line_command)
		r = err_set(err, -EINVAL, "%s: no 'command = /path' line", shown);
	if (r < 0) {
		gates_release(&st.g);       /* every slot that was filled */
		return r;
	}
	st.g.argc++;                         /* the command */
	*ret = st.g;
	return 0;
}

void gates_release(struct gate *g)
{
	for (unsigned i = 0; i < GATE_ARGS_MAX; i++)
		free(g->argv[i]);
	memset(g, 0, sizeof(*g));
}

/* ---- lookup ---------------------------------------------------------------------- */

static int check_trusted(const struct stat *st, char *why, size_t size)
{
	return userfile_check_root_owned(st, "a gate", why, size);
}

/* The gates directory itself, with GATES_TRUSTED_ONLY. */
static int check_dir(const char *dir, unsigned flags, struct nt_err *err)
{
	struct stat st;
	char why[320];
	int e;

	if (stat(dir, &st) < 0) {
		e = -errno;
		return err_set(err, e, "%s: %s", dir, nt_strerror(-e));
	}
	if ((flags & GATES_TRUSTED_ONLY) && userfile_check_root_owned(&st, "a gates directory", why, sizeof(why)) < 0)
		return err_set(err, -EPERM, "%s: %s", dir, why);
	return 0;
}

/* Resolve g->user into uid and gid: never root. */
static int resolve_user(struct gate *g, const char *path, struct nt_err *err)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int e = getpwnam_r(g->user, &pw, buf, sizeof(buf), &res);

	if (e || !res)
		return err_set(err, -ESRCH, "%s: user '%s' does not exist%s%s", path, g->user, e ? ": " : "",
			       e ? nt_strerror(e) : "");
	if (pw.pw_uid == 0)
		return err_set(err, -EPERM, "%s: user '%s' is root: a gate never runs as root", path, g->user);
	if (pw.pw_gid == 0)
		return err_set(err, -EPERM, "%s: user '%s' has primary group 0 (root's): a gate never runs with root's group",
			       path, g->user);
	g->uid = pw.pw_uid;
	g->gid = pw.pw_gid;
	return 0;
}

int gates_lookup(const char *dir, const char *name, unsigned flags, struct gate *ret, struct nt_err *err)
{
	char path[PATH_MAX], why[320], *buf = NULL;
	struct gate g = { 0 };
	size_t len = 0;
	int r;

	if (!gates_name_valid(name))
		return err_set(err, -EINVAL, "gate name '%.64s': expected 1 to 64 of a-z, 0-9, '_' and '-'", name);
	if ((r = check_dir(dir, flags, err)) < 0)
		return r;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.conf", dir, name) >= sizeof(path))
		return err_set(err, -EINVAL, "%s: path too long", dir);
	r = userfile_read(path, GATE_FILE_MAX, "a gate file", (flags & GATES_TRUSTED_ONLY) ? check_trusted : NULL,
			  &buf, &len, why, sizeof(why));
	if (r == -ENOENT)
		return err_set(err, -ENOENT, "unknown gate '%s' (no %s)", name, path);
	if (r < 0)
		return err_set(err, r, "%s: %s", path, why);
	r = gates_parse(buf, len, path, &g, err);
	free(buf);
	if (r == 0 && (r = resolve_user(&g, path, err)) < 0)
		gates_release(&g);
	if (r < 0)
		return r;
	snprintf(g.name, sizeof(g.name), "%s", name);
	*ret = g;
	return 0;
}
