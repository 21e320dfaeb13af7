/* SPDX-License-Identifier: MIT */
/* writers.h — who else may have written a host knob that drifted.
 *
 * When the daemon finds a knob away from its policy value it names the
 * other writer where it can be found.  The candidates a GPU host commonly
 * has, each a row of one table (writers.c), all read below the same fsroot
 * as the knob, so tests replay captured trees:
 *   tuned       a running tuned (proc/PID/comm), its active profile
 *               (etc/tuned/active_profile); any sysfs/procfs knob
 *   irqbalance  a running irqbalance; proc/irq/ paths
 *   sysctl.d    the files systemd-sysctl and `sysctl --system` apply
 *               (etc/sysctl.conf, etc/sysctl.d, run/sysctl.d,
 *               usr/local/lib/sysctl.d, usr/lib/sysctl.d, lib/sysctl.d),
 *               the line that sets the key; proc/sys/ paths
 *   kubelet     the kubelet's CPU manager with a policy other than none
 *               (var/lib/kubelet/cpu_manager_state); cgroup and IRQ paths
 *   process     a process that holds the file open for writing
 *               (proc/PID/fd links and proc/PID/fdinfo flags); any path
 * What is found is a lead, not a proof: a writer that opened, wrote and
 * closed the file between two verifies leaves no open descriptor.
 */
#ifndef NODETUNE_WRITERS_H
#define NODETUNE_WRITERS_H

#include "base/fsroot.h"

#define WRITERS_MAX 8

struct writer {
	const char *kind;       /* "tuned", "irqbalance", "sysctl.d", "kubelet", "process" */
	char detail[256];       /* one line, e.g. "etc/sysctl.d/99-x.conf:3 sets vm.swappiness = 10" */
	int pid;                /* the process, or 0 */
};

/* Find the writers of path (relative to root, as plan_host.path: no
 * leading '/'), at most max of them, into ret[].  Returns how many (0:
 * none found), or -EINVAL for an empty or absolute path.  Files that
 * cannot be read (a process that exits while it is looked at, a missing
 * directory) are passed over.  The /proc scan reads every process's fd
 * directory: call it when a drift was found, not every interval. */
int writers_find(const struct fsroot *root, const char *path, struct writer *ret, unsigned max);

/* "tuned (profile throughput-performance, pid 812); sysctl.d
 * (etc/sysctl.d/99-x.conf:3 sets vm.swappiness = 10)" for a log line, into
 * buf; "" when n is 0.  Returns buf. */
const char *writers_describe(const struct writer *w, int n, char *buf, size_t size);

#endif
