/* opts.c — the option definitions and the parser every verb shares (see
 * opts.h).
 *
 * Divisions: value parsers; the definitions; checks after parsing; the
 * command after "--"; help; opts_parse; the global options before the verb;
 * opts_dump (the tables, for the man page check and the bash completion).
 */
#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ab/abfigure.h"
#include "cli.h"
#include "daemon/flap.h"
#include "fleet/fleet_doc.h"
#include "fleet/gates.h"
#include "tune/journal.h"
#include "base/log.h"
#include "daemon/metrics.h"
#include "base/parse.h"
#include "tune/plan.h"

struct opt_def;

/* Check val and store it at dst.  0, or -EINVAL (said). */
typedef int (*opt_parse_fn)(const struct opt_def *d, const char *val, void *dst);

/* Check, once all options are parsed, what this option means together
 * with others.  0, or EXIT_USAGE (said). */
typedef int (*opt_check_fn)(const struct opts *o);

#define AB_ARMS_REQUIRED "--a SPEC and --b SPEC are required (policy=FILE, cmd=COMMAND, or both)"
#define BISECT_POLICIES_REQUIRED "--good POLICY and --bad POLICY are required"

struct opt_def {
	const char *name;             /* long name, without "--" */
	const char *alias;            /* an old long name that means the same, NULL none */
	char letter;                  /* short option, 0 none */
	bool takes_value;
	bool is_path;                 /* an empty value is refused */
	bool global;                  /* every verb takes it (and nodetune before the verb) */
	opt_parse_fn parse;
	double min, max;              /* the range of a number (a duration: in seconds) */
	const char *unit;             /* a decimal number: "seconds", "a probability" */
	double scale;                 /* a duration: what a bare number counts, in seconds */
	size_t offset;                /* where in struct opts it is stored */
	const char *arg;              /* the value's name in help ("FILE"), NULL for a flag */
	const char *help;             /* one line for VERB --help (a verb's row may say its own) */
	const char *required;         /* the message when a verb requires it and it is missing */
	opt_check_fn check;
};

/* ---- value parsers ------------------------------------------------------ */

/* A whole number in [min, max] (parse_u64: digits only, no sign, no
 * spaces, no trailing garbage).  0, or -EINVAL (said). */
static int opt_uint(const char *opt, const char *val, unsigned min, unsigned max, unsigned *ret)
{
	uint64_t v;

	if (parse_u64(val, max, &v) < 0 || v < min) {
		log_msg(LOG_ERR, "%s '%s': expected a whole number from %u to %u", opt, val, min, max);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* A finite decimal number in [min, max] (strtod + end pointer + range; no
 * leading space, no trailing garbage, no inf/nan).  unit describes it in
 * the message ("seconds", "a number").  0, or -EINVAL (said). */
static int opt_double(const char *opt, const char *val, double min, double max, const char *unit, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (!(val[0] == '.' || val[0] == '-' || val[0] == '+' || (val[0] >= '0' && val[0] <= '9')) ||
	    end == val || *end || errno == ERANGE || !(v >= min && v <= max)) {
		log_msg(LOG_ERR, "%s '%s': expected %s from %.10g to %.10g", opt, val, unit, min, max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static const char *dashed(const struct opt_def *d, char *buf, size_t size)
{
	snprintf(buf, size, "--%s", d->name);
	return buf;
}

static int parse_flag(const struct opt_def *d, const char *val, void *dst)
{
	(void)d, (void)val;
	*(bool *)dst = true;
	return 0;
}

static int parse_string(const struct opt_def *d, const char *val, void *dst)
{
	(void)d;
	*(const char **)dst = val;
	return 0;
}

static int parse_uint(const struct opt_def *d, const char *val, void *dst)
{
	char name[40];

	return opt_uint(dashed(d, name, sizeof(name)), val, (unsigned)d->min, (unsigned)d->max, dst);
}

static int parse_double(const struct opt_def *d, const char *val, void *dst)
{
	char name[40];

	return opt_double(dashed(d, name, sizeof(name)), val, d->min, d->max, d->unit, dst);
}

/* A duration as people write one: "250ms", "1.5s", "5m", "2h". */
static void format_duration(double sec, char *buf, size_t size)
{
	if (sec < 1)
		snprintf(buf, size, "%gms", sec * 1e3);
	else if (sec < 60 || sec != (long long)(sec / 60) * 60.0)
		snprintf(buf, size, "%gs", sec);
	else if (sec < 3600 || sec != (long long)(sec / 3600) * 3600.0)
		snprintf(buf, size, "%gm", sec / 60);
	else
		snprintf(buf, size, "%gh", sec / 3600);
}

/* A duration (parse_duration: a number and ms, s, m or h; a bare number
 * counts d->scale seconds) within [d->min, d->max] seconds, into *ret_s.
 * 0, or -EINVAL (said, with the range and what a bare number counts). */
static int duration(const struct opt_def *d, const char *val, double *ret_s)
{
	char lo[32], hi[32];

	if (parse_duration(val, d->scale, d->min, d->max, ret_s) == 0)
		return 0;
	format_duration(d->min, lo, sizeof(lo));
	format_duration(d->max, hi, sizeof(hi));
	log_msg(LOG_ERR, "--%s '%s': expected a duration from %s to %s (e.g. 100ms, 30s, 5m; a bare number counts %s)",
		d->name, val, lo, hi, d->scale < 1 ? "milliseconds" : "seconds");
	return -EINVAL;
}

/* A duration stored as seconds (double). */
static int parse_seconds(const struct opt_def *d, const char *val, void *dst)
{
	return duration(d, val, dst);
}

/* A duration stored as whole milliseconds (unsigned). */
static int parse_millis(const struct opt_def *d, const char *val, void *dst)
{
	double v;

	if (duration(d, val, &v) < 0)
		return -EINVAL;
	*(unsigned *)dst = (unsigned)(v * 1e3 + 0.5);
	return 0;
}

/* -v: debug lines from here on (before the rest of the line is parsed). */
static int parse_verbose(const struct opt_def *d, const char *val, void *dst)
{
	parse_flag(d, val, dst);
	log_set_level(LOG_DEBUG);
	return 0;
}

/* --log-format text|syslog, in force from here on. */
static int parse_log_format(const struct opt_def *d, const char *val, void *dst)
{
	if (strcmp(val, "text") && strcmp(val, "syslog")) {
		log_msg(LOG_ERR, "--%s '%s': expected text or syslog (default: syslog under journald, else text)",
			d->name, val);
		return -EINVAL;
	}
	log_set_syslog(!strcmp(val, "syslog"));
	*(const char **)dst = val;
	return 0;
}

/* A percentage, stored as a fraction. */
static int parse_percent(const struct opt_def *d, const char *val, void *dst)
{
	double v;

	if (parse_double(d, val, &v) < 0)
		return -EINVAL;
	*(double *)dst = v / 100;
	return 0;
}

/* A generator seed: from 1 (0 would be a degenerate generator state). */
static int parse_seed(const struct opt_def *d, const char *val, void *dst)
{
	unsigned s32;

	if (parse_uint(d, val, &s32) < 0)
		return -EINVAL;
	*(unsigned long long *)dst = s32;
	return 0;
}

/* PID[,PID...]: each a process id, no empty items. */
static int parse_pids(const struct opt_def *d, const char *val, void *dst)
{
	struct opt_pids *pids = dst;
	const char *p = val;

	do {
		size_t n = strcspn(p, ",");
		char item[16];
		unsigned pid;

		if (n == 0 || n >= sizeof(item)) {
			log_msg(LOG_ERR, "--%s '%s': expected process ids separated by commas", d->name, val);
			return -EINVAL;
		}
		snprintf(item, sizeof(item), "%.*s", (int)n, p);
		if (parse_uint(d, item, &pid) < 0)
			return -EINVAL;
		if (pids->n == SAMPLER_MAX_PIDS) {
			log_msg(LOG_ERR, "--%s: at most %d processes", d->name, SAMPLER_MAX_PIDS);
			return -EINVAL;
		}
		pids->pid[pids->n++] = (int)pid;
		p += n;
	} while (*p++ == ',');
	return 0;
}

/* ---- checks after parsing ---------------------------------------------- */

static int check_machine(const struct opts *o)
{
	if (o->topology && o->synthetic) {
		log_msg(LOG_ERR, "--topology and --synthetic are mutually exclusive");
		return EXIT_USAGE;
	}
	return 0;
}

static int check_sysroot(const struct opts *o)
{
	struct stat st;

	if (stat(o->sysroot, &st) < 0) {
		log_msg(LOG_ERR, "--sysroot %s: %s", o->sysroot, nt_strerror(errno));
		return EXIT_USAGE;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_msg(LOG_ERR, "--sysroot %s: not a directory", o->sysroot);
		return EXIT_USAGE;
	}
	return 0;
}

/* a state dir that does not exist yet is made by apply; one that is
 * something else is a mistake */
static int check_state_dir(const struct opts *o)
{
	struct stat st;

	if (stat(o->state_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		log_msg(LOG_ERR, "--state-dir %s: not a directory", o->state_dir);
		return EXIT_USAGE;
	}
	return 0;
}

static int check_flap(const struct opts *o)
{
	unsigned n;
	double w;

	if (flap_parse(o->flap, &n, &w) < 0) {
		log_msg(LOG_ERR, "--flap '%s': expected N/SECONDS, N from 1 to 1000 drifts within SECONDS (e.g. 3/600)",
			o->flap);
		return EXIT_USAGE;
	}
	return 0;
}

/* --metric compiles, with one capture group; --metric-kind is a direction
 * and needs --metric. */
static int check_metric(const struct opts *o)
{
	struct nt_err err = { 0 };
	regex_t re;

	if (o->metric) {
		if (abfig_metric_compile(o->metric, &re, &err) < 0) {
			log_msg(LOG_ERR, "%s", err.msg);
			return EXIT_USAGE;
		}
		regfree(&re);
	}
	if (o->metric_kind && strcmp(o->metric_kind, "throughput") && strcmp(o->metric_kind, "time")) {
		log_msg(LOG_ERR, "--metric-kind '%s': expected throughput (higher is better) or time (lower is better)",
			o->metric_kind);
		return EXIT_USAGE;
	}
	if (o->metric_kind && !o->metric) {
		log_msg(LOG_ERR, "--metric-kind needs --metric REGEX");
		return EXIT_USAGE;
	}
	return 0;
}

static int check_metrics(const struct opts *o)
{
	struct sockaddr_storage sa;
	socklen_t len;
	struct nt_err err = { 0 };

	if (o->no_metrics) {
		log_msg(LOG_ERR, "--metrics and --no-metrics are mutually exclusive");
		return EXIT_USAGE;
	}
	if (metrics_parse_listen(o->metrics, &sa, &len, &err) < 0) {
		log_msg(LOG_ERR, "--metrics: %s", err.msg);
		return EXIT_USAGE;
	}
	return 0;
}

static int check_textfile_dir(const struct opts *o)
{
	struct stat st;

	if (stat(o->textfile_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		log_msg(LOG_ERR, "--textfile-dir %s: %s", o->textfile_dir,
			errno && !S_ISDIR(st.st_mode) ? nt_strerror(errno) : "not a directory");
		return EXIT_USAGE;
	}
	return 0;
}

/* a fleet id is a name (fleet/sign.h) */
static int check_fleet_id(const struct opts *o)
{
	if (!fleet_name_valid(o->fleet_id)) {
		log_msg(LOG_ERR, "--fleet-id '%.64s': not a name ([A-Za-z0-9._-], 1 to 63 bytes)", o->fleet_id);
		return EXIT_USAGE;
	}
	return 0;
}

/* the gate's options need a gate, and a shadow rollout has none */
static int check_gate(const struct opts *o)
{
	if (!o->gate && (o->given[OPT_GATE_BUDGET] || o->gate_allow_inconclusive)) {
		log_msg(LOG_ERR, "--gate-budget and --gate-allow-inconclusive need --gate NAME");
		return EXIT_USAGE;
	}
	if (o->gate && o->shadow) {
		log_msg(LOG_ERR, "--shadow changes nothing, so it has no gate: drop --gate or --shadow");
		return EXIT_USAGE;
	}
	if (o->gate && !gates_name_valid(o->gate)) {
		log_msg(LOG_ERR, "--gate '%.64s': expected a gate name, 1 to 64 of a-z, 0-9, '_' and '-' (each host maps "
				 "it to a command of its own in " GATES_DIR ")", o->gate);
		return EXIT_USAGE;
	}
	return 0;
}

/* ab's job as a user: a name, never root's (resolved when ab starts) */
static int check_as_user(const struct opts *o)
{
	if (!o->command) {
		log_msg(LOG_ERR, "--as-user runs the job of '-- CMD...' as that user: give the command");
		return EXIT_USAGE;
	}
	if (!strcmp(o->as_user, "root") || !strcmp(o->as_user, "0")) {
		log_msg(LOG_ERR, "--as-user %s: the job never runs as root through --as-user", o->as_user);
		return EXIT_USAGE;
	}
	return 0;
}

/* ---- the definitions --------------------------------------------------- */

/* The rows below open with one of these and close with " }" after any
 * of .letter, .alias, .arg, .help, .required, .check. */
#define AT(field) offsetof(struct opts, field)
#define FLAG(n, f) { .name = n, .parse = parse_flag, .offset = AT(f)
#define STRING(n, f) { .name = n, .takes_value = true, .parse = parse_string, .offset = AT(f)
#define PATH(n, f) { .name = n, .takes_value = true, .is_path = true, .parse = parse_string, .offset = AT(f)
#define NUMBER(n, f, fn, lo, hi, u) \
	{ .name = n, .takes_value = true, .parse = fn, .min = lo, .max = hi, .unit = u, .offset = AT(f)
/* a duration: lo and hi in seconds, a bare number counts bare seconds */
#define DURATION(n, f, fn, lo, hi, bare) \
	{ .name = n, .takes_value = true, .parse = fn, .min = lo, .max = hi, .scale = bare, .offset = AT(f)

static const struct opt_def defs[OPT__COUNT] = {
	[OPT_POLICY] = PATH("policy", policy), .arg = "FILE|NAME", .required = "--policy FILE|NAME is required",
			.help = "the policy: a file, or a NAME on the policy path (nodetune policy list)" },
	[OPT_RANKS] = NUMBER("ranks", ranks, parse_uint, 1, PLAN_MAX_RANKS, NULL), .letter = 'n', .arg = "N",
		       .required = "-n/--ranks N is required",
		       .help = "local ranks to plan for (default: one per GPU, 1 without GPUs)" },
	[OPT_TOPOLOGY] = PATH("topology", topology), .arg = "FILE.xml",
			  .help = "the machine from an hwloc XML export instead of this host" },
	[OPT_SYNTHETIC] = STRING("synthetic", synthetic), .check = check_machine, .arg = "DESC",
			   .help = "the machine from an hwloc synthetic description (\"pack:2 numa:1 core:8 pu:2\")" },
	[OPT_SYSROOT] = PATH("sysroot", sysroot), .check = check_sysroot, .arg = "DIR",
			 .help = "read and write /sys and /proc below DIR (a captured tree) instead of this host's" },
	[OPT_STATE_DIR] = PATH("state-dir", state_dir), .check = check_state_dir, .arg = "DIR",
			   .help = "where the journal of originals is kept (default /run/nodetune)" },
	[OPT_JSON] = FLAG("json", json), .help = "the result as JSON on stdout" },
	[OPT_DRY_RUN] = FLAG("dry-run", dry_run), .help = "show what would change; write nothing" },
	[OPT_MARKDOWN] = FLAG("markdown", markdown), .help = "the reference table in Markdown (docs/policy-keys.md)" },
	[OPT_QUIET] = FLAG("quiet", quiet), .letter = 'q', .help = "print only errors" },
	[OPT_LOCAL_RANK] = NUMBER("local-rank", local_rank, parse_uint, 0, PLAN_MAX_RANKS - 1, NULL), .arg = "N",
			    .help = "this process's local rank (default: from the launcher's environment)" },
	[OPT_LOCAL_SIZE] = NUMBER("local-size", local_size, parse_uint, 1, PLAN_MAX_RANKS, NULL), .arg = "N",
			    .help = "the number of local ranks (default: from the launcher, else one per GPU)" },
	[OPT_WINDOW] = DURATION("window", window_s, parse_seconds, 0.2, 3600, 1), .arg = "DURATION",
			.help = "how long to sample counters (default 2s; a bare number counts seconds)" },
	[OPT_A] = STRING("a", spec_a), .required = AB_ARMS_REQUIRED, .arg = "SPEC",
		   .help = "arm A: policy=FILE|NAME, cmd=COMMAND ARGS, or both, comma-separated" },
	[OPT_B] = STRING("b", spec_b), .required = AB_ARMS_REQUIRED, .arg = "SPEC", .help = "arm B, as --a" },
	[OPT_REPORT] = PATH("report", report), .arg = "FILE.html", .help = "also write a self-contained HTML report" },
	[OPT_GOOD] = PATH("good", good), .required = BISECT_POLICIES_REQUIRED, .arg = "POLICY",
		      .help = "the policy that runs well (a file or a NAME)" },
	[OPT_BAD] = PATH("bad", bad), .required = BISECT_POLICIES_REQUIRED, .arg = "POLICY",
		     .help = "the policy that regresses (a file or a NAME)" },
	[OPT_TRIALS] = NUMBER("trials", trials, parse_uint, 2, 1000, NULL), .arg = "N",
			.help = "trials per arm (default 8)" },
	[OPT_STEPS] = NUMBER("steps", steps, parse_uint, 1, 1000000, NULL), .arg = "N",
		       .help = "steps of the default workload per trial (default 30)" },
	[OPT_THRESHOLD] = NUMBER("threshold", threshold, parse_percent, 0, 100, "a percentage"), .arg = "PCT",
			   .help = "the smallest change that counts, in % (default 2)" },
	[OPT_ALPHA] = NUMBER("alpha", alpha, parse_double, 1e-6, 0.5, "a probability"), .arg = "A",
		       .help = "the error rate of the verdict (default 0.05)" },
	[OPT_TRIM] = NUMBER("trim", trim, parse_percent, 0, 40, "a percentage"), .arg = "PCT",
		      .help = "the pairs cut from each end of the verdict's mean, in % (default 10; 0: the plain mean)" },
	[OPT_BUDGET] = DURATION("budget", budget, parse_seconds, 1, 86400, 1), .arg = "DURATION",
			.help = "the time the experiment may take (default 300s; a bare number counts seconds)" },
	[OPT_SEED] = NUMBER("seed", seed, parse_seed, 1, 4000000000u, NULL), .arg = "N",
		      .help = "the seed of the trial order (default 1)" },
	[OPT_PID] = NUMBER("pid", pids, parse_pids, 1, 4194304, NULL), .arg = "PID[,PID...]",
		     .help = "watch these processes and their descendants" },
	[OPT_INTERVAL] = DURATION("interval", interval_ms, parse_millis, 0.01, 60, 1e-3), .arg = "DURATION",
			  .help = "between samples (default 100ms; a bare number counts milliseconds)" },
	[OPT_DURATION] = DURATION("duration", duration_s, parse_seconds, 0.001, 86400 * 365, 1), .arg = "DURATION",
			  .help = "stop after this long (a bare number counts seconds)" },
	/* the daemon's: --interval has its own bare unit there (a second
	 * definition of one name: the verb's table says which it takes) */
	[OPT_INTERVAL_S] = DURATION("interval", interval_s, parse_seconds, 0.05, 86400, 1), .arg = "DURATION",
			    .help = "between verifies (default 30s; a bare number counts seconds)" },
	[OPT_FLAP] = STRING("flap", flap), .check = check_flap, .arg = "N/SECONDS",
		      .help = "contested after N drifts within SECONDS (default 3/600)" },
	[OPT_METRICS] = STRING("metrics", metrics), .check = check_metrics, .arg = "ADDR:PORT",
			 .help = "serve Prometheus /metrics there (default 127.0.0.1:9477)" },
	[OPT_NO_METRICS] = FLAG("no-metrics", no_metrics), .help = "serve no metrics" },
	[OPT_TEXTFILE_DIR] = PATH("textfile-dir", textfile_dir), .check = check_textfile_dir, .arg = "DIR",
			      .help = "also write DIR/nodetune.prom for node_exporter" },
	[OPT_SOCKET] = PATH("socket", socket), .arg = "PATH",
			.help = "the daemon's status socket (default /run/nodetune/nodetune.sock)" },
	[OPT_REVERT_ON_EXIT] = FLAG("revert-on-exit", revert_on_exit), .help = "restore the host when stopped" },
	[OPT_HOST] = STRING("host", host), .arg = "NAME",
		      .help = "join the fleet as NAME ([A-Za-z0-9._-]): its store from --endpoints or fleet.conf" },
	[OPT_ENDPOINTS] = STRING("endpoints", endpoints), .alias = "fleet", .arg = "URL[,URL...]",
			   .required = "--endpoints URL[,URL...] is required",
			   .help = "the fleet's etcd client URLs, comma-separated (default: fleet.conf's endpoints)" },
	[OPT_NAME] = STRING("name", name), .required = "--name NAME is required", .arg = "NAME",
		      .help = "the rollout's name" },
	[OPT_WAVES] = STRING("waves", waves), .arg = "LIST",
		       .help = "the waves, e.g. 1/class,1%,10%,50%,100% (the default)" },
	[OPT_GATE] = STRING("gate", gate), .check = check_gate, .arg = "NAME",
		      .help = "the canary gate: each first-wave host A/Bs the old and new policy on the job it names NAME (its " GATES_DIR "/NAME.conf)" },
	[OPT_GATES_DIR] = PATH("gates-dir", gates_dir), .arg = "DIR",
			   .help = "the gates a rollout may name (NAME.conf, root's; default " GATES_DIR ")" },
	[OPT_TRIAL_DIR] = PATH("trial-dir", trial_dir), .arg = "DIR",
			   .help = "keep the trials' outputs and journal in DIR, made fresh (default /tmp/nodetune-ab-XXXXXX)" },
	[OPT_AS_USER] = STRING("as-user", as_user), .check = check_as_user, .arg = "USER",
			 .help = "run the job as USER (never root), in its trial cgroup, with no new privileges" },
	[OPT_GATE_BUDGET] = DURATION("gate-budget", gate_budget, parse_seconds, 1, 86400, 1), .arg = "DURATION",
			     .check = check_gate, .help = "the gate's A/B budget (a bare number counts seconds)" },
	[OPT_SIGNING_KEY] = PATH("signing-key", signing_key), .arg = "FILE",
			     .help = "sign every document written with this secret key (fleet keygen's NAME.key)" },
	[OPT_FLEET_KEYS] = PATH("fleet-keys", fleet_keys), .arg = "DIR",
			    .help = "the signing keys trusted (NAME.pub, root's; default " "/etc/nodetune/fleet-keys.d)" },
	[OPT_FLEET_INSECURE_UNSIGNED] = FLAG("fleet-insecure-unsigned", fleet_insecure_unsigned),
					 .help = "also follow unsigned fleet documents (tests and demos only)" },
	[OPT_FLEET_ID] = STRING("fleet-id", fleet_id), .check = check_fleet_id, .arg = "ID",
			  .help = "the fleet signed for and admitted ([A-Za-z0-9._-]; default fleet.conf's fleet-id, else \"default\")" },
	[OPT_FLEET_MAX_AGE] = DURATION("fleet-max-age", fleet_max_age, parse_seconds, 1, 86400 * 30, 1),
			       .arg = "DURATION",
			       .help = "frozen when the controller's last timestamp is older (default 4h; a bare number counts seconds)" },
	[OPT_WAVE_TIMEOUT] = DURATION("wave-timeout", wave_timeout, parse_seconds, 1, 86400 * 7, 1), .arg = "DURATION",
			      .help = "how long a wave may take (default 600s; a bare number counts seconds)" },
	[OPT_SHADOW] = FLAG("shadow", shadow), .check = check_gate,
			.help = "every host plans and verifies, and reports; nothing is written" },
	[OPT_METRIC] = STRING("metric", metric), .check = check_metric, .arg = "REGEX",
			.help = "a trial's figure from its output: one capture group, the median of the matches" },
	[OPT_METRIC_KIND] = STRING("metric-kind", metric_kind), .check = check_metric, .arg = "throughput|time",
			     .help = "whether --metric is better higher (throughput, the default) or lower" },
	[OPT_SKIP_STEPS] = NUMBER("skip-steps", skip_steps, parse_uint, 0, 1000000, NULL), .arg = "N",
			    .help = "drop the step reports numbered below N (default 1)" },
	[OPT_GATE_ALLOW_INCONCLUSIVE] = FLAG("gate-allow-inconclusive", gate_allow_inconclusive), .check = check_gate,
					 .help = "an inconclusive gate passes" },
	[OPT_VERBOSE] = { .name = "verbose", .parse = parse_verbose, .offset = AT(verbose), .letter = 'v',
			   .global = true, .help = "debug output on stderr" },
	[OPT_LOG_FORMAT] = { .name = "log-format", .takes_value = true, .parse = parse_log_format,
			      .offset = AT(log_format), .global = true, .arg = "text|syslog",
			    .help = "syslog: lines start with <N> priorities (the default under journald only)" },
	[OPT_VERSION] = FLAG("version", version), .global = true, .help = "print the version and exit" },
	[OPT_LIMITS] = PATH("limits", limits), .arg = "FILE",
			.help = "the site's upper bounds on policy values (default /etc/nodetune/limits.conf when it exists)" },
	[OPT_OUT] = PATH("out", out), .required = "--out DIR is required", .arg = "DIR",
		     .help = "where the key pair goes" },
	[OPT_CACERT] = PATH("cacert", cacert), .arg = "FILE", .help = "etcd's CA (TLS)" },
	[OPT_CERT] = PATH("cert", cert), .arg = "FILE", .help = "a client certificate for etcd (TLS)" },
	[OPT_KEY] = PATH("key", key), .arg = "FILE", .help = "the client certificate's key" },
	[OPT_USER] = STRING("user", user), .arg = "NAME", .help = "log in to etcd as NAME (with --password-file)" },
	[OPT_PASSWORD_FILE] = PATH("password-file", password_file), .arg = "FILE",
			       .help = "the etcd user's password: the file's first line (root's, mode 0600)" },
	[OPT_INSECURE_PLAINTEXT] = FLAG("insecure-plaintext", insecure_plaintext),
				    .help = "allow a login over http:// endpoints: the password and token travel in clear, "
					    "anyone on the path can read and replay them" },
	[OPT_FLEET_CONF] = PATH("fleet-conf", fleet_conf), .arg = "FILE",
			    .help = "etcd's credentials from a file (default /etc/nodetune/fleet.conf when it exists)" },
	[OPT_HOSTS] = STRING("hosts", hosts), .required = "--hosts NAME[,NAME...] is required", .arg = "NAME[,NAME...]",
		       .help = "the hosts to make etcd users for" },
	[OPT_PASSWORD_DIR] = PATH("password-dir", password_dir), .required = "--password-dir DIR is required",
			      .arg = "DIR", .help = "each etcd user's password file, DIR/USER (made when absent)" },
	[OPT_PRINT] = FLAG("print", print), .help = "print the etcdctl commands instead of running them" },
};

/* getopt_long's value for option id: its letter, else past any char. */
static int opt_val(enum opt_id id)
{
	return defs[id].letter ? defs[id].letter : 256 + (int)id;
}

/* The definition getopt_long's value ch stands for; OPT__COUNT none. */
static enum opt_id opt_of_val(int ch)
{
	for (int i = 0; i < OPT__COUNT; i++)
		if (opt_val(i) == ch)
			return i;
	return OPT__COUNT;
}

/* The first definition with the name of id (one name may have two: the
 * verb's table says which it takes). */
static enum opt_id first_of_name(enum opt_id id)
{
	for (int i = 0; i < (int)id; i++)
		if (!strcmp(defs[i].name, defs[id].name))
			return i;
	return id;
}

/* getopt_long's table: every definition (whatever the verb), a name once,
 * its alias, and --help. */
static const struct option *long_options(void)
{
	static struct option lo[2 * OPT__COUNT + 2];

	if (!lo[0].name) {
		int n = 0;

		for (int i = 0; i < OPT__COUNT; i++) {
			int has = defs[i].takes_value ? required_argument : no_argument;

			if (first_of_name(i) != i)
				continue;
			lo[n++] = (struct option){ defs[i].name, has, NULL, opt_val(i) };
			if (defs[i].alias)
				lo[n++] = (struct option){ defs[i].alias, has, NULL, opt_val(i) };
		}
		lo[n] = (struct option){ "help", no_argument, NULL, 'h' };
	}
	return lo;
}

static const struct opt_row *verb_row(const struct verb_spec *spec, enum opt_id id)
{
	for (const struct opt_row *r = spec->opts; r->id != OPT_END; r++)
		if (r->id == id)
			return r;
	return NULL;
}

/* getopt_long's short options: "+" (stop at the first argument), ":"
 * (a missing value is ':'), -h, and the letters of the definitions. */
static const char *short_options(void)
{
	static char s[8 + 2 * OPT__COUNT];

	if (!s[0]) {
		size_t n = (size_t)snprintf(s, sizeof(s), "+:h");

		for (int i = 0; i < OPT__COUNT; i++)
			if (defs[i].letter)
				n += (size_t)snprintf(s + n, sizeof(s) - n, "%c%s", defs[i].letter,
						      defs[i].takes_value ? ":" : "");
	}
	return s;
}

/* ---- checks after parsing ---------------------------------------------- */

/* In the order of the verb's table: a required option that is missing,
 * then the option's own check.  Then the defaults.  0 or EXIT_USAGE. */
static int check_opts(const struct verb_spec *spec, struct opts *o)
{
	for (const struct opt_row *r = spec->opts; r->id != OPT_END; r++) {
		const struct opt_def *d = &defs[r->id];
		int rc;

		if (r->need == OPT_REQUIRED && !o->given[r->id]) {
			log_msg(LOG_ERR, "%s", d->required);
			return EXIT_USAGE;
		}
		if (o->given[r->id] && d->check && (rc = d->check(o)))
			return rc;
	}
	if (!o->state_dir)
		o->state_dir = JOURNAL_DEFAULT_DIR;
	if (o->quiet && !o->verbose)
		log_set_level(LOG_ERR);
	return 0;
}

/* ---- the command after "--" -------------------------------------------- */

/* What follows the options: "-- CMD..." for the verbs that take one,
 * nothing otherwise.  optind is getopt's.  0 or EXIT_USAGE (said). */
static int parse_command(const char *name, const struct verb_spec *spec, int argc, char **argv, struct opts *o)
{
	/* getopt stops at "--" and skips it; it must be there explicitly */
	bool dashdash = optind > 1 && !strcmp(argv[optind - 1], "--");

	if (spec->command == VERB_SUB_VERB) {
		if (dashdash) {
			log_msg(LOG_ERR, "unexpected argument '--': %s takes no command (see --help)", name);
			return EXIT_USAGE;
		}
		if (optind < argc)
			o->args = argv + optind;
		return 0;
	}
	if (spec->command == VERB_ONE_WORD && o->word) {
		if (dashdash || optind < argc) {
			log_msg(LOG_ERR, "%s takes one word, not '%s' too (see --help)", name, argv[optind - dashdash]);
			return EXIT_USAGE;
		}
		return 0;
	}
	if (spec->command == VERB_ONE_WORD) {
		if (!dashdash && optind >= argc)
			return 0;       /* o->word NULL: the verb says what it expected */
		if (dashdash || optind + 1 != argc) {
			log_msg(LOG_ERR, "%s takes one word, %s (see --help)", name,
				dashdash ? "not '--'" : "not more");
			return EXIT_USAGE;
		}
		o->word = argv[optind];
		return 0;
	}
	if (spec->command == VERB_NO_COMMAND) {
		if (optind < argc) {
			log_msg(LOG_ERR, "unexpected argument '%s' (see --help)", argv[optind]);
			return EXIT_USAGE;
		}
		if (dashdash) {
			log_msg(LOG_ERR, "unexpected argument '--': %s takes no command (see --help)", name);
			return EXIT_USAGE;
		}
		return 0;
	}
	if (optind < argc && !dashdash) {
		if (spec->command == VERB_COMMAND)
			log_msg(LOG_ERR, "expected '-- COMMAND [ARGS...]' (see --help)");
		else
			log_msg(LOG_ERR, "unexpected argument '%s' (a command goes after '--'; see --help)",
				argv[optind]);
		return EXIT_USAGE;
	}
	if (optind >= argc && (dashdash || spec->command == VERB_COMMAND)) {
		log_msg(LOG_ERR, "expected '-- COMMAND [ARGS...]'%s (see --help)", dashdash ? ", got '--' alone" : "");
		return EXIT_USAGE;
	}
	if (optind < argc)
		o->command = argv + optind;
	return 0;
}

/* ---- help ------------------------------------------------------------- */

#define HELP_WIDTH 79
#define HELP_COLUMN 30

/* text from column col on, wrapped at HELP_WIDTH, continuation lines
 * indented to indent; then a newline */
static void print_wrapped(FILE *f, const char *text, int col, int indent)
{
	const char *p = text;

	while (*p) {
		size_t word = strcspn(p, " "), space = 0;

		if (col > indent && col + 1 + (int)word > HELP_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)word, p);
		col += (int)word;
		p += word;
		while (p[space] == ' ')
			space++;
		p += space;
	}
	fputc('\n', f);
}

void opts_print_wrapped(FILE *f, const char *text, int col, int indent)
{
	print_wrapped(f, text, col, indent);
}

/* One option's line: "  -n, --ranks N          help (also --x) (required)". */
static void print_option(FILE *f, const struct opt_def *d, const struct opt_row *r)
{
	char left[64], help[512];
	int n;

	if (d->letter)
		n = snprintf(left, sizeof(left), "  -%c, --%s%s%s", d->letter, d->name, d->arg ? " " : "",
			     d->arg ? d->arg : "");
	else
		n = snprintf(left, sizeof(left), "      --%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
	if (r && r->need == OPT_REFUSED)
		snprintf(help, sizeof(help), "not taken: %s", r->help);
	else
		snprintf(help, sizeof(help), "%s%s%s%s%s", r && r->help ? r->help : d->help, d->alias ? " (also --" : "",
			 d->alias ? d->alias : "", d->alias ? ")" : "", r && r->need == OPT_REQUIRED ? " (required)" : "");
	fputs(left, f);
	if (n + 1 >= HELP_COLUMN) {
		fprintf(f, "\n%*s", HELP_COLUMN, "");
		n = HELP_COLUMN;
	} else {
		fprintf(f, "%*s", HELP_COLUMN - n, "");
		n = HELP_COLUMN;
	}
	print_wrapped(f, help, n, HELP_COLUMN);
}

void opts_print_help(FILE *f, const struct verb_spec *spec)
{
	fprintf(f, "Usage: %s\n\n%s\n", spec->usage, spec->help);
	if (spec->opts && spec->opts->id != OPT_END) {
		fprintf(f, "\nOptions:\n");
		for (const struct opt_row *r = spec->opts; r->id != OPT_END; r++)
			print_option(f, &defs[r->id], r);
	}
	fprintf(f, "\nGlobal options (before or after the verb):\n");
	for (int i = 0; i < OPT__COUNT; i++)
		if (defs[i].global)
			print_option(f, &defs[i], NULL);
	fprintf(f, "  -h, --help%*sthis help\n", HELP_COLUMN - 12, "");
}

static json_t *option_json(const struct opt_def *d, const struct opt_row *r)
{
	static const char *const need[] = { [OPT_OPTIONAL] = "optional", [OPT_REQUIRED] = "required",
					    [OPT_REFUSED] = "refused" };
	char letter[2] = { d->letter, 0 };

	return json_pack("{s:s, s:s?, s:s?, s:s?, s:s, s:s, s:b}", "name", d->name, "letter", d->letter ? letter : NULL,
			 "alias", d->alias, "value", d->arg, "help", r && r->help ? r->help : d->help, "need",
			 need[r ? r->need : OPT_OPTIONAL], "global", d->global);
}

json_t *opts_spec_json(const struct verb_spec *spec)
{
	static const char *const takes[] = { [VERB_NO_COMMAND] = "nothing", [VERB_COMMAND] = "command",
					     [VERB_COMMAND_OPTIONAL] = "optional command",
					     [VERB_SUB_VERB] = "sub-verb", [VERB_ONE_WORD] = "word" };
	json_t *arr = json_array();

	for (const struct opt_row *r = spec->opts; arr && r->id != OPT_END; r++)
		json_array_append_new(arr, option_json(&defs[r->id], r));
	for (int i = 0; arr && i < OPT__COUNT; i++)
		if (defs[i].global)
			json_array_append_new(arr, option_json(&defs[i], NULL));
	return json_pack("{s:s, s:s, s:s, s:s, s:o*}", "usage", spec->usage, "summary", spec->summary, "help",
			 spec->help, "takes", takes[spec->command], "options", arr);
}

/* ---- opts_parse -------------------------------------------------------- */

/* The option as typed, for messages: a missing value ends argv, so the
 * option is its last word; a short one may sit in a cluster ("-qx"). */
static const char *typed_name(const struct option *lo, int ch, int li, char **argv, char *buf, size_t size)
{
	if (li >= 0)
		snprintf(buf, size, "--%s", lo[li].name);
	else if (ch != '?' && ch != ':')
		snprintf(buf, size, "-%c", ch);
	else if (ch == '?' && optopt)
		snprintf(buf, size, "-%c", optopt);
	else
		return argv[optind - 1];
	return buf;
}

/* One option getopt_long returned (not --help).  0, or EXIT_USAGE (said). */
static int take_option(const struct verb_spec *spec, int ch, const char *name, char **argv, struct opts *o)
{
	enum opt_id id = ch == '?' || ch == ':' ? OPT__COUNT : opt_of_val(ch);
	const struct opt_def *d;

	if (ch == ':') {
		log_msg(LOG_ERR, "option '%s' needs a value (see --help)", name);
		return EXIT_USAGE;
	}
	if (ch == '?' && optopt && !strncmp(argv[optind - 1], "--", 2)) {
		log_msg(LOG_ERR, "option '%.*s' takes no value (see --help)", (int)strcspn(argv[optind - 1], "="),
			argv[optind - 1]);
		return EXIT_USAGE;
	}
	const struct opt_row *row;

	if (id != OPT__COUNT && !verb_row(spec, id))
		for (int i = id + 1; i < OPT__COUNT; i++)
			if (first_of_name(i) == id && verb_row(spec, i))
				id = i;       /* the verb's definition of this name */
	d = &defs[id];
	row = id == OPT__COUNT ? NULL : verb_row(spec, id);
	if (id == OPT__COUNT || (!row && !d->global)) {
		log_msg(LOG_ERR, "unknown option '%s' (see --help)", name);
		return EXIT_USAGE;
	}
	if (row && row->need == OPT_REFUSED) {
		log_msg(LOG_ERR, "%s: %s", name, row->help);
		return EXIT_USAGE;
	}
	/* every option may be given once: a second one is refused, whatever
	 * it says (a root tool should not guess which of two policies was meant) */
	if (o->given[id]) {
		log_msg(LOG_ERR, "--%s given twice (each option may be given once)", d->name);
		return EXIT_USAGE;
	}
	o->given[id] = true;
	/* a path that is empty is a mistake (an unset shell variable), never
	 * "the current directory" */
	if (d->is_path && !optarg[0]) {
		log_msg(LOG_ERR, "--%s: empty path", d->name);
		return EXIT_USAGE;
	}
	return d->parse(d, optarg, (char *)o + d->offset) < 0 ? EXIT_USAGE : 0;
}

int opts_parse(const char *name, const struct verb_spec *spec, int argc, char **argv, struct opts *o)
{
	const struct option *lo = long_options();
	int ch, r, li = -1;

	/* a sub-verb comes first, its options after it; a verb's one word may
	 * come before its options too (`policy show NAME --json`) */
	if (spec->command == VERB_SUB_VERB && argc > 1 && argv[1][0] != '-') {
		o->sub_verb = argv[1];
		argc--, argv++;
	} else if (spec->command == VERB_ONE_WORD && argc > 1 && argv[1][0] != '-') {
		o->word = argv[1];
		argc--, argv++;
	}
	optind = 1;
	opterr = 0;
	for (; (ch = getopt_long(argc, argv, short_options(), lo, &li)) != -1; li = -1) {
		char typed[64];

		if (ch == 'h') {
			opts_print_help(stdout, spec);
			return finish_stdout(0);
		}
		r = take_option(spec, ch, typed_name(lo, ch, li, argv, typed, sizeof(typed)), argv, o);
		if (r)
			return r;
		if (o->version) {
			cli_version();
			return finish_stdout(0);
		}
	}
	if ((r = parse_command(name, spec, argc, argv, o)) || (r = check_opts(spec, o)))
		return r;
	return -1;
}

/* ---- opts_dump --------------------------------------------------------- */

/* The name of d's value in the dump: what completes it (POLICY, DIR, FILE,
 * N, VALUE, or its values "a|b"). */
static const char *dump_arg(const struct opt_def *d)
{
	if (!d->takes_value)
		return "-";
	if (d->offset == AT(policy) || d->offset == AT(good) || d->offset == AT(bad))
		return "POLICY";
	if (d->offset == AT(sysroot) || d->offset == AT(state_dir) || d->offset == AT(textfile_dir) ||
	    (d->arg && !strcmp(d->arg, "DIR")))
		return "DIR";
	if (d->arg && strchr(d->arg, '|') && !strpbrk(d->arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
		return d->arg;  /* its values, "throughput|time" */
	if (d->is_path)
		return "FILE";
	return d->parse == parse_string ? "VALUE" : "N";
}

static void dump_rows(FILE *f, const char *verb, int verb_len, const struct verb_spec *spec)
{
	for (const struct opt_row *r = spec->opts; r->id != OPT_END; r++) {
		const struct opt_def *d = &defs[r->id];

		fprintf(f, "%.*s\t%s\t%c\t%s\n", verb_len, verb, d->name, d->letter ? d->letter : '-', dump_arg(d));
	}
	fprintf(f, "%.*s\thelp\th\t-\n", verb_len, verb);
}

int opts_dump(FILE *f, const char *name, const struct verb_spec *spec)
{
	size_t n = strlen(name);

	if (spec->command != VERB_SUB_VERB) {
		dump_rows(f, name, (int)n, spec);
	} else {
		/* each usage line "nodetune NAME SUB ..." names a sub-verb */
		for (const char *u = spec->usage; (u = strstr(u, "nodetune ")); u++) {
			const char *sub = u + strlen("nodetune ");

			if (strncmp(sub, name, n) || sub[n] != ' ' || !sub[n + 1] || sub[n + 1] == '[' ||
			    sub[n + 1] == '-')
				continue;
			dump_rows(f, u + strlen("nodetune "), (int)(n + 1 + strcspn(sub + n + 1, " \n")), spec);
		}
	}
	return ferror(f) ? -EIO : 0;
}

int opts_parse_globals(int argc, char **argv, struct opts *o)
{
	static const struct opt_row none[] = { OPT_TABLE_END };
	static const struct verb_spec globals = { none, VERB_SUB_VERB, "", "", "" };
	const struct option *lo = long_options();
	int ch, r, li = -1;

	optind = 1;
	opterr = 0;
	for (; (ch = getopt_long(argc, argv, short_options(), lo, &li)) != -1; li = -1) {
		char typed[64];

		if (ch == 'h') {
			cli_usage(stdout);
			return -1 - finish_stdout(0);
		}
		r = take_option(&globals, ch, typed_name(lo, ch, li, argv, typed, sizeof(typed)), argv, o);
		if (r)
			return -1 - r;
		if (o->version) {
			cli_version();
			return -1 - finish_stdout(0);
		}
	}
	if (optind >= argc || !strcmp(argv[optind - 1], "--")) {
		cli_usage(stderr);
		return -1 - EXIT_USAGE;
	}
	return optind;
}
