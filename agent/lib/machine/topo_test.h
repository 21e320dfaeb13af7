/* SPDX-License-Identifier: MIT */
/* topo_test.h — what topo.c exports for its unit test only
 * (tests/unit/machine/test_topo.c): steps of the module that the test checks one
 * by one.  Nothing outside topo.c and its test includes this. */
#ifndef NODETUNE_TOPO_TEST_H
#define NODETUNE_TOPO_TEST_H

#include "machine/topo.h"

/* The GPU classification rule, for one PCI function.  compute_osdev: it
 * carries a CUDA, NVML or RSMI OS device. */
bool topo_pci_is_gpu(unsigned vendor_id, unsigned class_id, bool compute_osdev);

/* The NUMA node with this OS index, or NULL. */
const struct topo_numa *topo_numa_by_os(const struct topo *t, unsigned os_index);

#endif
