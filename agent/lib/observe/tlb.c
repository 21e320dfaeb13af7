/* SPDX-License-Identifier: MIT */
/* tlb.c — TLB shootdowns from the best source this host has (tlb.h).
 *
 * Divisions: the probe (a burst of real remote flushes); the sources
 * (proc/interrupts, the tlb:tlb_flush tracepoint); choosing one.
 */
#include "observe/tlb.h"
#include "observe/tlb_test.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nt_clock.h"
#include "base/log.h"
#include "observe/obs.h"

const char *tlb_source_name(enum tlb_source s)
{
	static const char *const names[TLB_SRC_N] = { "none", "interrupts", "tracepoint" };

	return (unsigned)s < TLB_SRC_N ? names[s] : "none";
}

unsigned tlb_sources_from_env(void)
{
	const char *env = getenv("NODETUNE_TLB_SOURCES");
	unsigned allow = 0;
	char buf[128], *tok, *save = NULL;

	if (!env || !*env)
		return TLB_ALLOW_ALL;
	snprintf(buf, sizeof(buf), "%s", env);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		for (int s = TLB_SRC_INTERRUPTS; s < TLB_SRC_N; s++)
			if (!strcmp(tok, tlb_source_name(s)))
				allow |= TLB_ALLOW(s);
	return allow;
}

/* ---- the probe ---------------------------------------------------------- */

/* how long a burst may wait, in all, for its spinner to be on its CPU */
#define STORM_WAIT_NS 1000000000LL
/* a running spinner's heartbeat moves within this (a cache line's trip) */
#define STORM_POLL_NS 50000LL

struct storm {
	int n;
	int cpu_spin, cpu_unmap;
	atomic_int spinning;
	atomic_int stop;
	atomic_uint beat;             /* the spinner's heartbeat: moves while it runs */
	long long wait_until_ns;      /* the unmapper waits for it until then */
	int err;
};

static int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Raise the calling thread to SCHED_FIFO 1 for the few milliseconds of a
 * burst, where allowed (root): a loaded host's other processes then cannot
 * take the two CPUs from the probe, which would hide its flushes (a CPU
 * running another mm needs no IPI).  Not allowed: it stays as it is. */
static void raise_self(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	(void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

static void *spinner(void *arg)
{
	struct storm *s = arg;

	pin_self(s->cpu_spin);
	raise_self();
	atomic_store(&s->spinning, 1);
	/* running in the process's mm on this CPU: every unmap elsewhere
	 * must flush this CPU's TLB */
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed))
		atomic_fetch_add_explicit(&s->beat, 1, memory_order_relaxed);
	return NULL;
}

/* Wait until the spinner is seen on its CPU (its heartbeat moves), while
 * the burst's waiting time lasts.  Without SCHED_FIFO a busy host gives
 * that CPU to others for whole time slices, and an unmap meanwhile needs
 * no IPI (lazy TLB): the burst would make fewer remote flushes than it
 * says (not root, beside busy loops: 537 to 1552 of 4096 seen without
 * this wait, 4078 to 4102 with it). */
static void await_spinner(struct storm *s)
{
	unsigned beat = atomic_load_explicit(&s->beat, memory_order_relaxed);
	long long t0 = nt_mono_ns();

	for (long long now = t0; now < s->wait_until_ns; now = nt_mono_ns()) {
		if (atomic_load_explicit(&s->beat, memory_order_relaxed) != beat)
			return;
		if (now - t0 > STORM_POLL_NS)   /* off its CPU: this one is free meanwhile */
			sched_yield();
	}
}

static void *unmapper(void *arg)
{
	struct storm *s = arg;
	long page = sysconf(_SC_PAGESIZE);

	pin_self(s->cpu_unmap);
	raise_self();
	while (!atomic_load(&s->spinning))
		sched_yield();
	s->wait_until_ns = nt_mono_ns() + STORM_WAIT_NS;
	for (int i = 0; i < s->n; i++) {
		volatile char *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			s->err = -errno;
			break;
		}
		p[0] = 1;
		await_spinner(s);
		munmap((void *)p, (size_t)page);
	}
	atomic_store(&s->stop, 1);
	return NULL;
}

int tlb_probe_storm(int n)
{
	struct storm s = { .n = n, .cpu_spin = -1, .cpu_unmap = -1 };
	pthread_t spin, unmap;
	cpu_set_t set;
	int r;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return -errno;
	for (int cpu = 0; cpu < CPU_SETSIZE && s.cpu_unmap < 0; cpu++)
		if (CPU_ISSET(cpu, &set)) {
			if (s.cpu_spin < 0)
				s.cpu_spin = cpu;
			else
				s.cpu_unmap = cpu;
		}
	if (s.cpu_unmap < 0)
		return -EXDEV;
	r = -pthread_create(&spin, NULL, spinner, &s);
	if (r)
		return r;
	r = -pthread_create(&unmap, NULL, unmapper, &s);
	if (r) {
		atomic_store(&s.stop, 1);
		pthread_join(spin, NULL);
		return r;
	}
	pthread_join(unmap, NULL);
	pthread_join(spin, NULL);
	return s.err;
}

/* ---- sources ------------------------------------------------------------ */

static int interrupts_read(const struct tlb_counter *c, uint64_t *ret, bool *ret_has_line)
{
	struct obs_irq irq;
	struct nt_err err = { 0 };
	int r = obs_read_interrupts(c->root, &irq, &err);

	if (r < 0)
		return r;
	*ret = irq.tlb;
	if (ret_has_line)
		*ret_has_line = irq.has_tlb_line;
	return 0;
}

/* The tlb:tlb_flush event id from a mounted tracefs, else from a tracefs
 * mounted in a private mount namespace of a child (nothing changes in the
 * host's mounts).  The id, or -errno. */
static long tracepoint_id(const struct fsroot *root)
{
	static const char *const paths[] = {
		"sys/kernel/tracing/events/tlb/tlb_flush/id",
		"sys/kernel/debug/tracing/events/tlb/tlb_flush/id",
	};
	char buf[32], *end;
	int pfd[2], status;
	pid_t pid;
	ssize_t n;
	long id;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (fsroot_read(root, paths[i], buf, sizeof(buf)) > 0) {
			id = strtol(buf, &end, 10);
			if (end != buf && !*end && id > 0)
				return id;
		}
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		char idbuf[32];
		int fd;

		close(pfd[0]);
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("nodev", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			_exit(1);
		fd = open("/sys/kernel/tracing/events/tlb/tlb_flush/id", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(2);
		n = read(fd, idbuf, sizeof(idbuf) - 1);
		if (n <= 0 || write(pfd[1], idbuf, (size_t)n) != n)
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return -errno;
	}
	n = read(pfd[0], buf, sizeof(buf) - 1);
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (n <= 0)
		return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? -ENOENT : -EPERM;
	buf[n] = '\0';
	id = strtol(buf, &end, 10);
	return end != buf && id > 0 ? id : -EINVAL;
}

/* One tlb:tlb_flush event per possible CPU, counting remote shootdowns
 * received (reason 1) and IPIs sent for them (reason 4).  0 or -errno with
 * why filled. */
static int tracepoint_open(struct tlb_counter *c, char *why, size_t size)
{
	static const char filter[] = "reason == 1 || reason == 4";
	long id = tracepoint_id(c->root), ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct perf_event_attr a;

	if (id < 0) {
		snprintf(why, size, "tlb:tlb_flush: %s", id == -ENOENT ? "no such tracepoint in this kernel" :
			 "tracefs cannot be read or mounted");
		return (int)id;
	}
	if (ncpu < 1)
		ncpu = 1;
	c->fds = malloc((size_t)ncpu * sizeof(int));
	if (!c->fds)
		return -ENOMEM;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = (unsigned long long)id;
	for (long cpu = 0; cpu < ncpu; cpu++) {
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0 && errno == ENODEV)   /* an offline CPU */
			continue;
		if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) {
			int e = -errno;

			snprintf(why, size, "tlb:tlb_flush on CPU %ld: %s%s", cpu, fd < 0 ? "perf_event_open: " : "filter: ",
				 nt_strerror(-e));
			if (fd >= 0)
				close(fd);
			return e;
		}
		c->fds[c->n_fds++] = fd;
	}
	return c->n_fds ? 0 : -ENODEV;
}

static int tracepoint_read(const struct tlb_counter *c, uint64_t *ret)
{
	*ret = 0;
	for (int i = 0; i < c->n_fds; i++) {
		uint64_t v;

		if (read(c->fds[i], &v, sizeof(v)) != sizeof(v))
			return -EIO;
		*ret += v;
	}
	return 0;
}

int tlb_counter_read(const struct tlb_counter *c, uint64_t *ret)
{
	*ret = 0;
	switch (c->source) {
	case TLB_SRC_INTERRUPTS:
		return interrupts_read(c, ret, NULL);
	case TLB_SRC_TRACEPOINT:
		return tracepoint_read(c, ret);
	default:
		return -ENODATA;
	}
}

void tlb_counter_close(struct tlb_counter *c)
{
	for (int i = 0; i < c->n_fds; i++)
		close(c->fds[i]);
	free(c->fds);
	c->fds = NULL;
	c->n_fds = 0;
	c->source = TLB_SRC_NONE;
}

/* ---- choosing ----------------------------------------------------------- */

/* Did source (already open in c) see the probe's flushes?  Up to
 * TLB_PROBE_TRIES bursts: on a busy host the other CPU may be running
 * another process when a burst flushes (lazy TLB: no IPI is needed then),
 * so one short burst can be missed by a source that counts; a host whose
 * hypervisor flushes for it shows nothing in any.  Appends what it saw
 * (the best burst) to seen. */
static bool probe_moves(struct tlb_counter *c, enum tlb_source s, int *ret_probe, char *seen, size_t size)
{
	uint64_t v0 = 0, v1 = 0, best = 0;
	size_t len = strlen(seen);

	c->source = s;
	for (int i = 0; i < TLB_PROBE_TRIES && best < TLB_PROBE_MIN_SEEN; i++) {
		if (tlb_counter_read(c, &v0) < 0)
			return false;
		*ret_probe = tlb_probe_storm(TLB_PROBE_FLUSHES);
		if (*ret_probe < 0 || tlb_counter_read(c, &v1) < 0)
			return false;
		if (v1 - v0 > best)
			best = v1 - v0;
	}
	snprintf(seen + len, size - len, "%s%s +%llu", len ? ", " : "",
		 s == TLB_SRC_INTERRUPTS ? "proc/interrupts TLB" : "tlb:tlb_flush", (unsigned long long)best);
	return best >= TLB_PROBE_MIN_SEEN;
}

int tlb_counter_open(struct tlb_counter *c, const struct fsroot *root, unsigned allow)
{
	char seen[96] = "", fail[96] = "";
	bool has_line = false;
	uint64_t v;
	int probe = 0;

	memset(c, 0, sizeof(*c));
	c->root = root;
	if (interrupts_read(c, &v, &has_line) < 0)
		has_line = false;
	if (!fsroot_is_host(root)) {
		/* a captured tree: read as captured, nothing to probe */
		if (has_line && (allow & TLB_ALLOW(TLB_SRC_INTERRUPTS))) {
			c->source = TLB_SRC_INTERRUPTS;
			snprintf(c->why, sizeof(c->why), "proc/interrupts TLB line (captured tree, not probed)");
		} else {
			snprintf(c->why, sizeof(c->why), "no TLB line in the captured proc/interrupts");
		}
		return 0;
	}
	if (has_line && (allow & TLB_ALLOW(TLB_SRC_INTERRUPTS))) {
		if (probe_moves(c, TLB_SRC_INTERRUPTS, &probe, seen, sizeof(seen))) {
			snprintf(c->why, sizeof(c->why), "proc/interrupts TLB line (%d remote flushes made: %s)",
				 TLB_PROBE_FLUSHES, seen);
			return 0;
		}
		if (probe == -EXDEV) {
			/* one CPU here: nothing to flush remotely, nothing to
			 * learn; the line is the kernel's own count */
			snprintf(c->why, sizeof(c->why), "proc/interrupts TLB line (not probed: this process has one CPU)");
			return 0;
		}
	}
	if (allow & TLB_ALLOW(TLB_SRC_TRACEPOINT)) {
		c->source = TLB_SRC_NONE;
		if (tracepoint_open(c, fail, sizeof(fail)) == 0 &&
		    probe_moves(c, TLB_SRC_TRACEPOINT, &probe, seen, sizeof(seen))) {
			snprintf(c->why, sizeof(c->why), "tlb:tlb_flush tracepoint on %d CPUs (%d remote flushes made: %s)",
				 c->n_fds, TLB_PROBE_FLUSHES, seen);
			return 0;
		}
		tlb_counter_close(c);
	}
	c->source = TLB_SRC_NONE;
	if (!allow)
		snprintf(c->why, sizeof(c->why), "no source allowed (NODETUNE_TLB_SOURCES=%s)",
			 getenv("NODETUNE_TLB_SOURCES") ? getenv("NODETUNE_TLB_SOURCES") : "");
	else if (probe < 0 && probe != -EXDEV)
		snprintf(c->why, sizeof(c->why), "the probe could not run: %s", nt_strerror(-probe));
	else {
		char parts[200];

		snprintf(parts, sizeof(parts), "%s%s%s", seen[0] ? seen : has_line ? "" : "no TLB line in proc/interrupts",
			 fail[0] ? "; " : "", fail);
		snprintf(c->why, sizeof(c->why), "%d remote flushes made, seen by no source (%s); the hypervisor "
			 "or the CPU flushes remote TLBs without IPIs here", TLB_PROBE_FLUSHES, parts);
	}
	return 0;
}
