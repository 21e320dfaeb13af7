/* SPDX-License-Identifier: MIT */
/* test_sdunit.c — transient services: the names taken, the own unit as an
 * outside probe sees it (/run/systemd/system and /proc/self/cgroup), and the
 * refusals that come before the bus.  Starting and stopping a real unit
 * needs systemd as PID 1: tests/integration/test_systemd.sh does it in a
 * container booted with systemd. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"
#include <unistd.h>

#include "tune/sdunit.h"

static void test_names(void **state)
{
	(void)state;
	assert_true(sdunit_name_valid("nodetune-gate-r1.service"));
	assert_true(sdunit_name_valid("a@b:c_d.e.service"));
	assert_false(sdunit_name_valid(NULL));
	assert_false(sdunit_name_valid(".service"));
	assert_false(sdunit_name_valid("x.scope"));
	assert_false(sdunit_name_valid("x y.service"));
	assert_false(sdunit_name_valid("x/../y.service"));
	assert_false(sdunit_name_valid("x.service.service\n"));
	assert_false(sdunit_name_valid(".hidden.service"));
}

/* The probe: systemd is PID 1 (its runtime dir) and this process's cgroup
 * (the name=systemd or unified line) ends in ".service". */
static int probe_in_service(void)
{
	char line[4096];
	int in = 0;
	FILE *f;

	if (access("/run/systemd/system", F_OK) < 0 || !(f = fopen("/proc/self/cgroup", "r")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = '\0';
		if ((!strncmp(line, "0::", 3) || strstr(line, ":name=systemd:")) && n > 8 &&
		    !strcmp(line + n - 8, ".service"))
			in = 1;
	}
	fclose(f);
	return in;
}

static void test_own(void **state)
{
	char buf[SDUNIT_NAME_MAX];

	(void)state;
	if (probe_in_service())
		test_skip_host("outside-service", "this test runs inside a systemd service, whose bus may answer (test_systemd.sh covers a real one)");
	assert_false(sdunit_own(buf, sizeof(buf)));
}

static void test_refused_before_the_bus(void **state)
{
	char *argv[] = { "/bin/true", NULL }, *rel[] = { "true", NULL };
	struct sdunit_spec s = { .name = "bad name.service", .argv = argv, .stdout_fd = -1, .stderr_fd = -1 };
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(sdunit_start(&s, &err), -EINVAL);
	assert_string_equal(err.msg, "'bad name.service' is not a service's name");
	s.name = "nodetune-x.service";
	s.argv = rel;
	assert_int_equal(sdunit_start(&s, &err), -EINVAL);
	assert_string_equal(err.msg, "unit nodetune-x.service: its command must be an absolute path");
	assert_int_equal(sdunit_stop("../x", 1, &err), -EINVAL);
	if (access("/run/systemd/system", F_OK) == 0)
		return;   /* a system bus may be there: nothing more to refuse here */
	s.argv = argv;
	assert_int_equal(sdunit_start(&s, &err), -ENOTCONN);
	assert_int_equal(sdunit_stop("nodetune-x.service", 1, &err), -ENOTCONN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_own),
		cmocka_unit_test(test_refused_before_the_bus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
