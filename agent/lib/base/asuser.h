/* SPDX-License-Identifier: MIT */
/* asuser.h — file access with a user's credentials from a root process
 * (the SPANK plugin in slurmd and slurmstepd, which must open what a job's
 * user names as that user, never as root).
 *
 * Only the calling thread changes: its file-system uid and gid and its
 * supplementary groups are set by the raw system calls (setfsuid,
 * setfsgid, setgroups), which act on one thread, where glibc's wrappers
 * of setgroups/setegid would change every thread of the process (and
 * slurmstepd's other threads must stay root).  While entered, paths are
 * resolved and opened with the user's permissions: a file or directory the
 * user could not read is EACCES, as for the user.  Nothing is forked. */
#ifndef NODETUNE_ASUSER_H
#define NODETUNE_ASUSER_H

#include <stddef.h>
#include <sys/types.h>

#define ASUSER_MAX_GROUPS 256

struct asuser {
	uid_t uid;
	gid_t gid;                           /* primary group */
	gid_t groups[ASUSER_MAX_GROUPS];     /* supplementary groups */
	int n_groups;
};

/* The identity to return to (asuser_leave). */
struct asuser_saved {
	uid_t fsuid;
	gid_t fsgid;
	gid_t groups[ASUSER_MAX_GROUPS];
	int n_groups;
	int entered;                         /* 0: nothing to restore */
};

/* Fill *ret for uid with primary group gid and the supplementary groups
 * the user database gives uid's name (getgrouplist; at most
 * ASUSER_MAX_GROUPS, the rest dropped: fewer groups only ever mean less
 * access).  A uid without a name gets gid alone.  Returns 0. */
int asuser_lookup(uid_t uid, gid_t gid, struct asuser *ret);

/* Take u's file-system identity on the calling thread, keeping the
 * current one in *saved.  A process that is not root can only be itself:
 * then nothing changes when u is its own uid, and -EPERM otherwise.
 * Returns 0, or -errno (-EPERM when the kernel did not take the identity:
 * then the thread is as it was). */
int asuser_enter(const struct asuser *u, struct asuser_saved *saved);

/* Return to the identity in saved (no-op when nothing was entered).  Root
 * always gets its own back; this cannot fail for it. */
void asuser_leave(struct asuser_saved *saved);

#endif
