/* SPDX-License-Identifier: MIT */
/* test_metrics.c — Prometheus exposition: names, values, escaping and
 * rendering; the textfile's atomic replace, including failures that must
 * leave the old file; the HTTP endpoint on port 0 over a real socket; and
 * promtool's verdict on the rendered text where promtool is installed. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "daemon/metrics.h"
#include "daemon/metrics_test.h"
#include "test_util.h"

static void test_names(void **state)
{
	(void)state;
	assert_true(metrics_name_valid("nodetune_drift_total"));
	assert_true(metrics_name_valid("a:b_c9"));
	assert_true(metrics_name_valid("_x"));
	assert_true(metrics_name_valid(":x"));
	assert_false(metrics_name_valid(""));
	assert_false(metrics_name_valid("9x"));
	assert_false(metrics_name_valid("__x"));
	assert_false(metrics_name_valid("a-b"));
	assert_false(metrics_name_valid("a b"));
	assert_false(metrics_name_valid("é"));
	assert_true(metrics_label_valid("gpu"));
	assert_false(metrics_label_valid("a:b"));
	assert_false(metrics_label_valid("__name__"));
	assert_false(metrics_label_valid("0a"));
	assert_false(metrics_label_valid(NULL));
}

static void test_values(void **state)
{
	static const double cases[] = { 0, 1, -1, 0.1, 1.0 / 3, 1e300, 5e-324, 123456789012345678.0,
					-2.5e-7, 9007199254740993.0 };
	char buf[32];

	(void)state;
	assert_string_equal(metrics_format_value(INFINITY, buf, sizeof(buf)), "+Inf");
	assert_string_equal(metrics_format_value(-INFINITY, buf, sizeof(buf)), "-Inf");
	assert_string_equal(metrics_format_value(NAN, buf, sizeof(buf)), "NaN");
	assert_string_equal(metrics_format_value(0.1, buf, sizeof(buf)), "0.1");
	assert_string_equal(metrics_format_value(42, buf, sizeof(buf)), "42");
	assert_string_equal(metrics_format_value(40, buf, sizeof(buf)), "40");          /* not 4e+01 */
	assert_string_equal(metrics_format_value(-300, buf, sizeof(buf)), "-300");
	assert_string_equal(metrics_format_value(1e20, buf, sizeof(buf)), "1e+20");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		metrics_format_value(cases[i], buf, sizeof(buf));
		assert_true(strtod(buf, NULL) == cases[i]);
	}
}

/* A set of every kind, with labels that need escaping. */
static struct metrics *sample_set(void)
{
	struct nt_err err = { 0 };
	struct metrics *m = metrics_new();

	assert_non_null(m);
	assert_int_equal(metrics_declare(m, "nodetune_drift_total", METRIC_COUNTER,
					 "Knobs found changed by another writer \\ corrected.\nSecond line.", &err), 0);
	assert_int_equal(metrics_declare(m, "nodetune_knob_value", METRIC_GAUGE, "Effective value.", &err), 0);
	assert_int_equal(metrics_declare(m, "nodetune_build_info", METRIC_INFO, "Build facts.", &err), 0);
	assert_int_equal(metrics_add(m, "nodetune_drift_total",
				     (const char *[]){ "path", "/proc/sys/vm/swappiness", "knob", "vm.swappiness", NULL },
				     3, &err), 0);
	assert_int_equal(metrics_add(m, "nodetune_knob_value",
				     (const char *[]){ "knob", "odd \"q\" \\ back\nnl", NULL }, 0.1, &err), 0);
	assert_int_equal(metrics_add(m, "nodetune_knob_value", (const char *[]){ "knob", "inf", NULL }, INFINITY, &err), 0);
	assert_int_equal(metrics_add(m, "nodetune_knob_value", (const char *[]){ "knob", "nan", NULL }, NAN, &err), 0);
	assert_int_equal(metrics_add(m, "nodetune_knob_value", NULL, -INFINITY, &err), 0);
	assert_int_equal(metrics_add(m, "nodetune_build_info",
				     (const char *[]){ "version", "0.1", "cuda", "13.0", NULL }, 1, &err), 0);
	return m;
}

static const char expected_text[] =
	"# HELP nodetune_drift_total Knobs found changed by another writer \\\\ corrected.\\nSecond line.\n"
	"# TYPE nodetune_drift_total counter\n"
	"nodetune_drift_total{knob=\"vm.swappiness\",path=\"/proc/sys/vm/swappiness\"} 3\n"
	"# HELP nodetune_knob_value Effective value.\n"
	"# TYPE nodetune_knob_value gauge\n"
	"nodetune_knob_value{knob=\"odd \\\"q\\\" \\\\ back\\nnl\"} 0.1\n"
	"nodetune_knob_value{knob=\"inf\"} +Inf\n"
	"nodetune_knob_value{knob=\"nan\"} NaN\n"
	"nodetune_knob_value -Inf\n"
	"# HELP nodetune_build_info Build facts.\n"
	"# TYPE nodetune_build_info gauge\n"
	"nodetune_build_info{cuda=\"13.0\",version=\"0.1\"} 1\n";

static void test_render(void **state)
{
	struct nt_err err = { 0 };
	struct metrics *m = sample_set();
	char *text = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(metrics_render(m, &text, &len, &err), 0);
	assert_string_equal(text, expected_text);
	assert_int_equal(len, strlen(expected_text));
	free(text);
	metrics_free(m);
	metrics_free(NULL);
}

static void test_refusals(void **state)
{
	struct nt_err err = { 0 };
	struct metrics *m = metrics_new();
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(metrics_declare(m, "bad-name", METRIC_GAUGE, "h", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "bad-name"));
	assert_int_equal(metrics_declare(m, "__reserved", METRIC_GAUGE, "h", &err), -EINVAL);
	assert_int_equal(metrics_declare(m, "nodetune_drift", METRIC_COUNTER, "h", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "_total"));
	assert_int_equal(metrics_declare(m, "nodetune_build", METRIC_INFO, "h", &err), -EINVAL);
	assert_int_equal(metrics_declare(m, "x", METRIC_GAUGE, "bad \xff utf8", &err), -EINVAL);
	assert_int_equal(metrics_declare(m, "x", METRIC_GAUGE, NULL, &err), -EINVAL);
	assert_int_equal(metrics_declare(m, "x", METRIC_GAUGE, "h", &err), 0);
	assert_int_equal(metrics_declare(m, "x", METRIC_GAUGE, "h", &err), -EEXIST);
	assert_int_equal(metrics_declare(m, "c_total", METRIC_COUNTER, "h", &err), 0);
	assert_int_equal(metrics_declare(m, "i_info", METRIC_INFO, "h", &err), 0);

	assert_int_equal(metrics_add(m, "nope", NULL, 1, &err), -ENOENT);
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "a-b", "v", NULL }, 1, &err), -EINVAL);
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "__name__", "v", NULL }, 1, &err), -EINVAL);
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "a", "v", "a", "w", NULL }, 1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "twice"));
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "a", NULL }, 1, &err), -EINVAL);
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "a", "\xc0\x80", NULL }, 1, &err), -EINVAL);
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "a", "\xed\xa0\x80", NULL }, 1, &err), -EINVAL);
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "a", "\xe2\x82", NULL }, 1, &err), -EINVAL);
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "a", "\xe2\x82\xac ok", NULL }, 1, &err), 0);
	assert_int_equal(metrics_add(m, "c_total", NULL, -1, &err), -EINVAL);
	assert_int_equal(metrics_add(m, "c_total", NULL, NAN, &err), -EINVAL);
	assert_int_equal(metrics_add(m, "i_info", NULL, 2, &err), -EINVAL);
	/* the same label set, in another order, is the same series */
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "a", "1", "b", "2", NULL }, 1, &err), 0);
	assert_int_equal(metrics_add(m, "x", (const char *[]){ "b", "2", "a", "1", NULL }, 5, &err), -EEXIST);
	/* refusals left the set as it was */
	assert_int_equal(metrics_render(m, &text, &len, &err), 0);
	assert_string_equal(text, "# HELP x h\n# TYPE x gauge\nx{a=\"\xe2\x82\xac ok\"} 1\nx{a=\"1\",b=\"2\"} 1\n"
				  "# HELP c_total h\n# TYPE c_total counter\n# HELP i_info h\n# TYPE i_info gauge\n");
	free(text);
	metrics_free(m);
}

static void test_promtool(void **state)
{
	struct nt_err err = { 0 };
	struct metrics *m;
	char dir[64], path[128], cmd[512], *text;
	size_t len;

	(void)state;
	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		test_need("promtool", "not installed (Debian package prometheus, install-deps.sh daemon)");
	}
	m = sample_set();
	assert_int_equal(metrics_render(m, &text, &len, &err), 0);
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/m.prom", dir);
	assert_int_equal(test_write(dir, "m.prom", text), 0);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s'", path);
	assert_int_equal(system(cmd), 0);
	free(text);
	metrics_free(m);
	test_rmrf(dir);
}

/* ---- textfile ---- */

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static unsigned count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static ssize_t write_enospc(int fd, const void *buf, size_t count)
{
	(void)fd, (void)buf, (void)count;
	errno = ENOSPC;
	return -1;
}

static int fsync_eio(int fd)
{
	(void)fd;
	errno = EIO;
	return -1;
}

static int renameat_exdev(int a, const char *b, int c, const char *d)
{
	(void)a, (void)b, (void)c, (void)d;
	errno = EXDEV;
	return -1;
}

static void test_textfile(void **state)
{
	struct nt_err err = { 0 };
	struct metrics_syscalls saved = metrics_sys;
	char dir[64], path[128];
	struct stat st;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/nodetune.prom", dir);
	assert_int_equal(metrics_write_textfile(dir, "nodetune", "a 1\n", 4, &err), 0);
	assert_string_equal(slurp(path), "a 1\n");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(metrics_write_textfile(dir, "nodetune", "a 2\n", 4, &err), 0);
	assert_string_equal(slurp(path), "a 2\n");
	assert_int_equal(count_entries(dir), 1);

	/* each failing step leaves the old file and no temp behind */
	metrics_sys.write = write_enospc;
	assert_int_equal(metrics_write_textfile(dir, "nodetune", "a 3\n", 4, &err), -ENOSPC);
	assert_non_null(strstr(err.msg, "write"));
	metrics_sys = saved;
	metrics_sys.fsync = fsync_eio;
	assert_int_equal(metrics_write_textfile(dir, "nodetune", "a 3\n", 4, &err), -EIO);
	metrics_sys = saved;
	metrics_sys.renameat = renameat_exdev;
	assert_int_equal(metrics_write_textfile(dir, "nodetune", "a 3\n", 4, &err), -EXDEV);
	metrics_sys = saved;
	assert_string_equal(slurp(path), "a 2\n");
	assert_int_equal(count_entries(dir), 1);

	/* bad names and a missing directory */
	assert_int_equal(metrics_write_textfile(dir, "../x", "", 0, &err), -EINVAL);
	assert_int_equal(metrics_write_textfile(dir, ".hidden", "", 0, &err), -EINVAL);
	assert_int_equal(metrics_write_textfile(dir, "", "", 0, &err), -EINVAL);
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(metrics_write_textfile(path, "n", "", 0, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "missing"));

	/* a symlink in place of the file is replaced, not followed */
	snprintf(path, sizeof(path), "%s/target", dir);
	assert_int_equal(test_write(dir, "target", "keep\n"), 0);
	snprintf(path, sizeof(path), "%s/link.prom", dir);
	assert_int_equal(symlink("target", path), 0);
	assert_int_equal(metrics_write_textfile(dir, "link", "b 1\n", 4, &err), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	snprintf(path, sizeof(path), "%s/target", dir);
	assert_string_equal(slurp(path), "keep\n");
	test_rmrf(dir);
}

/* ---- HTTP endpoint ---- */

static void test_parse_listen(void **state)
{
	static const char *const bad[] = {
		"", "9477", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:+80",
		"127.0.0.1:80x", "127.0.0.1: 80", "localhost:9477", "::1:9477", "[::1]", "[]:80",
		"[127.0.0.1]:80", "1.2.3:80", "[::1:80", "127.0.0.1:123456",
	};
	struct nt_err err = { 0 };
	struct sockaddr_storage sa;
	socklen_t len;

	(void)state;
	assert_int_equal(metrics_parse_listen("127.0.0.1:9477", &sa, &len, &err), 0);
	assert_int_equal(sa.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&sa)->sin_port), 9477);
	assert_int_equal(metrics_parse_listen("[::1]:0", &sa, &len, &err), 0);
	assert_int_equal(sa.ss_family, AF_INET6);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(metrics_parse_listen(":65535", &sa, &len, &err), 0);
	assert_int_equal(sa.ss_family, AF_INET6);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		if (metrics_parse_listen(bad[i], &sa, &len, &err) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_non_null(strstr(err.msg, "listen address"));
	}
	assert_int_equal(metrics_parse_listen(NULL, &sa, &len, &err), -EINVAL);
}

/* One request over a fresh connection; the whole answer into buf. */
static int http(unsigned short port, const char *method, const char *path, char *buf, size_t size)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 10 };
	char req[256];
	size_t got = 0;
	ssize_t n;
	int fd, status = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", method, path);
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	while (got + 1 < size && (n = recv(fd, buf + got, size - 1 - got, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	sscanf(buf, "HTTP/1.%*d %d", &status);
	return status;
}

static const char *body_of(const char *resp)
{
	const char *p = strstr(resp, "\r\n\r\n");

	return p ? p + 4 : "";
}

static void test_server(void **state)
{
	struct nt_err err = { 0 };
	struct metrics_server *s, *s2;
	char buf[8192], addr[32];
	unsigned short port;

	(void)state;
	s = metrics_server_start("127.0.0.1:0", &err);
	assert_non_null(s);
	port = metrics_server_port(s);
	assert_true(port > 0);
	assert_int_equal(http(port, "GET", "/metrics", buf, sizeof(buf)), 503);

	assert_int_equal(metrics_server_publish(s, expected_text, strlen(expected_text)), 0);
	assert_int_equal(http(port, "GET", "/metrics", buf, sizeof(buf)), 200);
	assert_non_null(strstr(buf, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	assert_string_equal(body_of(buf), expected_text);
	assert_int_equal(http(port, "GET", "/metrics?x=1", buf, sizeof(buf)), 200);

	assert_int_equal(http(port, "HEAD", "/metrics", buf, sizeof(buf)), 200);
	assert_string_equal(body_of(buf), "");
	assert_int_equal(http(port, "GET", "/", buf, sizeof(buf)), 404);
	assert_int_equal(http(port, "GET", "/metricsx", buf, sizeof(buf)), 404);
	assert_int_equal(http(port, "POST", "/metrics", buf, sizeof(buf)), 405);
	assert_non_null(strstr(buf, "\r\nAllow: GET, HEAD\r\n"));
	assert_int_equal(http(port, "DELETE", "/metrics", buf, sizeof(buf)), 405);

	/* a publish is what the next scrape sees */
	assert_int_equal(metrics_server_publish(s, "x 2\n", 4), 0);
	assert_int_equal(http(port, "GET", "/metrics", buf, sizeof(buf)), 200);
	assert_string_equal(body_of(buf), "x 2\n");

	/* the port is taken while it runs, and free once stopped */
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	s2 = metrics_server_start(addr, &err);
	assert_null(s2);
	assert_int_equal(err.code, -EADDRINUSE);
	assert_non_null(strstr(err.msg, addr));
	metrics_server_stop(s);
	s = metrics_server_start(addr, &err);
	assert_non_null(s);
	metrics_server_stop(s);
	metrics_server_stop(NULL);

	assert_null(metrics_server_start("localhost:0", &err));
	assert_int_equal(err.code, -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_promtool),
		cmocka_unit_test(test_textfile),
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_server),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
