/* SPDX-License-Identifier: MIT */
/* asuser.c — see asuser.h. */
#include "base/asuser.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int asuser_lookup(uid_t uid, gid_t gid, struct asuser *ret)
{
	struct passwd pw, *found = NULL;
	char buf[4096];
	int n = ASUSER_MAX_GROUPS;

	memset(ret, 0, sizeof(*ret));
	ret->uid = uid;
	ret->gid = gid;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || !found ||
	    getgrouplist(found->pw_name, gid, ret->groups, &n) < 0) {
		/* no name, or more groups than we keep: gid alone, or the
		 * first ASUSER_MAX_GROUPS (getgrouplist filled them) */
		n = found && n > ASUSER_MAX_GROUPS ? ASUSER_MAX_GROUPS : 0;
	}
	if (n == 0) {
		ret->groups[0] = gid;
		n = 1;
	}
	ret->n_groups = n;
	return 0;
}

/* setfsuid/setfsgid return the previous id whatever happens; asking with
 * an invalid id (-1) changes nothing and tells the current one. */
static uid_t fsuid_now(void)
{
	return (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
}

static gid_t fsgid_now(void)
{
	return (gid_t)syscall(SYS_setfsgid, (gid_t)-1);
}

int asuser_enter(const struct asuser *u, struct asuser_saved *saved)
{
	memset(saved, 0, sizeof(*saved));
	if (geteuid() != 0)
		return u->uid == geteuid() ? 0 : -EPERM;
	saved->fsuid = fsuid_now();
	saved->fsgid = fsgid_now();
	saved->n_groups = (int)syscall(SYS_getgroups, ASUSER_MAX_GROUPS, saved->groups);
	if (saved->n_groups < 0)
		return -errno;
	if (syscall(SYS_setgroups, (size_t)u->n_groups, u->groups) < 0)
		return -errno;
	saved->entered = 1;
	syscall(SYS_setfsgid, u->gid);
	syscall(SYS_setfsuid, u->uid);
	if (fsuid_now() != u->uid || fsgid_now() != u->gid) {
		asuser_leave(saved);
		return -EPERM;
	}
	return 0;
}

void asuser_leave(struct asuser_saved *saved)
{
	if (!saved->entered)
		return;
	/* the uid first: back to fsuid 0 the file capabilities return, and
	 * with them the right to set the rest */
	syscall(SYS_setfsuid, saved->fsuid);
	syscall(SYS_setfsgid, saved->fsgid);
	syscall(SYS_setgroups, (size_t)saved->n_groups, saved->groups);
	saved->entered = 0;
}
