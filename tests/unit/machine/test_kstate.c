/* SPDX-License-Identifier: MIT */
/* test_kstate.c — kernel state from captured and crafted /sys + /proc trees. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "machine/knob.h"
#include "machine/knob_test.h"
#include "machine/kstate.h"
#include "test_util.h"

static int read_tree(const char *rel, struct kstate *ks, struct nt_err *err)
{
	char path[4096];
	struct fsroot *root = fsroot_open(test_path(path, sizeof(path), rel));
	int r;

	assert_non_null(root);
	r = kstate_read(root, ks, err);
	fsroot_free(root);
	return r;
}

static void test_choice(void **state)
{
	char out[16];

	(void)state;
	assert_int_equal(knob_parse_choice("always [madvise] never", knob_table[KNOB_THP_ENABLED].values, out, sizeof(out)), 0);
	assert_string_equal(out, "madvise");
	assert_int_equal(knob_parse_choice("[always] madvise never", knob_table[KNOB_THP_ENABLED].values, out, sizeof(out)), 0);
	assert_string_equal(out, "always");
	/* a sysroot file holds what was written: a plain value */
	assert_int_equal(knob_parse_choice("never", knob_table[KNOB_THP_ENABLED].values, out, sizeof(out)), 0);
	assert_string_equal(out, "never");
	assert_int_equal(knob_parse_choice("always defer [defer+madvise] madvise never",
					     knob_table[KNOB_THP_DEFRAG].values, out, sizeof(out)), 0);
	assert_string_equal(out, "defer+madvise");
	assert_int_equal(knob_parse_choice("sometimes", knob_table[KNOB_THP_ENABLED].values, out, sizeof(out)), -EINVAL);
	assert_int_equal(knob_parse_choice("always madvise never", knob_table[KNOB_THP_ENABLED].values, out, sizeof(out)), -EINVAL);
	assert_int_equal(knob_parse_choice("[always] [never]", knob_table[KNOB_THP_ENABLED].values, out, sizeof(out)), -EINVAL);
	assert_int_equal(knob_parse_choice("[always", knob_table[KNOB_THP_ENABLED].values, out, sizeof(out)), -EINVAL);
	assert_int_equal(knob_parse_choice("", knob_table[KNOB_THP_ENABLED].values, out, sizeof(out)), -EINVAL);
	assert_int_equal(knob_parse_choice("[defer]", knob_table[KNOB_THP_ENABLED].values, out, sizeof(out)), -EINVAL);
}

static void test_untuned(void **state)
{
	struct kstate ks;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(read_tree("tests/fixtures/sysroot/gpu-host-untuned", &ks, &err), 0);
	assert_string_equal(ks.thp_enabled, "always");
	assert_string_equal(ks.thp_defrag, "always");
	assert_int_equal(ks.numa_balancing, 1);
	assert_string_equal(ks.governor, "powersave");
	assert_string_equal(ks.isolated_cpus, "");
	assert_string_equal(ks.nohz_full, "");       /* "(null)" means none */
	assert_int_equal(ks.swap_total_bytes, 8388604LL * 1024);
	assert_int_equal(ks.cgroup_version, 2);
	assert_string_equal(ks.cgroup_mode, "unified");
	assert_int_equal(ks.n_hugepages, 4);
	assert_int_equal(ks.hugepages[0].node, 0);
	assert_int_equal(ks.hugepages[0].size_kb, 2048);
	assert_int_equal(ks.hugepages[1].size_kb, 1048576);
	assert_int_equal(ks.hugepages[3].node, 1);
	assert_int_equal(ks.n_notes, 0);
	kstate_release(&ks);
}

static void test_tuned(void **state)
{
	struct kstate ks;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(read_tree("tests/fixtures/sysroot/gpu-host-tuned", &ks, &err), 0);
	assert_string_equal(ks.thp_enabled, "madvise");
	assert_string_equal(ks.thp_defrag, "defer+madvise");
	assert_int_equal(ks.numa_balancing, 0);
	assert_string_equal(ks.governor, "performance");
	assert_string_equal(ks.isolated_cpus, "2-3");
	assert_string_equal(ks.nohz_full, "2-3");
	assert_int_equal(ks.swap_total_bytes, 0);
	assert_int_equal(ks.cgroup_version, 1);
	assert_string_equal(ks.cgroup_mode, "hybrid");
	assert_int_equal(ks.n_hugepages, 4);
	/* sorted by node, then size: 2M before 1G although "1048576" < "2048" as text */
	assert_int_equal(ks.hugepages[0].size_kb, 2048);
	assert_int_equal(ks.hugepages[0].total, 1024);
	assert_int_equal(ks.hugepages[0].free, 1000);
	assert_int_equal(ks.hugepages[1].size_kb, 1048576);
	assert_int_equal(ks.hugepages[1].total, 16);
	assert_int_equal(ks.hugepages[2].node, 1);
	/* each node's meminfo: the capture's node0 figures (plant-hazards.sh) */
	assert_int_equal(ks.n_node_mem, 2);
	assert_int_equal(ks.node_mem[1].node, 1);
	assert_int_equal(ks.node_mem[1].total_bytes, 6908108ull * 1024);
	assert_int_equal(ks.node_mem[1].free_bytes, 5882952ull * 1024);
	kstate_release(&ks);
}

static void test_captured_vm(void **state)
{
	struct kstate ks;
	struct nt_err err = { 0 };

	(void)state;
	/* captured from a Debian 12 KVM guest with scripts/capture-sysroot.sh */
	assert_int_equal(read_tree("tests/fixtures/sysroot/debian12-kvm-2cpu", &ks, &err), 0);
	assert_string_equal(ks.thp_enabled, "madvise");
	assert_string_equal(ks.thp_defrag, "madvise");
	assert_int_equal(ks.numa_balancing, 0);
	assert_string_equal(ks.governor, "");        /* no cpufreq in the guest */
	assert_null(ks.nohz_full);                   /* no such file on this kernel */
	assert_string_equal(ks.isolated_cpus, "");
	assert_int_equal(ks.swap_total_bytes, 0);
	assert_int_equal(ks.cgroup_version, 1);
	assert_string_equal(ks.cgroup_mode, "hybrid");
	assert_int_equal(ks.n_notes, 2);
	assert_non_null(strstr(ks.notes[0], "governor unknown"));
	assert_non_null(strstr(ks.notes[1], "nohz_full: missing"));
	kstate_release(&ks);
}

static void test_missing_files_are_unknown(void **state)
{
	char dir[64];
	struct fsroot *root;
	struct kstate ks;
	struct nt_err err = { 0 };

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	test_write(dir, "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
	root = fsroot_open(dir);
	assert_int_equal(kstate_read(root, &ks, &err), 0);
	assert_string_equal(ks.thp_enabled, "madvise");
	assert_string_equal(ks.thp_defrag, "");
	assert_int_equal(ks.numa_balancing, -1);
	assert_int_equal(ks.swap_total_bytes, -1);
	assert_int_equal(ks.cgroup_version, 0);
	assert_null(ks.isolated_cpus);
	assert_int_equal(ks.n_hugepages, 0);
	assert_int_equal(ks.n_notes, 8);
	for (unsigned i = 0; i < ks.n_notes; i++)
		assert_non_null(strstr(ks.notes[i], dir)); /* each names its file */
	kstate_release(&ks);
	kstate_release(&ks); /* released twice is harmless */
	fsroot_free(root);
	test_rmrf(dir);
}

struct garbage_case {
	const char *file, *content, *want; /* want: substring of the message */
};

static void test_garbage_is_an_error(void **state)
{
	static const struct garbage_case cases[] = {
		{ "sys/kernel/mm/transparent_hugepage/enabled", "sometimes\n",
		  "transparent_hugepage/enabled: expected one of" },
		{ "sys/kernel/mm/transparent_hugepage/defrag", "[always] [never]\n",
		  "transparent_hugepage/defrag: expected one of" },
		{ "proc/sys/kernel/numa_balancing", "yes\n", "numa_balancing: expected 0, 1, 2 or 3, got 'yes'" },
		{ "proc/sys/kernel/numa_balancing", "7\n", "expected 0, 1, 2 or 3, got '7'" },
		{ "proc/meminfo", "MemTotal: 1 kB\nMemFree: 1 kB\nSwapTotal: lots kB\n",
		  "proc/meminfo:3: expected 'SwapTotal: <n> kB'" },
		{ "proc/meminfo", "\x7f" "ELF\x01\x02", "no 'SwapTotal:' line" },
		{ "proc/mounts", "sysfs /sys sysfs rw 0 0\nbroken\n", "proc/mounts:2: expected" },
		{ "sys/devices/system/cpu/isolated", "1-x\n", "isolated: expected a CPU list" },
		{ "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "lots\n",
		  "nr_hugepages: expected a page count" },
		{ "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "perf ormance\n",
		  "scaling_governor: expected a governor name" },
		{ "sys/devices/system/node/node1/meminfo", "Node 1 MemTotal: 1 kB\nNode 1 MemFree: some kB\n",
		  "node1/meminfo:2: expected 'Node N KEY: <n> kB'" },
		{ "sys/devices/system/node/node1/meminfo", "Node 1 MemTotal: 1 kB\n",
		  "node1/meminfo: expected MemTotal and MemFree lines" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char dir[64];
		struct fsroot *root;
		struct kstate ks = { .numa_balancing = 42 };
		struct nt_err err = { 0 };

		assert_non_null(test_tmpdir(dir, sizeof(dir)));
		assert_int_equal(test_copy_fixture("tests/fixtures/sysroot/gpu-host-tuned", dir), 0);
		assert_int_equal(test_write(dir, cases[i].file, cases[i].content), 0);
		root = fsroot_open(dir);
		assert_int_equal(kstate_read(root, &ks, &err), -EINVAL);
		if (!strstr(err.msg, cases[i].want) || !strstr(err.msg, dir))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, cases[i].want);
		assert_int_equal(ks.numa_balancing, 42); /* output untouched on error */
		fsroot_free(root);
		test_rmrf(dir);
	}
}

/* SwapTotal of this host's /proc/meminfo, in bytes, read here (sscanf, not
 * kstate's parser): what kstate_read must report */
static long long meminfo_swap_total(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long long kb = -1;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SwapTotal: %lld kB", &kb) == 1)
			break;
	fclose(f);
	assert_true(kb >= 0);
	return kb * 1024;
}

static void test_live_host(void **state)
{
	struct fsroot *root = fsroot_open("/");
	struct kstate ks;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(kstate_read(root, &ks, &err), 0);
	if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) == 0)
		assert_true(ks.thp_enabled[0] != '\0');
	assert_int_equal(ks.swap_total_bytes, meminfo_swap_total());
	assert_true(ks.cgroup_version == 1 || ks.cgroup_version == 2);
	kstate_release(&ks);
	fsroot_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_untuned),
		cmocka_unit_test(test_tuned),
		cmocka_unit_test(test_captured_vm),
		cmocka_unit_test(test_missing_files_are_unknown),
		cmocka_unit_test(test_garbage_is_an_error),
		cmocka_unit_test(test_live_host),
	};

	return cmocka_run_group_tests_name("kstate", tests, NULL, NULL);
}
