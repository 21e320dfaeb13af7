/* test_journal.c — the crash-safe journal: format, lock, torn lines. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "journal.h"
#include "test_util.h"

static void test_escape_roundtrip(void **state)
{
	static const char *const cases[] = {
		"", "plain", "always [madvise] never\n", "tab\there", "100%", "\x01\x1f\x7f", "a\nb\nc\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *e = journal_escape(cases[i]), *u = journal_unescape(e);

		assert_null(strchr(e, '\t'));
		assert_null(strchr(e, '\n'));
		assert_string_equal(u, cases[i]);
		free(e);
		free(u);
	}
	assert_null(journal_unescape("%0"));
	assert_null(journal_unescape("%zz"));
	assert_null(journal_unescape("%00"));
}

static void test_write_read(void **state)
{
	char dir[64];
	struct nt_err err = { 0 };
	struct journal_state st;
	struct journal *j;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	strcat(dir, "/state");
	j = journal_open(dir, &err);
	assert_non_null(j);
	assert_false(journal_exists(j));
	assert_int_equal(journal_read(j, &st, &err), -ENOENT);
	assert_int_equal(journal_begin(j, "/tmp/root dir", "p.conf", &err), 0);
	assert_int_equal(journal_begin(j, "/", "p.conf", &err), -EEXIST);
	assert_non_null(strstr(err.msg, "run `nodetune revert` first"));
	assert_int_equal(journal_record(j, JE_FILE, "sys/a", "madvise", "always [madvise] never\n", &err), 0);
	assert_int_equal(journal_record(j, JE_FILE, "proc/empty", "", "", &err), 0);
	assert_int_equal(journal_record(j, JE_CGROUP, "job", NULL, NULL, &err), 0);
	assert_int_equal(journal_read(j, &st, &err), 0);
	assert_string_equal(st.root, "/tmp/root dir");
	assert_string_equal(st.policy, "p.conf");
	assert_int_equal(st.pid, getpid());
	assert_false(st.committed);
	assert_int_equal(st.n, 3);
	assert_int_equal(st.entries[0].kind, JE_FILE);
	assert_string_equal(st.entries[0].raw, "always [madvise] never\n");
	assert_string_equal(st.entries[1].b, "");   /* empty fields survive */
	assert_int_equal(st.entries[2].kind, JE_CGROUP);
	assert_string_equal(st.entries[2].a, "job");
	journal_state_release(&st);
	assert_int_equal(journal_commit(j, &err), 0);
	assert_int_equal(journal_read(j, &st, &err), 0);
	assert_true(st.committed);
	journal_state_release(&st);
	assert_int_equal(journal_remove(j, &err), 0);
	assert_false(journal_exists(j));
	journal_close(j);
	journal_close(NULL);
	dir[strlen(dir) - 6] = '\0';
	test_rmrf(dir);
}

static void test_lock(void **state)
{
	char dir[64];
	struct nt_err err = { 0 };
	struct journal *a, *b;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	a = journal_open(dir, &err);
	assert_non_null(a);
	b = journal_open(dir, &err);   /* a second open file description: refused */
	assert_null(b);
	assert_int_equal(err.code, -EBUSY);
	assert_non_null(strstr(err.msg, "another nodetune is applying or reverting"));
	journal_close(a);
	b = journal_open(dir, &err);
	assert_non_null(b);
	journal_close(b);
	test_rmrf(dir);
}

static void test_torn_and_corrupt(void **state)
{
	char dir[64];
	struct nt_err err = { 0 };
	struct journal_state st;
	struct journal *j;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	/* the process died while appending its second entry */
	test_write(dir, "journal", "nodetune-journal 1\troot\t/\tpolicy\tp\tpid\t1\nfile\tsys/a\tx\tx%0A\nfile\tsys/b\ty");
	j = journal_open(dir, &err);
	assert_int_equal(journal_read(j, &st, &err), 0);
	assert_int_equal(st.n, 1);
	assert_string_equal(st.entries[0].a, "sys/a");
	journal_state_release(&st);

	test_write(dir, "journal", "nodetune-journal 1\troot\t/\tpolicy\tp\tpid\t1\nrm -rf /\n");
	assert_int_equal(journal_read(j, &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "journal:2: corrupt journal line"));
	test_write(dir, "journal", "something else\n");
	assert_int_equal(journal_read(j, &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "journal:1:"));
	journal_close(j);
	test_rmrf(dir);
}

static void test_unwritable_state_dir(void **state)
{
	struct nt_err err = { 0 };

	(void)state;
	assert_null(journal_open("/proc/nodetune-cannot-be-here", &err));
	assert_non_null(strstr(err.msg, "state directory /proc/nodetune-cannot-be-here"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_roundtrip),
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_torn_and_corrupt),
		cmocka_unit_test(test_unwritable_state_dir),
	};

	return cmocka_run_group_tests_name("journal", tests, NULL, NULL);
}
