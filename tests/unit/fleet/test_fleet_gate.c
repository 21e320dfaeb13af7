/* SPDX-License-Identifier: MIT */
/* test_fleet_gate.c — the gate's verdict as the A/B prints it (fleet_gate.h):
 * parsed strictly; an error verdict is -EIO.  A gate needs a job and a trial
 * dir; a trial dir a dead daemon left is removed (its journal reverted:
 * test_fleet.sh, on a live host). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "fleet/fleet_gate.h"

static void test_gate_parse(void **state)
{
	struct fleet_gate_result g;
	struct nt_err err = { 0 };
	const char *s = "{\"verdict\":\"regression\",\"ratio\":0.8,\"ci_low\":0.75,\"ci_high\":0.85,"
			"\"explanations\":[{\"counter\":\"thp_fault_alloc\",\"mechanism\":\"THP faults\"}]}";

	(void)state;
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), 0);
	assert_string_equal(g.verdict, "regression");
	assert_true(g.ci_lo > 0.74 && g.ci_hi < 0.86);
	assert_string_equal(g.explanation, "thp_fault_alloc (THP faults)");
	assert_int_equal(fleet_gate_parse("[]", 2, &g, &err), -EINVAL);
	s = "{\"verdict\":\"error\",\"error\":\"no such command\"}";
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), -EIO);
}

static void test_gate_start_refuses(void **state)
{
	struct fleet_gate_request q = { "a.conf", "b.conf", NULL, "nobody", 10, NULL, NULL, "/nonexistent/gate", NULL, NULL };
	char *argv[] = { "/bin/true", NULL };
	struct fleet_gate *g = NULL;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(fleet_gate_start(&q, &g, &err), -EINVAL);     /* no job */
	assert_null(g);
	q.argv = argv;
	q.trial_dir = NULL;
	assert_int_equal(fleet_gate_start(&q, &g, &err), -EINVAL);     /* no trial dir */
	assert_null(g);
	assert_int_equal(fleet_gate_fd(NULL), -1);
	fleet_gate_free(NULL);
}

static void test_gate_recover(void **state)
{
	char dir[] = "/tmp/test-fleet-gate-XXXXXX", sub[64], f[96];
	struct nt_err err = { 0 };
	struct stat st;
	FILE *fp;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/gate", dir);
	assert_int_equal(fleet_gate_recover(sub, NULL, 0, &err), 0);    /* none: nothing */
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(f, sizeof(f), "%s/trial-000-A.out", sub);
	assert_non_null(fp = fopen(f, "w"));
	fclose(fp);
	assert_int_equal(fleet_gate_recover(sub, NULL, 0, &err), 0);    /* no journal: removed */
	assert_int_equal(lstat(sub, &st), -1);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate_parse),
		cmocka_unit_test(test_gate_start_refuses),
		cmocka_unit_test(test_gate_recover),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
