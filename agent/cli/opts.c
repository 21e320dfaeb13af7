/* opts.c — the option definitions and the parser every verb shares (see
 * opts.h).
 *
 * Divisions: value parsers; the definitions; checks after parsing; the
 * command after "--"; opts_parse; opts_dump (the tables, for the man
 * page check and the bash completion).
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
	char letter;                  /* short option, 0 none */
	bool takes_value;
	bool is_path;                 /* an empty value is refused */
	opt_parse_fn parse;
	double min, max;              /* the range of a number */
	const char *unit;             /* a decimal number: "seconds", "a probability" */
	size_t offset;                /* where in struct opts it is stored */
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
		log_msg(LOG_ERR, "--sysroot %s: %s", o->sysroot, strerror(errno));
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
			errno && !S_ISDIR(st.st_mode) ? strerror(errno) : "not a directory");
		return EXIT_USAGE;
	}
	return 0;
}

/* --fleet and --host go together (a daemon joins a fleet under a name) */
static int check_fleet(const struct opts *o)
{
	if (!o->fleet != !o->host) {
		log_msg(LOG_ERR, "--fleet ENDPOINTS and --host NAME go together");
		return EXIT_USAGE;
	}
	return 0;
}

/* the gate's options need a gate, and a shadow rollout has none */
static int check_gate(const struct opts *o)
{
	if (!o->gate_cmd && (o->given[OPT_GATE_BUDGET] || o->gate_allow_inconclusive)) {
		log_msg(LOG_ERR, "--gate-budget and --gate-allow-inconclusive need --gate-cmd");
		return EXIT_USAGE;
	}
	if (o->gate_cmd && o->shadow) {
		log_msg(LOG_ERR, "--shadow changes nothing, so it has no gate: drop --gate-cmd or --shadow");
		return EXIT_USAGE;
	}
	for (const char *c = o->gate_cmd; c && *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			log_msg(LOG_ERR, "--gate-cmd: a control character at byte %td (one line of sh, as the "
					 "hosts show and log it)", c - o->gate_cmd);
			return EXIT_USAGE;
		}
	return 0;
}

/* ---- the definitions --------------------------------------------------- */

/* The rows below open with one of these and close with " }" after any
 * of .letter, .required, .check. */
#define AT(field) offsetof(struct opts, field)
#define FLAG(n, f) { .name = n, .parse = parse_flag, .offset = AT(f)
#define STRING(n, f) { .name = n, .takes_value = true, .parse = parse_string, .offset = AT(f)
#define PATH(n, f) { .name = n, .takes_value = true, .is_path = true, .parse = parse_string, .offset = AT(f)
#define NUMBER(n, f, fn, lo, hi, u) \
	{ .name = n, .takes_value = true, .parse = fn, .min = lo, .max = hi, .unit = u, .offset = AT(f)

static const struct opt_def defs[OPT__COUNT] = {
	[OPT_POLICY] = PATH("policy", policy), .required = "--policy FILE is required" },
	[OPT_RANKS] = NUMBER("ranks", ranks, parse_uint, 1, PLAN_MAX_RANKS, NULL), .letter = 'n',
		       .required = "-n/--ranks N is required" },
	[OPT_TOPOLOGY] = PATH("topology", topology) },
	[OPT_SYNTHETIC] = STRING("synthetic", synthetic), .check = check_machine },
	[OPT_SYSROOT] = PATH("sysroot", sysroot), .check = check_sysroot },
	[OPT_STATE_DIR] = PATH("state-dir", state_dir), .check = check_state_dir },
	[OPT_JSON] = FLAG("json", json) },
	[OPT_DRY_RUN] = FLAG("dry-run", dry_run) },
	[OPT_MARKDOWN] = FLAG("markdown", markdown) },
	[OPT_QUIET] = FLAG("quiet", quiet), .letter = 'q' },
	[OPT_LOCAL_RANK] = NUMBER("local-rank", local_rank, parse_uint, 0, PLAN_MAX_RANKS - 1, NULL) },
	[OPT_LOCAL_SIZE] = NUMBER("local-size", local_size, parse_uint, 1, PLAN_MAX_RANKS, NULL) },
	[OPT_WINDOW] = NUMBER("window", window_s, parse_double, 0.2, 3600, "seconds") },
	[OPT_A] = STRING("a", spec_a), .required = AB_ARMS_REQUIRED },
	[OPT_B] = STRING("b", spec_b), .required = AB_ARMS_REQUIRED },
	[OPT_REPORT] = PATH("report", report) },
	[OPT_GOOD] = PATH("good", good), .required = BISECT_POLICIES_REQUIRED },
	[OPT_BAD] = PATH("bad", bad), .required = BISECT_POLICIES_REQUIRED },
	[OPT_TRIALS] = NUMBER("trials", trials, parse_uint, 2, 1000, NULL) },
	[OPT_STEPS] = NUMBER("steps", steps, parse_uint, 1, 1000000, NULL) },
	[OPT_THRESHOLD] = NUMBER("threshold", threshold, parse_percent, 0, 100, "a percentage") },
	[OPT_ALPHA] = NUMBER("alpha", alpha, parse_double, 1e-6, 0.5, "a probability") },
	[OPT_BUDGET] = NUMBER("budget", budget, parse_double, 1, 86400, "seconds") },
	[OPT_SEED] = NUMBER("seed", seed, parse_seed, 1, 4000000000u, NULL) },
	[OPT_PID] = NUMBER("pid", pids, parse_pids, 1, 4194304, NULL) },
	[OPT_INTERVAL] = NUMBER("interval", interval_ms, parse_uint, 10, 60000, NULL) },
	[OPT_DURATION] = NUMBER("duration", duration_s, parse_double, 0.001, 86400 * 365, "seconds") },
	/* the daemon's: --interval has its own unit there (a second definition
	 * of one name: the verb's table says which it takes) */
	[OPT_INTERVAL_S] = NUMBER("interval", interval_s, parse_double, 0.05, 86400, "seconds") },
	[OPT_FLAP] = STRING("flap", flap), .check = check_flap },
	[OPT_METRICS] = STRING("metrics", metrics), .check = check_metrics },
	[OPT_NO_METRICS] = FLAG("no-metrics", no_metrics) },
	[OPT_TEXTFILE_DIR] = PATH("textfile-dir", textfile_dir), .check = check_textfile_dir },
	[OPT_SOCKET] = PATH("socket", socket) },
	[OPT_REVERT_ON_EXIT] = FLAG("revert-on-exit", revert_on_exit) },
	[OPT_FLEET] = STRING("fleet", fleet), .check = check_fleet },
	[OPT_HOST] = STRING("host", host), .check = check_fleet },
	[OPT_ENDPOINTS] = STRING("endpoints", endpoints), .required = "--endpoints URL[,URL...] is required" },
	[OPT_NAME] = STRING("name", name), .required = "--name NAME is required" },
	[OPT_WAVES] = STRING("waves", waves) },
	[OPT_GATE_CMD] = STRING("gate-cmd", gate_cmd), .check = check_gate },
	[OPT_GATE_BUDGET] = NUMBER("gate-budget", gate_budget, parse_double, 1, 86400, "seconds"),
			     .check = check_gate },
	[OPT_WAVE_TIMEOUT] = NUMBER("wave-timeout", wave_timeout, parse_double, 1, 86400 * 7, "seconds") },
	[OPT_SHADOW] = FLAG("shadow", shadow), .check = check_gate },
	[OPT_METRIC] = STRING("metric", metric), .check = check_metric },
	[OPT_METRIC_KIND] = STRING("metric-kind", metric_kind), .check = check_metric },
	[OPT_SKIP_STEPS] = NUMBER("skip-steps", skip_steps, parse_uint, 0, 1000000, NULL) },
	[OPT_GATE_ALLOW_INCONCLUSIVE] = FLAG("gate-allow-inconclusive", gate_allow_inconclusive), .check = check_gate },
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
 * and --help. */
static const struct option *long_options(void)
{
	static struct option lo[OPT__COUNT + 2];

	if (!lo[0].name) {
		int n = 0;

		for (int i = 0; i < OPT__COUNT; i++)
			if (first_of_name(i) == i)
				lo[n++] = (struct option){ defs[i].name,
							   defs[i].takes_value ? required_argument : no_argument, NULL,
							   opt_val(i) };
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
	if (o->quiet)
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
	if (id != OPT__COUNT && !verb_row(spec, id))
		for (int i = id + 1; i < OPT__COUNT; i++)
			if (first_of_name(i) == id && verb_row(spec, i))
				id = i;       /* the verb's definition of this name */
	d = &defs[id];
	if (id == OPT__COUNT || !verb_row(spec, id)) {
		log_msg(LOG_ERR, "unknown option '%s' (see --help)", name);
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

	/* a sub-verb comes first, its options after it */
	if (spec->command == VERB_SUB_VERB && argc > 1 && argv[1][0] != '-') {
		o->sub_verb = argv[1];
		argc--, argv++;
	}
	optind = 1;
	opterr = 0;
	for (; (ch = getopt_long(argc, argv, short_options(), lo, &li)) != -1; li = -1) {
		char typed[64];

		if (ch == 'h') {
			printf("Usage: %s\n\n%s\n", spec->usage, spec->help);
			return finish_stdout(0);
		}
		r = take_option(spec, ch, typed_name(lo, ch, li, argv, typed, sizeof(typed)), argv, o);
		if (r)
			return r;
	}
	if ((r = parse_command(name, spec, argc, argv, o)) || (r = check_opts(spec, o)))
		return r;
	return -1;
}

/* ---- opts_dump --------------------------------------------------------- */

/* The name of d's value in the dump: what completes it. */
static const char *dump_arg(const struct opt_def *d)
{
	if (!d->takes_value)
		return "-";
	if (d->offset == AT(policy) || d->offset == AT(good) || d->offset == AT(bad))
		return "POLICY";
	if (d->offset == AT(sysroot) || d->offset == AT(state_dir) || d->offset == AT(textfile_dir))
		return "DIR";
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
