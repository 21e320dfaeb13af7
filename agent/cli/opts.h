/* SPDX-License-Identifier: MIT */
/* opts.h — the command line's options: one shared definition per option
 * (its name and any old name kept as an alias, short letter, whether it
 * takes a value and what it is called in help, the parser that checks and
 * stores it, a line of help, what to say when a verb requires it and it is
 * missing), and per verb one table of the options it takes (rows naming
 * those definitions, with the verb's own help where it differs).  The
 * tables are the one source of a verb's option list: VERB --help prints
 * them (opts_print_help), and the man pages and the shell completion are
 * checked against or generated from them.
 *
 * Promises: every message a user can get from bad usage is one line on
 * stderr and exit 2; each option may be given once; a verb sees only the
 * options of its table and the global ones (-v, --log-format, --version,
 * --help: taken before or after the verb); any other is "unknown", and one
 * the verb refuses says why; every option is parsed against all
 * definitions first, so an abbreviation means the same in every verb and
 * an option of another verb is named precisely.
 */
#ifndef NODETUNE_CLI_OPTS_H
#define NODETUNE_CLI_OPTS_H

#include <stdbool.h>
#include <jansson.h>
#include <stdio.h>

#include "observe/sampler.h"   /* SAMPLER_MAX_PIDS */

/* Every option, by what it is; the index of its definition. */
enum opt_id {
	OPT_POLICY, OPT_RANKS, OPT_TOPOLOGY, OPT_SYNTHETIC, OPT_SYSROOT, OPT_STATE_DIR,
	OPT_JSON, OPT_DRY_RUN, OPT_MARKDOWN, OPT_QUIET,
	OPT_LOCAL_RANK, OPT_LOCAL_SIZE, OPT_WINDOW,
	OPT_A, OPT_B, OPT_REPORT, OPT_GOOD, OPT_BAD,
	OPT_TRIALS, OPT_STEPS, OPT_THRESHOLD, OPT_ALPHA, OPT_BUDGET, OPT_SEED, OPT_TRIM,
	OPT_PID, OPT_INTERVAL, OPT_DURATION,
	OPT_INTERVAL_S,               /* the daemon's --interval (observe's has another range) */
	OPT_FLAP, OPT_METRICS, OPT_NO_METRICS, OPT_TEXTFILE_DIR, OPT_SOCKET, OPT_REVERT_ON_EXIT,
	OPT_HOST,                     /* the daemon joins a fleet (--endpoints) */
	OPT_ENDPOINTS, OPT_NAME, OPT_WAVES, OPT_GATE, OPT_GATE_BUDGET, OPT_WAVE_TIMEOUT, OPT_SHADOW,
	OPT_GATE_ALLOW_INCONCLUSIVE,  /* fleet rollout's */
	OPT_CACERT, OPT_CERT, OPT_KEY, OPT_USER, OPT_PASSWORD_FILE, OPT_FLEET_CONF,   /* etcd credentials */
	OPT_INSECURE_PLAINTEXT,       /* a login over http:// */
	OPT_HOSTS, OPT_PASSWORD_DIR, OPT_PRINT,                                       /* fleet init-auth's */
	OPT_METRIC, OPT_METRIC_KIND, OPT_SKIP_STEPS,   /* ab's figure */
	OPT_LIMITS,                   /* apply's and run's site limits */
	OPT_OUT,                      /* fleet keygen's directory */
	OPT_SIGNING_KEY,              /* the controller's secret key (fleet keygen's NAME.key) */
	OPT_FLEET_KEYS, OPT_FLEET_INSECURE_UNSIGNED,   /* the daemon's trust in the fleet's documents */
	OPT_FLEET_ID, OPT_FLEET_MAX_AGE,               /* the fleet signed for; the daemon's freshness limit */
	OPT_GATES_DIR,                /* the daemon's named gates */
	OPT_AS_USER, OPT_TRIAL_DIR,   /* ab's job as a user, and its trial directory */
	OPT_SVG,                      /* discover's picture */
	OPT_VERBOSE, OPT_LOG_FORMAT, OPT_VERSION,      /* global: every verb takes them */
	OPT__COUNT,
	OPT_END = -1,                 /* ends a verb's table */
};

struct opt_pids {
	int pid[SAMPLER_MAX_PIDS];
	int n;
};

/* What the options said.  given[] tells a value from its absence (0 is a
 * threshold, not "unset"). */
struct opts {
	const char *policy, *topology, *synthetic, *sysroot, *state_dir;
	unsigned ranks, local_rank, local_size;
	double window_s;
	const char *spec_a, *spec_b, *report, *good, *bad, *svg;
	struct opt_pids pids;
	unsigned interval_ms;         /* observe's --interval, kept in milliseconds */
	double duration_s;
	unsigned trials, steps;
	double threshold, alpha, budget;   /* threshold: a fraction (--threshold is in %) */
	double trim;                       /* a fraction (--trim is in %) */
	unsigned long long seed;
	double interval_s;
	const char *flap, *metrics, *textfile_dir, *socket;
	const char *host, *endpoints, *name, *waves, *gate, *gates_dir, *as_user, *trial_dir;
	const char *cacert, *cert, *key, *user, *password_file, *fleet_conf, *hosts, *password_dir;
	const char *log_format;
	double gate_budget, wave_timeout;
	const char *metric, *metric_kind;
	const char *limits, *out, *signing_key, *fleet_keys, *fleet_id;
	double fleet_max_age;
	unsigned skip_steps;
	bool json, dry_run, markdown, quiet, no_metrics, revert_on_exit, shadow, gate_allow_inconclusive, print;
	bool fleet_insecure_unsigned;
	bool insecure_plaintext;
	bool verbose, version;
	bool given[OPT__COUNT];
	char **command;               /* NULL-terminated, after "--"; NULL none */
	const char *sub_verb;         /* VERB_SUB_VERB: the word after the verb; NULL none */
	const char *word;             /* VERB_ONE_WORD: the word */
	char **args;                  /* VERB_SUB_VERB: words after the options, NULL-terminated; NULL none */
};

/* Whether a verb needs an option. */
enum opt_need {
	OPT_OPTIONAL,
	OPT_REQUIRED,                 /* missing: the definition's message, exit 2 */
	OPT_REFUSED,                  /* given: "--NAME: <the row's help>", exit 2 (not listed in help) */
};

/* One row of a verb's table. */
struct opt_row {
	enum opt_id id;
	enum opt_need need;
	const char *help;             /* the verb's own help line (its default); NULL: the definition's */
};

/* The last row of a verb's table. */
#define OPT_TABLE_END { OPT_END, OPT_OPTIONAL, NULL }

/* What a verb takes after its options. */
enum verb_command {
	VERB_NO_COMMAND,              /* nothing: an argument or "--" is refused */
	VERB_COMMAND,                 /* "-- COMMAND [ARGS...]", required */
	VERB_COMMAND_OPTIONAL,        /* "-- COMMAND [ARGS...]" or nothing */
	VERB_SUB_VERB,                /* "SUB [OPTIONS] [WORDS...]" (`slurm gres --topology F`) */
	VERB_ONE_WORD,                /* "WORD [OPTIONS]" or "[OPTIONS] WORD" (`policy show NAME`): o->word;
				       * NULL when none is given: the verb says what it expected */
};

/* Everything the option machinery needs to know about a verb. */
struct verb_spec {
	const struct opt_row *opts;   /* in the order the post-parse checks run; ends with OPT_END */
	enum verb_command command;
	const char *usage;            /* the synopsis line(s) */
	const char *summary;          /* one line, for nodetune --help */
	const char *help;             /* what it does, one short paragraph, for VERB --help (the options: the
				       * table; the long story: its man page) */
};

/* main.c's: the usage of nodetune (the verbs), and the --version line. */
void cli_usage(FILE *f);
void cli_version(void);

/* Print spec's help to f: "Usage: " and its synopsis, its paragraph, and
 * its options from its table (the letter, the name, the value's name, the
 * help, any alias; not the refused ones), then the global options on one
 * line.  At most 80 columns a line (the synopsis and paragraph are
 * written so; tests/integration/test_cli_help.sh checks 40 lines). */
void opts_print_help(FILE *f, const struct verb_spec *spec);

/* Print text on f from column col on (the caller has printed up to it),
 * its words wrapped to 79 columns, continuation lines indented to indent;
 * then a newline. */
void opts_print_wrapped(FILE *f, const char *text, int col, int indent);

/* spec's table as data, for tools that generate from it (the man pages,
 * scripts/opts-mdoc.py; man page checks, shell completion): {"usage",
 * "summary", "help", "takes": "nothing" | "command" | "optional command" |
 * "sub-verb" | "word", "options": [{"name", "letter", "alias", "value",
 * "help", "man" (a longer text for the man page, after help; absent when
 * none), "need": "optional" | "required"}]}, the global options last (with
 * "global": true); the options a verb refuses are not listed.  NULL: out
 * of memory. */
json_t *opts_spec_json(const struct verb_spec *spec);

/* The global options before the verb (argv[0] is "nodetune"): parsed
 * into o from the same definitions as after it.  Returns the index of the
 * verb in argv, or -1 - the exit code to end with (--help and --version
 * print and end with 0; no verb, or a bad option, 2, said). */
int opts_parse_globals(int argc, char **argv, struct opts *o);

/* Parse argv (argv[0] is the verb, called name) for the verb spec into o
 * (zeroed by the caller), then check what needs the options together:
 * required options, --topology against --synthetic, that --sysroot is a
 * directory and --state-dir is none other than one (default
 * JOURNAL_DEFAULT_DIR); --quiet lowers the log level, -v raises it.
 * --help prints the verb's help to stdout, --version the version.  Returns -1 to go on, or the exit code to end with
 * (0 after --help, 2 after a usage error, which is said). */
int opts_parse(const char *name, const struct verb_spec *spec, int argc, char **argv, struct opts *o);

/* Write the options of verb (called name) to f for the tools built from
 * these tables (the man page check, the bash completion): one line per
 * option it takes (not the refused ones), "VERB<TAB>LONG<TAB>SHORT<TAB>ARG",
 * SHORT "-" when none, ARG "-" for a flag, else POLICY, DIR, FILE, N (a
 * number) or VALUE; --help last.
 * A verb with sub-verbs (VERB_SUB_VERB) is written once per sub-verb its
 * usage names, as "VERB SUB".  Returns 0, or -EIO when f failed. */
int opts_dump(FILE *f, const char *name, const struct verb_spec *spec);

#endif
