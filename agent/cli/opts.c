/* SPDX-License-Identifier: MIT */
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
#include "base/stats.h"
#include "tune/plan.h"
#include "tune/policy.h"

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
	size_t offset;                /* where in struct opts it is stored */
	const char *arg;              /* the value's name in help ("FILE"), NULL for a flag */
	const char *help;             /* one line for VERB --help (a verb's row may say its own) */
	const char *man;              /* the man page's longer text after help, NULL none */
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
	if (parse_double(val, min, max, ret) < 0) {
		log_msg(LOG_ERR, "%s '%s': expected %s from %.10g to %.10g", opt, val, unit, min, max);
		return -EINVAL;
	}
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

static int parse_number(const struct opt_def *d, const char *val, void *dst)
{
	char name[40];

	return opt_double(dashed(d, name, sizeof(name)), val, d->min, d->max, d->unit, dst);
}

/* A duration (nt_duration_parse: a number and ms, s, m or h; a bare number
 * counts seconds) within [d->min, d->max] seconds, into *ret_s.  0, or
 * -EINVAL (said, with the range and examples from it). */
static int duration(const struct opt_def *d, const char *val, double *ret_s)
{
	char expected[160];

	if (nt_duration_parse(val, d->min, d->max, ret_s) == 0)
		return 0;
	nt_duration_expected(d->min, d->max, expected, sizeof(expected));
	log_msg(LOG_ERR, "--%s '%s': expected %s", d->name, val, expected);
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

	if (parse_number(d, val, &v) < 0)
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

/* N/DURATION (flap_parse), checked here and kept as typed. */
static int parse_flap(const struct opt_def *d, const char *val, void *dst)
{
	char expected[160];
	unsigned n;
	double w;

	if (flap_parse(val, &n, &w) == 0) {
		*(const char **)dst = val;
		return 0;
	}
	nt_duration_expected(FLAP_WINDOW_MIN_S, FLAP_WINDOW_MAX_S, expected, sizeof(expected));
	log_msg(LOG_ERR, "--%s '%s': expected N/DURATION (e.g. 3/10m): N from 1 to %d drifts within %s", d->name, val,
		FLAP_N_MAX, expected);
	return -EINVAL;
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

/* --metric compiles, with one capture group; --metric-kind is a direction
 * and needs --metric. */
static int check_metric(const struct opts *o)
{
	struct nt_err err = { 0 };
	regex_t re;

	if (o->metric) {
		if (abfigure_metric_compile(o->metric, &re, &err) < 0) {
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
/* a duration: lo and hi in seconds (a bare number counts seconds) */
#define DURATION(n, f, fn, lo, hi) \
	{ .name = n, .takes_value = true, .parse = fn, .min = lo, .max = hi, .offset = AT(f)

static const struct opt_def defs[OPT__COUNT] = {
	[OPT_POLICY] = PATH("policy", policy), .arg = "FILE|NAME", .required = "--policy FILE|NAME is required",
			.help = "a file, or a NAME searched on the policy path",
			.man = "A NAME (no slash, not ending in .conf) is the file NAME.conf in the first directory of the "
			       "policy path that has one: " POLICY_PATH_ENV ", else /etc/nodetune/policies, the "
			       "install's share/nodetune/policies, then /usr/share/nodetune/policies (nodetune policy "
			       "list shows them).  As root, a policy file or directory not owned by root, or writable "
			       "by group or others, is refused." },
	[OPT_RANKS] = NUMBER("ranks", ranks, parse_uint, 1, PLAN_MAX_RANKS, NULL), .letter = 'n', .arg = "N",
		       .required = "-n/--ranks N is required",
		       .help = "local ranks (default: one per GPU, else 1)" },
	[OPT_TOPOLOGY] = PATH("topology", topology), .arg = "FILE.xml",
			  .help = "the machine from an hwloc XML export" },
	[OPT_SYNTHETIC] = STRING("synthetic", synthetic), .check = check_machine, .arg = "DESC",
			   .help = "the machine from an hwloc synthetic description",
			   .man = "For example \"pack:2 numa:1 core:8 pu:2\"." },
	[OPT_SYSROOT] = PATH("sysroot", sysroot), .check = check_sysroot, .arg = "DIR",
			 .help = "/sys and /proc below DIR (a captured tree)",
			 .man = "Read and write there instead of this host's; without --topology or --synthetic the "
				"topology is read there too." },
	[OPT_STATE_DIR] = PATH("state-dir", state_dir), .check = check_state_dir, .arg = "DIR",
			   .help = "the journal of originals (default /run/nodetune)" },
	[OPT_JSON] = FLAG("json", json), .help = "the result as JSON on stdout" },
	[OPT_DRY_RUN] = FLAG("dry-run", dry_run), .help = "show what would change; write nothing" },
	[OPT_MARKDOWN] = FLAG("markdown", markdown), .help = "the reference table in Markdown" },
	[OPT_QUIET] = FLAG("quiet", quiet), .letter = 'q', .help = "print only errors" },
	[OPT_LOCAL_RANK] = NUMBER("local-rank", local_rank, parse_uint, 0, PLAN_MAX_RANKS - 1, NULL), .arg = "N",
			    .help = "this rank on the host (default: the launcher's)",
			    .man = "By default the first of OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID and LOCAL_RANK that "
				   "is set." },
	[OPT_LOCAL_SIZE] = NUMBER("local-size", local_size, parse_uint, 1, PLAN_MAX_RANKS, NULL), .arg = "N",
			    .help = "local ranks (default: the launcher's, or 1 per GPU)",
			    .man = "By default the first of OMPI_COMM_WORLD_LOCAL_SIZE, LOCAL_WORLD_SIZE, "
				   "SLURM_NTASKS_PER_NODE and SLURM_TASKS_PER_NODE that is set, else one per GPU." },
	[OPT_WINDOW] = DURATION("window", window_s, parse_seconds, 0.2, 3600), .arg = "DURATION",
			.help = "how long to sample counters (default 2s)" },
	[OPT_A] = STRING("a", spec_a), .required = AB_ARMS_REQUIRED, .arg = "SPEC",
		   .help = "arm A: policy=FILE|NAME and/or cmd=CMD",
		   .man = "Both: comma-separated, cmd= last (split on spaces, no shell)." },
	[OPT_B] = STRING("b", spec_b), .required = AB_ARMS_REQUIRED, .arg = "SPEC", .help = "arm B, as --a" },
	[OPT_REPORT] = PATH("report", report), .arg = "FILE.html", .help = "also write a self-contained HTML report" },
	[OPT_SVG] = PATH("svg", svg), .arg = "FILE.svg",
		     .help = "a picture of the machine (with --policy, its ranks)",
		     .man = "Written instead of the text: packages, NUMA nodes with their CPUs, host bridges and PCIe "
			    "switches, GPUs and NICs, each GPU joined to its nearest NIC with the PCIe path as "
			    "nvidia-smi topo -m names it (PIX, PXB, PHB, NODE, SYS).  With --policy (and -n), each "
			    "rank's CPUs, GPU and NIC in the rank's colour.  One self-contained SVG: no script, no "
			    "external reference." },
	[OPT_GOOD] = PATH("good", good), .required = BISECT_POLICIES_REQUIRED, .arg = "POLICY",
		      .help = "the policy that runs well (a file or a NAME)" },
	[OPT_BAD] = PATH("bad", bad), .required = BISECT_POLICIES_REQUIRED, .arg = "POLICY",
		     .help = "the policy that regresses (a file or a NAME)" },
	[OPT_TRIALS] = NUMBER("trials", trials, parse_uint, 2, 1000, NULL), .arg = "N",
			.help = "trials per arm (default 8)" },
	[OPT_STEPS] = NUMBER("steps", steps, parse_uint, 1, 1000000, NULL), .arg = "N",
		       .help = "default workload's steps per trial (default 30)" },
	[OPT_THRESHOLD] = NUMBER("threshold", threshold, parse_percent, 0, 100, "a percentage"), .arg = "PCT",
			   .help = "the smallest change that counts, in % (default 2)" },
	[OPT_ALPHA] = NUMBER("alpha", alpha, parse_number, STATS_ALPHA_MIN, STATS_ALPHA_MAX, "a probability"), .arg = "A",
		       .help = "the error rate of the verdict (default 0.05)" },
	[OPT_TRIM] = NUMBER("trim", trim, parse_percent, 0, 40, "a percentage"), .arg = "PCT",
		      .help = "pairs trimmed from each end, in % (default 10)",
		      .man = "The interval is Yuen's trimmed t, so one trial far off the rest sets neither the "
			     "estimate nor its width; 0 gives the plain mean and Student's t." },
	[OPT_BUDGET] = DURATION("budget", budget, parse_seconds, 1, 86400), .arg = "DURATION",
			.help = "the time the experiment may take (default 5m)" },
	[OPT_SEED] = NUMBER("seed", seed, parse_seed, 1, 4000000000u, NULL), .arg = "N",
		      .help = "the seed of the trial order (default 1)" },
	[OPT_PID] = NUMBER("pid", pids, parse_pids, 1, 4194304, NULL), .arg = "PID[,PID...]",
		     .help = "watch these processes and their descendants" },
	[OPT_INTERVAL] = DURATION("interval", interval_ms, parse_millis, 0.01, 60), .arg = "DURATION",
			  .help = "between samples (default 100ms)" },
	[OPT_DURATION] = DURATION("duration", duration_s, parse_seconds, 0.001, 86400 * 365), .arg = "DURATION",
			  .help = "stop after this long (e.g. 30s, 5m)" },
	/* the daemon's: --interval has its own range and field there (a
	 * second definition of one name: the verb's table says which it takes) */
	[OPT_INTERVAL_S] = DURATION("interval", interval_s, parse_seconds, 0.05, 86400), .arg = "DURATION",
			    .help = "between verifies (default 30s)" },
	[OPT_FLAP] = { .name = "flap", .takes_value = true, .parse = parse_flap, .offset = AT(flap), .arg = "N/DURATION",
		      .help = "contested after N drifts within DURATION (default 3/10m)" },
	[OPT_METRICS] = STRING("metrics", metrics), .check = check_metrics, .arg = "ADDR:PORT",
			 .help = "Prometheus /metrics (default 127.0.0.1:9477)" },
	[OPT_NO_METRICS] = FLAG("no-metrics", no_metrics), .help = "serve no metrics" },
	[OPT_TEXTFILE_DIR] = PATH("textfile-dir", textfile_dir), .check = check_textfile_dir, .arg = "DIR",
			      .help = "also write DIR/nodetune.prom for node_exporter" },
	[OPT_SOCKET] = PATH("socket", socket), .arg = "PATH",
			.help = "the socket (default /run/nodetune/nodetune.sock)" },
	[OPT_REVERT_ON_EXIT] = FLAG("revert-on-exit", revert_on_exit), .help = "restore the host when stopped" },
	[OPT_HOST] = STRING("host", host), .arg = "NAME",
		      .help = "join the fleet as NAME ([A-Za-z0-9._-])",
		      .man = "Without --host the daemon does not join, even when fleet.conf names endpoints (a host "
			     "may keep one for the fleet verbs alone)." },
	[OPT_ENDPOINTS] = STRING("endpoints", endpoints), .alias = "fleet", .arg = "URL[,URL...]",
			   .required = "--endpoints URL[,URL...] is required",
			   .help = "etcd URLs (default: fleet.conf's)" },
	[OPT_NAME] = STRING("name", name), .required = "--name NAME is required", .arg = "NAME",
		      .help = "the rollout's name" },
	[OPT_WAVES] = STRING("waves", waves), .arg = "LIST",
		       .help = "waves (default 1/class,1%,10%,50%,100%)" },
	[OPT_GATE] = STRING("gate", gate), .check = check_gate, .arg = "NAME",
		      .help = "the canary gate: NAME.conf in each host's gates.d",
		      .man = "Each first-wave host A/Bs its old and the new policy on the job its " GATES_DIR
			     "/NAME.conf names (nodetune-gates(5))." },
	[OPT_GATES_DIR] = PATH("gates-dir", gates_dir), .arg = "DIR",
			   .help = "the gates (default " GATES_DIR ")",
			   .man = "One NAME.conf per gate (nodetune-gates(5)); the directory and its files root's, not "
				  "writable by others. A gate a document names that is not there, not trusted, or whose "
				  "user is root is refused: the host keeps its policy and says why in its status." },
	[OPT_TRIAL_DIR] = PATH("trial-dir", trial_dir), .arg = "DIR",
			   .help = "keep the trials' outputs and journal in DIR",
			   .man = "The directory is made fresh (mode 0700; an existing one is refused) and removed at the "
				  "end unless an arm failed." },
	[OPT_AS_USER] = STRING("as-user", as_user), .check = check_as_user, .arg = "USER",
			 .help = "run the job as USER (never root)",
			 .man = "Never root nor a user whose primary group is 0: the job is moved into its trial cgroup "
				"first, then takes the user's primary group alone, its uid and no new privileges "
				"(PR_SET_NO_NEW_PRIVS), then is executed; it is killed if ab dies. Its environment is "
				"the user's: HOME, USER, LOGNAME and SHELL from the password database, "
				"PATH=/usr/local/bin:/usr/bin:/bin, the locale (LANG, LANGUAGE, LC_*), TZ, TERM and "
				"NODETUNE_SYSROOT kept, the step report's variables added, nothing else. The fleet's "
				"gates run their jobs this way." },
	[OPT_GATE_BUDGET] = DURATION("gate-budget", gate_budget, parse_seconds, 1, 86400), .arg = "DURATION",
			     .check = check_gate, .help = "the gate's A/B budget, e.g. 5m (default: its gate file's)" },
	[OPT_SIGNING_KEY] = PATH("signing-key", signing_key), .arg = "FILE",
			     .help = "sign what is written with this key (NAME.key)" },
	[OPT_FLEET_KEYS] = PATH("fleet-keys", fleet_keys), .arg = "DIR",
			    .help = "keys trusted (default /etc/nodetune/fleet-keys.d)",
			    .man = "For the controller (the fleet verbs, with --signing-key): the keys it trusts "
				   "besides its own, so that it may resume or abort another operator's rollout.  For "
				   "the daemon: the keys a document must be signed by.  The directory and its files are "
				   "root's, not writable by others.  A desired, shadow or policy document that is "
				   "unsigned, badly signed, signed by an unknown key, of another fleet (--fleet-id), "
				   "addressed to another host, expired, older than the last one applied, or at its seq "
				   "with other bytes (the seq and sha256 are kept in the state directory, fleet-seq) is "
				   "refused: the host keeps its policy, logs it once, counts it in "
				   "nodetune_fleet_rejected_total{reason} and says so in its status.  With no key "
				   "trusted (the directory missing or empty) every document is refused." },
	[OPT_FLEET_INSECURE_UNSIGNED] = FLAG("fleet-insecure-unsigned", fleet_insecure_unsigned),
					 .help = "also follow unsigned documents (tests only)" },
	[OPT_FLEET_ID] = STRING("fleet-id", fleet_id), .check = check_fleet_id, .arg = "ID",
			  .help = "the fleet (default fleet.conf's, else \"default\")" },
	[OPT_FLEET_MAX_AGE] = DURATION("fleet-max-age", fleet_max_age, parse_seconds, 1, 86400 * 30),
			       .arg = "DURATION",
			       .help = "frozen when the controller's last timestamp is older (default 4h)",
			       .man = "Counted from the start while no timestamp was verified. Older, the host is frozen (the "
				      "store may be withholding updates): it says so once in its log, in nodetune status and "
				      "in nodetune_fleet_frozen and nodetune_fleet_timestamp_age_seconds, and keeps its policy." },
	[OPT_WAVE_TIMEOUT] = DURATION("wave-timeout", wave_timeout, parse_seconds, 1, 86400 * 7), .arg = "DURATION",
			      .help = "how long a wave may take (default 10m)" },
	[OPT_SHADOW] = FLAG("shadow", shadow), .check = check_gate,
			.help = "hosts plan, verify and report; nothing written" },
	[OPT_METRIC] = STRING("metric", metric), .check = check_metric, .arg = "REGEX",
			.help = "a trial's figure: one capture group in its output" },
	[OPT_METRIC_KIND] = STRING("metric-kind", metric_kind), .check = check_metric, .arg = "throughput|time",
			     .help = "higher is better (the default) or lower" },
	[OPT_SKIP_STEPS] = NUMBER("skip-steps", skip_steps, parse_uint, 0, 1000000, NULL), .arg = "N",
			    .help = "drop the steps numbered below N (default 1)" },
	[OPT_GATE_ALLOW_INCONCLUSIVE] = FLAG("gate-allow-inconclusive", gate_allow_inconclusive), .check = check_gate,
					 .help = "an inconclusive gate passes" },
	[OPT_VERBOSE] = { .name = "verbose", .parse = parse_verbose, .offset = AT(verbose), .letter = 'v',
			   .global = true, .help = "debug output on stderr" },
	[OPT_LOG_FORMAT] = { .name = "log-format", .takes_value = true, .parse = parse_log_format,
			      .offset = AT(log_format), .global = true, .arg = "text|syslog",
			    .help = "syslog: lines start with <N> priorities (the default under journald only)",
			    .man = "The default is syslog only when standard error is the stream JOURNAL_STREAM names "
				   "(under journald), else text." },
	[OPT_VERSION] = FLAG("version", version), .global = true, .help = "print the version and exit" },
	[OPT_LIMITS] = PATH("limits", limits), .arg = "FILE",
			.help = "site limits (default /etc/nodetune/limits.conf)",
			.man = "The file is nodetune-limits.conf(5): a ceiling, a floor or a set of allowed values per "
			       "policy key; root's and not writable by others when run as root. A policy beyond it is "
			       "refused before anything changes, naming the key and the limit (exit 2)." },
	[OPT_OUT] = PATH("out", out), .required = "--out DIR is required", .arg = "DIR",
		     .help = "where the key pair goes" },
	[OPT_CACERT] = PATH("cacert", cacert), .arg = "FILE", .help = "etcd's CA (TLS)",
		.man = "The only CA trusted: the system's store (/etc/ssl/certs) is not searched." },
	[OPT_CERT] = PATH("cert", cert), .arg = "FILE", .help = "a client certificate for etcd (TLS)" },
	[OPT_KEY] = PATH("key", key), .arg = "FILE", .help = "the client certificate's key",
		.man = "Root's (or the caller's), mode 0600, or it is refused (exit 2)." },
	[OPT_USER] = STRING("user", user), .arg = "NAME", .help = "log in to etcd as NAME (with --password-file)" },
	[OPT_PASSWORD_FILE] = PATH("password-file", password_file), .arg = "FILE",
			       .help = "the password: the file's first line (mode 0600)",
			       .man = "The file is root's (or the caller's), mode 0600; the token is renewed when etcd refuses "
				      "it." },
	[OPT_INSECURE_PLAINTEXT] = FLAG("insecure-plaintext", insecure_plaintext),
				    .help = "allow a login over http:// (password in clear)",
				    .man = "The password and the token then travel in clear: anyone on the path can read and replay "
					   "them. Without it a login with any http:// endpoint in the list is refused, exit 2, "
					   "before anything is sent. In fleet.conf: insecure-plaintext = yes. A TLS failure, a "
					   "refused login or a permission denied is one line naming the endpoint, exit 3." },
	[OPT_FLEET_CONF] = PATH("fleet-conf", fleet_conf), .arg = "FILE",
			    .help = "credentials (default /etc/nodetune/fleet.conf)",
			    .man = "The keys of nodetune-fleet.conf(5): endpoints, cacert, cert, key, user, password-file, "
				   "insecure-plaintext, fleet-id; an option given overrides its key." },
	[OPT_HOSTS] = STRING("hosts", hosts), .required = "--hosts NAME[,NAME...] is required", .arg = "NAME[,NAME...]",
		       .help = "the hosts to make etcd users for" },
	[OPT_PASSWORD_DIR] = PATH("password-dir", password_dir), .required = "--password-dir DIR is required",
			      .arg = "DIR", .help = "a password file per user, DIR/USER" },
	[OPT_PRINT] = FLAG("print", print), .help = "print the etcdctl commands, run nothing" },
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
			if (r->need != OPT_REFUSED)
				print_option(f, &defs[r->id], r);
	}
	/* one line: nodetune --help and nodetune(8) say what they do */
	fprintf(f, "\nGlobal options:");
	for (int i = 0; i < OPT__COUNT; i++)
		if (defs[i].global) {
			if (defs[i].letter)
				fprintf(f, " -%c,", defs[i].letter);
			fprintf(f, " --%s%s%s,", defs[i].name, defs[i].arg ? " " : "", defs[i].arg ? defs[i].arg : "");
		}
	fprintf(f, " -h, --help\n");
}

static json_t *option_json(const struct opt_def *d, const struct opt_row *r)
{
	static const char *const need[] = { [OPT_OPTIONAL] = "optional", [OPT_REQUIRED] = "required",
					    [OPT_REFUSED] = "refused" };
	char letter[2] = { d->letter, 0 };
	const char *man = d->man;      /* about the option, whatever the verb's help line */
	json_t *o = json_pack("{s:s, s:s?, s:s?, s:s?, s:s, s:s, s:b}", "name", d->name, "letter",
			      d->letter ? letter : NULL, "alias", d->alias, "value", d->arg, "help",
			      r && r->help ? r->help : d->help, "need", need[r ? r->need : OPT_OPTIONAL], "global",
			      d->global);

	if (o && man && json_object_set_new(o, "man", json_string(man)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *opts_spec_json(const struct verb_spec *spec)
{
	static const char *const takes[] = { [VERB_NO_COMMAND] = "nothing", [VERB_COMMAND] = "command",
					     [VERB_COMMAND_OPTIONAL] = "optional command",
					     [VERB_SUB_VERB] = "sub-verb", [VERB_ONE_WORD] = "word" };
	json_t *arr = json_array();

	for (const struct opt_row *r = spec->opts; arr && r->id != OPT_END; r++)
		if (r->need != OPT_REFUSED)
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
	return d->parse == parse_string || d->parse == parse_flap ? "VALUE" : "N";
}

static void dump_rows(FILE *f, const char *verb, int verb_len, const struct verb_spec *spec)
{
	for (const struct opt_row *r = spec->opts; r->id != OPT_END; r++) {
		const struct opt_def *d = &defs[r->id];

		if (r->need == OPT_REFUSED)
			continue;
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
