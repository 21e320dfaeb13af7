/* main.c — the nodetune command line: a thin layer over the agent library.
 *
 * Verbs come from one table; every option is one row of one option table,
 * and each verb says which options it takes.  A verb loads its inputs, calls
 * the library, prints, and returns the exit code of the contract in
 * DESIGN.md: 0 success, 1 the check found a problem, 2 bad usage or input
 * (nothing changed), 3 runtime failure (what was changed is rolled back).
 *
 * Divisions: options; shared loading; verbs (discover, plan, keys, apply,
 * revert, verify, exec, run); the verb table and main().
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ab.h"
#include "apply.h"
#include "bisect.h"
#include "bind.h"
#include "cpulist.h"
#include "discover.h"
#include "doctor.h"
#include "fsroot.h"
#include "jobcg.h"
#include "journal.h"
#include "knob.h"
#include "kstate.h"
#include "log.h"
#include "parse.h"
#include "plan.h"
#include "policy.h"
#include "report.h"
#include "sampler.h"
#include "topo.h"

#ifndef NODETUNE_VERSION
#define NODETUNE_VERSION "0.2.0"
#endif

enum { EXIT_PROBLEM = 1, EXIT_USAGE = 2, EXIT_RUNTIME = 3 };

/* Flush stdout and report a failed write (a full disk, a closed pipe):
 * then the exit code is 3, unless rc is already 2 or 3 (a result that
 * could not be written is not "a problem found", exit 1). */
static int finish_stdout(int rc)
{
	int e;

	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	e = errno;    /* 0 when an earlier write failed and this flush had nothing left */
	log_msg(LOG_ERR, "writing standard output failed%s%s", e ? ": " : "", e ? strerror(e) : "");
	return rc >= EXIT_USAGE ? rc : EXIT_RUNTIME;
}

/* ---- options ----------------------------------------------------------- */

enum {
	O_POLICY = 1 << 0, O_RANKS = 1 << 1, O_TOPOLOGY = 1 << 2, O_SYNTHETIC = 1 << 3,
	O_SYSROOT = 1 << 4, O_JSON = 1 << 5, O_STATE_DIR = 1 << 6, O_DRY_RUN = 1 << 7,
	O_LOCAL_RANK = 1 << 8, O_LOCAL_SIZE = 1 << 9, O_MARKDOWN = 1 << 10, O_WINDOW = 1 << 11,
	O_AB = 1 << 12,        /* --trials --steps --threshold --alpha --budget --seed */
	O_BISECT = 1 << 13,    /* --good --bad */
	O_ARMS = 1 << 14,      /* --a --b --report */
	O_OBSERVE = 1 << 15,   /* --pid --interval --duration */
	O_COMMAND = 1 << 16,   /* the verb takes "-- CMD..." */
	O_COMMAND_OPTIONAL = 1 << 18,
	O_POLICY_OPTIONAL = 1 << 17,  /* --policy allowed, not required */
	O_QUIET = 1 << 19,     /* --quiet: only errors on stderr */
};

struct opts {
	const char *policy, *topology, *synthetic, *sysroot, *state_dir;
	unsigned ranks, local_rank, local_size;
	double window_s;
	const char *spec_a, *spec_b, *report, *good, *bad;
	int pids[SAMPLER_MAX_PIDS], n_pids;
	unsigned interval_ms;
	double duration_s;
	unsigned trials, steps;
	double threshold, alpha, budget;
	unsigned long long seed;
	bool has_ranks, has_local_rank, has_local_size, has_threshold;
	bool json, dry_run, markdown, quiet;
	char **command;       /* NULL-terminated, after "--" */
};

static const struct option long_opts[] = {
	{ "policy", required_argument, NULL, 'p' },
	{ "ranks", required_argument, NULL, 'n' },
	{ "topology", required_argument, NULL, 't' },
	{ "synthetic", required_argument, NULL, 's' },
	{ "sysroot", required_argument, NULL, 'r' },
	{ "json", no_argument, NULL, 'j' },
	{ "state-dir", required_argument, NULL, 'S' },
	{ "dry-run", no_argument, NULL, 'd' },
	{ "local-rank", required_argument, NULL, 'l' },
	{ "local-size", required_argument, NULL, 'L' },
	{ "markdown", no_argument, NULL, 'm' },
	{ "window", required_argument, NULL, 'w' },
	{ "a", required_argument, NULL, 'A' },
	{ "b", required_argument, NULL, 'B' },
	{ "trials", required_argument, NULL, 'T' },
	{ "steps", required_argument, NULL, 'P' },
	{ "threshold", required_argument, NULL, 'H' },
	{ "alpha", required_argument, NULL, 'X' },
	{ "budget", required_argument, NULL, 'U' },
	{ "seed", required_argument, NULL, 'E' },
	{ "report", required_argument, NULL, 'R' },
	{ "good", required_argument, NULL, 'G' },
	{ "bad", required_argument, NULL, 'Q' },
	{ "pid", required_argument, NULL, 'I' },
	{ "interval", required_argument, NULL, 'V' },
	{ "duration", required_argument, NULL, 'D' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* Which O_ flag each option letter needs. */
static unsigned opt_flag(int c)
{
	switch (c) {
	case 'p': return O_POLICY | O_POLICY_OPTIONAL;
	case 'n': return O_RANKS;
	case 't': return O_TOPOLOGY;
	case 's': return O_SYNTHETIC;
	case 'r': return O_SYSROOT;
	case 'j': return O_JSON;
	case 'S': return O_STATE_DIR;
	case 'd': return O_DRY_RUN;
	case 'l': return O_LOCAL_RANK;
	case 'L': return O_LOCAL_SIZE;
	case 'm': return O_MARKDOWN;
	case 'q': return O_QUIET;
	case 'w': return O_WINDOW;
	case 'G': case 'Q': return O_BISECT;
	case 'I': case 'V': case 'D': return O_OBSERVE;
	case 'A': case 'B': case 'R': return O_ARMS;
	case 'T': case 'P': case 'H': case 'X': case 'U': case 'E': return O_AB;
	}
	return 0;
}

/* The long name of option letter ch ("--policy"), for messages. */
static const char *opt_name(int ch)
{
	static char buf[40];

	for (const struct option *l = long_opts; l->name; l++)
		if (l->val == ch) {
			snprintf(buf, sizeof(buf), "--%s", l->name);
			return buf;
		}
	snprintf(buf, sizeof(buf), "-%c", ch);
	return buf;
}

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

/* --pid PID[,PID...]: each a process id, no empty items.  0 or -EINVAL. */
static int opt_pids(const char *val, struct opts *o)
{
	const char *p = val;

	do {
		size_t n = strcspn(p, ",");
		char item[16];
		unsigned pid;

		if (n == 0 || n >= sizeof(item)) {
			log_msg(LOG_ERR, "--pid '%s': expected process ids separated by commas", val);
			return -EINVAL;
		}
		snprintf(item, sizeof(item), "%.*s", (int)n, p);
		if (opt_uint("--pid", item, 1, 4194304, &pid) < 0)
			return -EINVAL;
		if (o->n_pids == SAMPLER_MAX_PIDS) {
			log_msg(LOG_ERR, "--pid: at most %d processes", SAMPLER_MAX_PIDS);
			return -EINVAL;
		}
		o->pids[o->n_pids++] = (int)pid;
		p += n;
	} while (*p++ == ',');
	return 0;
}

/* Options whose value names a file or directory: an empty one is a mistake
 * (an unset shell variable), never "the current directory". */
static bool opt_is_path(int ch)
{
	return ch > 0 && strchr("ptrSRGQ", ch) != NULL;
}

/* Store the value of option ch in o.  0, or -EINVAL (said). */
static int opt_set(int ch, const char *val, struct opts *o)
{
	const char *name = opt_name(ch);
	double d;

	if (opt_is_path(ch) && !val[0]) {
		log_msg(LOG_ERR, "%s: empty path", name);
		return -EINVAL;
	}
	switch (ch) {
	case 'p': o->policy = val; return 0;
	case 't': o->topology = val; return 0;
	case 's': o->synthetic = val; return 0;
	case 'r': o->sysroot = val; return 0;
	case 'S': o->state_dir = val; return 0;
	case 'j': o->json = true; return 0;
	case 'd': o->dry_run = true; return 0;
	case 'm': o->markdown = true; return 0;
	case 'q': o->quiet = true; return 0;
	case 'A': o->spec_a = val; return 0;
	case 'B': o->spec_b = val; return 0;
	case 'R': o->report = val; return 0;
	case 'G': o->good = val; return 0;
	case 'Q': o->bad = val; return 0;
	case 'T': return opt_uint(name, val, 2, 1000, &o->trials);
	case 'P': return opt_uint(name, val, 1, 1000000, &o->steps);
	case 'E': {
		unsigned s32;

		/* from 1: 0 would be a degenerate generator state */
		if (opt_uint(name, val, 1, 4000000000u, &s32) < 0)
			return -EINVAL;
		o->seed = s32;
		return 0;
	}
	case 'H':
		if (opt_double(name, val, 0, 100, "a percentage", &d) < 0)
			return -EINVAL;
		o->threshold = d / 100;
		o->has_threshold = true;    /* 0 is a threshold, not "unset" */
		return 0;
	case 'X': return opt_double(name, val, 1e-6, 0.5, "a probability", &o->alpha);
	case 'U': return opt_double(name, val, 1, 86400, "seconds", &o->budget);
	case 'w': return opt_double(name, val, 0.2, 3600, "seconds", &o->window_s);
	case 'D': return opt_double(name, val, 0.001, 86400 * 365, "seconds", &o->duration_s);
	case 'I': return opt_pids(val, o);
	case 'V': return opt_uint(name, val, 10, 60000, &o->interval_ms);
	case 'n':
		o->has_ranks = true;
		return opt_uint(name, val, 1, PLAN_MAX_RANKS, &o->ranks);
	case 'l':
		o->has_local_rank = true;
		return opt_uint(name, val, 0, PLAN_MAX_RANKS - 1, &o->local_rank);
	case 'L':
		o->has_local_size = true;
		return opt_uint(name, val, 1, PLAN_MAX_RANKS, &o->local_size);
	}
	return 0;
}

struct cmd {
	const char *name;
	int (*fn)(struct opts *o);
	unsigned allowed;
	const char *usage;     /* the synopsis line(s) */
	const char *summary;
	const char *help;      /* what it does, for --help */
};

/* What follows the options: "-- CMD..." for the verbs that take one,
 * nothing otherwise.  optind is getopt's.  0 or EXIT_USAGE (said). */
static int parse_command(const struct cmd *c, int argc, char **argv, struct opts *o)
{
	/* getopt stops at "--" and skips it; it must be there explicitly */
	bool dashdash = optind > 1 && !strcmp(argv[optind - 1], "--");

	if (!(c->allowed & (O_COMMAND | O_COMMAND_OPTIONAL))) {
		if (optind < argc) {
			log_msg(LOG_ERR, "unexpected argument '%s' (see --help)", argv[optind]);
			return EXIT_USAGE;
		}
		if (dashdash) {
			log_msg(LOG_ERR, "unexpected argument '--': %s takes no command (see --help)", c->name);
			return EXIT_USAGE;
		}
		return 0;
	}
	if (optind < argc && !dashdash) {
		if (c->allowed & O_COMMAND)
			log_msg(LOG_ERR, "expected '-- COMMAND [ARGS...]' (see --help)");
		else
			log_msg(LOG_ERR, "unexpected argument '%s' (a command goes after '--'; see --help)",
				argv[optind]);
		return EXIT_USAGE;
	}
	if (optind >= argc && (dashdash || (c->allowed & O_COMMAND))) {
		log_msg(LOG_ERR, "expected '-- COMMAND [ARGS...]'%s (see --help)", dashdash ? ", got '--' alone" : "");
		return EXIT_USAGE;
	}
	if (optind < argc)
		o->command = argv + optind;
	return 0;
}

/* Checks that need the options together, and of the directories named,
 * before any verb looks at them.  0 or EXIT_USAGE (said). */
static int check_opts(const struct cmd *c, struct opts *o)
{
	struct stat st;

	if ((c->allowed & O_POLICY) && !(c->allowed & O_POLICY_OPTIONAL) && !o->policy) {
		log_msg(LOG_ERR, "--policy FILE is required");
		return EXIT_USAGE;
	}
	if (o->topology && o->synthetic) {
		log_msg(LOG_ERR, "--topology and --synthetic are mutually exclusive");
		return EXIT_USAGE;
	}
	if (o->sysroot && stat(o->sysroot, &st) < 0) {
		log_msg(LOG_ERR, "--sysroot %s: %s", o->sysroot, strerror(errno));
		return EXIT_USAGE;
	}
	if (o->sysroot && !S_ISDIR(st.st_mode)) {
		log_msg(LOG_ERR, "--sysroot %s: not a directory", o->sysroot);
		return EXIT_USAGE;
	}
	/* a state dir that does not exist yet is made by apply; one that is
	 * something else is a mistake */
	if (o->state_dir && stat(o->state_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		log_msg(LOG_ERR, "--state-dir %s: not a directory", o->state_dir);
		return EXIT_USAGE;
	}
	if (!o->state_dir)
		o->state_dir = JOURNAL_DEFAULT_DIR;
	if (o->quiet)
		log_set_level(LOG_ERR);
	return 0;
}

/* Parse argv for verb c into o.  Returns -1 to go on, or an exit code.
 * Every option may be given once: a second one is refused, whatever it
 * says (a root tool should not guess which of two policies was meant). */
static int parse_opts(const struct cmd *c, int argc, char **argv, struct opts *o)
{
	bool seen[128] = { false };
	int ch, r, li = -1;

	optind = 1;
	opterr = 0;
	for (; (ch = getopt_long(argc, argv, "+:hqn:", long_opts, &li)) != -1; li = -1) {
		/* the option as typed: a missing value ends argv, so the option
		 * is its last word; a short one may sit in a cluster ("-qx") */
		char typed[64];
		const char *name = typed;

		if (li >= 0)
			snprintf(typed, sizeof(typed), "--%s", long_opts[li].name);
		else if (ch != '?' && ch != ':')
			snprintf(typed, sizeof(typed), "-%c", ch);
		else if (ch == '?' && optopt)
			snprintf(typed, sizeof(typed), "-%c", optopt);
		else
			name = argv[optind - 1];
		if (ch == 'h') {
			printf("Usage: %s\n\n%s\n", c->usage, c->help);
			return finish_stdout(0);
		}
		if (ch == ':') {
			log_msg(LOG_ERR, "option '%s' needs a value (see --help)", name);
			return EXIT_USAGE;
		}
		if (ch == '?' && optopt && !strncmp(argv[optind - 1], "--", 2)) {
			log_msg(LOG_ERR, "option '%.*s' takes no value (see --help)",
				(int)strcspn(argv[optind - 1], "="), argv[optind - 1]);
			return EXIT_USAGE;
		}
		if (ch == '?' || !(opt_flag(ch) & c->allowed)) {
			log_msg(LOG_ERR, "unknown option '%s' (see --help)", name);
			return EXIT_USAGE;
		}
		if (seen[ch]) {
			log_msg(LOG_ERR, "%s given twice (each option may be given once)", opt_name(ch));
			return EXIT_USAGE;
		}
		seen[ch] = true;
		if (opt_set(ch, optarg, o) < 0)
			return EXIT_USAGE;
	}
	if ((r = parse_command(c, argc, argv, o)) || (r = check_opts(c, o)))
		return r;
	return -1;
}

/* ---- shared loading ---------------------------------------------------- */

/* Bad input and bad usage exit 2; other failures at run time 3. */
static int exit_code_for(int err)
{
	switch (err) {
	case -ENOMEM:
	case -EIO:
	case -EAGAIN:
	case -EINTR:
	case -EBUSY:
	case -ERANGE:
		return EXIT_RUNTIME;
	default:
		return EXIT_USAGE;
	}
}

static int print_json(json_t *doc)
{
	int r = 0;

	if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
		/* a failed write is said once, by finish_stdout */
		if (!ferror(stdout))
			log_msg(LOG_ERR, "writing JSON failed%s", doc ? "" : ": out of memory");
		r = EXIT_RUNTIME;
	} else {
		fputc('\n', stdout);
	}
	json_decref(doc);
	return r;
}

/* Everything a policy verb works from. */
struct ctx {
	struct fsroot *root;     /* NULL for a foreign topology without --sysroot */
	struct policy *policy;
	struct topo *topo;
	struct plan *plan;
};

static void ctx_release(struct ctx *x)
{
	plan_free(x->plan);
	topo_free(x->topo);
	policy_free(x->policy);
	fsroot_free(x->root);
	memset(x, 0, sizeof(*x));
}

/* Load the policy (refusing untrusted files as root), the machine and, with
 * nranks > 0, the plan.  nranks 0: one rank per GPU, or 1.  Returns -1 to go
 * on, or an exit code (x released). */
static int ctx_load(struct ctx *x, const struct opts *o, unsigned nranks, bool want_root)
{
	struct nt_err err = { 0 };

	memset(x, 0, sizeof(*x));
	if (o->policy) {
		x->policy = policy_load(o->policy, geteuid() == 0 ? POLICY_TRUSTED_ONLY : 0, &err);
		if (!x->policy)
			goto out_err;
	}
	if (o->topology)
		x->topo = topo_load_xml(o->topology, &err);
	else if (o->synthetic)
		x->topo = topo_load_synthetic(o->synthetic, &err);
	else
		x->topo = topo_load_host(o->sysroot, &err);
	if (!x->topo)
		goto out_err;
	if (want_root && (o->sysroot || (!o->topology && !o->synthetic))) {
		x->root = fsroot_open(o->sysroot ? o->sysroot : "/");
		if (!x->root) {
			err_set(&err, -EINVAL, "--sysroot %s: %s", o->sysroot, strerror(errno));
			goto out_err;
		}
	}
	if (x->policy) {
		if (!nranks)
			nranks = x->topo->n_gpus ? x->topo->n_gpus : 1;
		x->plan = plan_build(x->policy, x->topo, nranks, x->root, &err);
		if (!x->plan)
			goto out_err;
	}
	return -1;
out_err:
	log_msg(LOG_ERR, "%s", err.msg);
	ctx_release(x);
	return exit_code_for(err.code);
}

/* ---- discover ---------------------------------------------------------- */

static int cmd_discover(struct opts *o)
{
	struct nt_err err = { 0 };
	struct kstate ks = { 0 };
	struct fsroot *root = NULL;
	struct topo *t = NULL;
	bool have_ks = false;
	int r, rc = 0;

	if (o->sysroot || (!o->topology && !o->synthetic)) {
		root = fsroot_open(o->sysroot ? o->sysroot : "/");
		if (!root) {
			log_msg(LOG_ERR, "--sysroot %s: %s", o->sysroot ? o->sysroot : "/", strerror(errno));
			return EXIT_USAGE;
		}
		r = kstate_read(root, &ks, &err);
		if (r < 0) {
			log_msg(LOG_ERR, "%s", err.msg);
			rc = exit_code_for(r);
			goto out;
		}
		have_ks = true;
		for (unsigned i = 0; i < ks.n_notes; i++)
			log_msg(LOG_WARNING, "%s", ks.notes[i]);
	}
	if (o->topology)
		t = topo_load_xml(o->topology, &err);
	else if (o->synthetic)
		t = topo_load_synthetic(o->synthetic, &err);
	else
		t = topo_load_host(o->sysroot, &err);
	if (!t) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = exit_code_for(err.code);
		goto out;
	}
	if (o->json)
		rc = print_json(discover_json(t, have_ks ? &ks : NULL));
	else if (discover_print(stdout, t, have_ks ? &ks : NULL) < 0)
		rc = EXIT_RUNTIME;
	rc = finish_stdout(rc);
out:
	topo_free(t);
	kstate_release(&ks);
	fsroot_free(root);
	return rc;
}

/* ---- plan, keys -------------------------------------------------------- */

static int cmd_plan(struct opts *o)
{
	struct ctx x;
	int rc = ctx_load(&x, o, o->ranks, true);

	if (rc >= 0)
		return rc;
	rc = 0;
	if (o->json)
		rc = print_json(plan_json(x.plan));
	else if (plan_print(stdout, x.plan, x.topo) < 0)
		rc = EXIT_RUNTIME;
	ctx_release(&x);
	return finish_stdout(rc);
}

static int cmd_keys(struct opts *o)
{
	if (o->markdown) {
		knob_print_reference(stdout);
		return finish_stdout(0);
	}
	for (unsigned i = 0; i < knob_count; i++) {
		char key[96];

		snprintf(key, sizeof(key), "[%s] %s", knob_table[i].section, knob_table[i].key);
		printf("%-34s %s\n", key, knob_table[i].help);
	}
	return finish_stdout(0);
}

/* ---- apply, revert ------------------------------------------------------ */

/* Where a verb's closing summary ("applied ...: 2 changes") goes: stdout
 * for apply and revert; stderr for run, whose stdout is the job's. */
enum say { SAY_STDOUT, SAY_STDERR, SAY_NOTHING };

static void print_report(const struct apply_report *rep, const char *verb_done, enum say say)
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

static json_t *report_json(const struct apply_report *rep, const char *key)
{
	json_t *doc = json_object(), *arr = json_array(), *notes = json_array();

	for (unsigned i = 0; doc && arr && i < rep->n; i++)
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "path", rep->changes[i].path,
						     "from", rep->changes[i].from, "to", rep->changes[i].to));
	for (unsigned i = 0; notes && i < rep->n_notes; i++)
		json_array_append_new(notes, json_string(rep->notes[i]));
	if (!doc || !arr || !notes) {
		json_decref(doc);
		json_decref(arr);
		json_decref(notes);
		return NULL;
	}
	json_object_set_new(doc, key, arr);
	json_object_set_new(doc, "notes", notes);
	return doc;
}

/* Apply the host part of x->plan; shared by apply and run.  Every change
 * is logged (stderr); say is where the rest goes. */
static int do_apply(const struct ctx *x, const struct opts *o, enum say say)
{
	struct apply_report rep = { 0 };
	struct nt_err err = { 0 };
	int r = apply_plan(x->plan, x->root, o->state_dir, o->dry_run, &rep, &err);

	if (r < 0) {
		bool rolled_back = rep.rolled_back;   /* release clears it */

		for (unsigned i = 0; i < rep.n_notes; i++)
			log_msg(LOG_WARNING, "%s", rep.notes[i]);
		log_msg(LOG_ERR, "%s%s", err.msg, rolled_back ? " (everything changed was rolled back)" : "");
		apply_report_release(&rep);
		return rolled_back || r == -EBUSY ? EXIT_RUNTIME : exit_code_for(r);
	}
	if (o->json && say == SAY_STDOUT) {
		if (!o->dry_run)   /* every host change is logged, JSON or not */
			print_report(&rep, NULL, SAY_NOTHING);
		r = print_json(report_json(&rep, o->dry_run ? "would_change" : "changed"));
	} else if (o->dry_run && say == SAY_STDOUT) {
		printf("dry run of %s: %u change%s, nothing written\n", x->plan->policy_path, rep.n,
		       rep.n == 1 ? "" : "s");
		for (unsigned i = 0; i < rep.n; i++) {
			if (!strcmp(rep.changes[i].path, "cgroup"))
				printf("  job cgroup %s: would be created\n", rep.changes[i].to);
			else
				printf("  /%s: %s -> %s\n", rep.changes[i].path,
				       rep.changes[i].from[0] ? rep.changes[i].from : "?", rep.changes[i].to);
		}
	} else {
		char done[600];

		snprintf(done, sizeof(done), "applied %s (undo: nodetune revert%s%s)", x->plan->policy_path,
			 strcmp(o->state_dir, JOURNAL_DEFAULT_DIR) ? " --state-dir " : "",
			 strcmp(o->state_dir, JOURNAL_DEFAULT_DIR) ? o->state_dir : "");
		print_report(&rep, done, say);
	}
	apply_report_release(&rep);
	return r;
}

static int do_revert(const struct opts *o, enum say say)
{
	struct apply_report rep = { 0 };
	struct nt_err err = { 0 };
	int r = apply_revert(o->state_dir, o->sysroot, &rep, &err);

	if (r < 0) {
		/* bad input (a journal or state dir not to be trusted, a
		 * --sysroot the journal was not written for) when nothing was
		 * restored yet; after a restore began, a runtime failure */
		bool bad_input = rep.n == 0 && (r == -EINVAL || r == -ENOTDIR || r == -EPERM || r == -EACCES ||
						 r == -ELOOP || r == -ENOENT);

		print_report(&rep, NULL, SAY_NOTHING);
		log_msg(LOG_ERR, "%s", err.msg);
		apply_report_release(&rep);
		return bad_input ? EXIT_USAGE : EXIT_RUNTIME;
	}
	if (o->json && say == SAY_STDOUT) {
		print_report(&rep, NULL, SAY_NOTHING);
		r = print_json(report_json(&rep, "restored"));
	} else {
		print_report(&rep, "reverted", say);
	}
	apply_report_release(&rep);
	return r;
}

static int cmd_apply(struct opts *o)
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
	rc = do_apply(&x, o, SAY_STDOUT);
	ctx_release(&x);
	errno = 0;
	if (rc == 0 && !o->dry_run && (fflush(stdout) != 0 || ferror(stdout))) {
		/* whoever reads the result (a --json consumer) cannot learn
		 * what was applied: all or nothing, so nothing */
		log_msg(LOG_ERR, "writing standard output failed%s%s; rolling back", errno ? ": " : "",
			errno ? strerror(errno) : "");
		if (do_revert(o, SAY_NOTHING) == 0)
			log_msg(LOG_ERR, "everything changed was rolled back");
		return EXIT_RUNTIME;
	}
	return finish_stdout(rc);
}

static int cmd_revert(struct opts *o)
{
	return finish_stdout(do_revert(o, SAY_STDOUT));
}

/* ---- verify ------------------------------------------------------------ */

static int cmd_verify(struct opts *o)
{
	struct ctx x;
	json_t *drift = json_array();
	unsigned checked = 0, n_drift = 0;
	int rc = ctx_load(&x, o, o->ranks, true);

	if (rc >= 0) {
		json_decref(drift);
		return rc;
	}
	rc = 0;
	if (!x.root) {
		log_msg(LOG_ERR, "--topology/--synthetic describe another machine: verify needs this host or --sysroot DIR");
		ctx_release(&x);
		json_decref(drift);
		return EXIT_USAGE;
	}
	for (unsigned i = 0; i < x.plan->n_host + x.plan->n_irqs; i++) {
		bool is_host = i < x.plan->n_host;
		const char *path = is_host ? x.plan->host[i].path : x.plan->irqs[i - x.plan->n_host].path;
		const char *to = is_host ? x.plan->host[i].to : x.plan->irqs[i - x.plan->n_host].to;
		char raw[1024], now[PLAN_VALUE_MAX] = "(unreadable)", want[PLAN_VALUE_MAX];

		checked++;
		apply_normalize(to, want, sizeof(want));
		if (fsroot_read(x.root, path, raw, sizeof(raw)) >= 0)
			apply_normalize(raw, now, sizeof(now));
		if (!strcmp(now, want))
			continue;
		n_drift++;
		json_array_append_new(drift, json_pack("{s:s, s:s, s:s}", "path", path, "expected", want, "actual", now));
		if (!o->json)
			printf("drift: /%s: expected %s, actual %s\n", path, want, now);
	}
	if (x.plan->cgroup[0] && fsroot_is_host(x.root)) {
		checked++;
		if (!jobcg_exists(x.plan->cgroup)) {
			n_drift++;
			json_array_append_new(drift, json_pack("{s:s, s:s, s:s}", "path", "cgroup",
							       "expected", x.plan->cgroup, "actual", "(missing)"));
			if (!o->json)
				printf("drift: cgroup %s: expected to exist, missing\n", x.plan->cgroup);
		}
	}
	if (o->json)
		rc = print_json(json_pack("{s:s, s:i, s:o}", "policy", x.plan->policy_path, "checked", checked,
					  "drift", drift));
	else {
		json_decref(drift);
		printf("%s: %u setting%s checked, %u drifted\n", x.plan->policy_path, checked,
		       checked == 1 ? "" : "s", n_drift);
	}
	for (unsigned i = 0; i < x.plan->n_notes; i++)
		log_msg(LOG_WARNING, "%s", x.plan->notes[i]);
	ctx_release(&x);
	rc = finish_stdout(rc);
	return rc ? rc : n_drift ? EXIT_PROBLEM : 0;
}

/* ---- exec, run --------------------------------------------------------- */

/* The first of the launchers' variables that is set, as a number in
 * [min, max].  1 with *ret and *ret_name; 0 when none is set; -EINVAL
 * (said) for a value that is not such a number. */
static int env_uint(const char *const *names, unsigned min, unsigned max, unsigned *ret, const char **ret_name)
{
	for (; *names; names++) {
		const char *v = getenv(*names);
		size_t len;
		char buf[32];
		uint64_t n;

		if (!v)
			continue;
		/* SLURM_TASKS_PER_NODE looks like "2(x3),1": the first count;
		 * any other variable is one number and nothing else */
		len = strlen(v);
		if (!strcmp(*names, "SLURM_TASKS_PER_NODE") && strchr("(,", v[strspn(v, "0123456789")]))
			len = strspn(v, "0123456789");
		if (len < sizeof(buf))
			snprintf(buf, sizeof(buf), "%.*s", (int)len, v);
		if (len >= sizeof(buf) || parse_u64(buf, max, &n) < 0 || n < min) {
			log_msg(LOG_ERR, "%s='%s': expected a whole number from %u to %u", *names, v, min, max);
			return -EINVAL;
		}
		*ret = (unsigned)n;
		*ret_name = *names;
		return 1;
	}
	return 0;
}

/* Is cmd something execvp can run?  (Checked before anything changes.) */
static bool command_found(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? path : ".", cmd);
		if (access(buf, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* Bind as local_rank and exec the command; returns only on failure. */
static int bind_and_exec(const struct plan *pl, unsigned local_rank, char **command)
{
	struct nt_err err = { 0 };
	char warn[256];

	if (bind_rank(pl, local_rank, warn, sizeof(warn), &err) < 0) {
		log_msg(LOG_ERR, "local rank %u: %s", local_rank, err.msg);
		return EXIT_RUNTIME;
	}
	if (warn[0])
		log_msg(LOG_WARNING, "local rank %u: %s", local_rank, warn);
	fflush(NULL);
	execvp(command[0], command);
	log_msg(LOG_ERR, "%s: %s", command[0], strerror(errno));
	return errno == ENOENT || errno == EACCES ? EXIT_USAGE : EXIT_RUNTIME;
}

static int cmd_exec(struct opts *o)
{
	static const char *const rank_vars[] = { "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK", NULL };
	static const char *const size_vars[] = {
		"OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", NULL,
	};
	const char *from = "--local-rank", *size_from = "--local-size";
	struct ctx x;
	unsigned size;
	int rc;

	if (!o->has_local_rank) {
		rc = env_uint(rank_vars, 0, PLAN_MAX_RANKS - 1, &o->local_rank, &from);
		if (rc < 0)
			return EXIT_USAGE;
		if (rc == 0) {
			log_msg(LOG_ERR, "no local rank: give --local-rank N or run under mpirun, srun or torchrun");
			return EXIT_USAGE;
		}
	}
	if (!o->has_local_size && env_uint(size_vars, 1, PLAN_MAX_RANKS, &o->local_size, &size_from) < 0)
		return EXIT_USAGE;
	if (!command_found(o->command[0])) {
		log_msg(LOG_ERR, "%s: command not found", o->command[0]);
		return EXIT_USAGE;
	}
	/* The plan for all local ranks, so that ranks binding themselves one
	 * by one still get disjoint sets; the host part is apply's business. */
	rc = ctx_load(&x, o, o->local_size, false);
	if (rc >= 0)
		return rc;
	size = x.plan->n_ranks;
	if (o->local_rank >= size) {
		log_msg(LOG_ERR, "local rank %u (%s) but only %u local ranks (%s; give --local-size)",
			o->local_rank, from, size, o->local_size ? size_from : "one per GPU");
		ctx_release(&x);
		return EXIT_USAGE;
	}
	rc = bind_and_exec(x.plan, o->local_rank, o->command);
	ctx_release(&x);
	return rc;
}

static volatile sig_atomic_t run_signal;

static void run_on_signal(int sig)
{
	run_signal = sig;
}

static int cmd_run(struct opts *o)
{
	struct sigaction sa = { .sa_handler = run_on_signal };
	pid_t *pids;
	struct ctx x;
	unsigned n, alive = 0;
	int rc, worst = 0;

	if (!o->has_ranks) {
		log_msg(LOG_ERR, "-n/--ranks N is required");
		return EXIT_USAGE;
	}
	if (!command_found(o->command[0])) {
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
	rc = do_apply(&x, o, SAY_STDERR);
	if (rc) {
		ctx_release(&x);
		return rc;
	}
	fflush(NULL);
	n = x.plan->n_ranks;
	pids = calloc(n, sizeof(*pids));
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	for (unsigned i = 0; pids && i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char v[16];

			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			signal(SIGHUP, SIG_DFL);
			snprintf(v, sizeof(v), "%u", i);
			setenv("LOCAL_RANK", v, 1);
			snprintf(v, sizeof(v), "%u", n);
			setenv("LOCAL_WORLD_SIZE", v, 1);
			_exit(bind_and_exec(x.plan, i, o->command));
		}
		if (pids[i] < 0) {
			log_msg(LOG_ERR, "fork: %s", strerror(errno));
			worst = EXIT_RUNTIME;
			break;
		}
		alive++;
	}
	while (alive) {
		int status, code;
		pid_t p = wait(&status);

		if (p < 0 && errno == EINTR) {
			for (unsigned i = 0; i < n; i++)
				if (pids[i] > 0)
					kill(pids[i], run_signal);
			continue;
		}
		if (p < 0)
			break;
		for (unsigned i = 0; i < n; i++)
			if (pids[i] == p)
				pids[i] = 0;
		alive--;
		code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (code > worst)
			worst = code;
		if (code)
			log_msg(LOG_WARNING, "a rank (pid %d) ended with status %d", (int)p, code);
	}
	free(pids);
	rc = do_revert(o, SAY_STDERR);
	ctx_release(&x);
	if (rc)
		return rc;
	return finish_stdout(worst);
}

/* ---- doctor ------------------------------------------------------------ */

static int cmd_doctor(struct opts *o)
{
	struct doctor_config cfg = { o->window_s ? o->window_s : 2.0, 0.1, NULL };
	struct doctor_report rep = { 0 };
	struct nt_err err = { 0 };
	struct kstate ks = { 0 };
	struct ctx x;
	int rc, r;

	rc = ctx_load(&x, o, o->ranks, true);
	if (rc >= 0)
		return rc;
	if (!x.root) {
		log_msg(LOG_ERR, "--topology/--synthetic describe another machine: give --sysroot DIR for its kernel state");
		ctx_release(&x);
		return EXIT_USAGE;
	}
	r = kstate_read(x.root, &ks, &err);
	if (r == 0) {
		cfg.plan = x.plan;
		r = doctor_run(x.root, x.topo, &ks, &cfg, &rep, &err);
	}
	if (r < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = exit_code_for(r);
	} else if (o->json) {
		rc = print_json(doctor_json(&rep));
	} else if (doctor_print(stdout, &rep) < 0) {
		rc = EXIT_RUNTIME;
	} else {
		rc = 0;
	}
	if (rc == 0 && rep.n)
		rc = EXIT_PROBLEM;
	doctor_report_release(&rep);
	kstate_release(&ks);
	ctx_release(&x);
	return finish_stdout(rc);
}

/* ---- ab ---------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* A sibling of this program (nodetune-harness next to nodetune), else PATH. */
static const char *sibling(const char *name, char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n > 0) {
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + strlen(name) + 2 < size) {
			strcpy(slash + 1, name);
			if (access(buf, X_OK) == 0)
				return buf;
		}
	}
	return name;
}

/* The experiment's settings from the options; work is the trial directory. */
/* The experiment's settings, and its work directory made from the mkdtemp
 * template in work.  0, or EXIT_RUNTIME (said). */
static int ab_setup(const struct opts *o, struct ab_config *cfg, char *self, char *harness, char *work,
		    char *state)
{
	if (!mkdtemp(work)) {
		log_msg(LOG_ERR, "mkdtemp: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	snprintf(state, 64, "%s/state", work);
	cfg->trials = o->trials ? o->trials : 6;
	cfg->steps = o->steps ? (int)o->steps : 30;
	cfg->warmup = 3;
	cfg->batch = 2048;
	cfg->threshold = o->has_threshold ? o->threshold : 0.02;
	cfg->alpha = o->alpha ? o->alpha : 0.05;
	cfg->budget_s = o->budget ? o->budget : 300;
	cfg->seed = o->seed ? o->seed : 1;
	cfg->nodetune = sibling("nodetune", self, 4096);
	cfg->harness = sibling("nodetune-harness", harness, 4096);
	cfg->state_dir = state;
	cfg->work_dir = work;
	return 0;
}

/* Check an arm: its policy loads, its command exists.  0, or an exit code. */
static int ab_check_arm(const struct ab_arm *arm)
{
	struct nt_err err = { 0 };
	struct policy *p;

	if (arm->policy) {
		p = policy_load(arm->policy, geteuid() == 0 ? POLICY_TRUSTED_ONLY : 0, &err);
		if (!p) {
			log_msg(LOG_ERR, "arm %s: %s", arm->name, err.msg);
			return exit_code_for(err.code);
		}
		policy_free(p);
	}
	if (arm->argv[0] && !command_found(arm->argv[0])) {
		log_msg(LOG_ERR, "arm %s: %s: command not found", arm->name, arm->argv[0]);
		return EXIT_USAGE;
	}
	return 0;
}

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
		why = strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		why = "not a directory";
	if (why) {
		log_msg(LOG_ERR, "%s %s: cannot write in %s: %s", opt, path, dir, why);
		return EXIT_USAGE;
	}
	return 0;
}

/* `-- CMD...` is the command of the arms that name none */
static void ab_default_command(const struct opts *o, struct ab_config *cfg)
{
	for (int a = 0; a < 2 && o->command; a++)
		if (!cfg->arm[a].argv[0])
			for (int k = 0; o->command[k] && k < AB_MAX_ARGS - 1; k++)
				cfg->arm[a].argv[k] = strdup(o->command[k]);
}

static int cmd_ab(struct opts *o)
{
	struct ab_config cfg = { 0 };
	struct ab_result res = { 0 };
	struct nt_err err = { 0 };
	char self[4096], harness[4096], work[] = "/tmp/nodetune-ab-XXXXXX", state[64];
	int rc = 0;

	if (!o->spec_a || !o->spec_b) {
		log_msg(LOG_ERR, "--a SPEC and --b SPEC are required (policy=FILE, cmd=COMMAND, or both)");
		return EXIT_USAGE;
	}
	snprintf(cfg.arm[0].name, 2, "A");
	snprintf(cfg.arm[1].name, 2, "B");
	if (ab_parse_spec(o->spec_a, &cfg.arm[0], &err) || ab_parse_spec(o->spec_b, &cfg.arm[1], &err)) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = EXIT_USAGE;
		goto out;
	}
	ab_default_command(o, &cfg);
	if (o->report && (rc = check_output_path("--report", o->report)))
		goto out;
	for (int a = 0; a < 2 && !rc; a++)
		rc = ab_check_arm(&cfg.arm[a]);
	if (rc)
		goto out;
	if ((rc = ab_setup(o, &cfg, self, harness, work, state)))
		goto out;
	if (ab_run(&cfg, &res, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = exit_code_for(err.code);
		goto out;
	}
	if (o->report && report_write(o->report, &cfg, &res, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = EXIT_RUNTIME;
	}
	if (o->json) {
		int pr = print_json(ab_json(&cfg, &res));

		rc = pr ? pr : rc;
	} else if (ab_print(stdout, &cfg, &res) < 0) {
		rc = EXIT_RUNTIME;
	}
	if (res.error) {
		log_msg(LOG_ERR, "%s (nothing is left applied; trial outputs in %s)", res.error_msg, work);
		rc = EXIT_RUNTIME;
	} else if (!rc && res.verdict == VERDICT_REGRESSION) {
		rc = EXIT_PROBLEM;
	}
	if (!res.error)   /* kept only when an arm failed, for its outputs */
		nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
out:
	ab_result_release(&res);
	ab_arm_release(&cfg.arm[0]);
	ab_arm_release(&cfg.arm[1]);
	return finish_stdout(rc);
}

/* ---- observe ----------------------------------------------------------- */

static volatile sig_atomic_t observe_stop;
static pid_t observe_child;

static void observe_on_signal(int sig)
{
	observe_stop = 1;
	if (observe_child > 0)
		kill(observe_child, sig);
}

static int cmd_observe(struct opts *o)
{
	struct sampler s;
	struct sampler_snap snap[2] = { 0 };
	struct sigaction sa = { .sa_handler = observe_on_signal };
	struct timespec next;
	double interval = (o->interval_ms ? o->interval_ms : 100) / 1000.0;
	double duration = o->duration_s ? o->duration_s : o->command || o->n_pids ? 0 : 10;
	int rc = 0, status = 0, cur = 0;
	pid_t pid = 0;

	if (o->command && o->n_pids) {
		log_msg(LOG_ERR, "--pid and a command exclude each other");
		return EXIT_USAGE;
	}
	for (int i = 0; i < o->n_pids; i++)
		if (kill(o->pids[i], 0) < 0 && errno == ESRCH) {
			log_msg(LOG_ERR, "--pid %d: no such process", o->pids[i]);
			return EXIT_USAGE;
		}
	if (o->command && !command_found(o->command[0])) {
		log_msg(LOG_ERR, "%s: command not found", o->command[0]);
		return EXIT_USAGE;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o->command) {
		pid = fork();
		if (pid == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			execvp(o->command[0], o->command);
			fprintf(stderr, "nodetune: observe: %s: %s\n", o->command[0], strerror(errno));
			_exit(127);
		}
		if (pid < 0) {
			log_msg(LOG_ERR, "fork: %s", strerror(errno));
			return EXIT_RUNTIME;
		}
		observe_child = pid;
	}
	if (sampler_init(&s, "/", pid ? &pid : o->pids, pid ? 1 : o->n_pids, true) < 0) {
		log_msg(LOG_ERR, "/: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	{
		char nc[1024];

		/* once, before the records: which fields read n/c (null) here */
		if (sampler_uncountable(&s, nc, sizeof(nc)))
			log_msg(LOG_NOTICE, "%s", nc);
	}
	sampler_take(&s, &snap[cur]);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!observe_stop) {
		char line[1024];

		next.tv_nsec += (long)(interval * 1e9);
		next.tv_sec += next.tv_nsec / 1000000000L;
		next.tv_nsec %= 1000000000L;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR && !observe_stop)
			;
		if (pid && waitpid(pid, &status, WNOHANG) == pid)
			observe_stop = 2;           /* one last sample, then stop */
		sampler_take(&s, &snap[!cur]);
		if (o->json) {
			json_t *rec = sampler_record(&s, &snap[cur], &snap[!cur]);

			if (json_dumpf(rec, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6)) < 0 || putchar('\n') == EOF)
				observe_stop = 3;
			json_decref(rec);
		} else {
			sampler_line(&s, &snap[cur], &snap[!cur], line, sizeof(line));
			if (puts(line) == EOF)
				observe_stop = 3;
		}
		fflush(stdout);
		cur = !cur;
		if ((duration > 0 && snap[cur].t >= duration) || (!pid && o->n_pids && !sampler_alive(&snap[cur])))
			break;
	}
	if (pid && observe_stop != 2) {
		if (observe_stop)
			kill(pid, SIGTERM);
		else if (duration > 0)
			log_msg(LOG_NOTICE, "--duration reached; waiting for %s to exit", o->command[0]);
		waitpid(pid, &status, 0);
	}
	sampler_snap_release(&snap[0]);
	sampler_snap_release(&snap[1]);
	sampler_release(&s);
	if (observe_stop == 3)
		rc = EXIT_RUNTIME;
	else if (pid)   /* the command's status, as time(1) does */
		rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return finish_stdout(rc);
}

/* ---- bisect ------------------------------------------------------------ */

struct bisect_ctx {
	struct ab_config *cfg;
	const struct policy *good, *bad;
	int idx[BISECT_MAX], n;
	int tests;
	json_t *log;            /* one record per test */
	double alpha;           /* the bisection's, spent over its tests */
	char msg[4096];         /* an arm's failure */
};

static void knob_list(char *buf, size_t size, const int idx[], int n, uint64_t set)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && len < size; i++)
		if (set >> i & 1)
			len += (size_t)snprintf(buf + len, size - len, "%s%s.%s", len ? ", " : "",
						knob_table[idx[i]].section, knob_table[idx[i]].key);
}

/* One test: an A/B of the good policy against good + the subset of bad. */
static int bisect_test(uint64_t set, void *arg)
{
	struct bisect_ctx *x = arg;
	struct ab_result res = { 0 };
	struct nt_err err = { 0 };
	char path[4200], knobs[2048];
	FILE *f;
	struct policy *p;
	int r;

	snprintf(path, sizeof(path), "%s/candidate-%03d.conf", x->cfg->work_dir, ++x->tests);
	knob_list(knobs, sizeof(knobs), x->idx, x->n, set);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	r = bisect_write_candidate(f, x->good, x->bad, x->idx, x->n, set);
	if (fclose(f) != 0 || r < 0)
		return -EIO;
	/* an invalid combination (a key that needs another) cannot be tested */
	p = policy_load(path, geteuid() == 0 ? POLICY_TRUSTED_ONLY : 0, &err);
	if (!p) {
		log_msg(LOG_NOTICE, "test %d {%s}: not testable: %s", x->tests, knobs, err.msg);
		json_array_append_new(x->log, json_pack("{s:i, s:s, s:s}", "test", x->tests, "knobs", knobs,
							"verdict", "untestable"));
		return BISECT_UNRESOLVED;
	}
	policy_free(p);
	free(x->cfg->arm[1].policy);
	x->cfg->arm[1].policy = strdup(path);
	if (!x->cfg->arm[1].policy)
		return -ENOMEM;
	/* every test is another chance of a false alarm, which would send
	 * ddmin into a wrong subset: the tests share the bisection's alpha */
	x->cfg->alpha = bisect_alpha(x->alpha, x->tests);
	r = ab_run(x->cfg, &res, &err);
	if (r < 0) {
		snprintf(x->msg, sizeof(x->msg), "test %d {%s}: %s", x->tests, knobs, err.msg);
		return r;
	}
	if (res.error) {
		snprintf(x->msg, sizeof(x->msg), "test %d {%s}: %s", x->tests, knobs, res.error_msg);
		ab_result_release(&res);
		return -ECANCELED;
	}
	log_msg(LOG_NOTICE, "test %d {%s}: %s, B/A %.3f [%.3f, %.3f], p %.3g (alpha %.2g), %d + %d trials", x->tests,
		knobs, stats_verdict_name(res.verdict), res.ratio, res.ci_lo, res.ci_hi, res.p, x->cfg->alpha,
		res.trials[0], res.trials[1]);
	json_array_append_new(x->log, json_pack("{s:i, s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "test", x->tests, "knobs",
						knobs, "verdict", stats_verdict_name(res.verdict), "ratio", res.ratio,
						"ci_low", res.ci_lo, "ci_high", res.ci_hi, "p_value", res.p, "alpha",
						x->cfg->alpha));
	r = res.verdict == VERDICT_REGRESSION ? BISECT_FAIL : BISECT_PASS;
	ab_result_release(&res);
	return r;
}

static int cmd_bisect(struct opts *o)
{
	struct ab_config cfg = { 0 };
	struct bisect_ctx x = { 0 };
	struct nt_err err = { 0 };
	struct policy *good = NULL, *bad = NULL;
	char self[4096], harness[4096], work[] = "/tmp/nodetune-bisect-XXXXXX", state[64], knobs[2048];
	uint64_t culprits = 0;
	int rc = 0, r, tests = 0;
	bool reproduced;

	if (!o->good || !o->bad) {
		log_msg(LOG_ERR, "--good POLICY and --bad POLICY are required");
		return EXIT_USAGE;
	}
	good = policy_load(o->good, geteuid() == 0 ? POLICY_TRUSTED_ONLY : 0, &err);
	if (good)
		bad = policy_load(o->bad, geteuid() == 0 ? POLICY_TRUSTED_ONLY : 0, &err);
	if (!good || !bad) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = exit_code_for(err.code);
		goto out;
	}
	snprintf(cfg.arm[0].name, 2, "A");
	snprintf(cfg.arm[1].name, 2, "B");
	ab_default_command(o, &cfg);
	if ((rc = ab_check_arm(&cfg.arm[0])))
		goto out;
	x.n = bisect_delta(good, bad, x.idx);
	if (!x.n) {
		log_msg(LOG_ERR, "%s and %s set every knob alike: nothing to bisect", o->good, o->bad);
		rc = EXIT_USAGE;
		goto out;
	}
	if ((rc = ab_setup(o, &cfg, self, harness, work, state)))
		goto out;
	cfg.arm[0].policy = strdup(o->good);
	cfg.regression_only = true;
	x.cfg = &cfg;
	x.alpha = cfg.alpha;
	x.good = good;
	x.bad = bad;
	x.log = json_array();
	if (!cfg.arm[0].policy || !x.log) {
		log_msg(LOG_ERR, "out of memory");
		rc = EXIT_RUNTIME;
		goto out_rm;
	}
	knob_list(knobs, sizeof(knobs), x.idx, x.n, ~0ull);
	log_msg(LOG_NOTICE, "%d knobs differ: %s", x.n, knobs);
	/* first: does the whole delta reproduce the regression? */
	r = bisect_test(x.n >= 64 ? ~0ull : (1ull << x.n) - 1, &x);
	reproduced = r == BISECT_FAIL;
	if (reproduced)
		r = bisect_ddmin(x.n, bisect_test, &x, &culprits, &tests);
	if (r < 0) {
		log_msg(LOG_ERR, "%s (nothing is left applied)", x.msg[0] ? x.msg : strerror(-r));
		rc = EXIT_RUNTIME;
		goto out_rm;
	}
	knob_list(knobs, sizeof(knobs), x.idx, x.n, culprits);
	if (o->json) {
		json_t *cs = json_array();

		for (int i = 0; i < x.n; i++)
			if (culprits >> i & 1)
				json_array_append_new(cs, json_pack("{s:s, s:s, s:s?, s:s?}", "section",
								    knob_table[x.idx[i]].section, "key",
								    knob_table[x.idx[i]].key, "good",
								    good->v[x.idx[i]].value, "bad", bad->v[x.idx[i]].value));
		rc = print_json(json_pack("{s:s, s:s, s:b, s:i, s:o, s:o}", "good", o->good, "bad", o->bad,
					  "reproduced", reproduced, "knobs_differing", x.n, "culprits", cs,
					  "tests", json_incref(x.log)));
	} else if (!reproduced) {
		printf("%s does not regress against %s here (%d knobs differ): nothing to bisect\n", o->bad, o->good,
		       x.n);
	} else {
		printf("smallest set of knobs that reproduces the regression (%d of %d, %d A/B tests):\n",
		       __builtin_popcountll(culprits), x.n, x.tests);
		for (int i = 0; i < x.n; i++)
			if (culprits >> i & 1)
				printf("  [%s] %s = %s   (good: %s)\n", knob_table[x.idx[i]].section,
				       knob_table[x.idx[i]].key, bad->v[x.idx[i]].value ? bad->v[x.idx[i]].value : "(unset)",
				       good->v[x.idx[i]].value ? good->v[x.idx[i]].value : "(unset)");
	}
	if (!rc && !reproduced)
		rc = EXIT_PROBLEM;
out_rm:
	nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
out:
	json_decref(x.log);
	policy_free(good);
	policy_free(bad);
	ab_arm_release(&cfg.arm[0]);
	ab_arm_release(&cfg.arm[1]);
	return finish_stdout(rc);
}

/* ---- the verb table and main ------------------------------------------- */

#define O_MACHINE (O_TOPOLOGY | O_SYNTHETIC | O_SYSROOT)

static const struct cmd commands[] = {
	{ "discover", cmd_discover, O_MACHINE | O_JSON,
	  "nodetune discover [--topology FILE.xml | --synthetic DESC] [--sysroot DIR] [--json]",
	  "show topology, GPU/NIC locality and kernel state",
	  "Show packages, NUMA nodes, cores, GPUs and NICs with their locality, and the\n"
	  "kernel state that matters for training (THP, NUMA balancing, hugepages,\n"
	  "governor, isolated CPUs, swap, cgroup version), with warnings worth acting on.\n\n"
	  "  --topology FILE.xml  read an hwloc XML export instead of this host\n"
	  "  --synthetic DESC     an hwloc synthetic topology, e.g. \"pack:2 numa:1 core:8 pu:2\"\n"
	  "  --sysroot DIR        read /sys and /proc below DIR (a captured tree); without\n"
	  "                       --topology/--synthetic the topology is read there too\n"
	  "  --json               machine-readable output on stdout\n\n"
	  "The kernel state is read from this host, or from --sysroot; it is left out\n"
	  "(\"kernel\": null) for a --topology or --synthetic machine without --sysroot." },
	{ "plan", cmd_plan, O_POLICY | O_RANKS | O_MACHINE | O_JSON,
	  "nodetune plan --policy FILE [--ranks N] [--topology FILE.xml | --synthetic DESC]\n"
	  "                     [--sysroot DIR] [--json]",
	  "show what a policy would do for N local ranks (changes nothing)",
	  "Per local rank its GPU, CPUs, memory nodes and NIC; host settings with their\n"
	  "current and wanted values; the job cgroup; device IRQ moves; and the fallbacks\n"
	  "taken.  --ranks defaults to one per GPU (1 without GPUs)." },
	{ "keys", cmd_keys, O_MARKDOWN, "nodetune keys [--markdown]",
	  "list every policy key",
	  "Every policy key with what it does; --markdown prints the reference table\n"
	  "(section, values, scope, file written) kept in docs/policy-keys.md." },
	{ "apply", cmd_apply, O_POLICY | O_RANKS | O_MACHINE | O_STATE_DIR | O_DRY_RUN | O_JSON,
	  "nodetune apply --policy FILE [--topology FILE.xml] [--sysroot DIR] [--state-dir DIR]\n"
	  "                      [--dry-run] [--json]",
	  "apply a policy's host settings, all or nothing, journaled",
	  "Write the policy's host settings (sysfs/procfs knobs, device IRQ affinities)\n"
	  "and create its job cgroup.  Only values that differ are written; each original\n"
	  "is journaled and fsync'd to --state-dir (default /run/nodetune) first; each\n"
	  "write is read back.  On any failure everything is restored (exit 3).  Undo\n"
	  "with `nodetune revert`, also after a crash.  --dry-run shows the changes." },
	{ "revert", cmd_revert, O_SYSROOT | O_STATE_DIR | O_JSON,
	  "nodetune revert [--sysroot DIR] [--state-dir DIR] [--json]",
	  "restore everything the last apply changed",
	  "Restore, newest first, every value the journal in --state-dir records, delete\n"
	  "the job cgroup, then the journal.  Works after the applying process was killed." },
	{ "verify", cmd_verify, O_POLICY | O_RANKS | O_MACHINE | O_JSON,
	  "nodetune verify --policy FILE [--sysroot DIR] [--json]",
	  "compare the effective host state with the plan (exit 1 on drift)",
	  "Read back every host setting, device IRQ affinity and the job cgroup the\n"
	  "policy's plan asks for; list each drift as path, expected, actual; exit 1\n"
	  "when there is one." },
	{ "exec", cmd_exec, O_POLICY | O_LOCAL_RANK | O_LOCAL_SIZE | O_TOPOLOGY | O_QUIET | O_COMMAND,
	  "nodetune exec --policy FILE [--local-rank N] [--local-size N] [--quiet] -- COMMAND [ARGS...]",
	  "bind this process as one local rank, then exec the command",
	  "For use under mpirun, srun and torchrun: the local rank comes from\n"
	  "--local-rank, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID or LOCAL_RANK; the\n"
	  "number of local ranks from --local-size, OMPI_COMM_WORLD_LOCAL_SIZE,\n"
	  "LOCAL_WORLD_SIZE or SLURM_(N)TASKS_PER_NODE (default: one per GPU).  Joins the\n"
	  "job cgroup, sets CPU affinity, the NUMA memory policy, scheduling policy and\n"
	  "nice, exports CUDA_VISIBLE_DEVICES when the policy asks, and execvp's the\n"
	  "command directly (no shell).  Threads and children inherit the binding.\n\n"
	  "Standard output is the command's alone: nodetune's own lines go to stderr.\n"
	  "  -q, --quiet   print only errors (no warnings)" },
	{ "doctor", cmd_doctor, O_POLICY_OPTIONAL | O_RANKS | O_TOPOLOGY | O_SYSROOT | O_WINDOW | O_JSON,
	  "nodetune doctor [--sysroot DIR] [--topology FILE.xml] [--policy FILE] [--window SECONDS] [--json]",
	  "named hazards on this host, with evidence and a fix (exit 1 when any)",
	  "Checks: zombie memory cgroups (/proc/cgroups against live memcg directories);\n"
	  "a core saturated in kernel time (>= 95% for >= 1 s of a --window of /proc/stat\n"
	  "samples every 100 ms, default 2 s) while the average looks fine; THP\n"
	  "defrag=always; automatic NUMA balancing on a multi-node host; device IRQs on\n"
	  "CPUs the ranks of --policy use; a governor other than performance; swap;\n"
	  "cgroup CPU throttling.  A captured tree may carry proc/stat.series/NNN samples." },
	{ "ab", cmd_ab, O_AB | O_ARMS | O_JSON | O_COMMAND_OPTIONAL,
	  "nodetune ab --a SPEC --b SPEC [--trials N] [--steps N] [--threshold PCT] [--alpha A]\n"
	  "                   [--budget SECONDS] [--seed N] [--json] [--report FILE.html] [-- CMD...]",
	  "A/B test two policies or commands with statistics (exit 1 on regression)",
	  "SPEC is policy=FILE, cmd=COMMAND ARGS (last; split on spaces, no shell) or both,\n"
	  "comma-separated.  Default workload: nodetune-harness (dlrm-small, world 2 through\n"
	  "mpirun, each rank bound by `nodetune exec` under the arm's policy).  Trials run\n"
	  "in randomized ABBA blocks (--trials per arm, default 6), each under its arm's\n"
	  "policy, applied and reverted around the trial.  Metric: the harness's samples/s\n"
	  "(a foreign command: 1 / wall time).  Verdict from a Mann-Whitney U test and a\n"
	  "bootstrap CI of B/A against --threshold (default 2%): regression, improvement,\n"
	  "no-difference, or inconclusive (more trials while --budget lasts, default 300 s).\n"
	  "Also: the Hodges-Lehmann shift of step times, stalls per arm, and counters per\n"
	  "step ranked by significance, each mapped to its mechanism.  --report writes a\n"
	  "self-contained HTML page (inline SVG of per-step times with stalls, the two\n"
	  "distributions, every trial; nothing fetched)." },
	{ "observe", cmd_observe, O_OBSERVE | O_JSON | O_COMMAND_OPTIONAL,
	  "nodetune observe [--pid PID[,PID...]] [--interval MS] [--duration SECONDS] [--json] [-- CMD...]",
	  "sample host and process counters at an interval",
	  "Every --interval (default 100 ms) one record of what changed: per-CPU %usr and\n"
	  "%sys, vmstat (THP faults, compaction, NUMA hinting faults and migrations,\n"
	  "faults), TLB shootdowns and device IRQs, PSI; every 50th sample the memory\n"
	  "cgroup count against live directories and cgroup throttling.  For each process\n"
	  "of --pid, or of the command started (and their descendants, such as mpirun's\n"
	  "ranks): its threads' CPU, voluntary and involuntary switches, run-queue wait\n"
	  "and CPUs used.  --json: one JSON object per line.  Stops after --duration\n"
	  "(default 10 s with neither --pid nor a command), when the processes are gone,\n"
	  "or on SIGINT.  With a command, exits with its status." },
	{ "bisect", cmd_bisect, O_AB | O_BISECT | O_JSON | O_COMMAND_OPTIONAL,
	  "nodetune bisect --good POLICY --bad POLICY [--trials N] [--steps N] [--threshold PCT]\n"
	  "                       [--alpha A] [--budget SECONDS] [--seed N] [--json] [-- CMD...]",
	  "find the smallest set of knobs that turns a good policy into a bad one",
	  "The knobs whose values differ between the two policies (includes resolved) are\n"
	  "the delta.  Each test is an A/B (as `nodetune ab`, same options, --budget per\n"
	  "test) of the good policy against the good one with a subset of the delta from\n"
	  "the bad one; a `regression` verdict fails the test.  First the whole delta is\n"
	  "tested; then delta debugging (ddmin) narrows it to a 1-minimal set: every knob\n"
	  "in it is needed, which finds knobs that regress only together.  Progress goes\n"
	  "to stderr.  Exit 0 with the set printed; 1 when the bad policy does not\n"
	  "regress against the good one here; 3 when a trial fails (nothing left applied)." },
	{ "run", cmd_run, O_POLICY | O_RANKS | O_STATE_DIR | O_QUIET | O_COMMAND,
	  "nodetune run -n N --policy FILE [--state-dir DIR] [--quiet] -- COMMAND [ARGS...]",
	  "apply, start N bound local ranks, wait, revert",
	  "Apply the host settings, start N local ranks of the command, each bound as\n"
	  "`exec` would (LOCAL_RANK and LOCAL_WORLD_SIZE set), wait for all, revert, and\n"
	  "exit with the worst status of the ranks.  SIGINT/SIGTERM are passed on to the\n"
	  "ranks; the host is reverted either way.\n\n"
	  "Standard output is the ranks' alone: what nodetune changed and restored, and\n"
	  "its summary lines, go to stderr.\n"
	  "  -q, --quiet   print only errors (not the changes, not the ranks' statuses)" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: nodetune [-v] [--version] [--help] VERB [OPTIONS]\n\nVerbs:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'nodetune VERB --help' describes a verb. Each option may be given once (a\n"
		   "repeated one is refused). Exit codes: 0 ok, 1 problem found, 2 bad usage or\n"
		   "input (nothing changed), 3 runtime failure (rolled back).\n");
}

int main(int argc, char **argv)
{
	static char prefix[64];
	int i = 1, verbose = 0;

	log_set_prefix("nodetune");
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return finish_stdout(0);
		} else if (!strcmp(argv[i], "--version")) {
			printf("nodetune %s (hwloc %s, jansson %s, libnuma, libcgroup)\n", NODETUNE_VERSION,
			       HWLOC_VERSION, JANSSON_VERSION);
			return finish_stdout(0);
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			if (verbose++) {
				log_msg(LOG_ERR, "--verbose given twice (each option may be given once)");
				return EXIT_USAGE;
			}
			log_set_level(LOG_DEBUG);
		} else {
			log_msg(LOG_ERR, "unknown option '%s' (see --help)", argv[i]);
			return EXIT_USAGE;
		}
	}
	if (i == argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		struct opts o = { 0 };
		int rc;

		if (strcmp(argv[i], commands[k].name))
			continue;
		snprintf(prefix, sizeof(prefix), "nodetune: %s", commands[k].name);
		log_set_prefix(prefix);
		rc = parse_opts(&commands[k], argc - i, argv + i, &o);
		if (rc >= 0)
			return rc;
		return commands[k].fn(&o);
	}
	log_msg(LOG_ERR, "unknown verb '%s' (see nodetune --help)", argv[i]);
	return EXIT_USAGE;
}
