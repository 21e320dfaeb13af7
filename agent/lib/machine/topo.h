/* SPDX-License-Identifier: MIT */
/* topo.h — the machine as nodetune sees it, discovered through hwloc.
 *
 * A topology comes from the live host (optionally under a captured fsroot),
 * from an hwloc XML export, or from an hwloc synthetic description.  From the
 * hwloc tree it extracts what planning needs: NUMA nodes by OS index, GPUs
 * ordered by PCI bus id, NICs, and for each device its NUMA node and local
 * CPUs (those of its nearest non-I/O ancestor, which may be narrower than
 * its NUMA node).
 *
 * GPU rule (DESIGN.md): an NVIDIA display-class PCI device (vendor 0x10de,
 * class 0x03xx), an AMD Instinct accelerator (vendor 0x1002, class 0x0380),
 * or any PCI device carrying a CUDA/NVML/RSMI OS device.  A board VGA is not
 * a GPU.  NIC rule: a network-class PCI device (class 0x02xx) or any PCI
 * device carrying a network or OpenFabrics OS device.
 */
#ifndef NODETUNE_TOPO_H
#define NODETUNE_TOPO_H

#include <hwloc.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/log.h"

struct topo_numa {
	unsigned os_index;
	hwloc_bitmap_t cpus;        /* OS indexes of its CPUs */
	uint64_t memory_bytes;
};

/* A GPU or a NIC. */
struct topo_dev {
	char pci_bus_id[16];        /* "dddd:bb:dd.f" */
	unsigned vendor_id, device_id, class_id;
	int numa_node;              /* OS index; -1 when not one node */
	hwloc_bitmap_t cpus;        /* local CPUs (OS indexes) */
	char name[128];             /* GPU model or NIC interface name */
	char vendor[16];            /* GPUs: "nvidia", "amd" or "unknown" */
	char rdma[64];              /* NICs: OpenFabrics device, "" if none */
	int nearest_nic;            /* GPUs: index into nics[], -1 if none */
	int nic_link;               /* GPUs: enum topo_link to nearest_nic, -1 if none */
	hwloc_obj_t obj;
};

struct topo {
	hwloc_topology_t hw;
	char source[512];           /* "host", "xml FILE", "synthetic DESC" */
	unsigned packages, cores, pus;
	struct topo_numa *numa;     /* sorted by os_index */
	unsigned n_numa;
	uint64_t *numa_dist;        /* n_numa x n_numa relative latencies, row i =
	                             * from numa[i] (numactl -H's "node distances");
	                             * NULL when the topology has none */
	struct topo_dev *gpus;      /* sorted by PCI bus id: index = CUDA order */
	unsigned n_gpus;
	struct topo_dev *nics;      /* sorted by PCI bus id */
	unsigned n_nics;
};

/* Constructors.  On error they return NULL, with err->code a negative errno
 * (-ENOENT, -EACCES, -EISDIR, -EINVAL for bad input; -ENOMEM) and err->msg
 * one line naming the input. */
struct topo *topo_load_host(const char *fsroot, struct nt_err *err);
struct topo *topo_load_xml(const char *path, struct nt_err *err);
struct topo *topo_load_synthetic(const char *desc, struct nt_err *err);

/* The PCIe relation between two devices of t, as `nvidia-smi topo -m`
 * names it, from the hwloc tree: their deepest common ancestor and the
 * bridges on the way to it. */
enum topo_link {
	TOPO_LINK_PIX,  /* one PCIe switch (or root port): at most one bridge on each side */
	TOPO_LINK_PXB,  /* several PCIe bridges, no host bridge crossed */
	TOPO_LINK_PHB,  /* the same PCIe host bridge */
	TOPO_LINK_NODE, /* different host bridges, the same NUMA node(s) */
	TOPO_LINK_SYS,  /* across the interconnect between NUMA nodes */
};

/* The relation between a and b (devices of t).  Never fails. */
enum topo_link topo_dev_link(const struct topo_dev *a, const struct topo_dev *b);

/* "PIX", "PXB", "PHB", "NODE", "SYS"; "-" for a value out of range. */
const char *topo_link_name(int link);

/* Free; NULL is a no-op. */
void topo_free(struct topo *t);

#endif
