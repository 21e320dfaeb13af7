/* SPDX-License-Identifier: MIT */
/* cmd_run.c — `nodetune run`: apply, start N bound local ranks (launch.h),
 * wait, revert. */
#include "cli.h"
#include "tune/launch.h"
#include "base/log.h"

static const struct opt_row run_opts[] = {
	/* checked in this order: --policy, --state-dir, then -n */
	{ OPT_POLICY, OPT_REQUIRED, NULL },
	{ OPT_STATE_DIR, OPT_OPTIONAL, NULL },
	{ OPT_RANKS, OPT_REQUIRED, "local ranks to start" },
	{ OPT_QUIET, OPT_OPTIONAL, "print only errors (not the changes, not the ranks' statuses)" },
	{ OPT_JSON, OPT_REFUSED, "run's standard output is the ranks' (nodetune's lines go to stderr): plan --json shows what it would do" },
	{ OPT_LIMITS, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec run_spec = {
	run_opts, VERB_COMMAND,
	"nodetune run -n N --policy FILE|NAME [--state-dir DIR] [--quiet]\n"
	"                    [--limits FILE] -- COMMAND [ARGS...]",
	"apply, start N bound local ranks, wait, revert",
	"Apply the host settings, start N local ranks of the command, each bound as\n"
	"`exec` would (LOCAL_RANK and LOCAL_WORLD_SIZE set), wait for all, revert, and\n"
	"exit with the worst status of the ranks.  SIGINT/SIGTERM are passed on to the\n"
	"ranks; the host is reverted either way.  A policy beyond the site limits\n"
	"(--limits FILE, default /etc/nodetune/limits.conf when it exists) is refused\n"
	"before anything changes (exit 2).  Standard output is the ranks' alone:\n"
	"what nodetune changed and restored, and its summary lines, go to stderr, and\n"
	"--json is refused (nodetune plan --json shows what run would do).",
};

int cmd_run(struct opts *o)
{
	struct nt_err err = { 0 };
	struct ctx x;
	int rc, worst = 0;

	if (!launch_command_found(o->command[0])) {
		log_msg(LOG_ERR, "%s: command not found", o->command[0]);
		return EXIT_USAGE;
	}
	rc = ctx_load(&x, o, o->ranks, true);
	if (rc >= 0)
		return rc;
	if (!fsroot_is_host(x.root)) {
		log_msg(LOG_ERR, "run starts ranks on this host: --sysroot/--topology are for plan and apply");
		ctx_release(&x);
		return EXIT_USAGE;
	}
	rc = cli_apply(&x, o, SAY_STDERR);
	if (rc) {
		ctx_release(&x);
		return rc;
	}
	if (launch_ranks(x.plan, o->command, cli_note, NULL, &worst, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		worst = EXIT_RUNTIME;
	}
	rc = cli_revert(o, SAY_STDERR);
	ctx_release(&x);
	if (rc)
		return rc;
	return finish_stdout(worst);
}
