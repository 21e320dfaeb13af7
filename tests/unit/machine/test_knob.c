/* SPDX-License-Identifier: MIT */
/* test_knob.c — the knob table: lookups, validation, paths, did-you-mean. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "machine/knob.h"
#include "test_util.h"

static void test_table_is_consistent(void **state)
{
	(void)state;
	for (unsigned i = 0; i < knob_count; i++) {
		const struct knob *k = &knob_table[i];

		assert_true(knob_section_known(k->section));
		assert_int_equal(knob_find(k->section, k->key), (int)i);   /* no duplicate rows */
		assert_non_null(k->help);
		if (k->type == KT_ENUM)
			assert_non_null(k->values);
		if (k->type == KT_INT)
			assert_true(k->min <= k->max);
		if (k->scope == KS_HOST_NODE || k->scope == KS_HOST_CPU)
			assert_non_null(strstr(k->path, "%u"));
		if (knob_bracketed(k))
			assert_int_equal(k->type, KT_ENUM);
	}
	assert_int_equal(knob_find("thp", "nope"), -1);
	assert_false(knob_section_known("tuned"));
}

static void test_validate(void **state)
{
	const struct knob *nice = &knob_table[knob_find("sched", "nice")];
	const struct knob *hk = &knob_table[knob_find("affinity", "housekeeping")];
	const struct knob *thp = &knob_table[knob_find("thp", "defrag")];
	const struct knob *cg = &knob_table[knob_find("cgroup", "name")];
	char why[256];

	(void)state;
	assert_int_equal(knob_validate(nice, "-20", why, sizeof(why)), 0);
	assert_int_equal(knob_validate(nice, "19", why, sizeof(why)), 0);
	assert_int_equal(knob_validate(nice, "-21", why, sizeof(why)), -EINVAL);
	assert_int_equal(knob_validate(nice, "1x", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "'1x' is not an integer from -20 to 19");
	assert_int_equal(knob_validate(hk, "auto", why, sizeof(why)), 0);
	assert_int_equal(knob_validate(hk, "0,36-37", why, sizeof(why)), 0);
	assert_int_equal(knob_validate(hk, "", why, sizeof(why)), -EINVAL);
	assert_int_equal(knob_validate(thp, "defer+madvise", why, sizeof(why)), 0);
	assert_int_equal(knob_validate(thp, "Always", why, sizeof(why)), -EINVAL);
	assert_int_equal(knob_validate(cg, "job-1.a_b", why, sizeof(why)), 0);
	assert_int_equal(knob_validate(cg, "a/b", why, sizeof(why)), -EINVAL);
	assert_int_equal(knob_validate(cg, ".hidden", why, sizeof(why)), -EINVAL);
}

static void test_paths(void **state)
{
	char buf[256];

	(void)state;
	assert_string_equal(knob_host_path(&knob_table[knob_find("sysctl", "vm.swappiness")], 0, buf, sizeof(buf)),
			    "proc/sys/vm/swappiness");
	assert_string_equal(knob_host_path(&knob_table[knob_find("hugetlb", "pages_1g")], 8, buf, sizeof(buf)),
			    "sys/devices/system/node/node8/hugepages/hugepages-1048576kB/nr_hugepages");
	assert_string_equal(knob_host_path(&knob_table[knob_find("sched", "governor")], 95, buf, sizeof(buf)),
			    "sys/devices/system/cpu/cpu95/cpufreq/scaling_governor");
	assert_string_equal(knob_host_path(&knob_table[KNOB_IRQ_DEVICES], 40, buf, sizeof(buf)),
			    "proc/irq/40/smp_affinity_list");
	assert_string_equal(knob_host_path(&knob_table[KNOB_SCHED_NICE], 0, buf, sizeof(buf)), "");
}

/* Every knob_id has its row: rows are designated initializers, so an id
 * added without one would be a zeroed row. */
static void test_every_id_has_a_row(void **state)
{
	(void)state;
	assert_int_equal(knob_count, KNOB_COUNT);
	for (enum knob_id id = 0; id < KNOB_COUNT; id++) {
		const struct knob *k = &knob_table[id];
		char why[64];

		assert_non_null(k->section);
		assert_non_null(k->key);
		assert_non_null(k->help);
		assert_non_null(k->validate);
		/* a row that writes a file says how to read back what the kernel holds */
		assert_true((k->path != NULL) == (k->effective != NULL));
		assert_true((k->path != NULL) == (k->scope >= KS_HOST));
		/* the validator is the row's, whatever type it is */
		assert_int_equal(knob_validate(k, "\x01 not a value \x01", why, sizeof(why)) == 0,
				 k->type == KT_STRING || k->type == KT_INCLUDE);
	}
	assert_int_equal(knob_find("sched", "priority"), KNOB_SCHED_PRIORITY);
	assert_int_equal(knob_find("sysctl", "kernel.nmi_watchdog"), KNOB_SYSCTL_KERNEL_NMI_WATCHDOG);
}

/* A sysctl's file is its key with dots as slashes below proc/sys. */
static void test_sysctl_paths_follow_keys(void **state)
{
	(void)state;
	for (enum knob_id id = 0; id < KNOB_COUNT; id++) {
		const struct knob *k = &knob_table[id];
		char want[160];

		if (k->scope != KS_SYSCTL)
			continue;
		snprintf(want, sizeof(want), "proc/sys/%s", k->key);
		for (char *c = want; *c; c++)
			if (*c == '.')
				*c = '/';
		assert_string_equal(k->path, want);
	}
}

static void test_readers(void **state)
{
	const struct knob *thp = &knob_table[KNOB_THP_ENABLED], *swp = &knob_table[KNOB_SYSCTL_VM_SWAPPINESS];
	const struct knob *gov = &knob_table[KNOB_SCHED_GOVERNOR], *irq = &knob_table[KNOB_IRQ_DEVICES];
	char out[64];

	(void)state;
	assert_true(knob_bracketed(thp));
	assert_false(knob_bracketed(swp));
	assert_int_equal(thp->effective(thp, "always [madvise] never\n", out, sizeof(out)), 0);
	assert_string_equal(out, "madvise");
	assert_int_equal(thp->effective(thp, "always [sometimes] never", out, sizeof(out)), -EINVAL);
	assert_int_equal(swp->effective(swp, "60\n", out, sizeof(out)), 0);
	assert_string_equal(out, "60");
	assert_int_equal(swp->effective(swp, "\n", out, sizeof(out)), -EINVAL);
	assert_int_equal(swp->effective(swp, "1234567", out, 4), -EINVAL);   /* does not fit */
	assert_int_equal(gov->effective(gov, "performance\n", out, sizeof(out)), 0);
	assert_string_equal(out, "performance");
	assert_int_equal(irq->effective(irq, "0,1,2,3,8\n", out, sizeof(out)), 0);
	assert_string_equal(out, "0-3,8");
	assert_int_equal(irq->effective(irq, "zero", out, sizeof(out)), -EINVAL);
}

static void test_read_effective(void **state)
{
	char dir[256], out[64];
	struct fsroot *root;

	(void)state;
	test_tmpdir(dir, sizeof(dir));
	test_write(dir, "sys/kernel/mm/transparent_hugepage/defrag", "always defer [defer+madvise] madvise never\n");
	test_write(dir, "proc/sys/vm/swappiness", "10\n");
	test_write(dir, "proc/sys/kernel/numa_balancing", "garbage here\n");
	root = fsroot_open(dir);
	assert_non_null(root);
	assert_int_equal(knob_read_effective(root, &knob_table[KNOB_THP_DEFRAG],
					     knob_table[KNOB_THP_DEFRAG].path, out, sizeof(out)), 0);
	assert_string_equal(out, "defer+madvise");
	assert_int_equal(knob_read_effective(root, &knob_table[KNOB_SYSCTL_VM_SWAPPINESS],
					     knob_table[KNOB_SYSCTL_VM_SWAPPINESS].path, out, sizeof(out)), 0);
	assert_string_equal(out, "10");
	assert_int_equal(knob_read_effective(root, &knob_table[KNOB_THP_ENABLED],
					     knob_table[KNOB_THP_ENABLED].path, out, sizeof(out)), -ENOENT);
	/* a plain reader takes the first word; the kernel prints one */
	assert_int_equal(knob_read_effective(root, &knob_table[KNOB_SCHED_NUMA_BALANCING],
					     knob_table[KNOB_SCHED_NUMA_BALANCING].path, out, sizeof(out)), 0);
	assert_string_equal(out, "garbage");
	assert_int_equal(knob_read_effective(root, &knob_table[KNOB_SCHED_NICE], "proc/sys/vm/swappiness",
					     out, sizeof(out)), -ENOTSUP);
	fsroot_free(root);
	test_rmrf(dir);
}

static void test_did_you_mean(void **state)
{
	static const char *const c[] = { "mode", "housekeeping", "export_gpu" };

	(void)state;
	assert_string_equal(knob_did_you_mean("mod", c, 3), "mode");
	assert_string_equal(knob_did_you_mean("housekeping", c, 3), "housekeeping");
	assert_string_equal(knob_did_you_mean("EXPORT_GPU", c, 3), "export_gpu");
	assert_null(knob_did_you_mean("banana", c, 3));
}

/* A swap of two adjacent letters is one edit: "[tph]" is a typo of [thp]
 * (two edits for Levenshtein, over a 3-letter word's limit of one). */
static void test_did_you_mean_transposition(void **state)
{
	static const char *const sections[] = { "main", "thp", "sched", "irq", "cgroup" };
	static const char *const c[] = { "mode", "housekeeping", "export_gpu" };

	(void)state;
	assert_string_equal(knob_did_you_mean("tph", sections, 5), "thp");
	assert_string_equal(knob_did_you_mean("IRQ", sections, 5), "irq");
	assert_string_equal(knob_did_you_mean("hosuekeepign", c, 3), "housekeeping");
	assert_string_equal(knob_did_you_mean("epxort_gpu", c, 3), "export_gpu");
	assert_null(knob_did_you_mean("pht", sections, 5));     /* a rotation: two edits */
	assert_null(knob_did_you_mean("omde", c + 1, 2));
}

/* docs/policy-keys.md is the table's own output: checked, never hand-edited. */
static void test_reference_doc_matches(void **state)
{
	char path[4096], *doc = NULL, *gen = NULL;
	size_t dlen = 0, glen = 0;
	FILE *f, *m;

	(void)state;
	f = fopen(test_path(path, sizeof(path), "docs/policy-keys.md"), "r");
	assert_non_null(f);
	m = open_memstream(&doc, &dlen);
	for (int ch; (ch = fgetc(f)) != EOF;)
		fputc(ch, m);
	fclose(f);
	fclose(m);
	m = open_memstream(&gen, &glen);
	knob_print_reference(m);
	fclose(m);
	if (!strstr(doc, gen))
		fail_msg("docs/policy-keys.md is out of date: regenerate it with `nodetune keys --markdown`");
	/* every knob that writes a file names that file, as the kernel spells
	 * it (/proc/sys/vm/swappiness, never /proc/sys/vm.swappiness) */
	for (unsigned i = 0; i < knob_count; i++) {
		char want[256];

		if (!knob_table[i].path || strchr(knob_table[i].path, '%'))
			continue;
		snprintf(want, sizeof(want), "`/%s`", knob_table[i].path);
		if (!strstr(gen, want))
			fail_msg("the reference does not name %s's file %s", knob_table[i].key, want);
	}
	assert_null(strstr(gen, "/proc/sys/vm."));
	assert_null(strstr(gen, "/proc/sys/kernel."));
	free(doc);
	free(gen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_consistent),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_every_id_has_a_row),
		cmocka_unit_test(test_sysctl_paths_follow_keys),
		cmocka_unit_test(test_readers),
		cmocka_unit_test(test_read_effective),
		cmocka_unit_test(test_did_you_mean),
		cmocka_unit_test(test_did_you_mean_transposition),
		cmocka_unit_test(test_reference_doc_matches),
	};

	return cmocka_run_group_tests_name("knob", tests, NULL, NULL);
}
