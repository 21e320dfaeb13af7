/* SPDX-License-Identifier: MIT */
/* cmd_ab.c — `nodetune ab`: an A/B test of two policies or commands with
 * statistics (ab.h runs it; this checks the arms first and prints). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ab/ab.h"
#include "ab/abreport.h"
#include "cli.h"
#include "base/log.h"
#include "ab/html.h"

static const struct opt_row ab_opts[] = {
	{ OPT_A, OPT_REQUIRED, NULL },
	{ OPT_B, OPT_REQUIRED, NULL },
	{ OPT_TRIALS, OPT_OPTIONAL, NULL },
	{ OPT_STEPS, OPT_OPTIONAL, NULL },
	{ OPT_THRESHOLD, OPT_OPTIONAL, NULL },
	{ OPT_ALPHA, OPT_OPTIONAL, NULL },
	{ OPT_TRIM, OPT_OPTIONAL, NULL },
	{ OPT_BUDGET, OPT_OPTIONAL, NULL },
	{ OPT_SEED, OPT_OPTIONAL, NULL },
	{ OPT_METRIC, OPT_OPTIONAL, NULL },
	{ OPT_METRIC_KIND, OPT_OPTIONAL, NULL },
	{ OPT_SKIP_STEPS, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	{ OPT_REPORT, OPT_OPTIONAL, NULL },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_AS_USER, OPT_OPTIONAL, NULL },
	{ OPT_TRIAL_DIR, OPT_OPTIONAL, NULL },
	{ OPT_LIMITS, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec ab_spec = {
	ab_opts, VERB_COMMAND_OPTIONAL,
	"nodetune ab --a SPEC --b SPEC [--trials N] [--steps N] [--threshold PCT]\n"
	"                   [--alpha A] [--trim PCT] [--budget DURATION] [--seed N]\n"
	"                   [--metric REGEX [--metric-kind throughput|time]]\n"
	"                   [--skip-steps N] [--json] [--report FILE.html]\n"
	"                   [--sysroot DIR [--topology FILE.xml]] [--trial-dir DIR]\n"
	"                   [--limits FILE] [--as-user USER -- CMD...] [-- CMD...]",
	"A/B test two policies or commands (exit 1 on regression)",
	"SPEC is policy=FILE|NAME, cmd=COMMAND ARGS or both.  Trials run in randomized\n"
	"ABBA blocks, each under its arm's policy (held to the site limits), applied and\n"
	"reverted around it, in a cgroup of its own.  A trial's figure: --metric, else\n"
	"the job's step reports, else 1 / wall time.  The verdict (regression,\n"
	"improvement, no-difference, inconclusive) is a trimmed t interval of B/A\n"
	"against --threshold.  The default job is nodetune-harness under mpirun.  Ctrl-C\n"
	"reverts and exits 3.  More in nodetune(8).",
};

/* An output file named by opt: not a directory, in a directory that exists
 * and is writable, so that an experiment of minutes does not end in a
 * failed write.  0, or EXIT_USAGE (said). */
static int check_output_path(const char *opt, const char *path)
{
	const char *slash = strrchr(path, '/'), *why = NULL;
	char dir[4096];
	struct stat st;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		log_msg(LOG_ERR, "%s %s: is a directory", opt, path);
		return EXIT_USAGE;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
	if (stat(dir, &st) < 0 || access(dir, W_OK) < 0)
		why = nt_strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		why = "not a directory";
	if (why) {
		log_msg(LOG_ERR, "%s %s: cannot write in %s: %s", opt, path, dir, why);
		return EXIT_USAGE;
	}
	return 0;
}

/* The arms from --a, --b and the command; checked before anything runs.
 * 0, or an exit code (said). */
static int ab_arms(const struct opts *o, struct ab_config *cfg)
{
	struct nt_err err = { 0 };
	int rc = 0;

	snprintf(cfg->arm[0].name, 2, "A");
	snprintf(cfg->arm[1].name, 2, "B");
	if (ab_parse_spec(o->spec_a, &cfg->arm[0], &err) || ab_parse_spec(o->spec_b, &cfg->arm[1], &err)) {
		log_msg(LOG_ERR, "%s", err.msg);
		return EXIT_USAGE;
	}
	if (ab_default_command(cfg, o->command) < 0) {
		log_msg(LOG_ERR, "out of memory");
		return EXIT_RUNTIME;
	}
	if (o->report && (rc = check_output_path("--report", o->report)))
		return rc;
	for (int a = 0; a < 2 && !rc; a++)
		rc = cli_check_arm(cfg, &cfg->arm[a]);
	return rc;
}

/* The result: the report file, stdout, and the exit code. */
static int ab_output(const struct opts *o, const struct ab_config *cfg, const struct ab_result *res)
{
	struct nt_err err = { 0 };
	int rc = 0;

	if (o->report && html_ab_write(o->report, cfg, res, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = EXIT_RUNTIME;
	}
	if (o->json) {
		int pr = print_json(NULL, abreport_json(cfg, res));

		rc = pr ? pr : rc;
	} else if (abreport_print(stdout, cfg, res) < 0) {
		rc = EXIT_RUNTIME;
	}
	if (res->error) {
		log_msg(LOG_ERR, "%s (nothing is left applied; trial outputs in %s)", res->error_msg, cfg->work_dir);
		rc = EXIT_RUNTIME;
	} else if (!rc && res->verdict == VERDICT_REGRESSION) {
		rc = EXIT_PROBLEM;
	}
	return rc;
}

int cmd_ab(struct opts *o)
{
	struct ab_config cfg = { 0 };
	struct ab_result res = { 0 };
	struct ab_files files;
	struct nt_err err = { 0 };
	int rc;

	cli_ab_config(o, &cfg);
	if ((rc = cli_ab_machine(o, &cfg)))
		return rc;
	if ((rc = ab_arms(o, &cfg)) || (rc = cli_ab_files(o, "nodetune-ab", &files, &cfg)))
		goto out;
	if (ab_run(&cfg, &res, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = exit_code_for(err.code);
		ab_files_remove(files.work);
		goto out;
	}
	rc = ab_output(o, &cfg, &res);
	if (!res.error)   /* kept only when an arm failed, for its outputs */
		ab_files_remove(files.work);
out:
	ab_result_release(&res);
	ab_arm_release(&cfg.arm[0]);
	ab_arm_release(&cfg.arm[1]);
	return finish_stdout(rc);
}
