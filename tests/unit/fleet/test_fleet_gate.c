/* SPDX-License-Identifier: MIT */
/* test_fleet_gate.c — the gate's verdict as the A/B prints it (fleet_gate.h):
 * parsed strictly; an error verdict is -EIO; the report's schema is the one
 * abreport_json writes (the contract's two sides: abreport.h, fleet_gate.h).  A gate needs a job and a trial
 * dir; a trial dir a dead daemon left is removed (its journal reverted:
 * test_fleet_hold.sh, on a live host). */
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
#include "fleet/fleet_gate_test.h"
#include "ab/abreport.h"

static void test_gate_parse(void **state)
{
	struct fleet_gate_result g;
	struct nt_err err = { 0 };
	const char *s = "{\"schema\":\"nodetune.ab/1\",\"verdict\":\"regression\",\"ratio\":0.8,\"ci_low\":0.75,\"ci_high\":0.85,"
			"\"explanations\":[{\"counter\":\"thp_fault_alloc\",\"mechanism\":\"THP faults\"}]}";

	(void)state;
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), 0);
	assert_string_equal(g.verdict, "regression");
	assert_true(g.ci_lo > 0.74 && g.ci_hi < 0.86);
	assert_string_equal(g.explanation, "thp_fault_alloc (THP faults)");
	assert_int_equal(fleet_gate_parse("[]", 2, &g, &err), -EINVAL);
	s = "{\"schema\":\"nodetune.ab/1\",\"verdict\":\"error\",\"error\":\"no such command\"}";
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), -EIO);
	s = "{\"verdict\":\"improvement\",\"ratio\":1.2}";                           /* no schema */
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), -EINVAL);
	s = "{\"schema\":\"nodetune.ab/2\",\"verdict\":\"improvement\",\"ratio\":1.2}";  /* another version */
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "nodetune.ab/2"));
}

/* What ab writes (abreport_json) is what the gate reads: the contract pinned
 * on both sides, a regression with an explanation and an arm's error. */
static void test_gate_reads_abreport(void **state)
{
	struct ab_config cfg = { 0 };
	static struct ab_result res;
	struct fleet_gate_result g;
	struct nt_err err = { 0 };
	json_t *doc;
	char *s;

	(void)state;
	assert_string_equal(ABREPORT_SCHEMA, FLEET_GATE_AB_SCHEMA);
	cfg.threshold = 0.02;
	res.verdict = VERDICT_REGRESSION;
	res.ratio = 0.8, res.ci_lo = 0.75, res.ci_hi = 0.85;
	res.expl[0] = (struct ab_explanation){ .counter = "thp_fault_alloc", .mechanism = "THP faults", .unit = "per s",
					       .moved = true, .claimed = true, .share = 0.5 };
	res.n_expl = 1;
	assert_non_null(doc = abreport_json(&cfg, &res));
	assert_non_null(s = json_dumps(doc, 0));
	json_decref(doc);
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), 0);
	free(s);
	assert_string_equal(g.verdict, "regression");
	assert_true(g.ratio > 0.79 && g.ratio < 0.81 && g.ci_lo > 0.74 && g.ci_hi < 0.86);
	assert_string_equal(g.explanation, "thp_fault_alloc (THP faults)");
	res.error = true;
	snprintf(res.error_msg, sizeof(res.error_msg), "arm A failed");
	assert_non_null(doc = abreport_json(&cfg, &res));
	assert_non_null(s = json_dumps(doc, 0));
	json_decref(doc);
	assert_int_equal(fleet_gate_parse(s, strlen(s), &g, &err), -EIO);
	assert_non_null(strstr(err.msg, "arm A failed"));
	free(s);
}

static void test_gate_start_refuses(void **state)
{
	struct fleet_gate_request q = { "a.conf", "b.conf", NULL, "nobody", 10, NULL, NULL, "/nonexistent/gate", NULL, NULL,
					0 };
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
		cmocka_unit_test(test_gate_reads_abreport),
		cmocka_unit_test(test_gate_start_refuses),
		cmocka_unit_test(test_gate_recover),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
