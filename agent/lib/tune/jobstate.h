/* SPDX-License-Identifier: MIT */
/* jobstate.h — the Slurm plugin's per-job state dirs (deploy/slurm).
 *
 * BASE/JOBID (root's, 0700), one per job whose prolog had a policy: a
 * nodetune state dir (journal.h: its journal and lock) beside the prolog's
 * checked copy of the policy (JOBSTATE_POLICY) and its outcome
 * (JOBSTATE_OUTCOME).  While a job's journal is there its settings may be
 * on the node, and no other job may apply host-wide settings: it would
 * journal that job's values as the node's originals.
 *
 * A revert the job's epilog could not finish (nodetune failing, hung)
 * leaves the dir with JOBSTATE_PENDING, one line saying why: the job is
 * over and the node keeps its settings until a retry reverts them, at the
 * next job's prolog, at the daemon's start (jobstate_retry_pending) or by
 * hand; doctor names it meanwhile.  BASE/JOBSTATE_LOCK serializes the
 * plugin's prologs and epilogs and the daemon's retry on a node.
 */
#ifndef NODETUNE_JOBSTATE_H
#define NODETUNE_JOBSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/fsroot.h"
#include "tune/apply.h"

#define JOBSTATE_DIR "run/nodetune/slurm"   /* below the root: the plugin's default state_dir= */
#define JOBSTATE_POLICY "policy.conf"       /* the prolog's checked copy of the job's policy */
#define JOBSTATE_OUTCOME "outcome"          /* the prolog's outcome, read by the job's steps */
#define JOBSTATE_PENDING "revert-pending"   /* the epilog's revert failed: why, one line */
#define JOBSTATE_LOCK "jobs.lock"           /* in BASE */

struct jobstate {
	uint32_t job;
	bool journal;          /* JOBID/journal exists: its settings may be on the node */
	bool pending;          /* JOBID/JOBSTATE_PENDING exists: its job is over */
	char why[256];         /* that file's line ("" when none) */
};

/* The job dirs in root's dir (relative to the root; a leading '/' is
 * skipped): entries named by a job id (digits, 1 to 2^32-1; other names
 * are skipped), in job order.  Returns their count with *ret (malloc'd,
 * NULL when there are none), or -errno with *ret untouched: -ENOENT when
 * dir does not exist (no job had a state dir), -EACCES, -ENOTDIR, -ENOMEM. */
int jobstate_list(const struct fsroot *root, const char *dir, struct jobstate **ret);

/* Take base's JOBSTATE_LOCK (created 0600; base must exist), waiting for
 * it when wait, else -EWOULDBLOCK while another holds it.  Returns the fd
 * (close it to release the lock), or -errno. */
int jobstate_lock(const char *base, bool wait);

/* Write jobdir/JOBSTATE_PENDING (0600, replaced, not through a symlink):
 * why as one line, control characters shown as '?'.  0 or -errno. */
int jobstate_mark_pending(const char *jobdir, const char *why);

/* Remove jobdir once nothing of its job is on the node: the files the
 * prolog, nodetune and the epilog write there, then the dir.  Returns 0
 * (also when jobdir is already gone), -EBUSY while it holds a journal
 * (nothing removed), or -errno (-ENOTEMPTY: a file of someone else's is
 * left there, and the dir with it). */
int jobstate_remove(const char *jobdir);

/* The daemon's retry at start: each pending job dir in root's JOBSTATE_DIR
 * is reverted (apply_revert, its journal written for sysroot: NULL for the
 * live host) and removed, under the lock, not waited for (a prolog or
 * epilog that holds it retries itself).  rep gathers the restores and
 * notes.  Returns the number of job dirs reverted (0: none pending, no
 * dir, or the lock busy), or -errno with err naming the first that failed
 * (its dir and marker kept; the others are still tried). */
int jobstate_retry_pending(const struct fsroot *root, const char *sysroot, struct apply_changes *rep,
			   struct nt_err *err);

#endif
