/* test_ab.c — the A/B set-up the verbs share: the defaults (the one copy),
 * the default command of the arms that name none, the trial files, and the
 * counters' rows. */
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

/* Every counter is one whole row, found by its enum: a name no other
 * counter has, a mechanism, a source that says who reads it (the host's
 * rows the engine's, the trial's the watch's), a perf event for a perf
 * counter, and an A/A floor above 0. */
static void test_counter_rows(void **state)
{
	(void)state;
	for (int c = 0; c < AB_COUNTERS; c++) {
		const struct abwatch_row *r = ab_counter_row(c);

		assert_non_null(r);
		assert_true(r->name && r->name[0] && r->mechanism && r->mechanism[0] && r->unit);
		assert_true(r->floor > 0);
		assert_int_equal(r->source == ABWATCH_SRC_HOST, c < AB_C_TRIAL_FIRST);
		if (r->source == ABWATCH_SRC_PERF)
			assert_true(r->perf >= 0 && r->perf < TCG_PERF_N);
		for (int d = 0; d < c; d++)
			assert_string_not_equal(ab_counter_row(d)->name, r->name);
	}
	assert_ptr_equal(ab_counter_row(AB_C_TRIAL_FIRST + ABWATCH_CG_FAULTS), &abwatch_rows[ABWATCH_CG_FAULTS]);
	assert_string_equal(ab_counter_row(AB_C_CPU_PRESSURE_MS)->name, "cpu_pressure_ms");
	assert_null(ab_counter_row(AB_COUNTERS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_default_command),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_counter_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
