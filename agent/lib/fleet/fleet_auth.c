/* fleet_auth.c — see fleet_auth.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
