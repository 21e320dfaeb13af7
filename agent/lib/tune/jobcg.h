/* SPDX-License-Identifier: MIT */
/* jobcg.h — the job cgroup, through libcgroup, on cgroup v1, hybrid and v2
 * hosts: a cpuset (the ranks' CPUs and nodes) and a CPU weight (cpu.weight
 * on v2; cpu.shares = weight * 1024 / 100 where the cpu controller is on a
 * v1 hierarchy).  Live host only.
 *
 * Ownership is never decided by a name.  jobcg_create makes each directory
 * of the group with mkdir(2) itself (EEXIST: someone else's, refused), and
 * returns the group's identity: "CTL=DEV:INO:BTIME" for each hierarchy's
 * directory (the cpuset's, and the cpu controller's where that is another
 * v1 mount), comma-separated, lower-case hex (BTIME "0.0" where the file
 * system keeps no birth time).  The caller journals it; jobcg_delete
 * removes a group only while its directories still have that identity, so
 * a group removed and made again by someone else under the name is left
 * alone. */
#ifndef NODETUNE_JOBCG_H
#define NODETUNE_JOBCG_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/log.h"

/* Can this host have a job cgroup (libcgroup initialises, cpuset mounted)?
 * When not, why says so. */
bool jobcg_available(char *why, size_t size);

bool jobcg_exists(const char *name);

#define JOBCG_ID_MAX 160        /* an identity, NUL included (< JOURNAL_VALUE_MAX) */

/* Create name with its cpuset and weight (weight 0: leave): each directory
 * made here (mkdir, not libcgroup's, which takes an existing one as made),
 * then its values set.  0 with the group's identity in ret_id; or -EEXIST
 * when a directory of the name exists (someone else's: never taken over),
 * -ENODEV (no such hierarchy), other -errno, with err; on error nothing
 * made here is left and ret_id is untouched. */
int jobcg_create(const char *name, const char *cpus, const char *mems, unsigned weight,
		 char ret_id[JOBCG_ID_MAX], struct nt_err *err);

/* Is the group name the one id (jobcg_create's) describes: every directory
 * id lists that is still there with its device, inode and birth time, and
 * at least one still there?  (A directory gone from a hierarchy is no
 * one else's group: systemd removes an empty group of a controller it
 * manages, cpu on cgroup v1, on daemon-reload.) */
bool jobcg_is(const char *name, const char *id);

/* Move pid into name (cpuset and cpu controllers). */
int jobcg_attach(const char *name, pid_t pid, struct nt_err *err);

/* Delete name, moving any tasks left to the parent, when it is the group id
 * describes (jobcg_is).  0 (deleted, or missing); -ESTALE with err when a
 * group of that name is not that one (left alone, its tasks too); -EIO. */
int jobcg_delete(const char *name, const char *id, struct nt_err *err);

#endif
