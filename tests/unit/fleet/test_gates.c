/* SPDX-License-Identifier: MIT */
/* test_gates.c — named gates: the file's syntax (an argv, never a shell
 * string), lookup by strict name, an unknown name as its own error, the
 * trust rule and the user (never root). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pwd.h>
#include <unistd.h>

#include "base/stats.h"
#include "fleet/gates.h"
#include "fleet/gates_test.h"
#include "test_util.h"

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

static void expect_bad(const char *text, const char *want)
{
	struct gate g = { 0 };
	struct nt_err err = { 0 };

	assert_int_equal(gates_parse(text, strlen(text), "g.conf", &g, &err), -EINVAL);
	if (!strstr(err.msg, want))
		fail_msg("got '%s', expected '%s'", err.msg, want);
	assert_null(g.argv[0]);
}

static void test_names(void **state)
{
	char long_name[70];

	(void)state;
	assert_true(gates_name_valid("steps20"));
	assert_true(gates_name_valid("a_b-c"));
	assert_false(gates_name_valid(""));
	assert_false(gates_name_valid("Steps"));
	assert_false(gates_name_valid("../x"));
	assert_false(gates_name_valid("a b"));
	assert_false(gates_name_valid("a.conf"));
	memset(long_name, 'a', 65);
	long_name[65] = '\0';
	assert_false(gates_name_valid(long_name));
	long_name[64] = '\0';
	assert_true(gates_name_valid(long_name));
}

static void test_parse(void **state)
{
	static const char text[] = "# gate\ncommand = /usr/bin/nodetune-harness\narg = --steps\narg = 20\n"
				   "arg = a b; rm -rf /\nuser = daemon\nbudget = 120\n";
	struct nt_err err = { 0 };
	struct gate g;

	(void)state;
	assert_int_equal(gates_parse(text, sizeof(text) - 1, "g.conf", &g, &err), 0);
	assert_int_equal(g.argc, 4);
	assert_string_equal(g.argv[0], "/usr/bin/nodetune-harness");
	assert_string_equal(g.argv[1], "--steps");
	assert_string_equal(g.argv[2], "20");
	assert_string_equal(g.argv[3], "a b; rm -rf /");   /* one argument, never a shell */
	assert_null(g.argv[4]);
	assert_string_equal(g.user, "daemon");
	assert_true(g.budget_s == 120.0);
	gates_release(&g);
	/* defaults */
	assert_int_equal(gates_parse("command = /bin/true\n", 20, "g.conf", &g, &err), 0);
	assert_int_equal(g.argc, 1);
	assert_string_equal(g.user, GATE_DEFAULT_USER);
	assert_true(g.budget_s == GATE_DEFAULT_BUDGET_S);
	gates_release(&g);
	/* the budget is a duration: a unit, or seconds */
	assert_int_equal(gates_parse("command = /bin/true\nbudget = 2m\n", 32, "g.conf", &g, &err), 0);
	assert_true(g.budget_s == 120.0);
	gates_release(&g);
	assert_int_equal(gates_parse("command = /bin/true\nbudget = 1.5\n", 33, "g.conf", &g, &err), 0);
	assert_true(g.budget_s == 1.5);
	assert_true(g.alpha == 0);                     /* unset: ab's default */
	gates_release(&g);
	/* alpha: the A/B's false-alarm rate, ab's bounds */
	assert_int_equal(gates_parse("command = /bin/true\nalpha = 0.005\n", 34, "g.conf", &g, &err), 0);
	assert_true(g.alpha == 0.005);
	gates_release(&g);
	assert_int_equal(gates_parse("command = /bin/true\nalpha = 1e-6\n", 33, "g.conf", &g, &err), 0);
	assert_true(g.alpha == STATS_ALPHA_MIN);
	gates_release(&g);
	assert_int_equal(gates_parse("command = /bin/true\nalpha = 0.5\n", 32, "g.conf", &g, &err), 0);
	assert_true(g.alpha == STATS_ALPHA_MAX);
	gates_release(&g);
}

static void test_parse_refusals(void **state)
{
	char many[64 * 10 + 64] = "command = /bin/true\n";

	(void)state;
	expect_bad("arg = 1\n", "g.conf: no 'command = /path' line");
	expect_bad("command = true\n", "g.conf:1: command 'true': expected an absolute path");
	expect_bad("command = /bin/a\ncommand = /bin/b\n", "g.conf:2: duplicate key 'command' (first set at line 1)");
	expect_bad("command = /bin/a\nuser = 0day\n", "g.conf:2: user '0day'");
	expect_bad("command = /bin/a\nuser = a b\n", "g.conf:2: user 'a b'");
	expect_bad("command = /bin/a\nbudget = 0\n", "g.conf:2: budget '0'");
	expect_bad("command = /bin/a\nbudget = 3601\n",
		   "g.conf:2: budget '3601': expected a duration from 1s to 1h (e.g. 30s, 5m, 1h; a bare number counts seconds)");
	expect_bad("command = /bin/a\nbudget = 2h\n", "g.conf:2: budget '2h': expected a duration from 1s to 1h");
	expect_bad("command = /bin/a\nbudget = 5 m\n", "g.conf:2: budget '5 m'");
	expect_bad("command = /bin/a\nalpha = 0\n", "g.conf:2: alpha '0': expected a probability from 1e-06 to 0.5");
	expect_bad("command = /bin/a\nalpha = 0.51\n", "g.conf:2: alpha '0.51': expected a probability");
	expect_bad("command = /bin/a\nalpha = 5%\n", "g.conf:2: alpha '5%'");
	expect_bad("command = /bin/a\nalpha = nan\n", "g.conf:2: alpha 'nan'");
	expect_bad("command = /bin/a\nalpha = \n", "g.conf:2: alpha ''");
	expect_bad("command = /bin/a\nalpha = 0.01\nalpha = 0.02\n", "g.conf:3: duplicate key 'alpha' (first set at line 2)");
	expect_bad("command = /bin/a\ncmd = sh -c x\n", "g.conf:2: unknown key 'cmd' (command, arg, user, budget, alpha)");
	expect_bad("[gate]\ncommand = /bin/a\n", "g.conf:2: a gate file has no [sections]");
	expect_bad("command = /bin/a\narg = \x1b[31m\n", "g.conf:2: control character 0x1b");
	for (int i = 0; i < 64; i++)
		strcat(many, "arg = x\n");
	expect_bad(many, "more than 63 arguments");
}

static const char *put(const char *name, const char *content, mode_t mode)
{
	static char path[256];

	assert_int_equal(test_write(dir, name, content), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	chmod(path, mode);
	return path;
}

static void test_lookup(void **state)
{
	struct nt_err err = { 0 };
	struct gate g = { 0 };
	const char *path;

	(void)state;
	chmod(dir, 0755);
	put("steps.conf", "command = /bin/true\narg = 1\n", 0644);
	if (!getpwnam(GATE_DEFAULT_USER))
		test_skip_host("user-nobody", "no user %s on this host", GATE_DEFAULT_USER);
	assert_int_equal(gates_lookup(dir, "steps", GATES_TRUSTED_ONLY * (geteuid() == 0), &g, &err), 0);
	assert_string_equal(g.name, "steps");
	assert_int_equal(g.uid, getpwnam(GATE_DEFAULT_USER)->pw_uid);
	gates_release(&g);
	/* an unknown name is its own error; a malformed one never reaches the file system */
	assert_int_equal(gates_lookup(dir, "nosuch", 0, &g, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "unknown gate 'nosuch'"));
	assert_int_equal(gates_lookup(dir, "../steps", 0, &g, &err), -EINVAL);
	assert_int_equal(gates_lookup("/nonexistent-nodetune", "steps", 0, &g, &err), -ENOENT);
	/* the user: never root, and one that exists */
	put("root.conf", "command = /bin/true\nuser = root\n", 0644);
	assert_int_equal(gates_lookup(dir, "root", 0, &g, &err), -EPERM);
	assert_non_null(strstr(err.msg, "a gate never runs as root"));
	put("ghost.conf", "command = /bin/true\nuser = nodetune-no-such-user\n", 0644);
	assert_int_equal(gates_lookup(dir, "ghost", 0, &g, &err), -ESRCH);
	assert_null(g.argv[0]);
	/* the trust rule: a writable file, a writable directory */
	path = put("ww.conf", "command = /bin/true\n", 0666);
	assert_int_equal(gates_lookup(dir, "ww", GATES_TRUSTED_ONLY, &g, &err), -EPERM);
	assert_non_null(strstr(err.msg, "refusing a gate writable by group or others"));
	chmod(path, 0644);
	chmod(dir, 0777);
	assert_int_equal(gates_lookup(dir, "ww", GATES_TRUSTED_ONLY, &g, &err), -EPERM);
	assert_non_null(strstr(err.msg, "refusing a gates directory"));
	chmod(dir, 0700);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test_setup_teardown(test_lookup, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
