/* SPDX-License-Identifier: MIT */
/* fleet_creds.h — the fleet's credentials to etcd, as etcdctl takes them:
 * a CA bundle, a client certificate and key, a user and the file that
 * holds its password.  From the command line (--cacert, --cert, --key,
 * --user, --password-file) over /etc/nodetune/fleet.conf, so that no
 * secret is in ps or in the unit.
 *
 * fleet.conf is lines of "key = value" (endpoints, cacert, cert, key,
 * user, password-file, insecure-plaintext = yes|no, fleet-id; '#'
 * comments, blank lines); it holds URLs, paths and names, never a
 * password.  endpoints (URL[,URL...], each http:// or https://) is the
 * store the verbs use when --endpoints is not given, and the daemon's
 * when it is given --host; fleet-id is the fleet this host or controller
 * is of (fleet/sign.h).  Neither is a credential, but both are kept where
 * the verbs and the daemon read them.  It must be owned by root (or
 * the user running) and not writable by group or others, and so must the
 * CA and certificate files; the password file and the client key must be
 * owned by root (or the user running) and readable by nobody else (mode
 * 0600 or 0400).  The password file's first line is the password.  A login
 * is refused on an http:// endpoint unless insecure-plaintext is set.
 */
#ifndef NODETUNE_FLEET_CREDS_H
#define NODETUNE_FLEET_CREDS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/log.h"

struct etcd;

#define FLEET_CONF "/etc/nodetune/fleet.conf"
#define FLEET_USER_MAX 129
#define FLEET_ENDPOINTS_MAX 1024

/* "" where unset. */
struct fleet_creds {
	char endpoints[FLEET_ENDPOINTS_MAX]; /* URL[,URL...] (not a credential: see above) */
	char cacert[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
	char user[FLEET_USER_MAX];
	char password_file[PATH_MAX];
	bool insecure_plaintext;        /* a login may go over http:// (--insecure-plaintext) */
	char fleet_id[64];               /* the fleet (fleet/sign.h: signed into every document) */
};

/* Read path (checked as above) into *ret.  must_exist false: a missing
 * file is 0 with *ret zeroed.  Returns 0 or -errno with err naming path. */
int fleet_creds_load(const char *path, bool must_exist, struct fleet_creds *ret, struct nt_err *err);

/* Each field set in over replaces base's. */
void fleet_creds_merge(struct fleet_creds *base, const struct fleet_creds *over);

/* Give e the credentials: TLS files (checked as above, then
 * etcd_set_tls) and the user with the password read from its file
 * (checked as above; zeroed after).  Nothing set: 0, plaintext and no
 * login as before.  Returns 0, or -EINVAL (a user without a password file
 * or the other way round, a cert without a key, a login to an http://
 * endpoint without insecure_plaintext), -EPERM (a password file or key
 * others can read, a CA or certificate others can write, one not owned by
 * root), -ENOENT (a file missing; -EPERM too for one not readable), err
 * naming the option and file; -EACCES is left to the store's refusals. */
int fleet_creds_apply(struct etcd *e, const struct fleet_creds *c, struct nt_err *err);

/* The first line of the password file path, checked as above (a file
 * others can read, or not root's, is -EPERM; an empty first line
 * -EINVAL).  0 with *ret (the caller zeroes and frees it), or -errno with
 * err naming path. */
int fleet_creds_read_password(const char *path, char **ret, struct nt_err *err);

/* Is any credential set? */
bool fleet_creds_any(const struct fleet_creds *c);

#endif
