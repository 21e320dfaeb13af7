/* SPDX-License-Identifier: MIT */
/* cmd_discover.c — `nodetune discover`: the machine and its kernel state. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "machine/discover.h"
#include "machine/kstate.h"
#include "base/log.h"
#include "tune/svg.h"

static const struct opt_row discover_opts[] = {
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_SYNTHETIC, OPT_OPTIONAL, NULL },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	{ OPT_SVG, OPT_OPTIONAL, NULL },
	{ OPT_POLICY, OPT_OPTIONAL, "with --svg: colour the ranks of this policy's plan" },
	{ OPT_RANKS, OPT_OPTIONAL, "with --svg and --policy: local ranks to plan for (default: one per GPU)" },
	OPT_TABLE_END,
};

const struct verb_spec discover_spec = {
	discover_opts, VERB_NO_COMMAND,
	"nodetune discover [--topology FILE.xml | --synthetic DESC]\n"
	"                         [--sysroot DIR] [--json]\n"
	"                         [--svg FILE.svg [--policy FILE|NAME [-n N]]]",
	"show topology, GPU/NIC locality and kernel state",
	"Show packages, NUMA nodes, cores, GPUs and NICs with their locality, and the\n"
	"kernel state that matters for training (THP, NUMA balancing, hugepages,\n"
	"governor, isolated CPUs, swap, cgroup version), with warnings worth acting on.\n"
	"The kernel state is read from this host, or from --sysroot (where, without\n"
	"--topology or --synthetic, the topology is read too); it is left out\n"
	"(\"kernel\": null) for a --topology or --synthetic machine without --sysroot.\n"
	"--svg FILE draws packages, NUMA nodes, PCIe switches, GPUs and NICs with each\n"
	"GPU's NIC; with --policy, the plan's ranks on their CPUs, GPUs and NICs.",
};

/* The kernel state of this host or --sysroot into ks.  0, or an exit code
 * (said). */
static int read_kernel(const struct opts *o, struct fsroot **ret_root, struct kstate *ks)
{
	struct nt_err err = { 0 };
	int r;

	*ret_root = fsroot_open(o->sysroot ? o->sysroot : "/");
	if (!*ret_root) {
		log_msg(LOG_ERR, "--sysroot %s: %s", o->sysroot ? o->sysroot : "/", nt_strerror(errno));
		return EXIT_USAGE;
	}
	r = kstate_read(*ret_root, ks, &err);
	if (r < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return exit_code_for(r);
	}
	/* what could not be read (a VM has no cpufreq): the JSON's unknown,
	 * nothing to act on; said with -v */
	for (unsigned i = 0; i < ks->n_notes; i++)
		log_msg(LOG_INFO, "note: %s", ks->notes[i]);
	return 0;
}

/* --svg, --policy and --ranks together, not with --json.  0 or EXIT_USAGE (said). */
static int check_svg_opts(const struct opts *o)
{
	if (o->svg && o->json) {
		log_msg(LOG_ERR, "--svg and --json are mutually exclusive");
		return EXIT_USAGE;
	}
	if (!o->svg && (o->policy || o->ranks)) {
		log_msg(LOG_ERR, "--policy and --ranks colour ranks in the picture: give --svg FILE too");
		return EXIT_USAGE;
	}
	if (o->ranks && !o->policy) {
		log_msg(LOG_ERR, "--ranks needs --policy");
		return EXIT_USAGE;
	}
	return 0;
}

/* The picture of x's machine (and plan) to o->svg.  0, or an exit code (said). */
static int write_svg(const struct opts *o, const struct ctx *x)
{
	FILE *f = fopen(o->svg, "we");
	int r;

	if (!f) {
		log_msg(LOG_ERR, "--svg %s: %s", o->svg, strerror(errno));
		return EXIT_USAGE;
	}
	r = svg_write_machine(f, x->topo, x->plan);
	if (fclose(f) != 0 && !r)
		r = -errno;
	if (r < 0) {
		log_msg(LOG_ERR, "--svg %s: %s", o->svg, strerror(-r));
		return EXIT_RUNTIME;
	}
	return 0;
}

int cmd_discover(struct opts *o)
{
	struct kstate ks = { 0 };
	struct fsroot *root = NULL;
	struct ctx x = { 0 };
	bool have_ks = o->sysroot || (!o->topology && !o->synthetic);
	int rc = check_svg_opts(o);

	if (rc || (have_ks && (rc = read_kernel(o, &root, &ks))))
		goto out;
	rc = ctx_load(&x, o, o->ranks, false);
	if (rc >= 0)
		goto out;
	if (o->svg)
		rc = write_svg(o, &x);
	else if (o->json)
		rc = print_json("discover", discover_json(x.topo, have_ks ? &ks : NULL));
	else if (discover_print(stdout, x.topo, have_ks ? &ks : NULL) < 0)
		rc = EXIT_RUNTIME;
	else
		rc = 0;
	rc = finish_stdout(rc);
	ctx_release(&x);
out:
	kstate_release(&ks);
	fsroot_free(root);
	return rc;
}
