/* SPDX-License-Identifier: MIT */
/* cpulist.h — Linux cpulist strings ("0-17,36-53") <-> hwloc bitmaps.
 *
 * Every CPU and NUMA set the agent prints or reads is a cpulist of OS
 * indexes.  The parser is strict: the kernel's format and nothing else.
 */
#ifndef NODETUNE_CPULIST_H
#define NODETUNE_CPULIST_H

#include <hwloc.h>
#include <stddef.h>

/* Parse s (e.g. "0-3,8,10-11"; "" is the empty set; one trailing newline is
 * accepted) into set, which is overwritten.  Ranges must be ascending and
 * indexes at most CPULIST_MAX.  Returns 0, or -EINVAL on malformed input
 * (set is then left unchanged), -ENOMEM. */
#define CPULIST_MAX 65535
int cpulist_parse(const char *s, hwloc_bitmap_t set);

/* Format set as a cpulist into buf ("" for the empty set).  Returns 0, or
 * -ENOSPC when buf is too small (buf then holds a truncated string) and
 * -EINVAL for an infinite set. */
int cpulist_format(hwloc_const_bitmap_t set, char *buf, size_t size);

/* Same, into a newly allocated string the caller frees; NULL on error. */
char *cpulist_format_alloc(hwloc_const_bitmap_t set);

#endif
