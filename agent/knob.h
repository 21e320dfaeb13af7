/* knob.h — every policy key is one row of knob_table.
 *
 * A row says where the key lives ([section] key), what values it takes, what
 * it writes (a host file below the fsroot, per NUMA node or per CPU, or a
 * per-rank/job setting applied by the binder), and how its effective value
 * is read back.  The parser, the planner, the applier, verify and the
 * README's reference table (`nodetune keys --markdown`) all read this table;
 * adding a knob is adding a row.
 */
#ifndef NODETUNE_KNOB_H
#define NODETUNE_KNOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

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
	KS_IRQ,         /* smp_affinity_list of the devices' IRQs */
};

struct knob {
	const char *section;
	const char *key;
	enum knob_type type;
	const char *const *values;  /* KT_ENUM, NULL-terminated */
	long long min, max;         /* KT_INT */
	enum knob_scope scope;
	const char *path;           /* host scopes: below the fsroot */
	bool bracketed;             /* the kernel shows it as "a [b] c" */
	const char *help;
};

extern const struct knob knob_table[];
extern const unsigned knob_count;

/* Index of [section] key, or -1. */
int knob_find(const char *section, const char *key);
/* Is section one of the known sections? */
bool knob_section_known(const char *section);
/* Names of the known sections, NULL-terminated. */
extern const char *const knob_sections[];

/* Check value against the row.  Returns 0, or -EINVAL with a reason that
 * completes "[section] key: ..." written into why. */
int knob_validate(const struct knob *k, const char *value, char *why, size_t size);

/* The closest of candidates[0..n) to word by edit distance, or NULL when
 * none is close enough to be a likely typo. */
const char *knob_did_you_mean(const char *word, const char *const *candidates, size_t n);

/* The host file of k (below the fsroot) for NUMA node / CPU index (ignored
 * for KS_HOST).  Sysctl rows derive theirs from the key.  Returns buf. */
const char *knob_host_path(const struct knob *k, unsigned index, char *buf, size_t size);

/* Print the reference table of every key as Markdown. */
void knob_print_reference(FILE *out);

#endif
