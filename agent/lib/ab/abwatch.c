/* SPDX-License-Identifier: MIT */
/* abwatch.c — see abwatch.h.
 *
 * The file in order:
 *   rows        the counters, their sources and mechanisms
 *   the watch   begin, set_cpus, child, started, tick (the cgroup's
 *               processes made the job's), end
 *   a trial     its counters from the cgroup reads, perf and culprit, each
 *               with its reason when it could not be counted
 *   an arm      cgroup deltas summed; culprit results merged (reserve
 *               first, then merge: an -ENOMEM leaves the arm as it was)
 *   explain     the evidence lines, A against B
 *   JSON
 */
#include "ab/abwatch.h"
#include "ab/abwatch_test.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpulist.h"
#include "observe/obs.h"
#include "base/parse.h"
#include "base/textbuf.h"

#define PROCS_BUF (1u << 16)      /* a trial group's cgroup.procs: ~9000 pids */

/* ---- rows --------------------------------------------------------------- */

const struct abwatch_row abwatch_rows[ABWATCH_N] = {
	/* name, unit, mechanism,
	 *	source, perf event, rate, A/A floor, cost of one unit (ms), symptom */
	[ABWATCH_THROTTLED_PERIODS] = { "throttled_periods", "", "CPU quota throttling",
		ABWATCH_SRC_CGROUP, 0, true, 0.05, -1, false },
	[ABWATCH_THROTTLED_MS] = { "throttled_ms", "ms", "CPU quota throttling",
		ABWATCH_SRC_CGROUP, 0, true, 0.5, 1, false },
	[ABWATCH_CG_CPU_PRESSURE_MS] = { "cg_cpu_pressure_ms", "ms", "CPU contention of the job (its cgroup's PSI)",
		ABWATCH_SRC_CGROUP, 0, true, 0.5, 1, true },
	[ABWATCH_CG_MEM_PRESSURE_MS] = { "cg_memory_pressure_ms", "ms", "memory limit reclaim (its cgroup's PSI)",
		ABWATCH_SRC_CGROUP, 0, true, 0.5, 1, true },
	[ABWATCH_MEM_EVENTS] = { "memory_limit_events", "", "memory limit reclaim",
		ABWATCH_SRC_CGROUP, 0, true, 0.05, 1, false },
	[ABWATCH_CG_SWITCHES] = { "cg_context_switches", "", "preemption or blocking of the job (context switches)",
		ABWATCH_SRC_PERF, TCG_PERF_SWITCHES, true, 2, 0.01, false },
	[ABWATCH_CG_MIGRATIONS] = { "cg_cpu_migrations", "", "the job's threads moving between CPUs",
		ABWATCH_SRC_PERF, TCG_PERF_MIGRATIONS, true, 1, 0.05, false },
	[ABWATCH_CG_FAULTS] = { "cg_page_faults", "", "page faults of the job (memory management)",
		ABWATCH_SRC_PERF, TCG_PERF_FAULTS, true, 10, 0.005, false },
	[ABWATCH_FOREIGN_CPU_SHARE] = { "foreign_cpu_share", "share", "CPU contention by another task",
		ABWATCH_SRC_CULPRIT, 0, false, 0.02, 0, false },
	[ABWATCH_IRQ_SHARE] = { "irq_share", "share", "IRQ/softirq load on rank CPUs",
		ABWATCH_SRC_CULPRIT, 0, false, 0.01, 0, false },
	[ABWATCH_AFFINITY_CHANGES] = { "affinity_changes", "", "affinity or cpuset change of a rank",
		ABWATCH_SRC_CULPRIT, 0, false, 0.5, -1, false },
	[ABWATCH_JOB_HELPER_CPU_SHARE] = { "job_helper_cpu_share", "share",
		"CPU taken by a helper process of the job's own command (not its ranks)",
		ABWATCH_SRC_CULPRIT, 0, false, 0.02, 0, false },
};

/* ---- the watch ---------------------------------------------------------- */

struct abwatch {
	const struct fsroot *root;       /* borrowed */
	struct trialcg *cg;              /* NULL: none (why[ABWATCH_SRC_CGROUP]) */
	char procs_rel[1024];            /* the group's cgroup.procs below root ("" none) */
	char *procs_buf;                 /* PROCS_BUF, for reading it each tick */
	bool started;
	pid_t pid;                       /* the job, as forked */
	bool have_before;
	struct trialcg_stats before;
	struct trialcg_perf perf;        /* fd NULL: not open */
	struct culprit *cu;              /* NULL: not started, or failed (why) */
	struct cgfollow *cf;             /* NULL: not started, or failed (followed_why) */
	char cpus[CULPRIT_LIST_LEN];     /* given by abwatch_set_cpus ("" none) */
	int *known, n_known, cap_known;  /* pids taken from the group, sorted */
	char why[ABWATCH_SRC_N][ABWATCH_WHY_LEN];    /* a part that is missing, and why */
};

/* Say why a counter (or a part of the watch) is missing: a reason cut to
 * ABWATCH_WHY_LEN, on purpose. */
__attribute__((format(printf, 2, 3)))
static void why_set(char out[ABWATCH_WHY_LEN], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, ABWATCH_WHY_LEN, fmt, ap);
	va_end(ap);
}

/* Keep the first error of several parts: into err and *first (when it is
 * still 0); returns code. */
static int keep_first(int *first, struct nt_err *err, int code, const char *msg)
{
	if (!*first) {
		*first = code;
		err_set(err, code, "%s", msg);
	}
	return code;
}

struct abwatch *abwatch_begin(const struct fsroot *root, const char *label, struct nt_err *err)
{
	struct abwatch *w = calloc(1, sizeof(*w));
	struct nt_err e = { 0 };
	const char *paths, *sep;

	if (!w) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	w->root = root;
	w->cg = trialcg_create(root, label, &e);
	if (!w->cg && e.code == -ENOMEM) {
		free(w);
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (!w->cg) {
		why_set(w->why[ABWATCH_SRC_CGROUP], "no trial cgroup: %s", e.msg);
		why_set(w->why[ABWATCH_SRC_PERF], "perf counts the trial cgroup, and there is none: %s", e.msg);
		log_msg(LOG_DEBUG, "abwatch %s: %s", label, w->why[ABWATCH_SRC_CGROUP]);
		return w;
	}
	/* the first of the group's directories (", " between them; a v1
	 * mount may itself hold a comma: "cpu,cpuacct") */
	paths = trialcg_paths(w->cg);
	sep = strstr(paths, ", ");
	snprintf(w->procs_rel, sizeof(w->procs_rel), "%.*s/cgroup.procs", (int)(sep ? sep - paths : (long)strlen(paths)),
		 paths);
	return w;
}

const struct trialcg *abwatch_cgroup(const struct abwatch *w)
{
	return w ? w->cg : NULL;
}

int abwatch_set_cpus(struct abwatch *w, const char *cpulist, struct nt_err *err)
{
	hwloc_bitmap_t set;
	int r;

	if (w->cu)
		r = culprit_set_cpus(w->cu, cpulist, err);
	else if (!(set = hwloc_bitmap_alloc()))
		return err_set(err, -ENOMEM, "out of memory");
	else {
		r = cpulist_parse(cpulist, set);
		if (r == 0 && hwloc_bitmap_last(set) >= OBS_MAX_CPUS)
			r = -EINVAL;
		hwloc_bitmap_free(set);
		if (r == 0 && strlen(cpulist) >= sizeof(w->cpus))
			r = -EINVAL;
		if (r < 0)
			return err_set(err, r, r == -ENOMEM ? "out of memory"
				       : "rank CPUs '%.64s': not a cpulist of CPUs below %d", cpulist, OBS_MAX_CPUS);
	}
	if (r == 0)
		snprintf(w->cpus, sizeof(w->cpus), "%s", cpulist);
	return r;
}

int abwatch_child(const struct abwatch *w)
{
	return w && w->cg ? trialcg_attach(w->cg, 0, NULL) : 0;
}

int abwatch_started(struct abwatch *w, pid_t pid, struct nt_err *err)
{
	struct nt_err e = { 0 };
	int first = 0, job = (int)pid;

	if (!w || pid <= 0 || w->started)
		return err_set(err, -EINVAL, "abwatch_started: %s", !w ? "no watch" : pid <= 0 ? "no pid" : "called twice");
	w->started = true;
	w->pid = pid;
	/* the child joins the trial cgroup itself (abwatch_child), but may not
	 * have yet: a first sample taken before it did would see the job
	 * outside it (the hierarchy's root followed as the job's cgroup, its
	 * rows in "/").  Moving it from here too closes that window; the
	 * second write is a no-op. */
	if (w->cg && trialcg_attach(w->cg, pid, &e) < 0) {
		log_msg(LOG_DEBUG, "abwatch: %s", e.msg);
		e = (struct nt_err){ 0 };
	}
	if (w->cg) {
		w->have_before = trialcg_read(w->cg, &w->before, &e) == 0;
		if (!w->have_before) {
			why_set(w->why[ABWATCH_SRC_CGROUP], "trial cgroup unreadable before the job: %s", e.msg);
			keep_first(&first, err, e.code, e.msg);
		}
		if (trialcg_perf_open(w->cg, &w->perf, &e) < 0) {
			why_set(w->why[ABWATCH_SRC_PERF], "%s", e.msg);
			keep_first(&first, err, e.code, e.msg);
		}
	}
	w->cf = cgfollow_start(w->root, pid, &e);
	if (!w->cf)
		log_msg(LOG_DEBUG, "abwatch: the job's cgroups not followed: %s", e.msg);
	w->cu = culprit_start(w->root, &job, 1, &e);
	if (!w->cu) {
		why_set(w->why[ABWATCH_SRC_CULPRIT], "culprit watch: %s", e.msg);
		keep_first(&first, err, e.code, e.msg);
	} else if (w->cpus[0] && culprit_set_cpus(w->cu, w->cpus, &e) < 0) {
		keep_first(&first, err, e.code, e.msg);      /* checked when given: not expected */
	}
	return first;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Every process in the trial group is the job's: tell the culprit watch of
 * the ones it has not been told of.  0 or -ENOMEM. */
static int job_from_cgroup(struct abwatch *w)
{
	char *line, *save = NULL;
	int *add = NULL, n_add = 0, cap_add = 0, r = 0;

	if (!w->cu || !w->procs_rel[0])
		return 0;
	if (!w->procs_buf && !(w->procs_buf = malloc(PROCS_BUF)))
		return -ENOMEM;
	if (fsroot_read(w->root, w->procs_rel, w->procs_buf, PROCS_BUF) < 0)
		return 0;                /* gone, or too many to list: the ppid tree still counts */
	for (line = strtok_r(w->procs_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int pid;

		if (parse_int(line, 1, INT32_MAX, &pid) < 0 || pid == (int)w->pid ||
		    (w->n_known && bsearch(&pid, w->known, (size_t)w->n_known, sizeof(int), cmp_int)))
			continue;
		if (n_add == cap_add) {
			int *tmp = realloc(add, (size_t)(cap_add = cap_add ? 2 * cap_add : 16) * sizeof(int));

			if (!tmp) {
				free(add);
				return -ENOMEM;
			}
			add = tmp;
		}
		add[n_add++] = pid;
	}
	if (n_add && w->n_known + n_add > w->cap_known) {
		int cap = w->n_known + n_add + 16, *tmp = realloc(w->known, (size_t)cap * sizeof(int));

		if (!tmp) {
			free(add);
			return -ENOMEM;
		}
		w->known = tmp;
		w->cap_known = cap;
	}
	for (int i = 0; w->cf && i < n_add; i++)
		(void)cgfollow_add_pid(w->cf, add[i]);      /* gone, or the table full: not followed */
	if (n_add && (r = culprit_add_pids(w->cu, add, n_add)) == 0) {
		memcpy(w->known + w->n_known, add, (size_t)n_add * sizeof(int));
		w->n_known += n_add;
		qsort(w->known, (size_t)w->n_known, sizeof(int), cmp_int);
	}
	free(add);
	return r;
}

int abwatch_tick(struct abwatch *w)
{
	int r;

	if (!w)
		return 0;
	(void)cgfollow_tick(w->cf);      /* proc unlistable: the next tick looks again */
	if (!w->cu)
		return 0;
	r = job_from_cgroup(w);
	return r < 0 ? r : culprit_sample(w->cu);
}

/* ---- a trial ------------------------------------------------------------ */

/* The part of a trialcg why ("CPU throttling: ...; PSI: ...") that starts
 * with prefix, into out; else fallback. */
static void why_part(const char *why, const char *prefix, const char *fallback, char *out, size_t size)
{
	const char *p = strstr(why, prefix), *end;

	if (!p) {
		snprintf(out, size, "%s", fallback);
		return;
	}
	end = strstr(p, "; ");
	snprintf(out, size, "%.*s", (int)(end ? end - p : (long)strlen(p)), p);
}

/* after - before of counter c, when both reads have it. */
static bool cg_delta(const struct abwatch_trial *t, enum trialcg_counter c, double *ret)
{
	if (!trialcg_has(&t->before, c) || !trialcg_has(&t->after, c))
		return false;
	*ret = t->after.v[c] > t->before.v[c] ? (double)(t->after.v[c] - t->before.v[c]) : 0;
	return true;
}

/* The cgroup counters of t (read), each with its reason when missing. */
static void fill_cgroup(struct abwatch_trial *t)
{
	const char *why = t->after.why;
	double d, sum = 0;
	bool v2mem = true;

	if (cg_delta(t, TCG_CPU_NR_THROTTLED, &d))
		t->v[ABWATCH_THROTTLED_PERIODS] = d;
	else
		why_part(why, "CPU throttling:", "cpu.stat has no nr_throttled", t->why[ABWATCH_THROTTLED_PERIODS],
			 ABWATCH_WHY_LEN);
	if (cg_delta(t, TCG_CPU_THROTTLED_USEC, &d))
		t->v[ABWATCH_THROTTLED_MS] = d / 1000.0;
	else
		why_part(why, "CPU throttling:", "cpu.stat has no throttled time", t->why[ABWATCH_THROTTLED_MS],
			 ABWATCH_WHY_LEN);
	if (cg_delta(t, TCG_PSI_CPU_SOME_US, &d))
		t->v[ABWATCH_CG_CPU_PRESSURE_MS] = d / 1000.0;
	else
		why_part(why, "PSI:", "no cpu.pressure", t->why[ABWATCH_CG_CPU_PRESSURE_MS], ABWATCH_WHY_LEN);
	if (cg_delta(t, TCG_PSI_MEM_SOME_US, &d))
		t->v[ABWATCH_CG_MEM_PRESSURE_MS] = d / 1000.0;
	else
		why_part(why, "PSI:", "no memory.pressure", t->why[ABWATCH_CG_MEM_PRESSURE_MS], ABWATCH_WHY_LEN);
	for (enum trialcg_counter c = TCG_MEM_HIGH; c <= TCG_MEM_OOM && v2mem; c++) {
		v2mem = cg_delta(t, c, &d);
		sum += d;
	}
	if (v2mem)
		t->v[ABWATCH_MEM_EVENTS] = sum;
	else if (cg_delta(t, TCG_MEM_FAILCNT, &d))
		t->v[ABWATCH_MEM_EVENTS] = d;
	else
		why_part(why, "memory events:", "no memory.events or memory.failcnt", t->why[ABWATCH_MEM_EVENTS],
			 ABWATCH_WHY_LEN);
}

/* The culprit counters of t (result in). */
static void fill_culprit(struct abwatch_trial *t)
{
	const struct culprit_result *r = &t->culprit;
	double irq = -1;

	t->v[ABWATCH_AFFINITY_CHANGES] = r->n_changes;
	if (!r->cpus[0]) {
		static const char none[] = "no rank CPUs: the job ran on no CPU for 1% of the trial (too short to sample?)";

		why_set(t->why[ABWATCH_FOREIGN_CPU_SHARE], "%s", none);
		why_set(t->why[ABWATCH_IRQ_SHARE], "%s", none);
		why_set(t->why[ABWATCH_JOB_HELPER_CPU_SHARE], "%s", none);
		return;
	}
	t->v[ABWATCH_FOREIGN_CPU_SHARE] = r->n_tasks ? r->tasks[0].top_share : 0;   /* sorted by top_share */
	t->v[ABWATCH_JOB_HELPER_CPU_SHARE] = culprit_job_helper_share(r);
	for (int i = 0; i < r->n_irq_cpus; i++)
		if (r->irq_cpus[i].irq_seconds >= 0 && r->irq_cpus[i].irq_share + r->irq_cpus[i].softirq_share > irq)
			irq = r->irq_cpus[i].irq_share + r->irq_cpus[i].softirq_share;
	if (irq >= 0)
		t->v[ABWATCH_IRQ_SHARE] = irq;
	else
		why_set(t->why[ABWATCH_IRQ_SHARE], "per-CPU irq/softirq time of proc/stat not readable");
}

/* The job's cgroups (t->follow): the most throttled one stands for the
 * trial's throttling, and the one with the most memory events for those,
 * when it had more than the trial cgroup (or the trial cgroup could not
 * be counted). */
void abwatch_fill_follow(struct abwatch_trial *t)
{
	const struct cgfollow_result *f = t->follow;
	double best_ms = -1, periods = 0, mem = -1;

	for (int i = 0; i < f->n; i++) {
		const struct cgfollow_group *g = &f->group[i];
		bool v2mem = true;
		double sum = 0;

		if (trialcg_has(&g->before, TCG_CPU_THROTTLED_USEC) && trialcg_has(&g->after, TCG_CPU_THROTTLED_USEC) &&
		    (double)cgfollow_group_delta(g, TCG_CPU_THROTTLED_USEC) / 1000.0 > best_ms) {
			best_ms = (double)cgfollow_group_delta(g, TCG_CPU_THROTTLED_USEC) / 1000.0;
			periods = (double)cgfollow_group_delta(g, TCG_CPU_NR_THROTTLED);
		}
		for (enum trialcg_counter c = TCG_MEM_HIGH; c <= TCG_MEM_OOM && v2mem; c++) {
			v2mem = trialcg_has(&g->before, c) && trialcg_has(&g->after, c);
			sum += (double)cgfollow_group_delta(g, c);
		}
		if (!v2mem && trialcg_has(&g->before, TCG_MEM_FAILCNT) && trialcg_has(&g->after, TCG_MEM_FAILCNT))
			sum = (double)cgfollow_group_delta(g, TCG_MEM_FAILCNT), v2mem = true;
		if (v2mem && sum > mem)
			mem = sum;
	}
	if (best_ms >= 0 && (t->why[ABWATCH_THROTTLED_MS][0] || best_ms > t->v[ABWATCH_THROTTLED_MS])) {
		t->v[ABWATCH_THROTTLED_MS] = best_ms;
		t->v[ABWATCH_THROTTLED_PERIODS] = periods;
		t->why[ABWATCH_THROTTLED_MS][0] = t->why[ABWATCH_THROTTLED_PERIODS][0] = '\0';
	}
	if (mem >= 0 && (t->why[ABWATCH_MEM_EVENTS][0] || mem > t->v[ABWATCH_MEM_EVENTS])) {
		t->v[ABWATCH_MEM_EVENTS] = mem;
		t->why[ABWATCH_MEM_EVENTS][0] = '\0';
	}
}

/* v[] and why[] of t from what the watch read. */
static void fill_trial(const struct abwatch *w, struct abwatch_trial *t, const uint64_t perf[TCG_PERF_N], bool perf_ok)
{
	const char *src_why[ABWATCH_SRC_N];

	src_why[ABWATCH_SRC_CGROUP] = t->cg_read ? ""
				      : w->why[ABWATCH_SRC_CGROUP][0] ? w->why[ABWATCH_SRC_CGROUP]
				      : "trial cgroup not read";
	src_why[ABWATCH_SRC_PERF] = perf_ok ? ""
				    : w->why[ABWATCH_SRC_PERF][0] ? w->why[ABWATCH_SRC_PERF] : "perf events not read";
	src_why[ABWATCH_SRC_CULPRIT] = t->culprit_read ? "" : w->why[ABWATCH_SRC_CULPRIT][0] ? w->why[ABWATCH_SRC_CULPRIT]
				: "culprit watch not run";
	if (!w->started)
		src_why[ABWATCH_SRC_CGROUP] = src_why[ABWATCH_SRC_PERF] = src_why[ABWATCH_SRC_CULPRIT] = "the job was not started";
	for (int c = 0; c < ABWATCH_N; c++) {
		t->v[c] = 0;
		why_set(t->why[c], "%s", src_why[abwatch_rows[c].source]);
		if (abwatch_rows[c].source == ABWATCH_SRC_PERF && perf_ok)
			t->v[c] = (double)perf[abwatch_rows[c].perf];
	}
	if (t->cg_read)
		fill_cgroup(t);
	if (t->culprit_read)
		fill_culprit(t);
	if (t->follow)
		abwatch_fill_follow(t);
}

/* The reads at the end of a started watch into t; the first error kept. */
static void end_reads(struct abwatch *w, struct abwatch_trial *t, uint64_t perf[TCG_PERF_N], bool *perf_ok, int *first,
		      struct nt_err *err)
{
	struct nt_err e = { 0 };
	int r;

	if (w->cg && w->have_before) {
		if (trialcg_read(w->cg, &t->after, &e) == 0) {
			t->before = w->before;
			t->cg_read = true;
		} else {
			why_set(w->why[ABWATCH_SRC_CGROUP], "trial cgroup unreadable after the job: %s", e.msg);
			keep_first(first, err, e.code, e.msg);
		}
	}
	if (w->perf.fd) {
		*perf_ok = trialcg_perf_read(&w->perf, perf, &e) == 0;
		if (!*perf_ok) {
			why_set(w->why[ABWATCH_SRC_PERF], "%s", e.msg);
			keep_first(first, err, e.code, e.msg);
		}
	}
	if (w->cf) {
		if (!(t->follow = calloc(1, sizeof(*t->follow)))) {
			cgfollow_free(w->cf);
			keep_first(first, err, -ENOMEM, "out of memory");
		} else if (cgfollow_stop(w->cf, t->follow, &e) < 0) {
			keep_first(first, err, e.code, e.msg);
		}
		w->cf = NULL;
	}
	if (w->cu) {
		if ((r = job_from_cgroup(w)) < 0)
			keep_first(first, err, r, "out of memory");
		r = culprit_stop(w->cu, &t->culprit, &e);
		w->cu = NULL;
		t->culprit_read = r == 0;
		if (r < 0) {
			why_set(w->why[ABWATCH_SRC_CULPRIT], "culprit watch: %s", e.msg);
			keep_first(first, err, e.code, e.msg);
		}
	}
}

int abwatch_end(struct abwatch *w, struct abwatch_trial *ret, struct nt_err *err)
{
	uint64_t perf[TCG_PERF_N] = { 0 };
	bool perf_ok = false;
	int first = 0, r;

	memset(ret, 0, sizeof(*ret));
	if (!w) {
		for (int c = 0; c < ABWATCH_N; c++)
			why_set(ret->why[c], "no watch");
		return err_set(err, -EINVAL, "abwatch_end: no watch");
	}
	if (w->started)
		end_reads(w, ret, perf, &perf_ok, &first, err);
	fill_trial(w, ret, perf, perf_ok);
	trialcg_perf_close(&w->perf);
	if (w->cg && (r = trialcg_destroy(w->cg)) < 0) {
		char msg[1200];

		snprintf(msg, sizeof(msg), "removing the trial cgroup %s: %s", w->procs_rel, nt_strerror(-r));
		keep_first(&first, err, r, msg);
	}
	cgfollow_free(w->cf);
	free(w->procs_buf);
	free(w->known);
	free(w);
	return first;
}

void abwatch_trial_release(struct abwatch_trial *t)
{
	if (!t)
		return;
	culprit_result_free(&t->culprit);
	t->culprit_read = false;
	cgfollow_result_free(t->follow);
	free(t->follow);
	t->follow = NULL;
}

/* ---- an arm --------------------------------------------------------------- */

void abwatch_arm_init(struct abwatch_arm *a)
{
	memset(a, 0, sizeof(*a));
	a->cg.mem_limit = a->cg.mem_high = -1;
}

void abwatch_arm_release(struct abwatch_arm *a)
{
	if (!a)
		return;
	culprit_result_free(&a->culprit);
	free(a->groups);
	abwatch_arm_init(a);
}

/* t's cgroup deltas into the arm's sums. */
static void arm_add_cgroup(struct abwatch_arm *a, const struct abwatch_trial *t)
{
	struct trialcg_stats *s = &a->cg;
	uint32_t have = t->before.have & t->after.have;

	if (a->cg_trials == 0) {
		*s = t->after;          /* quota, limits, paths, why */
		memset(s->v, 0, sizeof(s->v));
		s->have = have;
	}
	s->have &= have;
	for (int c = 0; c < TCG_N; c++) {
		uint64_t b = t->before.v[c], x = t->after.v[c];

		if (!((have >> c) & 1u))
			continue;
		if (trialcg_counters[c].gauge)
			s->v[c] = x > s->v[c] ? x : s->v[c];
		else
			s->v[c] += x > b ? x - b : 0;
	}
	a->cg_trials++;
}

/* The merged row of x: the same pid and comm, and both a process a sample
 * saw or both short-lived processes (whose pid is their starter's; a row
 * merge_reserve has just made for them reads -1 until merge_task counts
 * them). */
static struct culprit_task *find_row(const struct culprit_result *m, const struct culprit_task *x)
{
	for (int i = 0; i < m->n_tasks; i++) {
		const struct culprit_task *r = &m->tasks[i];

		if (r->pid == x->pid && !strcmp(r->comm, x->comm) && (r->short_lived != 0) == (x->short_lived != 0) &&
		    (!x->short_lived || (r->policy == x->policy && r->priority == x->priority)))
			return &m->tasks[i];
	}
	return NULL;
}

/* Every CPU time entry of rows[0..n): what one merged row can gain from a
 * trial, however many of the trial's rows map to it. */
static int cpus_of(const struct culprit_task *rows, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += rows[i].n_cpus;
	return k;
}

static struct culprit_cpu_irq *find_irq_cpu(const struct culprit_result *m, int cpu)
{
	for (int i = 0; i < m->n_irq_cpus; i++)
		if (m->irq_cpus[i].cpu == cpu)
			return &m->irq_cpus[i];
	return NULL;
}

/* The union of two cpulists into out.  0, -ENOMEM, -EINVAL. */
static int cpus_union(const char *x, const char *y, char *out, size_t size)
{
	hwloc_bitmap_t a = hwloc_bitmap_alloc(), b = hwloc_bitmap_alloc();
	int r = !a || !b ? -ENOMEM : cpulist_parse(x, a);

	if (r == 0)
		r = cpulist_parse(y, b);
	if (r == 0 && hwloc_bitmap_or(a, a, b) < 0)
		r = -ENOMEM;
	if (r == 0)
		r = cpulist_format(a, out, size);
	hwloc_bitmap_free(a);
	hwloc_bitmap_free(b);
	return r;
}

/* Make room for t's rows in m so that the merge cannot fail: the task and
 * IRQ tables grown, each task row's CPUs grown, new task rows appended
 * empty (n_new of them, taken back on failure), the rank CPUs' union into
 * cpus.  0 or -ENOMEM (m as it was, but for larger allocations). */
static int merge_reserve(struct culprit_result *m, const struct culprit_result *t, char *cpus, size_t size,
			 int *n_new)
{
	struct culprit_task *tasks = realloc(m->tasks, (size_t)(m->n_tasks + t->n_tasks + 1) * sizeof(*tasks));
	struct culprit_cpu_irq *irqs;
	int r, more;

	*n_new = 0;
	if (!tasks)
		return -ENOMEM;
	m->tasks = tasks;
	irqs = realloc(m->irq_cpus, (size_t)(m->n_irq_cpus + t->n_irq_cpus + 1) * sizeof(*irqs));
	if (!irqs)
		return -ENOMEM;
	m->irq_cpus = irqs;
	if ((r = cpus_union(m->cpus, t->cpus, cpus, size)) == -ENOMEM)
		return r;
	if (r < 0)                     /* not a cpulist: culprit.c wrote it, so not expected */
		snprintf(cpus, size, "%s", m->cpus[0] ? m->cpus : t->cpus);
	more = cpus_of(t->tasks, t->n_tasks);
	for (int i = 0; i < t->n_tasks; i++) {
		const struct culprit_task *x = &t->tasks[i];
		struct culprit_task *row = find_row(m, x);
		struct culprit_cpu_time *ct;

		if (!row) {
			row = &m->tasks[m->n_tasks];
			*row = *x;
			row->seconds = 0;
			row->n_cpus = 0;
			row->cpus = NULL;
			row->threads = 0;
			row->short_lived = x->short_lived ? -1 : 0;
			m->n_tasks++;
			++*n_new;
		}
		/* room for all of the trial's entries: two of its rows may
		 * map to this one (a sizing per row would be overrun) */
		ct = realloc(row->cpus, (size_t)(row->n_cpus + more + 1) * sizeof(*ct));
		if (!ct)
			goto out_take_back;
		row->cpus = ct;
	}
	return 0;
out_take_back:
	for (; *n_new > 0; --*n_new)
		free(m->tasks[--m->n_tasks].cpus);
	return -ENOMEM;
}

/* One process's rows of a trial into its merged row (room reserved). */
static void merge_task(struct culprit_task *row, const struct culprit_task *x)
{
	if (x->seconds > row->seconds) {           /* name the policy of where it ran most */
		row->policy = x->policy;
		row->priority = x->priority;
	}
	row->threads = x->threads > row->threads ? x->threads : row->threads;
	row->seconds += x->seconds;
	row->short_lived = (row->short_lived < 0 ? 0 : row->short_lived) + x->short_lived;
	if (!row->started_by[0])
		snprintf(row->started_by, sizeof(row->started_by), "%s", x->started_by);
	for (int k = 0; k < x->n_cpus; k++) {
		int j = 0;

		while (j < row->n_cpus && row->cpus[j].cpu != x->cpus[k].cpu)
			j++;
		if (j == row->n_cpus)
			row->cpus[row->n_cpus++] = (struct culprit_cpu_time){ .cpu = x->cpus[k].cpu };
		row->cpus[j].seconds += x->cpus[k].seconds;
	}
}

static int cmp_irq_count(const void *a, const void *b)
{
	const struct culprit_irq_count *x = a, *y = b;

	return (x->count < y->count) - (x->count > y->count);
}

/* Add the rows x[0..nx) into rows[0..*n) by label, at most cap rows. */
static void sum_by_label(struct culprit_irq_count *rows, int *n, int cap, const struct culprit_irq_count *x, int nx)
{
	for (int i = 0; i < nx; i++) {
		int j = 0;

		while (j < *n && strcmp(rows[j].label, x[i].label))
			j++;
		if (j < *n)
			rows[j].count += x[i].count;
		else if (*n < cap)
			rows[(*n)++] = x[i];
	}
}

/* One CPU's IRQ figures of a trial into the merged CPU. */
static void merge_irq_cpu(struct culprit_cpu_irq *o, const struct culprit_cpu_irq *x)
{
	struct culprit_irq_count lines[2 * CULPRIT_MAX_IRQ_ROWS];
	int n = o->n_irqs;

	if (x->irq_seconds >= 0) {
		o->irq_seconds = (o->irq_seconds > 0 ? o->irq_seconds : 0) + x->irq_seconds;
		o->softirq_seconds = (o->softirq_seconds > 0 ? o->softirq_seconds : 0) + x->softirq_seconds;
	}
	memcpy(lines, o->irqs, (size_t)n * sizeof(*lines));
	sum_by_label(lines, &n, 2 * CULPRIT_MAX_IRQ_ROWS, x->irqs, x->n_irqs);
	qsort(lines, (size_t)n, sizeof(*lines), cmp_irq_count);
	o->n_irqs = n < CULPRIT_MAX_IRQ_ROWS ? n : CULPRIT_MAX_IRQ_ROWS;
	memcpy(o->irqs, lines, (size_t)o->n_irqs * sizeof(*lines));
	sum_by_label(o->softirqs, &o->n_softirqs, CULPRIT_MAX_SOFTIRQS, x->softirqs, x->n_softirqs);
}

static int cmp_cpu_time(const void *a, const void *b)
{
	const struct culprit_cpu_time *x = a, *y = b;

	return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

/* Shares of rows[0..n) over s seconds, their top CPUs, their order. */
static void settle_rows(struct culprit_task *rows, int n, double s)
{
	for (int i = 0; i < n; i++) {
		struct culprit_task *row = &rows[i];

		qsort(row->cpus, (size_t)row->n_cpus, sizeof(*row->cpus), cmp_cpu_time);
		row->top_cpu = -1;
		row->top_share = 0;
		for (int k = 0; k < row->n_cpus; k++) {
			row->cpus[k].share = s > 0 ? row->cpus[k].seconds / s : 0;
			if (row->top_cpu < 0 || row->cpus[k].share > row->top_share) {
				row->top_cpu = row->cpus[k].cpu;
				row->top_share = row->cpus[k].share;
			}
		}
	}
	if (n)
		qsort(rows, (size_t)n, sizeof(*rows), culprit_task_cmp);
}

/* Shares over the merged seconds, top CPUs, the order. */
static void merge_settle(struct culprit_result *m)
{
	double s = m->seconds;

	settle_rows(m->tasks, m->n_tasks, s);
	settle_rows(m->job, m->n_job, s);
	for (int i = 0; i < m->n_irq_cpus; i++) {
		struct culprit_cpu_irq *o = &m->irq_cpus[i];

		o->irq_share = s > 0 && o->irq_seconds > 0 ? o->irq_seconds / s : 0;
		o->softirq_share = s > 0 && o->softirq_seconds > 0 ? o->softirq_seconds / s : 0;
	}
}

/* The job's process row of x's kind in m (comm, policy, priority: the
 * job's pids differ from trial to trial); NULL: none. */
static struct culprit_task *find_job_row(const struct culprit_result *m, const struct culprit_task *x)
{
	for (int i = 0; i < m->n_job; i++)
		if (!strcmp(m->job[i].comm, x->comm) && m->job[i].policy == x->policy &&
		    m->job[i].priority == x->priority)
			return &m->job[i];
	return NULL;
}

/* Make room for t's job rows in m (as merge_reserve does for the tasks):
 * new kinds appended empty (*n_new of them).  0 or -ENOMEM (m as it was,
 * but for larger allocations). */
static int job_reserve(struct culprit_result *m, const struct culprit_result *t, int *n_new)
{
	struct culprit_task *rows = realloc(m->job, (size_t)(m->n_job + t->n_job + 1) * sizeof(*rows));
	int more = cpus_of(t->job, t->n_job);

	*n_new = 0;
	if (!rows)
		return -ENOMEM;
	m->job = rows;
	for (int i = 0; i < t->n_job; i++) {
		struct culprit_task *row = find_job_row(m, &t->job[i]);
		struct culprit_cpu_time *ct;

		if (!row) {
			row = &m->job[m->n_job++];
			*row = t->job[i];
			row->seconds = 0;
			row->n_cpus = 0;
			row->cpus = NULL;
			row->threads = 0;
			row->short_lived = 0;
			++*n_new;
		}
		ct = realloc(row->cpus, (size_t)(row->n_cpus + more + 1) * sizeof(*ct));
		if (!ct)
			goto out_take_back;
		row->cpus = ct;
	}
	return 0;
out_take_back:
	for (; *n_new > 0; --*n_new)
		free(m->job[--m->n_job].cpus);
	return -ENOMEM;
}

/* t's culprit result into the arm's merged one.  0 or -ENOMEM (m as it was). */
static int arm_add_culprit(struct abwatch_arm *a, const struct culprit_result *t)
{
	struct culprit_result *m = &a->culprit;
	char cpus[CULPRIT_LIST_LEN];
	int n_job_new, n_new, r = job_reserve(m, t, &n_job_new);

	if (r < 0)
		return r;
	r = merge_reserve(m, t, cpus, sizeof(cpus), &n_new);
	if (r < 0) {
		for (; n_job_new > 0; n_job_new--)
			free(m->job[--m->n_job].cpus);
		return r;
	}
	for (int i = 0; i < t->n_job; i++)
		merge_task(find_job_row(m, &t->job[i]), &t->job[i]);
	for (int i = 0; i < t->n_tasks; i++)
		merge_task(find_row(m, &t->tasks[i]), &t->tasks[i]);
	for (int i = 0; i < t->n_irq_cpus; i++) {
		struct culprit_cpu_irq *o = find_irq_cpu(m, t->irq_cpus[i].cpu);

		if (!o) {
			o = &m->irq_cpus[m->n_irq_cpus++];
			*o = (struct culprit_cpu_irq){ .cpu = t->irq_cpus[i].cpu, .irq_seconds = -1,
						       .softirq_seconds = -1 };
		}
		merge_irq_cpu(o, &t->irq_cpus[i]);
	}
	for (int i = 0; i < t->n_changes && m->n_changes < CULPRIT_MAX_CHANGES; i++)
		m->changes[m->n_changes++] = t->changes[i];
	snprintf(m->cpus, sizeof(m->cpus), "%s", cpus);
	m->cpus_given = a->culprit_trials ? m->cpus_given && t->cpus_given : t->cpus_given;
	m->schedstat = a->culprit_trials ? m->schedstat && t->schedstat : t->schedstat;
	if (!t->exits_counted && (m->exits_counted || !a->culprit_trials))
		snprintf(m->exits_why, sizeof(m->exits_why), "%s", t->exits_why);
	m->exits_counted = a->culprit_trials ? m->exits_counted && t->exits_counted : t->exits_counted;
	m->exits_seen += t->exits_seen;
	m->exits_lost += t->exits_lost;
	m->sample_ms_mean = m->samples + t->samples ? (m->sample_ms_mean * m->samples + t->sample_ms_mean * t->samples) /
				(m->samples + t->samples) : 0;
	m->sample_ms_max = t->sample_ms_max > m->sample_ms_max ? t->sample_ms_max : m->sample_ms_max;
	m->samples += t->samples;
	m->procs_dropped += t->procs_dropped;
	m->seconds += t->seconds;
	merge_settle(m);
	m->n_culprits = t->n_culprits > m->n_culprits ? t->n_culprits : m->n_culprits;
	m->n_culprits = m->n_tasks > m->n_culprits ? m->n_tasks : m->n_culprits;
	a->culprit_trials++;
	return 0;
}

static struct abwatch_group *arm_group(const struct abwatch_arm *a, const char *name)
{
	for (int i = 0; i < a->n_groups; i++)
		if (!strcmp(a->groups[i].name, name))
			return &a->groups[i];
	return NULL;
}

/* Is a followed group the trial cgroup, or below it, or its parent
 * (the arm's cg and explain_limits tell of the trial cgroup: a new one
 * each trial)? */
static bool trial_group(const char *name)
{
	const char *p = strstr(name, "/" TRIALCG_PARENT);

	return p && (p[strlen(TRIALCG_PARENT) + 1] == '/' || p[strlen(TRIALCG_PARENT) + 1] == '\0');
}

/* t's followed cgroups into the arm's, by name, but the trial cgroups.
 * 0 or -ENOMEM (a as it was). */
static int arm_add_follow(struct abwatch_arm *a, const struct cgfollow_result *f)
{
	struct abwatch_group *rows = realloc(a->groups, (size_t)(a->n_groups + f->n + 1) * sizeof(*rows));

	if (!rows)
		return -ENOMEM;
	a->groups = rows;
	for (int i = 0; i < f->n; i++) {
		const struct cgfollow_group *g = &f->group[i];
		struct abwatch_group *row = arm_group(a, g->name);
		uint32_t have = g->before.have & g->after.have;

		if (trial_group(g->name))
			continue;
		if (!row) {
			row = &a->groups[a->n_groups++];
			memset(row, 0, sizeof(*row));
			snprintf(row->name, sizeof(row->name), "%s", g->name);
			snprintf(row->quota, sizeof(row->quota), "%s", g->after.quota);
			row->have = have;
		}
		row->have &= have;
		row->job |= g->job;
		row->trials++;
		for (int c = 0; c < TCG_N; c++) {
			uint64_t x = trialcg_counters[c].gauge ? g->after.v[c] : cgfollow_group_delta(g, c);

			if (trialcg_counters[c].gauge)
				row->v[c] = x > row->v[c] ? x : row->v[c];
			else
				row->v[c] += x;
		}
	}
	a->follow_trials++;
	return 0;
}

int abwatch_arm_add(struct abwatch_arm *a, const struct abwatch_trial *t)
{
	if (t->follow) {
		int r = arm_add_follow(a, t->follow);

		if (r < 0)
			return r;
	}
	if (t->culprit_read) {
		int r = arm_add_culprit(a, &t->culprit);

		if (r < 0)
			return r;
	}
	if (t->cg_read)
		arm_add_cgroup(a, t);
	a->trials++;
	return 0;
}

/* ---- explain -------------------------------------------------------------- */

static uint64_t cg_sum(const struct trialcg_stats *s, enum trialcg_counter c)
{
	return trialcg_has(s, c) ? s->v[c] : 0;
}

/* Was the arm throttled, or did it hit a memory limit? */
static bool arm_limited(const struct abwatch_arm *a)
{
	const struct trialcg_stats *s = &a->cg;

	return a->cg_trials && (cg_sum(s, TCG_CPU_NR_THROTTLED) || cg_sum(s, TCG_MEM_HIGH) || cg_sum(s, TCG_MEM_MAX) ||
				cg_sum(s, TCG_MEM_OOM) || cg_sum(s, TCG_MEM_OOM_KILL) || cg_sum(s, TCG_MEM_FAILCNT));
}

/* One line per arm with cgroup counters, when either arm was limited. */
static bool explain_limits(const struct abwatch_arm *arm[2], char *buf, size_t size, size_t *len, int *lines)
{
	if (!arm_limited(arm[0]) && !arm_limited(arm[1]))
		return true;
	for (int s = 0; s < 2; s++) {
		char text[1536];

		if (!arm[s]->cg_trials)
			continue;
		(void)trialcg_describe(NULL, &arm[s]->cg, text, sizeof(text));   /* -ENOBUFS: truncated, still one line */
		if (!textbuf_appendf(buf, size, len, "%c: %s (%d trial%s)\n", s ? 'B' : 'A', text, arm[s]->cg_trials,
			    arm[s]->cg_trials == 1 ? "" : "s"))
			return false;
		++*lines;
	}
	return true;
}

/* One IRQ line to say: a rank CPU, irq or softirq, the arms' shares (-1:
 * not a rank CPU of that arm). */
struct irq_line {
	int cpu;
	bool soft;
	double share[2];
	const struct culprit_cpu_irq *o[2];
};

static double irq_diff(const struct irq_line *l)
{
	double a = l->share[0] < 0 ? 0 : l->share[0], b = l->share[1] < 0 ? 0 : l->share[1];

	return a > b ? a - b : b - a;
}

static int cmp_irq_line(const void *a, const void *b)
{
	double x = irq_diff(a), y = irq_diff(b);

	return (x < y) - (x > y);
}

/* The busiest lines of o ("NET_RX 48210, TIMER 812"; numbered IRQs with
 * their device, "24/nvme0q1 5120"), at most two, into out. */
static void irq_names(const struct culprit_cpu_irq *o, bool soft, char *out, size_t size)
{
	struct culprit_irq_count rows[CULPRIT_MAX_SOFTIRQS > CULPRIT_MAX_IRQ_ROWS ? CULPRIT_MAX_SOFTIRQS
										   : CULPRIT_MAX_IRQ_ROWS];
	int n = soft ? o->n_softirqs : o->n_irqs;
	size_t len = 0;

	memcpy(rows, soft ? o->softirqs : o->irqs, (size_t)n * sizeof(rows[0]));
	qsort(rows, (size_t)n, sizeof(rows[0]), cmp_irq_count);
	out[0] = '\0';
	for (int i = 0; i < n && i < 2; i++) {
		bool device = !soft && rows[i].name[0] && strspn(rows[i].label, "0123456789") == strlen(rows[i].label);

		if (!textbuf_appendf(out, size, &len, "%s%s%s%s %llu", i ? ", " : "", rows[i].label, device ? "/" : "",
			    device ? rows[i].name : "", (unsigned long long)rows[i].count))
			break;
	}
}

/* The candidates: each rank CPU of either arm, irq and softirq. */
static int irq_lines(const struct abwatch_arm *arm[2], struct irq_line *out)
{
	int n = 0;

	for (int s = 0; s < 2; s++) {
		for (int i = 0; arm[s]->culprit_trials && i < arm[s]->culprit.n_irq_cpus; i++) {
			int cpu = arm[s]->culprit.irq_cpus[i].cpu;
			bool dup = false;

			for (int k = 0; k < n && !dup; k++)
				dup = out[k].cpu == cpu;
			if (dup)
				continue;
			for (int soft = 0; soft < 2; soft++) {
				struct irq_line l = { .cpu = cpu, .soft = soft };

				for (int x = 0; x < 2; x++) {
					l.o[x] = arm[x]->culprit_trials ? find_irq_cpu(&arm[x]->culprit, cpu) : NULL;
					l.share[x] = !l.o[x] || l.o[x]->irq_seconds < 0 ? -1
						     : soft ? l.o[x]->softirq_share : l.o[x]->irq_share;
				}
				if (irq_diff(&l) >= ABWATCH_IRQ_MIN_DIFF)
					out[n++] = l;
			}
		}
	}
	if (n)
		qsort(out, (size_t)n, sizeof(*out), cmp_irq_line);
	return n;
}

/* 0, -ENOSPC (buf holds the whole lines that fit) or -ENOMEM. */
static int explain_irqs(const struct abwatch_arm *arm[2], char *buf, size_t size, size_t *len, int *lines)
{
	int cap = 2 * (arm[0]->culprit.n_irq_cpus + arm[1]->culprit.n_irq_cpus) + 1, n;
	struct irq_line *l = calloc((size_t)cap, sizeof(*l));
	bool ok = true;

	if (!l)
		return -ENOMEM;
	n = irq_lines(arm, l);
	for (int i = 0; i < n && i < 3 && ok; i++) {
		int hi = (l[i].share[1] < 0 ? 0 : l[i].share[1]) >= (l[i].share[0] < 0 ? 0 : l[i].share[0]);
		char names[160], lo[48];

		irq_names(l[i].o[hi], l[i].soft, names, sizeof(names));
		if (l[i].share[!hi] < 0)
			snprintf(lo, sizeof(lo), "not a rank CPU during %c", hi ? 'A' : 'B');
		else
			snprintf(lo, sizeof(lo), "%.1f%% during %c", 100.0 * l[i].share[!hi], hi ? 'A' : 'B');
		ok = textbuf_appendf(buf, size, len, "CPU %d: %s %.1f%% of the time during %c%s%s%s, %s\n", l[i].cpu,
			    l[i].soft ? "softirq" : "irq", 100.0 * l[i].share[hi], hi ? 'B' : 'A', names[0] ? " (" : "",
			    names, names[0] ? ")" : "", lo);
		*lines += ok;
	}
	free(l);
	return ok ? 0 : -ENOSPC;
}

static uint64_t group_v(const struct abwatch_group *g, enum trialcg_counter c)
{
	return g && ((g->have >> c) & 1u) ? g->v[c] : 0;
}

static uint64_t group_mem(const struct abwatch_group *g)
{
	return group_v(g, TCG_MEM_HIGH) + group_v(g, TCG_MEM_MAX) + group_v(g, TCG_MEM_OOM) +
	       group_v(g, TCG_MEM_OOM_KILL) + group_v(g, TCG_MEM_FAILCNT);
}

/* "throttled 412 times, 8.1 s" or "not throttled", then memory events, of g. */
static void group_limits(const struct abwatch_group *g, char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	if (group_v(g, TCG_CPU_NR_THROTTLED))
		textbuf_appendf(out, size, &len, "throttled %llu times, %.1f s",
				(unsigned long long)group_v(g, TCG_CPU_NR_THROTTLED),
				(double)group_v(g, TCG_CPU_THROTTLED_USEC) / 1e6);
	else
		textbuf_appendf(out, size, &len, "not throttled");
	if (group_mem(g))
		textbuf_appendf(out, size, &len, "; memory: %llu over high, %llu at max, %llu OOM, %llu OOM kills, %llu failcnt",
				(unsigned long long)group_v(g, TCG_MEM_HIGH), (unsigned long long)group_v(g, TCG_MEM_MAX),
				(unsigned long long)group_v(g, TCG_MEM_OOM), (unsigned long long)group_v(g, TCG_MEM_OOM_KILL),
				(unsigned long long)group_v(g, TCG_MEM_FAILCNT));
}

/* How much a group limited its arm, for the order: throttled time, then
 * memory events. */
static double group_weight(const struct abwatch_group *g)
{
	return (double)group_v(g, TCG_CPU_THROTTLED_USEC) + (double)group_v(g, TCG_CPU_NR_THROTTLED) + (double)group_mem(g);
}

struct group_line {
	const struct abwatch_group *g[2];
	double weight;
};

static int cmp_group_line(const void *x, const void *y)
{
	double a = ((const struct group_line *)x)->weight, b = ((const struct group_line *)y)->weight;

	return (a < b) - (a > b);
}

/* The job's cgroups (not the trial's) that throttled or hit a memory limit
 * in either arm, the most limiting first, at most 3 lines.  0, -ENOSPC or
 * -ENOMEM. */
static int explain_groups(const struct abwatch_arm *arm[2], int slower, char *buf, size_t size, size_t *len, int *lines)
{
	struct group_line *l = calloc((size_t)(arm[0]->n_groups + arm[1]->n_groups + 1), sizeof(*l));
	int n = 0;
	bool ok = true;

	if (!l)
		return -ENOMEM;
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < arm[s]->n_groups; i++) {
			const struct abwatch_group *g = &arm[s]->groups[i];
			bool dup = false;

			for (int k = 0; k < n && !dup; k++)
				dup = !strcmp(l[k].g[s] ? l[k].g[s]->name : l[k].g[!s]->name, g->name);
			if (dup || trial_group(g->name))
				continue;
			l[n].g[s] = g;
			l[n].g[!s] = arm_group(arm[!s], g->name);
			l[n].weight = fmax(group_weight(l[n].g[0]), group_weight(l[n].g[1]));
			if (l[n].weight > 0)
				n++;
		}
	if (n)
		qsort(l, (size_t)n, sizeof(*l), cmp_group_line);
	for (int i = 0; i < n && i < 3 && ok; i++) {
		double w0 = l[i].g[0] ? group_weight(l[i].g[0]) : 0, w1 = l[i].g[1] ? group_weight(l[i].g[1]) : 0;
		int hi = w1 > w0 ? 1 : w0 > w1 ? 0 : slower >= 0 ? slower : 1;
		const struct abwatch_group *g = l[i].g[hi], *o = l[i].g[!hi];
		char quota[96] = "", mine[256], other[256];

		if (g->quota[0])
			snprintf(quota, sizeof(quota), strncmp(g->quota, "cfs_", 4) ? " (cpu.max %s)" : " (%s)", g->quota);
		group_limits(g, mine, sizeof(mine));
		if (o)
			group_limits(o, other, sizeof(other));
		else
			snprintf(other, sizeof(other), "not throttled (its job did not run there)");
		ok = textbuf_appendf(buf, size, len, "%c's job ran %s %s%s: %s in the %c trials; %c: %s\n", hi ? 'B' : 'A',
				     g->job ? "in" : "below", g->name, quota, mine, hi ? 'B' : 'A', hi ? 'A' : 'B', other);
		*lines += ok;
	}
	free(l);
	return ok ? 0 : -ENOSPC;
}

int abwatch_explain(const struct abwatch_arm *a, const struct abwatch_arm *b, int slower, char *buf, size_t size)
{
	const struct abwatch_arm *arm[2] = { a, b };
	size_t len;
	int lines, r;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	len = 0;
	lines = 0;
	if ((r = explain_groups(arm, slower, buf, size, &len, &lines)) < 0)
		return r;
	r = culprit_describe_job(a->culprit_trials ? &a->culprit : NULL, b->culprit_trials ? &b->culprit : NULL,
				 slower, buf + len, size - len);
	if (r < 0)
		return r;
	lines += r;
	len += strlen(buf + len);
	r = culprit_describe_top(a->culprit_trials ? &a->culprit : NULL, b->culprit_trials ? &b->culprit : NULL,
				 buf + len, size - len);
	if (r < 0)
		return r;
	lines += r;
	len += strlen(buf + len);
	r = culprit_describe_changes(a->culprit_trials ? &a->culprit : NULL, a->culprit_trials,
				     b->culprit_trials ? &b->culprit : NULL, b->culprit_trials, buf + len, size - len);
	if (r < 0)
		return r;
	lines += r;
	len += strlen(buf + len);
	if (!explain_limits(arm, buf, size, &len, &lines))
		return -ENOSPC;
	r = explain_irqs(arm, buf, size, &len, &lines);
	return r < 0 ? r : lines;
}

/* ---- JSON ----------------------------------------------------------------- */

static json_t *count_or_null(const struct trialcg_stats *s, enum trialcg_counter c)
{
	return trialcg_has(s, c) ? json_integer((json_int_t)s->v[c]) : json_null();
}

static json_t *cgroup_json(const struct abwatch_arm *a)
{
	const struct trialcg_stats *s = &a->cg;
	json_t *mem;
	char text[1536];

	if (!a->cg_trials)
		return json_null();
	if (trialcg_has(s, TCG_MEM_HIGH) && trialcg_has(s, TCG_MEM_MAX) && trialcg_has(s, TCG_MEM_OOM))
		mem = json_integer((json_int_t)(s->v[TCG_MEM_HIGH] + s->v[TCG_MEM_MAX] + s->v[TCG_MEM_OOM]));
	else
		mem = count_or_null(s, TCG_MEM_FAILCNT);
	(void)trialcg_describe(NULL, s, text, sizeof(text));
	return json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:f, s:s, s:s}", "trials", a->cg_trials, "periods",
			 count_or_null(s, TCG_CPU_NR_PERIODS), "throttled_periods", count_or_null(s, TCG_CPU_NR_THROTTLED),
			 "throttled_ms", trialcg_has(s, TCG_CPU_THROTTLED_USEC)
			 ? json_real((double)s->v[TCG_CPU_THROTTLED_USEC] / 1000.0) : json_null(),
			 "cpu_pressure_ms", trialcg_has(s, TCG_PSI_CPU_SOME_US)
			 ? json_real((double)s->v[TCG_PSI_CPU_SOME_US] / 1000.0) : json_null(),
			 "mem_events", mem, "quota_cpus", s->quota_cpus, "paths", s->paths, "text", text);
}

static json_t *group_count(const struct abwatch_group *g, enum trialcg_counter c, double div)
{
	if (!((g->have >> c) & 1u))
		return json_null();
	return div == 1 ? json_integer((json_int_t)g->v[c]) : json_real((double)g->v[c] / div);
}

static json_t *groups_json(const struct abwatch_arm *a)
{
	json_t *arr;

	if (!a->follow_trials)
		return json_null();
	if (!(arr = json_array()))
		return NULL;
	for (int i = 0; i < a->n_groups; i++) {
		const struct abwatch_group *g = &a->groups[i];
		bool v2mem = ((g->have >> TCG_MEM_HIGH) & 1u) != 0;
		json_t *mem = v2mem ? json_integer((json_int_t)(g->v[TCG_MEM_HIGH] + g->v[TCG_MEM_MAX] + g->v[TCG_MEM_OOM]))
			      : group_count(g, TCG_MEM_FAILCNT, 1);

		if (json_array_append_new(arr, json_pack("{s:s, s:b, s:i, s:s, s:o, s:o, s:o, s:o}", "name", g->name, "job",
							 g->job, "trials", g->trials, "quota", g->quota,
							 "throttled_periods", group_count(g, TCG_CPU_NR_THROTTLED, 1),
							 "throttled_ms", group_count(g, TCG_CPU_THROTTLED_USEC, 1000),
							 "mem_events", mem, "cpu_pressure_ms",
							 group_count(g, TCG_PSI_CPU_SOME_US, 1000))) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

json_t *abwatch_arm_json(const struct abwatch_arm *a)
{
	json_t *culprit = json_null();

	if (a->culprit_trials) {
		struct culprit_result top = a->culprit;  /* shallow: the top rows only */

		if (top.n_tasks > CULPRIT_MAX_TASKS)
			top.n_tasks = CULPRIT_MAX_TASKS;
		culprit = culprit_json(&top);
	}
	return json_pack("{s:i, s:f, s:o, s:o, s:o}", "trials", a->trials, "seconds", a->culprit.seconds, "cgroup",
			 cgroup_json(a), "culprit", culprit, "job_cgroups", groups_json(a));
}
