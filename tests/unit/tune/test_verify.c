/* SPDX-License-Identifier: MIT */
/* test_verify.c — drift between a plan and a sysroot (gpu-host-untuned,
 * planted by plant-hazards.sh over the debian12 capture): none after an
 * apply, one per setting changed behind its back, "(unreadable)" for a
 * file gone, and no job cgroup check below a tree that is not the host. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tune/apply.h"
#include "tune/verify.h"
#include "test_util.h"

struct fx {
	char dir[64];       /* holds root/ and state/ */
	char root[96], state[96];
	struct fsroot *fs;
	struct topo *t;
	struct plan *pl;
};

#define GPU_TRAIN "[affinity]\nmode = gpu-local\nhousekeeping = auto\n[thp]\nenabled = madvise\n" \
		  "defrag = defer+madvise\n[sched]\nnuma_balancing = 0\n[irq]\ndevices = housekeeping\n" \
		  "[hugetlb]\npages_2m = 64\n[sysctl]\nvm.swappiness = 10\n[cgroup]\nname = job\n"

static int setup(void **state)
{
	static struct fx fx;
	char src[4096], path[4096];
	struct nt_err err = { 0 };
	struct policy *p;

	memset(&fx, 0, sizeof(fx));
	if (!test_tmpdir(fx.dir, sizeof(fx.dir)))
		return -1;
	snprintf(fx.root, sizeof(fx.root), "%s/root", fx.dir);
	snprintf(fx.state, sizeof(fx.state), "%s/state", fx.dir);
	if (test_copy_fixture("tests/fixtures/sysroot/gpu-host-untuned", fx.root) < 0)
		return -1;
	test_write(fx.root, "proc/irq/40/smp_affinity_list", "0-95\n");
	test_write(fx.root, "sys/bus/pci/devices/0000:1b:00.0/msi_irqs/40", "msix\n");
	test_write(fx.root, "proc/sys/vm/swappiness", "60\n");
	test_write(fx.dir, "p.conf", GPU_TRAIN);
	snprintf(path, sizeof(path), "%s/p.conf", fx.dir);
	fx.fs = fsroot_open(fx.root);
	fx.t = topo_load_xml(test_path(src, sizeof(src), "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"), &err);
	p = policy_load(path, 0, &err);
	if (fx.fs && fx.t && p)
		fx.pl = plan_build(p, fx.t, 8, fx.fs, &err);
	policy_free(p);
	*state = &fx;
	return fx.pl ? 0 : -1;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	plan_free(fx->pl);
	fsroot_free(fx->fs);
	topo_free(fx->t);
	test_rmrf(fx->dir);
	return 0;
}

static void apply_it(struct fx *fx)
{
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };

	assert_int_equal(apply_plan(fx->pl, fx->fs, fx->state, false, &rep, &err), 0);
	apply_changes_release(&rep);
}

static void test_untuned_tree_drifts(void **state)
{
	struct fx *fx = *state;
	struct verify_result rep = { 0 };
	struct nt_err err = { 0 };

	assert_int_equal(verify_plan(fx->pl, fx->fs, &rep, &err), 0);
	/* every setting of the plan is read back; the job cgroup is not
	 * looked for below a sysroot */
	assert_int_equal(rep.checked, fx->pl->n_host + fx->pl->n_irqs);
	assert_true(rep.n > 0);
	for (unsigned i = 0; i < rep.n; i++) {
		assert_int_equal(rep.drift[i].kind, VERIFY_SETTING);
		assert_string_not_equal(rep.drift[i].expected, rep.drift[i].actual);
	}
	verify_result_release(&rep);
	verify_result_release(&rep);    /* a released report is a no-op */
}

static void test_no_drift_after_apply_then_one(void **state)
{
	struct fx *fx = *state;
	struct verify_result rep = { 0 };
	struct nt_err err = { 0 };

	apply_it(fx);
	assert_int_equal(verify_plan(fx->pl, fx->fs, &rep, &err), 0);
	assert_int_equal(rep.n, 0);
	verify_result_release(&rep);

	/* someone changes THP defrag behind our back */
	test_write(fx->root, "sys/kernel/mm/transparent_hugepage/defrag", "always defer [madvise] never\n");
	assert_int_equal(verify_plan(fx->pl, fx->fs, &rep, &err), 0);
	assert_int_equal(rep.n, 1);
	assert_string_equal(rep.drift[0].path, "sys/kernel/mm/transparent_hugepage/defrag");
	assert_string_equal(rep.drift[0].expected, "defer+madvise");
	assert_string_equal(rep.drift[0].actual, "madvise");
	verify_result_release(&rep);
}

static void test_unreadable_is_drift(void **state)
{
	struct fx *fx = *state;
	struct verify_result rep = { 0 };
	struct nt_err err = { 0 };
	char path[256];

	apply_it(fx);
	snprintf(path, sizeof(path), "%s/proc/irq/40/smp_affinity_list", fx->root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(verify_plan(fx->pl, fx->fs, &rep, &err), 0);
	assert_int_equal(rep.n, 1);
	assert_string_equal(rep.drift[0].path, "proc/irq/40/smp_affinity_list");
	assert_string_equal(rep.drift[0].actual, "(unreadable)");
	verify_result_release(&rep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_untuned_tree_drifts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_drift_after_apply_then_one, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable_is_drift, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
