/* SPDX-License-Identifier: MIT */
/* cmd_apply.c — `nodetune apply` and `nodetune revert`: a policy's host
 * settings, all or nothing, journaled; and their undo.  Also what run
 * shares with them: cli_apply and cli_revert, and how their reports read.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tune/apply.h"
#include "cli.h"
#include "tune/journal.h"
#include "tune/limits.h"
#include "base/log.h"

static const struct opt_row apply_opts[] = {
	{ OPT_POLICY, OPT_REQUIRED, NULL },
	{ OPT_RANKS, OPT_OPTIONAL, NULL },
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_SYNTHETIC, OPT_OPTIONAL, NULL },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_STATE_DIR, OPT_OPTIONAL, NULL },
	{ OPT_DRY_RUN, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	{ OPT_LIMITS, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec apply_spec = {
	apply_opts, VERB_NO_COMMAND,
	"nodetune apply --policy FILE|NAME [-n N]\n"
	"                      [--topology FILE.xml | --synthetic DESC] [--sysroot DIR]\n"
	"                      [--state-dir DIR] [--dry-run] [--json] [--limits FILE]",
	"apply a policy's host settings, all or nothing, journaled",
	"Write the policy's host settings (sysfs/procfs knobs, device IRQ affinities)\n"
	"and create its job cgroup.  Only values that differ are written; each original\n"
	"is journaled and fsync'd to --state-dir (default /run/nodetune) first; each\n"
	"write is read back.  On any failure everything is restored (exit 3).  Undo\n"
	"with `nodetune revert`, also after a crash.  --dry-run shows the changes.\n"
	"A policy beyond the site limits (--limits FILE, default\n"
	LIMITS_DEFAULT_PATH " when it exists; as root, a file owned by root\n"
	"and not writable by others) is refused, naming the key and the limit (exit 2).",
};

static const struct opt_row revert_opts[] = {
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_STATE_DIR, OPT_OPTIONAL, "the journal's state dir (default: the one of /run/nodetune and /var/lib/nodetune that has a journal)" },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec revert_spec = {
	revert_opts, VERB_NO_COMMAND,
	"nodetune revert [--sysroot DIR] [--state-dir DIR] [--json]",
	"restore everything the last apply (or the daemon) changed",
	"Restore, newest first, every value the journal records, delete the job cgroup,\n"
	"then the journal.  Works after the applying process was killed.  Without\n"
	"--state-dir it looks in both /run/nodetune (nodetune apply's) and\n"
	"/var/lib/nodetune (the daemon's, once the daemon is stopped) and reverts the one\n"
	"journal it finds; with one in each it asks which (--state-dir).",
};

/* ---- reports ------------------------------------------------------------ */

static void print_changes(const struct apply_changes *rep, const char *verb_done, enum say say)
{
	for (unsigned i = 0; i < rep->n; i++)
		log_msg(LOG_NOTICE, "%s%s: %s -> %s", strncmp(rep->changes[i].path, "cgroup:", 7) ? "/" : "",
			rep->changes[i].path, rep->changes[i].from[0] ? rep->changes[i].from : "-",
			rep->changes[i].to);
	for (unsigned i = 0; i < rep->n_notes; i++)
		log_msg(LOG_WARNING, "%s", rep->notes[i]);
	if (say == SAY_STDOUT)
		printf("%s: %u change%s\n", verb_done, rep->n, rep->n == 1 ? "" : "s");
	else if (say == SAY_STDERR)
		log_msg(LOG_NOTICE, "%s: %u change%s", verb_done, rep->n, rep->n == 1 ? "" : "s");
}

/* {"dry_run": dry_run, "changes": [{"path": "/sys/..." (from the root, as
 * the text shows it; "cgroup:NAME" for the job cgroup), "from", "to"}],
 * "notes": [...]}; NULL on out of memory. */
static json_t *changes_json(const struct apply_changes *rep, bool dry_run)
{
	json_t *arr = json_array(), *notes = json_array();

	for (unsigned i = 0; arr && i < rep->n; i++) {
		const char *path = rep->changes[i].path;
		bool file = strncmp(path, "cgroup:", 7) != 0;

		json_array_append_new(arr, json_pack("{s:s+, s:s, s:s}", "path", file ? "/" : "", path,
						     "from", rep->changes[i].from, "to", rep->changes[i].to));
	}
	for (unsigned i = 0; notes && i < rep->n_notes; i++)
		json_array_append_new(notes, json_string(rep->notes[i]));
	return json_pack("{s:b, s:o, s:o}", "dry_run", dry_run, "changes", arr, "notes", notes);
}

static void print_dry_run(const struct plan *pl, const struct apply_changes *rep)
{
	printf("dry run of %s: %u change%s, nothing written\n", pl->policy_path, rep->n, rep->n == 1 ? "" : "s");
	for (unsigned i = 0; i < rep->n; i++) {
		if (!strcmp(rep->changes[i].path, "cgroup"))
			printf("  job cgroup %s: would be created\n", rep->changes[i].to);
		else
			printf("  /%s: %s -> %s\n", rep->changes[i].path,
			       rep->changes[i].from[0] ? rep->changes[i].from : "?", rep->changes[i].to);
	}
	for (unsigned i = 0; i < rep->n_notes; i++)
		printf("  %s\n", rep->notes[i]);
}

/* ---- apply, revert ------------------------------------------------------ */

int cli_apply(const struct ctx *x, const struct opts *o, enum say say)
{
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	int r = cli_check_limits(x, o);

	if (r)
		return r;
	r = apply_plan(x->plan, x->root, o->state_dir, o->dry_run, &rep, &err);
	if (r < 0) {
		bool rolled_back = rep.rolled_back;   /* release clears it */

		for (unsigned i = 0; i < rep.n_notes; i++)
			log_msg(LOG_WARNING, "%s", rep.notes[i]);
		log_msg(LOG_ERR, "%s%s", err.msg, rolled_back ? " (everything changed was rolled back)" : "");
		apply_changes_release(&rep);
		return rolled_back || r == -EBUSY ? EXIT_RUNTIME : exit_code_for(r);
	}
	if (o->json && say == SAY_STDOUT) {
		if (!o->dry_run)   /* every host change is logged, JSON or not */
			print_changes(&rep, NULL, SAY_NOTHING);
		r = print_json("apply", changes_json(&rep, o->dry_run));
	} else if (o->dry_run && say == SAY_STDOUT) {
		print_dry_run(x->plan, &rep);
	} else {
		char done[600];
		bool custom = strcmp(o->state_dir, JOURNAL_DEFAULT_DIR) != 0;

		snprintf(done, sizeof(done), "applied %s (undo: nodetune revert%s%s)", x->plan->policy_path,
			 custom ? " --state-dir " : "", custom ? o->state_dir : "");
		print_changes(&rep, done, say);
	}
	apply_changes_release(&rep);
	return r;
}

int cli_revert(const struct opts *o, enum say say)
{
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	int r = apply_revert(o->state_dir, o->sysroot, &rep, &err);

	if (r < 0) {
		/* bad input (a journal or state dir not to be trusted, a
		 * --sysroot the journal was not written for) when nothing was
		 * restored yet; after a restore began, a runtime failure */
		bool bad_input = rep.n == 0 && (r == -EINVAL || r == -ENOTDIR || r == -EPERM || r == -EACCES ||
						 r == -ELOOP || r == -ENOENT);

		print_changes(&rep, NULL, SAY_NOTHING);
		log_msg(LOG_ERR, "%s", err.msg);
		apply_changes_release(&rep);
		return bad_input ? EXIT_USAGE : EXIT_RUNTIME;
	}
	if (o->json && say == SAY_STDOUT) {
		print_changes(&rep, NULL, SAY_NOTHING);
		r = print_json("revert", changes_json(&rep, false));
	} else {
		print_changes(&rep, "reverted", say);
	}
	apply_changes_release(&rep);
	return r;
}

int cmd_apply(struct opts *o)
{
	struct ctx x;
	int rc = ctx_load(&x, o, o->ranks, true);

	if (rc >= 0)
		return rc;
	if (!x.root) {
		log_msg(LOG_ERR, "--topology/--synthetic describe another machine: apply needs this host or --sysroot DIR");
		ctx_release(&x);
		return EXIT_USAGE;
	}
	rc = cli_apply(&x, o, SAY_STDOUT);
	ctx_release(&x);
	errno = 0;
	if (rc == 0 && !o->dry_run && (fflush(stdout) != 0 || ferror(stdout))) {
		/* whoever reads the result (a --json consumer) cannot learn
		 * what was applied: all or nothing, so nothing */
		log_msg(LOG_ERR, "writing standard output failed%s%s; rolling back", errno ? ": " : "",
			errno ? nt_strerror(errno) : "");
		if (cli_revert(o, SAY_NOTHING) == 0)
			log_msg(LOG_ERR, "everything changed was rolled back");
		return EXIT_RUNTIME;
	}
	return finish_stdout(rc);
}

/* Without --state-dir: the one default state dir that holds a journal
 * (nodetune apply's or the daemon's) into o->state_dir.  0, or EXIT_USAGE
 * (said) when both do. */
static int find_journal(struct opts *o)
{
	const char *found[2] = { NULL, NULL };
	size_t n = 0;

	for (const char *const *dir = cli_state_dirs; *dir && n < 2; dir++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/journal", *dir);
		if (access(path, F_OK) == 0)
			found[n++] = *dir;
	}
	if (n == 2) {
		log_msg(LOG_ERR, "journals in both %s (nodetune apply's) and %s (the daemon's): give --state-dir DIR "
				 "for the one to revert", found[0], found[1]);
		return EXIT_USAGE;
	}
	if (n == 0) {
		log_msg(LOG_NOTICE, "no journal in %s (nodetune apply's) or %s (the daemon's)", cli_state_dirs[0],
			cli_state_dirs[1]);
		return 0;
	}
	if (strcmp(found[0], o->state_dir))
		log_msg(LOG_NOTICE, "reverting the journal in %s", found[0]);
	o->state_dir = found[0];
	return 0;
}

int cmd_revert(struct opts *o)
{
	int rc = o->given[OPT_STATE_DIR] ? 0 : find_journal(o);

	return rc ? rc : finish_stdout(cli_revert(o, SAY_STDOUT));
}
