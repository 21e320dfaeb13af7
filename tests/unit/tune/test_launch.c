/* SPDX-License-Identifier: MIT */
/* test_launch.c — the launchers' environment (precedence, checked numbers,
 * SLURM_TASKS_PER_NODE's "2(x3),1"), the PATH look-up, a failed exec's
 * exit status, and run's launcher: N ranks with LOCAL_RANK and
 * LOCAL_WORLD_SIZE, the worst status. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tune/launch.h"
#include "tune/policy.h"
#include "machine/topo.h"
#include "test_util.h"

static const char *const env_names[] = {
	"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
	"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", NULL,
};

static int clear_env(void **state)
{
	(void)state;
	for (int i = 0; env_names[i]; i++)
		unsetenv(env_names[i]);
	return 0;
}

static void test_local_rank_precedence(void **state)
{
	struct nt_err err = { 0 };
	const char *name = "untouched";
	unsigned v = 77;

	(void)state;
	assert_int_equal(launch_local_rank(&v, &name, &err), 0);
	assert_int_equal(v, 77);
	assert_string_equal(name, "untouched");
	setenv("LOCAL_RANK", "3", 1);
	setenv("SLURM_LOCALID", "2", 1);
	assert_int_equal(launch_local_rank(&v, &name, &err), 1);
	assert_int_equal(v, 2);
	assert_string_equal(name, "SLURM_LOCALID");
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "4096", 1);
	assert_int_equal(launch_local_rank(&v, &name, &err), -EINVAL);
	assert_string_equal(err.msg, "OMPI_COMM_WORLD_LOCAL_RANK='4096': expected a whole number from 0 to 4095");
	assert_int_equal(v, 2);
}

static void test_local_size(void **state)
{
	struct nt_err err = { 0 };
	const char *name = NULL;
	unsigned v = 0;

	(void)state;
	setenv("SLURM_TASKS_PER_NODE", "2(x3),1", 1);
	assert_int_equal(launch_local_size(&v, &name, &err), 1);
	assert_int_equal(v, 2);
	assert_string_equal(name, "SLURM_TASKS_PER_NODE");
	setenv("LOCAL_WORLD_SIZE", "0", 1);
	assert_int_equal(launch_local_size(&v, &name, &err), -EINVAL);
	setenv("LOCAL_WORLD_SIZE", "8x", 1);
	assert_int_equal(launch_local_size(&v, &name, &err), -EINVAL);
	setenv("LOCAL_WORLD_SIZE", "8", 1);
	assert_int_equal(launch_local_size(&v, &name, &err), 1);
	assert_int_equal(v, 8);
}

static void test_command_found(void **state)
{
	char *path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;

	(void)state;
	assert_true(launch_command_found("sh"));
	assert_true(launch_command_found("/bin/sh"));
	assert_false(launch_command_found("/nonexistent/sh"));
	assert_false(launch_command_found("nodetune-no-such-command"));
	setenv("PATH", "/nonexistent:/bin", 1);
	assert_true(launch_command_found("sh"));
	setenv("PATH", "/nonexistent", 1);
	assert_false(launch_command_found("sh"));
	if (path)
		setenv("PATH", path, 1);
	free(path);
}

/* A plan for n unbound ranks on a small synthetic machine. */
static struct plan *unbound_plan(unsigned n)
{
	char dir[64], path[128];
	struct nt_err err = { 0 };
	struct policy *p;
	struct topo *t;
	struct plan *pl = NULL;

	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	test_write(dir, "p.conf", "[affinity]\nmode = none\nhousekeeping = none\n");
	snprintf(path, sizeof(path), "%s/p.conf", dir);
	p = policy_load(path, 0, &err);
	t = topo_load_synthetic("pack:1 numa:1 core:4 pu:1", &err);
	if (p && t)
		pl = plan_build(p, t, n, NULL, &err);
	if (!pl)
		fail_msg("%s", err.msg);
	policy_free(p);
	topo_free(t);
	test_rmrf(dir);
	return pl;
}

static void count_note(int level, const char *msg, void *arg)
{
	(void)level, (void)msg;
	(*(int *)arg)++;
}

static void test_exec_not_found(void **state)
{
	struct plan *pl = unbound_plan(1);
	char *cmd[] = { "/nonexistent/cmd", NULL };
	struct nt_err err = { 0 };
	int status = -1, notes = 0;

	(void)state;
	assert_int_equal(launch_bind_and_exec(pl, 0, cmd, count_note, &notes, &status, &err), -ENOENT);
	assert_int_equal(status, LAUNCH_EXIT_USAGE);
	assert_string_equal(err.msg, "/nonexistent/cmd: no such file or directory");
	plan_free(pl);
}

static void test_ranks_worst_status(void **state)
{
	struct plan *pl = unbound_plan(3);
	/* rank i exits with 10 + i, and checks its environment first */
	char *cmd[] = { "sh", "-c", "[ \"$LOCAL_WORLD_SIZE\" = 3 ] || exit 99; exit $((10 + LOCAL_RANK))", NULL };
	struct nt_err err = { 0 };
	int worst = -1, notes = 0;

	(void)state;
	assert_int_equal(launch_ranks(pl, cmd, count_note, &notes, &worst, &err), 0);
	assert_int_equal(worst, 12);
	assert_int_equal(notes, 3);    /* one per rank that ended with a status */
	plan_free(pl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_local_rank_precedence, clear_env),
		cmocka_unit_test_setup(test_local_size, clear_env),
		cmocka_unit_test(test_command_found),
		cmocka_unit_test(test_exec_not_found),
		cmocka_unit_test(test_ranks_worst_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
