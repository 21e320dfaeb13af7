/* SPDX-License-Identifier: MIT */
/* gres.h — Slurm's view of a machine's GPUs: the gres.conf lines
 * (`Name=gpu File=/dev/nvidia0 Cores=0-11`) that sites without NVML support
 * (Debian's Slurm has none) write by hand, and the mapping back from the
 * device numbers Slurm puts in a step's environment (SLURM_STEP_GPUS,
 * CUDA_VISIBLE_DEVICES) to the GPUs of a topology.
 *
 * Owns: which device file a GPU has, and which cores are local to it in
 * Slurm's terms.  Promises: Cores= are hwloc LOGICAL core indexes (what
 * slurmd compares them with), never OS indexes; GPUs come in PCI bus order
 * (DESIGN.md), and a GPU's device number is its position among the GPUs of
 * its vendor in that order:
 *   NVIDIA  /dev/nvidiaN    (the driver numbers its minors in probe order,
 *                            which is PCI bus order on the machines we know;
 *                            `nvidia-smi -q | grep Minor` confirms it)
 *   AMD     /dev/dri/renderD(128+N)  (the DRM render node, what Slurm's rsmi
 *                            support lists; a machine with another DRM device
 *                            probed first, a board VGA, shifts them: check
 *                            /sys/bus/pci/devices/BUSID/drm/)
 * A GPU of another vendor gets no File= and is left out, with a comment.
 */
#ifndef NODETUNE_GRES_H
#define NODETUNE_GRES_H

#include <stdio.h>

#include "machine/topo.h"

struct gres_gpu {
	unsigned gpu;            /* index into topo->gpus */
	int dev_num;             /* N of the device file; -1: no file known */
	char file[48];           /* "/dev/nvidia0", "" when unknown */
	char *cores;             /* logical core indexes, "0-11,24-35" (owned) */
};

struct gres {
	struct gres_gpu *gpus;   /* topo->n_gpus entries, in topo order */
	unsigned n_gpus;
};

/* The gres view of t.  Returns it, or NULL with err (-ENOMEM). */
struct gres *gres_build(const struct topo *t, struct nt_err *err);

/* Free; NULL is a no-op. */
void gres_free(struct gres *g);

/* The index into topo->gpus of the GPU whose device number (the N of
 * /dev/nvidiaN, or of renderD(128+N)) is dev_num, for the vendor of the
 * machine's first GPU (a Slurm node's gpu gres is one vendor); -1 if none. */
int gres_gpu_by_dev_num(const struct gres *g, const struct topo *t, int dev_num);

/* Write the gres.conf lines: a comment naming the source, then one
 * `Name=gpu File=F Cores=C` per GPU with a device file.  Returns 0 or -EIO. */
int gres_print(FILE *out, const struct gres *g, const struct topo *t);

#endif
