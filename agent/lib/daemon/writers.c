/* SPDX-License-Identifier: MIT */
/* writers.c — see writers.h.
 *
 * Divisions: the process scan (comm of every pid, open descriptors); one
 * finder per kind of writer; the table of kinds; writers_find().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/parse.h"
#include "base/textbuf.h"
#include "daemon/writers.h"

/* What one search collects. */
struct found {
	struct writer *w;
	unsigned n, max;
};

static struct writer *found_add(struct found *f, const char *kind, int pid)
{
	struct writer *w;

	if (f->n >= f->max)
		return NULL;
	w = &f->w[f->n++];
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->pid = pid;
	return w;
}

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* ---- processes ------------------------------------------------------------ */

/* Is name a pid (digits only)? */
static bool is_pid(const char *name, int *ret)
{
	uint64_t v;

	if (parse_u64(name, 1u << 30, &v) < 0 || v == 0)
		return false;
	*ret = (int)v;
	return true;
}

/* The pids of processes whose comm is comm, up to max; returns the count. */
static unsigned pids_named(const struct fsroot *root, const char *comm, int *pids, unsigned max)
{
	char **names = NULL, rel[64], buf[64];
	unsigned n = 0;
	int pid;

	if (fsroot_list(root, "proc", &names) < 0)
		return 0;
	for (char **p = names; *p && n < max; p++) {
		if (!is_pid(*p, &pid))
			continue;
		snprintf(rel, sizeof(rel), "proc/%d/comm", pid);
		if (fsroot_read(root, rel, buf, sizeof(buf)) >= 0 && !strcmp(buf, comm))
			pids[n++] = pid;
	}
	fsroot_names_free(names);
	return n;
}

/* Is descriptor fd of pid open for writing?  Unknown (no fdinfo) counts as
 * yes: the descriptor's target is the lead. */
static bool fd_writable(const struct fsroot *root, int pid, const char *fd)
{
	char rel[96], info[512];
	const char *flags;
	unsigned long v;

	snprintf(rel, sizeof(rel), "proc/%d/fdinfo/%s", pid, fd);
	if (fsroot_read(root, rel, info, sizeof(info)) < 0 || !(flags = strstr(info, "flags:")))
		return true;
	v = strtoul(flags + 6, NULL, 8);
	return (v & O_ACCMODE) == O_WRONLY || (v & O_ACCMODE) == O_RDWR;
}

/* Does pid hold "/"path open for writing?  The fd links are read as text
 * (readlink), never followed. */
static bool holds_open(const struct fsroot *root, int pid, const char *path)
{
	char rel[64], link[PATH_MAX], target[PATH_MAX];
	char **fds = NULL;
	bool found = false;

	snprintf(rel, sizeof(rel), "proc/%d/fd", pid);
	if (fsroot_list(root, rel, &fds) < 0)
		return false;
	for (char **fd = fds; *fd && !found; fd++) {
		ssize_t len;

		snprintf(link, sizeof(link), "%s/proc/%d/fd/%s", strcmp(fsroot_path(root), "/") ? fsroot_path(root) : "",
			 pid, *fd);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		found = target[0] == '/' && !strcmp(target + 1, path) && fd_writable(root, pid, *fd);
	}
	fsroot_names_free(fds);
	return found;
}

/* ---- one finder per kind ------------------------------------------------- */

static void find_tuned(const struct fsroot *root, const char *path, struct found *f)
{
	char profile[128] = "";
	int pid;
	struct writer *w;

	(void)path;
	if (!pids_named(root, "tuned", &pid, 1) || !(w = found_add(f, "tuned", pid)))
		return;
	fsroot_read(root, "etc/tuned/active_profile", profile, sizeof(profile));
	snprintf(w->detail, sizeof(w->detail), "tuned is running (pid %d), profile %s", pid,
		 profile[0] ? profile : "(none active)");
}

static void find_irqbalance(const struct fsroot *root, const char *path, struct found *f)
{
	int pid;
	struct writer *w;

	(void)path;
	if (!pids_named(root, "irqbalance", &pid, 1) || !(w = found_add(f, "irqbalance", pid)))
		return;
	snprintf(w->detail, sizeof(w->detail), "irqbalance is running (pid %d) and moves IRQ affinities", pid);
}

/* "vm/swappiness" and "vm.swappiness" name the same key. */
static void sysctl_key(const char *s, size_t len, char *out, size_t size)
{
	size_t i;

	for (i = 0; i < len && i + 1 < size; i++)
		out[i] = s[i] == '/' ? '.' : s[i];
	out[i] = '\0';
}

/* Look for key in one sysctl file; adds a writer per line that sets it. */
static void sysctl_file(const struct fsroot *root, const char *rel, const char *key, struct found *f)
{
	char *text = malloc(65536), *save = NULL, name[256];
	unsigned line = 0;

	if (!text)
		return;
	if (fsroot_read(root, rel, text, 65536) < 0) {
		free(text);
		return;
	}
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *eq, *val;
		size_t klen;
		struct writer *w;

		line++;    /* empty lines are folded by strtok_r: numbers are a lead */
		l += strspn(l, " \t");
		if (*l == '-')
			l++;
		if (!(eq = strchr(l, '=')) || *l == '#' || *l == ';')
			continue;
		klen = (size_t)(eq - l);
		while (klen && (l[klen - 1] == ' ' || l[klen - 1] == '\t'))
			klen--;
		sysctl_key(l, klen, name, sizeof(name));
		if (strcmp(name, key))
			continue;
		val = eq + 1 + strspn(eq + 1, " \t");
		if (!(w = found_add(f, "sysctl.d", 0)))
			break;
		snprintf(w->detail, sizeof(w->detail), "/%s:%u sets %s = %.80s", rel, line, key, val);
	}
	free(text);
}

static void find_sysctl(const struct fsroot *root, const char *path, struct found *f)
{
	/* systemd-sysctl's directories, most important first: a file name
	 * found in one masks the same name in those after it */
	static const char *const dirs[] = { "etc/sysctl.d", "run/sysctl.d", "usr/local/lib/sysctl.d",
					    "usr/lib/sysctl.d", "lib/sysctl.d" };
	char key[256], rel[512];

	sysctl_key(path + strlen("proc/sys/"), strlen(path + strlen("proc/sys/")), key, sizeof(key));
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		char **names = NULL;

		if (fsroot_list(root, dirs[d], &names) < 0)
			continue;
		for (char **n = names; *n; n++) {
			bool masked = false;

			if (!strstr(*n, ".conf") || strcmp(strstr(*n, ".conf"), ".conf"))
				continue;
			for (size_t e = 0; e < d && !masked; e++) {
				snprintf(rel, sizeof(rel), "%s/%s", dirs[e], *n);
				masked = fsroot_exists(root, rel);
			}
			snprintf(rel, sizeof(rel), "%s/%s", dirs[d], *n);
			if (!masked)
				sysctl_file(root, rel, key, f);
		}
		fsroot_names_free(names);
	}
	sysctl_file(root, "etc/sysctl.conf", key, f);
}

static void find_kubelet(const struct fsroot *root, const char *path, struct found *f)
{
	char buf[8192];
	json_t *doc;
	const char *policy = NULL;
	struct writer *w;

	(void)path;
	if (fsroot_read(root, "var/lib/kubelet/cpu_manager_state", buf, sizeof(buf)) < 0)
		return;
	doc = json_loads(buf, 0, NULL);
	if (json_unpack(doc, "{s:s}", "policyName", &policy) == 0 && strcmp(policy, "none") &&
	    (w = found_add(f, "kubelet", 0)))
		snprintf(w->detail, sizeof(w->detail), "the kubelet's CPU manager (policy %.40s) assigns CPUs", policy);
	json_decref(doc);
}

static void find_process(const struct fsroot *root, const char *path, struct found *f)
{
	char **names = NULL, rel[64], comm[64];
	int pid, self = fsroot_is_host(root) ? getpid() : 0;

	if (fsroot_list(root, "proc", &names) < 0)
		return;
	for (char **p = names; *p && f->n < f->max; p++) {
		struct writer *w;

		if (!is_pid(*p, &pid) || pid == self || !holds_open(root, pid, path))
			continue;
		snprintf(rel, sizeof(rel), "proc/%d/comm", pid);
		if (fsroot_read(root, rel, comm, sizeof(comm)) < 0)
			snprintf(comm, sizeof(comm), "?");
		textbuf_printable(comm);   /* any process names itself (PR_SET_NAME) */
		if ((w = found_add(f, "process", pid)))
			snprintf(w->detail, sizeof(w->detail), "pid %d (%s) has /%s open for writing", pid, comm, path);
	}
	fsroot_names_free(names);
}

/* ---- the table ----------------------------------------------------------- */

static const struct writer_kind {
	const char *const *prefixes;   /* the paths it writes; NULL-terminated */
	void (*find)(const struct fsroot *root, const char *path, struct found *f);
} kinds[] = {
	{ (const char *const[]){ "sys/", "proc/sys/", NULL }, find_tuned },
	{ (const char *const[]){ "proc/irq/", NULL }, find_irqbalance },
	{ (const char *const[]){ "proc/sys/", NULL }, find_sysctl },
	{ (const char *const[]){ "sys/fs/cgroup/", "cgroup:", "proc/irq/", NULL }, find_kubelet },
	{ (const char *const[]){ "", NULL }, find_process },
};

int writers_find(const struct fsroot *root, const char *path, struct writer *ret, unsigned max)
{
	struct found f = { ret, 0, max };

	if (!path[0] || path[0] == '/')
		return -EINVAL;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (const char *const *p = kinds[k].prefixes; *p; p++)
			if (starts_with(path, *p)) {
				kinds[k].find(root, path, &f);
				break;
			}
	return (int)f.n;
}

const char *writers_describe(const struct writer *w, int n, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && used + 1 < size; i++) {
		int r = snprintf(buf + used, size - used, "%s%s", i ? "; " : "", w[i].detail);

		if (r < 0)
			break;
		used += (size_t)r < size - used ? (size_t)r : size - used - 1;
	}
	return buf;
}
