/* SPDX-License-Identifier: MIT */
/* main.c — the nodetune command line: a thin layer over libnodetune.
 *
 * Verbs come from one table; each is a cmd_<verb>.c with its options, its
 * usage and its output (cli.h).  A verb loads its inputs, calls the
 * library, prints, and returns the exit code of the contract in DESIGN.md:
 * 0 success, 1 the check found a problem, 2 bad usage or input (nothing
 * changed), 3 runtime failure (what was changed is rolled back).
 *
 * Divisions: the verbs and the groups of two-word verbs; usage and version;
 * help (text and --json, from the verbs' option tables); main.
 */
#include <jansson.h>
#include <hwloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "base/log.h"

#ifndef NODETUNE_VERSION
#error "NODETUNE_VERSION comes from the file VERSION (Makefile)"
#endif

static const struct verb {
	const char *name;
	int (*run)(struct opts *o);
	const struct verb_spec *spec;
} verbs[] = {
	{ "discover", cmd_discover, &discover_spec },
	{ "plan", cmd_plan, &plan_spec },
	{ "keys", cmd_keys, &keys_spec },
	{ "apply", cmd_apply, &apply_spec },
	{ "revert", cmd_revert, &revert_spec },
	{ "verify", cmd_verify, &verify_spec },
	{ "exec", cmd_exec, &exec_spec },
	{ "doctor", cmd_doctor, &doctor_spec },
	{ "ab", cmd_ab, &ab_spec },
	{ "observe", cmd_observe, &observe_spec },
	{ "bisect", cmd_bisect, &bisect_spec },
	{ "run", cmd_run, &run_spec },
	{ "daemon", cmd_daemon, &daemon_spec },
	{ "status", cmd_status, &status_spec },
	{ "slurm", cmd_slurm, &slurm_spec },
	/* a verb of two words: the first names a group (groups[]) */
	{ "policy list", cmd_policy_list, &policy_list_spec },
	{ "policy show", cmd_policy_show, &policy_show_spec },
	{ "policy active", cmd_policy_active, &policy_active_spec },
	{ "policy recommend", cmd_policy_recommend, &policy_recommend_spec },
	{ "policy use", cmd_policy_use, &policy_use_spec },
	{ "fleet rollout", cmd_fleet_rollout, &fleet_rollout_spec },
	{ "fleet resume", cmd_fleet_resume, &fleet_resume_spec },
	{ "fleet timestamp", cmd_fleet_timestamp, &fleet_timestamp_spec },
	{ "fleet abort", cmd_fleet_abort, &fleet_abort_spec },
	{ "fleet status", cmd_fleet_status, &fleet_status_spec },
	{ "fleet hosts", cmd_fleet_hosts, &fleet_hosts_spec },
	{ "fleet keygen", cmd_fleet_keygen, &fleet_keygen_spec },
	{ "fleet init-auth", cmd_fleet_init_auth, &fleet_init_auth_spec },
};

#define N_VERBS (sizeof(verbs) / sizeof(verbs[0]))

/* The groups of two-word verbs: what `nodetune GROUP --help` says. */
static const struct group {
	const char *name;
	const char *help;
} groups[] = {
	{ "policy", "Policies by name: the files NAME.conf on the policy path (NODETUNE_POLICY_PATH,\n"
		    "default /etc/nodetune/policies, then the install's share/nodetune/policies;\n"
		    "the first wins), what one sets, and what this host has applied now." },
	{ "fleet", "The fleet over etcd: roll a policy out to the hosts whose daemons joined it\n"
		   "(nodetune daemon --endpoints URLS --host NAME) in waves, with a canary gate and\n"
		   "automatic rollback; follow, resume or abort a rollout; list the hosts." },
};

void cli_usage(FILE *f)
{
	fprintf(f, "Usage: nodetune [GLOBAL OPTIONS] VERB [OPTIONS]\n\nVerbs:\n");
	for (size_t i = 0; i < N_VERBS; i++)
		fprintf(f, "  %-16s %s\n", verbs[i].name, verbs[i].spec->summary);
	fprintf(f, "  %-16s %s\n", "help [VERB]", "this list, or what a verb does and takes (as VERB --help)");
	fprintf(f, "  %-16s %s\n", "help --json", "every verb's options as data (for man pages and completion)");
	fprintf(f, "\nGlobal options, before or after the verb: -v/--verbose,\n"
		   "--log-format text|syslog, --version, -h/--help.  Each option may be given once.\n"
		   "Exit codes: 0 ok, 1 problem found, 2 bad usage or input (nothing changed),\n"
		   "3 runtime failure (rolled back).\n");
}

void cli_version(void)
{
	printf("nodetune %s (hwloc %s, jansson %s, libnuma, libcgroup)\n", NODETUNE_VERSION, HWLOC_VERSION,
	       JANSSON_VERSION);
}

/* Does the verb named name stand at argv[i] (one word, or two: "fleet
 * rollout")?  Returns how many words it takes, 0 when not. */
static int verb_at(const char *name, int argc, char **argv, int i)
{
	size_t n = strcspn(name, " ");

	if (!name[n])
		return strcmp(argv[i], name) ? 0 : 1;
	if (strncmp(argv[i], name, n) || argv[i][n] || i + 1 >= argc || strcmp(argv[i + 1], name + n + 1))
		return 0;
	return 2;
}

static const struct group *group_named(const char *word)
{
	for (size_t k = 0; k < sizeof(groups) / sizeof(groups[0]); k++)
		if (!strcmp(groups[k].name, word))
			return &groups[k];
	return NULL;
}

/* A group's help: usage, its paragraph, its sub-verbs. */
static void group_help(FILE *f, const struct group *g)
{
	size_t n = strlen(g->name);

	fprintf(f, "Usage: nodetune %s SUB-VERB [OPTIONS]\n\n%s\n\nSub-verbs:\n", g->name, g->help);
	for (size_t k = 0; k < N_VERBS; k++)
		if (!strncmp(verbs[k].name, g->name, n) && verbs[k].name[n] == ' ')
			fprintf(f, "  %-10s %s\n", verbs[k].name + n + 1, verbs[k].spec->summary);
	fprintf(f, "\n'nodetune %s SUB-VERB --help' describes one.\n", g->name);
}

/* Write a group's sub-verbs to buf as "list, show, active". */
static void group_subverbs(const struct group *g, char *buf, size_t size)
{
	size_t n = strlen(g->name), len = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < N_VERBS && len < size; k++)
		if (!strncmp(verbs[k].name, g->name, n) && verbs[k].name[n] == ' ')
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", verbs[k].name + n + 1);
}

/* A word that is no verb: a group without its sub-verb (`nodetune fleet`;
 * with --help, the group's help), or an unknown verb.  The exit code. */
static int not_a_verb(int argc, char **argv, int i)
{
	const struct group *g = group_named(argv[i]);
	static char prefix[64];
	char subs[256];

	if (!g) {
		log_msg(LOG_ERR, "unknown verb '%s' (see nodetune help)", argv[i]);
		return EXIT_USAGE;
	}
	if (i + 1 < argc && (!strcmp(argv[i + 1], "--help") || !strcmp(argv[i + 1], "-h"))) {
		group_help(stdout, g);
		return finish_stdout(0);
	}
	/* one line, as for any usage error: the sub-verbs by name */
	snprintf(prefix, sizeof(prefix), "nodetune: %s", g->name);
	log_set_prefix(prefix);
	group_subverbs(g, subs, sizeof(subs));
	if (i + 1 < argc && argv[i + 1][0] != '-')
		log_msg(LOG_ERR, "unknown sub-verb '%s' (expected %s; see nodetune %s --help)", argv[i + 1], subs,
			g->name);
	else
		log_msg(LOG_ERR, "expected a sub-verb: %s (see nodetune %s --help)", subs, g->name);
	return EXIT_USAGE;
}

/* --dump-options (hidden): every verb's options, as opts_dump writes
 * them, after the global ones (verb "nodetune"); for the man page check
 * and the bash completion, which are built from these tables. */
static int dump_options(void)
{
	printf("nodetune\thelp\th\t-\nnodetune\tversion\t-\t-\nnodetune\tverbose\tv\t-\n"
	       "nodetune\tlog-format\t-\ttext|syslog\n");
	for (size_t i = 0; i < N_VERBS; i++)
		if (opts_dump(stdout, verbs[i].name, verbs[i].spec) < 0)
			break;
	return finish_stdout(0);
}

/* `nodetune help --json`: every verb's table as data (opts_spec_json),
 * {"verbs": [{"verb", ...}], "groups": [{"group", "help"}]}. */
static int help_json(void)
{
	json_t *vs = json_array(), *gs = json_array();

	for (size_t k = 0; vs && k < N_VERBS; k++) {
		json_t *v = opts_spec_json(verbs[k].spec);

		if (v && !json_object_set_new(v, "verb", json_string(verbs[k].name)))
			json_array_append_new(vs, v);
		else
			json_decref(v);
	}
	for (size_t k = 0; gs && k < sizeof(groups) / sizeof(groups[0]); k++)
		json_array_append_new(gs, json_pack("{s:s, s:s}", "group", groups[k].name, "help", groups[k].help));
	return finish_stdout(print_json("help", json_pack("{s:s, s:o*, s:o*}", "version", NODETUNE_VERSION, "verbs", vs,
						  "groups", gs)));
}

/* `nodetune help [VERB [SUB-VERB]]`, `nodetune help --json`.  The exit code. */
static int help(int argc, char **argv, int i)
{
	if (i + 2 == argc && !strcmp(argv[i + 1], "--json"))
		return help_json();
	/* help alone, and the help of help (`help help`, `help --help`): the
	 * list, which says what help takes */
	if (i + 1 >= argc || (i + 2 == argc && (!strcmp(argv[i + 1], "help") || !strcmp(argv[i + 1], "--help") ||
						 !strcmp(argv[i + 1], "-h")))) {
		cli_usage(stdout);
		return finish_stdout(0);
	}
	for (size_t k = 0; k < N_VERBS; k++) {
		int words = verb_at(verbs[k].name, argc, argv, i + 1);

		if (words && i + 1 + words == argc) {
			opts_print_help(stdout, verbs[k].spec);
			return finish_stdout(0);
		}
	}
	if (i + 2 == argc && group_named(argv[i + 1])) {
		group_help(stdout, group_named(argv[i + 1]));
		return finish_stdout(0);
	}
	log_msg(LOG_ERR, "help: no verb '%s%s%s' (see nodetune help)", argv[i + 1], i + 2 < argc ? " " : "",
		i + 2 < argc ? argv[i + 2] : "");
	return EXIT_USAGE;
}


int main(int argc, char **argv)
{
	static char prefix[64];
	struct opts o = { 0 };
	int i, rc, words;

	log_set_prefix("nodetune");
	/* lines start with syslog's "<N>" under journald (stderr is the stream
	 * JOURNAL_STREAM names), never on a terminal; --log-format, wherever
	 * it stands, decides from there on */
	log_set_syslog(log_stderr_is_journal());
	if (argc == 2 && !strcmp(argv[1], "--dump-options"))
		return dump_options();
	i = opts_parse_globals(argc, argv, &o);
	if (i < 0)
		return -1 - i;
	if (!strcmp(argv[i], "help"))
		return help(argc, argv, i);
	for (size_t k = 0; k < N_VERBS; k++) {
		if (!(words = verb_at(verbs[k].name, argc, argv, i)))
			continue;
		i += words - 1;
		snprintf(prefix, sizeof(prefix), "nodetune: %s", verbs[k].name);
		log_set_prefix(prefix);
		rc = opts_parse(verbs[k].name, verbs[k].spec, argc - i, argv + i, &o);
		return rc >= 0 ? rc : verbs[k].run(&o);
	}
	return not_a_verb(argc, argv, i);
}
