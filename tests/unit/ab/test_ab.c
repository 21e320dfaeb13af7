/* test_ab.c — the A/B set-up the verbs share: the defaults (the one copy),
 * the default command of the arms that name none, and the trial files. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ab/ab.h"
#include "test_util.h"

static void test_defaults(void **state)
{
	struct ab_config cfg = { 0 };

	(void)state;
	ab_config_defaults(&cfg);
	assert_int_equal(cfg.trials, 8);
	assert_int_equal(cfg.skip_steps, 1);
	assert_int_equal(cfg.steps, 30);
	assert_int_equal(cfg.warmup, 3);
	assert_int_equal(cfg.batch, 2048);
	assert_true(cfg.threshold == 0.02);
	assert_true(cfg.alpha == 0.05);
	assert_true(cfg.budget_s == 300);
	assert_int_equal(cfg.seed, 1);
	assert_null(cfg.arm[0].policy);
	assert_null(cfg.work_dir);
}

static void test_default_command(void **state)
{
	struct ab_config cfg = { 0 };
	struct nt_err err = { 0 };
	char *cmd[] = { "sleep", "1", NULL };

	(void)state;
	assert_int_equal(ab_parse_spec("cmd=true", &cfg.arm[0], &err), 0);
	assert_int_equal(ab_parse_spec("policy=/p.conf", &cfg.arm[1], &err), 0);
	assert_int_equal(ab_default_command(&cfg, NULL), 0);
	assert_null(cfg.arm[1].argv[0]);
	assert_int_equal(ab_default_command(&cfg, cmd), 0);
	assert_string_equal(cfg.arm[0].argv[0], "true");      /* named its own */
	assert_null(cfg.arm[0].argv[1]);
	assert_string_equal(cfg.arm[1].argv[0], "sleep");
	assert_string_equal(cfg.arm[1].argv[1], "1");
	assert_null(cfg.arm[1].argv[2]);
	ab_arm_release(&cfg.arm[0]);
	ab_arm_release(&cfg.arm[1]);
}

static void test_files(void **state)
{
	struct ab_config cfg = { 0 };
	struct ab_files f;
	struct nt_err err = { 0 };
	char path[128];
	struct stat st;

	(void)state;
	assert_int_equal(ab_files_make(&f, "nodetune-test-ab", &cfg, &err), 0);
	assert_ptr_equal(cfg.work_dir, f.work);
	assert_ptr_equal(cfg.state_dir, f.state);
	assert_int_equal(strncmp(f.work, "/tmp/nodetune-test-ab-", 22), 0);
	assert_int_equal(stat(f.work, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	snprintf(path, sizeof(path), "%s/state", f.work);
	assert_string_equal(f.state, path);
	assert_non_null(strstr(cfg.harness, "nodetune-harness"));
	test_write(f.work, "state/journal", "x\n");
	ab_files_remove(f.work);
	assert_int_equal(stat(f.work, &st), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_default_command),
		cmocka_unit_test(test_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
