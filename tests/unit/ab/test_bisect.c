/* SPDX-License-Identifier: MIT */
/* test_bisect.c — ddmin finds 1-minimal failing sets (single knobs and
 * interactions) with each subset tested once; the delta of two policies;
 * candidates that load back as the policy they describe. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ab/bisect.h"
#include "ab/bisect_test.h"
#include "machine/knob.h"
#include "tune/policy.h"
#include "tune/policy_test.h"
#include "test_util.h"

struct oracle {
	uint64_t needed;          /* fails when all of these are in the set */
	uint64_t untestable;      /* sets that meet this are unresolved */
	uint64_t seen[256];
	int n_seen;
	int calls;
	int abort_at;             /* return -EIO on this call (0: never) */
};

static int oracle(uint64_t set, void *arg)
{
	struct oracle *o = arg;

	o->calls++;
	for (int i = 0; i < o->n_seen; i++)
		assert_true(o->seen[i] != set);          /* memoized: never twice */
	o->seen[o->n_seen++] = set;
	if (o->abort_at && o->calls == o->abort_at)
		return -EIO;
	if (set & o->untestable)
		return BISECT_UNRESOLVED;
	return (set & o->needed) == o->needed ? BISECT_FAIL : BISECT_PASS;
}

static void test_ddmin(void **state)
{
	static const struct { int n; uint64_t needed; } cases[] = {
		{ 1, 0x1 }, { 2, 0x2 }, { 8, 1u << 5 }, { 8, (1u << 2) | (1u << 5) }, { 7, 0x7f },
		{ 13, (1u << 0) | (1u << 12) }, { 20, (1u << 3) | (1u << 9) | (1u << 17) }, { 64, 1ull << 63 },
	};
	uint64_t got;
	int tests;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct oracle o = { .needed = cases[i].needed };

		assert_int_equal(bisect_ddmin(cases[i].n, oracle, &o, &got, &tests), 0);
		assert_true(got == cases[i].needed);
		assert_int_equal(tests, o.calls);
	}
	/* one culprit among 16 is found in a logarithmic number of tests */
	{
		struct oracle o = { .needed = 1u << 11 };

		assert_int_equal(bisect_ddmin(16, oracle, &o, &got, &tests), 0);
		assert_true(got == 1u << 11);
		assert_true(tests <= 8);
	}
}

static void test_ddmin_unresolved_and_abort(void **state)
{
	struct oracle o = { .needed = 1u << 1, .untestable = 1u << 0 };
	uint64_t got = 0;
	int tests;

	(void)state;
	/* sets holding knob 0 cannot be tested: the answer is still found
	 * among the others */
	assert_int_equal(bisect_ddmin(6, oracle, &o, &got, &tests), 0);
	assert_true(got == 1u << 1);
	/* a test that fails to run stops the search with its error */
	o = (struct oracle){ .needed = 1u << 4, .abort_at = 2 };
	assert_int_equal(bisect_ddmin(6, oracle, &o, &got, &tests), -EIO);
	assert_int_equal(o.calls, 2);
}

static char *write_file(const char *dir, const char *name, const char *text)
{
	static char path[2][512];
	static int k;
	char *p = path[k++ % 2];
	FILE *f;

	snprintf(p, 512, "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return p;
}

static void test_delta_and_candidate(void **state)
{
	char dir[] = "/tmp/nodetune-test-bisect-XXXXXX", cand[600];
	struct nt_err err = { 0 };
	struct policy *good, *bad, *c;
	int idx[BISECT_MAX], n;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	good = policy_load(write_file(dir, "good.conf",
				      "[main]\nsummary = good\n[affinity]\nmode = numa\n[thp]\nenabled = madvise\n"
				      "[sysctl]\nvm.swappiness = 10\n"), 0, &err);
	assert_non_null(good);
	write_file(dir, "parent.conf", "[thp]\nenabled = madvise\ndefrag = never\n");
	bad = policy_load(write_file(dir, "bad.conf",
				     "[main]\nsummary = bad\ninclude = parent.conf\n[affinity]\nmode = gpu-local\n"
				     "[sched]\nnice = 5\n"), 0, &err);
	assert_non_null(bad);
	/* includes resolved; [main] and equal values are not deltas; a key
	 * set in one only is */
	n = bisect_delta(good, bad, idx);
	assert_int_equal(n, 4);
	assert_int_equal(idx[0], knob_find("affinity", "mode"));
	assert_int_equal(idx[1], knob_find("thp", "defrag"));
	assert_int_equal(idx[2], knob_find("sched", "nice"));
	assert_int_equal(idx[3], knob_find("sysctl", "vm.swappiness"));
	/* good + {mode, swappiness} from bad: swappiness becomes unset */
	snprintf(cand, sizeof(cand), "%s/cand.conf", dir);
	f = fopen(cand, "w");
	assert_non_null(f);
	assert_int_equal(bisect_write_candidate(f, good, bad, idx, n, 0x9), 0);
	assert_int_equal(fclose(f), 0);
	c = policy_load(cand, 0, &err);
	assert_non_null(c);
	assert_string_equal(policy_get(c, "affinity", "mode"), "gpu-local");
	assert_string_equal(policy_get(c, "thp", "enabled"), "madvise");
	assert_null(policy_get(c, "thp", "defrag"));
	assert_null(policy_get(c, "sched", "nice"));
	assert_null(policy_get(c, "sysctl", "vm.swappiness"));
	policy_free(c);
	/* the empty subset is the good policy; the full one the bad */
	for (int full = 0; full < 2; full++) {
		const struct policy *want = full ? bad : good;

		f = fopen(cand, "w");
		assert_int_equal(bisect_write_candidate(f, good, bad, idx, n, full ? 0xf : 0), 0);
		assert_int_equal(fclose(f), 0);
		c = policy_load(cand, 0, &err);
		assert_non_null(c);
		for (unsigned k = 0; k < knob_count; k++) {
			if (!strcmp(knob_table[k].section, "main"))
				continue;
			if (want->v[k].value)
				assert_string_equal(c->v[k].value, want->v[k].value);
			else
				assert_null(c->v[k].value);
		}
		policy_free(c);
	}
	policy_free(good);
	policy_free(bad);
	unlink(cand);
	unlink(write_file(dir, "good.conf", ""));
	unlink(write_file(dir, "bad.conf", ""));
	unlink(write_file(dir, "parent.conf", ""));
	assert_int_equal(rmdir(dir), 0);
}

/* The tests of one bisection share its alpha: the levels fall with the test
 * number and their sum never exceeds it. */
static void test_alpha_spending(void **state)
{
	double sum = 0;

	(void)state;
	assert_true(fabs(bisect_alpha(0.05, 1) - 0.05 * 6 / (M_PI * M_PI)) < 1e-12);
	for (int k = 1; k <= 100000; k++) {
		double a = bisect_alpha(0.05, k);

		assert_true(a > 0);
		if (k > 1)
			assert_true(a < bisect_alpha(0.05, k - 1));
		sum += a;
	}
	assert_true(sum <= 0.05);
	assert_true(sum > 0.0499);             /* and it is spent, not wasted */
}

/* The trial runner's set-up: the delta, the good arm, regression-only
 * A/Bs, the bisection's alpha kept; the knob list it says progress with. */
static void test_run_init_and_knob_list(void **state)
{
	char dir[] = "/tmp/nodetune-test-bisect-XXXXXX", buf[256], *good_path;
	struct ab_config cfg = { .alpha = 0.05 };
	struct bisect_run b = { 0 };
	struct nt_err err = { 0 };
	struct policy *good, *bad;

	(void)state;
	assert_non_null(mkdtemp(dir));
	good_path = strdup(write_file(dir, "good.conf", "[thp]\nenabled = madvise\n[sched]\nnice = 0\n"));
	good = policy_load(good_path, 0, &err);
	bad = policy_load(write_file(dir, "bad.conf", "[thp]\nenabled = always\n[sched]\nnice = 5\n"), 0, &err);
	assert_non_null(good);
	assert_non_null(bad);
	assert_int_equal(bisect_run_init(&b, &cfg, good_path, good, bad, &err), 0);
	assert_int_equal(b.n, 2);
	assert_string_equal(cfg.arm[0].policy, good_path);
	assert_true(cfg.regression_only);
	assert_true(b.alpha == 0.05);
	assert_int_equal(json_array_size(b.log), 0);
	bisect_knob_list(buf, sizeof(buf), b.idx, b.n, ~0ull);
	assert_string_equal(buf, "thp.enabled, sched.nice");
	bisect_knob_list(buf, sizeof(buf), b.idx, b.n, 0x2);
	assert_string_equal(buf, "sched.nice");
	bisect_knob_list(buf, sizeof(buf), b.idx, b.n, 0);
	assert_string_equal(buf, "");
	bisect_run_release(&b);
	bisect_run_release(&b);    /* twice: a no-op */
	ab_arm_release(&cfg.arm[0]);
	policy_free(good);
	policy_free(bad);
	free(good_path);
	test_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ddmin),
		cmocka_unit_test(test_alpha_spending),
		cmocka_unit_test(test_ddmin_unresolved_and_abort),
		cmocka_unit_test(test_delta_and_candidate),
		cmocka_unit_test(test_run_init_and_knob_list),
	};

	return cmocka_run_group_tests_name("bisect", tests, NULL, NULL);
}
