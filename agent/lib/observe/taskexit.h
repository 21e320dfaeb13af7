/* SPDX-License-Identifier: MIT */
/* taskexit.h — the CPU time of every task as it exits, from the kernel's
 * taskstats netlink interface (Documentation/accounting/taskstats.rst).
 *
 * A sampler of /proc sees a task only while it lives: one that is born and
 * gone between two samples (a shell loop's `true`, a compiler's cc1, a
 * monitoring agent's `nvidia-smi`) is not seen at all.  The kernel sends a
 * record of each exiting task to every socket registered for the CPU it
 * exits on (TASKSTATS_CMD_ATTR_REGISTER_CPUMASK).  The listener registers
 * one socket per online CPU, so each record says where the task exited;
 * a task that lived less than a sample interval ran, in the main, there.
 *
 * Owns: the sockets (one per online CPU, non-blocking, deregistered at
 * close) and the format of the kernel's messages, parsed strictly
 * (taskexit_parse, in taskexit_test.h, is fuzzed:
 * tests/fuzz/fuzz_taskexit.c).  The caller owns what a record means
 * (culprit.c puts a task no sample saw on the process that started it).
 *
 * Needs CAP_NET_ADMIN (registering a cpumask) and a kernel with
 * CONFIG_TASKSTATS; elsewhere (a container without it, an old kernel)
 * taskexit_open fails with one line saying why, and the caller reports the
 * short-lived tasks as not countable here.  Task ids are those of the
 * initial pid namespace (the host's /proc).
 *
 * Records are lost when a socket's buffer fills between two drains (the
 * kernel says ENOBUFS once for any number dropped: taskexit_lost counts
 * those events, a lower bound) or while the socket is not open.  Threads: none; one caller at a time.
 */
#ifndef NODETUNE_TASKEXIT_H
#define NODETUNE_TASKEXIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

#define TASKEXIT_MAX_CPUS 1024          /* sockets one listener opens at most */

/* One exited task (a thread; the main thread of a process when pid == tgid). */
struct taskexit_rec {
	int cpu;                     /* the CPU it exited on; -1 when not known */
	int pid;                     /* its thread id */
	int tgid;                    /* its process; 0 when the kernel did not say (before taskstats v12) */
	int ppid;                    /* its parent process (a tgid); 0 when none */
	char comm[32];               /* NUL-terminated, as the task named itself */
	int policy;                  /* SCHED_OTHER, SCHED_FIFO, ... */
	int nice;
	uint64_t run_ns;             /* its CPU time, all of its life: the scheduler's
				      * (cpu_run_virtual_total, as schedstat's first
				      * field), or utime + stime in ticks where the
				      * kernel has no delay accounting (run_exact false) */
	bool run_exact;
	uint64_t utime_us, stime_us;
};

struct taskexit; /* a listener (opaque) */

/* Open a listener: one socket per online CPU (/sys/devices/system/cpu/online),
 * each registered for its CPU.  NULL with err on failure (-EPERM without
 * CAP_NET_ADMIN, -ENOENT without taskstats, -E2BIG past TASKEXIT_MAX_CPUS). */
struct taskexit *taskexit_open(struct nt_err *err);

/* Give fn every record received since the last call, without waiting.
 * Returns the number given, or fn's negative number as is;
 * a datagram that does not parse is skipped and counted as lost. */
int taskexit_drain(struct taskexit *t, int (*fn)(const struct taskexit_rec *, void *), void *arg);

/* Losses since the listener opened: each time the kernel said it dropped
 * records (a socket's buffer full; how many it does not say, so this is a
 * lower bound), and each datagram that did not parse. */
uint64_t taskexit_lost(const struct taskexit *t);

/* Deregister and close; NULL is a no-op. */
void taskexit_close(struct taskexit *t);

#endif
