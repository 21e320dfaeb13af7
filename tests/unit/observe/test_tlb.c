/* SPDX-License-Identifier: MIT */
/* test_tlb.c — TLB shootdowns: the probe, each source on this host, and
 * "not countable" where no source sees them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"
#include "observe/tlb.h"
#include "observe/tlb_test.h"

/* a host capability this host lacks (test_util.h: the reason is listed) */
#define skip_msg(cap, msg) test_skip_host((cap), "%s", (msg))

static int cpus_allowed(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

/* a source the probe chose must count a second, independent burst */
static void check_source(unsigned allow, enum tlb_source want)
{
	struct fsroot *root = fsroot_open("/");
	struct tlb_counter c;
	uint64_t v0, v1, best = 0;

	assert_non_null(root);
	assert_int_equal(tlb_counter_open(&c, root, allow), 0);
	assert_true(c.why[0] != '\0');
	if (!tlb_counter_countable(&c)) {
		char msg[400];

		/* a host that cannot see them (a hypervisor that flushes for
		 * the guest): the reason must say so, and reads refuse */
		assert_int_equal(tlb_counter_read(&c, &v0), -ENODATA);
		snprintf(msg, sizeof(msg), "%s not countable here: %s", tlb_source_name(want), c.why);
		tlb_counter_close(&c);
		fsroot_free(root);
		skip_msg(want == TLB_SRC_INTERRUPTS ? "tlb" : "perf", msg);
	}
	assert_int_equal(c.source, want);
	/* as the probe: a burst on a busy host may be missed (lazy TLB), so
	 * the best of TLB_PROBE_TRIES counts */
	for (int i = 0; i < TLB_PROBE_TRIES && best < TLB_PROBE_MIN_SEEN; i++) {
		assert_int_equal(tlb_counter_read(&c, &v0), 0);
		assert_int_equal(tlb_probe_storm(TLB_PROBE_FLUSHES), 0);
		assert_int_equal(tlb_counter_read(&c, &v1), 0);
		best = v1 - v0 > best ? v1 - v0 : best;
	}
	print_message("%s: %s; a second burst: +%llu\n", tlb_source_name(c.source), c.why, (unsigned long long)best);
	assert_true(best >= TLB_PROBE_MIN_SEEN);
	tlb_counter_close(&c);
	fsroot_free(root);
}

static void skip_unless_probe(void)
{
	if (cpus_allowed() < 2)
		skip_msg("cpus2", "the probe needs two CPUs");
}

static void test_interrupts_live(void **state)
{
	(void)state;
	skip_unless_probe();
	check_source(TLB_ALLOW(TLB_SRC_INTERRUPTS), TLB_SRC_INTERRUPTS);
}

static void test_tracepoint_live(void **state)
{
	(void)state;
	skip_unless_probe();
	if (geteuid() != 0)
		skip_msg("root", "system-wide tracepoint events need root");
	check_source(TLB_ALLOW(TLB_SRC_TRACEPOINT), TLB_SRC_TRACEPOINT);
}

static void test_probe_one_cpu(void **state)
{
	cpu_set_t old, one;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
	CPU_ZERO(&one);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &old)) {
			CPU_SET(cpu, &one);
			break;
		}
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(tlb_probe_storm(8), -EXDEV);
	assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
}

static void test_none_allowed(void **state)
{
	struct fsroot *root = fsroot_open("/");
	struct tlb_counter c;
	uint64_t v = 7;

	(void)state;
	assert_int_equal(tlb_counter_open(&c, root, 0), 0);
	assert_false(tlb_counter_countable(&c));
	assert_int_equal(tlb_counter_read(&c, &v), -ENODATA);
	assert_int_equal(v, 0);
	assert_non_null(strstr(c.why, "no source allowed"));
	tlb_counter_close(&c);
	tlb_counter_close(&c);         /* twice: a no-op */
	fsroot_free(root);
}

static void test_captured_tree(void **state)
{
	char with[64], without[64];
	struct fsroot *r1, *r2;
	struct tlb_counter c;
	uint64_t v;

	(void)state;
	assert_non_null(test_tmpdir(with, sizeof(with)));
	assert_non_null(test_tmpdir(without, sizeof(without)));
	assert_int_equal(test_write(with, "proc/interrupts", "           CPU0       CPU1\n"
				    "  1:          9          0   IO-APIC   1-edge      i8042\n"
				    "TLB:        635        627   TLB shootdowns\n"), 0);
	assert_int_equal(test_write(without, "proc/interrupts", "           CPU0       CPU1\n"
				    "  1:          9          0   IO-APIC   1-edge      i8042\n"), 0);
	r1 = fsroot_open(with);
	r2 = fsroot_open(without);
	assert_non_null(r1);
	assert_non_null(r2);
	assert_int_equal(tlb_counter_open(&c, r1, TLB_ALLOW_ALL), 0);
	assert_int_equal(c.source, TLB_SRC_INTERRUPTS);
	assert_int_equal(tlb_counter_read(&c, &v), 0);
	assert_int_equal(v, 635 + 627);
	assert_non_null(strstr(c.why, "captured"));
	tlb_counter_close(&c);
	assert_int_equal(tlb_counter_open(&c, r2, TLB_ALLOW_ALL), 0);
	assert_false(tlb_counter_countable(&c));
	assert_non_null(strstr(c.why, "no TLB line"));
	tlb_counter_close(&c);
	fsroot_free(r1);
	fsroot_free(r2);
	test_rmrf(with);
	test_rmrf(without);
}

static void test_sources_from_env(void **state)
{
	(void)state;
	unsetenv("NODETUNE_TLB_SOURCES");
	assert_int_equal(tlb_sources_from_env(), TLB_ALLOW_ALL);
	setenv("NODETUNE_TLB_SOURCES", "none", 1);
	assert_int_equal(tlb_sources_from_env(), 0);
	setenv("NODETUNE_TLB_SOURCES", "tracepoint", 1);
	assert_int_equal(tlb_sources_from_env(), TLB_ALLOW(TLB_SRC_TRACEPOINT));
	setenv("NODETUNE_TLB_SOURCES", "interrupts,tracepoint,bogus", 1);
	assert_int_equal(tlb_sources_from_env(), TLB_ALLOW_ALL);
	unsetenv("NODETUNE_TLB_SOURCES");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interrupts_live),
		cmocka_unit_test(test_tracepoint_live),
		cmocka_unit_test(test_probe_one_cpu),
		cmocka_unit_test(test_none_allowed),
		cmocka_unit_test(test_captured_tree),
		cmocka_unit_test(test_sources_from_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
