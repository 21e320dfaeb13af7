/* SPDX-License-Identifier: MIT */
/* test_child.c — a forked child detached as a job is (child.h): its fd
 * table (0, 1, 2 and the kept fd at 3, whatever the parent held: a pipe,
 * a socket, fds dup'ed high, a kept fd that is close-on-exec or already
 * 3), its own session, /dev/null on fd 0; the /proc/self/fd walk and the
 * fd-limit loop that stand in for close_range on older kernels. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "base/child.h"
#include "base/child_test.h"
#include "test_util.h"

/* In the child: "fds 0 1 2 3" (the open fds but the listing's own, ascending), "sid 1" when it
 * leads its session, "stdin /dev/null", "keep 0" (fd 3's close-on-exec
 * flag), one line each, to fd out. */
static void report(int out)
{
	char line[512], link[256];
	size_t n = 0;
	DIR *d = opendir("/proc/self/fd");
	int fds[64], k = 0;
	ssize_t len;
	struct dirent *e;

	while (d && (e = readdir(d)) && k < 64)
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			fds[k++] = atoi(e->d_name);
	if (d)
		closedir(d);
	n += (size_t)snprintf(line + n, sizeof(line) - n, "fds");
	for (int lo = -1, i; ; lo = fds[i]) {          /* ascending, without sorting in place */
		int next = -1;

		for (i = 0; i < k; i++)
			if (fds[i] > lo && (next < 0 || fds[i] < fds[next]))
				next = i;
		if (next < 0)
			break;
		i = next;
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %d", fds[i]);
	}
	len = readlink("/proc/self/fd/0", link, sizeof(link) - 1);
	link[len > 0 ? len : 0] = '\0';
	n += (size_t)snprintf(line + n, sizeof(line) - n, "\nsid %d\nstdin %s\nkeep %d\n", getsid(0) == getpid(), link,
			      fcntl(CHILD_FIRST_FD, F_GETFD) & FD_CLOEXEC);
	(void)!write(out, line, n);
}

/* Fork; the child makes keep (a pipe's write end, moved to want_keep
 * first, with its close-on-exec flag as given) the fd to keep, runs
 * child_detach and reports through it.  The report into buf. */
static void detached_report(int want_keep, bool cloexec, char *buf, size_t size)
{
	int p[2], status;
	ssize_t n = 0, r;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int keep = p[1];

		if (want_keep >= 0 && keep != want_keep) {
			if (dup3(keep, want_keep, cloexec ? O_CLOEXEC : 0) < 0)
				_exit(2);
			keep = want_keep;
		}
		if (!cloexec)
			fcntl(keep, F_SETFD, 0);
		close(p[0]);
		/* ab's child leads its session already; the gate's does not */
		if (want_keep >= 0 && setsid() < 0)
			_exit(3);
		if (child_detach(keep) < 0)
			_exit(4);
		report(CHILD_FIRST_FD);
		_exit(0);
	}
	close(p[1]);
	while (n < (ssize_t)size - 1 && (r = read(p[0], buf + n, size - 1 - (size_t)n)) > 0)
		n += r;
	buf[n] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The parent holds a socket (without close-on-exec, as libcurl's are),
 * /dev/null dup'ed to 17 and 40 and a pipe: the child has 0, 1, 2 and the
 * kept fd at 3 only, wherever that was (the pipe's number, 3 already and
 * close-on-exec, 60), in a session of its own whether it made one first or
 * not. */
static void test_detach_keeps_nothing_else(void **state)
{
	int s = socket(AF_INET, SOCK_STREAM, 0), null = open("/dev/null", O_RDONLY);
	char buf[512];

	(void)state;
	assert_true(s >= 0 && null >= 0);
	assert_int_equal(dup2(null, 17), 17);
	assert_int_equal(dup2(null, 40), 40);
	for (int keep = 0; keep < 3; keep++) {
		static const int at[] = { -1, 3, 60 };

		detached_report(at[keep], keep == 1, buf, sizeof(buf));
		print_message("kept at %d:\n%s", at[keep], buf);
		assert_string_equal(buf, "fds 0 1 2 3\nsid 1\nstdin /dev/null\nkeep 0\n");
	}
	close(17);
	close(40);
	close(null);
	close(s);
}

/* child_move_fd onto itself clears close-on-exec; onto another dup2's */
static void test_move_fd(void **state)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), hi;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(child_move_fd(fd, fd), 0);
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	hi = 50;
	assert_int_equal(child_move_fd(fd, hi), 0);
	assert_int_equal(fcntl(hi, F_GETFD) & FD_CLOEXEC, 0);
	assert_int_equal(child_move_fd(99, 98), -EBADF);
	close(hi);
	close(fd);
}

/* The fallbacks close what close_range would: fds from first on, those
 * below kept; the /proc walk also with more fds than one getdents64
 * buffer lists. */
static void test_close_fallbacks(void **state)
{
	int (*const way[])(int) = { child_close_by_proc, child_close_by_limit };

	(void)state;
	for (size_t w = 0; w < sizeof(way) / sizeof(way[0]); w++) {
		int null = open("/dev/null", O_RDONLY);

		assert_true(null >= 0);
		for (int fd = 200; fd < 600; fd++)
			assert_int_equal(dup2(null, fd), fd);
		assert_int_equal(dup2(null, 150), 150);
		assert_int_equal(way[w](200), 0);
		for (int fd = 200; fd < 600; fd++)
			assert_int_equal(fcntl(fd, F_GETFD), -1);
		assert_true(fcntl(150, F_GETFD) >= 0);
		assert_true(fcntl(2, F_GETFD) >= 0);
		close(150);
		close(null);
	}
	assert_int_equal(child_close_from(-1), -EINVAL);
	assert_string_equal(child_strerror(ENOENT), "No such file or directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detach_keeps_nothing_else),
		cmocka_unit_test(test_move_fd),
		cmocka_unit_test(test_close_fallbacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
