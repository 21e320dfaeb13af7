/* SPDX-License-Identifier: MIT */
/* test_bind.c — binding a process as a rank on this live host; the child
 * checks what the kernel reports (affinity, memory policy, scheduling). */
#include <errno.h>
#include <numaif.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "tune/bind.h"
#include "base/cpulist.h"
#include "test_util.h"

static struct plan *host_plan(const char *text, unsigned nranks, struct topo **ret_t)
{
	char dir[64], path[128];
	struct nt_err err = { 0 };
	struct policy *p;
	struct plan *pl;

	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	test_write(dir, "p.conf", text);
	snprintf(path, sizeof(path), "%s/p.conf", dir);
	p = policy_load(path, 0, &err);
	assert_non_null(p);
	*ret_t = topo_load_host(NULL, &err);
	assert_non_null(*ret_t);
	pl = plan_build(p, *ret_t, nranks, NULL, &err);
	if (!pl)
		fail_msg("%s", err.msg);
	policy_free(p);
	test_rmrf(dir);
	return pl;
}

/* In a child: bind as rank, then check; exit 0 when everything matches. */
static int child_check(const struct plan *pl, unsigned rank)
{
	const struct plan_rank *rk = &pl->ranks[rank];
	struct nt_err err = { 0 };
	unsigned long mask[16] = { 0 };
	cpu_set_t set;
	char warn[256];
	int mode = -1;

	if (bind_rank(pl, rank, warn, sizeof(warn), &err) < 0) {
		fprintf(stderr, "bind: %s\n", err.msg);
		return 10;
	}
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 11;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) != hwloc_bitmap_isset(rk->cpus, (unsigned)cpu))
			return 12;
	if (get_mempolicy(&mode, mask, sizeof(mask) * 8, NULL, 0) < 0 || mode != MPOL_BIND)
		return 13;
	for (unsigned n = 0; n < 64; n++)
		if (!!(mask[0] & (1ul << n)) != hwloc_bitmap_isset(rk->mems, n))
			return 14;
	if (sched_getscheduler(0) != SCHED_BATCH)
		return 15;
	if (getpriority(PRIO_PROCESS, 0) != 5)
		return 16;
	return 0;
}

static void test_bind_each_rank(void **state)
{
	struct topo *t;
	struct plan *pl;
	unsigned n;

	(void)state;
	t = NULL;
	pl = host_plan("[affinity]\nmode = numa\n[memory]\npolicy = bind\n[sched]\npolicy = batch\nnice = 5\n", 1, &t);
	n = t->pus >= 2 ? 2 : 1;
	plan_free(pl);
	topo_free(t);
	pl = host_plan("[affinity]\nmode = numa\n[memory]\npolicy = bind\n[sched]\npolicy = batch\nnice = 5\n", n, &t);
	for (unsigned r = 0; r < n; r++) {
		int status;
		pid_t pid = fork();

		if (pid == 0)
			_exit(child_check(pl, r));
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail_msg("rank %u: child check failed with %d", r, WEXITSTATUS(status));
	}
	plan_free(pl);
	topo_free(t);
}

static void test_export_gpu_and_bad_rank(void **state)
{
	struct nt_err err = { 0 };
	struct topo *t;
	struct plan *pl = host_plan("[affinity]\nexport_gpu = yes\n", 1, &t);
	char warn[64];

	(void)state;
	assert_int_equal(bind_rank(pl, 1, warn, sizeof(warn), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "local rank 1, but the plan has 1 ranks"));
	if (t->n_gpus == 0) {
		unsetenv("CUDA_VISIBLE_DEVICES");
		assert_int_equal(bind_rank(pl, 0, warn, sizeof(warn), &err), 0);
		assert_null(getenv("CUDA_VISIBLE_DEVICES")); /* no GPU, nothing exported */
	} else {
		assert_int_equal(bind_rank(pl, 0, warn, sizeof(warn), &err), 0);
		assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "0");
		assert_string_equal(getenv("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	}
	plan_free(pl);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bind_each_rank),
		cmocka_unit_test(test_export_gpu_and_bad_rank),
	};

	return cmocka_run_group_tests_name("bind", tests, NULL, NULL);
}
