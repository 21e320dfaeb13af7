/* SPDX-License-Identifier: MIT */
/* apply.h — apply a plan's host part, all or nothing, and revert it.
 *
 * Host files (sysfs/procfs knobs, IRQ affinities) are written only when
 * their effective value differs; each original value is journaled (journal.h)
 * before its write; each write is read back, and a refusal or a clamp (fewer
 * hugepages than asked) is a failure.  On any failure everything already
 * changed is restored from the journal before returning.
 */
#ifndef NODETUNE_APPLY_H
#define NODETUNE_APPLY_H

#include <stdbool.h>

#include "base/fsroot.h"
#include "tune/plan.h"

struct apply_change {
	char path[256];             /* below the fsroot, or "cgroup:NAME" */
	char from[PLAN_VALUE_MAX];
	char to[PLAN_VALUE_MAX];
};

#define APPLY_MAX_NOTES 8

struct apply_changes {
	struct apply_change *changes;   /* what was (or, dry run, would be) changed */
	unsigned n;
	bool rolled_back;               /* a failure was undone */
	char *notes[APPLY_MAX_NOTES];
	unsigned n_notes;
};

/* Apply pl under root with the journal in state_dir.  dry_run: fill the
 * report, touch nothing (no journal, no lock).  Returns 0; or -errno with
 * err set: -EBUSY (another nodetune holds the lock), -EEXIST (an earlier
 * apply is in effect; or, rolled back, pl's job cgroup exists already: a
 * group this run did not create is never journalled, so never removed),
 * other values after a failure that was rolled back (rep->rolled_back). */
int apply_plan(const struct plan *pl, const struct fsroot *root, const char *state_dir,
	       bool dry_run, struct apply_changes *rep, struct nt_err *err);

/* Restore everything the journal in state_dir records, in reverse order,
 * then delete the journal.  sysroot, when not NULL, must be the root the
 * journal was written for.  Nothing to revert is success (a note says so).
 * On failure the journal is kept and -errno returned with err listing the
 * first failure. */
int apply_revert(const char *state_dir, const char *sysroot, struct apply_changes *rep,
		 struct nt_err *err);

void apply_changes_release(struct apply_changes *rep);

struct journal;

/* The daemon's apply: make the host under root hold pl's values, keeping
 * in j (open, its lock held by the caller for as long as it governs the
 * host) the original of every file pl governs, changed yet or not, so
 * that `nodetune revert` restores the host as it was before any policy
 * was applied, whatever changed in between:
 *  - an existing journal (a daemon before a restart, an apply that died,
 *    another policy before a reload) keeps its originals; a journal for
 *    another root is refused (-EINVAL);
 *  - the new journal holds every original before the first write
 *    (journal_rewrite, atomic), so a crash anywhere leaves one that
 *    restores everything;
 *  - values that already match are not written; skip(path, arg) (NULL:
 *    none) leaves a path alone (a contested knob; "cgroup" for the job
 *    cgroup), though it stays journaled;
 *  - files and a job cgroup the journal holds that pl no longer governs
 *    are restored (removed) and dropped from the journal.
 * rep lists the writes and restores, with notes.  Returns 0 (the journal
 * committed), or the first failure (-errno, err): nothing is rolled back
 * here, and the journal still covers every change made; the caller
 * decides (apply_revert, or try again next interval). */
int apply_converge(const struct plan *pl, const struct fsroot *root, struct journal *j,
		   bool (*skip)(const char *path, void *arg), void *arg, struct apply_changes *rep,
		   struct nt_err *err);

/* The comparable form of a host file's content: the bracketed choice if any
 * ("always [madvise] never" -> "madvise"), else the trimmed first line, in
 * canonical cpulist form when it is one ("0,1,2" -> "0-2"). */
void apply_normalize(const char *raw, char *out, size_t size);

#endif
