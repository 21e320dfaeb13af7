/* SPDX-License-Identifier: MIT */
/* inject.h — reproduce a low-level cause of slow training on purpose
 * (--inject KIND), to prove that nodetune's A/B engine and doctor see it.
 *
 *   thp-compaction   a side thread faults in THP-advised memory in 64 MiB
 *                    rounds and frees it, and (as root) asks the kernel to
 *                    compact (compact_stall, compact_*, thp_fault_alloc)
 *   tlb-shootdown    a side thread maps, touches and munmaps pages in a
 *                    loop: TLB-shootdown IPIs to the training threads
 *   noisy-neighbor   a busy thread on the rank's CPUs (involuntary switches,
 *                    run-queue wait)
 *   remote-numa      weights and gradients moved to a far NUMA node
 *                    (numa_miss / numa_foreign); skipped on one node
 *   alloc-churn      64 MiB malloc'd, touched and freed every step (page
 *                    faults, page clearing)
 *   host-sync        every 10th step stalls 50 ms (like a graph-break sync)
 *   slow:PCT         every step's compute is stretched by PCT percent, by
 *                    spinning for PCT% of its measured forward+backward time
 */
#ifndef NODETUNE_HARNESS_INJECT_H
#define NODETUNE_HARNESS_INJECT_H

#include <stdbool.h>
#include <stddef.h>

#include "nt_err.h"

struct inject;

/* Parse spec (NULL: nothing, err untouched).  NULL with err on a bad
 * spec (-EINVAL) or out of memory. */
struct inject *inject_create(const char *spec, struct nt_err *err);

/* Start side threads; weights/grads for remote-numa.  Returns 0, with
 * err->msg a note when a cause the host cannot have was skipped (empty
 * otherwise), or -errno with err. */
int inject_start(struct inject *in, void *weights, void *grads, size_t bytes, struct nt_err *err);

/* Per-step hooks of the training loop. */
void inject_after_compute(struct inject *in, int step, double compute_ms);
void inject_step_end(struct inject *in, int step);

void inject_stop(struct inject *in);

#endif
