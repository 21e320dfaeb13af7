/* SPDX-License-Identifier: MIT */
/* cgfollow.c — see cgfollow.h.
 *
 * The file in order:
 *   the tables   the job's processes (pid, start time), the pids found not
 *                to be the job's, the groups
 *   groups       a process's cgroups and their ancestors, each read when
 *                first seen
 *   a tick       list proc, new descendants, each job process's cgroups
 *   start, add, stop
 */
#include "ab/cgfollow.h"
#include "ab/cgfollow_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"
#include "base/textbuf.h"
#include "observe/procfs.h"

/* ---- the tables ---------------------------------------------------------- */

struct cf_proc {                 /* one process of the job */
	int pid;
	uint64_t start;              /* stat field 22: with pid, its identity */
	bool alive;
};

struct cf_group {
	struct trialcg_dirs dirs;
	struct cgfollow_group g;
};

struct cgfollow {
	const struct fsroot *root;   /* borrowed */
	struct trialcg_mounts mounts;
	struct procfs_cgroup pc;     /* scratch: one process's proc/PID/cgroup */
	int n_procs, cap_procs;
	struct cf_proc *procs;
	int n_others, cap_others;
	int *others;                 /* pids found not to be the job's, sorted */
	int ticks;
	int procs_dropped, groups_dropped;
	int n_groups;
	struct cf_group group[CGFOLLOW_MAX_GROUPS];
};

static int grow(void *pp, int *cap, int need, size_t elem)
{
	void **p = pp, *tmp;
	int n;

	if (need <= *cap)
		return 0;
	n = *cap ? 2 * *cap : 32;
	while (n < need)
		n *= 2;
	if (!(tmp = realloc(*p, (size_t)n * elem)))
		return -ENOMEM;
	*p = tmp;
	*cap = n;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Was pid found not to be the job's (others[0..n_sorted), sorted)? */
static bool is_other(const struct cgfollow *f, int n_sorted, int pid)
{
	return n_sorted && bsearch(&pid, f->others, (size_t)n_sorted, sizeof(int), cmp_int);
}

/* The live job process pid (NULL: none). */
static struct cf_proc *job_find(struct cgfollow *f, int pid)
{
	for (int i = 0; i < f->n_procs; i++)
		if (f->procs[i].pid == pid && f->procs[i].alive)
			return &f->procs[i];
	return NULL;
}

static int job_add(struct cgfollow *f, int pid, uint64_t start)
{
	if (f->n_procs >= CGFOLLOW_MAX_PROCS) {
		f->procs_dropped++;
		return -ENOSPC;
	}
	if (grow(&f->procs, &f->cap_procs, f->n_procs + 1, sizeof(*f->procs)) < 0)
		return -ENOMEM;
	f->procs[f->n_procs++] = (struct cf_proc){ pid, start, true };
	return 0;
}

/* ---- groups --------------------------------------------------------------- */

/* The directory to show for a group: its v1 cpu directory when its quota
 * is v1's, else its cgroup2 one, else the first it has. */
static void group_name(const struct trialcg_dirs *d, const struct trialcg_stats *s, char *out, size_t size)
{
	const char *pick = NULL;
	/* hierarchies as trialcg.c orders them: 0 cgroup2, 1 v1 cpu */
	if (!strncmp(s->quota, "cfs_", 4) && d->dir[1][0])
		pick = d->dir[1];
	for (int h = 0; h < TRIALCG_HIER_N && !pick; h++)
		if (d->dir[h][0])
			pick = d->dir[h];
	snprintf(out, size, "/%s", pick ? pick : "");
}

static bool dirs_equal(const struct trialcg_dirs *a, const struct trialcg_dirs *b)
{
	for (int h = 0; h < TRIALCG_HIER_N; h++)
		if (strcmp(a->dir[h], b->dir[h]))
			return false;
	return true;
}

/* The group of d, read now when it is new (job: a process is in it).
 * Its index, or -1 (unreadable, or no room). */
static int group_get(struct cgfollow *f, const struct trialcg_dirs *d, bool job)
{
	struct cf_group *cg;

	for (int i = 0; i < f->n_groups; i++)
		if (dirs_equal(&f->group[i].dirs, d)) {
			f->group[i].g.job |= job;
			return i;
		}
	if (f->n_groups == CGFOLLOW_MAX_GROUPS) {
		f->groups_dropped++;
		return -1;
	}
	cg = &f->group[f->n_groups];
	memset(cg, 0, sizeof(*cg));
	if (trialcg_read_dirs(f->root, d, &cg->g.before, NULL) < 0)
		return -1;
	cg->dirs = *d;
	cg->g.after = cg->g.before;
	cg->g.job = job;
	group_name(d, &cg->g.before, cg->g.name, sizeof(cg->g.name));
	textbuf_printable(cg->g.name);          /* a cgroup is named by whoever made it */
	return f->n_groups++;
}

/* Is the job process p still the one it was (same start time)?  Marks it
 * dead otherwise. */
static bool still_job(struct cgfollow *f, struct cf_proc *p)
{
	struct procfs_pid_stat st;
	char rel[64];

	snprintf(rel, sizeof(rel), "proc/%d/stat", p->pid);
	if (procfs_pid_stat_read(f->root, rel, &st, NULL) < 0 || st.starttime != p->start || st.zombie)
		p->alive = false;
	return p->alive;
}

/* p's cgroups, and their ancestors, into the groups.  Its state is read
 * after its cgroups: an exited process (a zombie) reads as in the root
 * cgroup wherever it ran, so a read that raced its exit is dropped. */
static void proc_groups(struct cgfollow *f, struct cf_proc *p)
{
	struct trialcg_dirs d;

	if (procfs_cgroup_read(f->root, p->pid, &f->pc, NULL) < 0 || !still_job(f, p))
		return;
	memset(&d, 0, sizeof(d));
	if (trialcg_dirs_of(&f->mounts, &f->pc, &d) < 0)
		return;
	if (group_get(f, &d, true) < 0)
		return;
	while (trialcg_dirs_parent(&f->mounts, &d))
		if (group_get(f, &d, false) < 0)
			return;
}

/* Read every group's counters again as its "after" (kept when gone). */
static void groups_reread(struct cgfollow *f)
{
	for (int i = 0; i < f->n_groups; i++) {
		struct trialcg_stats s;

		if (trialcg_read_dirs(f->root, &f->group[i].dirs, &s, NULL) == 0)
			f->group[i].g.after = s;
	}
}

/* ---- a tick ----------------------------------------------------------------- */

/* A pid not known yet: the job's when its parent is a live job process
 * that started no later than it.  Returns 1 (now the job's), 0 (not), or
 * -ENOMEM. */
static int proc_consider(struct cgfollow *f, int pid)
{
	struct procfs_pid_stat st;
	struct cf_proc *parent;
	char rel[64];
	int r;

	snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
	if (procfs_pid_stat_read(f->root, rel, &st, NULL) < 0)
		return 0;
	parent = job_find(f, st.ppid);
	if (parent && parent->start <= st.starttime && still_job(f, parent)) {
		r = job_add(f, pid, st.starttime);
		return r == -ENOMEM ? r : r == 0;
	}
	if (grow(&f->others, &f->cap_others, f->n_others + 1, sizeof(int)) < 0)
		return -ENOMEM;
	f->others[f->n_others++] = pid;
	return 0;
}

/* The new processes of proc: to a fixed point, since a child may be listed
 * before its parent is known to be the job's.  0 or -errno. */
static int find_new(struct cgfollow *f)
{
	char **names = NULL;
	int n = fsroot_list(f->root, "proc", &names), found = 1, r = 0, n_sorted;

	if (n < 0)
		return n;
	if (f->ticks % CGFOLLOW_FULL_PASS == 0)
		f->n_others = 0;     /* a full pass: every pid read again */
	n_sorted = f->n_others;
	while (found > 0 && r == 0) {
		found = 0;
		for (int i = 0; i < n && r == 0; i++) {
			int pid;

			if (parse_int(names[i], 1, INT32_MAX, &pid) < 0 || job_find(f, pid) || is_other(f, n_sorted, pid))
				continue;
			r = proc_consider(f, pid);
			found += r > 0;
			r = r < 0 ? r : 0;
		}
		/* the pids found not to be the job's in this pass are looked at
		 * again in the next round: one of them may be a child of a
		 * process found in this round */
		if (found)
			f->n_others = n_sorted;
		else if (f->n_others)
			qsort(f->others, (size_t)f->n_others, sizeof(int), cmp_int);
	}
	fsroot_names_free(names);
	return r;
}

int cgfollow_tick(struct cgfollow *f)
{
	int r;

	if (!f)
		return 0;
	for (int i = 0; i < f->n_procs; i++)
		if (f->procs[i].alive)
			still_job(f, &f->procs[i]);
	r = find_new(f);
	for (int i = 0; i < f->n_procs; i++)
		if (f->procs[i].alive)
			proc_groups(f, &f->procs[i]);
	if (f->ticks % CGFOLLOW_FULL_PASS == CGFOLLOW_FULL_PASS - 1)
		groups_reread(f);
	f->ticks++;
	return r;
}

/* ---- start, add, stop ------------------------------------------------------ */

struct cgfollow *cgfollow_start(const struct fsroot *root, pid_t job, struct nt_err *err)
{
	struct cgfollow *f;
	int r;

	if (job <= 0) {
		err_set(err, -EINVAL, "cgfollow_start: no pid");
		return NULL;
	}
	if (!(f = calloc(1, sizeof(*f)))) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	f->root = root;
	if ((r = trialcg_mounts_read(root, &f->mounts, err)) < 0 || (r = cgfollow_add_pid(f, job)) < 0) {
		if (r == -ENOENT)
			err_set(err, r, "pid %d: gone before it was followed", (int)job);
		else if (r != -ENOTSUP)
			err_set(err, r, "out of memory");
		free(f->procs);
		free(f);
		return NULL;
	}
	(void)cgfollow_tick(f);    /* proc unreadable: the next tick looks again */
	return f;
}

int cgfollow_add_pid(struct cgfollow *f, pid_t pid)
{
	struct procfs_pid_stat st;
	char rel[64];

	if (job_find(f, (int)pid))
		return 0;
	snprintf(rel, sizeof(rel), "proc/%d/stat", (int)pid);
	if (procfs_pid_stat_read(f->root, rel, &st, NULL) < 0)
		return -ENOENT;
	return job_add(f, (int)pid, st.starttime);
}

void cgfollow_free(struct cgfollow *f)
{
	if (!f)
		return;
	free(f->procs);
	free(f->others);
	free(f);
}

int cgfollow_stop(struct cgfollow *f, struct cgfollow_result *ret, struct nt_err *err)
{
	memset(ret, 0, sizeof(*ret));
	if (!f)
		return err_set(err, -EINVAL, "cgfollow_stop: no follower");
	(void)cgfollow_tick(f);
	groups_reread(f);
	ret->procs = f->n_procs;
	ret->procs_dropped = f->procs_dropped;
	ret->groups_dropped = f->groups_dropped;
	if (f->n_groups && !(ret->group = calloc((size_t)f->n_groups, sizeof(*ret->group)))) {
		cgfollow_free(f);
		return err_set(err, -ENOMEM, "out of memory");
	}
	ret->n = f->n_groups;
	for (int i = 0; i < f->n_groups; i++)
		ret->group[i] = f->group[i].g;
	cgfollow_free(f);
	return 0;
}

void cgfollow_result_free(struct cgfollow_result *r)
{
	if (!r)
		return;
	free(r->group);
	memset(r, 0, sizeof(*r));
}

uint64_t cgfollow_group_delta(const struct cgfollow_group *g, enum trialcg_counter c)
{
	if (!trialcg_has(&g->before, c) || !trialcg_has(&g->after, c) || g->after.v[c] < g->before.v[c])
		return 0;
	return g->after.v[c] - g->before.v[c];
}

bool cgfollow_group_limited(const struct cgfollow_group *g)
{
	static const enum trialcg_counter limits[] = {
		TCG_CPU_NR_THROTTLED, TCG_MEM_HIGH, TCG_MEM_MAX, TCG_MEM_OOM, TCG_MEM_OOM_KILL, TCG_MEM_FAILCNT,
	};

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		if (cgfollow_group_delta(g, limits[i]))
			return true;
	return false;
}
