/* SPDX-License-Identifier: MIT */
/* test_jobstate.c — the Slurm plugin's job dirs on a tree: which are jobs,
 * which hold a journal, which wait for a retry; the lock; the marker;
 * removal; the daemon's retry restoring a job's values from its real
 * journal, leaving a live job's alone, keeping one it cannot revert. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "tune/jobstate.h"
#include "tune/journal.h"
#include "test_util.h"

struct fx {
	char dir[64];           /* the root of the tree */
	char base[128];         /* its run/nodetune/slurm */
	struct fsroot *fs;
};

static int setup(void **state)
{
	static struct fx fx;

	if (!test_tmpdir(fx.dir, sizeof(fx.dir)))
		return -1;
	snprintf(fx.base, sizeof(fx.base), "%s/" JOBSTATE_DIR, fx.dir);
	test_write(fx.dir, "proc/sys/vm/max_map_count", "65531\n");
	test_write(fx.dir, "proc/sys/vm/stat_interval", "2\n");
	test_write(fx.dir, JOBSTATE_DIR "/" JOBSTATE_LOCK, "");
	fx.fs = fsroot_open(fx.dir);
	*state = &fx;
	return fx.fs ? 0 : -1;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	fsroot_free(fx->fs);
	test_rmrf(fx->dir);
	return 0;
}

static bool exists_in(const char *dir, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return access(path, F_OK) == 0;
}

static char *job_dir(const struct fx *fx, uint32_t job, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%u", fx->base, job);
	return buf;
}

/* job's state dir with a real journal: path was orig before the job, for
 * root (the tree's, or another) */
static void job_journal(const struct fx *fx, uint32_t job, const char *root, const char *path, const char *orig)
{
	struct nt_err err = { 0 };
	char dir[256], raw[64];
	struct journal *j = journal_open(job_dir(fx, job, dir, sizeof(dir)), &err);

	if (!j)
		fail_msg("%s", err.msg);
	snprintf(raw, sizeof(raw), "%s\n", orig);
	assert_int_equal(journal_begin(j, root, "policy.conf", &err), 0);
	assert_int_equal(journal_record(j, JE_FILE, path, orig, raw, &err), 0);
	assert_int_equal(journal_commit(j, &err), 0);
	journal_close(j);
	assert_int_equal(test_write(dir, JOBSTATE_OUTCOME, "applied\n"), 0);
}

static void test_list(void **state)
{
	struct fx *fx = *state;
	struct jobstate *js = NULL;
	char dir[256];

	test_write(fx->base, "7/journal", "");
	test_write(fx->base, "12/" JOBSTATE_PENDING, "the epilog: exit 3\x01x\nsecond line\n");
	test_write(fx->base, "12/journal", "");
	test_write(fx->base, "31/" JOBSTATE_OUTCOME, "applied\n");
	/* not a job id the plugin writes */
	test_write(fx->base, "0/journal", "");
	test_write(fx->base, "012/journal", "");
	test_write(fx->base, "4294967296/journal", "");
	test_write(fx->base, "x7/journal", "");
	assert_int_equal(jobstate_list(fx->fs, JOBSTATE_DIR, &js), 3);
	assert_int_equal(js[0].job, 7);     /* in job order, not as text */
	assert_true(js[0].journal && !js[0].pending && !js[0].why[0]);
	assert_int_equal(js[1].job, 12);
	assert_true(js[1].journal && js[1].pending);
	assert_string_equal(js[1].why, "the epilog: exit 3?x");
	assert_int_equal(js[2].job, 31);
	assert_true(!js[2].journal && !js[2].pending);
	free(js);
	/* a leading '/' (the plugin's state_dir=) is the same dir */
	assert_int_equal(jobstate_list(fx->fs, "/" JOBSTATE_DIR, &js), 3);
	free(js);
	/* an error leaves *ret untouched; none sets it NULL (jobstate.h),
	 * whatever it held: a pointer that is not NULL before each call */
	js = (struct jobstate *)dir;
	assert_int_equal(jobstate_list(fx->fs, "run/none", &js), -ENOENT);
	assert_ptr_equal(js, dir);
	for (const char *const *n = (const char *const[]){ "7", "12", "31", "0", "012", "4294967296", NULL };
	     *n; n++) {
		snprintf(dir, sizeof(dir), "rm -rf '%s/%s'", fx->base, *n);
		assert_int_equal(system(dir), 0);
	}
	/* entries, none a job */
	js = (struct jobstate *)dir;
	assert_int_equal(jobstate_list(fx->fs, JOBSTATE_DIR, &js), 0);
	assert_null(js);
	snprintf(dir, sizeof(dir), "rm -rf '%s/x7'", fx->base);
	assert_int_equal(system(dir), 0);
	snprintf(dir, sizeof(dir), "rm -f '%s/" JOBSTATE_LOCK "'", fx->base);
	assert_int_equal(system(dir), 0);
	/* no entry at all */
	js = (struct jobstate *)dir;
	assert_int_equal(jobstate_list(fx->fs, JOBSTATE_DIR, &js), 0);
	assert_null(js);
}

#ifndef __SANITIZE_ADDRESS__
/* VmData of this process, in bytes (/proc/self/status), or 0 */
static unsigned long vm_data(void)
{
	char line[256];
	unsigned long kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmData: %lu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

/* Out of memory for the list (8,000 entries: 2 MB of struct jobstate,
 * past a data limit that the 8,000 names still fit under): -ENOMEM, not
 * "no job", which would let the prolog tune a node another job tuned.
 * Not under ASan, whose allocator aborts rather than fail. */
static void test_list_enomem(void **state)
{
	struct fx *fx = *state;
	struct jobstate *js = (struct jobstate *)fx;
	struct rlimit old, low;
	char path[256];
	int r, fd;

	for (int i = 1; i <= 8000; i++) {
		snprintf(path, sizeof(path), "%s/%d", fx->base, i);
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(getrlimit(RLIMIT_DATA, &old), 0);
	low = old;
	low.rlim_cur = vm_data() + (1u << 20);
	assert_true(low.rlim_cur > (1u << 20));
	assert_int_equal(setrlimit(RLIMIT_DATA, &low), 0);
	r = jobstate_list(fx->fs, JOBSTATE_DIR, &js);
	assert_int_equal(setrlimit(RLIMIT_DATA, &old), 0);
	assert_int_equal(r, -ENOMEM);
	assert_ptr_equal(js, fx);
	/* the same with the limit back: all of them */
	assert_int_equal(jobstate_list(fx->fs, JOBSTATE_DIR, &js), 8000);
	assert_int_equal(js[7999].job, 8000);
	free(js);
}
#endif

static void test_lock(void **state)
{
	struct fx *fx = *state;
	int a = jobstate_lock(fx->base, false), b;

	assert_true(a >= 0);
	assert_int_equal(jobstate_lock(fx->base, false), -EWOULDBLOCK);
	close(a);
	b = jobstate_lock(fx->base, true);
	assert_true(b >= 0);
	close(b);
	assert_int_equal(jobstate_lock("/tmp/nodetune-test-none/x", true), -ENOENT);
}

static void test_mark_and_remove(void **state)
{
	struct fx *fx = *state;
	char dir[256], line[128];
	int saved, r;

	job_dir(fx, 40, dir, sizeof(dir));
	test_write(dir, JOBSTATE_POLICY, "[thp]\n");
	test_write(dir, "journal", "");
	test_write(dir, "lock", "");
	assert_int_equal(jobstate_mark_pending(dir, "the epilog: nodetune revert: timed out\nx"), 0);
	assert_int_equal(fsroot_read(fx->fs, JOBSTATE_DIR "/40/" JOBSTATE_PENDING, line, sizeof(line)), 40);
	assert_string_equal(line, "the epilog: nodetune revert: timed out?x");
	/* with stdin closed the marker's fd is 0, and it is written */
	saved = dup(STDIN_FILENO);
	assert_true(saved > 0);
	close(STDIN_FILENO);
	r = jobstate_mark_pending(dir, "with stdin closed");
	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
	assert_int_equal(r, 0);
	assert_int_equal(fsroot_read(fx->fs, JOBSTATE_DIR "/40/" JOBSTATE_PENDING, line, sizeof(line)), 17);
	assert_string_equal(line, "with stdin closed");
	/* no such job dir: open's errno */
	assert_int_equal(jobstate_mark_pending("/tmp/nodetune-test-none/40", "x"), -ENOENT);
	/* its journal: its job's settings may be on the node */
	assert_int_equal(jobstate_remove(dir), -EBUSY);
	assert_true(exists_in(dir, JOBSTATE_PENDING) && exists_in(dir, JOBSTATE_POLICY));
	assert_int_equal(unlink(strcat(strcpy(line, dir), "/journal")), 0);
	test_write(dir, "theirs", "");
	assert_int_equal(jobstate_remove(dir), -ENOTEMPTY);
	assert_false(exists_in(dir, JOBSTATE_PENDING));
	assert_true(exists_in(dir, "theirs"));
	assert_int_equal(unlink(strcat(strcpy(line, dir), "/theirs")), 0);
	assert_int_equal(jobstate_remove(dir), 0);
	assert_false(exists_in(fx->base, "40"));
	assert_int_equal(jobstate_remove(dir), 0);   /* gone already */
}

/* The daemon's retry: the ended job's value comes back from its journal,
 * its dir goes; a running job's journal and value stay. */
static void test_retry_pending(void **state)
{
	struct fx *fx = *state;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	char line[64], dir[256];

	job_journal(fx, 5, fx->dir, "proc/sys/vm/max_map_count", "65530");
	assert_int_equal(jobstate_mark_pending(job_dir(fx, 5, dir, sizeof(dir)), "the epilog: exit 3"), 0);
	job_journal(fx, 6, fx->dir, "proc/sys/vm/stat_interval", "1");
	assert_int_equal(jobstate_retry_pending(fx->fs, fx->dir, &rep, &err), 1);
	assert_int_equal(rep.n, 1);
	assert_string_equal(rep.changes[0].path, "proc/sys/vm/max_map_count");
	apply_changes_release(&rep);
	assert_true(fsroot_read(fx->fs, "proc/sys/vm/max_map_count", line, sizeof(line)) > 0);
	assert_string_equal(line, "65530");
	assert_false(exists_in(fx->base, "5"));
	assert_true(fsroot_read(fx->fs, "proc/sys/vm/stat_interval", line, sizeof(line)) > 0);
	assert_string_equal(line, "2");
	assert_true(exists_in(fx->base, "6/journal"));
	/* nothing pending: nothing done */
	assert_int_equal(jobstate_retry_pending(fx->fs, fx->dir, &rep, &err), 0);
	assert_int_equal(rep.n, 0);
	apply_changes_release(&rep);
}

/* A pending job it cannot revert (its journal is for another root) is
 * kept and named; the next one is still reverted; a held lock defers all. */
static void test_retry_failure_and_lock(void **state)
{
	struct fx *fx = *state;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	char dir[256], line[64];
	int lk;

	test_write(fx->dir, "proc/sys/vm/max_map_count", "65531\n");
	job_journal(fx, 8, "/", "proc/sys/vm/max_map_count", "65530");
	assert_int_equal(jobstate_mark_pending(job_dir(fx, 8, dir, sizeof(dir)), "the epilog: exit 3"), 0);
	job_journal(fx, 9, fx->dir, "proc/sys/vm/max_map_count", "65529");
	assert_int_equal(jobstate_mark_pending(job_dir(fx, 9, dir, sizeof(dir)), "the epilog: exit 3"), 0);
	lk = jobstate_lock(fx->base, false);
	assert_true(lk >= 0);
	assert_int_equal(jobstate_retry_pending(fx->fs, fx->dir, &rep, &err), 0);   /* a prolog is at it */
	assert_true(exists_in(fx->base, "9/journal"));
	close(lk);
	assert_int_equal(jobstate_retry_pending(fx->fs, fx->dir, &rep, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "Slurm job 8's pending revert: "));
	assert_non_null(strstr(err.msg, "was written for /"));
	assert_true(exists_in(fx->base, "8/journal") && exists_in(fx->base, "8/" JOBSTATE_PENDING));
	assert_false(exists_in(fx->base, "9"));
	assert_true(fsroot_read(fx->fs, "proc/sys/vm/max_map_count", line, sizeof(line)) > 0);
	assert_string_equal(line, "65529");
	apply_changes_release(&rep);
}

/* The edges: two jobs whose text order is not their order (10, 9) come
 * sorted; listing leaves nothing allocated; the lock is taken as fd 0 when
 * stdin is closed; the marker is 0600; one pending job alone is retried,
 * and a second retry takes the lock again. */
static void test_edges(void **state)
{
	struct fx *fx = *state;
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	struct jobstate *js = NULL;
	char dir[256], line[64], cmd[600], path[300];
	struct stat sb;
	int saved, fd;

	test_write(fx->base, "10/journal", "");
	test_write(fx->base, "9/journal", "");
	assert_int_equal(jobstate_list(fx->fs, JOBSTATE_DIR, &js), 2);
	assert_int_equal(js[0].job, 9);
	assert_int_equal(js[1].job, 10);
	free(js);
	/* the heap grows over the first listings (1.6 KB over 20), then not
	 * at all: measured after 10 */
	for (int i = 0; i < 10; i++) {
		assert_int_equal(jobstate_list(fx->fs, JOBSTATE_DIR, &js), 2);
		free(js);
	}
	assert_no_leak(20, {
		assert_int_equal(jobstate_list(fx->fs, JOBSTATE_DIR, &js), 2);
		free(js);
	});
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/10' '%s/9'", fx->base, fx->base);
	assert_int_equal(system(cmd), 0);

	saved = dup(0);
	assert_true(saved > 0);
	close(0);
	fd = jobstate_lock(fx->base, false);
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
	assert_int_equal(fd, 0);   /* dup2 closed it: the lock is free again */

	job_journal(fx, 3, fx->dir, "proc/sys/vm/max_map_count", "65530");
	assert_int_equal(jobstate_mark_pending(job_dir(fx, 3, dir, sizeof(dir)), "the epilog: exit 3"), 0);
	snprintf(path, sizeof(path), "%s/" JOBSTATE_PENDING, dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal(jobstate_retry_pending(fx->fs, fx->dir, &rep, &err), 1);
	apply_changes_release(&rep);
	assert_false(exists_in(fx->base, "3"));
	job_journal(fx, 4, fx->dir, "proc/sys/vm/max_map_count", "65529");
	assert_int_equal(jobstate_mark_pending(job_dir(fx, 4, dir, sizeof(dir)), "the epilog: exit 3"), 0);
	assert_int_equal(jobstate_retry_pending(fx->fs, fx->dir, &rep, &err), 1);
	apply_changes_release(&rep);
	assert_false(exists_in(fx->base, "4"));
	assert_true(fsroot_read(fx->fs, "proc/sys/vm/max_map_count", line, sizeof(line)) > 0);
	assert_string_equal(line, "65529");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
#ifndef __SANITIZE_ADDRESS__
		cmocka_unit_test_setup_teardown(test_list_enomem, setup, teardown),
#endif
		cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mark_and_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_failure_and_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_edges, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
