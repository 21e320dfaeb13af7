/* SPDX-License-Identifier: MIT */
/* test_doctor.c — every named hazard on a crafted tree that has them all,
 * and none on a tuned one. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "observe/doctor.h"
#include "observe/doctor_test.h"
#include "test_util.h"

struct run {
	struct fsroot *root;
	struct topo *t;
	struct kstate ks;
	struct policy *p;
	struct plan *pl;
	struct doctor_findings rep;
};

static void doctor_on(struct run *x, const char *tree, bool with_policy)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct doctor_config cfg = { 2.0, 0.1, NULL };

	memset(x, 0, sizeof(*x));
	x->root = fsroot_open(tree[0] == '/' ? tree : test_path(path, sizeof(path), tree));
	assert_non_null(x->root);
	x->t = topo_load_xml(test_path(path, sizeof(path), "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"), &err);
	assert_non_null(x->t);
	assert_int_equal(kstate_read(x->root, &x->ks, &err), 0);
	if (with_policy) {
		x->p = policy_load(test_path(path, sizeof(path), "policies/gpu-train.conf"), 0, &err);
		x->pl = plan_build(x->p, x->t, 8, x->root, &err);
		assert_non_null(x->pl);
		cfg.plan = x->pl;
	}
	if (doctor_run(x->root, x->t, &x->ks, &cfg, &x->rep, &err))
		fail_msg("%s", err.msg);
}

static void release(struct run *x)
{
	doctor_findings_release(&x->rep);
	plan_free(x->pl);
	policy_free(x->p);
	kstate_release(&x->ks);
	topo_free(x->t);
	fsroot_free(x->root);
}

static const struct doctor_hazard *find(const struct doctor_findings *r, const char *code)
{
	for (unsigned i = 0; i < r->n; i++)
		if (!strcmp(r->hazards[i].code, code))
			return &r->hazards[i];
	return NULL;
}

static void test_every_hazard(void **state)
{
	static const char *const codes[] = {
		"zombie-memcg", "sys-saturated-core", "thp-defrag-always", "numa-balancing-on",
		"irq-on-rank-cpus", "governor", "swap-on", "cgroup-throttling",
	};
	struct run x;

	(void)state;
	doctor_on(&x, "tests/fixtures/sysroot/gpu-host-hazards", true);
	assert_int_equal(x.rep.checks, 9);   /* slurm-revert-pending ran: no Slurm state dir, none pending */
	assert_int_equal(x.rep.n, 8);
	for (size_t i = 0; i < 8; i++) {
		const struct doctor_hazard *h = find(&x.rep, codes[i]);

		if (!h)
			fail_msg("hazard %s not found", codes[i]);
		assert_true(h->summary[0] && h->evidence[0] && h->fix[0]);
	}
	assert_non_null(strstr(find(&x.rep, "zombie-memcg")->evidence, "70213 memory cgroups, only 4 live"));
	assert_non_null(strstr(find(&x.rep, "sys-saturated-core")->summary, "CPU 3 spent >= 95% in the kernel for 1.5 s"));
	assert_non_null(strstr(find(&x.rep, "irq-on-rank-cpus")->evidence, "IRQ 60 (0000:1b:00.0) on CPUs 1-5"));
	assert_null(strstr(find(&x.rep, "irq-on-rank-cpus")->evidence, "IRQ 61"));  /* on housekeeping CPU 0 */
	assert_non_null(strstr(find(&x.rep, "cgroup-throttling")->evidence, "kubepods/cpu.stat: nr_throttled 41234"));
	assert_non_null(strstr(find(&x.rep, "numa-balancing-on")->evidence, "numa_hint_faults 7712310"));
	release(&x);
}

static void test_tuned_host_is_clean(void **state)
{
	struct run x;

	(void)state;
	doctor_on(&x, "tests/fixtures/sysroot/gpu-host-tuned", true);
	assert_int_equal(x.rep.n, 0);
	assert_true(x.rep.checks >= 5);
	assert_true(x.rep.n_notes >= 1);   /* what it could not check, said */
	release(&x);
}

static void test_without_policy_irqs_are_skipped(void **state)
{
	struct run x;

	(void)state;
	doctor_on(&x, "tests/fixtures/sysroot/gpu-host-hazards", false);
	assert_null(find(&x.rep, "irq-on-rank-cpus"));
	assert_int_equal(x.rep.n, 7);
	assert_non_null(strstr(x.rep.notes[0], "irq-on-rank-cpus: needs --policy"));
	release(&x);
}

/* The flagship policy fixes every hazard a policy key can fix (F9 of the
 * first-hour review): each row's key set to the row's value, and the rows
 * without a key are the ones no policy can fix, named. */
static void test_gpu_train_sets_what_doctor_checks(void **state)
{
	static const char *const unfixable[] = { "zombie-memcg", "sys-saturated-core", "cgroup-throttling",
						 "slurm-revert-pending" };
	struct nt_err err = { 0 };
	char path[4096];
	struct policy *p = policy_load(test_path(path, sizeof(path), "policies/gpu-train.conf"), 0, &err);
	unsigned with_knob = 0, without = 0;
	const char *code, *value;
	enum knob_id k;

	(void)state;
	if (!p)
		fail_msg("%s", err.msg);
	for (unsigned i = 0; (code = doctor_hazard_code(i, &k, &value)); i++) {
		if (k == KNOB_COUNT) {
			assert_string_equal(code, unfixable[without++]);
			continue;
		}
		with_knob++;
		if (!policy_value(p, k) || strcmp(policy_value(p, k), value))
			fail_msg("gpu-train.conf leaves doctor's %s: [%s] %s is %s, doctor wants %s", code,
				 knob_table[k].section, knob_table[k].key, policy_value(p, k) ? policy_value(p, k) : "unset",
				 value);
	}
	assert_int_equal(with_knob + without, doctor_hazard_count());
	assert_int_equal(without, 4);
	assert_int_equal(with_knob, 5);
	policy_free(p);
}

/* Swap with vm.swappiness 0 is what the policy can do: no hazard. */
static void test_swap_with_swappiness_zero(void **state)
{
	char dir[] = "/tmp/nt-doctor-swapXXXXXX", src[4096], path[4400];
	struct run x;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "cp -a %s/. %s && mkdir -p %s/proc/sys/vm && echo 0 >%s/proc/sys/vm/swappiness",
		 test_path(src, sizeof(src), "tests/fixtures/sysroot/gpu-host-hazards"), dir, dir, dir);
	assert_int_equal(system(path), 0);
	doctor_on(&x, dir, false);
	assert_null(find(&x.rep, "swap-on"));
	assert_int_equal(x.rep.n, 6);
	release(&x);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

/* A Slurm job whose epilog could not revert it (tune/jobstate.h) is named
 * with the epilog's reason; a running job's journal is not a hazard. */
static void test_slurm_revert_pending(void **state)
{
	char dir[64], path[256];
	const struct doctor_hazard *h;
	struct run x;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(test_copy_fixture("tests/fixtures/sysroot/gpu-host-tuned", dir), 0);
	test_write(dir, "run/nodetune/slurm/9/journal", "");
	doctor_on(&x, dir, false);
	assert_null(find(&x.rep, "slurm-revert-pending"));
	release(&x);
	test_write(dir, "run/nodetune/slurm/7/journal", "");
	test_write(dir, "run/nodetune/slurm/7/revert-pending", "the epilog: nodetune revert: timed out after 60 s\n");
	doctor_on(&x, dir, false);
	h = find(&x.rep, "slurm-revert-pending");
	assert_non_null(h);
	assert_non_null(strstr(h->summary, "1 Slurm job ended with its settings still on the node"));
	assert_non_null(strstr(h->evidence, "job 7 (the epilog: nodetune revert: timed out after 60 s)"));
	assert_null(strstr(h->evidence, "job 9"));
	snprintf(path, sizeof(path), "nodetune revert --state-dir %s/run/nodetune/slurm/7", dir);
	assert_non_null(strstr(h->fix, path));
	release(&x);
	test_rmrf(dir);
}

/* The counters a host may not produce are reported as such, never as 0:
 * gpu-host-hazards (plant-hazards.sh's planted tree over the debian12
 * capture: its hazard values are synthetic by design) has no TLB line and
 * no proc/pressure; perf events are the live host's and are not asked of a
 * sysroot.  debian12-kvm-2cpu is the real capture. */
static void test_counters_not_countable(void **state)
{
	struct run x;
	json_t *doc, *c;

	(void)state;
	doctor_on(&x, "tests/fixtures/sysroot/gpu-host-hazards", false);
	assert_false(x.rep.counters[DC_TLB].countable);
	assert_non_null(strstr(x.rep.counters[DC_TLB].detail, "no TLB line"));
	assert_false(x.rep.counters[DC_PSI].countable);
	assert_non_null(strstr(x.rep.counters[DC_PSI].detail, "no proc/pressure"));
	assert_string_equal(x.rep.counters[DC_PERF].detail, "");
	doc = doctor_json(&x.rep);
	c = json_object_get(doc, "counters");
	assert_true(json_is_false(json_object_get(json_object_get(c, "tlb_shootdowns"), "countable")));
	assert_null(json_object_get(c, "perf_events"));
	json_decref(doc);
	release(&x);
	doctor_on(&x, "tests/fixtures/sysroot/debian12-kvm-2cpu", false);
	assert_true(x.rep.counters[DC_TLB].countable);          /* debian12's captured line, as captured */
	assert_true(x.rep.counters[DC_PSI].countable);
	release(&x);
}

/* The text: skipped checks one line each ("  CODE: why"), the counters only
 * when asked, said of the tree read, never of "this host". */
static void test_print(void **state)
{
	char buf[16384];
	struct run x;
	FILE *f;

	(void)state;
	doctor_on(&x, "tests/fixtures/sysroot/gpu-host-hazards", false);
	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(doctor_print(f, &x.rep, "TREE", false), 0);
	fclose(f);
	assert_non_null(strstr(buf, "\nskipped:\n  irq-on-rank-cpus: needs --policy FILE|NAME to know the ranks' CPUs\n"));
	assert_null(strstr(buf, "counters:"));
	assert_null(strstr(buf, "?"));
	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(doctor_print(f, &x.rep, "TREE", true), 0);
	fclose(f);
	assert_non_null(strstr(buf, "\ncounters:\n  TLB shootdowns: not countable in TREE ("));
	assert_null(strstr(buf, "this host"));
	release(&x);
}

/* Every counter id has its row. */
static void test_counter_rows(void **state)
{
	(void)state;
	assert_string_equal(doctor_counter_name(DC_TLB), "TLB shootdowns");
	assert_string_equal(doctor_counter_name(DC_PSI), "PSI");
	assert_string_equal(doctor_counter_name(DC_PERF), "perf events");
	for (enum doctor_counter c = 0; c < DC_N; c++)
		assert_string_not_equal(doctor_counter_name(c), "?");
	assert_string_equal(doctor_counter_name(DC_N), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_hazard),
		cmocka_unit_test(test_tuned_host_is_clean),
		cmocka_unit_test(test_without_policy_irqs_are_skipped),
		cmocka_unit_test(test_slurm_revert_pending),
		cmocka_unit_test(test_gpu_train_sets_what_doctor_checks),
		cmocka_unit_test(test_swap_with_swappiness_zero),
		cmocka_unit_test(test_counters_not_countable),
		cmocka_unit_test(test_counter_rows),
		cmocka_unit_test(test_print),
	};

	return cmocka_run_group_tests_name("doctor", tests, NULL, NULL);
}
