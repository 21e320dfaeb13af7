/* SPDX-License-Identifier: MIT */
/* test_sampler.c — the observer's records on a captured tree: host and
 * process fields present and computed from the two samples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "observe/sampler.h"
#include "test_util.h"

static void test_records(void **state)
{
	char root[4096];
	struct sampler s;
	struct sampler_snap a = { 0 }, b = { 0 };
	int pid = 11584;
	json_t *rec, *p;
	char line[1024];

	(void)state;
	test_path(root, sizeof(root), "tests/fixtures/sysroot/debian12-kvm-2cpu");
	assert_int_equal(sampler_init(&s, root, &pid, 1, true), 0);
	sampler_take(&s, &a);
	sampler_take(&s, &b);
	assert_true(a.slow);            /* the first sample takes the slow scans */
	assert_false(b.slow);
	assert_int_equal(sampler_alive(&b), 1);
	rec = sampler_record(&s, &a, &b);
	/* a captured tree does not move: every delta is 0, every field there */
	assert_int_equal(json_array_size(json_object_get(rec, "cpus")), 0);   /* no time passed */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(rec, "vmstat"), "pgfault")), 0);
	assert_non_null(json_object_get(json_object_get(rec, "vmstat"), "compact_stall"));
	assert_non_null(json_object_get(json_object_get(rec, "psi_ms"), "cpu_some"));
	assert_true(json_is_integer(json_object_get(rec, "tlb_shootdowns")));
	assert_int_equal(json_integer_value(json_object_get(rec, "tlb_shootdowns")), 0);
	assert_null(json_object_get(rec, "memcg"));                          /* only in slow samples */
	p = json_array_get(json_object_get(rec, "procs"), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "pid")), 11584);
	assert_int_equal(json_integer_value(json_object_get(p, "threads")), 6);
	assert_int_equal(json_integer_value(json_object_get(p, "cpus_used")), 2);
	assert_true(json_real_value(json_object_get(p, "cpu_pct")) == 0.0);
	json_decref(rec);
	rec = sampler_record(&s, &b, &a);       /* a slow sample carries the scans */
	assert_true(json_is_integer(json_object_get(json_object_get(rec, "memcg"), "kernel")));
	/* the capture's memory hierarchy: 182 memory cgroups in proc/cgroups,
	 * 3 directories (the root, process_api and one below it) */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(rec, "memcg"), "kernel")), 182);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(rec, "memcg"), "live")), 3);
	assert_non_null(json_object_get(rec, "nr_throttled_total"));
	json_decref(rec);
	a.memcg_kernel = -1;                    /* an unreadable count: null, not -1 */
	rec = sampler_record(&s, &b, &a);
	assert_true(json_is_null(json_object_get(json_object_get(rec, "memcg"), "kernel")));
	json_decref(rec);
	sampler_line(&s, &a, &b, line, sizeof(line));
	assert_non_null(strstr(line, "procs 1/1: 6 threads 0% cpu, 0 invol"));
	/* the process gone (another pid that is not in the tree) */
	s.pids[0] = 4;
	sampler_take(&s, &b);
	assert_int_equal(sampler_alive(&b), 0);
	sampler_snap_release(&a);
	sampler_snap_release(&b);
	sampler_release(&s);
}

/* A host whose kernel cannot count TLB shootdowns or pressure: the
 * record has null, the line "n/c", and the observer says why; never 0. */
static void test_uncountable(void **state)
{
	char src[4096], dir[64], cmd[8300], why[1024], line[1024];
	struct sampler s;
	struct sampler_snap a = { 0 }, b = { 0 };
	int pid = 11584;
	json_t *rec;

	(void)state;
	test_path(src, sizeof(src), "tests/fixtures/sysroot/debian12-kvm-2cpu");
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	snprintf(cmd, sizeof(cmd), "cp -a '%s'/. '%s' && sed -i '/TLB/d' '%s/proc/interrupts' && rm -rf '%s/proc/pressure'",
		 src, dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(sampler_init(&s, dir, &pid, 1, false), 0);
	assert_int_equal(sampler_uncountable(&s, why, sizeof(why)), 2);
	assert_non_null(strstr(why, "TLB shootdowns: not countable on this host (no TLB line"));
	assert_non_null(strstr(why, "PSI: not countable on this host"));
	sampler_take(&s, &a);
	sampler_take(&s, &b);
	rec = sampler_record(&s, &a, &b);
	assert_true(json_is_null(json_object_get(rec, "tlb_shootdowns")));
	assert_true(json_is_null(json_object_get(rec, "psi_ms")));
	json_decref(rec);
	sampler_line(&s, &a, &b, line, sizeof(line));
	assert_non_null(strstr(line, "tlb n/c"));
	assert_non_null(strstr(line, "psi cpu n/c"));
	sampler_snap_release(&a);
	sampler_snap_release(&b);
	sampler_release(&s);
	/* the captured tree as it was: everything countable */
	test_path(src, sizeof(src), "tests/fixtures/sysroot/debian12-kvm-2cpu");
	assert_int_equal(sampler_init(&s, src, &pid, 1, false), 0);
	assert_int_equal(sampler_uncountable(&s, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	sampler_release(&s);
	test_rmrf(dir);
}

/* Every vmstat counter id has its row, and reads the field it is named for. */
static void test_vm_table(void **state)
{
	(void)state;
	for (enum sampler_vm k = 0; k < SAMPLER_VM; k++) {
		const struct sampler_counter *c = &sampler_vm_counters[k];
		char want[96];

		assert_non_null(c->name);
		assert_non_null(c->unit);
		assert_non_null(c->source);
		snprintf(want, sizeof(want), "/proc/vmstat %s", c->name);
		assert_string_equal(c->source, want);
	}
	assert_string_equal(sampler_vm_counters[SV_PGFAULT].name, "pgfault");
	assert_string_equal(sampler_vm_counters[SV_COMPACT_STALL].name, "compact_stall");
	assert_string_equal(sampler_vm_counters[SV_NUMA_HINT_FAULTS].name, "numa_hint_faults");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_uncountable),
		cmocka_unit_test(test_vm_table),
	};

	return cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
}
