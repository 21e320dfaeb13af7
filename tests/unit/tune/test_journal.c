/* SPDX-License-Identifier: MIT */
/* test_journal.c — the crash-safe journal: format, lock, torn lines; the
 * parser over forged and giant input; the state dir and journal it trusts. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <cmocka.h>
#include <stdbool.h>

#include "tune/journal.h"
#include "tune/journal_test.h"
#include "test_util.h"

/* dir/rel with content, mode 0600 as the journal must be */
static void jwrite(const char *dir, const char *rel, const char *content)
{
	char path[4096];

	assert_int_equal(test_write(dir, rel, content), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(chmod(path, 0600), 0);
}

static bool exists_in(const char *dir, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return access(path, F_OK) == 0;
}

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
	/* the exact text: a space and printable bytes stay, 0x1f and 0x7f do not;
	 * an escape whose low digit is 0 is a byte */
	{
		char *e = journal_escape(" a~\x1f\x7f"), *u = journal_unescape("%20%30%A0");

		assert_string_equal(e, " a~%1F%7F");
		assert_string_equal(u, " 0\xa0");
		free(e);
		free(u);
	}
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
	{
		char want[256];

		/* the undo as typed: this state dir is not the default one */
		snprintf(want, sizeof(want), "run `nodetune revert --state-dir %s` first", dir);
		assert_non_null(strstr(err.msg, want));
	}
	assert_int_equal(journal_record(j, JE_FILE, "sys/a", "madvise", "always [madvise] never\n", &err), 0);
	assert_int_equal(journal_record(j, JE_FILE, "proc/sys/empty", "", "", &err), 0);
	assert_int_equal(journal_record(j, JE_CGROUP, "job", "cpuset=0.1f:148:0.0,cpu=0.1d:677:0.0", NULL, &err), 0);
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
	assert_string_equal(st.entries[2].b, "cpuset=0.1f:148:0.0,cpu=0.1d:677:0.0");   /* its identity */
	assert_int_equal(st.entries[0].line, 2);
	assert_int_equal(st.entries[2].line, 4);
	journal_state_release(&st);
	/* the writer never writes what the reader refuses */
	assert_int_equal(journal_record(j, JE_FILE, "../etc/passwd", "x", "x\n", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "has a '..' component"));
	assert_int_equal(journal_record(j, JE_FILE, "/etc/passwd", "x", "x\n", &err), -EINVAL);
	assert_int_equal(journal_record(j, JE_FILE, "etc/passwd", "x", "x\n", &err), -EINVAL);
	assert_int_equal(journal_record(j, JE_CGROUP, "../job", NULL, NULL, &err), -EINVAL);
	assert_int_equal(journal_record(j, JE_CGROUP, "job", "cpuset=1\tx", NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "has an identity that is not one jobcg makes"));
	{
		char big[JOURNAL_RAW_MAX + 1];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		assert_int_equal(journal_record(j, JE_FILE, "sys/a", "x", big, &err), -E2BIG);
	}
	assert_int_equal(journal_read(j, &st, &err), 0);
	assert_int_equal(st.n, 3);
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
	jwrite(dir, "journal", "nodetune-journal 1\troot\t/\tpolicy\tp\tpid\t1\nfile\tsys/a\tx\tx%0A\nfile\tsys/b\ty");
	j = journal_open(dir, &err);
	assert_int_equal(journal_read(j, &st, &err), 0);
	assert_int_equal(st.n, 1);
	assert_string_equal(st.entries[0].a, "sys/a");
	journal_state_release(&st);

	jwrite(dir, "journal", "nodetune-journal 1\troot\t/\tpolicy\tp\tpid\t1\nrm -rf /\n");
	assert_int_equal(journal_read(j, &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "journal:2: corrupt journal line"));
	jwrite(dir, "journal", "something else\n");
	assert_int_equal(journal_read(j, &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "journal:1:"));
	journal_close(j);
	test_rmrf(dir);
}

#define HDR "nodetune-journal 1\troot\t/tmp/r\tpolicy\tp.conf\tpid\t42\n"

/* text must be refused with "j:LINE: corrupt journal line: ...WHY..." in
 * one line, *ret untouched */
static void refused(const char *text, size_t len, unsigned line, const char *why)
{
	struct journal_state st = { .n = 777 };
	struct nt_err err = { 0 };
	char want[32];

	assert_int_equal(journal_parse(text, len, "j", &st, &err), -EINVAL);
	assert_int_equal(err.code, -EINVAL);
	assert_int_equal(st.n, 777);
	snprintf(want, sizeof(want), "j:%u: corrupt journal line: ", line);
	if (strncmp(err.msg, want, strlen(want)) || !strstr(err.msg, why) || strchr(err.msg, '\n'))
		fail_msg("got '%s', want '%s...%s'", err.msg, want, why);
}

static void test_parse_forged(void **state)
{
	static const struct {
		const char *text;
		unsigned line;
		const char *why;
	} cases[] = {
		{ HDR "file\tsys/../../etc/passwd\tx\tx%0A\n", 2, "path 'sys/../../etc/passwd' has a '..' component" },
		{ HDR "file\t../etc/passwd\tx\tx%0A\n", 2, "has a '..' component" },
		{ HDR "file\tsys/a\tx\tx%0A\nfile\t/etc/passwd\tx\tx%0A\n", 3, "is absolute" },
		{ HDR "file\tetc/passwd\tx\tx%0A\n", 2, "is not below sys/, proc/sys/ or proc/irq/" },
		{ HDR "file\tproc/self/mem\tx\tx%0A\n", 2, "is not below sys/" },
		{ HDR "file\tsysfoo/a\tx\tx%0A\n", 2, "is not below sys/" },
		{ HDR "file\tsys/./a\tx\tx%0A\n", 2, "has a '.' component" },
		{ HDR "file\tsys//a\tx\tx%0A\n", 2, "has an empty component" },
		{ HDR "file\tsys/a/\tx\tx%0A\n", 2, "has an empty component" },
		{ HDR "file\t\tx\tx%0A\n", 2, "is empty" },
		{ HDR "file\tsys/%2E%2E/%2E%2E/etc/passwd\tx\tx\n", 2, "has a '..' component" },
		{ HDR "file\tsys/%1B[2Ja\tx\tx\n", 2, "path 'sys/?[2Ja' has a control character" },
		{ HDR "file\tsys/a\tx\n", 2, "a file entry with 3 fields" },
		{ HDR "file\tsys/a\tx\tx\tx\n", 2, "a file entry with 5 fields" },
		{ HDR "file\tsys/a\tx\tx%zz\n", 2, "bad %-escape" },
		{ HDR "file\tsys/a\tx\tx%00\n", 2, "bad %-escape" },
		{ HDR "exec\trm -rf /\n", 2, "unknown entry 'exec'" },
		{ HDR "\n", 2, "unknown entry ''" },
		{ HDR "FILE\tsys/a\tx\tx\n", 2, "unknown entry 'FILE'" },
		{ HDR "\x1b[2Jfile\tsys/a\tx\tx\n", 2, "unknown entry '?[2Jfile'" },
		{ HDR "cgroup\t../../init.scope\n", 2, "'../../init.scope' is not a cgroup name" },
		{ HDR "cgroup\t.hidden\n", 2, "is not a cgroup name" },
		{ HDR "cgroup\t\n", 2, "is not a cgroup name" },
		{ HDR "cgroup\tjob\t\n", 2, "the identity of cgroup job is not one apply records" },
		{ HDR "cgroup\tjob\tcpuset=1/../x\n", 2, "the identity of cgroup job is not one apply records" },
		{ HDR "cgroup\tjob\tcpuset=1:2:0.0\tx\n", 2, "a cgroup entry with 4 fields" },
		{ HDR "commit\nfile\tsys/a\tx\tx\n", 3, "a line after commit" },
		{ HDR "a\tb\tc\td\te\tf\tg\th\ti\n", 2, "too many fields" },
		{ "nodetune-journal 2\troot\t/\tpolicy\tp\tpid\t1\n", 1, "not a nodetune journal header" },
		{ "nodetune-journal 1\troot\tr\tpolicy\tp\tpid\t1\n", 1, "root is not an absolute path" },
		{ "nodetune-journal 1\troot\t/\tpolicy\tp\tpid\t-1\n", 1, "pid is not a process id" },
		{ "nodetune-journal 1\troot\t/\tpolicy\tp\tpid\t12x\n", 1, "pid is not a process id" },
		{ "nodetune-journal 1\troot\t/\tpolicy\tp\tpid\t2147483647\n", 1, "pid is not a process id" },
		/* a long name is shown as its first 48 bytes and "..." */
		{ HDR "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyzzzzzzzzzzzz\n", 2,
		  "unknown entry 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy...'" },
		{ "", 1, "an empty journal" },
		{ "nodetune-journal 1\troot", 1, "a torn header" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		refused(cases[i].text, strlen(cases[i].text), cases[i].line, cases[i].why);
	/* a NUL byte inside a line */
	refused(HDR "file\tsys/a\0\tx\tx\n", sizeof(HDR "file\tsys/a\0\tx\tx\n") - 1, 2, "a NUL byte");
}

static void test_parse_valid(void **state)
{
	static const char text[] = HDR "file\tsys/kernel/mm/transparent_hugepage/enabled\tmadvise\t"
				       "always [madvise] never%0A\n"
				       "file\tproc/irq/40/smp_affinity_list\t0-95\t0-95%0A\n"
				       "file\tproc/sys/vm/swappiness\t60\t60%0A\n"
				       "cgroup\tnodetune-job.1\n"
				       "cgroup\tnodetune-job.2\tcpuset=0.1f:148:0.0\n"
				       "commit\n"
				       "file\tsys/torn\tx";    /* torn: dropped */
	struct journal_state st;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(journal_parse(text, sizeof(text) - 1, "j", &st, &err), 0);
	assert_string_equal(st.root, "/tmp/r");
	assert_string_equal(st.policy, "p.conf");
	assert_int_equal(st.pid, 42);
	assert_true(st.committed);
	assert_int_equal(st.n, 5);
	assert_string_equal(st.entries[0].raw, "always [madvise] never\n");
	assert_string_equal(st.entries[1].a, "proc/irq/40/smp_affinity_list");
	assert_int_equal(st.entries[3].kind, JE_CGROUP);
	assert_int_equal(st.entries[3].line, 5);
	assert_null(st.entries[3].b);   /* a journal before identities: still read, no identity */
	assert_string_equal(st.entries[4].b, "cpuset=0.1f:148:0.0");
	journal_state_release(&st);
	journal_state_release(NULL);
	/* the header alone: nothing to restore */
	assert_int_equal(journal_parse(HDR, strlen(HDR), "j", &st, &err), 0);
	assert_int_equal(st.n, 0);
	assert_false(st.committed);
	journal_state_release(&st);
}

/* A giant line is refused where it passes the bound, and never held whole;
 * the entry count is bounded too. */
static void test_parse_bounds(void **state)
{
	size_t big = 10u << 20, hl = strlen(HDR), n = 0;
	char *buf = malloc(hl + big + 2), *many;
	const char *entry = "file\tsys/a\t1\t1\n";
	struct journal_state st;
	struct nt_err err = { 0 };

	(void)state;
	assert_non_null(buf);
	memcpy(buf, HDR, hl);
	memcpy(buf + hl, "file\tsys/a\tx\t", 13);
	memset(buf + hl + 13, 'x', big - 13);
	memcpy(buf + hl + big, "\n", 2);
	refused(buf, hl + big + 1, 2, "longer than 32768 bytes");
	refused(buf, hl + big, 2, "longer than 32768 bytes");   /* torn, still too long */
	/* exactly JOURNAL_LINE_MAX bytes is a line (refused for its value) */
	buf[hl + JOURNAL_LINE_MAX] = '\n';
	refused(buf, hl + JOURNAL_LINE_MAX + 1, 2, "longer than apply records");
	memset(buf, 'h', JOURNAL_LINE_MAX + 1);
	refused(buf, JOURNAL_LINE_MAX + 1, 1, "longer than 32768 bytes");
	free(buf);

	many = malloc(hl + (JOURNAL_MAX_ENTRIES + 1) * strlen(entry) + 1);
	assert_non_null(many);
	memcpy(many, HDR, hl);
	n = hl;
	for (unsigned i = 0; i < JOURNAL_MAX_ENTRIES; i++, n += strlen(entry))
		memcpy(many + n, entry, strlen(entry));
	assert_int_equal(journal_parse(many, n, "j", &st, &err), 0);
	assert_int_equal(st.n, JOURNAL_MAX_ENTRIES);
	journal_state_release(&st);
	memcpy(many + n, entry, strlen(entry));
	n += strlen(entry);
	refused(many, n, JOURNAL_MAX_ENTRIES + 2, "more than 65536 entries");
	free(many);
}

/* journal_read streams the file: a 10 MB line is refused without being
 * read whole; a journal longer than one read chunk parses across chunks. */
static void test_read_giant_and_long(void **state)
{
	char dir[64], path[128];
	struct nt_err err = { 0 };
	struct journal_state st;
	struct journal *j;
	FILE *f;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/journal", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(HDR "file\tsys/a\tx\t", f);
	for (int i = 0; i < (10 << 20) / 64; i++)
		fputs("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", f);
	fputs("\n", f);
	fclose(f);
	chmod(path, 0600);
	j = journal_open(dir, &err);
	assert_non_null(j);
	assert_int_equal(journal_read(j, &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/journal:2: corrupt journal line: longer than 32768 bytes"));
	assert_non_null(strstr(err.msg, dir));

	f = fopen(path, "w");
	assert_non_null(f);
	fputs(HDR, f);
	for (int i = 0; i < 3000; i++)
		fprintf(f, "file\tproc/irq/%d/smp_affinity_list\t0-95\t0-95%%0A\n", i);
	fputs("commit\n", f);
	fclose(f);
	assert_int_equal(journal_read(j, &st, &err), 0);
	assert_int_equal(st.n, 3000);
	assert_true(st.committed);
	assert_string_equal(st.entries[2999].a, "proc/irq/2999/smp_affinity_list");
	assert_int_equal(st.entries[2999].line, 3001);
	journal_state_release(&st);
	journal_close(j);
	test_rmrf(dir);
}

/* journal_open must refuse err's file with -EPERM (or code), naming it
 * and why, and create nothing in dir */
static void open_refused(const char *dir, const char *state_dir, int code, const char *why)
{
	struct nt_err err = { 0 };

	assert_null(journal_open(state_dir, &err));
	assert_int_equal(err.code, code);
	if (!strstr(err.msg, why) || !strstr(err.msg, state_dir) || strchr(err.msg, '\n'))
		fail_msg("got '%s', want '%s'", err.msg, why);
	assert_false(exists_in(dir, "lock"));
}

static void test_state_dir_trust(void **state)
{
	char dir[64], link[128], path[128];
	struct nt_err err = { 0 };
	struct journal_state st;
	struct journal *j;
	bool root = geteuid() == 0;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/journal", dir);

	chmod(dir, 0770);
	open_refused(dir, dir, -EPERM, "writable by group or others (mode 0770)");
	chmod(dir, 0703);
	open_refused(dir, dir, -EPERM, "writable by group or others");
	chmod(dir, 0755);                       /* readable is fine: the journal is 0600 */
	j = journal_open(dir, &err);
	assert_non_null(j);
	journal_close(j);
	unlink(strcat(strcpy(link, dir), "/lock"));

	snprintf(link, sizeof(link), "%s.link", dir);
	assert_int_equal(symlink(dir, link), 0);
	open_refused(dir, link, -EPERM, "a symbolic link");
	unlink(link);

	jwrite(dir, "journal", HDR);
	chmod(path, 0644);
	open_refused(dir, dir, -EPERM, "journal: mode 0644, must be 0600");
	chmod(path, 0640);
	open_refused(dir, dir, -EPERM, "must be 0600");
	chmod(path, 0400);                      /* stricter is fine */
	j = journal_open(dir, &err);
	assert_non_null(j);
	/* read checks the file it opened again */
	chmod(path, 0604);
	assert_int_equal(journal_read(j, &st, &err), -EPERM);
	assert_non_null(strstr(err.msg, "must be 0600"));
	chmod(path, 0600);
	assert_int_equal(journal_read(j, &st, &err), 0);
	journal_state_release(&st);
	journal_close(j);
	unlink(strcat(strcpy(link, dir), "/lock"));

	unlink(path);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	open_refused(dir, dir, -EPERM, "journal: not a regular file");
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	open_refused(dir, dir, -EPERM, "journal: not a regular file");
	rmdir(path);

	if (root) {
		jwrite(dir, "journal", HDR);
		assert_int_equal(chown(path, 65534, 65534), 0);
		open_refused(dir, dir, -EPERM, "journal: owned by uid 65534, not by uid 0");
		unlink(path);
		assert_int_equal(chown(dir, 65534, 65534), 0);
		open_refused(dir, dir, -EPERM, "owned by uid 65534, not by uid 0");
		assert_int_equal(chown(dir, 0, 0), 0);
	} else {
		print_message("not root: the ownership cases are skipped\n");
	}
	test_rmrf(dir);
}

static void test_unwritable_state_dir(void **state)
{
	struct nt_err err = { 0 };

	(void)state;
	assert_null(journal_open("/proc/nodetune-cannot-be-here", &err));
	assert_non_null(strstr(err.msg, "state directory /proc/nodetune-cannot-be-here"));
}

/* The failures of writing the journal are the caller's: a write cut short
 * (the file-size limit), a journal.new that cannot be made; a stale
 * journal.new (a process that died) is no failure, nor a rewrite done with
 * stdin closed (its file gets fd 0).  The entry bound holds for a journal
 * rewritten to it, and begin and read leave nothing allocated. */
static void test_write_failures(void **state)
{
	char dir[64], path[128];
	struct nt_err err = { 0 };
	struct journal_state st, many = { 0 };
	struct journal *j;
	struct rlimit old, lim;
	struct stat sb;
	int saved;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	j = journal_open(dir, &err);
	assert_non_null(j);
	assert_int_equal(journal_begin(j, "/", "p.conf", &err), 0);
	snprintf(path, sizeof(path), "%s/journal", dir);
	assert_int_equal(stat(path, &sb), 0);

	/* a write cut short: 4 bytes fit, then EFBIG */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)sb.st_size + 4;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	saved = journal_record(j, JE_FILE, "sys/a", "madvise", "always [madvise] never\n", &err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(saved, -EFBIG);
	assert_non_null(strstr(err.msg, "journal: write: "));

	/* a journal.new that cannot be made: refused, the journal as it was */
	snprintf(path, sizeof(path), "%s/journal.new", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	st = (struct journal_state){ .root = (char *)"/", .policy = (char *)"p.conf" };
	assert_int_equal(journal_rewrite(j, &st, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "journal.new: "));
	assert_int_equal(rmdir(path), 0);
	/* a stale one is replaced */
	jwrite(dir, "journal.new", "left by a process that died\n");
	assert_int_equal(journal_rewrite(j, &st, &err), 0);
	assert_false(exists_in(dir, "journal.new"));
	/* a rewrite cut short (the file-size limit): refused, no journal.new left */
	signal(SIGXFSZ, SIG_IGN);
	lim.rlim_cur = 4;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	saved = journal_rewrite(j, &st, &err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(saved, -EFBIG);
	assert_non_null(strstr(err.msg, "journal: rewriting failed: "));
	assert_false(exists_in(dir, "journal.new"));
	/* with stdin closed */
	saved = dup(0);
	assert_true(saved > 0);
	close(0);
	assert_int_equal(journal_rewrite(j, &st, &err), 0);
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);

	/* rewritten to JOURNAL_MAX_ENTRIES entries: no room for one more */
	many.root = (char *)"/";
	many.policy = (char *)"p.conf";
	many.n = JOURNAL_MAX_ENTRIES;
	many.entries = calloc(many.n, sizeof(*many.entries));
	assert_non_null(many.entries);
	for (unsigned i = 0; i < many.n; i++)
		many.entries[i] = (struct journal_entry){ .kind = JE_CGROUP, .a = (char *)"job" };
	assert_int_equal(journal_rewrite(j, &many, &err), 0);
	free(many.entries);
	assert_int_equal(journal_record(j, JE_CGROUP, "job", NULL, NULL, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "more than a journal holds"));

	assert_int_equal(journal_rewrite(j, &st, &err), 0);
	assert_no_leak(20, assert_int_equal(journal_begin(j, "/", "p.conf", &err), -EEXIST));
	assert_no_leak(20, {
		assert_int_equal(journal_read(j, &st, &err), 0);
		journal_state_release(&st);
	});
	journal_close(j);
	test_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_roundtrip),
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_torn_and_corrupt),
		cmocka_unit_test(test_unwritable_state_dir),
		cmocka_unit_test(test_parse_forged),
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_bounds),
		cmocka_unit_test(test_read_giant_and_long),
		cmocka_unit_test(test_state_dir_trust),
		cmocka_unit_test(test_write_failures),
	};

	return cmocka_run_group_tests_name("journal", tests, NULL, NULL);
}
