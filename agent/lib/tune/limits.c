/* SPDX-License-Identifier: MIT */
/* limits.c — see limits.h.
 *
 * Divisions: the direction of each key; one assignment of limits.conf;
 * loading (a file, a buffer); checking a policy (per knob, then the hugetlb
 * share of each node).
 */
#include "tune/limits.h"
#include "tune/limits_test.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/ini.h"
#include "base/parse.h"
#include "base/userfile.h"

#define MIB (1024ull * 1024)
#define GIB (1024ull * MIB)

/* ---- the direction of each key --------------------------------------------- */

/* Which way each limitable key is bounded: where the risk lies.  A ceiling
 * where more is more of the host taken or changed (memory reserved,
 * priority, swapping, dirty memory); a floor where less is the risk (nice:
 * a lower nice is more CPU priority; the NMI watchdog: 0 is hard-lockup
 * detection off); an allowed set for every choice.  Text, names and CPU
 * lists are not limitable (LIMIT_NONE).  docs/cli.md ("Site limits") and
 * nodetune(8) state the same; test_limits checks that every numeric and
 * choice row has one. */
static const enum limit_dir limit_dirs[KNOB_COUNT] = {
	[KNOB_AFFINITY_MODE] = LIMIT_ALLOWED,
	[KNOB_AFFINITY_EXPORT_GPU] = LIMIT_ALLOWED,
	[KNOB_MEMORY_POLICY] = LIMIT_ALLOWED,
	[KNOB_THP_ENABLED] = LIMIT_ALLOWED,
	[KNOB_THP_DEFRAG] = LIMIT_ALLOWED,
	[KNOB_THP_KHUGEPAGED_DEFRAG] = LIMIT_CEILING,
	[KNOB_HUGETLB_PAGES_2M] = LIMIT_CEILING,
	[KNOB_HUGETLB_PAGES_1G] = LIMIT_CEILING,
	[KNOB_SCHED_POLICY] = LIMIT_ALLOWED,
	[KNOB_SCHED_PRIORITY] = LIMIT_CEILING,
	[KNOB_SCHED_NICE] = LIMIT_FLOOR,
	[KNOB_SCHED_NUMA_BALANCING] = LIMIT_CEILING,
	[KNOB_SCHED_AUTOGROUP] = LIMIT_CEILING,
	[KNOB_SCHED_GOVERNOR] = LIMIT_ALLOWED,
	[KNOB_CGROUP_CPU_WEIGHT] = LIMIT_CEILING,
	[KNOB_IRQ_DEVICES] = LIMIT_ALLOWED,
	[KNOB_SYSCTL_VM_SWAPPINESS] = LIMIT_CEILING,
	[KNOB_SYSCTL_VM_ZONE_RECLAIM_MODE] = LIMIT_CEILING,
	[KNOB_SYSCTL_VM_MAX_MAP_COUNT] = LIMIT_CEILING,
	[KNOB_SYSCTL_VM_MIN_FREE_KBYTES] = LIMIT_CEILING,
	[KNOB_SYSCTL_VM_STAT_INTERVAL] = LIMIT_CEILING,
	[KNOB_SYSCTL_VM_DIRTY_RATIO] = LIMIT_CEILING,
	[KNOB_SYSCTL_VM_DIRTY_BACKGROUND_RATIO] = LIMIT_CEILING,
	[KNOB_SYSCTL_KERNEL_NMI_WATCHDOG] = LIMIT_FLOOR,
};

enum limit_dir limits_direction(enum knob_id k)
{
	return (unsigned)k < KNOB_COUNT ? limit_dirs[k] : LIMIT_NONE;
}

/* ---- one assignment ------------------------------------------------------- */

/* "25%" or "25": a whole percent 0..100. */
static int parse_percent(const char *v, long long *ret)
{
	char num[8];
	size_t n = strlen(v);
	int pct;

	if (n && v[n - 1] == '%')
		n--;
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, v, n);
	num[n] = '\0';
	if (parse_int(num, 0, 100, &pct) < 0)
		return -EINVAL;
	*ret = pct;
	return 0;
}

/* A limit for a numeric row: a whole number in the row's range. */
static int parse_bound(const struct knob *k, const char *v, long long *ret)
{
	const char *digits = v[0] == '-' ? v + 1 : v;
	uint64_t u;

	if (parse_u64(digits, LLONG_MAX, &u) < 0)
		return -EINVAL;
	*ret = v[0] == '-' ? -(long long)u : (long long)u;
	return *ret >= k->min && *ret <= k->max ? 0 : -EINVAL;
}

/* The index of value in k's values, or -1. */
static int value_index(const struct knob *k, const char *value)
{
	for (int i = 0; k->values[i]; i++)
		if (!strcmp(k->values[i], value))
			return i;
	return -1;
}

/* An allowed set for a choice row: "a,b" (blanks around each ignored),
 * each one of the row's values, into a mask of their indexes.  -EINVAL with
 * the word that is not a value (or "" for an empty set) in bad. */
static int parse_allowed(const struct knob *k, const char *v, uint64_t *ret, char *bad, size_t size)
{
	char buf[256], *save = NULL;
	uint64_t mask = 0;

	snprintf(bad, size, "%.64s", v);
	if (strlen(v) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, v);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		char *end = w + strlen(w);
		int i;

		while (*w == ' ' || *w == '\t')
			w++;
		while (end > w && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		i = value_index(k, w);
		if (i < 0 || i >= 64) {
			snprintf(bad, size, "%.64s", w);
			return -EINVAL;
		}
		mask |= 1ull << i;
	}
	*ret = mask;
	return mask ? 0 : -EINVAL;
}

/* The values of row k in the mask allowed, comma-separated, into buf. */
static const char *allowed_list(const struct knob *k, uint64_t allowed, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; k->values[i] && i < 64 && n < size; i++)
		if (allowed >> i & 1)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", k->values[i]);
	return buf;
}

/* The limit of numeric or choice row k from value v into *lim.  0, or
 * -EINVAL with err ("file:line: what"). */
static int parse_knob_limit(const struct limits *l, const struct knob *k, const char *value, int line,
			    struct limit *lim, struct nt_err *err)
{
	char bad[80], list[256];

	if (limits_direction((enum knob_id)(k - knob_table)) == LIMIT_NONE)
		return err_set(err, -EINVAL, "%s:%d: [%s] %s: cannot be limited (only numbers and choices can)",
			       l->path, line, k->section, k->key);
	if (k->type == KT_INT) {
		if (parse_bound(k, value, &lim->bound) < 0)
			return err_set(err, -EINVAL, "%s:%d: [%s] %s '%.64s': expected a whole number from %lld to %lld",
				       l->path, line, k->section, k->key, value, k->min, k->max);
		return 0;
	}
	if (parse_allowed(k, value, &lim->allowed, bad, sizeof(bad)) == 0)
		return 0;
	return err_set(err, -EINVAL, "%s:%d: [%s] %s '%s': expected a comma-separated set of %s", l->path, line,
		       k->section, k->key, bad, allowed_list(k, ~0ull, list, sizeof(list)));
}

/* Set *lim to v, set at line, unless it was: then the line it was first
 * set at. */
static int set_limit(struct limit *lim, const struct limit *v, int line)
{
	if (lim->set)
		return lim->line;
	*lim = *v;
	lim->set = true;
	lim->line = line;
	return 0;
}

/* ini_fn: one "key = value" of limits.conf into the struct limits at arg. */
static int on_assignment(const char *section, const char *key, const char *value, int line, void *arg,
			 struct nt_err *err)
{
	struct limits *l = arg;
	const char *name = l->path;
	struct limit lim = { 0 };
	int k, dup;

	if (!section[0])
		return err_set(err, -EINVAL, "%s:%d: key '%.64s' before any [section]", name, line, key);
	if (!strcmp(section, "hugetlb") && !strcmp(key, "share")) {
		if (parse_percent(value, &lim.bound) < 0)
			return err_set(err, -EINVAL, "%s:%d: [hugetlb] share '%.64s': expected a whole percent 0%% to 100%%",
				       name, line, value);
		dup = set_limit(&l->hugetlb_share, &lim, line);
	} else {
		k = knob_find(section, key);
		if (k < 0)
			return err_set(err, -EINVAL, "%s:%d: [%.64s] %.64s: not a policy key (see `nodetune keys`)",
				       name, line, section, key);
		if (parse_knob_limit(l, &knob_table[k], value, line, &lim, err) < 0)
			return err->code;
		dup = set_limit(&l->knob[k], &lim, line);
	}
	if (dup)
		return err_set(err, -EINVAL, "%s:%d: duplicate limit [%s] %s (first set at line %d)", name, line,
			       section, key, dup);
	return 0;
}

/* ---- loading ---------------------------------------------------------------- */

static struct limits *limits_new(const char *name, struct nt_err *err)
{
	struct limits *l = calloc(1, sizeof(*l));

	if (!l || !(l->path = strdup(name))) {
		free(l);
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	return l;
}

struct limits *limits_parse_buffer(const char *buf, size_t len, const char *name, struct nt_err *err)
{
	struct limits *l;

	if (len > LIMITS_MAX_SIZE) {
		err_set(err, -EFBIG, "%s: too large for site limits (%zu bytes, limit %u)", name, len, LIMITS_MAX_SIZE);
		return NULL;
	}
	l = limits_new(name, err);
	if (l && ini_parse(name, buf, len, on_assignment, l, err) < 0) {
		limits_free(l);
		return NULL;
	}
	return l;
}

static int check_trusted(const struct stat *st, char *why, size_t size)
{
	return userfile_check_root_owned(st, "site limits", why, size);
}

struct limits *limits_load(const char *path, unsigned flags, struct nt_err *err)
{
	const char *file = path ? path : LIMITS_DEFAULT_PATH;
	struct limits *l;
	char *buf = NULL, why[320];
	size_t len = 0;
	int r;

	r = userfile_read(file, LIMITS_MAX_SIZE, "site limits", (flags & POLICY_TRUSTED_ONLY) ? check_trusted : NULL,
			  &buf, &len, why, sizeof(why));
	if (r == -ENOENT && !path)
		return limits_new("", err);
	if (r < 0) {
		err_set(err, r, "%s: %s", file, why);
		return NULL;
	}
	l = limits_parse_buffer(buf, len, file, err);
	free(buf);
	return l;
}

void limits_free(struct limits *l)
{
	if (!l)
		return;
	free(l->path);
	free(l);
}

/* ---- checking a policy -------------------------------------------------------- */

/* What the policy reserves in hugetlb pages on one node, in bytes. */
static unsigned long long hugetlb_bytes(const struct policy *p)
{
	return (unsigned long long)policy_int(p, KNOB_HUGETLB_PAGES_2M, 0) * 2 * MIB +
	       (unsigned long long)policy_int(p, KNOB_HUGETLB_PAGES_1G, 0) * GIB;
}

/* Where the policy sets the hugetlb pages (the later of the two keys'
 * places, for the message). */
static const struct policy_value *hugetlb_where(const struct policy *p)
{
	const struct policy_value *a = &p->v[KNOB_HUGETLB_PAGES_2M], *b = &p->v[KNOB_HUGETLB_PAGES_1G];

	return b->value ? b : a;
}

static int check_share(const struct limits *l, const struct policy *p, const struct topo *t, struct nt_err *err)
{
	unsigned long long want = hugetlb_bytes(p);
	const struct policy_value *at = hugetlb_where(p);

	if (!l->hugetlb_share.set || want == 0)
		return 0;
	if (!t || t->n_numa == 0)
		return err_set(err, -EPERM, "%s:%d: [hugetlb] pages reserve %llu MiB per NUMA node, and the machine's node memory is unknown: the site limit share = %lld%% (%s:%d) cannot be checked",
			       at->file, at->line, want / MIB, l->hugetlb_share.bound, l->path, l->hugetlb_share.line);
	for (unsigned n = 0; n < t->n_numa; n++) {
		unsigned long long mem = t->numa[n].memory_bytes;

		/* both sides below 2^57: pages are bounded by their rows, node memory by 2^50 */
		if (want * 100 <= (mem < (1ull << 50) ? mem : 1ull << 50) * (unsigned long long)l->hugetlb_share.bound)
			continue;
		return err_set(err, -EPERM, "%s:%d: [hugetlb] pages reserve %llu MiB on NUMA node %u, above the site limit share = %lld%% of its %llu MiB (%s:%d)",
			       at->file, at->line, want / MIB, t->numa[n].os_index, l->hugetlb_share.bound, mem / MIB,
			       l->path, l->hugetlb_share.line);
	}
	return 0;
}

/* Is policy value v within lim on row k, bounded as dir says? */
static bool within(const struct knob *k, enum limit_dir dir, const struct limit *lim, const char *v, long long n)
{
	int i;

	switch (dir) {
	case LIMIT_CEILING:
		return n <= lim->bound;
	case LIMIT_FLOOR:
		return n >= lim->bound;
	case LIMIT_ALLOWED:
		i = value_index(k, v);
		return i >= 0 && i < 64 && (lim->allowed >> i & 1);
	default:
		return true;
	}
}

int limits_check(const struct limits *l, const struct policy *p, const struct topo *t, struct nt_err *err)
{
	for (unsigned k = 0; k < knob_count; k++) {
		const struct knob *row = &knob_table[k];
		const struct limit *lim = &l->knob[k];
		const struct policy_value *v = &p->v[k];
		enum limit_dir dir = limit_dirs[k];
		char list[256];

		if (!lim->set || !v->value ||
		    within(row, dir, lim, v->value, row->type == KT_INT ? policy_int(p, (enum knob_id)k, 0) : 0))
			continue;
		if (dir == LIMIT_ALLOWED)
			return err_set(err, -EPERM, "%s:%d: [%s] %s = %s is not one the site allows (%s) (%s:%d)",
				       v->file, v->line, row->section, row->key, v->value,
				       allowed_list(row, lim->allowed, list, sizeof(list)), l->path, lim->line);
		return err_set(err, -EPERM, "%s:%d: [%s] %s = %s is %s the site %s %lld (%s:%d)", v->file, v->line,
			       row->section, row->key, v->value, dir == LIMIT_FLOOR ? "below" : "above",
			       dir == LIMIT_FLOOR ? "floor" : "limit", lim->bound, l->path, lim->line);
	}
	return check_share(l, p, t, err);
}

int limits_check_file(const char *path, unsigned flags, const struct policy *p, const struct topo *t,
		      struct nt_err *err)
{
	struct limits *l = limits_load(path, flags, err);
	int r;

	if (!l)
		return err->code;
	r = limits_check(l, p, t, err);
	limits_free(l);
	return r;
}
