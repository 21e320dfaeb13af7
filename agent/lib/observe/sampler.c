/* SPDX-License-Identifier: MIT */
/* sampler.c — see sampler.h.
 *
 * Divisions: the vmstat counter table; setup; taking a sample (vmstat,
 * descendants of the set); what changed between two samples (JSON, text).
 */
#include "observe/sampler.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nt_clock.h"
#include "base/parse.h"
#include "observe/procfs.h"

#define VM_ROW(id, field, u) [id] = { .name = field, .unit = u, .source = "/proc/vmstat " field }

const struct sampler_counter sampler_vm_counters[SAMPLER_VM] = {
	VM_ROW(SV_THP_FAULT_ALLOC, "thp_fault_alloc", "faults"),
	VM_ROW(SV_THP_FAULT_FALLBACK, "thp_fault_fallback", "faults"),
	VM_ROW(SV_COMPACT_STALL, "compact_stall", "stalls"),
	VM_ROW(SV_COMPACT_FAIL, "compact_fail", "compactions"),
	VM_ROW(SV_NUMA_HINT_FAULTS, "numa_hint_faults", "faults"),
	VM_ROW(SV_NUMA_PAGES_MIGRATED, "numa_pages_migrated", "pages"),
	VM_ROW(SV_NUMA_MISS, "numa_miss", "pages"),
	VM_ROW(SV_PGFAULT, "pgfault", "faults"),
	VM_ROW(SV_PGMAJFAULT, "pgmajfault", "faults"),
};

int sampler_init(struct sampler *s, const char *root, const int *pids, int n_pids, bool children)
{
	memset(s, 0, sizeof(*s));
	s->root = fsroot_open(root);
	if (!s->root)
		return -errno;
	fsroot_cache_enable(s->root, true);     /* the same files ten times a second */
	s->n_pids = n_pids < SAMPLER_MAX_PIDS ? n_pids : SAMPLER_MAX_PIDS;
	if (pids && s->n_pids > 0)           /* memcpy from NULL is undefined, even of 0 bytes */
		memcpy(s->pids, pids, (size_t)s->n_pids * sizeof(int));
	else
		s->n_pids = 0;
	s->children = children;
	s->t0 = nt_mono_s();
	s->ticks_per_s = sysconf(_SC_CLK_TCK);
	tlb_counter_open(&s->tlb, s->root, tlb_sources_from_env());
	return 0;
}

void sampler_release(struct sampler *s)
{
	tlb_counter_close(&s->tlb);
	fsroot_free(s->root);
	s->root = NULL;
}

int sampler_uncountable(const struct sampler *s, char *buf, size_t size)
{
	struct obs_psi psi;
	int n = 0;
	size_t len;

	buf[0] = '\0';
	if (!tlb_counter_countable(&s->tlb)) {
		snprintf(buf, size, "TLB shootdowns: not countable on this host (%s)", s->tlb.why);
		n++;
	}
	obs_read_psi(s->root, &psi);
	if (!psi.present) {
		len = strlen(buf);
		snprintf(buf + len, size - len, "%sPSI: not countable on this host (no proc/pressure: a kernel "
			 "without CONFIG_PSI, or booted with psi=0)", n ? "; " : "");
		n++;
	}
	return n;
}

void sampler_snap_release(struct sampler_snap *snap)
{
	free(snap->stat);
	snap->stat = NULL;
}

/* the reader of every sampler_vm_counters row: all of /proc/vmstat in one
 * read */
static void read_vm(const struct fsroot *root, int64_t vm[SAMPLER_VM])
{
	static char buf[1 << 16];
	char *line, *save = NULL;

	for (enum sampler_vm k = 0; k < SAMPLER_VM; k++)
		vm[k] = -1;
	if (fsroot_read(root, "proc/vmstat", buf, sizeof(buf)) < 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		for (enum sampler_vm k = 0; k < SAMPLER_VM; k++)
			if (!strcmp(line, sampler_vm_counters[k].name))
				vm[k] = strtoll(sp + 1, NULL, 10);
	}
}

/* add every descendant of the set (one pass over proc/N/stat for the
 * parent links, then a closure) */
static void add_descendants(struct sampler *s)
{
	char **names = NULL, rel[64];
	int n = fsroot_list(s->root, "proc", &names), m = 0;
	int (*link)[2] = n > 0 ? calloc((size_t)n, sizeof(*link)) : NULL;

	if (!link) {
		if (n > 0)
			fsroot_names_free(names);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct procfs_pid_stat st;
		int pid;

		if (parse_int(names[i], 1, INT_MAX, &pid) < 0)
			continue;       /* not a process: "self", "sys", ... */
		snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
		if (procfs_pid_stat_read(s->root, rel, &st, NULL) < 0)
			continue;       /* gone meanwhile */
		link[m][0] = pid;
		link[m++][1] = st.ppid;
	}
	for (bool grew = true; grew && s->n_pids < SAMPLER_MAX_PIDS;) {
		grew = false;
		for (int i = 0; i < m && s->n_pids < SAMPLER_MAX_PIDS; i++) {
			bool parent_in = false, in = false;

			for (int k = 0; k < s->n_pids; k++) {
				parent_in |= s->pids[k] == link[i][1];
				in |= s->pids[k] == link[i][0];
			}
			if (parent_in && !in) {
				s->pids[s->n_pids++] = link[i][0];
				grew = true;
			}
		}
	}
	free(link);
	fsroot_names_free(names);
}

void sampler_take(struct sampler *s, struct sampler_snap *snap)
{
	struct nt_err err = { 0 };
	struct obs_stat *keep = snap->stat;

	memset(snap, 0, sizeof(*snap));
	snap->stat = keep ? keep : malloc(sizeof(*snap->stat));
	snap->slow = s->n % SAMPLER_SLOW_EVERY == 0;
	snap->t = nt_mono_s() - s->t0;
	/* children: every sample in the first 2 s (a launcher starting its
	 * ranks), then with the slow scans */
	if (s->children && (snap->slow || snap->t < 2.0))
		add_descendants(s);
	if (snap->stat && obs_read_stat(s->root, "proc/stat", snap->stat, &err) < 0) {
		free(snap->stat);
		snap->stat = NULL;
	}
	read_vm(s->root, snap->vm);
	if (obs_read_interrupts(s->root, &snap->irq, &err) < 0)
		memset(&snap->irq, 0, sizeof(snap->irq));
	snap->tlb_ok = tlb_counter_read(&s->tlb, &snap->tlb) == 0;
	obs_read_psi(s->root, &snap->psi);
	if (snap->slow) {
		snap->throttled = obs_total_throttled(s->root);
		obs_memcg(s->root, &snap->memcg_kernel, &snap->memcg_live);
	}
	snap->n_procs = s->n_pids;
	for (int i = 0; i < s->n_pids; i++)
		if (obs_read_proc(s->root, s->pids[i], &snap->proc[i], &err) < 0)
			snap->proc[i].pid = -s->pids[i];      /* gone */
	fsroot_cache_sweep(s->root);             /* close the files of exited threads */
	s->n++;
}

int sampler_alive(const struct sampler_snap *b)
{
	int n = 0;

	for (int i = 0; i < b->n_procs; i++)
		n += b->proc[i].pid > 0;
	return n;
}

static uint64_t cpu_total(const struct obs_cpu *c)
{
	return c->user + c->nice + c->system + c->idle + c->iowait + c->irq + c->softirq + c->steal;
}

/* %usr and %sys of cpu c from a to b; false when it is not in both or no
 * time passed */
static bool cpu_delta(const struct sampler_snap *a, const struct sampler_snap *b, int c, double *usr, double *sys)
{
	const struct obs_cpu *x = &a->stat->cpu[c], *y = &b->stat->cpu[c];
	double tot = (double)(cpu_total(y) - cpu_total(x));

	if (!b->stat->present[c] || !a->stat->present[c] || tot <= 0)
		return false;
	*usr = 100.0 * (double)(y->user + y->nice - x->user - x->nice) / tot;
	*sys = 100.0 * (double)(y->system + y->irq + y->softirq - x->system - x->irq - x->softirq) / tot;
	return true;
}

/* process i at a and b, when it is alive at b and was sampled at a too */
static bool proc_pair(const struct sampler_snap *a, const struct sampler_snap *b, int i, const struct obs_proc **x,
		      const struct obs_proc **y)
{
	*y = &b->proc[i];
	*x = i < a->n_procs && a->proc[i].pid == (*y)->pid ? &a->proc[i] : NULL;
	return (*y)->pid > 0 && *x;     /* else gone, or new in this sample: no interval yet */
}

static double proc_cpu_pct(const struct sampler *s, const struct obs_proc *x, const struct obs_proc *y, double dt)
{
	return dt > 0 ? 100.0 * (double)(y->utime + y->stime - x->utime - x->stime) / (double)s->ticks_per_s / dt : 0;
}

/* A count that obs_memcg() could not read (-1) is null, not a number. */
static json_t *count_or_null(long n)
{
	return n >= 0 ? json_integer((json_int_t)n) : json_null();
}

json_t *sampler_record(const struct sampler *s, const struct sampler_snap *a, const struct sampler_snap *b)
{
	json_t *rec = json_object(), *cpus = json_array(), *vm = json_object(), *procs = json_array();
	double dt = b->t - a->t, usr, sys;

	json_object_set_new(rec, "t", json_real(b->t));
	for (int c = 0; a->stat && b->stat && c < b->stat->n_cpus; c++)
		if (cpu_delta(a, b, c, &usr, &sys))
			json_array_append_new(cpus, json_pack("{s:i, s:f, s:f}", "cpu", c, "usr", usr, "sys", sys));
	json_object_set_new(rec, "cpus", cpus);
	for (enum sampler_vm k = 0; k < SAMPLER_VM; k++)
		if (a->vm[k] >= 0 && b->vm[k] >= 0)
			json_object_set_new(vm, sampler_vm_counters[k].name, json_integer(b->vm[k] - a->vm[k]));
	json_object_set_new(rec, "vmstat", vm);
	json_object_set_new(rec, "tlb_shootdowns", a->tlb_ok && b->tlb_ok ? json_integer((json_int_t)(b->tlb - a->tlb))
									 : json_null());
	json_object_set_new(rec, "device_irqs", json_integer((json_int_t)(b->irq.device - a->irq.device)));
	if (b->psi.present)
		json_object_set_new(rec, "psi_ms", json_pack("{s:f, s:f, s:f, s:f, s:f}",
			"cpu_some", (double)(b->psi.cpu_some_us - a->psi.cpu_some_us) / 1000,
			"memory_some", (double)(b->psi.mem_some_us - a->psi.mem_some_us) / 1000,
			"memory_full", (double)(b->psi.mem_full_us - a->psi.mem_full_us) / 1000,
			"io_some", (double)(b->psi.io_some_us - a->psi.io_some_us) / 1000,
			"io_full", (double)(b->psi.io_full_us - a->psi.io_full_us) / 1000));
	else
		json_object_set_new(rec, "psi_ms", json_null());
	if (b->slow) {
		json_object_set_new(rec, "nr_throttled_total", json_integer((json_int_t)b->throttled));
		json_object_set_new(rec, "memcg", json_pack("{s:o, s:o}", "kernel", count_or_null(b->memcg_kernel),
							    "live", count_or_null(b->memcg_live)));
	}
	for (int i = 0; i < b->n_procs; i++) {
		const struct obs_proc *x, *y;

		if (proc_pair(a, b, i, &x, &y))
			json_array_append_new(procs, json_pack("{s:i, s:i, s:f, s:I, s:I, s:f, s:i}", "pid", y->pid,
				"threads", y->n_threads, "cpu_pct", proc_cpu_pct(s, x, y, dt),
				"voluntary_switches", (json_int_t)(y->vol_switches - x->vol_switches),
				"involuntary_switches", (json_int_t)(y->invol_switches - x->invol_switches),
				"runqueue_wait_ms", (double)(y->wait_ns - x->wait_ns) / 1e6, "cpus_used", y->n_cpus_seen));
	}
	json_object_set_new(rec, "procs", procs);
	return rec;
}

void sampler_line(const struct sampler *s, const struct sampler_snap *a, const struct sampler_snap *b, char *buf,
		  size_t size)
{
	double usr = 0, sys = 0, max_sys = 0, dt = b->t - a->t, cpu_pct = 0, runq = 0, u, sy;
	int n = 0, max_cpu = -1, threads = 0;
	uint64_t invol = 0;
	char tlb[24] = "n/c", psi[24] = "n/c";

	if (a->tlb_ok && b->tlb_ok)
		snprintf(tlb, sizeof(tlb), "%llu", (unsigned long long)(b->tlb - a->tlb));
	if (b->psi.present)
		snprintf(psi, sizeof(psi), "%.1f ms", (double)(b->psi.cpu_some_us - a->psi.cpu_some_us) / 1000);
	for (int c = 0; a->stat && b->stat && c < b->stat->n_cpus; c++)
		if (cpu_delta(a, b, c, &u, &sy)) {
			usr += u;
			sys += sy;
			if (sy > max_sys) {
				max_sys = sy;
				max_cpu = c;
			}
			n++;
		}
	for (int i = 0; i < b->n_procs; i++) {
		const struct obs_proc *x, *y;

		if (!proc_pair(a, b, i, &x, &y))
			continue;
		threads += y->n_threads;
		cpu_pct += proc_cpu_pct(s, x, y, dt);
		invol += y->invol_switches - x->invol_switches;
		runq += (double)(y->wait_ns - x->wait_ns) / 1e6;
	}
	snprintf(buf, size,
		 "%7.2f s  usr %5.1f%% sys %5.1f%% (max cpu%d %5.1f%%)  pgfault %lld compact_stall %lld numa_hint %lld  "
		 "tlb %s irq %llu  psi cpu %s  procs %d/%d: %d threads %.0f%% cpu, %llu invol, runq %.1f ms",
		 b->t, n ? usr / n : 0, n ? sys / n : 0, max_cpu, max_sys,
		 (long long)(b->vm[SV_PGFAULT] - a->vm[SV_PGFAULT]),
		 (long long)(b->vm[SV_COMPACT_STALL] - a->vm[SV_COMPACT_STALL]),
		 (long long)(b->vm[SV_NUMA_HINT_FAULTS] - a->vm[SV_NUMA_HINT_FAULTS]),
		 tlb, (unsigned long long)(b->irq.device - a->irq.device), psi, sampler_alive(b), b->n_procs, threads, cpu_pct,
		 (unsigned long long)invol, runq);
}
