/* SPDX-License-Identifier: MIT */
/* verify.h — drift between a plan and the host: read back every host
 * setting, device IRQ affinity and the job cgroup a plan asks for, and say
 * which differ.
 *
 * Owns: the comparison (both sides normalized as apply writes them:
 * apply_normalize), and the list of drifts it returns.  Promises: it reads
 * only, never writes the host and never prints; the same plan and host give
 * the same list in the same order (the plan's host settings, then its IRQs,
 * then the job cgroup), so a daemon can call it every interval and diff.
 */
#ifndef NODETUNE_VERIFY_H
#define NODETUNE_VERIFY_H

#include "base/fsroot.h"
#include "base/log.h"
#include "tune/plan.h"

enum verify_kind {
	VERIFY_SETTING,               /* a sysfs/procfs file, IRQ affinities included */
	VERIFY_CGROUP,                /* the job cgroup: expected to exist */
};

struct verify_drift {
	enum verify_kind kind;
	enum knob_id knob;            /* the policy key it comes from (irq.devices, cgroup.name) */
	char path[256];               /* below the fsroot; "cgroup" for VERIFY_CGROUP */
	char expected[PLAN_VALUE_MAX];    /* normalized; the cgroup's name */
	char actual[PLAN_VALUE_MAX];      /* normalized; "(unreadable)", "(missing)" */
};

struct verify_result {
	unsigned checked;             /* settings compared (the cgroup counts as one) */
	unsigned n;                   /* drifts in drift[] */
	struct verify_drift *drift;   /* owned; verify_result_release frees it */
};

/* Compare pl with the host below root.  A file that cannot be read is a
 * drift with actual "(unreadable)".  The job cgroup is checked only when
 * root is the host's "/" (fsroot_is_host): a captured tree has none.
 * Returns 0 with *ret filled (release it), or -ENOMEM with err and *ret
 * untouched. */
int verify_plan(const struct plan *pl, const struct fsroot *root, struct verify_result *ret,
		struct nt_err *err);

/* Free rep's drifts and zero it; a zeroed report is a no-op. */
void verify_result_release(struct verify_result *rep);

#endif
