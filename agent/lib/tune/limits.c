/* limits.c — see limits.h.
 *
 * Divisions: one assignment of limits.conf; loading (a file, a buffer);
 * checking a policy (per knob, then the hugetlb share of each node).
 */
#include "tune/limits.h"

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

static int set_limit(struct limit *lim, long long v, int line)
{
	int first = lim->line;

	if (lim->set)
		return first;
	*lim = (struct limit){ .set = true, .max = v, .line = line };
	return 0;
}

/* ini_fn: one "key = value" of limits.conf into the struct limits at arg. */
static int on_assignment(const char *section, const char *key, const char *value, int line, void *arg,
			 struct nt_err *err)
{
	struct limits *l = arg;
	const char *name = l->path;
	long long v;
	int k, dup;

	if (!section[0])
		return err_set(err, -EINVAL, "%s:%d: key '%.64s' before any [section]", name, line, key);
	if (!strcmp(section, "hugetlb") && !strcmp(key, "share")) {
		if (parse_percent(value, &v) < 0)
			return err_set(err, -EINVAL, "%s:%d: [hugetlb] share '%.64s': expected a whole percent 0%% to 100%%",
				       name, line, value);
		dup = set_limit(&l->hugetlb_share, v, line);
	} else {
		k = knob_find(section, key);
		if (k < 0)
			return err_set(err, -EINVAL, "%s:%d: [%.64s] %.64s: not a policy key (see `nodetune keys`)",
				       name, line, section, key);
		if (knob_table[k].type != KT_INT)
			return err_set(err, -EINVAL, "%s:%d: [%s] %s: not a numeric key; limits bound numbers only",
				       name, line, section, key);
		if (parse_bound(&knob_table[k], value, &v) < 0)
			return err_set(err, -EINVAL, "%s:%d: [%s] %s '%.64s': expected a whole number from %lld to %lld",
				       name, line, section, key, value, knob_table[k].min, knob_table[k].max);
		dup = set_limit(&l->knob[k], v, line);
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
			       at->file, at->line, want / MIB, l->hugetlb_share.max, l->path, l->hugetlb_share.line);
	for (unsigned n = 0; n < t->n_numa; n++) {
		unsigned long long mem = t->numa[n].memory_bytes;

		/* both sides below 2^57: pages are bounded by their rows, node memory by 2^50 */
		if (want * 100 <= (mem < (1ull << 50) ? mem : 1ull << 50) * (unsigned long long)l->hugetlb_share.max)
			continue;
		return err_set(err, -EPERM, "%s:%d: [hugetlb] pages reserve %llu MiB on NUMA node %u, above the site limit share = %lld%% of its %llu MiB (%s:%d)",
			       at->file, at->line, want / MIB, t->numa[n].os_index, l->hugetlb_share.max, mem / MIB,
			       l->path, l->hugetlb_share.line);
	}
	return 0;
}

int limits_check(const struct limits *l, const struct policy *p, const struct topo *t, struct nt_err *err)
{
	for (unsigned k = 0; k < knob_count; k++) {
		const struct limit *lim = &l->knob[k];
		const struct policy_value *v = &p->v[k];

		if (!lim->set || !v->value || policy_int(p, (enum knob_id)k, 0) <= lim->max)
			continue;
		return err_set(err, -EPERM, "%s:%d: [%s] %s = %s is above the site limit %lld (%s:%d)", v->file, v->line,
			       knob_table[k].section, knob_table[k].key, v->value, lim->max, l->path, lim->line);
	}
	return check_share(l, p, t, err);
}
