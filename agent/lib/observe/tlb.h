/* SPDX-License-Identifier: MIT */
/* tlb.h — TLB shootdowns, counted from the best source this host has, or
 * said to be not countable.
 *
 * Natively and under KVM a remote TLB flush is an IPI, counted on the
 * "TLB:" line of /proc/interrupts.  Some hypervisors flush remote TLBs
 * themselves (a hypercall; the kernel log says e.g. "pvm-pv: remote TLB
 * flushes via PVM_HC_FLUSH_TLB_MULTI"), and CPUs with broadcast
 * invalidation (INVLPGB) send no IPI at all: there the line stays at 0
 * whatever the workload does, and a 0 would be a lie.
 *
 * So a source is chosen by evidence: on the live host, tlb_counter_open()
 * makes a burst of real remote flushes (tlb_probe_storm(): one thread unmaps
 * pages while another thread of the same process spins on a second CPU,
 * both at SCHED_FIFO 1 for those milliseconds where allowed, and each unmap
 * waits until the spinner is seen running, so a loaded host cannot hide the
 * flushes; up to TLB_PROBE_TRIES bursts) and keeps
 * the first source that saw them:
 *   1. the TLB line of proc/interrupts (cheap, no privilege);
 *   2. the tlb:tlb_flush tracepoint, counted on every CPU with perf events,
 *      filtered to remote shootdowns sent or received (root or
 *      CAP_PERFMON; the event id is read from tracefs, mounted in a private
 *      mount namespace of a short-lived child when it is not mounted, so
 *      the host's mounts never change).
 * When neither moves, the counter is not countable and says why.  A
 * captured tree (not the live host) cannot be probed: its interrupts file
 * is read as captured.
 */
#ifndef NODETUNE_TLB_H
#define NODETUNE_TLB_H

#include <stdbool.h>
#include <stdint.h>

#include "base/fsroot.h"

enum tlb_source { TLB_SRC_NONE, TLB_SRC_INTERRUPTS, TLB_SRC_TRACEPOINT, TLB_SRC_N };

#define TLB_ALLOW(src) (1u << (src))
#define TLB_ALLOW_ALL (TLB_ALLOW(TLB_SRC_INTERRUPTS) | TLB_ALLOW(TLB_SRC_TRACEPOINT))

/* remote flushes the probe makes, and how many a source must see */
#define TLB_PROBE_FLUSHES 512
#define TLB_PROBE_MIN_SEEN (TLB_PROBE_FLUSHES / 8)   /* a hypervisor-flushed host shows 0 */
#define TLB_PROBE_TRIES 3          /* bursts before a source is judged blind */

struct tlb_counter {
	enum tlb_source source;
	const struct fsroot *root;    /* borrowed: proc/interrupts is read below it */
	int *fds;                     /* tracepoint: one event per CPU */
	int n_fds;
	char why[320];                /* how it is counted, or why it is not */
};

/* Sources allowed by NODETUNE_TLB_SOURCES ("interrupts", "tracepoint",
 * "none", comma-separated; unset: all).  It only narrows the choice, so a
 * test can act as a host that cannot count; it never makes a count up. */
unsigned tlb_sources_from_env(void);

/* Choose a source among allow (a mask of TLB_ALLOW()) for root, probing on
 * the live host.  Always returns 0 with c filled (source TLB_SRC_NONE and
 * c->why when nothing can count); release with tlb_counter_close().  root
 * is borrowed and must outlive c. */
int tlb_counter_open(struct tlb_counter *c, const struct fsroot *root, unsigned allow);

static inline bool tlb_counter_countable(const struct tlb_counter *c)
{
	return c->source != TLB_SRC_NONE;
}

/* Shootdowns so far (a running total: take differences).  0, -ENODATA
 * when not countable, or -errno from the source (*ret is then 0). */
int tlb_counter_read(const struct tlb_counter *c, uint64_t *ret);

/* Close the events; a zeroed or closed counter is a no-op. */
void tlb_counter_close(struct tlb_counter *c);

#endif
