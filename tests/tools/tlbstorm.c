/* SPDX-License-Identifier: MIT */
/* tlbstorm [--after FILE] N — make N real remote TLB flushes, the way
 * nodetune's probe makes them (tlb_probe_storm(): one thread maps, touches
 * and unmaps a page while a second thread of this process spins on another
 * CPU, both at SCHED_FIFO 1 where allowed), so the integration tests can
 * check that the source nodetune chose counts what it claims to.
 *
 * The flushes are made in bursts of TLB_PROBE_FLUSHES, BURST_GAP_MS apart:
 * two SCHED_FIFO threads hold both CPUs of a 2-CPU host while a burst
 * lasts, and the observer must still get to sample between them.
 *
 * --after FILE: first wait until FILE is not empty (at most AFTER_MAX_S).
 * `nodetune observe --json -- tlbstorm --after OUT N >OUT` starts the
 * command before it chooses its source (a probe of its own) and takes its
 * first sample; its first record in OUT says both are done, so no flush of
 * ours falls before that sample, and none of the probe's is counted as ours.
 *
 * One line on stderr says what was made, whether SCHED_FIFO was allowed,
 * and the steal time of all CPUs meanwhile (a vCPU its hypervisor preempted
 * is flushed at its next entry, without an IPI: those flushes are real but
 * no source sees them).  Exits 0; 77 when this process
 * may use fewer than two CPUs (no remote flush to make); 1 when the storm
 * or the wait fails; 2 on a usage error. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsroot.h"
#include "observe/obs.h"
#include "base/parse.h"
#include "observe/tlb_test.h"

#define BURST_GAP_MS 10
#define AFTER_MAX_S 60
#define EXIT_SKIP 77

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Wait until path exists and is not empty: 0, or -ETIMEDOUT. */
static int wait_not_empty(const char *path)
{
	double end = now_s() + AFTER_MAX_S;
	struct stat st;

	while (stat(path, &st) < 0 || st.st_size == 0) {
		if (now_s() > end)
			return -ETIMEDOUT;
		sleep_ms(10);
	}
	return 0;
}

/* Whether this thread may run at SCHED_FIFO 1 (as the storm's threads try
 * to); it is left as it was. */
static bool fifo_allowed(void)
{
	struct sched_param fifo = { .sched_priority = 1 }, old;
	int policy;

	if (pthread_getschedparam(pthread_self(), &policy, &old) != 0 ||
	    pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) != 0)
		return false;
	pthread_setschedparam(pthread_self(), policy, &old);
	return true;
}

/* Steal time of all CPUs so far, in clock ticks (0 where unknown). */
static uint64_t steal_ticks(const struct fsroot *root)
{
	struct obs_stat *st = malloc(sizeof(*st));
	struct nt_err err = { 0 };
	uint64_t sum = 0;

	if (st && root && obs_read_stat(root, "proc/stat", st, &err) == 0)
		for (int i = 0; i < st->n_cpus; i++)
			sum += st->present[i] ? st->cpu[i].steal : 0;
	free(st);
	return sum;
}

int main(int argc, char **argv)
{
	const char *after = NULL;
	int n, made = 0, bursts = 0, r;
	struct fsroot *root;
	uint64_t steal0;
	double t0;

	if (argc == 4 && !strcmp(argv[1], "--after"))
		after = argv[2];
	if ((argc != 2 && !after) || parse_int(argv[argc - 1], 0, 1 << 24, &n) < 0) {
		fprintf(stderr, "usage: tlbstorm [--after FILE] N (0 <= N <= %d)\n", 1 << 24);
		return 2;
	}
	if (after && (r = wait_not_empty(after)) < 0) {
		fprintf(stderr, "tlbstorm: %s still empty after %d s\n", after, AFTER_MAX_S);
		return 1;
	}
	root = fsroot_open("/");
	steal0 = steal_ticks(root);
	t0 = now_s();
	while (made < n) {
		int burst = n - made < TLB_PROBE_FLUSHES ? n - made : TLB_PROBE_FLUSHES;

		if (bursts)
			sleep_ms(BURST_GAP_MS);
		r = tlb_probe_storm(burst);
		if (r == -EXDEV) {
			fprintf(stderr, "tlbstorm: this process may use one CPU: no remote flush to make\n");
			fsroot_free(root);
			return EXIT_SKIP;
		}
		if (r < 0) {
			fprintf(stderr, "tlbstorm: after %d flushes: %s\n", made, strerror(-r));
			fsroot_free(root);
			return 1;
		}
		made += burst;
		bursts++;
	}
	fprintf(stderr, "tlbstorm: %d remote flushes made in %d bursts, %.0f ms, SCHED_FIFO %s, steal %.0f ms\n",
		made, bursts, (now_s() - t0) * 1e3, fifo_allowed() ? "allowed" : "not allowed",
		(double)(steal_ticks(root) - steal0) * 1e3 / (double)sysconf(_SC_CLK_TCK));
	fsroot_free(root);
	return 0;
}
