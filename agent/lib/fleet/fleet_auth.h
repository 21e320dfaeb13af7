/* SPDX-License-Identifier: MIT */
/* fleet_auth.h — least privilege in etcd: the roles and users a fleet
 * needs, as data (`nodetune fleet init-auth` prints them as etcdctl
 * commands).
 *
 *   nodetune-controller      readwrite on /nodetune/ (prefix)
 *   nodetune-host-NAME       readwrite /nodetune/hosts/NAME (its registration,
 *                              under its lease; revoking it needs write)
 *                            read /nodetune/hosts/NAME/ (prefix: its desired,
 *                              shadow and status, watched as one prefix)
 *                            write /nodetune/hosts/NAME/status
 *                            read /nodetune/policies/ (prefix)
 *                            read /nodetune/timestamp (exact)
 *   root                     etcd's root role (etcd needs it to enable auth)
 *
 * and nothing else: a host's user cannot write any desired or shadow key,
 * nor another host's keys, nor a policy or a rollout.  Each role has a user
 * of the same name.  The last step enables auth.
 */
#ifndef NODETUNE_FLEET_AUTH_H
#define NODETUNE_FLEET_AUTH_H

#include <stdbool.h>

#include "fleet/fleet_doc.h"

#define FLEET_AUTH_CONTROLLER "nodetune-controller"
#define FLEET_AUTH_HOST_PREFIX "nodetune-host-"
#define FLEET_AUTH_NAME_MAX (FLEET_NAME_MAX + 16)

enum fleet_auth_op { FLEET_AUTH_ROLE_ADD, FLEET_AUTH_ROLE_GRANT, FLEET_AUTH_USER_ADD, FLEET_AUTH_USER_GRANT,
		     FLEET_AUTH_ENABLE };
enum fleet_auth_perm { FLEET_AUTH_READ, FLEET_AUTH_WRITE, FLEET_AUTH_READWRITE };
extern const char *const fleet_auth_perm_names[3];     /* "read", "write", "readwrite" (etcdctl's) */

struct fleet_auth_step {
	enum fleet_auth_op op;
	char name[FLEET_AUTH_NAME_MAX];   /* the role (ROLE_*) or the user (USER_*) */
	char role[FLEET_AUTH_NAME_MAX];   /* USER_GRANT: the role granted */
	enum fleet_auth_perm perm;        /* ROLE_GRANT */
	char key[FLEET_NAME_MAX + 64];    /* ROLE_GRANT: the key, or with prefix every key under it */
	bool prefix;
};

/* The steps for the controller and hosts[0..n) (each a fleet name, none
 * twice), in the order they must run: the roles and their grants, the
 * users and their roles, root, then auth enable.  Returns 0 with *ret
 * (malloc'd; the caller frees) and *ret_n, or -EINVAL (a host that is not
 * a name, or given twice; err names it), -ENOMEM; nothing returned on
 * error. */
int fleet_auth_plan(const char *const *hosts, unsigned n, struct fleet_auth_step **ret, unsigned *ret_n,
		    struct nt_err *err);

/* Take step s through the gateway (etcd.h's auth administration calls);
 * password is the USER_ADD's (ignored otherwise).  Returns 0, -EEXIST (the
 * role or user exists already: a second run goes on), or the call's
 * errno with err. */
struct etcd;
int fleet_auth_apply(struct etcd *e, const struct fleet_auth_step *s, const char *password, struct nt_err *err);

/* The password file dir/user of an etcd user: when present, reused only
 * if it is a regular file (not a symlink) owned by the effective uid and
 * readable by nobody else (mode 0600 or 0400); when absent and make, made
 * with 32 random hex digits and a newline, mode 0600 (O_EXCL, never
 * through a symlink); absent and not make: 0, nothing made.  dir itself
 * must be owned by the effective uid and writable by nobody else: whoever
 * may write it could plant the file.  Returns 0, or -EPERM (dir or the
 * file fails those checks: err names it and why), -ENOENT (no dir),
 * -ENAMETOOLONG, or another -errno of the file's creation with err naming
 * it; a file is created only on success. */
int fleet_auth_password_file(const char *dir, const char *user, bool make, struct nt_err *err);

#endif
