/* SPDX-License-Identifier: MIT */
/* child.c — see child.h.
 *
 * Divisions: one fd; closing the rest (close_range, /proc/self/fd, the fd
 * limit); the whole detach.  Only async-signal-safe calls: this runs
 * between fork and exec.
 */
#include "base/child.h"
#include "base/child_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* ---- one fd ------------------------------------------------------------- */

int child_move_fd(int fd, int target)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0) < 0 ? -errno : 0;
	return dup2(fd, target) < 0 ? -errno : 0;
}

int child_stdin_null(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = child_move_fd(fd, 0);
	if (fd != 0)
		close(fd);
	return r;
}

/* ---- closing the rest --------------------------------------------------- */

/* A decimal name of /proc/self/fd as a number; -1 for "." and "..". */
static int fd_name(const char *s)
{
	long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 1 << 30)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return (int)v;
}

/* One pass over /proc/self/fd (dir, open), closing what is >= first and not
 * dir itself.  The number closed, or -errno. */
static int close_listed(int dir, int first)
{
	char buf[4096] __attribute__((aligned(8)));
	int closed = 0;
	long n;

	if (lseek(dir, 0, SEEK_SET) < 0)
		return -errno;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			int fd = fd_name(d->d_name);

			if (fd >= first && fd != dir && close(fd) == 0)
				closed++;
			off += d->d_reclen;
		}
	}
	return n < 0 ? -errno : closed;
}

int child_close_by_proc(int first)
{
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;

	if (dir < 0)
		return -errno;
	for (int pass = 0; pass < 16 && (r = close_listed(dir, first)) > 0; pass++)
		;
	close(dir);
	return r < 0 ? r : 0;
}

int child_close_by_limit(int first)
{
	struct rlimit rl;
	rlim_t max = 1 << 20;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < max)
		max = rl.rlim_cur;
	for (rlim_t fd = (rlim_t)first; fd < max; fd++)
		close((int)fd);
	return 0;
}

int child_close_from(int first)
{
	if (first < 0)
		return -EINVAL;
	/* ENOSYS before 5.9; EPERM where a seccomp filter does not know it */
	if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
		return 0;
	if (child_close_by_proc(first) == 0)
		return 0;
	return child_close_by_limit(first);
}

/* ---- the whole detach --------------------------------------------------- */

int child_detach(int keep_fd)
{
	int r;

	if (getsid(0) != getpid() && setsid() < 0)
		return -errno;
	if (keep_fd >= 0 && (r = child_move_fd(keep_fd, CHILD_FIRST_FD)) < 0)
		return r;
	if ((r = child_stdin_null()) < 0)
		return r;
	return child_close_from(keep_fd >= 0 ? CHILD_FIRST_FD + 1 : CHILD_FIRST_FD);
}

const char *child_strerror(int e)
{
	const char *s = strerrordesc_np(e);

	return s ? s : "Unknown error";
}
