/* SPDX-License-Identifier: MIT */
/* test_limits.c — the site limits: the file's syntax, the trust rule, and
 * a policy checked against them (each knob, and the hugetlb share of each
 * NUMA node's memory), the violation naming key and limit. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "tune/limits.h"
#include "tune/limits_test.h"
#include "test_util.h"

#define GIB (1024ull * 1024 * 1024)

static char dir[64];

static int setup(void **state)
{
	(void)state;
	return test_tmpdir(dir, sizeof(dir)) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	test_rmrf(dir);
	return 0;
}

static struct limits *parse(const char *text)
{
	struct nt_err err = { 0 };
	struct limits *l = limits_parse_buffer(text, strlen(text), "limits.conf", &err);

	if (!l)
		fail_msg("%s", err.msg);
	return l;
}

static struct policy *pol(const char *text)
{
	struct nt_err err = { 0 };
	struct policy *p = policy_parse_buffer(text, strlen(text), "p.conf", &err);

	if (!p)
		fail_msg("%s", err.msg);
	return p;
}

static void expect_bad(const char *text, const char *want)
{
	struct nt_err err = { 0 };

	assert_null(limits_parse_buffer(text, strlen(text), "limits.conf", &err));
	assert_int_equal(err.code, -EINVAL);
	if (!strstr(err.msg, want))
		fail_msg("got '%s', expected '%s'", err.msg, want);
}

static void test_syntax(void **state)
{
	struct limits *l;

	(void)state;
	l = parse("# site\n[sysctl]\nvm.min_free_kbytes = 1048576\n[hugetlb]\nshare = 25%\npages_1g = 64\n"
		  "[sched]\nnice = -5\n[thp]\nenabled = never , madvise\n");
	assert_true(l->knob[KNOB_SYSCTL_VM_MIN_FREE_KBYTES].set);
	assert_int_equal(l->knob[KNOB_SYSCTL_VM_MIN_FREE_KBYTES].bound, 1048576);
	assert_int_equal(l->knob[KNOB_SYSCTL_VM_MIN_FREE_KBYTES].line, 3);
	assert_int_equal(l->hugetlb_share.bound, 25);
	assert_int_equal(l->knob[KNOB_HUGETLB_PAGES_1G].bound, 64);
	assert_int_equal(l->knob[KNOB_SCHED_NICE].bound, -5);
	assert_false(l->knob[KNOB_HUGETLB_PAGES_2M].set);
	/* always, madvise, never: bits 1 and 2 */
	assert_int_equal(l->knob[KNOB_THP_ENABLED].allowed, 6);
	assert_int_equal(l->knob[KNOB_THP_ENABLED].line, 10);
	limits_free(l);
	expect_bad("vm.min_free_kbytes = 1\n", "limits.conf:1: key 'vm.min_free_kbytes' before any [section]");
	expect_bad("[sysctl]\nvm.nope = 1\n", "limits.conf:2: [sysctl] vm.nope: not a policy key");
	expect_bad("[affinity]\nhousekeeping = 0\n",
		   "limits.conf:2: [affinity] housekeeping: cannot be limited (only numbers and choices can)");
	expect_bad("[cgroup]\nname = x\n", "limits.conf:2: [cgroup] name: cannot be limited");
	expect_bad("[thp]\nenabled = madvise,nope\n",
		   "limits.conf:2: [thp] enabled 'nope': expected a comma-separated set of always, madvise, never");
	expect_bad("[thp]\nenabled = ,\n", "limits.conf:2: [thp] enabled ',': expected a comma-separated set");
	expect_bad("[thp]\ndefrag = never\ndefrag = never\n",
		   "limits.conf:3: duplicate limit [thp] defrag (first set at line 2)");
	expect_bad("[sysctl]\nvm.swappiness = 500\n", "expected a whole number from 0 to 200");
	expect_bad("[sysctl]\nvm.swappiness = 1x\n", "limits.conf:2: [sysctl] vm.swappiness '1x'");
	expect_bad("[hugetlb]\nshare = 101%\n", "limits.conf:2: [hugetlb] share '101%'");
	expect_bad("[hugetlb]\nshare = %\n", "[hugetlb] share '%'");
	expect_bad("[sysctl]\nvm.swappiness = 10\nvm.swappiness = 20\n",
		   "limits.conf:3: duplicate limit [sysctl] vm.swappiness (first set at line 2)");
}

/* The edges of each value: a share of 0% and of 7 digits, not 8; a bound
 * at its row's minimum; the first row of the key table ([main] summary)
 * known, and refused as a string; an allowed set too long to read; a file
 * over the size limit. */
static void test_edges(void **state)
{
	static char big[LIMITS_MAX_SIZE + 2], set[400];
	struct nt_err err = { 0 };
	struct limits *l;

	(void)state;
	l = parse("[hugetlb]\nshare = 0%\n[sysctl]\nvm.swappiness = 0\n");
	assert_true(l->hugetlb_share.set);
	assert_int_equal(l->hugetlb_share.bound, 0);
	assert_int_equal(l->knob[KNOB_SYSCTL_VM_SWAPPINESS].bound, 0);
	limits_free(l);
	l = parse("[hugetlb]\nshare = 0000050%\n");
	assert_int_equal(l->hugetlb_share.bound, 50);
	limits_free(l);
	expect_bad("[hugetlb]\nshare = 00000050%\n", "limits.conf:2: [hugetlb] share '00000050%'");
	expect_bad("[main]\nsummary = x\n", "limits.conf:2: [main] summary: cannot be limited");
	/* "never,never,...": every word a value, the whole too long (256 bytes or more) */
	for (size_t n = 0; n + 6 < sizeof(set) - 1; n += 6)
		memcpy(set + n, "never,", 6);
	snprintf(big, sizeof(big), "[thp]\nenabled = %s\n", set);
	expect_bad(big, "limits.conf:2: [thp] enabled '");
	memset(big, '#', sizeof(big) - 1);
	big[sizeof(big) - 2] = '\n';
	assert_null(limits_parse_buffer(big, sizeof(big) - 1, "limits.conf", &err));
	assert_int_equal(err.code, -EFBIG);
	assert_non_null(strstr(err.msg, "limits.conf: too large for site limits"));
}

static void test_check_knobs(void **state)
{
	struct limits *l = parse("[sysctl]\nvm.min_free_kbytes = 1048576\n[sched]\nnice = 0\n");
	struct nt_err err = { 0 };
	struct policy *p;

	(void)state;
	p = pol("[sysctl]\nvm.min_free_kbytes = 1048576\n[sched]\nnice = 0\n");
	assert_int_equal(limits_check(l, p, NULL, &err), 0);   /* at the limit is within it */
	policy_free(p);
	p = pol("[sysctl]\nvm.min_free_kbytes = 65536\n[sched]\nnice = 19\n");
	assert_int_equal(limits_check(l, p, NULL, &err), 0);   /* below a ceiling, above a floor */
	policy_free(p);
	p = pol("[main]\nsummary = x\n[sysctl]\nvm.min_free_kbytes = 2097152\n");
	assert_int_equal(limits_check(l, p, NULL, &err), -EPERM);
	assert_string_equal(err.msg,
			    "p.conf:4: [sysctl] vm.min_free_kbytes = 2097152 is above the site limit 1048576 (limits.conf:2)");
	policy_free(p);
	/* nice is a floor: a lower nice is more priority */
	p = pol("[sched]\nnice = -5\n");
	assert_int_equal(limits_check(l, p, NULL, &err), -EPERM);
	assert_string_equal(err.msg, "p.conf:2: [sched] nice = -5 is below the site floor 0 (limits.conf:4)");
	policy_free(p);
	/* a key the policy leaves unset is never a violation */
	p = pol("[thp]\nenabled = never\n");
	assert_int_equal(limits_check(l, p, NULL, &err), 0);
	policy_free(p);
	limits_free(l);
}

static void test_check_allowed(void **state)
{
	struct limits *l = parse("[thp]\nenabled = madvise,never\n[sched]\ngovernor = performance\n");
	struct nt_err err = { 0 };
	struct policy *p;

	(void)state;
	p = pol("[thp]\nenabled = never\n[sched]\ngovernor = performance\n");
	assert_int_equal(limits_check(l, p, NULL, &err), 0);
	policy_free(p);
	p = pol("[thp]\nenabled = always\n");
	assert_int_equal(limits_check(l, p, NULL, &err), -EPERM);
	assert_string_equal(err.msg, "p.conf:2: [thp] enabled = always is not one the site allows (madvise, never) "
			    "(limits.conf:2)");
	policy_free(p);
	p = pol("[sched]\ngovernor = powersave\n");
	assert_int_equal(limits_check(l, p, NULL, &err), -EPERM);
	assert_non_null(strstr(err.msg, "[sched] governor = powersave is not one the site allows (performance)"));
	policy_free(p);
	limits_free(l);
}

/* Every numeric and choice key has a direction, and nothing else has one. */
static void test_directions(void **state)
{
	(void)state;
	for (unsigned k = 0; k < KNOB_COUNT; k++) {
		enum limit_dir d = limits_direction((enum knob_id)k);

		switch (knob_table[k].type) {
		case KT_INT:
			if (d != LIMIT_CEILING && d != LIMIT_FLOOR)
				fail_msg("[%s] %s: a number with no ceiling or floor", knob_table[k].section,
					 knob_table[k].key);
			break;
		case KT_ENUM:
			if (d != LIMIT_ALLOWED)
				fail_msg("[%s] %s: a choice with no allowed set", knob_table[k].section,
					 knob_table[k].key);
			break;
		default:
			assert_int_equal(d, LIMIT_NONE);
		}
	}
	assert_int_equal(limits_direction(KNOB_SCHED_NICE), LIMIT_FLOOR);
	assert_int_equal(limits_direction(KNOB_SYSCTL_KERNEL_NMI_WATCHDOG), LIMIT_FLOOR);
	assert_int_equal(limits_direction(KNOB_SYSCTL_VM_SWAPPINESS), LIMIT_CEILING);
	assert_int_equal(limits_direction(KNOB_COUNT), LIMIT_NONE);
}

/* A node's memory counts for at most 2^50 bytes (1 PiB, so that the
 * product with the share cannot overflow): 15000 GiB is 1.4% of 1 PiB,
 * above a share of 1% of a node of 2 PiB less 1 GiB, or of 4 PiB. */
static void check_share_huge_nodes(void)
{
	struct topo_numa below = { .os_index = 0, .memory_bytes = (1ull << 51) - GIB };
	struct topo_numa above = { .os_index = 0, .memory_bytes = 1ull << 52 };
	struct topo t1 = { .numa = &below, .n_numa = 1 }, t2 = { .numa = &above, .n_numa = 1 };
	struct limits *l = parse("[hugetlb]\nshare = 1%\n");
	struct policy *p = pol("[hugetlb]\npages_1g = 15000\n");
	struct nt_err err = { 0 };

	assert_int_equal(limits_check(l, p, &t1, &err), -EPERM);
	assert_non_null(strstr(err.msg, "above the site limit share = 1% of its 2147482624 MiB"));
	assert_int_equal(limits_check(l, p, &t2, &err), -EPERM);
	assert_non_null(strstr(err.msg, "above the site limit share = 1% of its 4294967296 MiB"));
	policy_free(p);
	p = pol("[hugetlb]\npages_1g = 10000\n");       /* 0.95% of 1 PiB */
	assert_int_equal(limits_check(l, p, &t2, &err), 0);
	policy_free(p);
	limits_free(l);
}

static void test_check_share(void **state)
{
	struct topo_numa nodes[2] = { { .os_index = 0, .memory_bytes = 64 * GIB },
				      { .os_index = 1, .memory_bytes = 32 * GIB } };
	struct topo t = { .numa = nodes, .n_numa = 2 };
	struct topo unknown = { .numa = NULL, .n_numa = 0 };
	struct limits *l = parse("[hugetlb]\nshare = 25%\n");
	struct nt_err err = { 0 };
	struct policy *p;

	(void)state;
	/* 8 GiB per node: 25% of 32 GiB exactly */
	p = pol("[hugetlb]\npages_1g = 4\npages_2m = 2048\n");
	assert_int_equal(limits_check(l, p, &t, &err), 0);
	policy_free(p);
	/* 9 GiB: within node 0's 16, above node 1's 8 */
	p = pol("[hugetlb]\npages_1g = 9\n");
	assert_int_equal(limits_check(l, p, &t, &err), -EPERM);
	assert_string_equal(err.msg,
			    "p.conf:2: [hugetlb] pages reserve 9216 MiB on NUMA node 1, above the site limit share = 25% of its 32768 MiB (limits.conf:2)");
	/* a machine whose node memory is unknown cannot meet a share limit */
	assert_int_equal(limits_check(l, p, &unknown, &err), -EPERM);
	assert_non_null(strstr(err.msg, "cannot be checked"));
	assert_int_equal(limits_check(l, p, NULL, &err), -EPERM);
	policy_free(p);
	check_share_huge_nodes();
	/* no hugetlb pages asked: nothing to check */
	p = pol("[thp]\nenabled = never\n");
	assert_int_equal(limits_check(l, p, NULL, &err), 0);
	policy_free(p);
	limits_free(l);
}

static void test_load(void **state)
{
	struct nt_err err = { 0 };
	struct limits *l;
	char path[256];

	(void)state;
	snprintf(path, sizeof(path), "%s/limits.conf", dir);
	/* a named file must exist */
	assert_null(limits_load(path, 0, &err));
	assert_int_equal(err.code, -ENOENT);
	assert_int_equal(test_write(dir, "limits.conf", "[sysctl]\nvm.swappiness = 10\n"), 0);
	chmod(path, 0664);
	assert_null(limits_load(path, POLICY_TRUSTED_ONLY, &err));
	assert_int_equal(err.code, -EPERM);
	assert_non_null(strstr(err.msg, "refusing site limits writable by group or others"));
	l = limits_load(path, 0, &err);
	assert_non_null(l);
	assert_string_equal(l->path, path);
	assert_int_equal(l->knob[KNOB_SYSCTL_VM_SWAPPINESS].bound, 10);
	limits_free(l);
	assert_no_leak(20, limits_free(limits_load(path, 0, &err)));
	/* load and check in one step (the verbs', the daemon's and ab's) */
	{
		struct policy *p = pol("[sysctl]\nvm.swappiness = 100\n");

		assert_int_equal(limits_check_file(path, 0, p, NULL, &err), -EPERM);
		assert_non_null(strstr(err.msg, "[sysctl] vm.swappiness = 100 is above the site limit 10"));
		assert_no_leak(20, assert_int_equal(limits_check_file(path, 0, p, NULL, &err), -EPERM));
		assert_int_equal(limits_check_file(path, POLICY_TRUSTED_ONLY, p, NULL, &err), -EPERM);
		assert_non_null(strstr(err.msg, "writable by group or others"));
		assert_int_equal(limits_check_file("/nonexistent/limits.conf", 0, p, NULL, &err), -ENOENT);
		policy_free(p);
	}
	/* the default path: absent is no limits (on a host that has one, it loads) */
	if (access(LIMITS_DEFAULT_PATH, F_OK) == 0)
		test_skip_host("clean", "%s exists on this host: no 'absent' default to check", LIMITS_DEFAULT_PATH);
	l = limits_load(NULL, POLICY_TRUSTED_ONLY, &err);
	assert_non_null(l);
	assert_string_equal(l->path, "");
	for (unsigned k = 0; k < KNOB_COUNT; k++)
		assert_false(l->knob[k].set);
	limits_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_check_knobs),
		cmocka_unit_test(test_check_allowed),
		cmocka_unit_test(test_directions),
		cmocka_unit_test(test_check_share),
		cmocka_unit_test_setup_teardown(test_load, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
