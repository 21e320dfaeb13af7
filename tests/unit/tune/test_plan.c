/* SPDX-License-Identifier: MIT */
/* test_plan.c — the planner: rank placement, housekeeping, fallbacks, host
 * settings and IRQs, on the project's fixtures, ../shared/topologies and
 * synthetic machines. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/cpulist.h"
#include "tune/plan.h"
#include "test_util.h"

static struct policy *pol(const char *rel)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct policy *p = policy_load(test_path(path, sizeof(path), rel), 0, &err);

	if (!p)
		fail_msg("%s", err.msg);
	return p;
}

static struct policy *pol_text(const char *dir, const char *text)
{
	char path[256];
	struct nt_err err = { 0 };
	struct policy *p;

	test_write(dir, "p.conf", text);
	snprintf(path, sizeof(path), "%s/p.conf", dir);
	p = policy_load(path, 0, &err);
	if (!p)
		fail_msg("%s", err.msg);
	return p;
}

static struct topo *xml(const char *path)
{
	struct nt_err err = { 0 };
	struct topo *t = topo_load_xml(path, &err);

	if (!t)
		fail_msg("%s", err.msg);
	return t;
}

static struct topo *synth(const char *desc)
{
	struct nt_err err = { 0 };
	struct topo *t = topo_load_synthetic(desc, &err);

	if (!t)
		fail_msg("%s", err.msg);
	return t;
}

static struct plan *build(const struct policy *p, const struct topo *t, unsigned n)
{
	struct nt_err err = { 0 };
	struct plan *pl = plan_build(p, t, n, NULL, &err);

	if (!pl)
		fail_msg("%s", err.msg);
	return pl;
}

static void assert_list(hwloc_const_bitmap_t set, const char *want)
{
	char buf[512];

	assert_non_null(set);
	assert_int_equal(cpulist_format(set, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
}

/* The invariants of a gpu-local plan: disjoint, non-empty, inside the
 * GPU's local CPUs, never on housekeeping CPUs, memory on the GPU's node. */
static void check_gpu_local(const struct plan *pl, const struct topo *t)
{
	hwloc_bitmap_t seen = hwloc_bitmap_alloc();

	for (unsigned i = 0; i < pl->n_ranks; i++) {
		const struct plan_rank *rk = &pl->ranks[i];
		const struct topo_dev *g = &t->gpus[rk->gpu];

		assert_int_equal(rk->gpu, (int)(i % t->n_gpus));
		assert_non_null(rk->cpus);
		assert_false(hwloc_bitmap_iszero(rk->cpus));
		assert_true(hwloc_bitmap_isincluded(rk->cpus, g->cpus));
		assert_false(hwloc_bitmap_intersects(rk->cpus, pl->housekeeping));
		assert_false(hwloc_bitmap_intersects(rk->cpus, seen));
		hwloc_bitmap_or(seen, seen, rk->cpus);
		if (g->numa_node >= 0) {
			assert_int_equal(hwloc_bitmap_weight(rk->mems), 1);
			assert_int_equal(hwloc_bitmap_first(rk->mems), g->numa_node);
		}
	}
	hwloc_bitmap_free(seen);
}

static void test_hgx_exact(void **state)
{
	char path[4096];
	struct policy *p = pol("policies/gpu-train.conf");
	struct topo *t = xml(test_path(path, sizeof(path), "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"));
	struct plan *pl = build(p, t, 8);

	(void)state;
	check_gpu_local(pl, t);
	/* one core per GPU node (with its sibling) is housekeeping */
	assert_list(pl->housekeeping, "0,24,48,72");
	/* 23 cores for 4 ranks: 5 whole cores each, siblings included */
	assert_list(pl->ranks[0].cpus, "1-5,49-53");
	assert_list(pl->ranks[3].cpus, "16-20,64-68");
	assert_list(pl->ranks[4].cpus, "25-29,73-77");
	assert_string_equal(pl->ranks[0].nic, "ibp26s0");
	assert_string_equal(pl->ranks[7].nic, "ibp207s0");
	assert_string_equal(pl->memory_policy, "bind");
	assert_string_equal(pl->cgroup, "nodetune-job");
	assert_int_equal(pl->cpu_weight, 1000);
	assert_list(pl->cgroup_cpus, "1-23,25-47,49-71,73-95");
	/* THP enabled, defrag, numa_balancing, the governor of each of the
	 * 96 CPUs, vm.swappiness */
	assert_int_equal(pl->n_host, 100);
	assert_string_equal(pl->host[0].path, "sys/kernel/mm/transparent_hugepage/enabled");
	assert_string_equal(pl->host[0].to, "madvise");
	assert_string_equal(pl->host[0].from, ""); /* no fsroot: unknown */
	plan_free(pl);

	/* 16 ranks on 8 GPUs: the 8 ranks of a socket share its CPUs (all its
	 * GPUs hang below the package): 23 cores / 8 = 2 whole cores each, in
	 * rank order 0,1,2,3,8,9,10,11 */
	pl = build(p, t, 16);
	check_gpu_local(pl, t);
	assert_list(pl->ranks[0].cpus, "1-2,49-50");
	assert_list(pl->ranks[3].cpus, "7-8,55-56");
	assert_list(pl->ranks[8].cpus, "9-10,57-58");
	plan_free(pl);
	topo_free(t);
	policy_free(p);
}

static void test_epyc_narrow_locality(void **state)
{
	char path[4096];
	struct policy *p = pol("policies/gpu-train.conf");
	struct topo *t = xml(test_path(path, sizeof(path), "tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml"));
	struct plan *pl = build(p, t, 4);

	(void)state;
	check_gpu_local(pl, t);
	assert_list(pl->housekeeping, "0,16");
	assert_list(pl->ranks[0].cpus, "1-7");   /* its L3 minus housekeeping */
	assert_list(pl->ranks[1].cpus, "8-15");
	assert_list(pl->ranks[2].mems, "8");
	plan_free(pl);
	topo_free(t);
	policy_free(p);
}

static void test_shared_topologies(void **state)
{
	static const char *const files[] = {
		"g4dnmetal.xml", "nvidiaDGX2.xml", "power8gpudistances.xml", "32em64t-2n8c2t-pci-normalio.xml",
	};
	struct policy *p = pol("policies/gpu-train.conf");
	unsigned tested = 0, missing = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096];
		struct nt_err err = { 0 };
		struct topo *t;
		struct plan *pl;

		snprintf(path, sizeof(path), "%s/../shared/topologies/%s", test_srcdir(), files[i]);
		if (access(path, R_OK) < 0) {
			missing++;
			continue;
		}
		t = xml(path);
		/* nranks 0: the default, one rank per GPU */
		pl = plan_build(p, t, 0, NULL, &err);
		if (!strcmp(files[i], "nvidiaDGX2.xml")) {
			/* 2 PUs per socket, one is housekeeping: 8 GPUs cannot get a CPU each */
			assert_null(pl);
			assert_non_null(strstr(err.msg, "8 ranks but only 1 CPUs"));
		} else {
			if (!pl)
				fail_msg("%s: %s", files[i], err.msg);
			assert_int_equal(pl->n_ranks, t->n_gpus);
			check_gpu_local(pl, t);
			plan_free(pl);
		}
		topo_free(t);
		tested++;
	}
	policy_free(p);
	if (missing) {
		/* each file it has was checked above; one missing is a skip
		 * (under CI=true a failure), never a silent pass */
		test_need("../shared", "%u of the ../shared/topologies files are absent (%u checked)", missing, tested);
	}
}

static void test_cpu_only_fallback(void **state)
{
	struct policy *p = pol("policies/gpu-train.conf");
	struct topo *t = synth("pack:1 core:2 pu:1");  /* like this 2-CPU machine */
	struct plan *pl = build(p, t, 2);

	(void)state;
	assert_list(pl->ranks[0].cpus, "0");
	assert_list(pl->ranks[1].cpus, "1");
	assert_int_equal(pl->ranks[0].gpu, -1);
	assert_true(hwloc_bitmap_iszero(pl->housekeeping));
	assert_non_null(strstr(pl->notes[0], "no GPUs"));
	{
		/* no GPU is null in JSON, as the README says (not -1) */
		json_t *j = plan_json(pl);

		assert_true(json_is_null(json_object_get(json_array_get(json_object_get(j, "ranks"), 0), "gpu")));
		json_decref(j);
	}
	plan_free(pl);
	topo_free(t);

	/* spread over NUMA nodes first, then cores */
	t = synth("pack:2 numa:1 core:2 pu:2");
	pl = build(p, t, 4);
	assert_list(pl->ranks[0].cpus, "0-1");
	assert_list(pl->ranks[1].cpus, "4-5");
	assert_list(pl->ranks[2].cpus, "2-3");
	assert_list(pl->ranks[3].cpus, "6-7");
	assert_list(pl->ranks[1].mems, "1");
	plan_free(pl);
	topo_free(t);
	policy_free(p);
}

static void test_whole_cores_then_threads(void **state)
{
	struct policy *p = pol("policies/gpu-train.conf");
	struct topo *t = synth("numa:1 core:4 pu:2");
	struct plan *pl = build(p, t, 2);

	(void)state;
	assert_list(pl->ranks[0].cpus, "0-3");  /* two whole cores each */
	assert_list(pl->ranks[1].cpus, "4-7");
	plan_free(pl);
	pl = build(p, t, 8);                    /* more ranks than cores: threads */
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(hwloc_bitmap_weight(pl->ranks[i].cpus), 1);
	plan_free(pl);
	topo_free(t);
	policy_free(p);
}

static void test_impossible_plans(void **state)
{
	char dir[64];
	struct nt_err err = { 0 };
	struct policy *p = pol("policies/gpu-train.conf"), *q;
	struct topo *t = synth("pack:1 core:2 pu:1");
	struct plan *pl;

	(void)state;
	assert_null(plan_build(p, t, 3, NULL, &err));
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "3 ranks but only 2 CPUs (0-1)"));
	assert_null(plan_build(p, t, PLAN_MAX_RANKS + 1, NULL, &err));
	assert_non_null(strstr(err.msg, "must be from 1 to"));
	/* nranks 0 on a machine without GPUs: the default, one rank */
	pl = plan_build(p, t, 0, NULL, &err);
	assert_non_null(pl);
	assert_int_equal(pl->n_ranks, 1);
	plan_free(pl);
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	q = pol_text(dir, "[affinity]\nmode = numa\nhousekeeping = 7\n");
	assert_null(plan_build(q, t, 1, NULL, &err));
	assert_non_null(strstr(err.msg, "housekeeping = 7: not CPUs of this machine (0-1)"));
	policy_free(q);
	q = pol_text(dir, "[affinity]\nmode = numa\nhousekeeping = 0-1\n");
	assert_null(plan_build(q, t, 1, NULL, &err));
	assert_non_null(strstr(err.msg, "no CPUs left for rank 0"));
	policy_free(q);
	test_rmrf(dir);
	topo_free(t);
	policy_free(p);
}

static struct plan *build_gpus(const struct policy *p, const struct topo *t, unsigned n, const unsigned *gpus,
			       unsigned n_gpus)
{
	struct nt_err err = { 0 };
	struct plan *pl = plan_build_gpus(p, t, n, gpus, n_gpus, NULL, &err);

	if (!pl)
		fail_msg("%s", err.msg);
	return pl;
}

/* A Slurm step's GPUs: rank r uses gpus[r mod n], and its CPUs, memory
 * node and NIC are those of that GPU, not of GPU r. */
static void test_given_gpus(void **state)
{
	static const unsigned far[] = { 5, 6 }, mixed[] = { 1, 5 };
	char path[4096];
	struct policy *p = pol("policies/gpu-train.conf");
	struct topo *t = xml(test_path(path, sizeof(path), "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"));
	struct plan *pl = build_gpus(p, t, 2, far, 2);
	hwloc_bitmap_t seen = hwloc_bitmap_alloc();

	(void)state;
	assert_int_equal(pl->ranks[0].gpu, 5);
	assert_int_equal(pl->ranks[1].gpu, 6);
	for (unsigned i = 0; i < 2; i++) {
		assert_true(hwloc_bitmap_isincluded(pl->ranks[i].cpus, t->gpus[far[i]].cpus));
		assert_list(pl->ranks[i].mems, "1");
	}
	assert_string_equal(pl->ranks[0].nic, "ibp173s0");
	assert_string_equal(pl->ranks[1].nic, "ibp190s0");
	assert_list(pl->housekeeping, "0,24,48,72"); /* the machine's, whatever the job holds */
	plan_free(pl);

	/* 4 ranks on GPUs 1 and 5: 0 and 2 on socket 0, 1 and 3 on socket 1 */
	pl = build_gpus(p, t, 4, mixed, 2);
	for (unsigned i = 0; i < 4; i++) {
		const struct plan_rank *rk = &pl->ranks[i];

		assert_int_equal(rk->gpu, (int)mixed[i % 2]);
		assert_false(hwloc_bitmap_iszero(rk->cpus));
		assert_true(hwloc_bitmap_isincluded(rk->cpus, t->gpus[mixed[i % 2]].cpus));
		assert_false(hwloc_bitmap_intersects(rk->cpus, pl->housekeeping));
		assert_false(hwloc_bitmap_intersects(rk->cpus, seen));
		hwloc_bitmap_or(seen, seen, rk->cpus);
		assert_list(rk->mems, i % 2 ? "1" : "0");
	}
	assert_non_null(strstr(pl->notes[0], "4 ranks on the job's 2 GPUs: ranks share GPUs"));
	plan_free(pl);
	hwloc_bitmap_free(seen);

	/* no GPUs given: all of the machine's, as plan_build */
	pl = build_gpus(p, t, 8, NULL, 0);
	check_gpu_local(pl, t);
	plan_free(pl);
	topo_free(t);
	policy_free(p);
}

static void test_given_gpus_refused(void **state)
{
	static const unsigned past[] = { 8 }, one_bad[] = { 0, 3, 99 };
	char path[4096];
	struct nt_err err = { 0 };
	struct policy *p = pol("policies/gpu-train.conf");
	struct topo *t = xml(test_path(path, sizeof(path), "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"));

	(void)state;
	assert_null(plan_build_gpus(p, t, 1, past, 1, NULL, &err));
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "GPU 8: "));
	assert_non_null(strstr(err.msg, "has 8 GPU(s)"));
	assert_null(plan_build_gpus(p, t, 3, one_bad, 3, NULL, &err));
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "GPU 99: "));
	topo_free(t);

	t = synth("pack:1 core:2 pu:1"); /* no GPUs: every index is refused */
	assert_null(plan_build_gpus(p, t, 1, one_bad, 1, NULL, &err));
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "GPU 0: "));
	assert_non_null(strstr(err.msg, "has 0 GPU(s)"));
	topo_free(t);
	policy_free(p);
}

static void test_baseline_binds_nothing(void **state)
{
	char path[4096];
	struct policy *p = pol("policies/baseline.conf");
	struct topo *t = xml(test_path(path, sizeof(path), "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"));
	struct plan *pl = build(p, t, 8);

	(void)state;
	for (unsigned i = 0; i < 8; i++) {
		assert_null(pl->ranks[i].cpus);
		assert_null(pl->ranks[i].mems);
		assert_int_equal(pl->ranks[i].gpu, (int)i);
	}
	assert_int_equal(pl->n_host, 0);
	assert_int_equal(pl->n_irqs, 0);
	assert_string_equal(pl->cgroup, "");
	plan_free(pl);
	topo_free(t);
	policy_free(p);
}

static void test_cross_numa(void **state)
{
	char path[4096];
	struct policy *p = pol("contrib/examples/cross-numa.conf");
	struct topo *t = xml(test_path(path, sizeof(path), "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"));
	struct plan *pl = build(p, t, 8);

	(void)state;
	for (unsigned i = 0; i < 8; i++) {
		const struct topo_dev *g = &t->gpus[pl->ranks[i].gpu];

		assert_false(hwloc_bitmap_intersects(pl->ranks[i].cpus, g->cpus));  /* far */
		assert_int_not_equal(hwloc_bitmap_first(pl->ranks[i].mems), g->numa_node);
	}
	plan_free(pl);
	topo_free(t);
	policy_free(p);
}

static void test_host_settings_from_sysroot(void **state)
{
	char path[4096], dir[64], cmd[8400];
	struct nt_err err = { 0 };
	struct topo *t = xml(test_path(path, sizeof(path), "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"));
	struct fsroot *root;
	struct policy *p;
	struct plan *pl;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(test_copy_fixture("tests/fixtures/sysroot/gpu-host-untuned", dir), 0);
	/* IRQs of GPU 0 (MSI-X 40, 41) and of its NIC */
	test_write(dir, "sys/bus/pci/devices/0000:1b:00.0/msi_irqs/40", "msix\n");
	test_write(dir, "sys/bus/pci/devices/0000:1b:00.0/msi_irqs/41", "msix\n");
	test_write(dir, "sys/bus/pci/devices/0000:1a:00.0/irq", "52\n");
	test_write(dir, "proc/irq/40/smp_affinity_list", "0-95\n");
	test_write(dir, "proc/irq/41/smp_affinity_list", "3\n");
	test_write(dir, "proc/irq/52/smp_affinity_list", "0-23\n");
	root = fsroot_open(dir);
	p = pol("policies/gpu-train.conf");
	pl = plan_build(p, t, 8, root, &err);
	if (!pl)
		fail_msg("%s", err.msg);
	assert_int_equal(pl->n_host, 7);   /* and the governor of the tree's 4 cpufreq CPUs */
	{
		/* the text folds a per-CPU knob into one line (F30) */
		char *text = NULL;
		size_t tlen = 0;
		FILE *mf = open_memstream(&text, &tlen);

		assert_int_equal(plan_print(mf, pl, t), 0);
		fclose(mf);
		assert_non_null(strstr(text, "\n  /sys/devices/system/cpu/cpu{0-3}/cpufreq/scaling_governor (4 CPUs): powersave -> performance\n"));
		assert_null(strstr(text, "cpu1/cpufreq"));
		free(text);
	}
	assert_string_equal(pl->host[0].from, "always");
	assert_string_equal(pl->host[1].from, "always");
	assert_string_equal(pl->host[2].from, "1");
	assert_int_equal(pl->n_irqs, 3);
	assert_int_equal(pl->irqs[0].irq, 40);
	assert_string_equal(pl->irqs[0].from, "0-95");
	assert_string_equal(pl->irqs[0].to, "0,24,48,72");
	assert_int_equal(pl->irqs[2].irq, 52);
	assert_string_equal(pl->irqs[2].device, "0000:1a:00.0");
	plan_free(pl);
	policy_free(p);

	/* hugepages: per node; a pool the kernel lacks is an error, not a skip */
	p = pol_text(dir, "[hugetlb]\npages_2m = 512\n[sched]\ngovernor = performance\n");
	pl = plan_build(p, t, 1, root, &err);
	if (!pl)
		fail_msg("%s", err.msg);
	assert_int_equal(pl->n_host, 2 + 4); /* 2 nodes + 4 CPUs with cpufreq */
	assert_string_equal(pl->host[0].path, "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages");
	assert_string_equal(pl->host[1].to, "512");
	assert_non_null(strstr(pl->notes[pl->n_notes - 1], "skipped on 92 CPU(s) without cpufreq"));
	plan_free(pl);
	/* the text folds consecutive CPUs with the same change into one line
	 * (F30): CPU 2 already at performance splits the run */
	test_write(dir, "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor", "performance\n");
	pl = plan_build(p, t, 1, root, &err);
	if (!pl)
		fail_msg("%s", err.msg);
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_int_equal(plan_print(f, pl, t), 0);
		fclose(f);
		assert_non_null(strstr(buf, "\n  /sys/devices/system/cpu/cpu{0-1}/cpufreq/scaling_governor (2 CPUs): powersave -> performance\n"
					 "  /sys/devices/system/cpu/cpu2/cpufreq/scaling_governor: performance -> performance (already)\n"
					 "  /sys/devices/system/cpu/cpu3/cpufreq/scaling_governor: powersave -> performance\n"));
		free(buf);
	}
	plan_free(pl);
	policy_free(p);
	p = pol_text(dir, "[hugetlb]\npages_1g = 4\n");
	snprintf(cmd, sizeof(cmd), "rm -r '%s/sys/devices/system/node/node1/hugepages/hugepages-1048576kB'", dir);
	assert_int_equal(system(cmd), 0);
	assert_null(plan_build(p, t, 1, root, &err));
	assert_non_null(strstr(err.msg, "pages_1g = 4: this kernel has no"));
	policy_free(p);

	/* garbage in a knob's file is an error naming it */
	p = pol("policies/gpu-train.conf");
	test_write(dir, "proc/sys/kernel/numa_balancing", "\n");
	assert_null(plan_build(p, t, 8, root, &err));
	assert_non_null(strstr(err.msg, "numa_balancing: unexpected content"));
	policy_free(p);
	fsroot_free(root);
	test_rmrf(dir);
	topo_free(t);
}

static void test_deterministic_json(void **state)
{
	char path[4096];
	struct policy *p = pol("policies/gpu-train.conf");
	struct topo *t = xml(test_path(path, sizeof(path), "tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml"));
	struct plan *a = build(p, t, 4), *b = build(p, t, 4);
	json_t *ja = plan_json(a), *jb = plan_json(b), *r0;
	char *sa = json_dumps(ja, JSON_SORT_KEYS), *sb = json_dumps(jb, JSON_SORT_KEYS);

	(void)state;
	assert_string_equal(sa, sb);
	r0 = json_array_get(json_object_get(ja, "ranks"), 2);
	assert_int_equal(json_integer_value(json_object_get(r0, "local_rank")), 2);
	assert_int_equal(json_integer_value(json_object_get(r0, "gpu")), 2);
	assert_string_equal(json_string_value(json_object_get(r0, "cpus")), "17-23");
	assert_string_equal(json_string_value(json_object_get(r0, "mems")), "8");
	assert_string_equal(json_string_value(json_object_get(r0, "nic")), "ens1f0np0");
	assert_true(json_is_array(json_object_get(ja, "host")));
	assert_true(json_is_array(json_object_get(ja, "irqs")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(ja, "cgroup"), "name")), "nodetune-job");
	free(sa);
	free(sb);
	json_decref(ja);
	json_decref(jb);
	plan_free(a);
	plan_free(b);
	topo_free(t);
	policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hgx_exact),
		cmocka_unit_test(test_epyc_narrow_locality),
		cmocka_unit_test(test_shared_topologies),
		cmocka_unit_test(test_cpu_only_fallback),
		cmocka_unit_test(test_whole_cores_then_threads),
		cmocka_unit_test(test_impossible_plans),
		cmocka_unit_test(test_given_gpus),
		cmocka_unit_test(test_given_gpus_refused),
		cmocka_unit_test(test_baseline_binds_nothing),
		cmocka_unit_test(test_cross_numa),
		cmocka_unit_test(test_host_settings_from_sysroot),
		cmocka_unit_test(test_deterministic_json),
	};

	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
