/* opts.h — the command line's options: one shared definition per option
 * (its name, short letter, whether it takes a value, the parser that
 * checks and stores it, whether it names a path, what to say when a verb
 * requires it and it is missing), and per verb one table of the options it
 * takes (rows naming those definitions).
 *
 * Promises: every message a user can get from bad usage is one line on
 * stderr and exit 2; each option may be given once; a verb sees only the
 * options of its table (any other is "unknown"); every option is parsed
 * against all definitions first, so an abbreviation means the same in
 * every verb and an option of another verb is named precisely.
 */
#ifndef NODETUNE_CLI_OPTS_H
#define NODETUNE_CLI_OPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "observe/sampler.h"   /* SAMPLER_MAX_PIDS */

/* Every option, by what it is; the index of its definition. */
enum opt_id {
	OPT_POLICY, OPT_RANKS, OPT_TOPOLOGY, OPT_SYNTHETIC, OPT_SYSROOT, OPT_STATE_DIR,
	OPT_JSON, OPT_DRY_RUN, OPT_MARKDOWN, OPT_QUIET,
	OPT_LOCAL_RANK, OPT_LOCAL_SIZE, OPT_WINDOW,
	OPT_A, OPT_B, OPT_REPORT, OPT_GOOD, OPT_BAD,
	OPT_TRIALS, OPT_STEPS, OPT_THRESHOLD, OPT_ALPHA, OPT_BUDGET, OPT_SEED,
	OPT_PID, OPT_INTERVAL, OPT_DURATION,
	OPT_INTERVAL_S,               /* the daemon's --interval, in seconds (observe's is ms) */
	OPT_FLAP, OPT_METRICS, OPT_NO_METRICS, OPT_TEXTFILE_DIR, OPT_SOCKET, OPT_REVERT_ON_EXIT,
	OPT_FLEET, OPT_HOST,          /* the daemon joins a fleet */
	OPT_ENDPOINTS, OPT_NAME, OPT_WAVES, OPT_GATE_CMD, OPT_GATE_BUDGET, OPT_WAVE_TIMEOUT, OPT_SHADOW,
	OPT_GATE_ALLOW_INCONCLUSIVE,  /* fleet rollout's */
	OPT_CACERT, OPT_CERT, OPT_KEY, OPT_USER, OPT_PASSWORD_FILE, OPT_FLEET_CONF,   /* etcd credentials */
	OPT_HOSTS, OPT_PASSWORD_DIR, OPT_PRINT,                                       /* fleet init-auth's */
	OPT_METRIC, OPT_METRIC_KIND, OPT_SKIP_STEPS,   /* ab's figure */
	OPT_LIMITS,                   /* apply's and run's site limits */
	OPT_OUT,                      /* fleet keygen's directory */
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
	const char *spec_a, *spec_b, *report, *good, *bad;
	struct opt_pids pids;
	unsigned interval_ms;
	double duration_s;
	unsigned trials, steps;
	double threshold, alpha, budget;   /* threshold: a fraction (--threshold is in %) */
	unsigned long long seed;
	double interval_s;
	const char *flap, *metrics, *textfile_dir, *socket;
	const char *fleet, *host, *endpoints, *name, *waves, *gate_cmd;
	const char *cacert, *cert, *key, *user, *password_file, *fleet_conf, *hosts, *password_dir;
	double gate_budget, wave_timeout;
	const char *metric, *metric_kind;
	const char *limits, *out;
	unsigned skip_steps;
	bool json, dry_run, markdown, quiet, no_metrics, revert_on_exit, shadow, gate_allow_inconclusive, print;
	bool given[OPT__COUNT];
	char **command;               /* NULL-terminated, after "--"; NULL none */
	const char *sub_verb;         /* VERB_SUB_VERB: the word after the verb; NULL none */
	char **args;                  /* VERB_SUB_VERB: words after the options, NULL-terminated; NULL none */
};

/* Whether a verb needs an option. */
enum opt_need {
	OPT_OPTIONAL,
	OPT_REQUIRED,                 /* missing: the definition's message, exit 2 */
};

/* One row of a verb's table. */
struct opt_row {
	enum opt_id id;
	enum opt_need need;
};

/* The last row of a verb's table. */
#define OPT_TABLE_END { OPT_END, OPT_OPTIONAL }

/* What a verb takes after its options. */
enum verb_command {
	VERB_NO_COMMAND,              /* nothing: an argument or "--" is refused */
	VERB_COMMAND,                 /* "-- COMMAND [ARGS...]", required */
	VERB_COMMAND_OPTIONAL,        /* "-- COMMAND [ARGS...]" or nothing */
	VERB_SUB_VERB,                /* "SUB [OPTIONS] [WORDS...]" (`slurm gres --topology F`) */
};

/* Everything the option machinery needs to know about a verb. */
struct verb_spec {
	const struct opt_row *opts;   /* in the order the post-parse checks run; ends with OPT_END */
	enum verb_command command;
	const char *usage;            /* the synopsis line(s) */
	const char *summary;          /* one line, for nodetune --help */
	const char *help;             /* what it does, for VERB --help */
};

/* Parse argv (argv[0] is the verb, called name) for the verb spec into o
 * (zeroed by the caller), then check what needs the options together:
 * required options, --topology against --synthetic, that --sysroot is a
 * directory and --state-dir is none other than one (default
 * JOURNAL_DEFAULT_DIR); --quiet lowers the log level.  --help prints the
 * usage to stdout.  Returns -1 to go on, or the exit code to end with
 * (0 after --help, 2 after a usage error, which is said). */
int opts_parse(const char *name, const struct verb_spec *spec, int argc, char **argv, struct opts *o);

/* Write the options of verb (called name) to f for the tools built from
 * these tables (the man page check, the bash completion): one line per
 * option, "VERB<TAB>LONG<TAB>SHORT<TAB>ARG", SHORT "-" when none, ARG "-"
 * for a flag, else POLICY, DIR, FILE, N (a number) or VALUE; --help last.
 * A verb with sub-verbs (VERB_SUB_VERB) is written once per sub-verb its
 * usage names, as "VERB SUB".  Returns 0, or -EIO when f failed. */
int opts_dump(FILE *f, const char *name, const struct verb_spec *spec);

#endif
