/* SPDX-License-Identifier: MIT */
/* discover_test.h — what discover.c exports for its unit test only
 * (tests/unit/machine/test_discover.c): steps of the module that the test checks one
 * by one.  Nothing outside discover.c and its test includes this. */
#ifndef NODETUNE_DISCOVER_TEST_H
#define NODETUNE_DISCOVER_TEST_H

#include "machine/discover.h"

/* Compute warnings from the topology and (optional, may be NULL) kernel
 * state into out[0..max).  Returns how many there are in all, which may be
 * more than max (only max are written). */
unsigned discover_warnings(const struct topo *t, const struct kstate *ks,
			   struct discover_warning *out, unsigned max);

#endif
