/* limits.h — the site's upper bounds on policy values
 * (/etc/nodetune/limits.conf), checked wherever a policy is applied (a
 * file, the store, SPANK): a policy beyond them is refused with the key
 * and the limit named.
 *
 *   # limits.conf: [section] key as in policies; numeric keys only
 *   [sysctl]
 *   vm.min_free_kbytes = 1048576
 *   [hugetlb]
 *   pages_1g = 64
 *   share = 25%        # pages_2m x 2 MiB + pages_1g x 1 GiB on each NUMA
 *                      # node, at most this share of that node's memory
 *
 * Each key is a numeric (integer) row of knob_table (knob.h) or [hugetlb]
 * share; a limit is a whole number in the row's range; a key set twice,
 * an unknown or non-numeric key, or a value out of range is refused as
 * "file:line: what" (ini.h's syntax).  A policy value above its limit is a
 * violation; a key the policy leaves unset is never one.
 */
#ifndef NODETUNE_LIMITS_H
#define NODETUNE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/log.h"
#include "machine/knob.h"
#include "machine/topo.h"
#include "tune/policy.h"

#define LIMITS_DEFAULT_PATH "/etc/nodetune/limits.conf"
#define LIMITS_MAX_SIZE (64u << 10)

struct limit {
	bool set;
	long long max;
	int line;                       /* where limits.conf sets it */
};

struct limits {
	char *path;                     /* as given; "" for no file */
	struct limit knob[KNOB_COUNT];  /* by enum knob_id; only numeric rows */
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

/* Parse limits from buf[0..len) (untrusted, need not be NUL-terminated),
 * named name in messages.  Returns the limits or NULL with err: -EINVAL,
 * -EFBIG, -ENOMEM. */
struct limits *limits_parse_buffer(const char *buf, size_t len, const char *name, struct nt_err *err);

/* Free; NULL is a no-op. */
void limits_free(struct limits *l);

/* Does policy p stay within l on machine t (whose NUMA nodes' memory the
 * hugetlb share is taken of; t may be NULL when l sets no share)?  Returns
 * 0, or -EPERM with err naming the first violation in knob-table order:
 * "POLICYFILE:LINE: [sec] key = V is above the site limit M (LIMITS:LINE)";
 * for the share, the node, what the policy reserves there and the limit.
 * A share limit on a machine whose node memory is unknown (0) is -EPERM
 * too: a limit that cannot be checked is not met. */
int limits_check(const struct limits *l, const struct policy *p, const struct topo *t, struct nt_err *err);

#endif
