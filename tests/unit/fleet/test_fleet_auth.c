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
#include <cmocka.h>

#include "fleet/fleet_auth.h"

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
	assert_int_equal(k, 5);
	assert_true(may(g, k, "/nodetune/hosts/h1", true));              /* registration */
	assert_true(may(g, k, "/nodetune/timestamp", false));            /* the controller's proof of life */
	assert_false(may(g, k, "/nodetune/timestamp", true));
	assert_false(may(g, k, "/nodetune/seq", false));
	assert_true(may(g, k, "/nodetune/hosts/h1/status", true));
	assert_true(may(g, k, "/nodetune/hosts/h1/desired", false));
	assert_true(may(g, k, "/nodetune/hosts/h1/shadow", false));
	assert_true(may(g, k, "/nodetune/policies/abc", false));
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
	assert_int_equal(n, 4 + 2 * 8 + 3);   /* per host: role, user, grant, 5 permissions */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_plan_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
