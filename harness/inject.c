/* SPDX-License-Identifier: MIT */
/* inject.c — see inject.h. */
#include "inject.h"

#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "nt_clock.h"

enum kind { K_THP, K_TLB, K_NOISY, K_REMOTE, K_CHURN, K_SYNC, K_SLOW };

static const char *const kinds[] = {
	"thp-compaction", "tlb-shootdown", "noisy-neighbor", "remote-numa", "alloc-churn", "host-sync", "slow",
};

struct inject {
	enum kind kind;
	double pct;
	pthread_t thread;
	bool running;
	volatile bool stop;
};

static void spin_ms(double ms)
{
	double end = nt_mono_ms() + ms;
	volatile unsigned long x = 0;

	while (nt_mono_ms() < end)
		x++;
}

struct inject *inject_create(const char *spec, struct nt_err *err)
{
	struct inject *in;

	if (!spec)
		return NULL;
	in = calloc(1, sizeof(*in));
	if (!in) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (!strncmp(spec, "slow:", 5)) {
		char *end;

		in->kind = K_SLOW;
		in->pct = strtod(spec + 5, &end);
		if (*end || end == spec + 5 || !(in->pct > 0 && in->pct <= 1000)) {
			err_set(err, -EINVAL, "--inject '%s': slow:PCT needs a percentage from 0 to 1000", spec);
			free(in);
			return NULL;
		}
		return in;
	}
	for (int k = 0; k < K_SLOW; k++)
		if (!strcmp(spec, kinds[k])) {
			in->kind = (enum kind)k;
			return in;
		}
	err_set(err, -EINVAL, "--inject '%s': expected thp-compaction, tlb-shootdown, noisy-neighbor, remote-numa, alloc-churn, host-sync or slow:PCT",
		 spec);
	free(in);
	return NULL;
}

static void *side_thread(void *arg)
{
	struct inject *in = arg;
	const size_t big = 64u << 20, page = (size_t)sysconf(_SC_PAGESIZE);

	while (!in->stop) {
		if (in->kind == K_NOISY) {
			spin_ms(50);               /* always runnable on the rank's CPUs */
		} else if (in->kind == K_TLB) {
			/* map, touch from this thread, unmap: every munmap of pages
			 * the process's other threads may cache flushes their TLBs */
			for (int i = 0; i < 256 && !in->stop; i++) {
				char *p = mmap(NULL, 16 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

				if (p == MAP_FAILED)
					break;
				for (size_t o = 0; o < 16 * page; o += page)
					p[o] = 1;
				madvise(p, 16 * page, MADV_DONTNEED);
				munmap(p, 16 * page);
			}
		} else if (in->kind == K_THP) {
			char *p = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			int fd;

			if (p != MAP_FAILED) {
				madvise(p, big, MADV_HUGEPAGE);
				for (size_t o = 0; o < big; o += page)
					p[o] = 1;
				munmap(p, big);
			}
			fd = open("/proc/sys/vm/compact_memory", O_WRONLY | O_CLOEXEC);
			if (fd >= 0) {                /* root: compaction on demand */
				if (write(fd, "1", 1) < 0) {
					/* not permitted: the THP faults alone remain */
				}
				close(fd);
			}
			usleep(20000);
		}
	}
	return NULL;
}

int inject_start(struct inject *in, void *weights, void *grads, size_t bytes, struct nt_err *err)
{
	err_set(err, 0, "%s", "");
	if (!in)
		return 0;
	if (in->kind == K_REMOTE) {
		unsigned long mask = 0;
		int here = -1, nodes = 0;

		/* the far node: any node but the one the weights are on now */
		get_mempolicy(&here, NULL, 0, weights, MPOL_F_NODE | MPOL_F_ADDR);
		for (int n = 0; n < 64; n++) {
			char path[64];

			snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", n);
			if (access(path, F_OK) == 0) {
				nodes++;
				if (n != here && !mask)
					mask = 1ul << n;
			}
		}
		if (nodes < 2 || !mask) {
			return err_set(err, 0, "remote-numa skipped: this host has %d NUMA node%s", nodes,
				       nodes == 1 ? "" : "s");
		}
		if (mbind(weights, bytes, MPOL_BIND, &mask, 64, MPOL_MF_MOVE) ||
		    mbind(grads, bytes, MPOL_BIND, &mask, 64, MPOL_MF_MOVE)) {
			return err_set(err, -errno, "remote-numa: mbind failed: %s", strerror(errno));
		}
		return 0;
	}
	if (in->kind == K_NOISY || in->kind == K_TLB || in->kind == K_THP) {
		int e = pthread_create(&in->thread, NULL, side_thread, in);

		if (e)
			return err_set(err, -e, "cannot start");
		in->running = true;
	}
	return 0;
}

void inject_after_compute(struct inject *in, int step, double compute_ms)
{
	(void)step;
	if (in && in->kind == K_SLOW)
		spin_ms(compute_ms * in->pct / 100.0);
}

void inject_step_end(struct inject *in, int step)
{
	if (!in)
		return;
	if (in->kind == K_SYNC && step % 10 == 9)
		usleep(50000);   /* 50 ms: a sync plus a recompile, well above 3 x a step */
	if (in->kind == K_CHURN) {
		/* what a large malloc/free per step does under glibc's default
		 * mmap threshold: fresh pages, faulted and cleared, then unmapped */
		const size_t big = 64u << 20;
		char *p = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED) {
			for (size_t o = 0; o < big; o += 4096)
				p[o] = 1;
			munmap(p, big);
		}
	}
}

void inject_stop(struct inject *in)
{
	if (!in)
		return;
	in->stop = true;
	if (in->running)
		pthread_join(in->thread, NULL);
	free(in);
}
