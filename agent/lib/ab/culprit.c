/* SPDX-License-Identifier: MIT */
/* culprit.c — see culprit.h.
 *
 * Divisions: reading proc (a task's cgroup line, the trial's clock; stat
 * lines and the irq tables are parsed by observe/procfs); the process and
 * thread tables; one sample; start and stop; the result (tasks, IRQs);
 * JSON; the A vs B text.
 */
#include "ab/culprit.h"
#include "ab/culprit_test.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cpulist.h"
#include "observe/obs.h"
#include "observe/procfs.h"
#include "observe/taskexit.h"
#include "base/parse.h"
#include "base/textbuf.h"
#include "nt_clock.h"


/* ---- reading proc ------------------------------------------------------- */

/* Is controller one of the comma-separated list ctl[0..len)? */
static bool has_controller(const char *ctl, size_t len, const char *controller)
{
	size_t cl = strlen(controller);

	for (const char *p = ctl; p < ctl + len;) {
		const char *comma = memchr(p, ',', (size_t)(ctl + len - p));
		size_t n = comma ? (size_t)(comma - p) : (size_t)(ctl + len - p);

		if (n == cl && !memcmp(p, controller, cl))
			return true;
		p += n + 1;
	}
	return false;
}

/* The cgroup path that says where a process's CPU time is accounted: the
 * cpu controller's line, else the v2 line, else the first; "" when it
 * cannot be read, or the process has exited.  An exited process (a
 * zombie) reads as in the root cgroup ("1:cpu:/"), wherever it ran, so
 * its state is read after its cgroup: alive then, the cgroup read before
 * is where it ran. */
static void read_cgroup(const struct fsroot *root, int pid, char *out, size_t size)
{
	char rel[64], buf[4096], *line, *save = NULL;
	struct procfs_pid_stat st;
	int best = 3;

	out[0] = '\0';
	snprintf(rel, sizeof(rel), "proc/%d/cgroup", pid);
	if (fsroot_read(root, rel, buf, sizeof(buf)) < 0)
		return;
	snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
	if (procfs_pid_stat_read(root, rel, &st, NULL) < 0 || st.zombie)
		return;
	for (line = strtok_r(buf, "\n", &save); line && best > 0; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		int rank;

		if (!c2)
			continue;
		rank = has_controller(c1 + 1, (size_t)(c2 - c1 - 1), "cpu") ? 0 : c2 == c1 + 1 ? 1 : 2;
		if (rank < best) {
			best = rank;
			snprintf(out, size, "%s", c2 + 1);
		}
	}
}

/* The trial's clock in seconds since boot, the clock of a task's start
 * time (proc/PID/stat field 22): CLOCK_BOOTTIME on the host, a captured
 * tree's proc/uptime elsewhere (tests move it); -1 unknown. */
static double clock_s(const struct fsroot *root)
{
	char buf[128], *end;
	double v;

	if (fsroot_is_host(root))
		return nt_clock_s(CLOCK_BOOTTIME);
	if (fsroot_read(root, "proc/uptime", buf, sizeof(buf)) < 0)
		return -1;
	v = strtod(buf, &end);
	return end == buf ? -1 : v;
}

/* ---- proc/interrupts and proc/softirqs ----------------------------------- */

/* Read and parse relpath; -errno (the table is then empty). */
static int irqtab_read(const struct fsroot *root, const char *rel, struct procfs_irqtab *ret)
{
	return procfs_irqtab_read(root, rel, ret, NULL);
}

/* ---- the process and thread tables --------------------------------------- */

struct cu_ns {                   /* run time of a process on one CPU */
	int cpu;
	uint64_t ns;
};

struct cu_proc {
	int pid, ppid;
	bool job, self, kthread;
	bool exited;                 /* its exit record came (it was sampled too) */
	bool group;                  /* processes no sample saw, one row (exits_settle) */
	int n_short;                 /* a group: its processes */
	int anchor;                  /* a group: the sampled process that started
				      * them (procs[] index), -1 none known */
	char comm[32];
	char cgroup[256];
	int policy, priority;
	uint64_t policy_ns;          /* trial time of the thread its policy is from */
	int threads;                 /* threads that ran */
	int n_ns, cap_ns;
	struct cu_ns *ns;
};

struct cu_task {                 /* one thread as of the last sample */
	int tid, proc;               /* proc: index in procs[] */
	int cpu;
	uint64_t run_ns, trial_ns;
};

struct cu_allowed {              /* a job thread's allowed CPUs */
	int tid;
	double born;                 /* its start, on the trial's clock; -1 unknown */
	char list[CULPRIT_LIST_LEN];
};

struct cu_index {
	int pid, idx;
};

struct cu_exit {                 /* the exit record of a task no sample saw */
	int pid, tgid, ppid, cpu, policy, nice;
	char comm[32];
	uint64_t ns;
};

struct culprit {
	struct fsroot *root;
	int self;                    /* our pid, on the host; else 0 */
	long hz;
	int *job, n_job;             /* the pids given */
	bool job_dirty;              /* pids added or processes found since the last closure */
	struct cu_proc *procs;
	int n_procs, cap_procs, procs_dropped;
	struct cu_index *index;      /* procs by pid, sorted */
	int n_index, cap_index;
	struct cu_task *prev, *cur;  /* by tid, sorted */
	int n_prev, n_cur, cap_prev, cap_cur;
	struct cu_allowed *allowed;
	int n_allowed, cap_allowed;
	int n_changes;
	struct culprit_affinity_change changes[CULPRIT_MAX_CHANGES];
	bool cpus_given;
	unsigned char *rank;         /* [OBS_MAX_CPUS], when given */
	double t0;
	int samples;
	double ms_sum, ms_max;
	bool schedstat;              /* some run time came from schedstat */
	struct procfs_irqtab irq0, soft0;
	struct obs_stat *stat0;      /* NULL: not read */
	struct taskexit *tx;         /* exit records (a host's proc only); NULL: none */
	char tx_why[160];            /* why none */
	struct cu_exit *exits;
	int n_exits, cap_exits;
	uint64_t exits_seen, exits_dropped;
	uint64_t exits_notgid;       /* records of unseen tasks without a tgid */
};

/* Grow *arr (of *cap elements of size) to hold need; 0 or -ENOMEM. */
static int grow(void *arr, int *cap, int need, size_t size)
{
	void **p = arr;
	int ncap = *cap ? *cap : 16;
	void *tmp;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	tmp = realloc(*p, (size_t)ncap * size);
	if (!tmp)
		return -ENOMEM;
	*p = tmp;
	*cap = ncap;
	return 0;
}

static int cmp_index(const void *a, const void *b)
{
	const struct cu_index *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int cmp_task(const void *a, const void *b)
{
	const struct cu_task *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int proc_find(const struct culprit *c, int pid)
{
	struct cu_index key = { .pid = pid }, *hit;

	if (!c->n_index)
		return -1;
	hit = bsearch(&key, c->index, (size_t)c->n_index, sizeof(key), cmp_index);
	return hit ? hit->idx : -1;
}

/* procs[] index of a sampled process by pid, those appended since the
 * index was built too; never a group row.  -1: none. */
static int proc_lookup(const struct culprit *c, int pid)
{
	int idx = proc_find(c, pid);

	for (int i = c->n_index; idx < 0 && i < c->n_procs; i++)
		if (c->procs[i].pid == pid && !c->procs[i].group)
			idx = i;
	return idx;
}

static bool is_job_pid(const struct culprit *c, int pid)
{
	for (int i = 0; i < c->n_job; i++)
		if (c->job[i] == pid)
			return true;
	return false;
}

/* A process seen for the first time: its name, parent, kind, policy and
 * cgroup.  Its index, or -1 (gone, or the table is full). */
static int proc_new(struct culprit *c, int pid)
{
	struct procfs_pid_stat st;
	struct cu_proc *p;
	char rel[64];

	if (c->n_procs >= CULPRIT_MAX_PROCS) {
		c->procs_dropped++;
		return -1;
	}
	snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
	if (procfs_pid_stat_read(c->root, rel, &st, NULL) < 0 || grow(&c->procs, &c->cap_procs, c->n_procs + 1, sizeof(*p)) < 0)
		return -1;
	p = &c->procs[c->n_procs];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->ppid = st.ppid;
	p->self = pid == c->self;
	p->kthread = st.kthread;
	p->policy = st.policy;
	p->priority = st.priority;
	snprintf(p->comm, sizeof(p->comm), "%s", st.comm);
	read_cgroup(c->root, pid, p->cgroup, sizeof(p->cgroup));
	/* any process names itself (prctl PR_SET_NAME), and its cgroups */
	textbuf_printable(p->comm);
	textbuf_printable(p->cgroup);
	c->job_dirty = true;
	return c->n_procs++;
}

/* Put ns of run time on cpu. */
static void proc_add_ns(struct cu_proc *p, int cpu, uint64_t ns)
{
	for (int i = 0; i < p->n_ns; i++) {
		if (p->ns[i].cpu == cpu) {
			p->ns[i].ns += ns;
			return;
		}
	}
	if (grow(&p->ns, &p->cap_ns, p->n_ns + 1, sizeof(*p->ns)) == 0)
		p->ns[p->n_ns++] = (struct cu_ns){ cpu, ns };
}

/* Rebuild the index (new processes were appended) and mark the job: the
 * pids given and, to a fixed point, every process whose parent is the
 * job's. */
static int procs_settle(struct culprit *c)
{
	bool grew = true;

	if (!c->job_dirty)
		return 0;
	if (grow(&c->index, &c->cap_index, c->n_procs, sizeof(*c->index)) < 0)
		return -ENOMEM;
	for (int i = 0; i < c->n_procs; i++)
		c->index[i] = (struct cu_index){ c->procs[i].pid, i };
	c->n_index = c->n_procs;
	if (c->n_index)         /* qsort(NULL, 0, ...) is undefined */
		qsort(c->index, (size_t)c->n_index, sizeof(*c->index), cmp_index);
	while (grew) {
		grew = false;
		for (int i = 0; i < c->n_procs; i++) {
			struct cu_proc *p = &c->procs[i];
			int parent;

			if (p->job || p->self)
				continue;
			parent = proc_find(c, p->ppid);
			if (is_job_pid(c, p->pid) || (parent >= 0 && c->procs[parent].job)) {
				p->job = grew = true;
			}
		}
	}
	c->job_dirty = false;
	return 0;
}

/* ---- one sample ------------------------------------------------------------ */

/* Thread tid in tab[0..n) (sorted by tid); NULL: not there. */
static struct cu_task *task_in(struct cu_task *tab, int n, int tid)
{
	struct cu_task key = { .tid = tid };

	return n ? bsearch(&key, tab, (size_t)n, sizeof(key), cmp_task) : NULL;
}

/* A thread's run time so far, in ns: schedstat's first field, else
 * utime+stime from its stat (then read into *st, *have_st set).  0 or
 * -errno (gone). */
static int task_run_ns(struct culprit *c, const char *dir, uint64_t *ret, struct procfs_pid_stat *st, bool *have_st)
{
	char rel[128], buf[256];
	int r;

	snprintf(rel, sizeof(rel), "%s/schedstat", dir);
	if (fsroot_read(c->root, rel, buf, sizeof(buf)) >= 0) {
		unsigned long long v;
		char *end;

		v = strtoull(buf, &end, 10);
		if (end != buf && (*end == ' ' || *end == '\0')) {
			*ret = v;
			c->schedstat = true;
			return 0;
		}
	}
	snprintf(rel, sizeof(rel), "%s/stat", dir);
	r = procfs_pid_stat_read(c->root, rel, st, NULL);
	if (r < 0)
		return r;
	*have_st = true;
	*ret = st->ticks * (1000000000ull / (uint64_t)c->hz);
	return 0;
}

/* One thread of process procs[idx]: its run time since the last sample,
 * put on the CPU it last ran on. */
static void sample_task(struct culprit *c, int idx, int pid, int tid)
{
	const struct cu_task *old = task_in(c->prev, c->n_prev, tid);
	struct procfs_pid_stat st;
	struct cu_proc *p;
	struct cu_task *t;
	char dir[96], rel[128];
	bool have_st = false;
	uint64_t run, delta;

	snprintf(dir, sizeof(dir), "proc/%d/task/%d", pid, tid);
	if (task_run_ns(c, dir, &run, &st, &have_st) < 0 || grow(&c->cur, &c->cap_cur, c->n_cur + 1, sizeof(*t)) < 0)
		return;
	t = &c->cur[c->n_cur++];
	*t = old ? *old : (struct cu_task){ .tid = tid, .cpu = -1 };
	t->proc = idx;
	if (old && run == old->run_ns)
		return;                 /* did not run: nothing more to read */
	if (!old && c->samples == 0) {
		t->run_ns = run;        /* the baseline */
		return;
	}
	snprintf(rel, sizeof(rel), "%s/stat", dir);
	if (!have_st && procfs_pid_stat_read(c->root, rel, &st, NULL) < 0)
		return;
	/* a thread first seen now was born since the last sample */
	delta = !old ? run : run > old->run_ns ? run - old->run_ns : 0;
	t->run_ns = run;
	t->cpu = st.cpu;
	p = &c->procs[idx];
	if (tid == pid && strcmp(p->comm, st.comm)) {
		/* exec renamed it (the forked job is "nodetune" until it
		 * execs the command): the name it runs under */
		snprintf(p->comm, sizeof(p->comm), "%s", st.comm);
		textbuf_printable(p->comm);
	}
	if (!delta)
		return;
	proc_add_ns(p, st.cpu, delta);
	p->threads += t->trial_ns == 0;
	t->trial_ns += delta;
	if (t->trial_ns >= p->policy_ns) {      /* the policy of its busiest thread */
		p->policy_ns = t->trial_ns;
		p->policy = st.policy;
		p->priority = st.priority;
	}
}

static void sample_proc(struct culprit *c, int pid)
{
	char rel[64], **tids = NULL;
	int idx = proc_lookup(c, pid), n;       /* or appended this sample (a pid listed twice) */

	if (idx < 0 && (idx = proc_new(c, pid)) < 0)
		return;
	snprintf(rel, sizeof(rel), "proc/%d/task", pid);
	n = fsroot_list(c->root, rel, &tids);
	for (int i = 0; i < n; i++) {
		int tid;

		if (parse_int(tids[i], 1, INT32_MAX, &tid) == 0)
			sample_task(c, idx, pid, tid);
	}
	if (n >= 0)
		fsroot_names_free(tids);
}

/* A job thread's allowed CPUs, against what it had before.  A change seen
 * in a thread's first CULPRIT_SETTLE_S is where it starts, not a move: a
 * launcher that binds itself before it execs the job (taskset, numactl,
 * nodetune exec, a wrapper shell's), a runtime that pins a thread it has
 * just made.  Whether a sample caught the list it inherited before it set
 * its own is chance (the same job caught in 5 of 8 trials of one arm and 1
 * of 8 of the other, the forked job seen waiting to exec in some and not
 * in others), and where it settled is in the job's table (allowed CPUs). */
static void check_affinity(struct culprit *c, const struct cu_task *t, double now)
{
	const struct cu_proc *p = &c->procs[t->proc];
	char rel[128], buf[4096], *line;
	struct cu_allowed *a = NULL;
	struct procfs_pid_stat st;
	size_t len;

	snprintf(rel, sizeof(rel), "proc/%d/task/%d/status", p->pid, t->tid);
	if (fsroot_read(c->root, rel, buf, sizeof(buf)) < 0 || !(line = strstr(buf, "\nCpus_allowed_list:")))
		return;
	line += strlen("\nCpus_allowed_list:");
	line += strspn(line, " \t");
	len = strcspn(line, "\n");
	line[len] = '\0';
	for (int i = 0; i < c->n_allowed && !a; i++)
		if (c->allowed[i].tid == t->tid)
			a = &c->allowed[i];
	if (!a) {
		if (grow(&c->allowed, &c->cap_allowed, c->n_allowed + 1, sizeof(*a)) < 0)
			return;
		a = &c->allowed[c->n_allowed++];
		a->tid = t->tid;
		snprintf(a->list, sizeof(a->list), "%s", line);
		snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", p->pid, t->tid);
		a->born = procfs_pid_stat_read(c->root, rel, &st, NULL) == 0 ? (double)st.starttime / (double)c->hz : -1;
		return;
	}
	if (!strcmp(a->list, line))
		return;
	/* nodetune exec binding its rank before it execs the job is the
	 * policy at work, the same in every trial: not a change to report */
	if (c->n_changes < CULPRIT_MAX_CHANGES && strcmp(p->comm, "nodetune") &&
	    !(a->born >= 0 && now >= 0 && now - a->born < CULPRIT_SETTLE_S)) {
		struct culprit_affinity_change *ch = &c->changes[c->n_changes++];

		*ch = (struct culprit_affinity_change){ .pid = p->pid, .tid = t->tid, .t = now - c->t0 };
		snprintf(ch->comm, sizeof(ch->comm), "%s", p->comm);
		snprintf(ch->before, sizeof(ch->before), "%s", a->list);
		snprintf(ch->after, sizeof(ch->after), "%s", line);
	}
	snprintf(a->list, sizeof(a->list), "%s", line);
}

/* ---- tasks no sample saw: their exit records ------------------------------ */

int culprit_exit_record(struct culprit *c, const struct taskexit_rec *x)
{
	struct taskexit_rec bounded;
	struct cu_task *t;
	struct cu_exit *e;
	int tgid = x->tgid ? x->tgid : x->pid, idx;

	c->exits_seen++;
	if (c->samples == 0 || (c->self && tgid == c->self))
		return 0;               /* before the baseline, or one of our own threads */
	if (x->cpu >= OBS_MAX_CPUS) {           /* a CPU the tables do not hold */
		bounded = *x;
		bounded.cpu = -1;
		x = &bounded;
	}
	/* seen alive (this sample, or the last): the rest of its time, on
	 * the CPU it exited on; a zombie listed again reads the same total */
	t = task_in(c->cur, c->n_cur, x->pid);
	if (!t)
		t = task_in(c->prev, c->n_prev, x->pid);
	if (t) {
		struct cu_proc *p = &c->procs[t->proc];

		/* against schedstat's run time only the scheduler's own compares */
		if (x->run_exact == c->schedstat && x->run_ns > t->run_ns && (x->cpu >= 0 || t->cpu >= 0))
			proc_add_ns(p, x->cpu >= 0 ? x->cpu : t->cpu, x->run_ns - t->run_ns);
		if (x->run_exact == c->schedstat && x->run_ns > t->run_ns)
			t->run_ns = x->run_ns;
		p->exited |= x->pid == p->pid;
		return 0;
	}
	/* a kernel before taskstats v12 says no tgid: a task no sample saw
	 * cannot be told from a thread, nor put on its process */
	if (!x->tgid) {
		c->exits_notgid++;
		return 0;
	}
	/* a thread no sample saw, of a process one did: the process's time */
	if (tgid != x->pid && (idx = proc_lookup(c, tgid)) >= 0) {
		if (x->cpu >= 0 && x->run_ns)
			proc_add_ns(&c->procs[idx], x->cpu, x->run_ns);
		c->procs[idx].threads += x->run_ns > 0;
		return 0;
	}
	/* a task no sample saw: kept, to be put on the process that started
	 * it at the end (its parent may still be unknown now) */
	if (c->n_exits >= CULPRIT_MAX_EXITS || grow(&c->exits, &c->cap_exits, c->n_exits + 1, sizeof(*e)) < 0) {
		c->exits_dropped++;
		return 0;
	}
	e = &c->exits[c->n_exits++];
	*e = (struct cu_exit){ .pid = x->pid, .tgid = tgid, .ppid = x->ppid, .cpu = x->cpu, .policy = x->policy,
			       .nice = x->nice, .ns = x->run_ns };
	snprintf(e->comm, sizeof(e->comm), "%s", x->comm);
	textbuf_printable(e->comm);
	return 0;
}

static int exit_cb(const struct taskexit_rec *x, void *arg)
{
	return culprit_exit_record(arg, x);
}

static int cmp_exit_pid(const void *a, const void *b)
{
	const struct cu_index *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The process record of pid among the exits (map: by pid); NULL none. */
static const struct cu_exit *exit_of(const struct culprit *c, const struct cu_index *map, int n, int pid)
{
	struct cu_index key = { .pid = pid }, *hit = n ? bsearch(&key, map, (size_t)n, sizeof(key), cmp_exit_pid) : NULL;

	return hit ? &c->exits[hit->idx] : NULL;
}

/* The group row among procs[from..) of the processes of comm, policy and
 * priority (a nice) that procs[anchor] started, the job's or not; -1: none. */
static int group_find(const struct culprit *c, int from, int anchor, bool job, const char *comm, int policy,
		      int priority)
{
	for (int i = from; i < c->n_procs; i++) {
		const struct cu_proc *g = &c->procs[i];

		if (g->anchor == anchor && g->job == job && g->policy == policy && g->priority == priority &&
		    !strcmp(g->comm, comm))
			return i;
	}
	return -1;
}

/* The group row of pr's kind under anchor (group_find); new when none.
 * Its index, or -ENOMEM. */
static int group_get(struct culprit *c, int from, int anchor, const struct cu_exit *pr, bool job)
{
	int i = group_find(c, from, anchor, job, pr->comm, pr->policy, pr->nice);
	struct cu_proc *g;

	if (i >= 0)
		return i;
	if (grow(&c->procs, &c->cap_procs, c->n_procs + 1, sizeof(*g)) < 0)
		return -ENOMEM;
	g = &c->procs[c->n_procs];
	memset(g, 0, sizeof(*g));
	g->group = true;
	g->anchor = anchor;
	g->job = job;
	g->pid = g->ppid = anchor >= 0 ? c->procs[anchor].pid : pr->tgid;
	g->policy = pr->policy;
	g->priority = pr->nice;
	snprintf(g->comm, sizeof(g->comm), "%s", pr->comm);
	if (anchor >= 0)
		snprintf(g->cgroup, sizeof(g->cgroup), "%s", c->procs[anchor].cgroup);
	return c->n_procs++;
}

/* The tasks no sample saw, each put in a group row: the processes of one
 * name, policy and nice that one sampled process started (its children, or
 * theirs: a shell's `sh -c` that ran `true`), the job's when that process
 * is (or one of them is a pid the job was given).  Processes that a sample
 * did see, that exited within the trial, join the group of their kind
 * when there is one (a loop's processes that a sample happened to catch).
 * Ours (nodetune's helpers) are dropped.  0 or -ENOMEM. */
static int exits_settle(struct culprit *c)
{
	struct cu_index *map;
	int n_map = 0, from = c->n_procs;

	if (!c->n_exits)
		return 0;
	map = calloc((size_t)c->n_exits, sizeof(*map));
	if (!map)
		return -ENOMEM;
	for (int i = 0; i < c->n_exits; i++)
		if (c->exits[i].pid == c->exits[i].tgid)
			map[n_map++] = (struct cu_index){ c->exits[i].pid, i };
	qsort(map, (size_t)n_map, sizeof(*map), cmp_exit_pid);
	for (int i = 0; i < c->n_exits; i++) {
		const struct cu_exit *e = &c->exits[i], *pr = e, *at;
		bool job = false;
		int anchor = -1, g, known = proc_lookup(c, e->tgid);

		if (known >= 0 && e->tgid == e->pid) {
			/* its record came before a sample listed it, as a
			 * zombie not yet reaped: the sample has its time */
			c->procs[known].exited = true;
			continue;
		}
		if (known >= 0) {
			/* a thread of a process sampled only after it exited */
			if (e->cpu >= 0 && e->ns)
				proc_add_ns(&c->procs[known], e->cpu, e->ns);
			continue;
		}
		if (e->tgid != e->pid && (at = exit_of(c, map, n_map, e->tgid)))
			pr = at;        /* a thread of a process that exited too */
		at = pr;
		for (int depth = 0; depth < 64 && at; depth++) {
			const struct cu_exit *up;

			job |= is_job_pid(c, at->pid);
			if ((anchor = proc_lookup(c, at->ppid)) >= 0)
				break;
			up = exit_of(c, map, n_map, at->ppid);
			at = up != at ? up : NULL;
		}
		if (anchor >= 0 && c->procs[anchor].self && !job)
			continue;       /* nodetune's own */
		job |= anchor >= 0 && c->procs[anchor].job;
		g = group_get(c, from, anchor, pr, job);
		if (g < 0) {
			free(map);
			return g;
		}
		if (e->cpu >= 0 && e->ns)
			proc_add_ns(&c->procs[g], e->cpu, e->ns);
		c->procs[g].n_short += pr == e;
		c->procs[g].threads += e->ns > 0;
	}
	free(map);
	/* sampled processes of a group's kind that exited within the trial */
	for (int i = 0; i < from; i++) {
		struct cu_proc *p = &c->procs[i];
		int anchor = p->exited && !p->self && !is_job_pid(c, p->pid) ? proc_lookup(c, p->ppid) : -1;
		int k = anchor < 0 ? -1 : group_find(c, from, anchor, p->job, p->comm, p->policy, p->priority);
		struct cu_proc *g;

		if (k < 0)
			continue;
		g = &c->procs[k];
		for (int j = 0; j < p->n_ns; j++)
			proc_add_ns(g, p->ns[j].cpu, p->ns[j].ns);
		g->n_short++;
		g->threads += p->threads;
		p->n_ns = 0;            /* its time is the group's now */
	}
	return 0;
}

/* This sample's threads become the last sample's. */
static void swap_tasks(struct culprit *c)
{
	struct cu_task *t = c->prev;
	int cap = c->cap_prev;

	c->prev = c->cur;
	c->cap_prev = c->cap_cur;
	c->n_prev = c->n_cur;
	c->cur = t;
	c->cap_cur = cap;
	c->n_cur = 0;
}

int culprit_sample(struct culprit *c)
{
	double t0 = nt_mono_ms(), ms, now;
	char **names = NULL;
	int n = fsroot_list(c->root, "proc", &names);

	if (n < 0)
		return n;
	c->n_cur = 0;
	for (int i = 0; i < n; i++) {
		int pid;

		if (parse_int(names[i], 1, INT32_MAX, &pid) == 0)
			sample_proc(c, pid);
	}
	fsroot_names_free(names);
	if (c->n_cur)
		qsort(c->cur, (size_t)c->n_cur, sizeof(*c->cur), cmp_task);
	/* after the listing (a task gone since is in this one or the last),
	 * before the swap */
	(void)taskexit_drain(c->tx, exit_cb, c);
	swap_tasks(c);
	if (procs_settle(c) < 0)
		return -ENOMEM;
	now = clock_s(c->root);
	for (int i = 0; i < c->n_prev; i++) {
		struct cu_proc *p = &c->procs[c->prev[i].proc];
		char now_in[sizeof(p->cgroup)];

		if (!p->job)
			continue;
		check_affinity(c, &c->prev[i], now);
		/* a job's process may move (a container runtime, a launcher
		 * with a CPU limit, nodetune's own trial cgroup after the
		 * fork): its cgroup as of this sample, read once per process
		 * (at its main thread), kept when it can no longer be read */
		if (c->prev[i].tid != p->pid)
			continue;
		read_cgroup(c->root, p->pid, now_in, sizeof(now_in));
		if (now_in[0]) {
			textbuf_printable(now_in);
			memcpy(p->cgroup, now_in, sizeof(now_in));
		}
	}
	fsroot_cache_sweep(c->root);
	c->samples++;
	ms = nt_mono_ms() - t0;
	c->ms_sum += ms;
	if (ms > c->ms_max)
		c->ms_max = ms;
	return 0;
}

/* ---- start and stop --------------------------------------------------------- */

static void culprit_free(struct culprit *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n_procs; i++)
		free(c->procs[i].ns);
	free(c->procs);
	free(c->index);
	free(c->prev);
	free(c->cur);
	free(c->allowed);
	free(c->exits);
	taskexit_close(c->tx);
	free(c->job);
	free(c->rank);
	free(c->stat0);
	procfs_irqtab_free(&c->irq0);
	procfs_irqtab_free(&c->soft0);
	fsroot_free(c->root);
	free(c);
}

/* The files read at both ends of the trial. */
static void read_ends(struct culprit *c, struct procfs_irqtab *irq, struct procfs_irqtab *soft,
		      struct obs_stat **stat)
{
	irqtab_read(c->root, "proc/interrupts", irq);
	irqtab_read(c->root, "proc/softirqs", soft);
	*stat = malloc(sizeof(**stat));
	if (*stat && obs_read_stat(c->root, "proc/stat", *stat, NULL) < 0) {
		free(*stat);
		*stat = NULL;
	}
}

struct culprit *culprit_start(const struct fsroot *root, const int *job_pids, int n, struct nt_err *err)
{
	struct culprit *c = calloc(1, sizeof(*c));
	int r;

	if (!c) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	c->root = fsroot_open(fsroot_path(root));
	if (!c->root) {
		err_set(err, -errno, "%s: %s", fsroot_path(root), nt_strerror(errno));
		goto out_free;
	}
	fsroot_cache_enable(c->root, true);     /* the same schedstat files ten times a second */
	c->self = fsroot_is_host(c->root) ? getpid() : 0;
	c->hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	if (culprit_add_pids(c, job_pids, n) < 0) {
		err_set(err, -ENOMEM, "out of memory");
		goto out_free;
	}
	if (fsroot_is_host(c->root)) {
		struct nt_err e = { 0 };

		c->tx = taskexit_open(&e);
		if (!c->tx)
			snprintf(c->tx_why, sizeof(c->tx_why), "%.150s", e.msg);
	} else {
		snprintf(c->tx_why, sizeof(c->tx_why), "not the host's proc (%s)", fsroot_path(c->root));
	}
	c->t0 = clock_s(c->root);
	read_ends(c, &c->irq0, &c->soft0, &c->stat0);
	r = culprit_sample(c);
	if (r < 0) {
		char shown[4096];

		err_set(err, r, "%s: %s", fsroot_display(c->root, "proc", shown, sizeof(shown)), nt_strerror(-r));
		goto out_free;
	}
	return c;
out_free:
	culprit_free(c);
	return NULL;
}

int culprit_add_pids(struct culprit *c, const int *pids, int n)
{
	int *tmp;

	if (n <= 0 || !pids)
		return 0;
	tmp = realloc(c->job, (size_t)(c->n_job + n) * sizeof(int));
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp + c->n_job, pids, (size_t)n * sizeof(int));
	c->job = tmp;
	c->n_job += n;
	c->job_dirty = true;
	return procs_settle(c);
}

int culprit_set_cpus(struct culprit *c, const char *cpulist, struct nt_err *err)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	unsigned char *rank = calloc(OBS_MAX_CPUS, 1);
	int r = !set || !rank ? -ENOMEM : cpulist_parse(cpulist, set);
	int last = r == 0 ? hwloc_bitmap_last(set) : -1;

	if (r == 0 && last >= OBS_MAX_CPUS)
		r = -EINVAL;
	if (r == 0) {
		for (int cpu = hwloc_bitmap_first(set); cpu >= 0; cpu = hwloc_bitmap_next(set, cpu))
			rank[cpu] = 1;
		free(c->rank);
		c->rank = rank;
		c->cpus_given = true;
		rank = NULL;
	} else {
		err_set(err, r, r == -ENOMEM ? "out of memory" : "rank CPUs '%.64s': not a cpulist of CPUs below %d",
			cpulist, OBS_MAX_CPUS);
	}
	hwloc_bitmap_free(set);
	free(rank);
	return r;
}

/* ---- the result -------------------------------------------------------------- */

/* The rank CPUs: given, else where the job ran at least
 * CULPRIT_RANK_MIN_SHARE of the trial.  0 or -ENOMEM. */
static int rank_cpus(struct culprit *c, double seconds)
{
	uint64_t *ns;

	if (c->cpus_given)
		return 0;
	ns = calloc(OBS_MAX_CPUS, sizeof(*ns));
	c->rank = calloc(OBS_MAX_CPUS, 1);
	if (!ns || !c->rank) {
		free(ns);
		return -ENOMEM;
	}
	for (int i = 0; i < c->n_procs; i++)
		for (int k = 0; c->procs[i].job && k < c->procs[i].n_ns; k++)
			ns[c->procs[i].ns[k].cpu] += c->procs[i].ns[k].ns;
	for (int cpu = 0; cpu < OBS_MAX_CPUS; cpu++)
		c->rank[cpu] = seconds > 0 && (double)ns[cpu] / 1e9 >= CULPRIT_RANK_MIN_SHARE * seconds;
	free(ns);
	return 0;
}

static int rank_list(const struct culprit *c, char *buf, size_t size)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	int r;

	if (!set)
		return -ENOMEM;
	for (int cpu = 0; cpu < OBS_MAX_CPUS; cpu++)
		if (c->rank[cpu])
			hwloc_bitmap_set(set, (unsigned)cpu);
	r = cpulist_format(set, buf, size);
	hwloc_bitmap_free(set);
	return r;
}

int culprit_task_cmp(const void *a, const void *b)
{
	const struct culprit_task *x = a, *y = b;

	if (x->top_share != y->top_share)
		return x->top_share < y->top_share ? 1 : -1;
	if (x->seconds != y->seconds)
		return x->seconds < y->seconds ? 1 : -1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* procs[i] as a row, its time on the rank CPUs; -ENOENT when it had none. */
static int culprit_row(const struct culprit *c, const struct cu_proc *p, double seconds, struct culprit_task *ret)
{
	struct culprit_task t = { .pid = p->pid, .threads = p->threads, .policy = p->policy,
				  .priority = p->priority, .kthread = p->kthread, .top_cpu = -1 };

	for (int k = 0; k < p->n_ns; k++) {
		const struct cu_ns *x = &p->ns[k];
		struct culprit_cpu_time *ct;

		if (!c->rank[x->cpu] || !x->ns)
			continue;
		if (!t.cpus && !(t.cpus = calloc((size_t)p->n_ns, sizeof(*t.cpus))))
			return -ENOMEM;
		ct = &t.cpus[t.n_cpus++];
		ct->cpu = x->cpu;
		ct->seconds = (double)x->ns / 1e9;
		ct->share = seconds > 0 ? ct->seconds / seconds : 0;
		t.seconds += ct->seconds;
		if (t.top_cpu < 0 || ct->share > t.top_share || (ct->share == t.top_share && ct->cpu < t.top_cpu)) {
			t.top_cpu = ct->cpu;
			t.top_share = ct->share;
		}
	}
	if (!t.n_cpus)
		return -ENOENT;
	for (int i = 1; i < t.n_cpus; i++)     /* by CPU (insertion: a few) */
		for (int j = i; j > 0 && t.cpus[j - 1].cpu > t.cpus[j].cpu; j--) {
			struct culprit_cpu_time tmp = t.cpus[j];

			t.cpus[j] = t.cpus[j - 1];
			t.cpus[j - 1] = tmp;
		}
	snprintf(t.comm, sizeof(t.comm), "%s", p->comm);
	snprintf(t.cgroup, sizeof(t.cgroup), "%s", p->cgroup);
	if (p->group) {
		t.short_lived = p->n_short > 0 ? p->n_short : 1;
		if (p->anchor >= 0)
			snprintf(t.started_by, sizeof(t.started_by), "%s", c->procs[p->anchor].comm);
	}
	for (int i = 0; p->job && !p->group && i < c->n_allowed; i++)
		if (c->allowed[i].tid == p->pid) {
			snprintf(t.allowed, sizeof(t.allowed), "%s", c->allowed[i].list);
			textbuf_printable(t.allowed);
			break;
		}
	*ret = t;
	return 0;
}

/* Every process that ran on a rank CPU, the job's (job) or those other than
 * the job's and ours (!job), the top CULPRIT_MAX_TASKS kept in *ret (*ret_n),
 * how many there were in *ret_all.  0 or -ENOMEM (*ret holds what was
 * built, for culprit_result_free). */
static int result_rows(const struct culprit *c, double seconds, bool job, struct culprit_task **ret, int *ret_n,
		       int *ret_all)
{
	struct culprit_task *all = calloc((size_t)c->n_procs + 1, sizeof(*all));
	int n = 0;

	if (!all)
		return -ENOMEM;
	for (int i = 0; i < c->n_procs; i++) {
		int k;

		if (c->procs[i].job != job || c->procs[i].self)
			continue;
		k = culprit_row(c, &c->procs[i], seconds, &all[n]);
		if (k == -ENOMEM) {
			*ret = all;
			*ret_n = n;
			return k;
		}
		n += k == 0;
	}
	qsort(all, (size_t)n, sizeof(*all), culprit_task_cmp);
	*ret_all = n;
	*ret_n = n < CULPRIT_MAX_TASKS ? n : CULPRIT_MAX_TASKS;
	for (int i = *ret_n; i < n; i++)
		free(all[i].cpus);
	*ret = all;
	return 0;
}

static int irqtab_col(const struct procfs_irqtab *t, int cpu)
{
	for (int k = 0; k < t->n_cols; k++)
		if (t->col_cpu[k] == cpu)
			return k;
	return -1;
}

/* How much row i of b counted on cpu since a (a row or CPU new in b
 * counted from 0). */
static uint64_t irqtab_delta(const struct procfs_irqtab *a, const struct procfs_irqtab *b, int i, int cpu)
{
	int cb = irqtab_col(b, cpu), ca = irqtab_col(a, cpu), j = -1;
	uint64_t now, then = 0;

	if (cb < 0)
		return 0;
	now = b->counts[(size_t)i * (size_t)b->n_cols + (size_t)cb];
	if (i < a->n_rows && !strcmp(a->rows[i].label, b->rows[i].label))
		j = i;
	for (int k = 0; j < 0 && k < a->n_rows; k++)
		if (!strcmp(a->rows[k].label, b->rows[i].label))
			j = k;
	if (j >= 0 && ca >= 0)
		then = a->counts[(size_t)j * (size_t)a->n_cols + (size_t)ca];
	return now > then ? now - then : 0;
}

static void irq_count_set(struct culprit_irq_count *out, const struct procfs_irq_row *row, uint64_t count)
{
	snprintf(out->label, sizeof(out->label), "%s", row->label);
	snprintf(out->name, sizeof(out->name), "%s", row->name);
	out->count = count;
}

static int cmp_irq_count(const void *a, const void *b)
{
	const struct culprit_irq_count *x = a, *y = b;

	return (x->count < y->count) - (x->count > y->count);
}

/* The busiest IRQ lines and the softirqs that moved on cpu. */
static void cpu_irq_counts(const struct culprit *c, const struct procfs_irqtab *irq1,
			   const struct procfs_irqtab *soft1, struct culprit_cpu_irq *out)
{
	struct culprit_irq_count *rows = irq1->n_rows ? calloc((size_t)irq1->n_rows, sizeof(*rows)) : NULL;
	int n = 0;

	for (int i = 0; rows && i < irq1->n_rows; i++) {
		uint64_t d = irqtab_delta(&c->irq0, irq1, i, out->cpu);

		if (d) {
			irq_count_set(&rows[n++], &irq1->rows[i], d);
		}
	}
	if (n)
		qsort(rows, (size_t)n, sizeof(*rows), cmp_irq_count);
	out->n_irqs = n < CULPRIT_MAX_IRQ_ROWS ? n : CULPRIT_MAX_IRQ_ROWS;
	if (out->n_irqs)
		memcpy(out->irqs, rows, (size_t)out->n_irqs * sizeof(*rows));
	free(rows);
	for (int i = 0; i < soft1->n_rows && out->n_softirqs < CULPRIT_MAX_SOFTIRQS; i++) {
		uint64_t d = irqtab_delta(&c->soft0, soft1, i, out->cpu);

		if (d) {
			irq_count_set(&out->softirqs[out->n_softirqs++], &soft1->rows[i], d);
		}
	}
}

/* What interrupted each rank CPU. */
static int result_irqs(const struct culprit *c, const struct procfs_irqtab *irq1, const struct procfs_irqtab *soft1,
		       const struct obs_stat *stat1, double seconds, struct culprit_result *r)
{
	int n = 0;

	for (int cpu = 0; cpu < OBS_MAX_CPUS; cpu++)
		n += c->rank[cpu];
	r->irq_cpus = n ? calloc((size_t)n, sizeof(*r->irq_cpus)) : NULL;
	if (n && !r->irq_cpus)
		return -ENOMEM;
	for (int cpu = 0; cpu < OBS_MAX_CPUS; cpu++) {
		struct culprit_cpu_irq *o;

		if (!c->rank[cpu])
			continue;
		o = &r->irq_cpus[r->n_irq_cpus++];
		o->cpu = cpu;
		o->irq_seconds = o->softirq_seconds = -1;
		if (c->stat0 && stat1 && c->stat0->present[cpu] && stat1->present[cpu]) {
			const struct obs_cpu *x = &c->stat0->cpu[cpu], *y = &stat1->cpu[cpu];

			o->irq_seconds = y->irq > x->irq ? (double)(y->irq - x->irq) / (double)c->hz : 0;
			o->softirq_seconds = y->softirq > x->softirq ? (double)(y->softirq - x->softirq) / (double)c->hz : 0;
			o->irq_share = seconds > 0 ? o->irq_seconds / seconds : 0;
			o->softirq_share = seconds > 0 ? o->softirq_seconds / seconds : 0;
		}
		cpu_irq_counts(c, irq1, soft1, o);
	}
	return 0;
}

void culprit_result_free(struct culprit_result *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->n_tasks; i++)
		free(r->tasks[i].cpus);
	free(r->tasks);
	for (int i = 0; i < r->n_job; i++)
		free(r->job[i].cpus);
	free(r->job);
	free(r->irq_cpus);
	memset(r, 0, sizeof(*r));
}

/* The result of a watch whose last sample is taken. */
static int result_build(struct culprit *c, double seconds, struct culprit_result *r)
{
	struct procfs_irqtab irq1, soft1;
	struct obs_stat *stat1;
	int e;

	read_ends(c, &irq1, &soft1, &stat1);
	r->seconds = seconds;
	r->cpus_given = c->cpus_given;
	r->samples = c->samples;
	r->sample_ms_mean = c->samples ? c->ms_sum / c->samples : 0;
	r->sample_ms_max = c->ms_max;
	r->schedstat = c->schedstat;
	r->procs_dropped = c->procs_dropped;
	r->n_changes = c->n_changes;
	memcpy(r->changes, c->changes, sizeof(r->changes));
	r->exits_counted = (c->tx != NULL || c->n_exits > 0) && !c->exits_notgid;
	if (c->exits_notgid)
		snprintf(r->exits_why, sizeof(r->exits_why), "taskstats before version 12 (Linux 6.0): no tgid, so "
			 "%llu exited task(s) no sample saw could not be told from threads",
			 (unsigned long long)c->exits_notgid);
	else
		snprintf(r->exits_why, sizeof(r->exits_why), "%s", r->exits_counted ? "" : c->tx_why);
	r->exits_seen = c->exits_seen;
	r->exits_lost = c->exits_dropped + taskexit_lost(c->tx);
	e = exits_settle(c);
	if (!e)
		e = rank_cpus(c, seconds);
	if (!e)
		e = rank_list(c, r->cpus, sizeof(r->cpus));
	if (!e)
		e = result_rows(c, seconds, false, &r->tasks, &r->n_tasks, &r->n_culprits);
	if (!e) {
		int all;

		e = result_rows(c, seconds, true, &r->job, &r->n_job, &all);
	}
	if (!e)
		e = result_irqs(c, &irq1, &soft1, stat1, seconds, r);
	procfs_irqtab_free(&irq1);
	procfs_irqtab_free(&soft1);
	free(stat1);
	return e;
}

int culprit_stop(struct culprit *c, struct culprit_result *ret, struct nt_err *err)
{
	struct culprit_result r = { 0 };
	double seconds;
	int e;

	if (!c)
		return err_set(err, -EINVAL, "no watch to stop");
	e = culprit_sample(c);
	if (e < 0) {
		char shown[4096];

		err_set(err, e, "%s: %s", fsroot_display(c->root, "proc", shown, sizeof(shown)), nt_strerror(-e));
		culprit_free(c);
		return e;
	}
	seconds = clock_s(c->root) - c->t0;
	e = result_build(c, seconds > 0 ? seconds : 0, &r);
	culprit_free(c);
	if (e < 0) {
		culprit_result_free(&r);
		return err_set(err, e, e == -ENOMEM ? "out of memory" : "rank CPUs: %s", nt_strerror(-e));
	}
	*ret = r;
	return 0;
}

/* ---- JSON ------------------------------------------------------------------ */

/* By the kernel's number (include/uapi/linux/sched.h); 4 was SCHED_ISO,
 * never merged. */
static const char *const policy_names[] = {
	"SCHED_OTHER", "SCHED_FIFO", "SCHED_RR", "SCHED_BATCH", NULL, "SCHED_IDLE", "SCHED_DEADLINE", "SCHED_EXT",
};

const char *culprit_policy_name(int policy)
{
	if (policy < 0 || (size_t)policy >= sizeof(policy_names) / sizeof(policy_names[0]) || !policy_names[policy])
		return "SCHED_?";
	return policy_names[policy];
}

static json_t *task_json(const struct culprit_task *t)
{
	json_t *cpus = json_array(), *o;

	for (int k = 0; k < t->n_cpus; k++)
		json_array_append_new(cpus, json_pack("{s:i, s:f, s:f}", "cpu", t->cpus[k].cpu, "seconds",
						      t->cpus[k].seconds, "share", t->cpus[k].share));
	o = json_pack("{s:i, s:s, s:b, s:s, s:s, s:i, s:i, s:f, s:o, s:f, s:o, s:o}", "pid", t->pid, "comm", t->comm,
			 "kernel_thread", t->kthread, "cgroup", t->cgroup, "policy", culprit_policy_name(t->policy),
			 "priority", t->priority, "threads", t->threads, "seconds", t->seconds, "top_cpu",
			 t->top_cpu >= 0 ? json_integer(t->top_cpu) : json_null(),
			 "top_share", t->top_share, "allowed_cpus", t->allowed[0] ? json_string(t->allowed) : json_null(),
			 "cpus", cpus);
	/* a row of short-lived processes: how many, and who started them */
	if (o && t->short_lived > 0 &&
	    json_object_set_new(o, "short_lived", json_pack("{s:i, s:o}", "processes", t->short_lived, "started_by",
							    t->started_by[0] ? json_string(t->started_by)
									     : json_null())) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *seconds_or_null(double s)
{
	return s < 0 ? json_null() : json_real(s);
}

static json_t *cpu_irq_json(const struct culprit_cpu_irq *o)
{
	json_t *lines = json_array(), *soft = json_object();

	for (int k = 0; k < o->n_irqs; k++)
		json_array_append_new(lines, json_pack("{s:s, s:s, s:I}", "irq", o->irqs[k].label, "name",
						       o->irqs[k].name, "count", (json_int_t)o->irqs[k].count));
	for (int k = 0; k < o->n_softirqs; k++)
		json_object_set_new(soft, o->softirqs[k].label, json_integer((json_int_t)o->softirqs[k].count));
	return json_pack("{s:i, s:o, s:f, s:o, s:f, s:o, s:o}", "cpu", o->cpu, "irq_seconds",
			 seconds_or_null(o->irq_seconds), "irq_share", o->irq_share, "softirq_seconds",
			 seconds_or_null(o->softirq_seconds), "softirq_share", o->softirq_share, "lines", lines,
			 "softirqs", soft);
}

json_t *culprit_json(const struct culprit_result *r)
{
	json_t *tasks = json_array(), *irqs = json_array(), *changes = json_array(), *job = json_array(), *o;

	for (int i = 0; i < r->n_tasks; i++)
		json_array_append_new(tasks, task_json(&r->tasks[i]));
	for (int i = 0; i < r->n_job; i++)
		json_array_append_new(job, task_json(&r->job[i]));
	for (int i = 0; i < r->n_irq_cpus; i++)
		json_array_append_new(irqs, cpu_irq_json(&r->irq_cpus[i]));
	for (int i = 0; i < r->n_changes; i++) {
		const struct culprit_affinity_change *ch = &r->changes[i];

		json_array_append_new(changes, json_pack("{s:i, s:i, s:s, s:s, s:s, s:f}", "pid", ch->pid, "tid",
							 ch->tid, "comm", ch->comm, "before", ch->before, "after",
							 ch->after, "t", ch->t));
	}
	o = json_pack("{s:s, s:s, s:s, s:f, s:i, s:{s:f, s:f}, s:i, s:i, s:o, s:o, s:o, s:o}", "method",
			 r->schedstat ? "schedstat sampling: a thread's run time between two samples is put on the "
					"CPU it last ran on"
				      : "utime+stime sampling (no schedstat): a thread's CPU time between two samples "
					"is put on the CPU it last ran on",
			 "cpus", r->cpus, "cpus_from", r->cpus_given ? "caller" : "job run time", "seconds",
			 r->seconds, "samples", r->samples, "sample_ms", "mean", r->sample_ms_mean, "max",
			 r->sample_ms_max, "procs_dropped", r->procs_dropped, "culprits", r->n_culprits, "tasks", tasks,
			 "irqs", irqs, "affinity_changes", changes, "job", job);
	/* tasks born and gone between two samples */
	if (o && json_object_set_new(o, "exits", json_pack("{s:b, s:o, s:I, s:I}", "counted", r->exits_counted,
							 "why", r->exits_counted ? json_null()
										 : json_string(r->exits_why),
							 "records", (json_int_t)r->exits_seen, "lost",
							 (json_int_t)r->exits_lost)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- A against B ------------------------------------------------------------ */

struct cmp_line {
	const struct culprit_task *t;   /* the arm where it ran more */
	int cpu;
	double share[2];                /* A, B */
};

/* t's share of cpu; 0 when it did not run there. */
static double share_on(const struct culprit_task *t, int cpu)
{
	for (int k = 0; t && k < t->n_cpus; k++)
		if (t->cpus[k].cpu == cpu)
			return t->cpus[k].share;
	return 0;
}

static const struct culprit_task *find_task(const struct culprit_result *r, const struct culprit_task *t)
{
	for (int i = 0; r && i < r->n_tasks; i++)
		if (r->tasks[i].pid == t->pid && !strcmp(r->tasks[i].comm, t->comm) &&
		    (r->tasks[i].short_lived > 0) == (t->short_lived > 0))
			return &r->tasks[i];
	return NULL;
}

static int cmp_cmp_line(const void *a, const void *b)
{
	const struct cmp_line *x = a, *y = b;
	double dx = x->share[1] - x->share[0], dy = y->share[1] - y->share[0];

	dx = dx < 0 ? -dx : dx;
	dy = dy < 0 ? -dy : dy;
	return (dx < dy) - (dx > dy);
}

/* Each top culprit of either arm, on its top CPU, once; the count. */
static int cmp_lines(const struct culprit_result *a, const struct culprit_result *b, struct cmp_line *out)
{
	const struct culprit_result *arm[2] = { a, b };
	int n = 0;

	for (int s = 0; s < 2; s++) {
		for (int i = 0; arm[s] && i < arm[s]->n_tasks; i++) {
			const struct culprit_task *t = &arm[s]->tasks[i], *o = find_task(arm[!s], t);
			struct cmp_line l = { .t = t, .cpu = t->top_cpu };
			bool dup = false;

			l.share[s] = t->top_share;
			l.share[!s] = share_on(o, t->top_cpu);
			if (o && l.share[!s] > l.share[s])
				l.t = o;
			for (int k = 0; k < n && !dup; k++)
				dup = out[k].t->pid == t->pid && out[k].cpu == l.cpu && !strcmp(out[k].t->comm, t->comm) &&
				      (out[k].t->short_lived > 0) == (t->short_lived > 0);
			if (!dup)
				out[n++] = l;
		}
	}
	qsort(out, (size_t)n, sizeof(*out), cmp_cmp_line);
	return n;
}

/* "pid 4242 (stress, SCHED_FIFO 50)", or for a row of short-lived
 * processes "340 short-lived processes (awk, SCHED_OTHER 0) started by pid
 * 17 (sh)" ("started by a process not seen" when not known). */
static void who_text(const struct culprit_task *t, char *buf, size_t size)
{
	if (t->short_lived > 0 && t->started_by[0])
		snprintf(buf, size, "%d short-lived process%s (%.31s, %s %d) started by pid %d (%.31s)", t->short_lived,
			 t->short_lived == 1 ? "" : "es", t->comm, culprit_policy_name(t->policy), t->priority, t->pid,
			 t->started_by);
	else if (t->short_lived > 0)
		snprintf(buf, size, "%d short-lived process%s (%.31s, %s %d) started by a process not seen",
			 t->short_lived, t->short_lived == 1 ? "" : "es", t->comm, culprit_policy_name(t->policy),
			 t->priority);
	else
		snprintf(buf, size, "pid %d (%.31s%s, %s %d)", t->pid, t->comm, t->kthread ? ", kernel thread" : "",
			 culprit_policy_name(t->policy), t->priority);
}

static const char *pct(double share, char *buf, size_t size)
{
	if (share == 0)
		snprintf(buf, size, "0%%");
	else
		snprintf(buf, size, "%.1f%%", 100.0 * share);
	return buf;
}

int culprit_describe_top(const struct culprit_result *a, const struct culprit_result *b, char *buf, size_t size)
{
	struct cmp_line *l = calloc((size_t)((a ? a->n_tasks : 0) + (b ? b->n_tasks : 0)) + 1, sizeof(*l));
	size_t len = 0;
	int n, lines = 0;
	bool ok = true;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	if (!l)
		return -ENOMEM;
	n = cmp_lines(a, b, l);
	for (int i = 0; i < n && i < 3 && ok; i++) {
		int hi = l[i].share[1] >= l[i].share[0];   /* the arm named first */
		char p[2][32];

		char who[128];

		if (l[i].share[hi] - l[i].share[!hi] < 0.005)
			break;          /* less than half a percent of a CPU apart: background, not a culprit */
		who_text(l[i].t, who, sizeof(who));
		ok = textbuf_appendf(buf, size, &len, "%s%s%s ran %s of CPU %d during %c trials, %s during %c\n", who,
			    l[i].t->cgroup[0] ? " in cgroup " : "", l[i].t->cgroup,
			    pct(l[i].share[hi], p[0], sizeof(p[0])), l[i].cpu, hi ? 'B' : 'A',
			    pct(l[i].share[!hi], p[1], sizeof(p[1])), hi ? 'A' : 'B');
		lines += ok;
	}
	free(l);
	return ok ? lines : -ENOSPC;
}

/* One kind of affinity change (a program's threads going from one list of
 * allowed CPUs to another), counted in each arm. */
struct change_kind {
	const struct culprit_affinity_change *first[2];   /* each arm's first of this kind (NULL: none) */
	int n[2];
	double rate[2];                                   /* per trial */
};

static bool same_kind(const struct culprit_affinity_change *x, const struct culprit_affinity_change *y)
{
	return !strcmp(x->comm, y->comm) && !strcmp(x->before, y->before) && !strcmp(x->after, y->after);
}

/* The kinds of change in both arms, counted (at most 2 CULPRIT_MAX_CHANGES). */
static int change_kinds(const struct culprit_result *arm[2], const int trials[2], struct change_kind *k)
{
	int n = 0;

	for (int s = 0; s < 2; s++)
		for (int i = 0; arm[s] && i < arm[s]->n_changes; i++) {
			const struct culprit_affinity_change *ch = &arm[s]->changes[i];
			int j = 0;

			while (j < n && !same_kind(k[j].first[0] ? k[j].first[0] : k[j].first[1], ch))
				j++;
			if (j == n)
				memset(&k[n++], 0, sizeof(*k));
			if (!k[j].first[s])
				k[j].first[s] = ch;
			k[j].n[s]++;
		}
	for (int j = 0; j < n; j++)
		for (int s = 0; s < 2; s++)
			k[j].rate[s] = (double)k[j].n[s] / (trials[s] > 0 ? trials[s] : 1);
	return n;
}

/* Seen alike in both arms: in both, at rates within a factor of 2. */
static bool kind_alike(const struct change_kind *k)
{
	return k->n[0] && k->n[1] && fmin(k->rate[0], k->rate[1]) >= 0.5 * fmax(k->rate[0], k->rate[1]);
}

static int cmp_kind(const void *a, const void *b)
{
	const struct change_kind *x = a, *y = b;
	double dx = fabs(x->rate[1] - x->rate[0]), dy = fabs(y->rate[1] - y->rate[0]);

	return (dx < dy) - (dx > dy);
}

int culprit_describe_changes(const struct culprit_result *a, int trials_a, const struct culprit_result *b,
			     int trials_b, char *buf, size_t size)
{
	const struct culprit_result *arm[2] = { a, b };
	const int trials[2] = { trials_a, trials_b };
	struct change_kind k[2 * CULPRIT_MAX_CHANGES];
	int n, lines = 0, alike = 0, alike_n[2] = { 0, 0 }, first_alike = -1;
	size_t len = 0;
	bool ok = true;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	n = change_kinds(arm, trials, k);
	qsort(k, (size_t)n, sizeof(*k), cmp_kind);
	for (int j = 0; j < n && ok; j++) {
		int hi = k[j].rate[1] >= k[j].rate[0];
		const struct culprit_affinity_change *ch = k[j].first[hi];

		if (kind_alike(&k[j])) {
			alike++;
			alike_n[0] += k[j].n[0];
			alike_n[1] += k[j].n[1];
			first_alike = first_alike < 0 ? j : first_alike;
			continue;
		}
		if (lines >= 3)
			continue;
		ok = textbuf_appendf(buf, size, &len, "%s's threads: allowed CPUs %s -> %s %d%s time%s in %d %c trials, "
				     "%d%s in %d %c (first pid %d thread %d, %.1f s into a trial)\n", ch->comm,
				     ch->before, ch->after, k[j].n[hi],
				     arm[hi]->n_changes >= CULPRIT_MAX_CHANGES ? "+" : "", k[j].n[hi] == 1 ? "" : "s",
				     trials[hi], hi ? 'B' : 'A',
				     k[j].n[!hi], arm[!hi] && arm[!hi]->n_changes >= CULPRIT_MAX_CHANGES ? "+" : "",
				     trials[!hi], hi ? 'A' : 'B', ch->pid, ch->tid, ch->t);
		lines += ok;
	}
	if (alike && ok) {
		const struct culprit_affinity_change *ch = k[first_alike].first[0];

		ok = textbuf_appendf(buf, size, &len, "alike in both arms, so not a difference: %d kind%s of affinity "
				     "change (%d%s in A, %d%s in B), e.g. %s's threads %s -> %s\n", alike,
				     alike == 1 ? "" : "s", alike_n[0],
				     a && a->n_changes >= CULPRIT_MAX_CHANGES ? "+" : "", alike_n[1],
				     b && b->n_changes >= CULPRIT_MAX_CHANGES ? "+" : "", ch->comm, ch->before, ch->after);
		lines += ok;
	}
	return ok ? lines : -ENOSPC;
}

/* ---- the job's own tree, A against B ------------------------------------ */

static bool same_job_kind(const struct culprit_task *x, const struct culprit_task *y)
{
	return !strcmp(x->comm, y->comm) && x->policy == y->policy && x->priority == y->priority;
}

/* The rows of r of t's kind: their time on the rank CPUs over r's time. */
static double kind_share(const struct culprit_result *r, const struct culprit_task *t)
{
	double sec = 0;

	for (int i = 0; r && i < r->n_job; i++)
		if (same_job_kind(&r->job[i], t))
			sec += r->job[i].seconds;
	return r && r->seconds > 0 ? sec / r->seconds : 0;
}

/* The short-lived processes among r's rows of t's kind, and (*by) the
 * first one's row (for who started them); 0: none. */
static int kind_short(const struct culprit_result *r, const struct culprit_task *t, const struct culprit_task **by)
{
	int n = 0;

	*by = NULL;
	for (int i = 0; r && i < r->n_job; i++)
		if (same_job_kind(&r->job[i], t) && r->job[i].short_lived > 0) {
			n += r->job[i].short_lived;
			if (!*by)
				*by = &r->job[i];
		}
	return n;
}

double culprit_job_helper_share(const struct culprit_result *r)
{
	const struct culprit_task *busiest = NULL;
	double most = -1, share = 0;

	for (int i = 0; r && i < r->n_job; i++) {
		double s = kind_share(r, &r->job[i]);

		if (s > most) {
			most = s;
			busiest = &r->job[i];
		}
	}
	for (int i = 0; busiest && i < r->n_job; i++)
		if (!same_job_kind(&r->job[i], busiest) && r->job[i].top_share > share)
			share = r->job[i].top_share;
	return share;
}

struct job_line {
	const struct culprit_task *t;  /* in the arm where its kind took more */
	int hi;                        /* that arm */
	double share[2];
	bool absent;                   /* no process of its kind in the other arm */
};

/* The first (busiest: r->job is in culprit_task_cmp order) row of t's kind
 * in r; NULL: none. */
static const struct culprit_task *kind_row(const struct culprit_result *r, const struct culprit_task *t)
{
	for (int i = 0; r && i < r->n_job; i++)
		if (same_job_kind(&r->job[i], t))
			return &r->job[i];
	return NULL;
}

static int cmp_job_line(const void *a, const void *b)
{
	const struct job_line *x = a, *y = b;
	double dx = fabs(x->share[1] - x->share[0]), dy = fabs(y->share[1] - y->share[0]);

	return (dx < dy) - (dx > dy);
}

int culprit_describe_job(const struct culprit_result *a, const struct culprit_result *b, int slower, char *buf,
			 size_t size)
{
	const struct culprit_result *arm[2] = { a, b };
	struct job_line *l = calloc((size_t)((a ? a->n_job : 0) + (b ? b->n_job : 0)) + 1, sizeof(*l));
	size_t len = 0;
	int n = 0, lines = 0;
	bool ok = true;

	if (!size)
		return free(l), -ENOSPC;
	buf[0] = '\0';
	if (!l)
		return -ENOMEM;
	for (int s = 0; s < 2; s++)
		for (int i = 0; arm[s] && i < arm[s]->n_job; i++) {
			const struct culprit_task *t = &arm[s]->job[i];
			struct job_line x = { .t = t, .hi = s };
			bool dup = false;

			x.share[s] = kind_share(arm[s], t);
			x.share[!s] = kind_share(arm[!s], t);
			x.absent = !kind_row(arm[!s], t);
			for (int k = 0; k < n && !dup; k++)
				dup = same_job_kind(l[k].t, t);
			/* in the faster arm it is a victim of the slowdown, not its cause */
			if (!dup && (slower < 0 || s == slower) && x.share[s] >= 0.02 &&
			    x.share[!s] <= x.share[s] / 2 - 0.01)
				l[n++] = x;
		}
	qsort(l, (size_t)n, sizeof(*l), cmp_job_line);
	for (int i = 0; i < n && i < 3 && ok; i++) {
		const struct culprit_task *t = l[i].t, *by;
		int shorts = kind_short(arm[l[i].hi], t, &by);
		char other[48];

		if (l[i].absent)
			snprintf(other, sizeof(other), "%c has no such process", l[i].hi ? 'A' : 'B');
		else
			snprintf(other, sizeof(other), "in %c it took %.1f%%", l[i].hi ? 'A' : 'B',
				 100 * l[i].share[!l[i].hi]);
		char what[160], by_pid[64] = "";

		if (shorts && by->started_by[0])
			snprintf(by_pid, sizeof(by_pid), ", started by pid %d (%.31s)", by->pid, by->started_by);
		if (shorts)
			snprintf(what, sizeof(what), "starts short-lived processes (%.31s, %s %d; %d in its trials%s)",
				 t->comm, culprit_policy_name(t->policy), t->priority, shorts, by_pid);
		else
			snprintf(what, sizeof(what), "runs pid %d (%.31s, %s %d)", t->pid, t->comm,
				 culprit_policy_name(t->policy), t->priority);
		ok = textbuf_appendf(buf, size, &len, "%c's command %s that took %.1f%% of a CPU on the rank CPUs (most on "
				     "CPU %d); %s\n", l[i].hi ? 'B' : 'A', what, 100 * l[i].share[l[i].hi], t->top_cpu,
				     other);
		lines += ok;
	}
	free(l);
	return ok ? lines : -ENOSPC;
}

/* ---- the job's processes, a table ------------------------------------------ */

struct table_kind {
	const struct culprit_task *t;  /* the kind, from the first arm that has it */
	double most;                   /* its larger share of the two arms */
};

static int cmp_table_kind(const void *a, const void *b)
{
	const struct table_kind *x = a, *y = b;

	if (x->most != y->most)
		return x->most < y->most ? 1 : -1;
	return strcmp(x->t->comm, y->t->comm);
}

/* val into the '|'-separated set in set (size bytes), when not there yet;
 * what does not fit ends the set with "|..." (once). */
static void add_distinct(char *set, size_t size, const char *val)
{
	size_t n = strlen(set), v = strlen(val);

	for (const char *p = set; *p;) {
		size_t k = strcspn(p, "|");

		if (k == v && !strncmp(p, val, v))
			return;
		p += k + (p[k] == '|');
	}
	if (n >= 4 && !strcmp(set + n - 4, "|..."))
		return;
	if (n + (n > 0) + v + 4 < size)     /* room left for "|..." */
		snprintf(set + n, size - n, "%s%s", n ? "|" : "", val);
	else if (n + 4 < size)
		snprintf(set + n, size - n, "|...");
}

/* One arm's row of a kind: its busiest process's pid and top CPU, "+N"
 * for the kind's other processes in the arm's trials (each trial starts
 * its own), and every allowed-CPU list and cgroup they had, '|'-separated
 * (the ranks of a job, one per CPU, read "0|1"). */
static bool table_row(char *buf, size_t size, size_t *len, char arm, const struct culprit_result *r,
		      const struct culprit_task *kind, bool *any_short)
{
	const struct culprit_task *t = NULL, *by;
	char policy[32], pid[24], top[16], allowed[16] = "", cg[96] = "";
	int more = -1, shorts = kind_short(r, kind, &by);

	for (int i = 0; r && i < r->n_job; i++) {
		const struct culprit_task *x = &r->job[i];

		if (!same_job_kind(x, kind))
			continue;
		more++;
		if (!t || x->seconds > t->seconds)
			t = x;
		add_distinct(allowed, sizeof(allowed), x->allowed[0] ? x->allowed : "?");
		add_distinct(cg, sizeof(cg), x->cgroup[0] ? x->cgroup : "?");
	}

	snprintf(policy, sizeof(policy), "%s %d", culprit_policy_name(kind->policy), kind->priority);
	*any_short |= shorts > 0;
	if (!t)
		return textbuf_appendf(buf, size, len, "%c    %-8s %-16s %-17s %6s   (no such process in %c)\n", arm, "-",
				       kind->comm, policy, "-", arm);
	if (shorts)             /* short-lived: their count, as "(N)" */
		snprintf(pid, sizeof(pid), "(%d)", shorts);
	else if (more > 0)
		snprintf(pid, sizeof(pid), "%d+%d", t->pid, more);
	else
		snprintf(pid, sizeof(pid), "%d", t->pid);
	if (t->top_cpu >= 0)
		snprintf(top, sizeof(top), "%d", t->top_cpu);
	else
		snprintf(top, sizeof(top), "-");
	return textbuf_appendf(buf, size, len, "%c    %-8s %-16s %-17s %6.1f%%  %-4s %-12s %s\n", arm, pid, t->comm,
			       policy, 100 * kind_share(r, t), top, allowed, cg);
}

int culprit_job_table(const struct culprit_result *a, const struct culprit_result *b, char *buf, size_t size)
{
	const struct culprit_result *arm[2] = { a, b };
	struct table_kind *k = calloc((size_t)((a ? a->n_job : 0) + (b ? b->n_job : 0)) + 1, sizeof(*k));
	size_t len = 0;
	int n = 0, rows = 0;
	double rest = 0;
	bool ok, shorts = false;

	if (!size)
		return free(k), -ENOSPC;
	buf[0] = '\0';
	if (!k)
		return -ENOMEM;
	for (int s = 0; s < 2; s++)
		for (int i = 0; arm[s] && i < arm[s]->n_job; i++) {
			const struct culprit_task *t = &arm[s]->job[i];
			bool dup = false;

			for (int j = 0; j < n && !dup; j++)
				dup = same_job_kind(k[j].t, t);
			if (!dup) {
				k[n].t = t;
				k[n++].most = fmax(kind_share(arm[0], t), kind_share(arm[1], t));
			}
		}
	if (!n)
		return free(k), 0;
	qsort(k, (size_t)n, sizeof(*k), cmp_table_kind);
	ok = textbuf_appendf(buf, size, &len, "arm  pid      comm             policy                CPU  top  allowed      cgroup\n");
	for (int i = 0; i < n && i < CULPRIT_TABLE_KINDS && ok; i++) {
		ok = table_row(buf, size, &len, 'A', a, k[i].t, &shorts) &&
		     table_row(buf, size, &len, 'B', b, k[i].t, &shorts);
		rows += ok;
	}
	if (ok && shorts)
		ok = textbuf_appendf(buf, size, &len, "(N) in the pid column: N short-lived processes, seen only as they "
				     "exited\n");
	for (int i = CULPRIT_TABLE_KINDS; i < n; i++)
		rest = fmax(rest, k[i].most);
	if (ok && n > CULPRIT_TABLE_KINDS)
		ok = textbuf_appendf(buf, size, &len, "(%d more kind%s, each %.1f%% of a CPU or less)\n",
				     n - CULPRIT_TABLE_KINDS, n - CULPRIT_TABLE_KINDS == 1 ? "" : "s", 100 * rest);
	free(k);
	return ok ? rows : -ENOSPC;
}
