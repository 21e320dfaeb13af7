/* SPDX-License-Identifier: MIT */
/* doctor.c — see doctor.h.
 *
 * Divisions: report helpers; one function per hazard; the table; output.
 */
#include "observe/doctor.h"
#include "observe/doctor_test.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cpulist.h"
#include "observe/obs.h"
#include "observe/tlb.h"
#include "base/parse.h"
#include "tune/jobstate.h"

/* ---- report helpers ---------------------------------------------------- */

static struct doctor_hazard *hazard(struct doctor_findings *rep, const char *code)
{
	struct doctor_hazard *tmp = realloc(rep->hazards, (rep->n + 1) * sizeof(*tmp));

	if (!tmp)
		return NULL;
	rep->hazards = tmp;
	memset(&tmp[rep->n], 0, sizeof(tmp[rep->n]));
	snprintf(tmp[rep->n].code, sizeof(tmp[rep->n].code), "%s", code);
	return &tmp[rep->n++];
}

#define note(rep, ...) log_note_add((rep)->notes, &(rep)->n_notes, DOCTOR_MAX_NOTES, __VA_ARGS__)

void doctor_findings_release(struct doctor_findings *rep)
{
	if (!rep)
		return;
	free(rep->hazards);
	for (unsigned i = 0; i < rep->n_notes; i++)
		free(rep->notes[i]);
	memset(rep, 0, sizeof(*rep));
}

struct ctx {
	const struct fsroot *root;
	const struct topo *t;
	const struct kstate *ks;
	const struct doctor_config *cfg;
	struct doctor_findings *rep;
	struct nt_err *err;
};

#define FILL(h, field, ...) snprintf((h)->field, sizeof((h)->field), __VA_ARGS__)

/* A /proc/vmstat counter for evidence: its value, or "unknown" when absent. */
static const char *vm(const struct fsroot *root, const char *key, char buf[24])
{
	int64_t v = obs_vmstat(root, key);

	if (v < 0)
		return "unknown";
	snprintf(buf, 24, "%lld", (long long)v);
	return buf;
}

/* ---- the hazards ------------------------------------------------------- */

static int check_zombie_memcg(struct ctx *x)
{
	long kernel, live;
	struct doctor_hazard *h;

	obs_memcg(x->root, &kernel, &live);
	if (kernel < 0 || live < 0) {
		note(x->rep, "zombie-memcg: no memory cgroup counts (/proc/cgroups or the memory hierarchy missing)");
		return 0;
	}
	x->rep->checks++;
	/* dying groups linger while page cache charged to them is alive; a
	 * few hundred is normal, tens of thousands make memcg walks slow */
	if (kernel - live < 1000 || kernel < 4 * live)
		return 0;
	if (!(h = hazard(x->rep, "zombie-memcg")))
		return -ENOMEM;
	FILL(h, summary, "%ld dying (zombie) memory cgroups: memcg walks (kubelet stats, reclaim) cost whole cores in %%sys", kernel - live);
	FILL(h, evidence, "/proc/cgroups counts %ld memory cgroups, only %ld live directories in the memory hierarchy", kernel, live);
	FILL(h, fix, "find what creates and removes cgroups (container runtime, systemd scopes, kubelet); reclaim their page cache (echo 1 > /proc/sys/vm/drop_caches); consider cgroup.memory=nokmem or a kernel that reparents charges");
	return 0;
}

/* Samples of /proc/stat: a captured series (proc/stat.series/NNN) when the
 * tree holds one, else live sampling every interval for the window. */
static int sys_samples(struct ctx *x, struct obs_stat **ret, int *ret_n, double *ret_interval)
{
	char **names = NULL, path[256];
	int n = fsroot_list(x->root, "proc/stat.series", &names), k = 0, r = 0;
	struct obs_stat *s;

	if (n > 0) {
		s = calloc((size_t)n, sizeof(*s));
		for (int i = 0; s && i < n && r == 0; i++) {
			snprintf(path, sizeof(path), "proc/stat.series/%s", names[i]);
			r = obs_read_stat(x->root, path, &s[k++], x->err);
		}
		fsroot_names_free(names);
		if (!s)
			return err_set(x->err, -ENOMEM, "out of memory");
		if (r < 0) {
			free(s);
			return r;
		}
		*ret = s;
		*ret_n = k;
		*ret_interval = x->cfg->interval_s;
		return 0;
	}
	n = (int)(x->cfg->window_s / x->cfg->interval_s) + 1;
	s = calloc((size_t)n, sizeof(*s));
	if (!s)
		return err_set(x->err, -ENOMEM, "out of memory");
	for (k = 0; k < n; k++) {
		struct timespec ts = { (time_t)x->cfg->interval_s,
				       (long)((x->cfg->interval_s - (time_t)x->cfg->interval_s) * 1e9) };

		r = obs_read_stat(x->root, "proc/stat", &s[k], x->err);
		if (r < 0) {
			free(s);
			return r;
		}
		if (k + 1 < n)
			nanosleep(&ts, NULL);
	}
	*ret = s;
	*ret_n = n;
	*ret_interval = x->cfg->interval_s;
	return 0;
}

static int check_sys_saturated(struct ctx *x)
{
	struct obs_stat *s = NULL;
	double interval = 0, avg = 0;
	int n = 0, cpu, run, r;
	struct doctor_hazard *h;

	r = sys_samples(x, &s, &n, &interval);
	if (r == -ENOENT) {
		note(x->rep, "sys-saturated-core: no /proc/stat");
		return 0;
	}
	if (r < 0)
		return r;
	x->rep->checks++;
	run = obs_longest_sys_run(s, n, 95.0, &cpu, &avg);
	free(s);
	if (run * interval < 1.0 - 1e-9 || avg >= 60.0)
		return 0;
	if (!(h = hazard(x->rep, "sys-saturated-core")))
		return -ENOMEM;
	FILL(h, summary, "CPU %d spent >= 95%% in the kernel for %.1f s while all CPUs averaged %.0f%%: averages hide it", cpu, run * interval, avg);
	FILL(h, evidence, "/proc/stat sampled every %.0f ms: CPU %d system+irq+softirq time >= 95%% for %d consecutive samples", interval * 1e3, cpu, run);
	FILL(h, fix, "find the kernel path with `perf top -C %d` (memcg walks, NAPI/softirq, page reclaim); keep device IRQs and ranks off that CPU ([irq] devices = housekeeping)", cpu);
	return 0;
}

static int check_thp_defrag(struct ctx *x)
{
	struct doctor_hazard *h;

	if (!x->ks->thp_defrag[0]) {
		note(x->rep, "thp-defrag-always: THP defrag unknown");
		return 0;
	}
	x->rep->checks++;
	if (strcmp(x->ks->thp_defrag, "always"))
		return 0;
	if (!(h = hazard(x->rep, "thp-defrag-always")))
		return -ENOMEM;
	FILL(h, summary, "THP defrag=always: page faults stall in direct compaction");
	char b1[24];

	FILL(h, evidence, "/sys/kernel/mm/transparent_hugepage/defrag selects [always]; compact_stall so far: %s",
	     vm(x->root, "compact_stall", b1));
	FILL(h, fix, "set defrag to defer+madvise or madvise ([thp] defrag = defer+madvise, as --policy gpu-train does)");
	return 0;
}

static int check_numa_balancing(struct ctx *x)
{
	struct doctor_hazard *h;

	if (x->ks->numa_balancing < 0) {
		note(x->rep, "numa-balancing-on: kernel.numa_balancing unknown");
		return 0;
	}
	x->rep->checks++;
	if (x->ks->numa_balancing == 0 || x->t->n_numa < 2)
		return 0;
	if (!(h = hazard(x->rep, "numa-balancing-on")))
		return -ENOMEM;
	FILL(h, summary, "automatic NUMA balancing is on on a %u-node host: hinting faults and migrations hit rank-bound memory", x->t->n_numa);
	char b1[24], b2[24];

	FILL(h, evidence, "kernel.numa_balancing=%d; numa_hint_faults %s, numa_pages_migrated %s so far",
	     x->ks->numa_balancing, vm(x->root, "numa_hint_faults", b1), vm(x->root, "numa_pages_migrated", b2));
	FILL(h, fix, "bind ranks and memory to their GPU's node and turn balancing off ([sched] numa_balancing = 0, as --policy gpu-train does); prove it with an A/B run first: on some hosts balancing helps");
	return 0;
}

static int check_irqs(struct ctx *x)
{
	hwloc_bitmap_t ranks, aff;
	struct doctor_hazard *h = NULL;
	char list[256] = "", rl[256];
	size_t used = 0;
	int found = 0;

	if (!x->cfg->plan) {
		note(x->rep, "irq-on-rank-cpus: needs --policy FILE|NAME to know the ranks' CPUs");
		return 0;
	}
	ranks = hwloc_bitmap_alloc();
	aff = hwloc_bitmap_alloc();
	if (!ranks || !aff) {
		hwloc_bitmap_free(ranks);
		hwloc_bitmap_free(aff);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < x->cfg->plan->n_ranks; i++)
		if (x->cfg->plan->ranks[i].cpus)
			hwloc_bitmap_or(ranks, ranks, x->cfg->plan->ranks[i].cpus);
	if (hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(x->t->hw), ranks)) {
		/* a policy that keeps no CPU free of ranks (gpu-train on a host
		 * without GPUs keeps no housekeeping core) leaves an IRQ nowhere
		 * else to go: not a hazard that moving IRQs could fix */
		note(x->rep, "irq-on-rank-cpus: skipped, the policy's ranks use every CPU: no CPU is left for device IRQs");
		hwloc_bitmap_free(ranks);
		hwloc_bitmap_free(aff);
		return 0;
	}
	x->rep->checks++;
	for (unsigned d = 0; d < x->t->n_gpus + x->t->n_nics && !hwloc_bitmap_iszero(ranks); d++) {
		const struct topo_dev *dev = d < x->t->n_gpus ? &x->t->gpus[d] : &x->t->nics[d - x->t->n_gpus];
		char dir[128], **names = NULL, path[64], val[256];
		int k;

		snprintf(dir, sizeof(dir), "sys/bus/pci/devices/%s/msi_irqs", dev->pci_bus_id);
		k = fsroot_list(x->root, dir, &names);
		for (int i = 0; i < k; i++) {
			uint64_t irq;

			snprintf(path, sizeof(path), "proc/irq/%s/smp_affinity_list", names[i]);
			if (parse_u64(names[i], 1u << 24, &irq) || fsroot_read(x->root, path, val, sizeof(val)) < 0 ||
			    cpulist_parse(val, aff) < 0 || !hwloc_bitmap_intersects(aff, ranks))
				continue;
			if (found++ < 6 && used < sizeof(list))
				used += (size_t)snprintf(list + used, sizeof(list) - used, "%sIRQ %llu (%s) on CPUs %s",
							 found > 1 ? ", " : "", (unsigned long long)irq, dev->pci_bus_id, val);
		}
		fsroot_names_free(names);
	}
	if (found) {
		cpulist_format(ranks, rl, sizeof(rl));
		if ((h = hazard(x->rep, "irq-on-rank-cpus"))) {
			FILL(h, summary, "%d device IRQ(s) may land on CPUs the ranks use: interrupts and softirq work preempt training threads", found);
			FILL(h, evidence, "ranks use CPUs %s; %s%s", rl, list, found > 6 ? ", ..." : "");
			FILL(h, fix, "move device IRQs to housekeeping CPUs ([affinity] housekeeping = auto, [irq] devices = housekeeping) and stop irqbalance from undoing it");
		}
	}
	hwloc_bitmap_free(ranks);
	hwloc_bitmap_free(aff);
	return found && !h ? -ENOMEM : 0;
}

static int check_governor(struct ctx *x)
{
	struct doctor_hazard *h;

	if (!x->ks->governor[0]) {
		note(x->rep, "governor: no cpufreq (a VM, or no driver)");
		return 0;
	}
	x->rep->checks++;
	if (!strcmp(x->ks->governor, "performance"))
		return 0;
	if (!(h = hazard(x->rep, "governor")))
		return -ENOMEM;
	FILL(h, summary, "CPU frequency governor '%s': cores ramp up late after the idle gaps of communication and data waits", x->ks->governor);
	FILL(h, evidence, "cpufreq scaling_governor is %s on %s CPUs", x->ks->governor,
	     strcmp(x->ks->governor, "mixed") ? "all" : "different");
	FILL(h, fix, "use the performance governor on training hosts ([sched] governor = performance, as --policy gpu-train does)");
	return 0;
}

/* vm.swappiness as the kernel holds it, or -1 unknown. */
static int swappiness(const struct fsroot *root)
{
	const struct knob *k = &knob_table[KNOB_SYSCTL_VM_SWAPPINESS];
	char buf[32];
	uint64_t v;

	if (knob_read_effective(root, k, k->path, buf, sizeof(buf)) < 0 || parse_u64(buf, 200, &v))
		return -1;
	return (int)v;
}

/* Swap is a hazard while the kernel will use it for anonymous memory:
 * vm.swappiness 0 keeps training memory in RAM until the page cache is
 * gone, which is what a policy can do about it. */
static int check_swap(struct ctx *x)
{
	struct doctor_hazard *h;
	int sw;

	if (x->ks->swap_total_bytes < 0) {
		note(x->rep, "swap-on: SwapTotal unknown");
		return 0;
	}
	x->rep->checks++;
	sw = swappiness(x->root);
	if (x->ks->swap_total_bytes == 0 || sw == 0)
		return 0;
	if (!(h = hazard(x->rep, "swap-on")))
		return -ENOMEM;
	FILL(h, summary, "swap is on: training memory can be swapped out and come back as major faults in the step loop");
	char b1[24], b2[24], b3[24] = "unknown";

	if (sw > 0)
		snprintf(b3, sizeof(b3), "%d", sw);
	FILL(h, evidence, "SwapTotal %.1f GiB, vm.swappiness %s; pswpin %s, pswpout %s so far",
	     x->ks->swap_total_bytes / 1073741824.0, b3, vm(x->root, "pswpin", b1), vm(x->root, "pswpout", b2));
	FILL(h, fix, "set [sysctl] vm.swappiness = 0 (as --policy gpu-train does), or turn swap off on training hosts (swapoff -a)");
	return 0;
}

static int check_throttling(struct ctx *x)
{
	char path[4096];
	uint64_t thr, per;
	double ratio = obs_worst_throttling(x->root, path, sizeof(path), &thr, &per);
	struct doctor_hazard *h;

	x->rep->checks++;
	if (ratio < 0.05)
		return 0;
	if (!(h = hazard(x->rep, "cgroup-throttling")))
		return -ENOMEM;
	FILL(h, summary, "a cgroup's CPU quota throttles it in %.0f%% of periods: its threads stop mid-step", ratio * 100);
	FILL(h, evidence, "/%.400s: nr_throttled %llu of nr_periods %llu", path, (unsigned long long)thr, (unsigned long long)per);
	FILL(h, fix, "raise or remove the CPU quota of that cgroup (cpu.max / cpu.cfs_quota_us), or give the job whole CPUs (cpuset) instead of a quota");
	return 0;
}

/* Slurm jobs whose epilog could not revert them (tune/jobstate.h): the node
 * keeps their settings until a retry. */
static int check_slurm_pending(struct ctx *x)
{
	struct jobstate *js = NULL;
	struct doctor_hazard *h = NULL;
	char base[200], list[280] = "";
	size_t used = 0;
	int n = jobstate_list(x->root, JOBSTATE_DIR, &js), found = 0, first = -1;

	fsroot_display(x->root, JOBSTATE_DIR, base, sizeof(base));
	if (n < 0 && n != -ENOENT) {
		note(x->rep, "slurm-revert-pending: cannot list %s: %s", base, nt_strerror(-n));
		return n == -ENOMEM ? n : 0;
	}
	x->rep->checks++;
	for (int i = 0; i < n; i++)
		if (js[i].pending && found++ < 4 && used < sizeof(list)) {
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%sjob %u (%s)", found > 1 ? "; " : "",
						 js[i].job, js[i].why);
			first = first < 0 ? i : first;
		}
	if (found && (h = hazard(x->rep, "slurm-revert-pending"))) {
		FILL(h, summary, "%d Slurm job%s ended with %s settings still on the node: the epilog's revert failed and is pending",
		     found, found == 1 ? "" : "s", found == 1 ? "its" : "their");
		FILL(h, evidence, "%.160s holds the journal and the epilog's " JOBSTATE_PENDING " of %.280s%s", base, list,
		     found > 4 ? "; ..." : "");
		FILL(h, fix, "find why in slurmd's log and mend it, then `nodetune revert --state-dir %.160s/%u` (the next job's prolog and the daemon's start retry it; until then no job gets host-wide settings)",
		     base, js[first].job);
	}
	free(js);
	return found && !h ? -ENOMEM : 0;
}

/* ---- the table --------------------------------------------------------- */

/* A row: the hazard's code, its check, and the policy key that fixes it
 * with the value that does (a policy setting it so makes a host it is
 * applied on pass the check), or KNOB_COUNT where no policy key can: the
 * row's fix text then says what to do instead. */
static const struct doctor_row {
	const char *code;
	int (*check)(struct ctx *x);
	enum knob_id knob;
	const char *value;
} checks[] = {
	{ "zombie-memcg", check_zombie_memcg, KNOB_COUNT, NULL },
	{ "sys-saturated-core", check_sys_saturated, KNOB_COUNT, NULL },
	{ "thp-defrag-always", check_thp_defrag, KNOB_THP_DEFRAG, "defer+madvise" },
	{ "numa-balancing-on", check_numa_balancing, KNOB_SCHED_NUMA_BALANCING, "0" },
	{ "irq-on-rank-cpus", check_irqs, KNOB_IRQ_DEVICES, "housekeeping" },
	{ "governor", check_governor, KNOB_SCHED_GOVERNOR, "performance" },
	{ "swap-on", check_swap, KNOB_SYSCTL_VM_SWAPPINESS, "0" },
	{ "cgroup-throttling", check_throttling, KNOB_COUNT, NULL },
	{ "slurm-revert-pending", check_slurm_pending, KNOB_COUNT, NULL },
};

#define N_CHECKS (sizeof(checks) / sizeof(checks[0]))

unsigned doctor_hazard_count(void)
{
	return N_CHECKS;
}

const char *doctor_hazard_code(unsigned i, enum knob_id *ret_knob, const char **ret_value)
{
	if (i >= N_CHECKS)
		return NULL;
	if (ret_knob)
		*ret_knob = checks[i].knob;
	if (ret_value)
		*ret_value = checks[i].value;
	return checks[i].code;
}

/* ---- counters a host may not produce ------------------------------------ */

/* Each probe fills st: countable, and its source or why not. */
static void probe_tlb(const struct fsroot *root, struct doctor_counter_state *st)
{
	struct tlb_counter tlb;

	tlb_counter_open(&tlb, root, tlb_sources_from_env());
	st->countable = tlb_counter_countable(&tlb);
	snprintf(st->detail, sizeof(st->detail), "%s", tlb.why);
	tlb_counter_close(&tlb);
}

static void probe_psi(const struct fsroot *root, struct doctor_counter_state *st)
{
	struct obs_psi psi;

	obs_read_psi(root, &psi);
	st->countable = psi.present;
	snprintf(st->detail, sizeof(st->detail), "%s", psi.present ? "proc/pressure" :
		 "no proc/pressure: a kernel without CONFIG_PSI, or booted with psi=0");
}

static void probe_perf(const struct fsroot *root, struct doctor_counter_state *st)
{
	struct obs_perf perf;

	if (!fsroot_is_host(root))
		return; /* a captured tree: perf events are the live host's, not asked (detail "") */
	/* this process: the software counters ab uses per trial */
	obs_perf_open(&perf, 0);
	st->countable = perf.ok;
	snprintf(st->detail, sizeof(st->detail), "%s",
		 perf.ok ? "perf_event_open (cpu-migrations, context-switches, page-faults)" : perf.why);
	obs_perf_close(&perf);
}

static const struct {
	const char *name;             /* in text */
	const char *key;              /* in JSON */
	const char *source;           /* where it is counted from */
	void (*probe)(const struct fsroot *root, struct doctor_counter_state *st);
} counter_rows[DC_N] = {
	[DC_TLB] = { "TLB shootdowns", "tlb_shootdowns", "/proc/interrupts TLB line, or perf (tlb.h)", probe_tlb },
	[DC_PSI] = { "PSI", "psi", "/proc/pressure/{cpu,memory,io}", probe_psi },
	[DC_PERF] = { "perf events", "perf_events", "perf_event_open software counters", probe_perf },
};

const char *doctor_counter_name(enum doctor_counter c)
{
	return (unsigned)c < DC_N ? counter_rows[c].name : "?";
}

static void counter_states(const struct fsroot *root, struct doctor_counter_state st[DC_N])
{
	for (enum doctor_counter c = 0; c < DC_N; c++)
		counter_rows[c].probe(root, &st[c]);
}

int doctor_run(const struct fsroot *root, const struct topo *t, const struct kstate *ks,
	       const struct doctor_config *cfg, struct doctor_findings *rep, struct nt_err *err)
{
	struct ctx x = { root, t, ks, cfg, rep, err };

	memset(rep, 0, sizeof(*rep));
	for (size_t i = 0; i < N_CHECKS; i++) {
		int r = checks[i].check(&x);

		if (r < 0) {
			if (r == -ENOMEM)
				err_set(err, r, "out of memory");
			doctor_findings_release(rep);
			return r;
		}
	}
	counter_states(root, rep->counters);
	return 0;
}

/* ---- output ------------------------------------------------------------ */

json_t *doctor_json(const struct doctor_findings *rep)
{
	json_t *doc = json_object(), *hz = json_array(), *notes = json_array();

	if (!doc || !hz || !notes) {
		json_decref(doc);
		json_decref(hz);
		json_decref(notes);
		return NULL;
	}
	for (unsigned i = 0; i < rep->n; i++)
		json_array_append_new(hz, json_pack("{s:s, s:s, s:s, s:s}", "code", rep->hazards[i].code,
						    "summary", rep->hazards[i].summary, "evidence",
						    rep->hazards[i].evidence, "fix", rep->hazards[i].fix));
	for (unsigned i = 0; i < rep->n_notes; i++)
		json_array_append_new(notes, json_string(rep->notes[i]));
	json_object_set_new(doc, "checks", json_integer(rep->checks));
	json_object_set_new(doc, "hazards", hz);
	json_object_set_new(doc, "skipped", notes);
	{
		json_t *ctr = json_object();

		for (enum doctor_counter c = 0; c < DC_N; c++)
			if (rep->counters[c].detail[0])
				json_object_set_new(ctr, counter_rows[c].key, json_pack("{s:b, s:s}", "countable", rep->counters[c].countable,
								    "detail", rep->counters[c].detail));
		json_object_set_new(doc, "counters", ctr);
	}
	return doc;
}

int doctor_print(FILE *out, const struct doctor_findings *rep, const char *tree, bool counters)
{
	fprintf(out, "%u hazard%s found by %u checks\n", rep->n, rep->n == 1 ? "" : "s", rep->checks);
	for (unsigned i = 0; i < rep->n; i++)
		fprintf(out, "\n! %s: %s\n    evidence: %s\n    fix: %s\n", rep->hazards[i].code,
			rep->hazards[i].summary, rep->hazards[i].evidence, rep->hazards[i].fix);
	if (rep->n_notes)
		fprintf(out, "\nskipped:\n");
	for (unsigned i = 0; i < rep->n_notes; i++)
		fprintf(out, "  %s\n", rep->notes[i]);
	if (counters)
		fprintf(out, "\ncounters:\n");
	for (enum doctor_counter c = 0; counters && c < DC_N; c++) {
		const struct doctor_counter_state *st = &rep->counters[c];

		if (!st->detail[0])
			continue;
		if (st->countable)
			fprintf(out, "  %s: counted from %s\n", doctor_counter_name(c), st->detail);
		else
			fprintf(out, "  %s: not countable %s%s (%s)\n", doctor_counter_name(c), tree ? "in " : "on this host",
				tree ? tree : "", st->detail);
	}
	return ferror(out) ? -EIO : 0;
}
