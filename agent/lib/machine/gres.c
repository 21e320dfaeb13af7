/* SPDX-License-Identifier: MIT */
/* gres.c — see gres.h. */
#include "machine/gres.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpulist.h"

/* The logical indexes of the cores (PUs when the topology has none) that
 * intersect cpus, as a list "0-11,24-35".  NULL on out of memory. */
static char *logical_cores(const struct topo *t, hwloc_const_bitmap_t cpus)
{
	hwloc_obj_type_t type = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE
										      : HWLOC_OBJ_PU;
	hwloc_bitmap_t idx = hwloc_bitmap_alloc();
	hwloc_obj_t o = NULL;
	char *s;

	if (!idx)
		return NULL;
	while ((o = hwloc_get_next_obj_by_type(t->hw, type, o)))
		if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, cpus))
			hwloc_bitmap_set(idx, o->logical_index);
	s = cpulist_format_alloc(idx);
	hwloc_bitmap_free(idx);
	return s;
}

struct gres *gres_build(const struct topo *t, struct nt_err *err)
{
	struct gres *g = calloc(1, sizeof(*g));
	int n_nvidia = 0, n_amd = 0;

	if (!g || (t->n_gpus && !(g->gpus = calloc(t->n_gpus, sizeof(*g->gpus)))))
		goto out_nomem;
	g->n_gpus = t->n_gpus;
	for (unsigned i = 0; i < t->n_gpus; i++) {
		struct gres_gpu *gg = &g->gpus[i];
		const struct topo_dev *d = &t->gpus[i];

		gg->gpu = i;
		gg->dev_num = -1;
		if (!strcmp(d->vendor, "nvidia")) {
			gg->dev_num = n_nvidia++;
			snprintf(gg->file, sizeof(gg->file), "/dev/nvidia%d", gg->dev_num);
		} else if (!strcmp(d->vendor, "amd")) {
			gg->dev_num = n_amd++;
			snprintf(gg->file, sizeof(gg->file), "/dev/dri/renderD%d", 128 + gg->dev_num);
		}
		if (!(gg->cores = logical_cores(t, d->cpus)))
			goto out_nomem;
	}
	return g;
out_nomem:
	gres_free(g);
	err_set(err, -ENOMEM, "out of memory");
	return NULL;
}

void gres_free(struct gres *g)
{
	if (!g)
		return;
	for (unsigned i = 0; g->gpus && i < g->n_gpus; i++)
		free(g->gpus[i].cores);
	free(g->gpus);
	free(g);
}

int gres_gpu_by_dev_num(const struct gres *g, const struct topo *t, int dev_num)
{
	for (unsigned i = 0; i < g->n_gpus; i++)
		if (g->gpus[i].dev_num == dev_num && !strcmp(t->gpus[i].vendor, t->gpus[0].vendor))
			return (int)i;
	return -1;
}

int gres_print(FILE *out, const struct gres *g, const struct topo *t)
{
	fprintf(out, "# gres.conf for %s (nodetune slurm gres): GPUs in PCI bus order, Cores= hwloc logical core indexes\n",
		t->source);
	if (g->n_gpus == 0)
		fprintf(out, "# no GPUs\n");
	for (unsigned i = 0; i < g->n_gpus; i++) {
		const struct gres_gpu *gg = &g->gpus[i];

		char *cpus = cpulist_format_alloc(t->gpus[i].cpus);

		fprintf(out, "# GPU %u: %s %s, CPUs %s\n", i, t->gpus[i].pci_bus_id, t->gpus[i].name,
			cpus ? cpus : "?");
		free(cpus);
		if (gg->file[0])
			fprintf(out, "Name=gpu File=%s Cores=%s\n", gg->file, gg->cores);
		else
			fprintf(out, "# (vendor %s: no device file known, left out)\n", t->gpus[i].vendor);
	}
	return ferror(out) ? -EIO : 0;
}
