/* test_fleet_gate.c — the gate's verdict as the A/B prints it (fleet_gate.h):
 * parsed strictly; an error verdict is -EIO. */
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


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
