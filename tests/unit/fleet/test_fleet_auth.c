/* SPDX-License-Identifier: MIT */
/* test_fleet_auth.c — the fleet's roles and users (fleet_auth.h): a host's
 * role holds exactly its four permissions and none on another host, a
 * desired or shadow key, a policy write or a rollout; the controller's is
 * readwrite on /nodetune/; every role has its user; root, then auth enable
 * last; bad and repeated host names refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fleet/fleet_auth.h"
#include "test_util.h"

/* The grants of role in s[0..n). */
static unsigned grants(const struct fleet_auth_step *s, unsigned n, const char *role,
		       const struct fleet_auth_step **out)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (s[i].op == FLEET_AUTH_ROLE_GRANT && !strcmp(s[i].name, role))
			out[k++] = &s[i];
	return k;
}

/* Does a grant of perm (or readwrite) cover key? */
static bool may(const struct fleet_auth_step *const *g, unsigned n, const char *key, bool write)
{
	for (unsigned i = 0; i < n; i++) {
		bool covers = g[i]->prefix ? !strncmp(key, g[i]->key, strlen(g[i]->key)) : !strcmp(key, g[i]->key);
		bool perm = g[i]->perm == FLEET_AUTH_READWRITE || g[i]->perm == (write ? FLEET_AUTH_WRITE : FLEET_AUTH_READ);

		if (covers && perm)
			return true;
	}
	return false;
}

static void test_plan(void **state)
{
	const char *hosts[] = { "h1", "h2" };
	const struct fleet_auth_step *g[16];
	struct fleet_auth_step *s;
	struct nt_err err = { 0 };
	unsigned n, k;

	(void)state;
	assert_int_equal(fleet_auth_plan(hosts, 2, &s, &n, &err), 0);
	/* h1: its own keys, and nothing else */
	k = grants(s, n, "nodetune-host-h1", g);
	assert_int_equal(k, 6);
	assert_true(may(g, k, "/nodetune/hosts/h1", true));              /* registration */
	assert_true(may(g, k, "/nodetune/timestamp", false));            /* the controller's proof of life */
	assert_false(may(g, k, "/nodetune/timestamp", true));
	assert_false(may(g, k, "/nodetune/seq", false));
	assert_true(may(g, k, "/nodetune/hosts/h1/status", true));
	assert_true(may(g, k, "/nodetune/hosts/h1/desired", false));
	assert_true(may(g, k, "/nodetune/hosts/h1/shadow", false));
	assert_true(may(g, k, "/nodetune/policies/abc", false));
	assert_true(may(g, k, "/nodetune/classes/0123456789ab/record", false));   /* the policy of record */
	assert_false(may(g, k, "/nodetune/classes/0123456789ab/record", true));
	assert_false(may(g, k, "/nodetune/hosts/h1/desired", true));
	assert_false(may(g, k, "/nodetune/hosts/h1/shadow", true));
	assert_false(may(g, k, "/nodetune/hosts/h2/status", true));
	assert_false(may(g, k, "/nodetune/hosts/h2/desired", false));
	assert_false(may(g, k, "/nodetune/hosts/h10", true));            /* no prefix over h1* */
	assert_false(may(g, k, "/nodetune/hosts/h10/desired", false));
	assert_false(may(g, k, "/nodetune/policies/abc", true));
	assert_false(may(g, k, "/nodetune/rollouts/r", false));
	/* the controller: everything under /nodetune/ */
	k = grants(s, n, FLEET_AUTH_CONTROLLER, g);
	assert_int_equal(k, 1);
	assert_true(may(g, k, "/nodetune/hosts/h2/desired", true));
	assert_false(may(g, k, "/other", false));
	/* each role its user; root; auth enable last */
	for (unsigned i = 0; i < n; i++) {
		bool has_user = false;

		if (s[i].op != FLEET_AUTH_ROLE_ADD)
			continue;
		for (unsigned j = i; j < n; j++)
			has_user |= s[j].op == FLEET_AUTH_USER_GRANT && !strcmp(s[j].role, s[i].name) &&
				    !strcmp(s[j].name, s[i].name);
		assert_true(has_user);
	}
	assert_int_equal(s[n - 3].op, FLEET_AUTH_USER_ADD);
	assert_string_equal(s[n - 3].name, "root");
	assert_string_equal(s[n - 2].role, "root");
	assert_int_equal(s[n - 1].op, FLEET_AUTH_ENABLE);
	assert_int_equal(n, 4 + 2 * 9 + 3);   /* per host: role, user, grant, 6 permissions */
	free(s);
}

static void test_plan_refusals(void **state)
{
	struct fleet_auth_step *s = NULL;
	struct nt_err err = { 0 };
	unsigned n = 0;

	(void)state;
	assert_int_equal(fleet_auth_plan((const char *[]){ "h1", "../h2" }, 2, &s, &n, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'../h2'"));
	assert_int_equal(fleet_auth_plan((const char *[]){ "h1", "h1" }, 2, &s, &n, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "given twice"));
	assert_null(s);
	assert_int_equal(fleet_auth_plan(NULL, 0, &s, &n, &err), 0);        /* the controller alone */
	assert_int_equal(n, 4 + 3);
	free(s);
}

/* fleet_auth_password_file on dir/user: -EPERM naming the file and why,
 * and the file as it was. */
static void refused(const char *dir, const char *user, const char *says)
{
	struct nt_err err = { 0 };

	assert_int_equal(fleet_auth_password_file(dir, user, true, &err), -EPERM);
	assert_non_null(strstr(err.msg, dir));
	assert_non_null(strstr(err.msg, says));
}

/* A password file is made 0600 with 32 hex digits when absent, reused
 * when it is ours and 0600; one a symlink, another's, or others may read,
 * and a dir others may write, are refused (init-auth would hand etcd a
 * password someone else knows). */
static void test_password_file(void **state)
{
	char dir[64], path[128], target[128], first[64] = "", again[64] = "";
	struct nt_err err = { 0 };
	struct stat st;
	FILE *f;

	(void)state;
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(chmod(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/u", dir);
	assert_int_equal(fleet_auth_password_file(dir, "u", true, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_non_null(f = fopen(path, "r"));
	assert_non_null(fgets(first, sizeof(first), f));
	fclose(f);
	assert_int_equal(strlen(first), 33);
	assert_int_equal(strspn(first, "0123456789abcdef"), 32);
	assert_int_equal(fleet_auth_password_file(dir, "u", true, &err), 0);  /* reused as it is */
	assert_non_null(f = fopen(path, "r"));
	assert_non_null(fgets(again, sizeof(again), f));
	fclose(f);
	assert_string_equal(first, again);
	assert_int_equal(chmod(path, 0644), 0);
	refused(dir, "u", "mode 0644: group or others may read or write it");
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(fleet_auth_password_file(dir, "u", true, &err), 0);
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	assert_int_equal(test_write(dir, "elsewhere", "planted\n"), 0);
	assert_int_equal(chmod(target, 0600), 0);
	assert_int_equal(symlink(target, strcat(strcpy(path, dir), "/ln")), 0);
	refused(dir, "ln", "a symlink");
	if (geteuid() == 0) {
		assert_int_equal(chown(target, 65534, 65534), 0);
		refused(dir, "elsewhere", "owned by uid 65534");
	}
	assert_int_equal(mkdir(strcat(strcpy(path, dir), "/d"), 0700), 0);
	refused(dir, "d", "not a regular file");
	assert_int_equal(fleet_auth_password_file(dir, "absent", false, &err), 0);     /* checked, not made */
	assert_int_equal(access(strcat(strcpy(path, dir), "/absent"), F_OK), -1);
	assert_int_equal(chmod(dir, 0777), 0);
	refused(dir, "new", "--password-dir");
	assert_int_equal(access(strcat(strcpy(path, dir), "/new"), F_OK), -1);  /* nothing made */
	assert_int_equal(chmod(dir, 0700), 0);
	test_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_plan_refusals),
		cmocka_unit_test(test_password_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
