/* observe.c — see observe.h. */
#include "observe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#define BIG (1u << 22)   /* /proc/stat of a 4096-CPU host fits */

int obs_read_stat(const struct fsroot *root, const char *relpath, struct obs_stat *ret,
		  struct nt_err *err)
{
	char *buf = malloc(BIG), *line, *save = NULL, disp[4096];
	struct obs_stat *st = calloc(1, sizeof(*st));
	ssize_t n;
	int lineno = 0, r = 0;

	if (!buf || !st) {
		free(buf);
		free(st);
		return err_set(err, -ENOMEM, "out of memory");
	}
	fsroot_display(root, relpath, disp, sizeof(disp));
	n = fsroot_read(root, relpath, buf, BIG);
	if (n < 0) {
		r = n == -ENOENT ? -ENOENT : err_set(err, (int)n, "%s: %s", disp, strerror((int)-n));
		goto out;
	}
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
			r = err_set(err, -EINVAL, "%s:%d: expected 'cpuN user nice system idle ...', got '%.60s'",
				    disp, lineno, line);
			goto out;
		}
		st->present[cpu] = true;
		st->cpu[cpu] = (struct obs_cpu){ v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7] };
		if ((int)cpu + 1 > st->n_cpus)
			st->n_cpus = (int)cpu + 1;
	}
	if (st->n_cpus == 0)
		r = err_set(err, -EINVAL, "%s: no 'cpuN' lines: not a /proc/stat", disp);
	else
		*ret = *st;
out:
	free(buf);
	free(st);
	return r;
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
	char *buf = malloc(BIG), *line, *save = NULL;
	size_t kl = strlen(key);
	int64_t v = -1;

	if (!buf || fsroot_read(root, "proc/vmstat", buf, BIG) < 0) {
		free(buf);
		return -1;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t u;

		if (!strncmp(line, key, kl) && line[kl] == ' ' && parse_u64(line + kl + 1, INT64_MAX, &u) == 0) {
			v = (int64_t)u;
			break;
		}
	}
	free(buf);
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
			  char *path, size_t size, uint64_t *thr, uint64_t *per)
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
		scan_cpu_stat(root, sub, depth - 1, worst, path, size, thr, per);
	}
	fsroot_names_free(names);
}

double obs_worst_throttling(const struct fsroot *root, char *path, size_t size,
			    uint64_t *ret_throttled, uint64_t *ret_periods)
{
	static const char *const roots[] = { "sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup" };
	double worst = 0;

	path[0] = '\0';
	*ret_throttled = *ret_periods = 0;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		scan_cpu_stat(root, roots[i], 3, &worst, path, size, ret_throttled, ret_periods);
	return worst;
}
