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
	"nodetune ab --a SPEC --b SPEC [--trials N] [--steps N] [--threshold PCT] [--alpha A]\n"
	"                   [--trim PCT] [--budget DURATION] [--seed N]\n"
	"                   [--metric REGEX [--metric-kind throughput|time]] [--skip-steps N]\n"
	"                   [--json] [--report FILE.html]\n"
	"                   [--sysroot DIR [--topology FILE.xml]] [--trial-dir DIR] [--limits FILE]\n"
	"                   [--as-user USER -- CMD...] [-- CMD...]",
	"A/B test two policies or commands with statistics (exit 1 on regression)",
	"SPEC is policy=FILE, cmd=COMMAND ARGS (last; split on spaces, no shell) or both,\n"
	"comma-separated.  Default workload: nodetune-harness (dlrm-small, world 2 through\n"
	"mpirun, each rank bound by `nodetune exec` under the arm's policy).  Trials run\n"
	"in randomized ABBA blocks (--trials per arm, default 8), each under its arm's\n"
	"policy, applied and reverted around the trial, in a cgroup of its own.  Each\n"
	"arm's policy is held to the site limits (--limits FILE, else\n"
	"/etc/nodetune/limits.conf when it exists) before anything runs, as by apply.\n"
	"The figure of a trial: --metric REGEX (one capture group, matched on each line\n"
	"of the job's stdout, else stderr; the median; --metric-kind time: lower is\n"
	"better), else the job's step reports (each trial gets NODETUNE_STEP_FILE and\n"
	"NODETUNE_STEP_FD: one JSON line {\"step\": N, \"t\": SECONDS, ...} per step and\n"
	"rank; see contrib/python/nodetune_steps.py; the steps numbered below\n"
	"--skip-steps, default 1, are dropped), else 1 / wall time; the report says which.\n"
	"Verdict from a trimmed t interval (Yuen's; --trim, default 10% of the pairs\n"
	"cut from each end) over the pairs' B/A against --threshold (default\n"
	"2%): regression, improvement, no-difference, or inconclusive (more blocks while\n"
	"--budget lasts, default 300 s; refused, with the budget needed, when the noise\n"
	"cannot be judged within it).  Also: the Hodges-Lehmann shift of step times,\n"
	"stalls, phases and rank skew, counters ranked by evidence (claimed only beyond\n"
	"their A/A noise; the trial cgroup's throttling, memory events, PSI and perf\n"
	"events), and the evidence: other tasks, IRQs and softirqs on the ranks' CPUs,\n"
	"by pid, name, policy and share.  --report writes a self-contained HTML page.\n"
	"--sysroot: the trials apply to that tree (a simulated host; --topology its\n"
	"machine), and the job finds it in NODETUNE_SYSROOT.  --as-user USER: the job\n"
	"runs as USER (never root nor group 0; its primary group only, no new\n"
	"privileges; killed if ab dies), moved into its trial cgroup first.  Every job\n"
	"runs in a session of its own (no terminal), stdin /dev/null, no fd of ab's but\n"
	"the step report's.  --trial-dir DIR: the trials' outputs and their\n"
	"journal go to DIR (made fresh, 0700; removed at the end unless an arm failed).\n"
	"Ctrl-C stops the job, reverts its policy and\n"
	"exits 3.",
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
		int pr = print_json(abreport_json(cfg, res));

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
