/* SPDX-License-Identifier: MIT */
/* procfs_test.h — what procfs.c exports for its tests only
 * (tests/unit/observe/test_procfs.c, tests/fuzz/fuzz_procirq.c,
 * tests/fuzz/fuzz_pidcgroup.c).  Nothing outside procfs.c and those files
 * includes this. */
#ifndef NODETUNE_PROCFS_TEST_H
#define NODETUNE_PROCFS_TEST_H

#include "observe/procfs.h"

/* Parse buf[0..len) (not NUL-terminated) as proc/interrupts or
 * proc/softirqs: a header of "CPUn" columns, then "LABEL: count... [text]"
 * rows (blank lines skipped).  Returns 0 and fills *ret (freed with
 * procfs_irqtab_free), or -EINVAL with err naming the line ("line N:
 * expected ..."), -ENOMEM; *ret untouched on error. */
int procfs_irqtab_parse(const char *buf, size_t len, struct procfs_irqtab *ret, struct nt_err *err);

/* Parse buf[0..len) (not NUL-terminated; a final newline allowed) as
 * proc/PID/cgroup: lines "ID:CONTROLLERS:PATH", e.g. "0::/user.slice" (v2:
 * ID 0, no controllers, at most one such line) and "4:cpu,cpuacct:/x" (v1:
 * ID > 0, a comma list of controllers or "name=NAME", each of
 * [A-Za-z0-9_.=-]).  PATH is the rest of the line.  A path with ".." (a
 * cgroup outside the reader's cgroup namespace) is refused, like every
 * other malformed line.  Returns 0 and fills *ret; -EINVAL with err
 * ("line N: expected ..."); *ret untouched on error. */
int procfs_cgroup_parse(const char *buf, size_t len, struct procfs_cgroup *ret, struct nt_err *err);

#endif
