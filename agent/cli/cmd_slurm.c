/* SPDX-License-Identifier: MIT */
/* cmd_slurm.c — `nodetune slurm gres`: what a Slurm site needs from the
 * machine (gres.h).  One sub-verb for now; the SPANK plugin itself is
 * deploy/slurm/nodetune_spank.c, over the same library. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "machine/gres.h"
#include "base/log.h"

static const struct opt_row slurm_opts[] = {
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec slurm_spec = {
	slurm_opts, VERB_SUB_VERB,
	"nodetune slurm gres [--topology FILE.xml] [--json]",
	"Slurm helpers: gres.conf lines for this machine's GPUs",
	"gres: print gres.conf lines for the GPUs of this host (or of an hwloc XML\n"
	"export), for sites whose Slurm has no NVML support (Debian's has none):\n\n"
	"  Name=gpu File=/dev/nvidia0 Cores=0-23\n\n"
	"GPUs in PCI bus order; File= is /dev/nvidiaN for NVIDIA GPUs and\n"
	"/dev/dri/renderD(128+N) for AMD ones (N: the GPU's place among its vendor's\n"
	"GPUs in PCI bus order; check `nvidia-smi -q | grep Minor` or\n"
	"/sys/bus/pci/devices/BUSID/drm/ on the node); Cores= are the hwloc LOGICAL\n"
	"indexes of the cores local to the GPU, as slurmd reads them.  A comment line\n"
	"before each names the GPU's PCI bus id, model and CPUs (OS indexes).",
};

static json_t *gres_json(const struct gres *g, const struct topo *t)
{
	json_t *doc = json_object(), *arr = json_array();

	if (!doc || !arr || json_object_set_new(doc, "gres", arr) < 0) {
		json_decref(doc);
		json_decref(arr);
		return NULL;
	}
	for (unsigned i = 0; i < g->n_gpus; i++)
		if (json_array_append_new(arr, json_pack("{s:I, s:s, s:s, s:s, s:s?}", "gpu", (json_int_t)i,
							  "pci_bus_id", t->gpus[i].pci_bus_id, "vendor",
							  t->gpus[i].vendor, "cores", g->gpus[i].cores, "file",
							  g->gpus[i].file[0] ? g->gpus[i].file : NULL)) < 0) {
			json_decref(doc);
			return NULL;
		}
	return doc;
}

static int slurm_gres(const struct opts *o)
{
	struct nt_err err = { 0 };
	struct topo *t;
	struct gres *g;
	int rc;

	t = o->topology ? topo_load_xml(o->topology, &err) : topo_load_host(NULL, &err);
	if (!t) {
		log_msg(LOG_ERR, "%s", err.msg);
		return exit_code_for(err.code);
	}
	g = gres_build(t, &err);
	if (!g) {
		log_msg(LOG_ERR, "%s", err.msg);
		topo_free(t);
		return EXIT_RUNTIME;
	}
	rc = o->json ? print_json("slurm.gres", gres_json(g, t)) : finish_stdout(gres_print(stdout, g, t) < 0 ? EXIT_RUNTIME : 0);
	gres_free(g);
	topo_free(t);
	return rc;
}

int cmd_slurm(struct opts *o)
{
	if (!o->sub_verb) {
		log_msg(LOG_ERR, "expected a sub-verb: gres (see --help)");
		return EXIT_USAGE;
	}
	if (strcmp(o->sub_verb, "gres")) {
		log_msg(LOG_ERR, "unknown sub-verb '%s' (known: gres)", o->sub_verb);
		return EXIT_USAGE;
	}
	if (o->args) {
		log_msg(LOG_ERR, "unexpected argument '%s' (see --help)", o->args[0]);
		return EXIT_USAGE;
	}
	return slurm_gres(o);
}
