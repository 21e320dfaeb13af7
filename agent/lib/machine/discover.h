/* SPDX-License-Identifier: MIT */
/* discover.h — what `nodetune discover` reports: the topology, the kernel
 * state, and the warnings worth acting on, as JSON or as human text. */
#ifndef NODETUNE_DISCOVER_H
#define NODETUNE_DISCOVER_H

#include <jansson.h>
#include <stdio.h>

#include "machine/kstate.h"
#include "machine/topo.h"

struct discover_warning {
	char code[32];   /* stable identifier, e.g. "gpu-nic-remote" */
	char msg[512];
};

/* The discover document (see README "discover --json").  ks may be NULL
 * ("kernel": null).  Returns a new reference, or NULL on out of memory. */
json_t *discover_json(const struct topo *t, const struct kstate *ks);

/* The human summary.  Returns 0 or -EIO when writing failed. */
int discover_print(FILE *out, const struct topo *t, const struct kstate *ks);

#endif
