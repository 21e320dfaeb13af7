/* SPDX-License-Identifier: MIT */
/* limits.h — the site's bounds on policy values
 * (/etc/nodetune/limits.conf), checked wherever a policy is applied (apply,
 * run, ab and bisect (each arm, and each trial again), the daemon, the
 * store, SPANK): a policy beyond them is refused with the key and the limit
 * named.
 *
 *   # limits.conf: [section] key as in policies
 *   [sysctl]
 *   vm.min_free_kbytes = 1048576   # a ceiling: at most this
 *   [sched]
 *   nice = 0                       # a floor: at least this (a lower nice is more priority)
 *   [thp]
 *   enabled = madvise,never        # an allowed set: one of these
 *   [hugetlb]
 *   pages_1g = 64
 *   share = 25%        # pages_2m x 2 MiB + pages_1g x 1 GiB on each NUMA
 *                      # node, at most this share of that node's memory
 *
 * Which way a limit bounds its key is the key's, not the file's: one table
 * (limits.c, limits_direction()) gives each limitable key a direction.  A
 * numeric key's limit is a whole number in the row's range, a ceiling or a
 * floor; a choice key's limit is a comma-separated set of its values.  A
 * key set twice, an unknown or unlimitable key, or a value out of range is
 * refused as "file:line: what" (ini.h's syntax).  A key the policy leaves
 * unset is never a violation.
 */
#ifndef NODETUNE_LIMITS_H
#define NODETUNE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "machine/knob.h"
#include "machine/topo.h"
#include "tune/policy.h"

#define LIMITS_DEFAULT_PATH "/etc/nodetune/limits.conf"
#define LIMITS_MAX_SIZE (64u << 10)

/* How a limit bounds its key (limits_direction). */
enum limit_dir {
	LIMIT_NONE,                     /* the key cannot be limited (text, names, CPU lists) */
	LIMIT_CEILING,                  /* the policy's value is at most the limit */
	LIMIT_FLOOR,                    /* at least the limit */
	LIMIT_ALLOWED,                  /* one of the limit's values (a choice key) */
};

struct limit {
	bool set;
	long long bound;                /* LIMIT_CEILING, LIMIT_FLOOR */
	uint64_t allowed;               /* LIMIT_ALLOWED: bit i for the row's values[i] */
	int line;                       /* where limits.conf sets it */
};

struct limits {
	char *path;                     /* as given; "" for no file */
	struct limit knob[KNOB_COUNT];  /* by enum knob_id; only limitable rows */
	struct limit hugetlb_share;     /* percent of each node's memory, 0..100 */
};

/* Load the limits from path.  path NULL means LIMITS_DEFAULT_PATH, and
 * then a missing file is no limits (an empty struct, path ""); a path the
 * caller names must exist.  flags: POLICY_TRUSTED_ONLY refuses a file not
 * owned by root or writable by group or others (policy_trust_flags()).
 * Returns the limits (limits_free), or NULL with err: -ENOENT, -EACCES,
 * -EISDIR, -EPERM (untrusted), -EFBIG, -EINVAL (content: "file:line:
 * what"), -ENOMEM. */
struct limits *limits_load(const char *path, unsigned flags, struct nt_err *err);

/* Free; NULL is a no-op. */
void limits_free(struct limits *l);

/* How a limit on knob k bounds it: LIMIT_NONE for a key limits.conf
 * refuses. */
enum limit_dir limits_direction(enum knob_id k);

/* Does policy p stay within l on machine t (whose NUMA nodes' memory the
 * hugetlb share is taken of; t may be NULL when l sets no share)?  Returns
 * 0, or -EPERM with err naming the first violation in knob-table order:
 * "POLICYFILE:LINE: [sec] key = V is above the site limit M (LIMITS:LINE)"
 * (a ceiling), "... is below the site floor M (...)" (a floor), "... is not
 * one the site allows (a, b) (...)" (an allowed set); for the share, the
 * node, what the policy reserves there and the limit.
 * A share limit on a machine whose node memory is unknown (0) is -EPERM
 * too: a limit that cannot be checked is not met. */
int limits_check(const struct limits *l, const struct policy *p, const struct topo *t, struct nt_err *err);

/* The one "policy -> site limits" step every verb, the daemon and ab's
 * trials take: load the limits at path (limits_load's NULL and flags) and
 * check p on t (limits_check).  Returns 0, or limits_load's errors or
 * limits_check's -EPERM, with err; nothing is kept. */
int limits_check_file(const char *path, unsigned flags, const struct policy *p, const struct topo *t,
		      struct nt_err *err);

#endif
