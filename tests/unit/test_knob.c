/* test_knob.c — the knob table: lookups, validation, paths, did-you-mean. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "knob.h"
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
		if (k->bracketed)
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
	free(doc);
	free(gen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_consistent),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_did_you_mean),
		cmocka_unit_test(test_reference_doc_matches),
	};

	return cmocka_run_group_tests_name("knob", tests, NULL, NULL);
}
