/* main.c — the nodetune command line: a thin layer over the agent library.
 *
 * Verbs come from one table.  Each verb parses its own options, calls the
 * library, prints, and returns the exit code of the contract in DESIGN.md:
 * 0 success, 1 the check found a problem, 2 bad usage or input (nothing
 * changed), 3 runtime failure (rolled back).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "discover.h"
#include "parse.h"
#include "fsroot.h"
#include "kstate.h"
#include "knob.h"
#include "log.h"
#include "plan.h"
#include "policy.h"
#include "topo.h"

#ifndef NODETUNE_VERSION
#define NODETUNE_VERSION "0.1.0"
#endif

enum { EXIT_PROBLEM = 1, EXIT_USAGE = 2, EXIT_RUNTIME = 3 };

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* Bad input and bad usage exit 2; everything else that failed at run time 3. */
static int exit_code_for(int err)
{
	switch (err) {
	case -ENOMEM:
	case -EIO:
	case -EAGAIN:
	case -EINTR:
		return EXIT_RUNTIME;
	default:
		return EXIT_USAGE;
	}
}

/* Flush stdout and report a failed write (a full disk, a closed pipe). */
static int finish_stdout(int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_msg(LOG_ERR, "writing standard output failed: %s", strerror(errno));
		return rc ? rc : EXIT_RUNTIME;
	}
	return rc;
}

/* Parse a number option; usage error (exit 2) when it is not one. */
static int opt_uint(const char *opt, const char *val, unsigned max, unsigned *ret)
{
	uint64_t v;

	if (parse_u64(val, max, &v) < 0) {
		log_msg(LOG_ERR, "%s '%s': expected a whole number from 0 to %u", opt, val, max);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* The machine: an XML export, a synthetic description, or the host (under
 * sysroot when given). */
static struct topo *load_topology(const char *xml, const char *synth, const char *sysroot,
				  struct nt_err *err)
{
	if (xml)
		return topo_load_xml(xml, err);
	if (synth)
		return topo_load_synthetic(synth, err);
	return topo_load_host(sysroot, err);
}

/* A policy, refusing untrusted files when we run as root. */
static struct policy *load_policy(const char *path, struct nt_err *err)
{
	return policy_load(path, geteuid() == 0 ? POLICY_TRUSTED_ONLY : 0, err);
}

/* Print a JSON document on stdout. */
static int print_json(json_t *doc)
{
	int r = 0;

	if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
		log_msg(LOG_ERR, "writing JSON failed");
		r = EXIT_RUNTIME;
	} else {
		fputc('\n', stdout);
	}
	json_decref(doc);
	return r;
}

/* ---- discover ---------------------------------------------------------- */

static void discover_usage(FILE *f)
{
	fprintf(f,
		"Usage: nodetune discover [--topology FILE.xml | --synthetic DESC] [--sysroot DIR] [--json]\n"
		"\n"
		"Show packages, NUMA nodes, cores, GPUs and NICs with their locality, and the\n"
		"kernel state that matters for training (THP, NUMA balancing, hugepages,\n"
		"governor, isolated CPUs, swap, cgroup version), with warnings worth acting on.\n"
		"\n"
		"  --topology FILE.xml  read an hwloc XML export instead of this host\n"
		"  --synthetic DESC     an hwloc synthetic topology, e.g. \"pack:2 numa:1 core:8 pu:2\"\n"
		"  --sysroot DIR        read /sys and /proc below DIR (a captured tree); without\n"
		"                       --topology/--synthetic the topology is read there too\n"
		"  --json               machine-readable output on stdout\n"
		"  -h, --help           this text\n"
		"\n"
		"The kernel state is read from this host, or from --sysroot; it is left out\n"
		"(\"kernel\": null) for a --topology or --synthetic machine without --sysroot.\n");
}

static int cmd_discover(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "topology", required_argument, NULL, 't' },
		{ "synthetic", required_argument, NULL, 's' },
		{ "sysroot", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *arg_topology = NULL, *arg_synthetic = NULL, *arg_sysroot = NULL;
	bool arg_json = false, have_ks = false;
	struct nt_err err = { 0 };
	struct kstate ks = { 0 };
	struct fsroot *root = NULL;
	struct topo *t = NULL;
	int c, r, rc = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 't': arg_topology = optarg; break;
		case 's': arg_synthetic = optarg; break;
		case 'r': arg_sysroot = optarg; break;
		case 'j': arg_json = true; break;
		case 'h':
			discover_usage(stdout);
			return finish_stdout(0);
		case ':':
			log_msg(LOG_ERR, "option '%s' needs a value (see --help)", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			log_msg(LOG_ERR, "unknown option '%s' (see --help)", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		log_msg(LOG_ERR, "unexpected argument '%s' (see --help)", argv[optind]);
		return EXIT_USAGE;
	}
	if (arg_topology && arg_synthetic) {
		log_msg(LOG_ERR, "--topology and --synthetic are mutually exclusive");
		return EXIT_USAGE;
	}

	if (arg_sysroot || (!arg_topology && !arg_synthetic)) {
		root = fsroot_open(arg_sysroot ? arg_sysroot : "/");
		if (!root) {
			log_msg(LOG_ERR, "--sysroot %s: %s", arg_sysroot ? arg_sysroot : "/",
				strerror(errno));
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

	t = load_topology(arg_topology, arg_synthetic, arg_sysroot, &err);
	if (!t) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = exit_code_for(err.code);
		goto out;
	}

	if (arg_json)
		rc = print_json(discover_json(t, have_ks ? &ks : NULL));
	else if (discover_print(stdout, t, have_ks ? &ks : NULL) < 0) {
		rc = EXIT_RUNTIME;
	}
	rc = finish_stdout(rc);
out:
	topo_free(t);
	kstate_release(&ks);
	fsroot_free(root);
	return rc;
}

/* ---- plan ------------------------------------------------------------- */

static void plan_usage(FILE *f)
{
	fprintf(f,
		"Usage: nodetune plan --policy FILE [--ranks N] [--topology FILE.xml | --synthetic DESC]\n"
		"                     [--sysroot DIR] [--json]\n"
		"\n"
		"Show what the policy would do on this machine (or the given topology) for N\n"
		"local ranks: per rank its GPU, CPUs, memory nodes and NIC; host settings with\n"
		"their current and wanted values; the job cgroup; device IRQ moves.\n"
		"Changes nothing.\n"
		"\n"
		"  --policy FILE        the policy (see `nodetune keys`)\n"
		"  --ranks N            local ranks (default: one per GPU, or 1 without GPUs)\n"
		"  --topology FILE.xml  plan for an hwloc XML export instead of this host\n"
		"  --synthetic DESC     plan for an hwloc synthetic topology\n"
		"  --sysroot DIR        read current values (and, alone, the topology) below DIR\n"
		"  --json               machine-readable output\n");
}

static int cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "ranks", required_argument, NULL, 'n' },
		{ "topology", required_argument, NULL, 't' },
		{ "synthetic", required_argument, NULL, 's' },
		{ "sysroot", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *arg_policy = NULL, *arg_topology = NULL, *arg_synthetic = NULL, *arg_sysroot = NULL;
	unsigned arg_ranks = 0;
	bool arg_json = false;
	struct nt_err err = { 0 };
	struct fsroot *root = NULL;
	struct policy *pol = NULL;
	struct topo *t = NULL;
	struct plan *pl = NULL;
	int c, rc = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': arg_policy = optarg; break;
		case 'n':
			if (opt_uint("--ranks", optarg, PLAN_MAX_RANKS, &arg_ranks) < 0 || arg_ranks == 0) {
				if (arg_ranks == 0 && optarg[0] == '0')
					log_msg(LOG_ERR, "--ranks 0: at least one rank");
				return EXIT_USAGE;
			}
			break;
		case 't': arg_topology = optarg; break;
		case 's': arg_synthetic = optarg; break;
		case 'r': arg_sysroot = optarg; break;
		case 'j': arg_json = true; break;
		case 'h':
			plan_usage(stdout);
			return finish_stdout(0);
		case ':':
			log_msg(LOG_ERR, "option '%s' needs a value (see --help)", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			log_msg(LOG_ERR, "unknown option '%s' (see --help)", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		log_msg(LOG_ERR, "unexpected argument '%s' (see --help)", argv[optind]);
		return EXIT_USAGE;
	}
	if (!arg_policy) {
		log_msg(LOG_ERR, "--policy FILE is required");
		return EXIT_USAGE;
	}
	if (arg_topology && arg_synthetic) {
		log_msg(LOG_ERR, "--topology and --synthetic are mutually exclusive");
		return EXIT_USAGE;
	}
	pol = load_policy(arg_policy, &err);
	if (!pol) {
		log_msg(LOG_ERR, "%s", err.msg);
		return exit_code_for(err.code);
	}
	t = load_topology(arg_topology, arg_synthetic, arg_sysroot, &err);
	if (!t) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = exit_code_for(err.code);
		goto out;
	}
	if (arg_sysroot || (!arg_topology && !arg_synthetic)) {
		root = fsroot_open(arg_sysroot ? arg_sysroot : "/");
		if (!root) {
			log_msg(LOG_ERR, "--sysroot %s: %s", arg_sysroot, strerror(errno));
			rc = EXIT_USAGE;
			goto out;
		}
	}
	if (!arg_ranks)
		arg_ranks = t->n_gpus ? t->n_gpus : 1;
	pl = plan_build(pol, t, arg_ranks, root, &err);
	if (!pl) {
		log_msg(LOG_ERR, "%s", err.msg);
		rc = exit_code_for(err.code);
		goto out;
	}
	if (arg_json)
		rc = print_json(plan_json(pl, t));
	else if (plan_print(stdout, pl, t) < 0)
		rc = EXIT_RUNTIME;
	rc = finish_stdout(rc);
out:
	plan_free(pl);
	topo_free(t);
	policy_free(pol);
	fsroot_free(root);
	return rc;
}

/* ---- keys -------------------------------------------------------------- */

static int cmd_keys(int argc, char **argv)
{
	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--markdown"))) {
		if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			printf("Usage: nodetune keys [--markdown]\n\nEvery policy key: section, values, what it applies to and writes.\n");
			return finish_stdout(0);
		}
		log_msg(LOG_ERR, "unexpected argument '%s' (see --help)", argv[1]);
		return EXIT_USAGE;
	}
	knob_print_reference(stdout);
	return finish_stdout(0);
}

/* ---- table and main ---------------------------------------------------- */

static const struct cmd commands[] = {
	{ "discover", cmd_discover, "show topology, GPU/NIC locality and kernel state" },
	{ "plan", cmd_plan, "show what a policy would do for N local ranks (changes nothing)" },
	{ "keys", cmd_keys, "list every policy key (the reference table)" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: nodetune [-v] [--version] [--help] VERB [OPTIONS]\n\nVerbs:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'nodetune VERB --help' describes a verb. Exit codes: 0 ok, 1 problem found,\n"
		   "2 bad usage or input (nothing changed), 3 runtime failure (rolled back).\n");
}

int main(int argc, char **argv)
{
	static char prefix[64];
	int i = 1;

	log_set_prefix("nodetune");
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return finish_stdout(0);
		} else if (!strcmp(argv[i], "--version")) {
			printf("nodetune %s (hwloc %s, jansson %s)\n", NODETUNE_VERSION,
			       HWLOC_VERSION, JANSSON_VERSION);
			return finish_stdout(0);
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
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
		if (strcmp(argv[i], commands[k].name))
			continue;
		snprintf(prefix, sizeof(prefix), "nodetune: %s", commands[k].name);
		log_set_prefix(prefix);
		return commands[k].fn(argc - i, argv + i);
	}
	log_msg(LOG_ERR, "unknown verb '%s' (see nodetune --help)", argv[i]);
	return EXIT_USAGE;
}
