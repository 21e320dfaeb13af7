/* cmd_discover.c — `nodetune discover`: the machine and its kernel state. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "machine/discover.h"
#include "machine/kstate.h"
#include "base/log.h"

static const struct opt_row discover_opts[] = {
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_SYNTHETIC, OPT_OPTIONAL, NULL },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec discover_spec = {
	discover_opts, VERB_NO_COMMAND,
	"nodetune discover [--topology FILE.xml | --synthetic DESC] [--sysroot DIR] [--json]",
	"show topology, GPU/NIC locality and kernel state",
	"Show packages, NUMA nodes, cores, GPUs and NICs with their locality, and the\n"
	"kernel state that matters for training (THP, NUMA balancing, hugepages,\n"
	"governor, isolated CPUs, swap, cgroup version), with warnings worth acting on.\n"
	"The kernel state is read from this host, or from --sysroot (where, without\n"
	"--topology or --synthetic, the topology is read too); it is left out\n"
	"(\"kernel\": null) for a --topology or --synthetic machine without --sysroot.",
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
	for (unsigned i = 0; i < ks->n_notes; i++)
		log_msg(LOG_WARNING, "%s", ks->notes[i]);
	return 0;
}

int cmd_discover(struct opts *o)
{
	struct nt_err err = { 0 };
	struct kstate ks = { 0 };
	struct fsroot *root = NULL;
	struct topo *t = NULL;
	bool have_ks = o->sysroot || (!o->topology && !o->synthetic);
	int rc = 0;

	if (have_ks && (rc = read_kernel(o, &root, &ks)))
		goto out;
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
