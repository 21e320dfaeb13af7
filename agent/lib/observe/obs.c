/* SPDX-License-Identifier: MIT */
/* obs.c — see obs.h. */
#include "observe/obs.h"
#include "observe/obs_test.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/parse.h"

#define BIG (1u << 22)   /* /proc/stat of a 4096-CPU host fits */

/* One read buffer for the big files, allocated on first use and kept: the
 * sampler reads them ten times a second, and a fresh 4 MiB malloc is an
 * mmap, page faults and an munmap (with TLB shootdowns, which it measures)
 * every time.  The agent reads these files from one thread only. */
static char *scratch(void)
{
	static char *buf;

	if (!buf)
		buf = malloc(BIG);
	return buf;
}

int obs_read_stat(const struct fsroot *root, const char *relpath, struct obs_stat *ret,
		  struct nt_err *err)
{
	char *buf = scratch(), *line, *save = NULL, disp[4096];
	ssize_t n;
	int lineno = 0;

	if (!buf)
		return err_set(err, -ENOMEM, "out of memory");
	fsroot_display(root, relpath, disp, sizeof(disp));
	n = fsroot_read(root, relpath, buf, BIG);
	if (n < 0)
		return n == -ENOENT ? -ENOENT : err_set(err, (int)n, "%s: %s", disp, nt_strerror((int)-n));
	/* parsed into ret in place (only the CPUs seen are touched) */
	memset(ret->present, 0, sizeof(ret->present));
	ret->n_cpus = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long v[8] = { 0 };
		unsigned cpu;
		int k;

		lineno++;
		if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9')
			continue;
		k = sscanf(line, "cpu%u %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2],
			   &v[3], &v[4], &v[5], &v[6], &v[7]);
		if (k < 5 || cpu >= OBS_MAX_CPUS) {
			ret->n_cpus = 0;
			return err_set(err, -EINVAL, "%s:%d: expected 'cpuN user nice system idle ...', got '%.60s'",
				       disp, lineno, line);
		}
		ret->present[cpu] = true;
		ret->cpu[cpu] = (struct obs_cpu){ v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7] };
		if ((int)cpu + 1 > ret->n_cpus)
			ret->n_cpus = (int)cpu + 1;
	}
	if (ret->n_cpus == 0)
		return err_set(err, -EINVAL, "%s: no 'cpuN' lines: not a /proc/stat", disp);
	return 0;
}

static uint64_t total(const struct obs_cpu *c)
{
	return c->user + c->nice + c->system + c->idle + c->iowait + c->irq + c->softirq + c->steal;
}

double obs_sys_percent(const struct obs_stat *a, const struct obs_stat *b, int cpu)
{
	const struct obs_cpu *x = &a->cpu[cpu], *y = &b->cpu[cpu];
	uint64_t dt;

	if (!a->present[cpu] || !b->present[cpu] || total(y) <= total(x))
		return -1;
	dt = total(y) - total(x);
	/* softirq time counts: NAPI polling starved by memcg walks shows there */
	return 100.0 * (double)((y->system + y->irq + y->softirq) - (x->system + x->irq + x->softirq)) / (double)dt;
}

int obs_longest_sys_run(const struct obs_stat *s, int n, double min_pct, int *ret_cpu, double *ret_avg_sys)
{
	int best = 0, best_cpu = -1, best_end = 0, cpus = n ? s[0].n_cpus : 0;

	for (int c = 0; c < cpus; c++) {
		int run = 0;

		for (int i = 1; i < n; i++) {
			run = obs_sys_percent(&s[i - 1], &s[i], c) >= min_pct ? run + 1 : 0;
			if (run > best) {
				best = run;
				best_cpu = c;
				best_end = i;
			}
		}
	}
	if (best && ret_avg_sys) {
		double sum = 0;
		int k = 0;

		for (int c = 0; c < cpus; c++) {
			for (int i = best_end - best + 1; i <= best_end; i++) {
				double p = obs_sys_percent(&s[i - 1], &s[i], c);

				if (p >= 0) {
					sum += p;
					k++;
				}
			}
		}
		*ret_avg_sys = k ? sum / k : 0;
	}
	if (ret_cpu)
		*ret_cpu = best_cpu;
	return best;
}

int64_t obs_vmstat(const struct fsroot *root, const char *key)
{
	char *buf = scratch(), *line, *save = NULL;
	size_t kl = strlen(key);
	int64_t v = -1;

	if (!buf || fsroot_read(root, "proc/vmstat", buf, BIG) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t u;

		if (!strncmp(line, key, kl) && line[kl] == ' ' && parse_u64(line + kl + 1, INT64_MAX, &u) == 0) {
			v = (int64_t)u;
			break;
		}
	}
	return v;
}

/* Directories below relpath (itself included), counted to depth; 0 for a
 * file, -1 when relpath cannot be listed. */
static long count_dirs(const struct fsroot *root, const char *relpath, int depth)
{
	char **names = NULL;
	long n = 1;
	int k = fsroot_list(root, relpath, &names);

	if (k < 0)
		return k == -ENOTDIR ? 0 : -1;
	for (int i = 0; i < k && depth > 0; i++) {
		char sub[4096];
		long c;

		snprintf(sub, sizeof(sub), "%s/%s", relpath, names[i]);
		c = count_dirs(root, sub, depth - 1);
		n += c > 0 ? c : 0;
	}
	fsroot_names_free(names);
	return n;
}

void obs_memcg(const struct fsroot *root, long *ret_kernel, long *ret_live)
{
	char buf[8192], *line, *save = NULL;

	*ret_kernel = *ret_live = -1;
	if (fsroot_read(root, "proc/cgroups", buf, sizeof(buf)) >= 0) {
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char name[64];
			long hier, num, en;

			if (sscanf(line, "%63s %ld %ld %ld", name, &hier, &num, &en) == 4 && !strcmp(name, "memory"))
				*ret_kernel = num;
		}
	}
	if (fsroot_exists(root, "sys/fs/cgroup/memory/memory.stat") ||
	    fsroot_exists(root, "sys/fs/cgroup/memory/tasks"))
		*ret_live = count_dirs(root, "sys/fs/cgroup/memory", 16);
	else if (fsroot_exists(root, "sys/fs/cgroup/cgroup.controllers"))
		*ret_live = count_dirs(root, "sys/fs/cgroup", 16);
}

static void scan_cpu_stat(const struct fsroot *root, const char *dir, int depth, double *worst,
			  char *path, size_t size, uint64_t *thr, uint64_t *per, uint64_t *sum)
{
	char file[4096], buf[1024], **names = NULL;
	int k;

	snprintf(file, sizeof(file), "%s/cpu.stat", dir);
	if (fsroot_read(root, file, buf, sizeof(buf)) >= 0) {
		unsigned long long p = 0, t = 0;
		char *q;

		if ((q = strstr(buf, "nr_periods ")))
			sscanf(q + 11, "%llu", &p);
		if ((q = strstr(buf, "nr_throttled ")))
			sscanf(q + 13, "%llu", &t);
		*sum += t;
		if (p > 0 && (double)t / (double)p > *worst) {
			*worst = (double)t / (double)p;
			snprintf(path, size, "%s", file);
			*thr = t;
			*per = p;
		}
	}
	if (depth == 0 || (k = fsroot_list(root, dir, &names)) < 0)
		return;
	for (int i = 0; i < k; i++) {
		char sub[4096];

		snprintf(sub, sizeof(sub), "%s/%s", dir, names[i]);
		if (strchr(names[i], '.'))      /* control files, not groups */
			continue;
		scan_cpu_stat(root, sub, depth - 1, worst, path, size, thr, per, sum);
	}
	fsroot_names_free(names);
}

/* every cpu.stat of the cpu hierarchies (v1 cpu, cpu,cpuacct; v2) to depth 3 */
static double scan_throttling(const struct fsroot *root, char *path, size_t size, uint64_t *thr, uint64_t *per,
			      uint64_t *sum)
{
	static const char *const roots[] = { "sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup" };
	double worst = 0;

	path[0] = '\0';
	*thr = *per = *sum = 0;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		scan_cpu_stat(root, roots[i], 3, &worst, path, size, thr, per, sum);
	return worst;
}

double obs_worst_throttling(const struct fsroot *root, char *path, size_t size,
			    uint64_t *ret_throttled, uint64_t *ret_periods)
{
	uint64_t sum;

	return scan_throttling(root, path, size, ret_throttled, ret_periods, &sum);
}

uint64_t obs_total_throttled(const struct fsroot *root)
{
	uint64_t sum, t, p;
	char path[4096];

	scan_throttling(root, path, sizeof(path), &t, &p, &sum);
	return sum;
}

/* ---- a process and its threads ----------------------------------------- */

/* Add one thread's proc/PID/task/TID/{stat,status,schedstat} contents
 * (status and schedstat may be NULL or empty) to p; *cpu is the CPU it last
 * ran on.  0; -ENOENT for a zombie; -EINVAL with err when stat is
 * malformed (procfs_pid_stat_parse). */
static int obs_task_add(struct obs_proc *p, const char *stat, const char *status, const char *schedstat, int *cpu,
			struct nt_err *err)
{
	struct procfs_pid_stat st;

	if (procfs_pid_stat_parse(stat, strlen(stat), &st, err) < 0)
		return -EINVAL;
	if (st.zombie)
		return -ENOENT;         /* a zombie has exited: only its entry is left */
	p->utime += st.utime;
	p->stime += st.stime;
	*cpu = st.cpu;
	for (const char *line = status; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		unsigned long long x;

		if (sscanf(line, "voluntary_ctxt_switches: %llu", &x) == 1)
			p->vol_switches += x;
		else if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &x) == 1)
			p->invol_switches += x;
	}
	if (schedstat) {
		unsigned long long run, wait;

		if (sscanf(schedstat, "%llu %llu", &run, &wait) == 2) {
			p->run_ns += run;
			p->wait_ns += wait;
		}
	}
	return 0;
}

/* one thread; 0, -ENOENT when it is gone, -EINVAL with err */
static int read_task(const struct fsroot *root, int pid, const char *tid, struct obs_proc *p, int *cpu,
		     struct nt_err *err)
{
	char rel[3][128], stat[8192], status[8192], schedstat[256], shown[4096];
	struct nt_err e = { 0 };
	ssize_t n;
	int r;

	snprintf(rel[0], sizeof(rel[0]), "proc/%d/task/%s/stat", pid, tid);
	snprintf(rel[1], sizeof(rel[1]), "proc/%d/task/%s/status", pid, tid);
	snprintf(rel[2], sizeof(rel[2]), "proc/%d/task/%s/schedstat", pid, tid);
	n = fsroot_read(root, rel[0], stat, sizeof(stat));
	if (n < 0)
		return n == -ENOENT || n == -ESRCH ? -ENOENT : err_set(err, (int)n, "%s: %s",
			fsroot_display(root, rel[0], shown, sizeof(shown)), nt_strerror((int)-n));
	if (fsroot_read(root, rel[1], status, sizeof(status)) < 0)
		status[0] = '\0';
	if (fsroot_read(root, rel[2], schedstat, sizeof(schedstat)) < 0)
		schedstat[0] = '\0';
	r = obs_task_add(p, stat, status, schedstat, cpu, &e);
	if (r == -EINVAL)
		return err_set(err, -EINVAL, "%s:1: %s", fsroot_display(root, rel[0], shown, sizeof(shown)), e.msg);
	return r;
}

int obs_read_proc(const struct fsroot *root, int pid, struct obs_proc *ret, struct nt_err *err)
{
	char rel[64], **names = NULL;
	int n, r = 0;
	unsigned char *seen = calloc(OBS_MAX_CPUS, 1);

	memset(ret, 0, sizeof(*ret));
	ret->pid = pid;
	snprintf(rel, sizeof(rel), "proc/%d/task", pid);
	n = fsroot_list(root, rel, &names);
	if (n < 0 || !seen) {
		free(seen);
		return n == -ESRCH ? -ENOENT : n < 0 ? n : -ENOMEM;
	}
	for (int i = 0; i < n && !r; i++) {
		int cpu = -1, t = read_task(root, pid, names[i], ret, &cpu, err);

		if (t == -ENOENT)
			continue;       /* exited meanwhile */
		r = t;
		ret->n_threads++;
		if (cpu >= 0 && cpu < OBS_MAX_CPUS && !seen[cpu]++)
			ret->n_cpus_seen++;
	}
	fsroot_names_free(names);
	free(seen);
	return r ? r : ret->n_threads ? 0 : -ENOENT;
}

/* ---- PSI --------------------------------------------------------------- */

static void psi_file(const struct fsroot *root, const char *rel, uint64_t *some, uint64_t *full, bool *present)
{
	char buf[512], *line, *save = NULL;

	if (fsroot_read(root, rel, buf, sizeof(buf)) < 0)
		return;
	*present = true;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *t = strstr(line, "total=");
		unsigned long long v;

		if (!t || sscanf(t, "total=%llu", &v) != 1)
			continue;
		if (!strncmp(line, "some ", 5) && some)
			*some = v;
		else if (!strncmp(line, "full ", 5) && full)
			*full = v;
	}
}

void obs_read_psi(const struct fsroot *root, struct obs_psi *ret)
{
	memset(ret, 0, sizeof(*ret));
	psi_file(root, "proc/pressure/cpu", &ret->cpu_some_us, &ret->cpu_full_us, &ret->present);
	psi_file(root, "proc/pressure/memory", &ret->mem_some_us, &ret->mem_full_us, &ret->present);
	psi_file(root, "proc/pressure/io", &ret->io_some_us, &ret->io_full_us, &ret->present);
}

void obs_read_cgroup_psi(const struct fsroot *root, const char *cgdir, struct obs_psi *ret)
{
	static const char *const file[] = { "cpu.pressure", "memory.pressure", "io.pressure" };
	uint64_t *some[] = { &ret->cpu_some_us, &ret->mem_some_us, &ret->io_some_us };
	uint64_t *full[] = { &ret->cpu_full_us, &ret->mem_full_us, &ret->io_full_us };

	memset(ret, 0, sizeof(*ret));
	for (int i = 0; i < 3; i++) {
		char rel[4096];

		snprintf(rel, sizeof(rel), "%s/%s", cgdir, file[i]);
		psi_file(root, rel, some[i], full[i], &ret->present);
	}
}

/* ---- interrupts -------------------------------------------------------- */

int obs_read_interrupts(const struct fsroot *root, struct obs_irq *ret, struct nt_err *err)
{
	struct procfs_irqtab t;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = procfs_irqtab_read(root, "proc/interrupts", &t, err);
	if (r < 0)
		return r;
	ret->n_cpus = t.n_cols;
	for (int i = 0; i < t.n_rows; i++) {
		if (procfs_irqtab_numbered(&t, i))
			ret->device += procfs_irqtab_row_sum(&t, i);
		else if (strstr(t.rows[i].name, "TLB shootdowns")) {
			ret->tlb += procfs_irqtab_row_sum(&t, i);
			ret->has_tlb_line = true;
		}
	}
	procfs_irqtab_free(&t);
	return 0;
}

/* ---- perf events ------------------------------------------------------- */

/* The events of struct obs_perf, by its enum: perf's type and config, and
 * the name perf(1) gives the event. */
static const struct perf_event_row {
	uint32_t type;
	uint64_t config;
	const char *name;
} perf_events[OBS_PERF_N] = {
	[OBS_PERF_MIGRATIONS] = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "cpu-migrations" },
	[OBS_PERF_SWITCHES] = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "context-switches" },
	[OBS_PERF_FAULTS] = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "page-faults" },
};

static int perf_open(int pid, const struct perf_event_row *ev, bool exclude_kernel)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = ev->type;
	a.config = ev->config;
	a.disabled = 1;
	a.inherit = 1;
	a.enable_on_exec = 1;
	a.exclude_kernel = exclude_kernel;
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

void obs_perf_open(struct obs_perf *p, int pid)
{
	bool excl = false;

	memset(p, 0, sizeof(*p));
	for (int i = 0; i < OBS_PERF_N; i++)
		p->fd[i] = -1;
	for (int i = 0; i < OBS_PERF_N; i++) {
		p->fd[i] = perf_open(pid, &perf_events[i], excl);
		if (p->fd[i] < 0 && errno == EACCES && !excl) {
			/* perf_event_paranoid 2: user space only (software
			 * events still count the task's switches and faults) */
			excl = true;
			p->fd[i] = perf_open(pid, &perf_events[i], excl);
		}
		if (p->fd[i] < 0) {
			snprintf(p->why, sizeof(p->why), "perf_event_open: %s%s", nt_strerror(errno),
				 errno == EACCES || errno == EPERM ? " (kernel.perf_event_paranoid, or a seccomp filter)" :
				 errno == ENOSYS || errno == ENOENT ? " (no perf events in this kernel)" : "");
			obs_perf_close(p);
			return;
		}
	}
	p->ok = true;
}

int obs_perf_read(const struct obs_perf *p, uint64_t out[OBS_PERF_N])
{
	for (int i = 0; i < OBS_PERF_N; i++) {
		out[i] = 0;
		if (!p->ok || read(p->fd[i], &out[i], sizeof(out[i])) != sizeof(out[i]))
			return -EIO;
	}
	return 0;
}

void obs_perf_close(struct obs_perf *p)
{
	for (int i = 0; i < OBS_PERF_N; i++) {
		if (p->fd[i] >= 0)
			close(p->fd[i]);
		p->fd[i] = -1;
	}
	p->ok = false;
}
