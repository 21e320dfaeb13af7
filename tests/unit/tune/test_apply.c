/* SPDX-License-Identifier: MIT */
/* test_apply.c — apply/revert on copied sysroot trees: round trips are
 * byte-for-byte, failures roll back, refusals and clamps are failures; a
 * forged journal restores nothing, a symlink out of the tree is never
 * written through. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/log.h"
#include "tune/apply.h"
#include "tune/jobcg.h"
#include "tune/journal.h"
#include "test_util.h"

struct fx {
	char dir[64];       /* holds root/ and state/ */
	char root[96], state[96];
	struct fsroot *fs;
	struct topo *t;
};

static int setup(void **state)
{
	static struct fx fx;
	char path[4096];
	struct nt_err err = { 0 };

	if (!test_tmpdir(fx.dir, sizeof(fx.dir)))
		return -1;
	snprintf(fx.root, sizeof(fx.root), "%s/root", fx.dir);
	snprintf(fx.state, sizeof(fx.state), "%s/state", fx.dir);
	if (test_copy_fixture("tests/fixtures/sysroot/gpu-host-untuned", fx.root) < 0)
		return -1;
	test_write(fx.root, "proc/irq/40/smp_affinity_list", "0-95\n");
	test_write(fx.root, "sys/bus/pci/devices/0000:1b:00.0/msi_irqs/40", "msix\n");
	fx.fs = fsroot_open(fx.root);
	fx.t = topo_load_xml(test_path(path, sizeof(path), "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml"), &err);
	*state = &fx;
	return fx.fs && fx.t ? 0 : -1;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	fsroot_free(fx->fs);
	topo_free(fx->t);
	test_rmrf(fx->dir);
	return 0;
}

/* After each test, passed or failed: no journal for the next test (one
 * that failed mid-way left its journal, and every test after it found the
 * fixture "applied already": four failures in a CI log for one), and no
 * group of the live-cgroup tests left on the host: each mounted
 * hierarchy's directory of either name removed (rmdir: an empty one). */
static int after_each(void **state)
{
	struct fx *fx = *state;
	char path[4200], line[4096];
	FILE *m;

	test_rmrf(fx->state);
	if (!(m = fopen("/proc/self/mounts", "r")))
		return 0;
	while (fgets(line, sizeof(line), m)) {
		char dev[256], dir[2048], type[64];

		if (sscanf(line, "%255s %2047s %63s", dev, dir, type) != 3 || strncmp(type, "cgroup", 6))
			continue;
		snprintf(path, sizeof(path), "%s/nodetune-unit-apply-%d", dir, (int)getpid());
		rmdir(path);
		snprintf(path, sizeof(path), "%s/nodetune-unit-remade-%d", dir, (int)getpid());
		rmdir(path);
	}
	fclose(m);
	return 0;
}

/* One hash of every file's bytes below dir. */
static void tree_hash(const char *dir, char *out, size_t size)
{
	char cmd[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "cd '%s' && find . -type f | sort | xargs sha256sum | sha256sum", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, (int)size, p));
	pclose(p);
}

static struct plan *make_plan(struct fx *fx, const char *text)
{
	struct nt_err err = { 0 };
	struct policy *p;
	struct plan *pl;
	char path[256];

	test_write(fx->dir, "p.conf", text);
	snprintf(path, sizeof(path), "%s/p.conf", fx->dir);
	p = policy_load(path, 0, &err);
	if (!p)
		fail_msg("%s", err.msg);
	pl = plan_build(p, fx->t, 8, fx->fs, &err);
	if (!pl)
		fail_msg("%s", err.msg);
	policy_free(p);
	return pl;
}

#define GPU_TRAIN "[affinity]\nmode = gpu-local\nhousekeeping = auto\n[thp]\nenabled = madvise\n" \
		  "defrag = defer+madvise\n[sched]\nnuma_balancing = 0\n[irq]\ndevices = housekeeping\n" \
		  "[hugetlb]\npages_2m = 64\n[sysctl]\nvm.swappiness = 10\n"

static void test_roundtrip_byte_identical(void **state)
{
	struct fx *fx = *state;
	struct plan *pl = make_plan(fx, GPU_TRAIN "[cgroup]\nname = job\n");
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	char before[128], after[128], buf[256];

	tree_hash(fx->root, before, sizeof(before));
	/* the sysctl file is absent in the tree: skipped with a note */
	test_write(fx->root, "proc/sys/vm/swappiness", "60\n");
	tree_hash(fx->root, before, sizeof(before));
	plan_free(pl);
	pl = make_plan(fx, GPU_TRAIN "[cgroup]\nname = job\n");

	assert_int_equal(apply_plan(pl, fx->fs, fx->state, false, &rep, &err), 0);
	/* THP x2, numa_balancing, 2 hugepage pools, swappiness, IRQ 40 */
	assert_int_equal(rep.n, 7);
	assert_int_equal(rep.n_notes, 1);   /* cgroup: not the live host */
	apply_changes_release(&rep);
	fsroot_read(fx->fs, "sys/kernel/mm/transparent_hugepage/defrag", buf, sizeof(buf));
	assert_string_equal(buf, "defer+madvise");
	fsroot_read(fx->fs, "proc/irq/40/smp_affinity_list", buf, sizeof(buf));
	assert_string_equal(buf, "0,24,48,72");
	fsroot_read(fx->fs, "sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", buf, sizeof(buf));
	assert_string_equal(buf, "64");

	/* applying again over an applied host is refused, nothing changes */
	tree_hash(fx->root, after, sizeof(after));
	assert_int_equal(apply_plan(pl, fx->fs, fx->state, false, &rep, &err), -EEXIST);
	apply_changes_release(&rep);
	tree_hash(fx->root, buf, sizeof(buf));
	assert_string_equal(buf, after);

	assert_int_equal(apply_revert(fx->state, fx->root, &rep, &err), 0);
	assert_int_equal(rep.n, 7);
	apply_changes_release(&rep);
	tree_hash(fx->root, after, sizeof(after));
	assert_string_equal(before, after);

	/* nothing left to revert */
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);
	assert_int_equal(rep.n, 0);
	assert_non_null(strstr(rep.notes[0], "nothing to revert"));
	apply_changes_release(&rep);
	plan_free(pl);
	/* a state dir that never existed: nothing to revert, and not created */
	{
		char none[4200];
		struct stat sb;

		snprintf(none, sizeof(none), "%s/never-applied", fx->state);
		assert_int_equal(apply_revert(none, NULL, &rep, &err), 0);
		assert_non_null(strstr(rep.notes[0], "nothing to revert (no state directory"));
		assert_int_equal(lstat(none, &sb), -1);
		apply_changes_release(&rep);
	}
}

static void test_dry_run_touches_nothing(void **state)
{
	struct fx *fx = *state;
	struct plan *pl = make_plan(fx, GPU_TRAIN);
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	char before[128], after[128];

	tree_hash(fx->root, before, sizeof(before));
	assert_int_equal(apply_plan(pl, fx->fs, fx->state, true, &rep, &err), 0);
	assert_true(rep.n >= 5);
	tree_hash(fx->root, after, sizeof(after));
	assert_string_equal(before, after);
	snprintf(after, sizeof(after), "%s/journal", fx->state);
	assert_int_equal(access(after, F_OK), -1);  /* no journal */
	apply_changes_release(&rep);
	plan_free(pl);
}

/* Fault injection: the n-th write fails with EINVAL, like a kernel refusal. */
static int writes_left;
static ssize_t write_fails_later(int fd, const void *buf, size_t count)
{
	if (--writes_left == 0) {
		errno = EINVAL;
		return -1;
	}
	return write(fd, buf, count);
}

/* A clamp: hugepage counts above 10 are silently cut to 10 (as the kernel
 * does when memory is short); smaller ones, like a rollback's, pass. */
static ssize_t write_clamps_hugepages(int fd, const void *buf, size_t count)
{
	char link[64], target[512];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	if (strstr(target, "nr_hugepages") && strtol(buf, NULL, 10) > 10)
		return write(fd, "10\n", 3) == 3 ? (ssize_t)count : -1;
	return write(fd, buf, count);
}

static void test_failure_rolls_back(void **state)
{
	struct fx *fx = *state;
	struct plan *pl = make_plan(fx, GPU_TRAIN);
	struct fsroot_syscalls saved = fsroot_sys;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	char before[128], after[128];

	tree_hash(fx->root, before, sizeof(before));
	for (int fail_at = 1; fail_at <= 6; fail_at++) {
		fsroot_sys.write = write_fails_later;
		writes_left = fail_at;
		assert_int_equal(apply_plan(pl, fx->fs, fx->state, false, &rep, &err), -EINVAL);
		fsroot_sys = saved;
		assert_true(rep.rolled_back);
		assert_int_equal(rep.n, 0);
		assert_non_null(strstr(err.msg, "writing"));
		apply_changes_release(&rep);
		tree_hash(fx->root, after, sizeof(after));
		assert_string_equal(before, after);
		snprintf(after, sizeof(after), "%s/journal", fx->state);
		assert_int_equal(access(after, F_OK), -1);   /* rolled back: no journal left */
	}

	fsroot_sys.write = write_clamps_hugepages;
	assert_int_equal(apply_plan(pl, fx->fs, fx->state, false, &rep, &err), -ERANGE);
	fsroot_sys = saved;
	assert_non_null(strstr(err.msg, "wrote '64' but the kernel holds '10' (refused or clamped)"));
	assert_true(rep.rolled_back);
	apply_changes_release(&rep);
	tree_hash(fx->root, after, sizeof(after));
	assert_string_equal(before, after);
	plan_free(pl);
}

static int writes_seen;
static ssize_t die_on_third(int fd, const void *buf, size_t count)
{
	if (++writes_seen == 3)
		kill(getpid(), SIGKILL);
	return write(fd, buf, count);
}

static void test_revert_after_crash(void **state)
{
	struct fx *fx = *state;
	struct plan *pl = make_plan(fx, GPU_TRAIN);
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	char before[128], after[128];
	pid_t pid;
	int status;

	tree_hash(fx->root, before, sizeof(before));
	/* a child applies and is SIGKILLed in its third write */
	pid = fork();
	if (pid == 0) {
		writes_seen = 0;
		fsroot_sys.write = die_on_third;
		apply_plan(pl, fx->fs, fx->state, false, &rep, &err);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	tree_hash(fx->root, after, sizeof(after));
	assert_string_not_equal(before, after);       /* two writes happened */
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);
	/* two writes completed; the third file was opened (O_TRUNC) when the
	 * process died, so it is empty: its journal entry, written before the
	 * write, restores it too */
	assert_int_equal(rep.n, 3);
	assert_non_null(strstr(rep.notes[0], "did not complete"));
	apply_changes_release(&rep);
	tree_hash(fx->root, after, sizeof(after));
	assert_string_equal(before, after);
	plan_free(pl);
}

static void test_revert_wrong_root(void **state)
{
	struct fx *fx = *state;
	struct plan *pl = make_plan(fx, "[thp]\nenabled = never\n");
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };

	assert_int_equal(apply_plan(pl, fx->fs, fx->state, false, &rep, &err), 0);
	apply_changes_release(&rep);
	assert_int_equal(apply_revert(fx->state, fx->dir, &rep, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "was written for"));
	apply_changes_release(&rep);
	assert_int_equal(apply_revert(fx->state, fx->root, &rep, &err), 0);
	apply_changes_release(&rep);
	plan_free(pl);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Overwrite path (mode kept: fopen "w" on an existing file) with a then b. */
static void put(const char *path, const char *a, const char *b)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(a, f);
	fputs(b, f);
	fclose(f);
}

/* fsroot's write, failing (EIO) or dropping what it is given */
static ssize_t write_fails(int fd, const void *buf, size_t count)
{
	(void)fd, (void)buf, (void)count;
	errno = EIO;
	return -1;
}

static ssize_t write_dropped(int fd, const void *buf, size_t count)
{
	(void)fd, (void)buf;
	return (ssize_t)count;
}

/* A restore the file will not take, or will not keep, is a failure (the
 * first the error, the second EIO), and the journal stays for a revert
 * that can. */
static void test_restore_not_kept(void **state)
{
	static const struct {
		ssize_t (*write)(int fd, const void *buf, size_t count);
		const char *why;
	} faults[] = {
		{ write_fails, "enabled: restoring failed: " },
		{ write_dropped, "enabled: restored content does not read back" },
	};
	struct fx *fx = *state;
	struct plan *pl = make_plan(fx, "[thp]\nenabled = never\n");
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	char path[256], *back;
	int r;

	snprintf(path, sizeof(path), "%s/sys/kernel/mm/transparent_hugepage/enabled", fx->root);
	assert_int_equal(apply_plan(pl, fx->fs, fx->state, false, &rep, &err), 0);
	apply_changes_release(&rep);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		fsroot_sys.write = faults[i].write;
		r = apply_revert(fx->state, NULL, &rep, &err);
		fsroot_sys.write = write;
		assert_int_equal(r, -EIO);
		if (!strstr(err.msg, faults[i].why))
			fail_msg("got '%s', want '%s'", err.msg, faults[i].why);
		apply_changes_release(&rep);
	}
	assert_no_leak(20, {
		fsroot_sys.write = write_fails;
		r = apply_revert(fx->state, NULL, &rep, &err);
		fsroot_sys.write = write;
		apply_changes_release(&rep);
	});
	/* the journal was kept; a success leaves err as the caller passed it */
	snprintf(err.msg, sizeof(err.msg), "untouched");
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);
	assert_string_equal(err.msg, "untouched");
	assert_int_equal(rep.n, 1);
	apply_changes_release(&rep);
	back = slurp(path);
	assert_string_equal(back, "[always] madvise never\n");
	free(back);
	/* a file already holding its original bytes is not written, nor reported */
	assert_int_equal(apply_plan(pl, fx->fs, fx->state, false, &rep, &err), 0);
	assert_string_equal(err.msg, "untouched");
	apply_changes_release(&rep);
	test_write(fx->root, "sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
	fsroot_sys.write = write_fails;
	r = apply_revert(fx->state, NULL, &rep, &err);
	fsroot_sys.write = write;
	assert_int_equal(r, 0);
	assert_int_equal(rep.n, 0);
	apply_changes_release(&rep);
	/* a state dir that cannot be one: refused, nothing left allocated */
	assert_no_leak(20, assert_int_equal(apply_plan(pl, fx->fs, "/proc/nodetune-cannot-be-here", false, &rep,
							   &err), -ENOENT));
	plan_free(pl);
}

static void test_forged_journal_restores_nothing(void **state)
{
	struct fx *fx = *state;
	struct plan *pl = make_plan(fx, GPU_TRAIN);
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	char before[128], applied[128], now[128], jpath[128], decoy[128], link[160], abs_line[256];
	char *saved, *decoy0, *d;
	const struct {
		const char *line, *why;
	} forged[] = {
		{ "file\tsys/../../etc/passwd\tx\tpwned%0A\n", "path 'sys/../../etc/passwd' has a '..' component" },
		{ abs_line, "is absolute" },
		{ "file\tetc/passwd\tx\tpwned%0A\n", "is not below sys/, proc/sys/ or proc/irq/" },
		{ "file\tsys/kernel/evil\tx\tpwned%0A\n", "sys/kernel/evil leads out of" },
		{ "cgroup\tjob\n", "a job cgroup (job) in the journal of" },
		{ "exec\trm -rf /\n", "unknown entry 'exec'" },
	};

	snprintf(jpath, sizeof(jpath), "%s/journal", fx->state);
	snprintf(decoy, sizeof(decoy), "%s/etc/passwd", fx->dir);
	snprintf(abs_line, sizeof(abs_line), "file\t%s\tx\tpwned%%0A\n", decoy);
	test_write(fx->dir, "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
	decoy0 = slurp(decoy);
	/* a symlink inside the tree to the decoy beside it */
	snprintf(link, sizeof(link), "%s/sys/kernel/evil", fx->root);
	assert_int_equal(symlink("../../../etc/passwd", link), 0);

	tree_hash(fx->root, before, sizeof(before));
	assert_int_equal(apply_plan(pl, fx->fs, fx->state, false, &rep, &err), 0);
	apply_changes_release(&rep);
	tree_hash(fx->root, applied, sizeof(applied));
	assert_string_not_equal(before, applied);
	saved = slurp(jpath);
	assert_non_null(strstr(saved, "\ncommit\n"));
	*strstr(saved, "commit\n") = '\0';         /* the entries, then a forged one, then commit */

	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		char want[160];
		unsigned line = 1;

		for (const char *c = saved; *c; c++)
			line += *c == '\n';
		put(jpath, saved, forged[i].line);
		FILE *f = fopen(jpath, "a");
		fputs("commit\n", f);
		fclose(f);
		assert_int_equal(apply_revert(fx->state, fx->root, &rep, &err), -EINVAL);
		snprintf(want, sizeof(want), "%s:%u: ", jpath, line);
		if (strncmp(err.msg, want, strlen(want)) || !strstr(err.msg, forged[i].why) ||
		    !strstr(err.msg, "nothing was restored") || strchr(err.msg, '\n'))
			fail_msg("forged '%s': got '%s'", forged[i].line, err.msg);
		assert_int_equal(rep.n, 0);
		assert_int_equal(rep.n_notes, 0);
		apply_changes_release(&rep);
		tree_hash(fx->root, now, sizeof(now));
		assert_string_equal(now, applied);      /* nothing restored */
		d = slurp(decoy);
		assert_string_equal(d, decoy0);          /* nothing written outside */
		free(d);
		assert_int_equal(access(jpath, F_OK), 0);   /* the journal kept */
	}
	/* the real journal back: revert restores everything */
	put(jpath, saved, "commit\n");
	assert_int_equal(apply_revert(fx->state, fx->root, &rep, &err), 0);
	apply_changes_release(&rep);
	tree_hash(fx->root, now, sizeof(now));
	assert_string_equal(now, before);
	unlink(link);
	free(saved);
	free(decoy0);
	plan_free(pl);
}

/* A knob file that is a symlink out of the tree: apply neither reads it
 * into the journal nor writes through it, and rolls back what it did. */
static void test_apply_symlink_out(void **state)
{
	struct fx *fx = *state;
	struct plan *pl;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	char before[128], now[128], link[160], decoy[128], jpath[128];
	char *decoy0, *d, *kept;

	snprintf(decoy, sizeof(decoy), "%s/etc/passwd", fx->dir);
	snprintf(jpath, sizeof(jpath), "%s/journal", fx->state);
	test_write(fx->dir, "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
	decoy0 = slurp(decoy);
	snprintf(link, sizeof(link), "%s/proc/sys/vm/swappiness", fx->root);
	test_write(fx->root, "proc/sys/vm/swappiness", "60\n");
	kept = slurp(link);
	unlink(link);
	assert_int_equal(symlink("../../../../etc/passwd", link), 0);
	pl = make_plan(fx, GPU_TRAIN);

	tree_hash(fx->root, before, sizeof(before));
	assert_int_equal(apply_plan(pl, fx->fs, fx->state, false, &rep, &err), -EXDEV);
	assert_true(rep.rolled_back);
	assert_non_null(strstr(err.msg, "proc/sys/vm/swappiness: leads out of"));
	apply_changes_release(&rep);
	tree_hash(fx->root, now, sizeof(now));
	assert_string_equal(now, before);
	d = slurp(decoy);
	assert_string_equal(d, decoy0);
	free(d);
	assert_int_equal(access(jpath, F_OK), -1);

	unlink(link);
	test_write(fx->root, "proc/sys/vm/swappiness", kept);
	free(kept);
	free(decoy0);
	plan_free(pl);
}

static void test_normalize(void **state)
{
	char out[64];

	(void)state;
	apply_normalize("always [madvise] never\n", out, sizeof(out));
	assert_string_equal(out, "madvise");
	apply_normalize("  0,1,2,3,8\n", out, sizeof(out));
	assert_string_equal(out, "0-3,8");
	apply_normalize("1024\n", out, sizeof(out));
	assert_string_equal(out, "1024");
	apply_normalize("performance\n", out, sizeof(out));
	assert_string_equal(out, "performance");
	apply_normalize("", out, sizeof(out));
	assert_string_equal(out, "");
	apply_normalize("\t60 \t\n", out, sizeof(out));    /* blanks trimmed both ends */
	assert_string_equal(out, "60");
	apply_normalize("x\t\t\n", out, sizeof(out));
	assert_string_equal(out, "x");
}

/* A report with every note slot used releases them all, and nothing past
 * the last (what lies beside it, n_notes, is no pointer). */
static void test_report_full_notes(void **state)
{
	struct apply_changes rep = { 0 };

	(void)state;
	for (unsigned i = 0; i < APPLY_MAX_NOTES + 2; i++)
		log_note_add(rep.notes, &rep.n_notes, APPLY_MAX_NOTES, "note %u", i);
	assert_int_equal(rep.n_notes, APPLY_MAX_NOTES);
	apply_changes_release(&rep);
	assert_int_equal(rep.n_notes, 0);
	assert_null(rep.notes[0]);
}

/* ---- the daemon's apply_converge ---------------------------------------- */

static bool skip_swappiness(const char *path, void *arg)
{
	(*(int *)arg)++;
	return !strcmp(path, "proc/sys/vm/swappiness");
}

static unsigned converge(struct fx *fx, const struct plan *pl, bool (*skip)(const char *, void *), void *arg)
{
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	struct journal *j = journal_open(fx->state, &err);
	unsigned n;
	int r;

	assert_non_null(j);
	r = apply_converge(pl, fx->fs, j, skip, arg, &rep, &err);
	if (r < 0)
		fail_msg("apply_converge: %s", err.msg);
	n = rep.n;
	apply_changes_release(&rep);
	journal_close(j);
	return n;
}

static void journal_of(struct fx *fx, struct journal_state *st)
{
	struct nt_err err = { 0 };
	struct journal *j = journal_open(fx->state, &err);

	assert_non_null(j);
	assert_int_equal(journal_read(j, st, &err), 0);
	journal_close(j);
}

static void test_converge_drift_and_revert(void **state)
{
	struct fx *fx = *state;
	struct plan *pl;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	struct journal_state st = { 0 };
	char before[128], after[128], buf[64];
	int calls = 0;

	test_write(fx->root, "proc/sys/vm/swappiness", "60\n");
	test_write(fx->root, "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
	tree_hash(fx->root, before, sizeof(before));
	pl = make_plan(fx, GPU_TRAIN);
	/* THP defrag, numa_balancing, 2 hugepage pools, swappiness, IRQ 40;
	 * THP enabled is madvise already: journaled, not written */
	assert_int_equal(converge(fx, pl, NULL, NULL), 6);
	journal_of(fx, &st);
	assert_true(st.committed);
	assert_int_equal(st.n, pl->n_host + pl->n_irqs);
	journal_state_release(&st);
	assert_int_equal(converge(fx, pl, NULL, NULL), 0);          /* nothing differs: nothing written */

	test_write(fx->root, "proc/sys/vm/swappiness", "30\n");     /* drift */
	assert_int_equal(converge(fx, pl, skip_swappiness, &calls), 0);   /* contested: left alone */
	assert_true(calls > 0);
	fsroot_read(fx->fs, "proc/sys/vm/swappiness", buf, sizeof(buf));
	assert_string_equal(buf, "30");
	assert_int_equal(converge(fx, pl, NULL, NULL), 1);          /* corrected */
	fsroot_read(fx->fs, "proc/sys/vm/swappiness", buf, sizeof(buf));
	assert_string_equal(buf, "10");
	test_write(fx->root, "sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
	assert_int_equal(converge(fx, pl, NULL, NULL), 1);          /* one that matched at the start */

	/* revert restores the originals of before the first converge */
	assert_int_equal(apply_revert(fx->state, fx->root, &rep, &err), 0);
	apply_changes_release(&rep);
	tree_hash(fx->root, after, sizeof(after));
	assert_string_equal(before, after);
	plan_free(pl);
}

static void test_converge_policy_change(void **state)
{
	struct fx *fx = *state;
	struct plan *a, *b;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	struct journal_state st = { 0 };
	char before[128], after[128], buf[128];

	test_write(fx->root, "proc/sys/vm/swappiness", "60\n");
	test_write(fx->root, "sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
	tree_hash(fx->root, before, sizeof(before));
	a = make_plan(fx, GPU_TRAIN);
	b = make_plan(fx, "[thp]\nenabled = never\n[sysctl]\nvm.swappiness = 5\n");
	assert_int_equal(converge(fx, a, NULL, NULL), 7);
	/* b: THP enabled and swappiness written (originals kept from a's
	 * journal), a's other five restored and dropped */
	assert_int_equal(converge(fx, b, NULL, NULL), 2 + 5);
	journal_of(fx, &st);
	assert_int_equal(st.n, 2);
	for (unsigned i = 0; i < st.n; i++)
		if (!strcmp(st.entries[i].a, "proc/sys/vm/swappiness"))
			assert_string_equal(st.entries[i].b, "60");       /* the first original */
	journal_state_release(&st);
	/* back and forth: the entries dropped leave nothing allocated.  The
	 * heap grows by some 5 KB over the first rounds and then not at all
	 * (0 bytes over 20 rounds), so it is measured from round 10; a path of
	 * each of the 5 entries dropped a round, leaked, is 240 bytes a round */
	{
		size_t h0 = 0;

		for (int i = 0; i < 30; i++) {
			if (i == 10)
				h0 = test_heap_in_use();
			assert_int_equal(converge(fx, a, NULL, NULL), 7);
			assert_int_equal(converge(fx, b, NULL, NULL), 2 + 5);
		}
		print_message("  converge a then b, 20 rounds: the heap grew by %zu bytes\n", test_heap_in_use() - h0);
		assert_in_range(test_heap_in_use() - h0, 0, 20 * 8);
	}
	fsroot_read(fx->fs, "sys/kernel/mm/transparent_hugepage/defrag", buf, sizeof(buf));
	assert_string_equal(buf, "[always] defer defer+madvise madvise never");   /* a's only: restored */
	assert_int_equal(apply_revert(fx->state, fx->root, &rep, &err), 0);
	apply_changes_release(&rep);
	tree_hash(fx->root, after, sizeof(after));
	assert_string_equal(before, after);
	plan_free(a);
	plan_free(b);
}

/* An apply killed mid-way (its journal has no commit): converge keeps the
 * originals it recorded, says so, and revert still restores the tree. */
static void test_converge_after_crash(void **state)
{
	struct fx *fx = *state;
	struct plan *pl;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	struct journal *j;
	char before[128], after[128];
	pid_t child;
	int status;

	test_write(fx->root, "proc/sys/vm/swappiness", "60\n");
	tree_hash(fx->root, before, sizeof(before));
	pl = make_plan(fx, GPU_TRAIN);
	writes_seen = 0;
	child = fork();
	if (child == 0) {
		fsroot_sys.write = die_on_third;
		apply_plan(pl, fx->fs, fx->state, false, &rep, &err);
		_exit(0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFSIGNALED(status));
	j = journal_open(fx->state, &err);
	assert_non_null(j);
	assert_int_equal(apply_converge(pl, fx->fs, j, NULL, NULL, &rep, &err), 0);
	assert_int_equal(rep.n, 5);          /* 2 were written before the kill */
	assert_int_equal(rep.n_notes, 1);
	assert_non_null(strstr(rep.notes[0], "did not complete"));
	apply_changes_release(&rep);
	journal_close(j);
	assert_int_equal(apply_revert(fx->state, fx->root, &rep, &err), 0);
	apply_changes_release(&rep);
	tree_hash(fx->root, after, sizeof(after));
	assert_string_equal(before, after);
	plan_free(pl);
}

/* ---- the job cgroup on the live host (root, a cpuset hierarchy) ----------- */

/* A plan for this host whose only change is the job cgroup name; NULL (the
 * test skipped) where the host cannot have one. */
static struct plan *live_cgroup_plan(struct fx *fx, const char *name, struct fsroot **ret_host)
{
	char why[256], text[128];
	struct nt_err err = { 0 };
	struct policy *p;
	struct topo *t;
	struct plan *pl;

	if (geteuid() != 0 || !jobcg_available(why, sizeof(why)) || access("/sys/fs/cgroup/cpuset", F_OK) < 0)
		return NULL;
	snprintf(text, sizeof(text), "[cgroup]\nname = %s\n", name);
	test_write(fx->dir, "cg.conf", text);
	snprintf(text, sizeof(text), "%s/cg.conf", fx->dir);
	p = policy_load(text, 0, &err);
	t = topo_load_host(NULL, &err);
	*ret_host = fsroot_open("/");
	if (!p || !t || !*ret_host)
		fail_msg("%s", err.msg);
	pl = plan_build(p, t, 1, *ret_host, &err);
	if (!pl)
		fail_msg("%s", err.msg);
	assert_int_equal(pl->n_host + pl->n_irqs, 0);   /* nothing but the cgroup */
	policy_free(p);
	topo_free(t);
	return pl;
}

/* A cgroup that existed before apply is someone else's: apply and converge
 * refuse it (-EEXIST, rolled back, nothing journalled) and a revert leaves
 * it; one this run created is journalled and removed by the revert. */
static void test_cgroup_existing_never_removed(void **state)
{
	struct fx *fx = *state;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	struct fsroot *host = NULL;
	struct journal *j;
	struct plan *pl;
	char name[64], id[JOBCG_ID_MAX];

	snprintf(name, sizeof(name), "nodetune-unit-apply-%d", (int)getpid());
	if (!(pl = live_cgroup_plan(fx, name, &host))) {
		test_skip_host("cgroup-cpuset", "job cgroups need root and a cpuset hierarchy");
	}
	if (jobcg_create(name, "0", "0", 0, id, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(apply_plan(pl, host, fx->state, false, &rep, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "exists already and is not ours"));
	bool rolled_back = rep.rolled_back;

	apply_changes_release(&rep);
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);   /* no journal: nothing to do */
	apply_changes_release(&rep);
	assert_true(jobcg_exists(name));
	assert_true(rolled_back);

	j = journal_open(fx->state, &err);
	assert_non_null(j);
	assert_int_equal(apply_converge(pl, host, j, NULL, NULL, &rep, &err), -EEXIST);
	apply_changes_release(&rep);
	journal_close(j);
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);
	apply_changes_release(&rep);
	assert_true(jobcg_exists(name));

	/* gone before apply: this run's, journalled, removed by revert */
	assert_int_equal(jobcg_delete(name, id, &err), 0);
	assert_int_equal(apply_plan(pl, host, fx->state, false, &rep, &err), 0);
	apply_changes_release(&rep);
	assert_true(jobcg_exists(name));
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);
	{
		char label[128];

		snprintf(label, sizeof(label), "cgroup:%s", name);
		assert_int_equal(rep.n, 1);   /* the removal reported */
		assert_string_equal(rep.changes[0].path, label);
		assert_string_equal(rep.changes[0].to, "removed");
	}
	apply_changes_release(&rep);
	assert_false(jobcg_exists(name));

	j = journal_open(fx->state, &err);
	assert_non_null(j);
	assert_int_equal(apply_converge(pl, host, j, NULL, NULL, &rep, &err), 0);
	apply_changes_release(&rep);
	assert_int_equal(apply_converge(pl, host, j, NULL, NULL, &rep, &err), 0);   /* its own: kept */
	apply_changes_release(&rep);
	journal_close(j);
	assert_true(jobcg_exists(name));
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);
	apply_changes_release(&rep);
	assert_false(jobcg_exists(name));
	fsroot_free(host);
	plan_free(pl);
}

/* Someone else removes the group apply made and makes one of the name
 * again (a process in it): the journal's identity is not that group's, so
 * revert leaves it (a note says so) and converge refuses it; a journal of
 * an older nodetune (no identity) never has its group removed either. */
static void test_cgroup_remade_never_removed(void **state)
{
	struct fx *fx = *state;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	struct fsroot *host = NULL;
	struct journal *j;
	struct plan *pl;
	char name[64], dir[256], old[512];
	int fd;

	snprintf(name, sizeof(name), "nodetune-unit-remade-%d", (int)getpid());
	if (!(pl = live_cgroup_plan(fx, name, &host)))
		test_skip_host("cgroup-cpuset", "job cgroups need root and a cpuset hierarchy");
	snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cpuset/%s", name);
	assert_int_equal(apply_plan(pl, host, fx->state, false, &rep, &err), 0);
	apply_changes_release(&rep);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(mkdir(dir, 0755), 0);   /* theirs now */
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);
	assert_true(jobcg_exists(name));
	assert_int_equal(rep.n_notes, 1);
	assert_non_null(strstr(rep.notes[0], "not the group this journal recorded"));
	apply_changes_release(&rep);

	/* converge: its own group, then someone else's under the name */
	assert_int_equal(rmdir(dir), 0);
	j = journal_open(fx->state, &err);
	assert_non_null(j);
	assert_int_equal(apply_converge(pl, host, j, NULL, NULL, &rep, &err), 0);
	apply_changes_release(&rep);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(apply_converge(pl, host, j, NULL, NULL, &rep, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "is not the group this journal recorded"));
	apply_changes_release(&rep);
	journal_close(j);
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);
	apply_changes_release(&rep);
	assert_true(jobcg_exists(name));

	/* an older nodetune's journal: the entry has no identity */
	snprintf(old, sizeof(old), "%s/journal", fx->state);
	fd = open(old, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	dprintf(fd, "nodetune-journal 1\troot\t/\tpolicy\tcg.conf\tpid\t1\ncgroup\t%s\ncommit\n", name);
	close(fd);
	assert_int_equal(apply_revert(fx->state, NULL, &rep, &err), 0);
	assert_true(jobcg_exists(name));
	assert_int_equal(rep.n_notes, 1);
	assert_non_null(strstr(rep.notes[0], "records no identity (written by an older nodetune)"));
	apply_changes_release(&rep);
	assert_int_equal(rmdir(dir), 0);
	fsroot_free(host);
	plan_free(pl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_normalize, after_each),
		cmocka_unit_test_teardown(test_roundtrip_byte_identical, after_each),
		cmocka_unit_test_teardown(test_dry_run_touches_nothing, after_each),
		cmocka_unit_test_teardown(test_failure_rolls_back, after_each),
		cmocka_unit_test_teardown(test_revert_after_crash, after_each),
		cmocka_unit_test_teardown(test_revert_wrong_root, after_each),
		cmocka_unit_test_teardown(test_restore_not_kept, after_each),
		cmocka_unit_test_teardown(test_forged_journal_restores_nothing, after_each),
		cmocka_unit_test_teardown(test_apply_symlink_out, after_each),
		cmocka_unit_test_teardown(test_converge_drift_and_revert, after_each),
		cmocka_unit_test_teardown(test_converge_policy_change, after_each),
		cmocka_unit_test_teardown(test_converge_after_crash, after_each),
		cmocka_unit_test_teardown(test_cgroup_existing_never_removed, after_each),
		cmocka_unit_test_teardown(test_cgroup_remade_never_removed, after_each),
		/* last: second in the list, LeakSanitizer's exit check crashed
		 * ("Tracer caught signal 11") after all 15 passed, every time;
		 * here, or without it, it does not (3 of 3 runs).  Not understood:
		 * the test only fills and frees the notes */
		cmocka_unit_test_teardown(test_report_full_notes, after_each),
	};

	return cmocka_run_group_tests_name("apply", tests, setup, teardown);
}
