/* SPDX-License-Identifier: MIT */
/* test_util.h — helpers shared by the unit tests (header-only). */
#ifndef NODETUNE_TEST_UTIL_H
#define NODETUNE_TEST_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <glob.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* one check made that no cmocka assertion shows (a test that fails only
 * through fail_msg): tests/unit/assert_count.c counts it */
void test_checked(void);

/* Repository root: tests run from it (make), or NODETUNE_SRCDIR says where. */
static inline const char *test_srcdir(void)
{
	const char *d = getenv("NODETUNE_SRCDIR");

	return d ? d : ".";
}

static inline char *test_path(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", test_srcdir(), rel);
	return buf;
}

/* mkdir -p of the directory part of path. */
static inline void test_mkdirs(const char *path)
{
	char tmp[4096];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(tmp, 0755);
		*p = '/';
	}
}

/* Write content to dir/rel, creating directories. Returns 0 or -1. */
static inline int test_write(const char *dir, const char *rel, const char *content)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	test_mkdirs(path);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(content, f);
	return fclose(f);
}

/* A fresh temporary directory (caller removes it with test_rmrf). */
static inline char *test_tmpdir(char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/nodetune-test-XXXXXX");
	return mkdtemp(buf);
}

static inline void test_rmrf(const char *dir)
{
	char cmd[4200];

	if (!dir || strncmp(dir, "/tmp/nodetune-test-", 19))
		return; /* never anything else */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* Copy the repository's tree rel (a captured sysroot) into dst, made if
 * need be. Returns 0 or -1. */
static inline int test_copy_fixture(const char *rel, const char *dst)
{
	char src[4096], cmd[8400];

	test_path(src, sizeof(src), rel);
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(cmd, sizeof(cmd), "cp -r '%s/.' '%s/'", src, dst);
	return system(cmd) ? -1 : 0;
}

/* Cgroups of this process (named "PID-...") left below parent in any
 * hierarchy; the first is named on stderr. */
static inline size_t test_cgroup_leftovers(const char *parent)
{
	char pat[256];
	glob_t g;
	size_t n = 0;

	snprintf(pat, sizeof(pat), "/sys/fs/cgroup/{,*/}%s/%d-*", parent, (int)getpid());
	if (glob(pat, GLOB_BRACE | GLOB_ONLYDIR, NULL, &g) == 0)
		n = g.gl_pathc;
	if (n)
		fprintf(stderr, "left: %s\n", g.gl_pathv[0]);
	globfree(&g);
	return n;
}

/* ---- skips, each of one kind (tests/run-unit.sh lists them by reason) ----
 * cmocka's skip() says nothing; these say why, on a line run-unit.sh reads:
 *   test_skip_host(cap, fmt, ...)  this host lacks the capability cap, one
 *                             of tests/host-caps.sh's list ("root", "gpu",
 *                             "perf", "cgroup-cpu" ...): a skip only where
 *                             that script's probe (tools that are not
 *                             nodetune) finds no cap; where it finds one,
 *                             whatever said it is missing (most often the
 *                             code under test) is wrong: a failure
 *   test_need(dep, fmt, ...)  dep, which scripts/install-deps.sh provides
 *                             (etcd, promtool, ../shared ...), is missing:
 *                             a skip, but a failure under CI=true
 * Both need <cmocka.h> at the point of use, and return from the test. */
static inline bool test_ci(void)
{
	const char *ci = getenv("CI");

	return ci && strcmp(ci, "true") == 0;
}

/* tests/host-caps.sh's answer for cap: 1 the host has it, 0 it has not,
 * -1 no such capability (or the script could not run) */
static inline int test_host_cap(const char *cap)
{
	char cmd[4400];
	int r;

	snprintf(cmd, sizeof(cmd), "sh '%s/tests/host-caps.sh' '%s' >/dev/null 2>&1", test_srcdir(), cap);
	r = system(cmd);
	if (r == -1 || !WIFEXITED(r))
		return -1;
	return WEXITSTATUS(r) == 0 ? 1 : WEXITSTATUS(r) == 1 ? 0 : -1;
}

#define test_skip_host(cap, ...) do { \
		int has_ = test_host_cap(cap); \
		if (has_ != 0) { \
			print_message(__VA_ARGS__); \
			print_message("\n"); \
			if (has_ > 0) \
				fail_msg("a skip for want of %s, but tests/host-caps.sh finds it on this host: a failure", (cap)); \
			fail_msg("a skip for want of %s: not a capability tests/host-caps.sh probes", (cap)); \
		} \
		print_message("SKIP host: no %s: ", (cap)); \
		print_message(__VA_ARGS__); \
		print_message("\n"); \
		skip(); \
	} while (0)

#define test_need(dep, ...) do { \
		if (test_ci()) \
			fail_msg("%s is missing, and scripts/install-deps.sh provides it (CI=true: a failure)", (dep)); \
		print_message("SKIP need %s: ", (dep)); \
		print_message(__VA_ARGS__); \
		print_message("\n"); \
		skip(); \
	} while (0)

/* The host can make cgroups with controller ctl ("cpu", "cpuset"): root,
 * and ctl in the cgroup2 root's cgroup.controllers or a v1 hierarchy of its
 * own mounted at /sys/fs/cgroup/ctl.  Read from /sys/fs/cgroup, never from
 * the code under test, so that code cannot decide whether its check runs. */
static inline bool test_host_has_controller(const char *ctl)
{
	char path[256], line[1024];
	FILE *f;
	bool found = false;

	if (geteuid() != 0)
		return false;
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cgroup.procs", ctl);
	if (access(path, F_OK) == 0)
		return true;
	f = fopen("/sys/fs/cgroup/cgroup.controllers", "r");
	if (!f)
		return false;
	if (fgets(line, sizeof(line), f))
		for (char *w = strtok(line, " \n"); w && !found; w = strtok(NULL, " \n"))
			found = strcmp(w, ctl) == 0;
	fclose(f);
	return found;
}

/* Bytes of the heap in use: every block handed out and not yet freed,
 * counted exactly (tests/unit/heap_count.c; 0 under ASan, whose allocator
 * replaces it). */
size_t test_heap_live(void);
static inline size_t test_heap_in_use(void)
{
	return test_heap_live();
}

/* STMT run once, then N times more, grows the heap by less than 8 bytes a
 * run: a call that leaks one allocation (32 bytes or more) fails it. */
#define assert_no_leak(N, STMT)                                                                        \
	do {                                                                                           \
		size_t h0_;                                                                            \
		STMT;                                                                                  \
		h0_ = test_heap_in_use();                                                              \
		for (int i_ = 0; i_ < (N); i_++) {                                                     \
			STMT;                                                                          \
		}                                                                                      \
		if (test_heap_in_use() > h0_ + (size_t)(N) * 8)                                        \
			fail_msg("a leak: the heap grew by %zu bytes over %d runs of %s",              \
				 test_heap_in_use() - h0_, (N), #STMT);                                 \
		test_checked();                                                                        \
	} while (0)

#endif
