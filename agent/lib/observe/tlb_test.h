/* SPDX-License-Identifier: MIT */
/* tlb_test.h — what tlb.c exports for its tests only: steps of the module
 * that tests/unit/observe/test_tlb.c checks one by one, and the probe's storm that
 * tests/tools/tlbstorm.c makes on demand for the integration tests.
 * Nothing else includes this. */
#ifndef NODETUNE_TLB_TEST_H
#define NODETUNE_TLB_TEST_H

#include "observe/tlb.h"

/* "interrupts", "tracepoint", "none". */
const char *tlb_source_name(enum tlb_source s);

/* Make n remote TLB flushes on purpose: a thread pinned to one allowed CPU
 * maps, touches and unmaps a page n times while a second thread of this
 * process spins on another, each unmap once the spinner is seen running
 * (at most 1 s of waiting a call: after that, unmaps go on without it).
 * 0; -EXDEV when this process may use fewer than two CPUs; -errno from
 * pthread_create or mmap. */
int tlb_probe_storm(int n);

#endif
