/* SPDX-License-Identifier: MIT */
/* svg.h — the machine, and a plan's ranks on it, as one SVG picture
 * (`nodetune discover --svg`).
 *
 * Packages hold their NUMA nodes; each node shows its CPUs (one square per
 * PU) and below them its PCIe tree: host bridges, the bridges where it
 * branches (a PCIe switch when bridges hang below, its downstream ports;
 * a chain of bridges with one way down is not drawn), the GPUs and NICs.  Each GPU is joined to its nearest NIC, the
 * link named as `nvidia-smi topo -m` does (topo_dev_link).  With a plan,
 * each rank's CPUs and GPU take the rank's colour and the rank's GPU is
 * joined to the rank's NIC instead.
 *
 * The document is self-contained: inline style, no script, no external
 * reference, no font; every text from the topology is XML-escaped, its
 * control characters and bytes outside well-formed UTF-8 shown as '?'.
 * One <g class="gpu"> per GPU, <g class="nic"> per NIC, <g class="numa"> per
 * NUMA node, <g class="package"> per package, <path class="pair"> per
 * pairing drawn, <rect class="pu"> per PU.
 */
#ifndef NODETUNE_SVG_H
#define NODETUNE_SVG_H

#include <stdio.h>

#include "machine/topo.h"
#include "tune/plan.h"

/* Write the picture of t (and pl's ranks when pl is not NULL; pl must be
 * a plan of t) to out.  Returns 0, -ENOMEM, or -EIO when writing failed;
 * out may hold part of a document then. */
int svg_write_machine(FILE *out, const struct topo *t, const struct plan *pl);

#endif
