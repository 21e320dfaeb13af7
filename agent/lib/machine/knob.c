/* SPDX-License-Identifier: MIT */
/* knob.c — the knob table and its helpers; see knob.h.
 *
 * Divisions: value lists; validators; effective-value readers; the table
 * (one designated row per enum knob_id); lookups and validation; paths and
 * the reference table.
 */
#include "machine/knob.h"
#include "machine/knob_test.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpulist.h"
#include "base/parse.h"

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

/* ---- validators -------------------------------------------------------- */

static int validate_text(const struct knob *k, const char *value, char *why, size_t size)
{
	(void)k;
	if (!value[0]) {
		snprintf(why, size, "empty value");
		return -EINVAL;
	}
	return 0;
}

static int validate_name(const struct knob *k, const char *value, char *why, size_t size)
{
	(void)k;
	if (!value[0] || strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != strlen(value) ||
	    value[0] == '.' || strlen(value) > 64) {
		snprintf(why, size, "'%.64s' is not a name (letters, digits, '_', '.', '-'; at most 64)", value);
		return -EINVAL;
	}
	return 0;
}

static void join_values(const char *const *v, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (; *v && n < size; v++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", *v);
}

static bool in_list(const char *v, const char *const *allowed)
{
	for (; *allowed; allowed++)
		if (!strcmp(v, *allowed))
			return true;
	return false;
}

static int validate_enum(const struct knob *k, const char *value, char *why, size_t size)
{
	char list[256];

	if (in_list(value, k->values))
		return 0;
	join_values(k->values, list, sizeof(list));
	snprintf(why, size, "'%.64s' is not one of %s", value, list);
	return -EINVAL;
}

static int validate_int(const struct knob *k, const char *value, char *why, size_t size)
{
	long long v;
	uint64_t u;
	int r;

	if (value[0] == '-')
		r = parse_u64(value + 1, (uint64_t)1 << 62, &u), v = -(long long)u;
	else
		r = parse_u64(value, (uint64_t)1 << 62, &u), v = (long long)u;
	if (r < 0 || v < k->min || v > k->max) {
		snprintf(why, size, "'%.64s' is not an integer from %lld to %lld", value, k->min, k->max);
		return -EINVAL;
	}
	return 0;
}

static int validate_cpuspec(const struct knob *k, const char *value, char *why, size_t size)
{
	hwloc_bitmap_t set;
	int r;

	(void)k;
	if (!strcmp(value, "auto") || !strcmp(value, "none"))
		return 0;
	set = hwloc_bitmap_alloc();
	r = set ? cpulist_parse(value, set) : -ENOMEM;
	if (r == 0 && hwloc_bitmap_iszero(set))
		r = -EINVAL;
	hwloc_bitmap_free(set);
	if (r < 0) {
		snprintf(why, size, "'%.64s' is not auto, none or a CPU list like 0,36", value);
		return -EINVAL;
	}
	return 0;
}

/* ---- effective-value readers ------------------------------------------- */

int knob_parse_choice(const char *content, const char *const *allowed, char *out, size_t size)
{
	char word[64];
	const char *open = strchr(content, '['), *close;
	size_t n;

	if (open) {
		close = strchr(open, ']');
		if (!close || strchr(close + 1, '['))
			return -EINVAL;
		open++;
	} else {
		open = content;
		while (*open == ' ')
			open++;
		close = open + strcspn(open, " \n");
		if (open[strspn(close, " \n") + (size_t)(close - open)] != '\0')
			return -EINVAL; /* several words but no brackets */
	}
	n = (size_t)(close - open);
	if (n == 0 || n >= sizeof(word))
		return -EINVAL;
	memcpy(word, open, n);
	word[n] = '\0';
	if (!in_list(word, allowed) || n >= size)
		return -EINVAL;
	memcpy(out, word, n + 1);
	return 0;
}

int knob_eff_choice(const struct knob *k, const char *raw, char *out, size_t size)
{
	return knob_parse_choice(raw, k->values, out, size);
}

int knob_eff_word(const struct knob *k, const char *raw, char *out, size_t size)
{
	size_t n = strcspn(raw, " \t\n");     /* the kernel prints one value */

	(void)k;
	if (n == 0 || n >= size)
		return -EINVAL;
	memcpy(out, raw, n);
	out[n] = '\0';
	return 0;
}

int knob_eff_cpulist(const struct knob *k, const char *raw, char *out, size_t size)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	char word[1024];
	int r = knob_eff_word(k, raw, word, sizeof(word));

	if (!set)
		return -ENOMEM;
	if (r == 0)
		r = cpulist_parse(word, set);
	if (r == 0 && (size_t)cpulist_format(set, out, size) >= size)
		r = -EINVAL;
	hwloc_bitmap_free(set);
	return r < 0 ? -EINVAL : 0;
}

/* ---- the table ----------------------------------------------------------- */

/* Rows by kind (a setting applied by exec or the job cgroup, or a host
 * file): what varies between keys of one kind is data. */
#define META(id, sec, name, typ, check, why) \
	[id] = { .section = sec, .key = name, .type = typ, .scope = KS_META, .validate = check, .help = why }
#define SETTING_ENUM(id, sec, name, vals, scp, why) \
	[id] = { .section = sec, .key = name, .type = KT_ENUM, .values = vals, .scope = scp, \
		 .validate = validate_enum, .help = why }
#define SETTING_INT(id, sec, name, lo, hi, scp, why) \
	[id] = { .section = sec, .key = name, .type = KT_INT, .min = lo, .max = hi, .scope = scp, \
		 .validate = validate_int, .help = why }
#define HOST_CHOICE(id, sec, name, vals, scp, file, reader, why) \
	[id] = { .section = sec, .key = name, .type = KT_ENUM, .values = vals, .scope = scp, .path = file, \
		 .validate = validate_enum, .effective = reader, .help = why }
#define HOST_INT(id, sec, name, lo, hi, scp, file, why) \
	[id] = { .section = sec, .key = name, .type = KT_INT, .min = lo, .max = hi, .scope = scp, .path = file, \
		 .validate = validate_int, .effective = knob_eff_word, .help = why }
/* [sysctl] dir.name writes proc/sys/dir/name */
#define SYSCTL(id, dir, name, lo, hi, why) \
	HOST_INT(id, "sysctl", dir "." name, lo, hi, KS_SYSCTL, "proc/sys/" dir "/" name, why)

const struct knob knob_table[KNOB_COUNT] = {
	META(KNOB_MAIN_SUMMARY, "main", "summary", KT_STRING, validate_text,
	     "one line saying what the policy is for"),
	META(KNOB_MAIN_INCLUDE, "main", "include", KT_INCLUDE, validate_text,
	     "parent policies, comma-separated: a file (relative to this one) or a NAME on the policy search path; this file overrides them"),

	SETTING_ENUM(KNOB_AFFINITY_MODE, "affinity", "mode", v_affinity, KS_RANK,
		     "CPUs of each local rank: none (unbound), numa (spread over NUMA nodes), gpu-local (CPUs local to the rank's GPU), far-numa (a far node: for demonstrations only)"),
	[KNOB_AFFINITY_HOUSEKEEPING] = {
		.section = "affinity", .key = "housekeeping", .type = KT_CPUSPEC, .scope = KS_RANK,
		.validate = validate_cpuspec,
		.help = "CPUs kept free of ranks (for IRQs, daemons): auto = one core per NUMA node that holds a GPU, none, or a cpulist",
	},
	SETTING_ENUM(KNOB_AFFINITY_EXPORT_GPU, "affinity", "export_gpu", v_yesno, KS_RANK,
		     "set CUDA_VISIBLE_DEVICES to the rank's GPU in exec"),
	SETTING_ENUM(KNOB_MEMORY_POLICY, "memory", "policy", v_memory, KS_RANK,
		     "NUMA memory policy of each rank over the nodes of its CPUs: none, bind, preferred, interleave"),

	HOST_CHOICE(KNOB_THP_ENABLED, "thp", "enabled", v_thp_enabled, KS_HOST,
		    "sys/kernel/mm/transparent_hugepage/enabled", knob_eff_choice,
		    "transparent hugepages: always, madvise, never"),
	HOST_CHOICE(KNOB_THP_DEFRAG, "thp", "defrag", v_thp_defrag, KS_HOST,
		    "sys/kernel/mm/transparent_hugepage/defrag", knob_eff_choice,
		    "THP defrag on fault; always stalls faults in direct compaction"),
	HOST_INT(KNOB_THP_KHUGEPAGED_DEFRAG, "thp", "khugepaged_defrag", 0, 1, KS_HOST,
		 "sys/kernel/mm/transparent_hugepage/khugepaged/defrag",
		 "whether khugepaged compacts memory to collapse hugepages"),

	HOST_INT(KNOB_HUGETLB_PAGES_2M, "hugetlb", "pages_2m", 0, 16777216, KS_HOST_NODE,
		 "sys/devices/system/node/node%u/hugepages/hugepages-2048kB/nr_hugepages",
		 "2 MiB hugetlb pages reserved on each NUMA node (a clamp is a failure)"),
	HOST_INT(KNOB_HUGETLB_PAGES_1G, "hugetlb", "pages_1g", 0, 65536, KS_HOST_NODE,
		 "sys/devices/system/node/node%u/hugepages/hugepages-1048576kB/nr_hugepages",
		 "1 GiB hugetlb pages reserved on each NUMA node (a clamp is a failure)"),

	SETTING_ENUM(KNOB_SCHED_POLICY, "sched", "policy", v_sched, KS_RANK,
		     "scheduling policy of each rank: other, batch, idle, fifo, rr"),
	SETTING_INT(KNOB_SCHED_PRIORITY, "sched", "priority", 1, 99, KS_RANK,
		    "real-time priority (with policy fifo or rr)"),
	SETTING_INT(KNOB_SCHED_NICE, "sched", "nice", -20, 19, KS_RANK,
		    "nice value of each rank"),
	HOST_INT(KNOB_SCHED_NUMA_BALANCING, "sched", "numa_balancing", 0, 3, KS_HOST,
		 "proc/sys/kernel/numa_balancing",
		 "automatic NUMA balancing (kernel.numa_balancing); off for rank-bound memory"),
	HOST_INT(KNOB_SCHED_AUTOGROUP, "sched", "autogroup", 0, 1, KS_HOST,
		 "proc/sys/kernel/sched_autogroup_enabled",
		 "session autogrouping of the CFS scheduler"),
	HOST_CHOICE(KNOB_SCHED_GOVERNOR, "sched", "governor", v_governor, KS_HOST_CPU,
		    "sys/devices/system/cpu/cpu%u/cpufreq/scaling_governor", knob_eff_word,
		    "cpufreq governor of every CPU (where cpufreq exists)"),

	[KNOB_CGROUP_NAME] = {
		.section = "cgroup", .key = "name", .type = KT_NAME, .scope = KS_JOB, .validate = validate_name,
		.help = "job cgroup the ranks are attached to (cpuset of the ranks' CPUs and nodes)",
	},
	SETTING_INT(KNOB_CGROUP_CPU_WEIGHT, "cgroup", "cpu_weight", 1, 10000, KS_JOB,
		    "CPU weight of the job cgroup (cpu.weight; cpu.shares = weight*1024/100 on v1)"),

	HOST_CHOICE(KNOB_IRQ_DEVICES, "irq", "devices", v_irq, KS_IRQ,
		    "proc/irq/%u/smp_affinity_list", knob_eff_cpulist,
		    "IRQs of the GPUs and NICs: leave, or housekeeping (onto the housekeeping CPUs)"),

	SYSCTL(KNOB_SYSCTL_VM_SWAPPINESS, "vm", "swappiness", 0, 200,
	       "tendency to swap"),
	SYSCTL(KNOB_SYSCTL_VM_ZONE_RECLAIM_MODE, "vm", "zone_reclaim_mode", 0, 7,
	       "reclaim on the local node before allocating remotely"),
	SYSCTL(KNOB_SYSCTL_VM_MAX_MAP_COUNT, "vm", "max_map_count", 65530, 2147483647,
	       "mappings per process (large pinned pools need more)"),
	SYSCTL(KNOB_SYSCTL_VM_MIN_FREE_KBYTES, "vm", "min_free_kbytes", 1024, 67108864,
	       "reserve kept free for atomic allocations"),
	SYSCTL(KNOB_SYSCTL_VM_STAT_INTERVAL, "vm", "stat_interval", 1, 3600,
	       "vmstat update interval (seconds); jitter on nohz CPUs"),
	SYSCTL(KNOB_SYSCTL_VM_DIRTY_RATIO, "vm", "dirty_ratio", 0, 100,
	       "dirty page cache limit (% of memory) for checkpoint writes"),
	SYSCTL(KNOB_SYSCTL_VM_DIRTY_BACKGROUND_RATIO, "vm", "dirty_background_ratio", 0, 100,
	       "background writeback threshold (% of memory)"),
	SYSCTL(KNOB_SYSCTL_KERNEL_NMI_WATCHDOG, "kernel", "nmi_watchdog", 0, 1,
	       "NMI watchdog (periodic perf interrupts on every CPU)"),
};

const unsigned knob_count = KNOB_COUNT;

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

int knob_validate(const struct knob *k, const char *value, char *why, size_t size)
{
	return k->validate(k, value, why, size);
}

int knob_read_effective(const struct fsroot *root, const struct knob *k, const char *path,
			char *buf, size_t size)
{
	char raw[1024];
	ssize_t n;

	if (!k->effective)
		return -ENOTSUP;
	n = fsroot_read(root, path, raw, sizeof(raw));
	if (n < 0)
		return (int)n;
	return k->effective(k, raw, buf, size);
}

static bool same_letter(char a, char b)
{
	return tolower((unsigned char)a) == tolower((unsigned char)b);
}

/* The optimal string alignment (restricted Damerau-Levenshtein) distance,
 * for did-you-mean: an insertion, a deletion, a substitution or a swap of
 * two adjacent letters ("tph" for "thp") is one edit each; case is
 * ignored.  Three rows of at most 65. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), rows[3][65];
	size_t *pp = rows[0], *prev = rows[1], *cur = rows[2], *t;

	if (la > 64 || lb > 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t d = prev[j - 1] + !same_letter(a[i - 1], b[j - 1]);

			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 && same_letter(a[i - 1], b[j - 2]) && same_letter(a[i - 2], b[j - 1]) &&
			    pp[j - 2] + 1 < d)
				d = pp[j - 2] + 1;
			cur[j] = d;
		}
		t = pp, pp = prev, prev = cur, cur = t;
	}
	return prev[lb];
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
	switch (k->scope) {
	case KS_HOST_NODE:
	case KS_HOST_CPU:
	case KS_IRQ:
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(buf, size, k->path, index);
#pragma GCC diagnostic pop
		break;
	default:
		snprintf(buf, size, "%s", k->path ? k->path : "");
		break;
	}
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
	case KS_SYSCTL: return "host";
	}
	return "?";
}

void knob_values_text(const struct knob *k, char *buf, size_t size)
{
	switch (k->type) {
	case KT_ENUM:
		join_values(k->values, buf, size);
		break;
	case KT_INT:
		snprintf(buf, size, "%lld..%lld", k->min, k->max);
		break;
	case KT_CPUSPEC:
		snprintf(buf, size, "auto, none, cpulist");
		break;
	case KT_NAME:
		snprintf(buf, size, "name");
		break;
	default:
		snprintf(buf, size, "text");
		break;
	}
}

/* The reference's "writes" column of k: the file pattern of a host knob,
 * a sysctl's file too, from the root ("" for none); the IRQs' files are
 * found from the devices, so they are not listed. */
static void writes_column(const struct knob *k, char *buf, size_t size)
{
	switch (k->scope) {
	case KS_HOST:
	case KS_HOST_NODE:
	case KS_HOST_CPU:
	case KS_SYSCTL:     /* the file the row writes, never the key's dotted name */
		snprintf(buf, size, "/%s", k->path);
		break;
	default:
		snprintf(buf, size, "%s", "");
		break;
	}
}

const char *knob_name(enum knob_id id, char *buf, size_t size)
{
	snprintf(buf, size, "%s.%s", knob_table[id].section, knob_table[id].key);
	return buf;
}

void knob_reference(const struct knob *k, struct knob_ref *ret)
{
	knob_values_text(k, ret->values, sizeof(ret->values));
	writes_column(k, ret->path, sizeof(ret->path));
	ret->scope = scope_name(k->scope);
}

void knob_print_reference(FILE *out)
{
	const char *section = "";

	fprintf(out, "<!-- generated by `nodetune keys --markdown` from agent/lib/machine/knob.c; checked by tests -->\n");
	fprintf(out, "| section | key | values | applies to | writes | meaning |\n");
	fprintf(out, "|---|---|---|---|---|---|\n");
	for (unsigned i = 0; i < knob_count; i++) {
		const struct knob *k = &knob_table[i];
		struct knob_ref r;

		knob_reference(k, &r);
		fprintf(out, "| %s | `%s` | %s | %s | %s%s%s | %s |\n",
			strcmp(section, k->section) ? k->section : "", k->key, r.values, r.scope,
			*r.path ? "`" : "", *r.path ? r.path : "-", *r.path ? "`" : "", k->help);
		section = k->section;
	}
}
