/* SPDX-License-Identifier: MIT */
/* fleet_auth.c — see fleet_auth.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleet/etcd.h"
#include "fleet/fleet_auth.h"

const char *const fleet_auth_perm_names[3] = { "read", "write", "readwrite" };

/* A host's role, one row per permission: the key is under, then the
 * host's name when with_host, then after. */
static const struct {
	enum fleet_auth_perm perm;
	const char *under;
	bool with_host;
	const char *after;
	bool prefix;
} host_perms[] = {
	{ FLEET_AUTH_READWRITE, FLEET_ROOT "hosts/", true, "", false },    /* its registration, under its lease */
	{ FLEET_AUTH_READ, FLEET_ROOT "hosts/", true, "/", true },         /* desired, shadow, status: one watch */
	{ FLEET_AUTH_WRITE, FLEET_ROOT "hosts/", true, "/status", false },
	{ FLEET_AUTH_READ, FLEET_ROOT "policies/", false, "", true },
	{ FLEET_AUTH_READ, FLEET_ROOT "classes/", false, "", true },        /* the classes' policies of record */
	{ FLEET_AUTH_READ, FLEET_TIMESTAMP_KEY, false, "", false },       /* the controller's proof of life */
};
#define N_HOST_PERMS (sizeof(host_perms) / sizeof(host_perms[0]))

static struct fleet_auth_step *step(struct fleet_auth_step *s, unsigned *n, enum fleet_auth_op op, const char *name)
{
	struct fleet_auth_step *t = &s[(*n)++];

	memset(t, 0, sizeof(*t));
	t->op = op;
	snprintf(t->name, sizeof(t->name), "%s", name);
	return t;
}

static void grant(struct fleet_auth_step *s, unsigned *n, const char *role, enum fleet_auth_perm perm,
		  const char *key, bool prefix)
{
	struct fleet_auth_step *t = step(s, n, FLEET_AUTH_ROLE_GRANT, role);

	t->perm = perm;
	t->prefix = prefix;
	snprintf(t->key, sizeof(t->key), "%s", key);
}

/* A user named as its role, and the grant. */
static void user(struct fleet_auth_step *s, unsigned *n, const char *name)
{
	step(s, n, FLEET_AUTH_USER_ADD, name);
	snprintf(step(s, n, FLEET_AUTH_USER_GRANT, name)->role, FLEET_AUTH_NAME_MAX, "%s", name);
}

static int check_hosts(const char *const *hosts, unsigned n, struct nt_err *err)
{
	for (unsigned i = 0; i < n; i++) {
		if (!fleet_name_valid(hosts[i]))
			return err_set(err, -EINVAL, "host '%.64s': not a name ([A-Za-z0-9._-], 1 to 63 bytes)",
				       hosts[i]);
		for (unsigned k = 0; k < i; k++)
			if (!strcmp(hosts[k], hosts[i]))
				return err_set(err, -EINVAL, "host '%s' given twice", hosts[i]);
	}
	return 0;
}

int fleet_auth_plan(const char *const *hosts, unsigned n, struct fleet_auth_step **ret, unsigned *ret_n,
		    struct nt_err *err)
{
	struct fleet_auth_step *s;
	char role[FLEET_AUTH_NAME_MAX], key[FLEET_NAME_MAX + 64];
	unsigned k = 0;
	int r = check_hosts(hosts, n, err);

	if (r < 0)
		return r;
	if (n > FLEET_HOSTS_MAX)
		return err_set(err, -EINVAL, "more than %d hosts", FLEET_HOSTS_MAX);
	s = calloc(8 + (size_t)n * (N_HOST_PERMS + 3), sizeof(*s));
	if (!s)
		return err_set(err, -ENOMEM, "out of memory");
	step(s, &k, FLEET_AUTH_ROLE_ADD, FLEET_AUTH_CONTROLLER);
	grant(s, &k, FLEET_AUTH_CONTROLLER, FLEET_AUTH_READWRITE, FLEET_ROOT, true);
	user(s, &k, FLEET_AUTH_CONTROLLER);
	for (unsigned i = 0; i < n; i++) {
		snprintf(role, sizeof(role), FLEET_AUTH_HOST_PREFIX "%s", hosts[i]);
		step(s, &k, FLEET_AUTH_ROLE_ADD, role);
		for (size_t p = 0; p < N_HOST_PERMS; p++) {
			snprintf(key, sizeof(key), "%s%s%s", host_perms[p].under, host_perms[p].with_host ? hosts[i] : "",
				 host_perms[p].after);
			grant(s, &k, role, host_perms[p].perm, key, host_perms[p].prefix);
		}
		user(s, &k, role);
	}
	step(s, &k, FLEET_AUTH_USER_ADD, "root");
	snprintf(step(s, &k, FLEET_AUTH_USER_GRANT, "root")->role, FLEET_AUTH_NAME_MAX, "root");
	step(s, &k, FLEET_AUTH_ENABLE, "");
	*ret = s;
	*ret_n = k;
	return 0;
}

int fleet_auth_apply(struct etcd *e, const struct fleet_auth_step *s, const char *password, struct nt_err *err)
{
	static const enum etcd_perm perms[] = { ETCD_PERM_READ, ETCD_PERM_WRITE, ETCD_PERM_READWRITE };

	switch (s->op) {
	case FLEET_AUTH_ROLE_ADD:
		return etcd_role_add(e, s->name, err);
	case FLEET_AUTH_ROLE_GRANT:
		return etcd_role_grant(e, s->name, perms[s->perm], s->key, s->prefix, err);
	case FLEET_AUTH_USER_ADD:
		return etcd_user_add(e, s->name, password ? password : "", err);
	case FLEET_AUTH_USER_GRANT:
		return etcd_user_grant(e, s->name, s->role, err);
	case FLEET_AUTH_ENABLE:
		return etcd_auth_enable(e, err);
	}
	return err_set(err, -EINVAL, "a step of no kind");
}

/* ---- password files ---------------------------------------------------- */

/* st is the effective uid's, and none of the mode bits refused is set:
 * 0, or -EPERM with why filled. */
static int owner_check(const struct stat *st, mode_t refused, char *why, size_t size)
{
	if (st->st_uid != geteuid()) {
		snprintf(why, size, "owned by uid %u, not %u", (unsigned)st->st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st->st_mode & refused) {
		snprintf(why, size, "mode %04o: group or others may %s it", (unsigned)(st->st_mode & 07777),
			 refused == 022 ? "write" : "read or write");
		return -EPERM;
	}
	return 0;
}

/* An existing password file at path: regular, not a symlink, ours, 0600
 * or stricter.  0, -ENOENT (absent), or -errno with err. */
static int password_file_check(const char *path, struct nt_err *err)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), r;
	char why[128];
	struct stat st;

	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0 && errno == ELOOP)
		return err_set(err, -EPERM, "%s: a symlink, not a password file: refusing to reuse it", path);
	if (fd < 0)
		return err_set(err, errno == EACCES ? -EPERM : -errno, "%s: %s", path, nt_strerror(errno));
	r = fstat(fd, &st) < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return err_set(err, r, "%s: %s", path, nt_strerror(-r));
	if (!S_ISREG(st.st_mode))
		return err_set(err, -EPERM, "%s: not a regular file: refusing to reuse it", path);
	if ((r = owner_check(&st, 077, why, sizeof(why))) < 0)
		return err_set(err, r, "%s: %s: refusing to reuse it as a password", path, why);
	return 0;
}

/* A new password file at path (O_EXCL: never over one that appeared). */
static int password_file_make(const char *path, struct nt_err *err)
{
	unsigned char raw[16];
	char hex[2 * sizeof(raw) + 2];
	int fd, r = 0;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return err_set(err, -errno, "getrandom: %s", nt_strerror(errno));
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero(raw, sizeof(raw));
	strcat(hex, "\n");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex))
		r = -errno;
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	explicit_bzero(hex, sizeof(hex));
	if (r < 0)
		return err_set(err, r, "%s: %s", path, nt_strerror(-r));
	return 0;
}

int fleet_auth_password_file(const char *dir, const char *user, bool make, struct nt_err *err)
{
	char path[PATH_MAX], why[128];
	struct stat st;
	int r;

	if (stat(dir, &st) < 0)
		return err_set(err, errno == EACCES ? -EPERM : -errno, "--password-dir %s: %s", dir, nt_strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return err_set(err, -EPERM, "--password-dir %s: not a directory", dir);
	if ((r = owner_check(&st, 022, why, sizeof(why))) < 0)
		return err_set(err, r, "--password-dir %s: %s", dir, why);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, user) >= sizeof(path))
		return err_set(err, -ENAMETOOLONG, "--password-dir %s: too long", dir);
	r = password_file_check(path, err);
	if (r == -ENOENT)
		return make ? password_file_make(path, err) : 0;
	return r;
}
