/* SPDX-License-Identifier: MIT */
/* fuzz_pidcgroup.c — libFuzzer target: the /proc/PID/cgroup parser
 * (procfs_cgroup_parse, observe/procfs.h) over arbitrary bytes.  A cgroup's
 * name is chosen by whoever made it (a job's wrapper, a container runtime),
 * and a captured tree may hold anything.  A file that parses is consistent:
 * 1 to PROCFS_CGROUP_MAX_LINES lines, each ID once, ID 0 exactly when there
 * are no controllers, NUL-terminated fields, every path absolute with no
 * empty, "." or ".." component and no control character; procfs_cgroup_find
 * finds only lines that name the controller.  A refusal is one line with a
 * negative code and leaves the output untouched. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "observe/procfs.h"
#include "observe/procfs_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *p)
{
	if (p[0] != '/' || strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../") || (p[1] && p[strlen(p) - 1] == '/'))
		__builtin_trap();
	if (!strcmp(p, "/.") || !strcmp(p, "/..") || (strlen(p) >= 2 && !strcmp(p + strlen(p) - 2, "/.")) ||
	    (strlen(p) >= 3 && !strcmp(p + strlen(p) - 3, "/..")))
		__builtin_trap();
	for (; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct procfs_cgroup c, before;
	const struct procfs_cgroup_line *l;
	struct nt_err err = { 0 };

	memset(&c, 0x5a, sizeof(c));
	memset(&before, 0x5a, sizeof(before));
	if (procfs_cgroup_parse((const char *)data, size, &c, &err) < 0) {
		if (err.code >= 0 || !memchr(err.msg, '\0', sizeof(err.msg)) || strchr(err.msg, '\n') ||
		    memcmp(&c, &before, sizeof(c)))
			__builtin_trap();
		return 0;
	}
	if (c.n < 1 || c.n > PROCFS_CGROUP_MAX_LINES)
		__builtin_trap();
	for (int i = 0; i < c.n; i++) {
		if (!memchr(c.line[i].controllers, '\0', sizeof(c.line[i].controllers)) ||
		    !memchr(c.line[i].path, '\0', sizeof(c.line[i].path)) ||
		    (c.line[i].id == 0) != (c.line[i].controllers[0] == '\0'))
			__builtin_trap();
		check_path(c.line[i].path);
		for (int k = 0; k < i; k++)
			if (c.line[k].id == c.line[i].id)
				__builtin_trap();
	}
	if ((l = procfs_cgroup_find(&c, NULL)) && l->id != 0)
		__builtin_trap();
	if ((l = procfs_cgroup_find(&c, "cpu")) && !strstr(l->controllers, "cpu"))
		__builtin_trap();
	return 0;
}
