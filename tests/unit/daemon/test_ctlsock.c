/* SPDX-License-Identifier: MIT */
/* test_ctlsock.c — the status socket: the request parser; a query round
 * trip; the socket file's safety (a non-socket refused, a stale socket
 * replaced, a live one refused, the directory checked, mode 0600); hostile
 * clients (garbage, a 1 MB line, one that never writes, one that never
 * reads, too many) that must not delay a well-behaved query; deadlines;
 * peer credentials. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "daemon/ctlsock.h"
#include "daemon/ctlsock_test.h"
#include "test_util.h"

static int64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_parse(void **state)
{
	static const char *const bad[] = {
		"", "   ", "status xml", "status json more", "stat\x01us", "status \xff", "a b c d e", "status\tjson",
	};
	struct nt_err err = { 0 };
	struct ctlsock_request req = { 0 };
	char *giant = malloc(CTLSOCK_LINE_MAX + 10);

	(void)state;
	assert_int_equal(ctlsock_parse_request("status", 6, &req, &err), 0);
	assert_int_equal(req.verb, CTLSOCK_STATUS);
	assert_int_equal(ctlsock_parse_request("  status   json ", 16, &req, &err), 0);
	assert_int_equal(req.format, CTLSOCK_FORMAT_JSON);
	assert_int_equal(ctlsock_parse_request("status\r", 7, &req, &err), 0);
	assert_int_equal(ctlsock_parse_request("bogus", 5, &req, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "unknown request 'bogus'"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		if (ctlsock_parse_request(bad[i], strlen(bad[i]), &req, &err) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_null(strchr(err.msg, '\n'));
		assert_true(err.msg[0]);
	}
	assert_int_equal(ctlsock_parse_request("st\0tus", 6, &req, &err), -EINVAL);
	memset(giant, 'a', CTLSOCK_LINE_MAX + 10);
	assert_int_equal(ctlsock_parse_request(giant, CTLSOCK_LINE_MAX + 10, &req, &err), -EINVAL);
	free(giant);
}

/* A fresh 0700 directory and the socket path in it. */
static void sock_path(char *dir, size_t dsize, char *path, size_t psize)
{
	assert_non_null(test_tmpdir(dir, dsize));
	snprintf(path, psize, "%s/nt.sock", dir);
}

static void test_roundtrip(void **state)
{
	struct nt_err err = { 0 };
	char dir[64], path[96], *reply = NULL;
	struct ctlsock *s;
	struct stat st;

	(void)state;
	sock_path(dir, sizeof(dir), path, sizeof(path));
	s = ctlsock_start(path, NULL, &err);
	assert_non_null(s);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);

	assert_int_equal(ctlsock_query(path, "status", 5000, &reply, &err), -EREMOTEIO);
	assert_null(reply);
	assert_non_null(strstr(err.msg, "no status published yet"));
	assert_int_equal(ctlsock_publish(s, "{\"state\": \"ok\", \"drift\": 0}"), 0);
	assert_int_equal(ctlsock_query(path, "status", 5000, &reply, &err), 0);
	assert_string_equal(reply, "{\"state\": \"ok\", \"drift\": 0}");
	free(reply);
	reply = NULL;
	assert_int_equal(ctlsock_query(path, "status json", 5000, &reply, &err), 0);
	assert_string_equal(reply, "{\"state\": \"ok\", \"drift\": 0}");
	free(reply);
	reply = NULL;
	assert_int_equal(ctlsock_query(path, "bogus", 5000, &reply, &err), -EREMOTEIO);
	assert_non_null(strstr(err.msg, "unknown request 'bogus'"));
	assert_int_equal(ctlsock_query(path, "two\nlines", 5000, &reply, &err), -EINVAL);
	assert_int_equal(ctlsock_publish(s, "{\n}"), -EINVAL);
	assert_int_equal(ctlsock_publish(s, "{\"state\": \"new\"}"), 0);
	assert_int_equal(ctlsock_query(path, "status", 5000, &reply, &err), 0);
	assert_string_equal(reply, "{\"state\": \"new\"}");
	free(reply);
	reply = NULL;

	ctlsock_stop(s);
	ctlsock_stop(NULL);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(ctlsock_query(path, "status", 5000, &reply, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no daemon is listening on"));
	assert_null(reply);
	test_rmrf(dir);
}

/* Bind a socket at path and close it without unlinking: a stale socket. */
static void make_stale(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
}

static void test_socket_file(void **state)
{
	struct nt_err err = { 0 };
	char dir[64], path[96], sub[96], longp[200], *reply = NULL;
	struct ctlsock *s, *s2;

	(void)state;
	sock_path(dir, sizeof(dir), path, sizeof(path));
	/* not a socket: refused and left alone */
	assert_int_equal(test_write(dir, "nt.sock", "precious\n"), 0);
	assert_null(ctlsock_start(path, NULL, &err));
	assert_int_equal(err.code, -EEXIST);
	assert_non_null(strstr(err.msg, "not a socket"));
	assert_int_equal(unlink(path), 0);

	/* stale: replaced */
	make_stale(path);
	assert_int_equal(ctlsock_query(path, "status", 5000, &reply, &err), -ECONNREFUSED);
	assert_non_null(strstr(err.msg, "no daemon is listening on"));
	s = ctlsock_start(path, NULL, &err);
	assert_non_null(s);
	assert_int_equal(ctlsock_publish(s, "{}"), 0);

	/* live: a second server is refused, the first keeps serving */
	s2 = ctlsock_start(path, NULL, &err);
	assert_null(s2);
	assert_int_equal(err.code, -EADDRINUSE);
	assert_int_equal(ctlsock_query(path, "status", 5000, &reply, &err), 0);
	assert_string_equal(reply, "{}");
	free(reply);
	ctlsock_stop(s);

	/* the directory: missing, writable by others, too long a path */
	snprintf(sub, sizeof(sub), "%s/missing/nt.sock", dir);
	assert_null(ctlsock_start(sub, NULL, &err));
	assert_int_equal(err.code, -ENOENT);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_null(ctlsock_start(path, NULL, &err));
	assert_int_equal(err.code, -EPERM);
	assert_non_null(strstr(err.msg, "writable by group or others"));
	assert_int_equal(chmod(dir, 0700), 0);
	memset(longp, 'x', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_null(ctlsock_start(longp, NULL, &err));
	assert_int_equal(err.code, -ENAMETOOLONG);
	test_rmrf(dir);
}

static int raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Read until EOF or timeout_ms; the bytes in buf.  Returns the count, or
 * -1 on timeout. */
static ssize_t read_all(int fd, char *buf, size_t size, int timeout_ms)
{
	int64_t end = ms_now() + timeout_ms;
	size_t got = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (ms_now() >= end || poll(&p, 1, (int)(end - ms_now())) <= 0)
			return -1;
		n = recv(fd, buf + got, size - 1 - got, 0);
		if (n <= 0 || got + (size_t)n >= size - 1) {
			got += n > 0 ? (size_t)n : 0;
			buf[got] = '\0';
			return (ssize_t)got;
		}
		got += (size_t)n;
	}
}

/* A 1 MB document, valid JSON on one line. */
static char *big_doc(void)
{
	size_t n = 1 << 20;
	char *d = malloc(n + 16);

	strcpy(d, "{\"pad\": \"");
	memset(d + 9, 'p', n);
	strcpy(d + 9 + n, "\"}");
	return d;
}

static void test_hostile_clients(void **state)
{
	struct ctlsock_opts opts = { .deadline_ms = 60000 }; /* they stay while we measure */
	struct nt_err err = { 0 };
	char dir[64], path[96], buf[512], *reply = NULL, *doc = big_doc(), *mb = malloc(1 << 20);
	int garbage, longline, silent, deaf;
	struct ctlsock *s;
	int64_t t0;
	size_t sent = 0;

	(void)state;
	sock_path(dir, sizeof(dir), path, sizeof(path));
	s = ctlsock_start(path, &opts, &err);
	assert_non_null(s);
	assert_int_equal(ctlsock_publish(s, doc), 0);

	garbage = raw_connect(path);
	assert_int_equal(send(garbage, "\x00\xff\x01garbage\n", 11, MSG_NOSIGNAL), 11);
	longline = raw_connect(path);
	memset(mb, 'z', 1 << 20);
	fcntl(longline, F_SETFL, O_NONBLOCK);
	for (ssize_t n; sent < (1u << 20) && (n = send(longline, mb + sent, (1 << 20) - sent, MSG_NOSIGNAL)) > 0;)
		sent += (size_t)n;
	silent = raw_connect(path);            /* connects, never writes */
	deaf = raw_connect(path);              /* asks for 1 MB, never reads */
	assert_int_equal(send(deaf, "status\n", 7, MSG_NOSIGNAL), 7);

	/* a well-behaved query and the daemon's publish are not held up */
	t0 = ms_now();
	assert_int_equal(ctlsock_query(path, "status", 10000, &reply, &err), 0);
	assert_string_equal(reply, doc);
	assert_int_equal(ctlsock_publish(s, doc), 0);
	assert_true(ms_now() - t0 < 10000);
	free(reply);

	/* garbage and the long line got their error line */
	assert_true(read_all(garbage, buf, sizeof(buf), 10000) > 0);
	assert_non_null(strstr(buf, "{\"error\": \"request holds byte 0x00"));
	assert_true(read_all(longline, buf, sizeof(buf), 10000) > 0);
	assert_non_null(strstr(buf, "{\"error\": \"request line longer than 4095 bytes\"}\n"));

	close(garbage);
	close(longline);
	close(silent);
	close(deaf);
	ctlsock_stop(s); /* with the clients it still holds */
	free(doc);
	free(mb);
	test_rmrf(dir);
}

static void test_deadline_and_cap(void **state)
{
	struct ctlsock_opts opts = { .clients_max = 2, .deadline_ms = 300 };
	struct nt_err err = { 0 };
	char dir[64], path[96], buf[256], *reply = NULL;
	struct ctlsock *s;
	int a, b, c;
	int64_t t0;

	(void)state;
	sock_path(dir, sizeof(dir), path, sizeof(path));
	s = ctlsock_start(path, &opts, &err);
	assert_non_null(s);
	assert_int_equal(ctlsock_publish(s, "{}"), 0);
	t0 = ms_now();
	a = raw_connect(path);
	b = raw_connect(path);
	c = raw_connect(path);
	/* the third is over the cap: one line, closed at once */
	assert_true(read_all(c, buf, sizeof(buf), 10000) > 0);
	assert_non_null(strstr(buf, "busy"));
	/* the two silent ones are dropped at their deadline, not before */
	assert_int_equal(read_all(a, buf, sizeof(buf), 20000), 0);
	assert_int_equal(read_all(b, buf, sizeof(buf), 20000), 0);
	assert_true(ms_now() - t0 >= 290);
	assert_int_equal(ctlsock_query(path, "status", 10000, &reply, &err), 0);
	assert_string_equal(reply, "{}");
	free(reply);
	close(a);
	close(b);
	close(c);
	ctlsock_stop(s);
	test_rmrf(dir);
}

/* As uid 65534 in a child: the status of ctlsock_query, and its message. */
static int query_as_nobody(const char *path, char *msg, size_t size)
{
	int pfd[2], status;
	pid_t pid;
	ssize_t n;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct nt_err err = { 0 };
		char *reply = NULL;
		int r;

		close(pfd[0]);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(99);
		r = ctlsock_query(path, "status", 10000, &reply, &err);
		if (write(pfd[1], err.msg, strlen(err.msg)) < 0)
			_exit(98);
		_exit(-r & 0xff);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, size - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return -WEXITSTATUS(status);
}

static void test_peer_credentials(void **state)
{
	struct nt_err err = { 0 };
	char dir[64], path[96], msg[1024];
	struct ctlsock *s;

	(void)state;
	if (geteuid() != 0) {
		test_skip_host("root", "not root: cannot query as another uid");
	}
	sock_path(dir, sizeof(dir), path, sizeof(path));
	assert_int_equal(chmod(dir, 0711), 0);
	s = ctlsock_start(path, NULL, &err);
	assert_non_null(s);
	assert_int_equal(ctlsock_publish(s, "{}"), 0);
	/* mode 0600 keeps others out at connect */
	assert_int_equal(query_as_nobody(path, msg, sizeof(msg)), -EACCES);
	assert_non_null(strstr(msg, "permission denied on"));
	/* and were the mode opened, SO_PEERCRED still refuses them */
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(query_as_nobody(path, msg, sizeof(msg)), -EREMOTEIO);
	assert_non_null(strstr(msg, "permission denied: uid 65534"));
	ctlsock_stop(s);
	test_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_socket_file),
		cmocka_unit_test(test_hostile_clients),
		cmocka_unit_test(test_deadline_and_cap),
		cmocka_unit_test(test_peer_credentials),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
