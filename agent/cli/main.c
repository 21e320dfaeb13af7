/* main.c — the nodetune command line: a thin layer over libnodetune.
 *
 * Verbs come from one table; each is a cmd_<verb>.c with its options, its
 * usage and its output (cli.h).  A verb loads its inputs, calls the
 * library, prints, and returns the exit code of the contract in DESIGN.md:
 * 0 success, 1 the check found a problem, 2 bad usage or input (nothing
 * changed), 3 runtime failure (what was changed is rolled back).
 */
#include <jansson.h>
#include <hwloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "base/log.h"

#ifndef NODETUNE_VERSION
#define NODETUNE_VERSION "0.2.0"
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
	/* a verb of two words: the first names a group */
	{ "fleet rollout", cmd_fleet_rollout, &fleet_rollout_spec },
	{ "fleet resume", cmd_fleet_resume, &fleet_resume_spec },
	{ "fleet abort", cmd_fleet_abort, &fleet_abort_spec },
	{ "fleet status", cmd_fleet_status, &fleet_status_spec },
	{ "fleet hosts", cmd_fleet_hosts, &fleet_hosts_spec },
	{ "fleet keygen", cmd_fleet_keygen, &fleet_keygen_spec },
	{ "fleet init-auth", cmd_fleet_init_auth, &fleet_init_auth_spec },
};

#define N_VERBS (sizeof(verbs) / sizeof(verbs[0]))

static void usage(FILE *f)
{
	fprintf(f, "Usage: nodetune [-v] [--version] [--help] VERB [OPTIONS]\n\nVerbs:\n");
	for (size_t i = 0; i < N_VERBS; i++)
		fprintf(f, "  %-13s %s\n", verbs[i].name, verbs[i].spec->summary);
	fprintf(f, "\n'nodetune VERB --help' describes a verb. Each option may be given once (a\n"
		   "repeated one is refused). Exit codes: 0 ok, 1 problem found, 2 bad usage or\n"
		   "input (nothing changed), 3 runtime failure (rolled back).\n");
}

/* --dump-options (hidden): every verb's options, as opts_dump writes
 * them, after the global ones (verb "nodetune"); for the man page check
 * and the bash completion, which are built from these tables. */
static int dump_options(void)
{
	printf("nodetune\thelp\th\t-\nnodetune\tversion\t-\t-\nnodetune\tverbose\tv\t-\n");
	for (size_t i = 0; i < N_VERBS; i++)
		if (opts_dump(stdout, verbs[i].name, verbs[i].spec) < 0)
			break;
	return finish_stdout(0);
}

/* The options before the verb.  Returns the index of the verb in argv, or
 * -1 - the exit code to end with. */
static int global_options(int argc, char **argv)
{
	int i = 1, verbose = 0;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return -1 - finish_stdout(0);
		} else if (!strcmp(argv[i], "--dump-options")) {
			return -1 - dump_options();
		} else if (!strcmp(argv[i], "--version")) {
			printf("nodetune %s (hwloc %s, jansson %s, libnuma, libcgroup)\n", NODETUNE_VERSION,
			       HWLOC_VERSION, JANSSON_VERSION);
			return -1 - finish_stdout(0);
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			if (verbose++) {
				log_msg(LOG_ERR, "--verbose given twice (each option may be given once)");
				return -1 - EXIT_USAGE;
			}
			log_set_level(LOG_DEBUG);
		} else {
			log_msg(LOG_ERR, "unknown option '%s' (see --help)", argv[i]);
			return -1 - EXIT_USAGE;
		}
	}
	if (i == argc) {
		usage(stderr);
		return -1 - EXIT_USAGE;
	}
	return i;
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

/* A group's name without a verb of it after ("nodetune fleet"): say which
 * there are.  Returns whether argv[i] is a group. */
static bool group_usage(const char *word)
{
	char list[256] = "";
	size_t len = 0, n = strlen(word);

	for (size_t k = 0; k < N_VERBS; k++)
		if (!strncmp(verbs[k].name, word, n) && verbs[k].name[n] == ' ')
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "",
						verbs[k].name + n + 1);
	if (!len)
		return false;
	log_msg(LOG_ERR, "%s: expected one of %s (see nodetune --help)", word, list);
	return true;
}

int main(int argc, char **argv)
{
	static char prefix[64];
	struct opts o = { 0 };
	int i, rc, words;

	log_set_prefix("nodetune");
	i = global_options(argc, argv);
	if (i < 0)
		return -1 - i;
	for (size_t k = 0; k < N_VERBS; k++) {
		if (!(words = verb_at(verbs[k].name, argc, argv, i)))
			continue;
		i += words - 1;
		snprintf(prefix, sizeof(prefix), "nodetune: %s", verbs[k].name);
		log_set_prefix(prefix);
		/* the daemon's lines start with "<N>", which journald reads */
		log_set_syslog(verbs[k].run == cmd_daemon);
		rc = opts_parse(verbs[k].name, verbs[k].spec, argc - i, argv + i, &o);
		return rc >= 0 ? rc : verbs[k].run(&o);
	}
	if (!group_usage(argv[i]))
		log_msg(LOG_ERR, "unknown verb '%s' (see nodetune --help)", argv[i]);
	return EXIT_USAGE;
}
