/* SPDX-License-Identifier: MIT */
/* knob.h — every policy key is one row of knob_table.
 *
 * A row says where the key lives ([section] key), what values it takes, what
 * it writes (a host file below the fsroot, per NUMA node or per CPU, or a
 * per-rank/job setting applied by the binder), and how its effective value
 * is read back.  The parser, the planner, the applier, verify and the
 * README's reference table (`nodetune keys --markdown`) all read this table;
 * adding a knob is adding an enum knob_id and its row (a designated
 * initializer; the unit test checks that no id is left without one).
 */
#ifndef NODETUNE_KNOB_H
#define NODETUNE_KNOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/fsroot.h"

enum knob_type {
	KT_STRING,      /* free text (summary) */
	KT_NAME,        /* [A-Za-z0-9_.-]+ (cgroup name) */
	KT_ENUM,        /* one of values[] */
	KT_INT,         /* decimal in [min, max] */
	KT_CPUSPEC,     /* "auto", "none" or a cpulist */
	KT_INCLUDE,     /* comma-separated policy files */
};

enum knob_scope {
	KS_META,        /* describes the policy */
	KS_RANK,        /* applied by `exec` to each rank */
	KS_JOB,         /* the job cgroup */
	KS_HOST,        /* one host file */
	KS_HOST_NODE,   /* one host file per NUMA node: path has one %u */
	KS_HOST_CPU,    /* one host file per CPU: path has one %u */
	KS_IRQ,         /* smp_affinity_list of the devices' IRQs: path has one %u */
	KS_SYSCTL,      /* one host file below proc/sys named by the key (dots as /) */
};

/* Every policy key, in the order of the table (and of `nodetune keys`).
 * Code names a knob by this enum; only user input (policy files, bisect's
 * output) is looked up by name, with knob_find(). */
enum knob_id {
	KNOB_MAIN_SUMMARY,
	KNOB_MAIN_INCLUDE,
	KNOB_AFFINITY_MODE,
	KNOB_AFFINITY_HOUSEKEEPING,
	KNOB_AFFINITY_EXPORT_GPU,
	KNOB_MEMORY_POLICY,
	KNOB_THP_ENABLED,
	KNOB_THP_DEFRAG,
	KNOB_THP_KHUGEPAGED_DEFRAG,
	KNOB_HUGETLB_PAGES_2M,
	KNOB_HUGETLB_PAGES_1G,
	KNOB_SCHED_POLICY,
	KNOB_SCHED_PRIORITY,
	KNOB_SCHED_NICE,
	KNOB_SCHED_NUMA_BALANCING,
	KNOB_SCHED_AUTOGROUP,
	KNOB_SCHED_GOVERNOR,
	KNOB_CGROUP_NAME,
	KNOB_CGROUP_CPU_WEIGHT,
	KNOB_IRQ_DEVICES,
	KNOB_SYSCTL_VM_SWAPPINESS,
	KNOB_SYSCTL_VM_ZONE_RECLAIM_MODE,
	KNOB_SYSCTL_VM_MAX_MAP_COUNT,
	KNOB_SYSCTL_VM_MIN_FREE_KBYTES,
	KNOB_SYSCTL_VM_STAT_INTERVAL,
	KNOB_SYSCTL_VM_DIRTY_RATIO,
	KNOB_SYSCTL_VM_DIRTY_BACKGROUND_RATIO,
	KNOB_SYSCTL_KERNEL_NMI_WATCHDOG,
	KNOB_COUNT
};

struct knob;

/* A row's validator: 0 when value is acceptable for k, or -EINVAL with a
 * reason that completes "[section] key: ..." written into why. */
typedef int knob_validator(const struct knob *k, const char *value, char *why, size_t size);

/* A row's effective-value reader: what the kernel holds, parsed from the
 * content of its file (raw, NUL-terminated) into out in the form the plan
 * writes it (a choice, a number, a CPU list).  0, or -EINVAL when raw is not
 * what such a file holds (or the value does not fit size). */
typedef int knob_reader(const struct knob *k, const char *raw, char *out, size_t size);

struct knob {
	const char *section;
	const char *key;
	enum knob_type type;
	const char *const *values;  /* KT_ENUM, NULL-terminated */
	long long min, max;         /* KT_INT */
	enum knob_scope scope;
	const char *path;           /* the file it writes, below the fsroot (a
				     * pattern with one %u for per-node, per-CPU
				     * and per-IRQ scopes); NULL when none */
	knob_validator *validate;   /* never NULL */
	knob_reader *effective;     /* non-NULL exactly when path is */
	const char *help;
};

extern const struct knob knob_table[KNOB_COUNT];
extern const unsigned knob_count;   /* KNOB_COUNT, for loops over the table */

/* The readers rows use.  knob_eff_choice: the kernel's choice file, in its
 * bracketed form ("always [madvise] never") or plain ("madvise"), one of
 * k->values.  knob_eff_word: the first word of a one-value file (a number, a
 * governor name).  knob_eff_cpulist: a CPU list, in canonical form. */
knob_reader knob_eff_choice, knob_eff_word, knob_eff_cpulist;

/* Does the kernel show k as "a [b] c"? */
static inline bool knob_bracketed(const struct knob *k)
{
	return k->effective == knob_eff_choice;
}

/* The knob_id of [section] key as a user typed it (policy files, bisect's
 * output, `nodetune keys`), or -1.  Code that knows which knob it wants
 * uses the enum. */
int knob_find(const char *section, const char *key);
/* Is section one of the known sections? */
bool knob_section_known(const char *section);
/* Names of the known sections, NULL-terminated. */
extern const char *const knob_sections[];

/* Check value against the row (its validator).  Returns 0, or -EINVAL with
 * a reason that completes "[section] key: ..." written into why. */
int knob_validate(const struct knob *k, const char *value, char *why, size_t size);

/* Read the effective value of k's file path (below root) into buf with the
 * row's reader.  Returns 0, -ENOENT (and other read errors), -EINVAL for
 * content the reader cannot parse, or -ENOTSUP for a row without a file. */
int knob_read_effective(const struct fsroot *root, const struct knob *k, const char *path,
			char *buf, size_t size);

/* The closest of candidates[0..n) to word by edit distance (insertions,
 * deletions, substitutions and swaps of two adjacent letters, each one edit;
 * case ignored), or NULL when none is close enough to be a likely typo (one
 * edit for a word of up to 4 letters, two up to 8, three past that). */
const char *knob_did_you_mean(const char *word, const char *const *candidates, size_t n);

/* The host file of k (below the fsroot) for NUMA node / CPU / IRQ index
 * (ignored for one-file scopes).  Returns buf ("" for a row without a
 * file). */
const char *knob_host_path(const struct knob *k, unsigned index, char *buf, size_t size);

/* The key's id as JSON documents name it, "section.key" ("thp.enabled"),
 * in buf.  Returns buf. */
const char *knob_name(enum knob_id id, char *buf, size_t size);

/* The values k takes, in words, into buf (truncated to size): its enum's
 * values ("always, madvise, never"), a range ("0..200"), "auto, none,
 * cpulist", "name" or "text".  The reference's and `keys`' values column. */
void knob_values_text(const struct knob *k, char *buf, size_t size);

/* Print the reference table of every key as Markdown. */
void knob_print_reference(FILE *out);

/* The reference's columns of one row (keys --markdown, keys --json). */
struct knob_ref {
	char values[256];   /* "always, madvise, never", "0..1", "text" */
	const char *scope;  /* static: "host", "host, per CPU", "policy", ... */
	char path[160];     /* the file it writes from the root ("/sys/..." with
			     * %u for per-node and per-CPU rows); "" when none */
};

/* Fill *ret with k's reference columns.  Never fails. */
void knob_reference(const struct knob *k, struct knob_ref *ret);

#endif
