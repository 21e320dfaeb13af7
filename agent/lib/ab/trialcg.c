/* SPDX-License-Identifier: MIT */
/* trialcg.c — see trialcg.h.
 *
 * The file in order:
 *   hierarchies   the rows (cgroup2, v1 cpu, cpuacct, memory, perf_event)
 *                 and their mounts, from proc/self/mounts
 *   create        nodetune-ab/PID-NAME in each, its fds
 *   attach        write(2) of a pid to each cgroup.procs
 *   destroy       kill, wait until empty, rmdir
 *   sweep         the groups of dead nodetunes: killed, removed
 *   read          the files of a set of cgroup directories, as rows
 *   read_pid      proc/PID/cgroup -> directories -> read
 *   describe      stats in words
 *   perf          per-CPU events of the cgroup
 */
#include "ab/trialcg.h"
#include "ab/trialcg_test.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "observe/obs.h"
#include "observe/procfs.h"
#include "base/parse.h"

#define REL_MAX 512
#define DRAIN_ROUNDS 200          /* x 10 ms: how long destroy waits for the group to empty */
#define TREE_DEPTH 8              /* groups a job may make below its trial group, deepest */

/* ---- hierarchies -------------------------------------------------------- */

/* The hierarchies a trial group lives in, by enum. */
enum hier { H_V2, H_CPU, H_CPUACCT, H_MEMORY, H_PERF, H_N };

/* Each hierarchy's v1 mount option (NULL: the cgroup2 mount). */
static const char *const hier_ctrl[H_N] = {
	[H_V2] = NULL, [H_CPU] = "cpu", [H_CPUACCT] = "cpuacct", [H_MEMORY] = "memory", [H_PERF] = "perf_event",
};

_Static_assert(H_N == TRIALCG_HIER_N, "trialcg.h's TRIALCG_HIER_N counts enum hier");
_Static_assert(REL_MAX == sizeof(((struct trialcg_dirs *)0)->dir[0]), "a directory fits REL_MAX");

static bool has_token(const char *list, const char *tok, const char *sep)
{
	size_t n = strlen(tok);

	for (const char *p = list; p && *p; p += strcspn(p, sep), p += *p ? 1 : 0)
		if (!strncmp(p, tok, n) && (p[n] == '\0' || strchr(sep, p[n])))
			return true;
	return false;
}

/* One line of proc/self/mounts into m. */
static void mount_line(char *line, struct trialcg_mounts *m)
{
	char *save = NULL, *dev = strtok_r(line, " ", &save), *mnt = strtok_r(NULL, " ", &save);
	char *type = strtok_r(NULL, " ", &save), *opts = strtok_r(NULL, " ", &save);

	if (!dev || !mnt || !type || !opts || mnt[0] != '/')
		return;
	for (int h = 0; h < H_N; h++) {
		bool v2 = !hier_ctrl[h];

		if (v2 ? strcmp(type, "cgroup2") : strcmp(type, "cgroup") || !has_token(opts, hier_ctrl[h], ","))
			continue;
		snprintf(m->rel[h], sizeof(m->rel[h]), "%s", mnt[1] ? mnt + 1 : ".");
		m->ro[h] = has_token(opts, "ro", ",");
	}
}

/* The cgroup mounts below root.  0, -ENOTSUP with err when there is none
 * (or proc/self/mounts cannot be read). */
static int find_mounts(const struct fsroot *root, struct trialcg_mounts *m, struct nt_err *err)
{
	size_t size = 1u << 18;
	char *buf = malloc(size), *line, *save = NULL, shown[4096];
	ssize_t n;
	bool any = false;

	memset(m, 0, sizeof(*m));
	if (!buf)
		return err_set(err, -ENOMEM, "out of memory");
	n = fsroot_read(root, "proc/self/mounts", buf, size);
	for (line = n >= 0 ? strtok_r(buf, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save))
		mount_line(line, m);
	free(buf);
	fsroot_display(root, "proc/self/mounts", shown, sizeof(shown));
	if (n < 0)
		return err_set(err, -ENOTSUP, "cgroups not usable: %s: %s", shown, nt_strerror((int)-n));
	for (int h = 0; h < H_N; h++)
		any |= m->rel[h][0] != '\0';
	if (!any)
		return err_set(err, -ENOTSUP, "no cgroup file system mounted (%s has neither cgroup2 nor v1 cpu, "
			       "cpuacct, memory or perf_event)", shown);
	return 0;
}

/* Does hierarchy h share its mount with an earlier row (cpu,cpuacct)? */
static bool shared_mount(const struct trialcg_mounts *m, int h)
{
	for (int e = 0; e < h; e++)
		if (m->rel[e][0] && !strcmp(m->rel[e], m->rel[h]))
			return true;
	return false;
}

/* ---- create ------------------------------------------------------------- */

struct trialcg {
	const struct fsroot *root;
	struct trialcg_mounts m;
	struct trialcg_dirs d;           /* "" where the hierarchy is not used */
	bool made[H_N];            /* this row created d.dir[h] (a shared mount's row did not) */
	int dirfd[H_N];            /* O_DIRECTORY of d.dir[h] where made, else -1 */
	int procs[H_N];            /* its cgroup.procs, O_WRONLY, where made, else -1 */
	char leaf[80];             /* PID-NAME */
	char paths[1024];
};

static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_.-", name[i]))
			return false;
	return true;
}

/* Is rel a directory (a group, in a cgroup file system) beneath the root? */
static bool is_dir(const struct fsroot *root, const char *rel)
{
	int fd = fsroot_open_beneath(root, rel, O_PATH | O_DIRECTORY);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* rmdir of relpath (its parent opened beneath the root).  0 or -errno. */
static int rmdir_rel(const struct fsroot *root, const char *rel)
{
	char parent[REL_MAX];
	const char *slash = strrchr(rel, '/');
	int fd, r = 0;

	if (!slash)
		return -EINVAL;
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - rel), rel);
	fd = fsroot_open_beneath(root, parent, O_PATH | O_DIRECTORY);
	if (fd < 0)
		return fd;
	if (unlinkat(fd, slash + 1, AT_REMOVEDIR) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* On pure v2: offer the parent's children the controllers the parent has
 * (cpu, memory, io), writing only what is missing.  What the kernel
 * refuses is left: the read then says which counters are missing. */
static void enable_controllers(const struct fsroot *root, const char *parent)
{
	static const char *const ctrls[] = { "cpu", "memory", "io" };
	char rel[REL_MAX + 32], have[256], on[256], plus[16];

	snprintf(rel, sizeof(rel), "%s/cgroup.controllers", parent);
	if (fsroot_read(root, rel, have, sizeof(have)) < 0)
		return;
	snprintf(rel, sizeof(rel), "%s/cgroup.subtree_control", parent);
	if (fsroot_read(root, rel, on, sizeof(on)) < 0)
		return;
	for (size_t i = 0; i < sizeof(ctrls) / sizeof(ctrls[0]); i++) {
		int r;

		if (!has_token(have, ctrls[i], " ") || has_token(on, ctrls[i], " "))
			continue;
		snprintf(plus, sizeof(plus), "+%s", ctrls[i]);
		r = fsroot_write(root, rel, plus);
		log_msg(LOG_DEBUG, "trialcg: %s: %s: %s", rel, plus, r ? nt_strerror(-r) : "enabled");
	}
}

/* Why a mkdir or open of a cgroup failed, as -ENOTSUP (or -EEXIST) with err. */
static int make_refused(const struct fsroot *root, const char *rel, int r, struct nt_err *err)
{
	char shown[4096];

	fsroot_display(root, rel, shown, sizeof(shown));
	if (r == -EEXIST)
		return err_set(err, -EEXIST, "cgroup %s exists already (a trial of the same name in this process)",
			       shown);
	return err_set(err, -ENOTSUP, "cgroups not usable: %s: %s%s", shown, nt_strerror(-r),
		       r == -EACCES || r == -EPERM ? " (creating cgroups needs root or a delegated subtree)" :
		       r == -EROFS ? " (the cgroup file system is read-only)" : "");
}

/* mkdir MNT/nodetune-ab (may exist) and MNT/nodetune-ab/LEAF, open the
 * leaf and its cgroup.procs.  0 or -errno with err. */
static int make_group(struct trialcg *cg, int h, struct nt_err *err)
{
	const struct fsroot *root = cg->root;
	char parent[300], procs[REL_MAX + 16];
	int fd, r = 0;

	snprintf(parent, sizeof(parent), "%s/" TRIALCG_PARENT, cg->m.rel[h]);
	snprintf(cg->d.dir[h], sizeof(cg->d.dir[h]), "%s/%s", parent, cg->leaf);
	for (int tries = 0; tries < 3; tries++) {
		fd = fsroot_open_beneath(root, cg->m.rel[h], O_PATH | O_DIRECTORY);
		if (fd < 0)
			return make_refused(root, cg->m.rel[h], fd, err);
		r = mkdirat(fd, TRIALCG_PARENT, 0755) < 0 && errno != EEXIST ? -errno : 0;
		close(fd);
		if (r)
			return make_refused(root, parent, r, err);
		if (h == H_V2)
			enable_controllers(root, parent);
		fd = fsroot_open_beneath(root, parent, O_PATH | O_DIRECTORY);
		r = fd < 0 ? fd : mkdirat(fd, cg->leaf, 0755) < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
		if (r != -ENOENT)
			break;          /* ENOENT: another nodetune removed the empty parent meanwhile */
	}
	if (r)
		return make_refused(root, cg->d.dir[h], r, err);
	cg->made[h] = true;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg->d.dir[h]);
	cg->dirfd[h] = fsroot_open_beneath(root, cg->d.dir[h], O_RDONLY | O_DIRECTORY);
	cg->procs[h] = fsroot_open_beneath(root, procs, O_WRONLY);
	if (cg->dirfd[h] < 0)
		return make_refused(root, cg->d.dir[h], cg->dirfd[h], err);
	if (cg->procs[h] < 0)
		return err_set(err, -ENOTSUP, "cgroups not usable: %s is not a cgroup (no cgroup.procs: %s)",
			       fsroot_display(root, cg->d.dir[h], procs, sizeof(procs)), nt_strerror(-cg->procs[h]));
	return 0;
}

static struct trialcg *trialcg_alloc(const struct fsroot *root, const char *name)
{
	struct trialcg *cg = calloc(1, sizeof(*cg));

	if (!cg)
		return NULL;
	cg->root = root;
	for (int h = 0; h < H_N; h++)
		cg->dirfd[h] = cg->procs[h] = -1;
	snprintf(cg->leaf, sizeof(cg->leaf), "%d-%s", (int)getpid(), name);
	return cg;
}

/* The hierarchies to use: mounted, writable, and for v1 rows not a mount
 * an earlier row has (its directory is the earlier row's). */
static int plan_hierarchies(struct trialcg *cg, struct nt_err *err)
{
	int usable = 0, ro = 0;

	for (int h = 0; h < H_N; h++) {
		if (!cg->m.rel[h][0])
			continue;
		if (cg->m.ro[h]) {
			ro++;
			cg->m.rel[h][0] = '\0';
			continue;
		}
		usable++;
	}
	if (!usable)
		return err_set(err, -ENOTSUP, "cgroups not usable: %d cgroup mount(s), all read-only", ro);
	return 0;
}

static int sweep_stale(const struct fsroot *root, const char *mnt, bool v2);

struct trialcg *trialcg_create(const struct fsroot *root, const char *name, struct nt_err *err)
{
	struct trialcg *cg;
	int r = 0;

	if (!name_ok(name)) {
		err_set(err, -EINVAL, "trial cgroup name '%.80s': expected 1 to 64 of [A-Za-z0-9_.-], not "
			"starting with '.'", name);
		return NULL;
	}
	if (!(cg = trialcg_alloc(root, name))) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (find_mounts(root, &cg->m, err) < 0 || plan_hierarchies(cg, err) < 0) {
		free(cg);
		return NULL;
	}
	for (int h = 0; h < H_N && !r; h++) {
		if (!cg->m.rel[h][0] || shared_mount(&cg->m, h))
			continue;
		sweep_stale(root, cg->m.rel[h], h == H_V2);
		r = make_group(cg, h, err);
	}
	for (int h = 0; h < H_N && !r; h++)   /* rows on a shared mount read the first row's directory */
		for (int e = 0; e < h && cg->m.rel[h][0] && !cg->d.dir[h][0]; e++)
			if (!strcmp(cg->m.rel[e], cg->m.rel[h]))
				memcpy(cg->d.dir[h], cg->d.dir[e], sizeof(cg->d.dir[h]));
	if (r) {
		trialcg_destroy(cg);
		return NULL;
	}
	for (int h = 0; h < H_N; h++)
		if (cg->made[h])
			snprintf(cg->paths + strlen(cg->paths), sizeof(cg->paths) - strlen(cg->paths), "%s/%s",
				 cg->paths[0] ? ", " : "", cg->d.dir[h]);
	log_msg(LOG_DEBUG, "trialcg: created %s", cg->paths);
	return cg;
}

const char *trialcg_paths(const struct trialcg *cg)
{
	return cg->paths;
}

/* A directory fd of the group in the hierarchy perf counts cgroups of (v1
 * perf_event where it is mounted, else cgroup2), for PERF_FLAG_PID_CGROUP;
 * -1 when there is none.  Owned by cg. */
static int trialcg_perf_fd(const struct trialcg *cg)
{
	return cg->dirfd[H_PERF] >= 0 ? cg->dirfd[H_PERF] : cg->dirfd[H_V2];
}

/* ---- attach ------------------------------------------------------------- */

int trialcg_attach(const struct trialcg *cg, pid_t pid, struct nt_err *err)
{
	char num[24], *p = num + sizeof(num);
	unsigned long v = pid > 0 ? (unsigned long)pid : 0;

	do                       /* no snprintf: this runs between fork and exec */
		*--p = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	for (int h = 0; h < H_N; h++) {
		if (cg->procs[h] < 0)
			continue;
		if (write(cg->procs[h], p, (size_t)(num + sizeof(num) - p)) < 0) {
			int r = -errno;

			if (err)
				err_set(err, r, "%s/cgroup.procs: moving pid %d: %s", cg->d.dir[h], (int)pid, nt_strerror(-r));
			return r;
		}
	}
	return 0;
}

/* ---- destroy ------------------------------------------------------------ */

/* SIGKILL the processes of rel and of the groups below it.  Returns how
 * many were signalled. */
static int kill_tree(const struct fsroot *root, const char *rel, int depth)
{
	char file[REL_MAX + 16], buf[65536], **names = NULL, *line, *save = NULL;
	int killed = 0, n;

	snprintf(file, sizeof(file), "%s/cgroup.procs", rel);
	if (fsroot_read(root, file, buf, sizeof(buf)) >= 0) {
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			int pid;

			if (parse_int(line, 1, INT32_MAX, &pid) == 0 && pid != (int)getpid() && kill(pid, SIGKILL) == 0)
				killed++;
		}
	}
	if (depth == 0 || (n = fsroot_list(root, rel, &names)) < 0)
		return killed;
	for (int i = 0; i < n; i++) {
		char sub[REL_MAX];

		snprintf(sub, sizeof(sub), "%s/%s", rel, names[i]);
		if (is_dir(root, sub))
			killed += kill_tree(root, sub, depth - 1);
	}
	fsroot_names_free(names);
	return killed;
}

/* rmdir the groups below rel, deepest first, then rel.  0 or -errno. */
static int rmdir_tree(const struct fsroot *root, const char *rel, int depth)
{
	char **names = NULL;
	int n;

	if (depth > 0 && (n = fsroot_list(root, rel, &names)) >= 0) {
		for (int i = 0; i < n; i++) {
			char sub[REL_MAX];

			snprintf(sub, sizeof(sub), "%s/%s", rel, names[i]);
			if (is_dir(root, sub))      /* a group */
				rmdir_tree(root, sub, depth - 1);
		}
		fsroot_names_free(names);
	}
	return rmdir_rel(root, rel);
}

/* Kill what rel and the groups below it hold: cgroup.kill where v2 has it
 * (kernels before 5.14 have none), then SIGKILL to each pid listed, until
 * none is left (at most DRAIN_ROUNDS x 10 ms). */
static void drain_dir(const struct fsroot *root, const char *rel, bool v2)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	if (v2) {
		char file[REL_MAX + 16];

		snprintf(file, sizeof(file), "%s/cgroup.kill", rel);
		(void)fsroot_write(root, file, "1");
	}
	for (int round = 0; round < DRAIN_ROUNDS; round++) {
		if (!kill_tree(root, rel, TREE_DEPTH))
			return;
		nanosleep(&tick, NULL);
	}
}

/* rmdir rel and the groups below it, retrying while the kernel still
 * counts killed tasks in them.  0 or -errno (-ENOENT: gone already). */
static int remove_dir(const struct fsroot *root, const char *rel)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	int r;

	for (int tries = 0;; tries++) {
		r = rmdir_tree(root, rel, TREE_DEPTH);
		if (r != -EBUSY || tries == 50)
			return r;
		nanosleep(&tick, NULL);
	}
}

/* rmdir cg's directory in hierarchy h (killed first), then its nodetune-ab
 * parent when empty. */
static int remove_group(struct trialcg *cg, int h)
{
	char parent[REL_MAX];
	int r = remove_dir(cg->root, cg->d.dir[h]);

	snprintf(parent, sizeof(parent), "%s/" TRIALCG_PARENT, cg->m.rel[h]);
	(void)rmdir_rel(cg->root, parent);   /* other trials may still be in it */
	return r == -ENOENT ? 0 : r;
}

int trialcg_destroy(struct trialcg *cg)
{
	int r = 0;

	if (!cg)
		return 0;
	for (int h = 0; h < H_N; h++)
		if (cg->made[h])
			drain_dir(cg->root, cg->d.dir[h], h == H_V2);
	for (int h = 0; h < H_N; h++) {
		if (cg->procs[h] >= 0)
			close(cg->procs[h]);
		if (cg->dirfd[h] >= 0)
			close(cg->dirfd[h]);
		if (cg->made[h]) {
			int x = remove_group(cg, h);

			r = r ? r : x;
		}
	}
	log_msg(LOG_DEBUG, "trialcg: removed %s: %s", cg->paths, r ? nt_strerror(-r) : "ok");
	free(cg);
	return r;
}

/* ---- the groups of dead nodetune processes ------------------------------ */

/* Kill what the groups below MNT/nodetune-ab of nodetune processes that are
 * gone hold (killed -9 before they could clean up: their jobs' descendants
 * outlive them) and remove the groups, then nodetune-ab when it is
 * empty.  The number of groups removed. */
static int sweep_stale(const struct fsroot *root, const char *mnt, bool v2)
{
	char parent[REL_MAX], **names = NULL;
	int n, removed = 0;

	snprintf(parent, sizeof(parent), "%s/" TRIALCG_PARENT, mnt);
	if ((n = fsroot_list(root, parent, &names)) < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		char proc[64], rel[REL_MAX + 128];
		int pid;

		if (sscanf(names[i], "%d-", &pid) != 1 || pid <= 0 || pid == (int)getpid())
			continue;
		snprintf(proc, sizeof(proc), "proc/%d", pid);
		snprintf(rel, sizeof(rel), "%s/%s", parent, names[i]);
		if (fsroot_exists(root, proc) || !is_dir(root, rel))
			continue;
		drain_dir(root, rel, v2);
		if (remove_dir(root, rel) == 0) {
			log_msg(LOG_DEBUG, "trialcg: removed %s, left by pid %d", rel, pid);
			removed++;
		}
	}
	fsroot_names_free(names);
	/* when empty, also when nothing was removed here: an ab killed
	 * between its leaf's rmdir and the parent's left it so; one making
	 * its leaf meanwhile retries on ENOENT (make_group) */
	(void)rmdir_rel(root, parent);
	return removed;
}

int trialcg_sweep(const struct fsroot *root, struct nt_err *err)
{
	struct trialcg_mounts m;
	int removed = 0, r = find_mounts(root, &m, err);

	if (r < 0)
		return r;
	for (int h = 0; h < H_N; h++)
		if (m.rel[h][0] && !shared_mount(&m, h))
			removed += sweep_stale(root, m.rel[h], h == H_V2);
	return removed;
}

/* ---- read --------------------------------------------------------------- */

const struct trialcg_counter_row trialcg_counters[TCG_N] = {
	[TCG_CPU_USAGE_USEC] = { "usage_usec", "us", false },
	[TCG_CPU_NR_PERIODS] = { "nr_periods", "", false },
	[TCG_CPU_NR_THROTTLED] = { "nr_throttled", "", false },
	[TCG_CPU_THROTTLED_USEC] = { "throttled_usec", "us", false },
	[TCG_MEM_HIGH] = { "memory.events high", "", false },
	[TCG_MEM_MAX] = { "memory.events max", "", false },
	[TCG_MEM_OOM] = { "memory.events oom", "", false },
	[TCG_MEM_OOM_KILL] = { "oom_kill", "", false },
	[TCG_MEM_FAILCNT] = { "memory.failcnt", "", false },
	[TCG_MEM_CURRENT] = { "memory.current", "bytes", true },
	[TCG_MEM_PEAK] = { "memory.peak", "bytes", true },
	[TCG_PSI_CPU_SOME_US] = { "psi_cpu_some", "us", false },
	[TCG_PSI_CPU_FULL_US] = { "psi_cpu_full", "us", false },
	[TCG_PSI_MEM_SOME_US] = { "psi_memory_some", "us", false },
	[TCG_PSI_MEM_FULL_US] = { "psi_memory_full", "us", false },
	[TCG_PSI_IO_SOME_US] = { "psi_io_some", "us", false },
	[TCG_PSI_IO_FULL_US] = { "psi_io_full", "us", false },
};

/* Where each counter is read: the file of a hierarchy's directory, the
 * key of its "key value" line (NULL: the file is one number), and the
 * divisor to the counter's unit.  The first row that reads wins, so v2 rows
 * come before the v1 ones for the same counter.  Rows of one file are
 * adjacent (it is read once). */
static const struct file_row {
	enum trialcg_counter c;
	enum hier h;
	const char *file;
	const char *key;
	uint32_t div;
} file_rows[] = {
	{ TCG_CPU_USAGE_USEC, H_V2, "cpu.stat", "usage_usec", 1 },
	{ TCG_CPU_NR_PERIODS, H_V2, "cpu.stat", "nr_periods", 1 },
	{ TCG_CPU_NR_THROTTLED, H_V2, "cpu.stat", "nr_throttled", 1 },
	{ TCG_CPU_THROTTLED_USEC, H_V2, "cpu.stat", "throttled_usec", 1 },
	{ TCG_CPU_USAGE_USEC, H_CPUACCT, "cpuacct.usage", NULL, 1000 },
	{ TCG_CPU_NR_PERIODS, H_CPU, "cpu.stat", "nr_periods", 1 },
	{ TCG_CPU_NR_THROTTLED, H_CPU, "cpu.stat", "nr_throttled", 1 },
	{ TCG_CPU_THROTTLED_USEC, H_CPU, "cpu.stat", "throttled_time", 1000 },
	{ TCG_MEM_HIGH, H_V2, "memory.events", "high", 1 },
	{ TCG_MEM_MAX, H_V2, "memory.events", "max", 1 },
	{ TCG_MEM_OOM, H_V2, "memory.events", "oom", 1 },
	{ TCG_MEM_OOM_KILL, H_V2, "memory.events", "oom_kill", 1 },
	{ TCG_MEM_CURRENT, H_V2, "memory.current", NULL, 1 },
	{ TCG_MEM_PEAK, H_V2, "memory.peak", NULL, 1 },
	{ TCG_MEM_FAILCNT, H_MEMORY, "memory.failcnt", NULL, 1 },
	{ TCG_MEM_OOM_KILL, H_MEMORY, "memory.oom_control", "oom_kill", 1 },
	{ TCG_MEM_CURRENT, H_MEMORY, "memory.usage_in_bytes", NULL, 1 },
	{ TCG_MEM_PEAK, H_MEMORY, "memory.max_usage_in_bytes", NULL, 1 },
};

/* The value of "key N" in buf (key NULL: all of buf is N).  0 or -errno. */
static int kv_get(const char *buf, const char *key, uint64_t *ret)
{
	size_t kl = key ? strlen(key) : 0;

	for (const char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		char num[32];
		size_t n;

		if (key && (strncmp(line, key, kl) || line[kl] != ' '))
			continue;
		line += key ? kl + 1 : 0;
		n = strcspn(line, "\n");
		snprintf(num, sizeof(num), "%.*s", (int)(n < sizeof(num) ? n : sizeof(num) - 1), line);
		return parse_u64(num, UINT64_MAX, ret);
	}
	return -ENOENT;
}

static void set_counter(struct trialcg_stats *s, enum trialcg_counter c, uint64_t v)
{
	s->v[c] = v;
	s->have |= 1u << c;
}

/* The rows of file_rows[] whose hierarchy is in d. */
static void read_rows(const struct fsroot *root, const struct trialcg_dirs *d, struct trialcg_stats *s)
{
	char buf[4096];
	const struct file_row *last = NULL;
	bool ok = false;

	for (size_t i = 0; i < sizeof(file_rows) / sizeof(file_rows[0]); i++) {
		const struct file_row *row = &file_rows[i];
		uint64_t v;

		if (!d->dir[row->h][0] || trialcg_has(s, row->c))
			continue;
		if (!last || last->h != row->h || strcmp(last->file, row->file)) {
			char rel[REL_MAX + 64];

			snprintf(rel, sizeof(rel), "%s/%s", d->dir[row->h], row->file);
			ok = fsroot_read(root, rel, buf, sizeof(buf)) >= 0;
			last = row;
		}
		if (ok && kv_get(buf, row->key, &v) == 0)
			set_counter(s, row->c, v / row->div);
	}
}

/* A limit file: a number of bytes, or "max"/a v1 "unlimited" (~2^63) as -1. */
static int64_t read_limit(const struct fsroot *root, const char *dir, const char *file)
{
	char rel[REL_MAX + 64], buf[64];
	uint64_t v;

	snprintf(rel, sizeof(rel), "%s/%s", dir, file);
	if (!dir[0] || fsroot_read(root, rel, buf, sizeof(buf)) < 0 || parse_u64(buf, UINT64_MAX, &v) < 0 ||
	    v >= (1ull << 62))
		return -1;
	return (int64_t)v;
}

/* The CPU quota: v2 cpu.max "QUOTA PERIOD" or "max PERIOD", v1
 * cfs_quota_us (-1: none) and cfs_period_us. */
static void read_quota(const struct fsroot *root, const struct trialcg_dirs *d, struct trialcg_stats *s)
{
	char rel[REL_MAX + 64], buf[64], per[32];
	unsigned long long q, p;

	snprintf(rel, sizeof(rel), "%s/cpu.max", d->dir[H_V2]);
	if (d->dir[H_V2][0] && fsroot_read(root, rel, buf, sizeof(buf)) >= 0) {
		snprintf(s->quota, sizeof(s->quota), "%s", buf);
		if (sscanf(buf, "%llu %llu", &q, &p) == 2 && p)
			s->quota_cpus = (double)q / (double)p;
		return;
	}
	snprintf(rel, sizeof(rel), "%s/cpu.cfs_quota_us", d->dir[H_CPU]);
	if (!d->dir[H_CPU][0] || fsroot_read(root, rel, buf, sizeof(buf)) < 0)
		return;
	snprintf(rel, sizeof(rel), "%s/cpu.cfs_period_us", d->dir[H_CPU]);
	if (fsroot_read(root, rel, per, sizeof(per)) < 0)
		return;
	snprintf(s->quota, sizeof(s->quota), "cfs_quota_us %.20s period %.20s", buf, per);
	if (sscanf(buf, "%llu", &q) == 1 && buf[0] != '-' && sscanf(per, "%llu", &p) == 1 && p)
		s->quota_cpus = (double)q / (double)p;
}

static void read_psi(const struct fsroot *root, const struct trialcg_dirs *d, struct trialcg_stats *s)
{
	struct obs_psi psi;

	if (!d->dir[H_V2][0])
		return;
	obs_read_cgroup_psi(root, d->dir[H_V2], &psi);
	if (!psi.present)
		return;
	set_counter(s, TCG_PSI_CPU_SOME_US, psi.cpu_some_us);
	set_counter(s, TCG_PSI_CPU_FULL_US, psi.cpu_full_us);
	set_counter(s, TCG_PSI_MEM_SOME_US, psi.mem_some_us);
	set_counter(s, TCG_PSI_MEM_FULL_US, psi.mem_full_us);
	set_counter(s, TCG_PSI_IO_SOME_US, psi.io_some_us);
	set_counter(s, TCG_PSI_IO_FULL_US, psi.io_full_us);
}

/* What was not countable, and why, into s->why. */
static void explain_missing(const struct trialcg_dirs *d, struct trialcg_stats *s)
{
	size_t n = 0;

	if (!trialcg_has(s, TCG_CPU_NR_THROTTLED))
		n += (size_t)snprintf(s->why + n, sizeof(s->why) - n, "%sCPU throttling: no cpu controller on %s",
				      n ? "; " : "", d->dir[H_V2][0] ? "this v2 cgroup and no v1 cpu hierarchy" :
				      "a cgroup here");
	if (n < sizeof(s->why) && !trialcg_has(s, TCG_MEM_HIGH) && !trialcg_has(s, TCG_MEM_FAILCNT))
		n += (size_t)snprintf(s->why + n, sizeof(s->why) - n, "%smemory events: no memory controller on %s",
				      n ? "; " : "", d->dir[H_V2][0] ? "this v2 cgroup and no v1 memory hierarchy" :
				      "a cgroup here");
	if (n < sizeof(s->why) && !trialcg_has(s, TCG_PSI_CPU_SOME_US))
		snprintf(s->why + n, sizeof(s->why) - n, "%sPSI: %s", n ? "; " : "",
			 d->dir[H_V2][0] ? "no *.pressure files (a kernel without CONFIG_PSI, or psi=0)" :
			 "a cgroup v1 group has none (only cgroup2 has PSI)");
}

/* Read every counter of the directories d into *ret.  0, or -ENOENT when
 * not one of them could be read (gone) with err. */
static int read_dirs(const struct fsroot *root, const struct trialcg_dirs *d, struct trialcg_stats *ret,
		     struct nt_err *err)
{
	struct trialcg_stats s;
	size_t n = 0;

	memset(&s, 0, sizeof(s));
	s.mem_limit = s.mem_high = -1;
	for (int h = 0; h < H_N; h++) {
		bool dup = false;

		for (int e = 0; e < h; e++)
			dup |= d->dir[h][0] && !strcmp(d->dir[e], d->dir[h]);
		if (!d->dir[h][0] || dup || n >= sizeof(s.paths))
			continue;
		n += (size_t)snprintf(s.paths + n, sizeof(s.paths) - n, "%s/%s", n ? ", " : "", d->dir[h]);
	}
	if (n == 0)
		return err_set(err, -ENOENT, "no cgroup directory to read");
	read_rows(root, d, &s);
	read_quota(root, d, &s);
	read_psi(root, d, &s);
	s.mem_limit = read_limit(root, d->dir[H_V2], "memory.max");
	if (s.mem_limit < 0)
		s.mem_limit = read_limit(root, d->dir[H_MEMORY], "memory.limit_in_bytes");
	s.mem_high = read_limit(root, d->dir[H_V2], "memory.high");
	if (!s.have && !s.quota[0])
		return err_set(err, -ENOENT, "%s: gone (nothing could be read)", s.paths);
	explain_missing(d, &s);
	*ret = s;
	return 0;
}

int trialcg_read(const struct trialcg *cg, struct trialcg_stats *ret, struct nt_err *err)
{
	return read_dirs(cg->root, &cg->d, ret, err);
}

/* ---- read_pid ----------------------------------------------------------- */

int trialcg_mounts_read(const struct fsroot *root, struct trialcg_mounts *ret, struct nt_err *err)
{
	struct trialcg_mounts m;
	int r = find_mounts(root, &m, err);

	if (r == 0)
		*ret = m;
	return r;
}

int trialcg_dirs_of(const struct trialcg_mounts *m, const struct procfs_cgroup *pc, struct trialcg_dirs *ret)
{
	struct trialcg_dirs d;
	bool any = false;

	memset(&d, 0, sizeof(d));
	for (int h = 0; h < H_N; h++) {
		const struct procfs_cgroup_line *l = procfs_cgroup_find(pc, hier_ctrl[h]);

		if (!l || !m->rel[h][0])
			continue;
		snprintf(d.dir[h], sizeof(d.dir[h]), "%s%s", m->rel[h], l->path[1] ? l->path : "");
		any = true;
	}
	if (!any)
		return -ENOENT;
	*ret = d;
	return 0;
}

bool trialcg_dirs_parent(const struct trialcg_mounts *m, struct trialcg_dirs *d)
{
	bool up = false;

	for (int h = 0; h < H_N; h++) {
		size_t base = strlen(m->rel[h]);
		char *slash;

		if (!d->dir[h][0] || strlen(d->dir[h]) <= base || !(slash = strrchr(d->dir[h], '/')) ||
		    (size_t)(slash - d->dir[h]) < base)
			continue;
		*slash = '\0';
		up = true;
	}
	return up;
}

int trialcg_read_dirs(const struct fsroot *root, const struct trialcg_dirs *d, struct trialcg_stats *ret,
		      struct nt_err *err)
{
	return read_dirs(root, d, ret, err);
}

/* The directories of the cgroups pid is in (proc/PID/cgroup, parsed by
 * observe/procfs) under the mounts m.  0, -ENOENT, -EINVAL with err. */
static int pid_dirs(const struct fsroot *root, const struct trialcg_mounts *m, pid_t pid, struct trialcg_dirs *ret,
		    struct nt_err *err)
{
	struct procfs_cgroup *pc = malloc(sizeof(*pc));
	char rel[64], shown[4096];
	int r;

	if (!pc)
		return err_set(err, -ENOMEM, "out of memory");
	r = procfs_cgroup_read(root, (int)pid, pc, err);
	if (r == -ENOENT) {
		snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int)pid);
		err_set(err, r, "%s: %s", fsroot_display(root, rel, shown, sizeof(shown)), nt_strerror(-r));
	}
	if (r == 0 && trialcg_dirs_of(m, pc, ret) < 0)
		memset(ret, 0, sizeof(*ret));
	free(pc);
	return r;
}

int trialcg_read_pid(const struct fsroot *root, pid_t pid, struct trialcg_stats *ret, struct nt_err *err)
{
	struct trialcg_mounts m;
	struct trialcg_dirs d;
	int r;

	if ((r = find_mounts(root, &m, err)) < 0 || (r = pid_dirs(root, &m, pid, &d, err)) < 0)
		return r;
	return read_dirs(root, &d, ret, err);
}

bool trialcg_holds(const struct trialcg *cg, pid_t pid)
{
	struct trialcg_dirs d;

	if (pid_dirs(cg->root, &cg->m, pid, &d, NULL) < 0)
		return false;
	for (int h = 0; h < H_N; h++)
		if (cg->made[h] && strcmp(d.dir[h], cg->d.dir[h]))
			return false;
	return true;
}

/* ---- describe ----------------------------------------------------------- */

/* after - before for counter c (gauges: after's value). */
static uint64_t delta(const struct trialcg_stats *before, const struct trialcg_stats *after,
		      enum trialcg_counter c)
{
	if (!before || trialcg_counters[c].gauge || !trialcg_has(before, c) || before->v[c] > after->v[c])
		return after->v[c];
	return after->v[c] - before->v[c];
}

/* Append to buf (snprintf-like on *n, which may pass size: truncated). */
__attribute__((format(printf, 4, 5)))
static void put(char *buf, size_t size, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*n >= size)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *n, size - *n, fmt, ap);
	va_end(ap);
	*n += k > 0 ? (size_t)k : 0;
}

static void describe_cpu(const struct trialcg_stats *b, const struct trialcg_stats *a, char *buf, size_t size,
			 size_t *n)
{
	uint64_t per = delta(b, a, TCG_CPU_NR_PERIODS), thr = delta(b, a, TCG_CPU_NR_THROTTLED);

	if (!trialcg_has(a, TCG_CPU_NR_THROTTLED))
		return;
	if (thr)
		put(buf, size, n, "throttled in %llu of %llu periods (%.0f%%), %.1f s in all", (unsigned long long)thr,
		    (unsigned long long)per, per ? 100.0 * (double)thr / (double)per : 0.0,
		    (double)delta(b, a, TCG_CPU_THROTTLED_USEC) / 1e6);
	else if (per)
		put(buf, size, n, "not throttled (0 of %llu periods)", (unsigned long long)per);
	else
		put(buf, size, n, "not throttled");
	if (a->quota_cpus > 0)
		put(buf, size, n, "; quota %.2g CPU", a->quota_cpus);
	else if (a->quota[0])
		put(buf, size, n, "; no CPU quota");
}

static void describe_mem(const struct trialcg_stats *b, const struct trialcg_stats *a, char *buf, size_t size,
			 size_t *n)
{
	static const struct { enum trialcg_counter c; const char *what; } ev[] = {
		{ TCG_MEM_HIGH, "over high" }, { TCG_MEM_MAX, "at max" }, { TCG_MEM_OOM, "OOM" },
		{ TCG_MEM_FAILCNT, "limit hits (failcnt)" }, { TCG_MEM_OOM_KILL, "OOM kills" },
	};
	bool any = false;

	if (!trialcg_has(a, TCG_MEM_HIGH) && !trialcg_has(a, TCG_MEM_FAILCNT))
		return;
	put(buf, size, n, "%smemory:", *n ? "; " : "");
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		uint64_t d = trialcg_has(a, ev[i].c) ? delta(b, a, ev[i].c) : 0;

		if (d)
			put(buf, size, n, "%s %llu %s", any ? "," : "", (unsigned long long)d, ev[i].what);
		any |= d > 0;
	}
	if (!any)
		put(buf, size, n, " no limit events");
	if (a->mem_limit >= 0)
		put(buf, size, n, " (limit %.1f MiB", (double)a->mem_limit / 1048576.0);
	else
		put(buf, size, n, " (no limit");
	if (a->mem_high >= 0)
		put(buf, size, n, ", high %.1f MiB", (double)a->mem_high / 1048576.0);
	if (trialcg_has(a, TCG_MEM_PEAK))
		put(buf, size, n, ", peak %.1f MiB", (double)a->v[TCG_MEM_PEAK] / 1048576.0);
	put(buf, size, n, ")");
}

static void describe_psi(const struct trialcg_stats *b, const struct trialcg_stats *a, char *buf, size_t size,
			 size_t *n)
{
	static const struct { enum trialcg_counter some, full; const char *what; } res[] = {
		{ TCG_PSI_CPU_SOME_US, TCG_PSI_CPU_FULL_US, "cpu" },
		{ TCG_PSI_MEM_SOME_US, TCG_PSI_MEM_FULL_US, "memory" },
		{ TCG_PSI_IO_SOME_US, TCG_PSI_IO_FULL_US, "io" },
	};
	bool any = false;

	if (!trialcg_has(a, TCG_PSI_CPU_SOME_US))
		return;
	put(buf, size, n, "%sPSI", *n ? "; " : "");
	for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++) {
		uint64_t some = delta(b, a, res[i].some), full = delta(b, a, res[i].full);

		if (some || full)
			put(buf, size, n, "%s %s some %.2f s, full %.2f s", any ? ";" : "", res[i].what,
			    (double)some / 1e6, (double)full / 1e6);
		any |= some || full;
	}
	if (!any)
		put(buf, size, n, " no pressure");
}

int trialcg_describe(const struct trialcg_stats *before, const struct trialcg_stats *after, char *buf,
		     size_t size)
{
	size_t n = 0;

	if (!size)
		return -ENOBUFS;
	buf[0] = '\0';
	if (before && strcmp(before->paths, after->paths))
		return -EINVAL;
	describe_cpu(before, after, buf, size, &n);
	describe_mem(before, after, buf, size, &n);
	describe_psi(before, after, buf, size, &n);
	if (after->why[0])
		put(buf, size, &n, "%snot countable here: %s", n ? "; " : "", after->why);
	return n < size ? 0 : -ENOBUFS;
}

/* ---- perf --------------------------------------------------------------- */

const char *const trialcg_perf_names[TCG_PERF_N] = {
	[TCG_PERF_MIGRATIONS] = "cpu-migrations",
	[TCG_PERF_SWITCHES] = "context-switches",
	[TCG_PERF_FAULTS] = "page-faults",
	[TCG_PERF_TASK_CLOCK] = "task-clock",
};

static const uint64_t perf_config[TCG_PERF_N] = {
	[TCG_PERF_MIGRATIONS] = PERF_COUNT_SW_CPU_MIGRATIONS,
	[TCG_PERF_SWITCHES] = PERF_COUNT_SW_CONTEXT_SWITCHES,
	[TCG_PERF_FAULTS] = PERF_COUNT_SW_PAGE_FAULTS,
	[TCG_PERF_TASK_CLOCK] = PERF_COUNT_SW_TASK_CLOCK,
};

static int perf_open_cg(int cgfd, int cpu, enum trialcg_perf_event e)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = perf_config[e];
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, cgfd, cpu, -1, PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
}

static int perf_refused(int r, int cpu, struct nt_err *err)
{
	return err_set(err, r, "perf_event_open (cgroup, cpu %d): %s%s", cpu, nt_strerror(-r),
		       r == -EACCES || r == -EPERM ? " (kernel.perf_event_paranoid above 0 without CAP_PERFMON, "
		       "or a seccomp filter)" : r == -ENOSYS || r == -ENOENT ? " (no perf events in this kernel)" :
		       r == -EBADF || r == -EINVAL ? " (the cgroup is not in the hierarchy perf_event is bound to)" :
		       "");
}

int trialcg_perf_open(const struct trialcg *cg, struct trialcg_perf *ret, struct nt_err *err)
{
	struct trialcg_perf p = { 0, NULL };
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int cgfd = trialcg_perf_fd(cg), opened = 0;

	if (cgfd < 0)
		return err_set(err, -ENOTSUP, "no cgroup to count perf events of (no cgroup2 mount, no v1 perf_event)");
	if (ncpu < 1 || !(p.fd = malloc(sizeof(int) * (size_t)ncpu * TCG_PERF_N)))
		return err_set(err, -ENOMEM, "out of memory");
	p.n_cpus = (int)ncpu;
	for (int i = 0; i < p.n_cpus * TCG_PERF_N; i++)
		p.fd[i] = -1;
	for (int cpu = 0; cpu < p.n_cpus; cpu++) {
		for (int e = 0; e < TCG_PERF_N; e++) {
			int fd = perf_open_cg(cgfd, cpu, (enum trialcg_perf_event)e), r = -errno;

			if (fd < 0 && r == -ENODEV && e == 0)
				break;          /* an offline CPU */
			if (fd < 0) {
				trialcg_perf_close(&p);
				return perf_refused(r, cpu, err);
			}
			p.fd[cpu * TCG_PERF_N + e] = fd;
			opened++;
		}
	}
	if (!opened) {
		trialcg_perf_close(&p);
		return err_set(err, -ENODEV, "perf_event_open: no online CPU");
	}
	*ret = p;
	return 0;
}

int trialcg_perf_read(const struct trialcg_perf *p, uint64_t out[TCG_PERF_N], struct nt_err *err)
{
	uint64_t sum[TCG_PERF_N] = { 0 };

	if (!p->fd)
		return err_set(err, -EBADF, "perf events not open");
	for (int i = 0; i < p->n_cpus * TCG_PERF_N; i++) {
		uint64_t v;

		if (p->fd[i] < 0)
			continue;
		if (read(p->fd[i], &v, sizeof(v)) != sizeof(v))
			return err_set(err, -EIO, "perf read (cpu %d, %s): %s", i / TCG_PERF_N,
				       trialcg_perf_names[i % TCG_PERF_N], nt_strerror(errno));
		sum[i % TCG_PERF_N] += v;
	}
	memcpy(out, sum, sizeof(sum));
	return 0;
}

void trialcg_perf_close(struct trialcg_perf *p)
{
	if (!p->fd)
		return;
	for (int i = 0; i < p->n_cpus * TCG_PERF_N; i++)
		if (p->fd[i] >= 0)
			close(p->fd[i]);
	free(p->fd);
	p->fd = NULL;
	p->n_cpus = 0;
}
