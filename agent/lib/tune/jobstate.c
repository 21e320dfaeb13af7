/* SPDX-License-Identifier: MIT */
/* jobstate.c — see jobstate.h.
 *
 * Divisions: listing the job dirs; the lock, the marker, removal; the
 * daemon's retry.
 */
#include "tune/jobstate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/textbuf.h"

/* ---- listing the job dirs --------------------------------------------- */

/* name as a job id the plugin writes ("%u", never 0, no leading zero) */
static bool job_name(const char *name, uint32_t *ret)
{
	uint64_t v;

	if (name[0] == '0' || parse_u64(name, UINT32_MAX, &v) < 0)
		return false;
	*ret = (uint32_t)v;
	return true;
}

/* e's journal and marker, below root's dir/name */
static void job_read(const struct fsroot *root, const char *dir, const char *name, struct jobstate *e)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s/journal", dir, name);
	e->journal = fsroot_exists(root, path);
	snprintf(path, sizeof(path), "%s/%s/" JOBSTATE_PENDING, dir, name);
	e->pending = fsroot_exists(root, path);
	if (e->pending && fsroot_read(root, path, e->why, sizeof(e->why)) < 0)
		snprintf(e->why, sizeof(e->why), "(unreadable)");
	e->why[strcspn(e->why, "\n")] = '\0';
	textbuf_unctrl(e->why);
}

int jobstate_list(const struct fsroot *root, const char *dir, struct jobstate **ret)
{
	struct jobstate *js = NULL;
	char **names = NULL;
	int n, k = 0;

	while (*dir == '/')
		dir++;
	n = fsroot_list(root, dir, &names);
	if (n < 0)
		return n;
	if (n > 0 && !(js = calloc((size_t)n, sizeof(*js)))) {
		fsroot_names_free(names);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)   /* sorted as text: "10" < "9", so sorted below */
		if (job_name(names[i], &js[k].job))
			job_read(root, dir, names[i], &js[k++]);
	fsroot_names_free(names);
	for (int i = 1; i < k; i++)
		for (int m = i; m > 0 && js[m - 1].job > js[m].job; m--) {
			struct jobstate t = js[m];

			js[m] = js[m - 1];
			js[m - 1] = t;
		}
	if (k == 0) {
		free(js);
		js = NULL;
	}
	*ret = js;
	return k;
}

/* ---- the lock, the marker, removal ------------------------------------ */

int jobstate_lock(const char *base, bool wait)
{
	char path[4096];
	int fd, r;

	snprintf(path, sizeof(path), "%s/" JOBSTATE_LOCK, base);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while ((r = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB))) < 0 && errno == EINTR)
		;
	if (r < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int jobstate_mark_pending(const char *jobdir, const char *why)
{
	char path[4096], line[sizeof(((struct jobstate *)0)->why)];
	int fd, n, r = 0;

	snprintf(path, sizeof(path), "%s/" JOBSTATE_PENDING, jobdir);
	snprintf(line, sizeof(line) - 1, "%s", why);
	textbuf_unctrl(line);
	n = (int)strlen(line);
	line[n++] = '\n';
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, line, (size_t)n) != n)
		r = -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

int jobstate_remove(const char *jobdir)
{
	static const char *const files[] = { JOBSTATE_POLICY, JOBSTATE_OUTCOME, JOBSTATE_PENDING, "lock",
					     "journal.new" };
	char path[4096];

	snprintf(path, sizeof(path), "%s/journal", jobdir);
	if (access(path, F_OK) == 0)
		return -EBUSY;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", jobdir, files[i]);
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
	}
	return rmdir(jobdir) < 0 && errno != ENOENT ? -errno : 0;
}

/* ---- the daemon's retry ------------------------------------------------ */

/* Revert and remove one pending job dir.  0 or -errno with err. */
static int retry_one(const struct fsroot *root, const struct jobstate *e, const char *sysroot,
		     struct apply_changes *rep, struct nt_err *err)
{
	char rel[256], dir[4096];
	int r;

	snprintf(rel, sizeof(rel), JOBSTATE_DIR "/%u", e->job);
	fsroot_display(root, rel, dir, sizeof(dir));
	r = apply_revert(dir, sysroot, rep, err);
	if (r < 0)
		return r;
	r = jobstate_remove(dir);
	return r < 0 ? err_set(err, r, "%s: reverted, but not removed: %s", dir, nt_strerror(-r)) : 0;
}

int jobstate_retry_pending(const struct fsroot *root, const char *sysroot, struct apply_changes *rep,
			   struct nt_err *err)
{
	struct jobstate *js = NULL;
	char base[4096];
	int n, lk, done = 0, first = 0;

	n = jobstate_list(root, JOBSTATE_DIR, &js);
	if (n == -ENOENT || n == 0)
		return 0;
	if (n < 0)
		return err_set(err, n, "%s: %s", fsroot_display(root, JOBSTATE_DIR, base, sizeof(base)), nt_strerror(-n));
	fsroot_display(root, JOBSTATE_DIR, base, sizeof(base));
	if ((lk = jobstate_lock(base, false)) < 0) {
		free(js);
		if (lk == -EWOULDBLOCK)
			return 0;
		return err_set(err, lk, "%s/" JOBSTATE_LOCK ": %s", base, nt_strerror(-lk));
	}
	for (int i = 0; i < n; i++) {
		struct nt_err e1 = { 0 };
		int r;

		if (!js[i].pending)
			continue;
		if ((r = retry_one(root, &js[i], sysroot, rep, &e1)) == 0)
			done++;
		else if (!first)
			first = err_set(err, r, "Slurm job %u's pending revert: %s", js[i].job, e1.msg);
	}
	close(lk);
	free(js);
	return first ? first : done;
}
