/* knob.c — the knob table and its helpers; see knob.h. */
#include "knob.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "parse.h"

static const char *const v_affinity[] = { "none", "numa", "gpu-local", "far-numa", NULL };
static const char *const v_memory[] = { "none", "bind", "preferred", "interleave", NULL };
static const char *const v_thp_enabled[] = { "always", "madvise", "never", NULL };
static const char *const v_thp_defrag[] = { "always", "defer", "defer+madvise", "madvise", "never", NULL };
static const char *const v_sched[] = { "other", "batch", "idle", "fifo", "rr", NULL };
static const char *const v_governor[] = {
	"performance", "powersave", "schedutil", "ondemand", "conservative", NULL,
};
static const char *const v_yesno[] = { "yes", "no", NULL };
static const char *const v_irq[] = { "leave", "housekeeping", NULL };

const char *const knob_sections[] = {
	"main", "affinity", "memory", "thp", "hugetlb", "sched", "cgroup", "irq", "sysctl", NULL,
};

#define SYSCTL(name, lo, hi, why) \
	{ "sysctl", name, KT_INT, NULL, lo, hi, KS_HOST, NULL, false, why }

const struct knob knob_table[] = {
	{ "main", "summary", KT_STRING, NULL, 0, 0, KS_META, NULL, false,
	  "one line saying what the policy is for" },
	{ "main", "include", KT_INCLUDE, NULL, 0, 0, KS_META, NULL, false,
	  "parent policies (comma-separated, relative to this file); this file overrides them" },

	{ "affinity", "mode", KT_ENUM, v_affinity, 0, 0, KS_RANK, NULL, false,
	  "CPUs of each local rank: none (unbound), numa (spread over NUMA nodes), gpu-local (CPUs local to the rank's GPU), far-numa (a far node: for demonstrations only)" },
	{ "affinity", "housekeeping", KT_CPUSPEC, NULL, 0, 0, KS_RANK, NULL, false,
	  "CPUs kept free of ranks (for IRQs, daemons): auto = one core per NUMA node that holds a GPU, none, or a cpulist" },
	{ "affinity", "export_gpu", KT_ENUM, v_yesno, 0, 0, KS_RANK, NULL, false,
	  "set CUDA_VISIBLE_DEVICES to the rank's GPU in exec" },
	{ "memory", "policy", KT_ENUM, v_memory, 0, 0, KS_RANK, NULL, false,
	  "NUMA memory policy of each rank over the nodes of its CPUs: none, bind, preferred, interleave" },

	{ "thp", "enabled", KT_ENUM, v_thp_enabled, 0, 0, KS_HOST,
	  "sys/kernel/mm/transparent_hugepage/enabled", true,
	  "transparent hugepages: always, madvise, never" },
	{ "thp", "defrag", KT_ENUM, v_thp_defrag, 0, 0, KS_HOST,
	  "sys/kernel/mm/transparent_hugepage/defrag", true,
	  "THP defrag on fault; always stalls faults in direct compaction" },
	{ "thp", "khugepaged_defrag", KT_INT, NULL, 0, 1, KS_HOST,
	  "sys/kernel/mm/transparent_hugepage/khugepaged/defrag", false,
	  "whether khugepaged compacts memory to collapse hugepages" },

	{ "hugetlb", "pages_2m", KT_INT, NULL, 0, 16777216, KS_HOST_NODE,
	  "sys/devices/system/node/node%u/hugepages/hugepages-2048kB/nr_hugepages", false,
	  "2 MiB hugetlb pages reserved on each NUMA node (a clamp is a failure)" },
	{ "hugetlb", "pages_1g", KT_INT, NULL, 0, 65536, KS_HOST_NODE,
	  "sys/devices/system/node/node%u/hugepages/hugepages-1048576kB/nr_hugepages", false,
	  "1 GiB hugetlb pages reserved on each NUMA node (a clamp is a failure)" },

	{ "sched", "policy", KT_ENUM, v_sched, 0, 0, KS_RANK, NULL, false,
	  "scheduling policy of each rank: other, batch, idle, fifo, rr" },
	{ "sched", "priority", KT_INT, NULL, 1, 99, KS_RANK, NULL, false,
	  "real-time priority (with policy fifo or rr)" },
	{ "sched", "nice", KT_INT, NULL, -20, 19, KS_RANK, NULL, false,
	  "nice value of each rank" },
	{ "sched", "numa_balancing", KT_INT, NULL, 0, 3, KS_HOST,
	  "proc/sys/kernel/numa_balancing", false,
	  "automatic NUMA balancing (kernel.numa_balancing); off for rank-bound memory" },
	{ "sched", "autogroup", KT_INT, NULL, 0, 1, KS_HOST,
	  "proc/sys/kernel/sched_autogroup_enabled", false,
	  "session autogrouping of the CFS scheduler" },
	{ "sched", "governor", KT_ENUM, v_governor, 0, 0, KS_HOST_CPU,
	  "sys/devices/system/cpu/cpu%u/cpufreq/scaling_governor", false,
	  "cpufreq governor of every CPU (where cpufreq exists)" },

	{ "cgroup", "name", KT_NAME, NULL, 0, 0, KS_JOB, NULL, false,
	  "job cgroup the ranks are attached to (cpuset of the ranks' CPUs and nodes)" },
	{ "cgroup", "cpu_weight", KT_INT, NULL, 1, 10000, KS_JOB, NULL, false,
	  "CPU weight of the job cgroup (cpu.weight; cpu.shares = weight*1024/100 on v1)" },

	{ "irq", "devices", KT_ENUM, v_irq, 0, 0, KS_IRQ, NULL, false,
	  "IRQs of the GPUs and NICs: leave, or housekeeping (onto the housekeeping CPUs)" },

	SYSCTL("vm.swappiness", 0, 200, "tendency to swap (proc/sys/vm/swappiness)"),
	SYSCTL("vm.zone_reclaim_mode", 0, 7, "reclaim on the local node before allocating remotely"),
	SYSCTL("vm.max_map_count", 65530, 2147483647, "mappings per process (large pinned pools need more)"),
	SYSCTL("vm.min_free_kbytes", 1024, 67108864, "reserve kept free for atomic allocations"),
	SYSCTL("vm.stat_interval", 1, 3600, "vmstat update interval (seconds); jitter on nohz CPUs"),
	SYSCTL("vm.dirty_ratio", 0, 100, "dirty page cache limit (% of memory) for checkpoint writes"),
	SYSCTL("vm.dirty_background_ratio", 0, 100, "background writeback threshold (% of memory)"),
	SYSCTL("kernel.nmi_watchdog", 0, 1, "NMI watchdog (periodic perf interrupts on every CPU)"),
};

const unsigned knob_count = sizeof(knob_table) / sizeof(knob_table[0]);

int knob_find(const char *section, const char *key)
{
	for (unsigned i = 0; i < knob_count; i++)
		if (!strcmp(knob_table[i].section, section) && !strcmp(knob_table[i].key, key))
			return (int)i;
	return -1;
}

bool knob_section_known(const char *section)
{
	for (const char *const *s = knob_sections; *s; s++)
		if (!strcmp(*s, section))
			return true;
	return false;
}

static void join_values(const char *const *v, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (; *v && n < size; v++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", *v);
}

int knob_validate(const struct knob *k, const char *value, char *why, size_t size)
{
	char list[256];
	long long v;
	uint64_t u;
	int r;

	switch (k->type) {
	case KT_STRING:
	case KT_INCLUDE:
		if (!value[0]) {
			snprintf(why, size, "empty value");
			return -EINVAL;
		}
		return 0;
	case KT_NAME:
		if (!value[0] || strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != strlen(value) ||
		    value[0] == '.' || strlen(value) > 64) {
			snprintf(why, size, "'%.64s' is not a name (letters, digits, '_', '.', '-'; at most 64)", value);
			return -EINVAL;
		}
		return 0;
	case KT_ENUM:
		for (const char *const *e = k->values; *e; e++)
			if (!strcmp(*e, value))
				return 0;
		join_values(k->values, list, sizeof(list));
		snprintf(why, size, "'%.64s' is not one of %s", value, list);
		return -EINVAL;
	case KT_INT:
		if (value[0] == '-')
			r = parse_u64(value + 1, (uint64_t)1 << 62, &u), v = -(long long)u;
		else
			r = parse_u64(value, (uint64_t)1 << 62, &u), v = (long long)u;
		if (r < 0 || v < k->min || v > k->max) {
			snprintf(why, size, "'%.64s' is not an integer from %lld to %lld", value, k->min, k->max);
			return -EINVAL;
		}
		return 0;
	case KT_CPUSPEC:
		if (!strcmp(value, "auto") || !strcmp(value, "none"))
			return 0;
		{
			hwloc_bitmap_t set = hwloc_bitmap_alloc();

			r = set ? cpulist_parse(value, set) : -ENOMEM;
			if (r == 0 && hwloc_bitmap_iszero(set))
				r = -EINVAL;
			hwloc_bitmap_free(set);
		}
		if (r < 0) {
			snprintf(why, size, "'%.64s' is not auto, none or a CPU list like 0,36", value);
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

/* Levenshtein distance, for did-you-mean. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[65], prev, tmp;

	if (la > 64 || lb > 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);

			tmp = row[j];
			row[j] = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
			if (prev + cost < row[j])
				row[j] = prev + cost;
			prev = tmp;
		}
	}
	return row[lb];
}

const char *knob_did_you_mean(const char *word, const char *const *candidates, size_t n)
{
	const char *best = NULL;
	size_t best_d = 99, limit = strlen(word) <= 4 ? 1 : strlen(word) <= 8 ? 2 : 3;

	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(word, candidates[i]);

		if (d < best_d) {
			best_d = d;
			best = candidates[i];
		}
	}
	return best_d <= limit ? best : NULL;
}

const char *knob_host_path(const struct knob *k, unsigned index, char *buf, size_t size)
{
	if (!k->path) {
		size_t n = (size_t)snprintf(buf, size, "proc/sys/%s", k->key);

		for (size_t i = strlen("proc/sys/"); i < n && i < size; i++)
			if (buf[i] == '.')
				buf[i] = '/';
		return buf;
	}
	if (k->scope == KS_HOST_NODE || k->scope == KS_HOST_CPU) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(buf, size, k->path, index);
#pragma GCC diagnostic pop
		return buf;
	}
	snprintf(buf, size, "%s", k->path);
	return buf;
}

static const char *scope_name(enum knob_scope s)
{
	switch (s) {
	case KS_META: return "policy";
	case KS_RANK: return "each rank (exec)";
	case KS_JOB: return "job cgroup";
	case KS_HOST: return "host";
	case KS_HOST_NODE: return "host, per NUMA node";
	case KS_HOST_CPU: return "host, per CPU";
	case KS_IRQ: return "device IRQs";
	}
	return "?";
}

void knob_print_reference(FILE *out)
{
	const char *section = "";

	fprintf(out, "<!-- generated by `nodetune keys --markdown` from agent/knob.c; checked by tests -->\n");
	fprintf(out, "| section | key | values | applies to | writes | meaning |\n");
	fprintf(out, "|---|---|---|---|---|---|\n");
	for (unsigned i = 0; i < knob_count; i++) {
		const struct knob *k = &knob_table[i];
		char values[256], path[160];

		switch (k->type) {
		case KT_ENUM:
			join_values(k->values, values, sizeof(values));
			break;
		case KT_INT:
			snprintf(values, sizeof(values), "%lld..%lld", k->min, k->max);
			break;
		case KT_CPUSPEC:
			snprintf(values, sizeof(values), "auto, none, cpulist");
			break;
		case KT_NAME:
			snprintf(values, sizeof(values), "name");
			break;
		default:
			snprintf(values, sizeof(values), "text");
			break;
		}
		if (k->path)
			snprintf(path, sizeof(path), "`/%s`", k->path);
		else if (!strcmp(k->section, "sysctl"))
			snprintf(path, sizeof(path), "`/proc/sys/%s` (dots as /)", k->key);
		else
			snprintf(path, sizeof(path), "-");
		fprintf(out, "| %s | `%s` | %s | %s | %s | %s |\n",
			strcmp(section, k->section) ? k->section : "", k->key, values,
			scope_name(k->scope), path, k->help);
		section = k->section;
	}
}
