/* SPDX-License-Identifier: MIT */
/* test_fleet_creds.c — the fleet's credentials (fleet_creds.h): fleet.conf
 * parsed strictly (each refusal names file:line), the options over the
 * file, the owner and mode checks of the conf and the password file, and
 * what fleet_creds_apply refuses before any request. */
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

#include "fleet/etcd.h"
#include "fleet/fleet_creds.h"
#include "fleet/fleet_creds_test.h"
#include "test_util.h"

static int parse(const char *text, struct fleet_creds *c, struct nt_err *err)
{
	return fleet_creds_parse(text, strlen(text), "/etc/nodetune/fleet.conf", c, err);
}

static void test_parse(void **state)
{
	struct fleet_creds c;
	struct nt_err err = { 0 };

	(void)state;
	assert_int_equal(parse("# the fleet\n\ncacert = /etc/ssl/etcd-ca.pem\n  user=nodetune-host-h1  \n"
			       "password-file = /etc/nodetune/etcd.password\r\ncert = /c.pem\nkey = /k.pem", &c, &err), 0);
	assert_string_equal(c.cacert, "/etc/ssl/etcd-ca.pem");
	assert_string_equal(c.user, "nodetune-host-h1");
	assert_string_equal(c.password_file, "/etc/nodetune/etcd.password");
	assert_string_equal(c.cert, "/c.pem");
	assert_string_equal(c.key, "/k.pem");
	assert_false(c.insecure_plaintext);
	assert_int_equal(parse("insecure-plaintext = yes\n", &c, &err), 0);
	assert_true(c.insecure_plaintext);
	assert_int_equal(parse("insecure-plaintext = no\n", &c, &err), 0);
	assert_false(c.insecure_plaintext);
	assert_int_equal(parse("", &c, &err), 0);
	assert_false(fleet_creds_any(&c));
	assert_string_equal(c.endpoints, "");
	/* the store's URLs: not a credential (any() says nothing of them) */
	assert_int_equal(parse("endpoints = https://10.0.0.5:2379,https://etcd-2:2379\n", &c, &err), 0);
	assert_string_equal(c.endpoints, "https://10.0.0.5:2379,https://etcd-2:2379");
	assert_false(fleet_creds_any(&c));
	assert_int_equal(parse("endpoints=http://127.0.0.1:2379\n", &c, &err), 0);
	assert_string_equal(c.endpoints, "http://127.0.0.1:2379");
}

static void test_parse_refusals(void **state)
{
	static const struct { const char *text, *msg; } cases[] = {
		{ "cacert = /a\npassword = hunter2\n", "fleet.conf:2: unknown key 'password'" },
		{ "user = a\nuser = b\n", "fleet.conf:2: user given twice" },
		{ "cacert /a\n", "fleet.conf:1: not 'key = value'" },
		{ "cacert = relative.pem\n", "fleet.conf:1: cacert: not an absolute path" },
		{ "user = root:secret\n", "fleet.conf:1: user: a name without ':'" },
		{ "key =\n", "fleet.conf:1: key: an empty or too long value" },
		{ "insecure-plaintext = 1\n", "fleet.conf:1: insecure-plaintext: yes or no" },
		{ "insecure-plaintext = yes\ninsecure-plaintext = yes\n", "fleet.conf:2: insecure-plaintext given twice" },
		{ "endpoints = 10.0.0.5:2379\n", "fleet.conf:1: endpoints: not http:// or https:// URLs" },
		{ "endpoints = https://a:2379,\n", "fleet.conf:1: endpoints: not http:// or https:// URLs" },
		{ "endpoints = https://a:2379,,https://b:2379\n", "fleet.conf:1: endpoints: not http:// or https:// URLs" },
		{ "endpoints = https://a:2379, https://b:2379\n", "fleet.conf:1: endpoints: not http:// or https:// URLs" },
		{ "endpoints = https://a'b:2379\n", "fleet.conf:1: endpoints: not http:// or https:// URLs" },
		{ "endpoints = https://\n", "fleet.conf:1: endpoints: not http:// or https:// URLs" },
		{ "endpoints = https://a:1\nendpoints = https://a:1\n", "fleet.conf:2: endpoints given twice" },
	};
	struct fleet_creds c = { .user = "kept" };
	struct nt_err err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(cases[i].text, &c, &err), -EINVAL);
		assert_non_null(strstr(err.msg, cases[i].msg));
		assert_string_equal(c.user, "kept");        /* untouched on error */
	}
}

static void test_merge(void **state)
{
	struct fleet_creds base = { .cacert = "/file-ca", .user = "file-user", .password_file = "/file-pw",
				    .insecure_plaintext = true };
	struct fleet_creds over = { .user = "cli-user" };

	(void)state;
	snprintf(base.endpoints, sizeof(base.endpoints), "https://file:2379");
	fleet_creds_merge(&base, &over);
	assert_string_equal(base.endpoints, "https://file:2379");      /* the file's, --endpoints not given */
	snprintf(over.endpoints, sizeof(over.endpoints), "https://cli:2379");
	fleet_creds_merge(&base, &over);
	assert_string_equal(base.endpoints, "https://cli:2379");       /* --endpoints over the file's */
	assert_true(base.insecure_plaintext);       /* the file's, not unset by an option not given */
	assert_string_equal(base.user, "cli-user");
	assert_string_equal(base.cacert, "/file-ca");
	assert_string_equal(base.password_file, "/file-pw");
}

/* The conf's and the password file's owner and mode, and what apply
 * refuses before a request is made. */
static void test_files(void **state)
{
	char dir[64], conf[128], pw[128];
	struct fleet_creds c;
	struct nt_err err = { 0 };
	struct etcd *e = etcd_open("http://127.0.0.1:1", &err);

	(void)state;
	assert_non_null(e);
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	snprintf(conf, sizeof(conf), "%s/fleet.conf", dir);
	snprintf(pw, sizeof(pw), "%s/pw", dir);
	assert_int_equal(fleet_creds_load(conf, false, &c, &err), 0);        /* absent, optional: none */
	assert_false(fleet_creds_any(&c));
	assert_true(fleet_creds_load(conf, true, &c, &err) < 0);             /* absent, named: refused */
	assert_non_null(strstr(err.msg, conf));
	assert_int_equal(test_write(dir, "fleet.conf", "user = u\n"), 0);
	assert_int_equal(chmod(conf, 0666), 0);
	assert_int_equal(fleet_creds_load(conf, false, &c, &err), -EPERM);   /* others may write it */
	assert_non_null(strstr(err.msg, "writable by group or others"));
	assert_int_equal(chmod(conf, 0644), 0);
	assert_int_equal(fleet_creds_load(conf, false, &c, &err), 0);
	assert_string_equal(c.user, "u");
	/* a user without a password file, a cert without a key */
	assert_int_equal(fleet_creds_apply(e, &c, &err), -EINVAL);
	assert_int_equal(fleet_creds_apply(e, &(struct fleet_creds){ .cert = "/c" }, &err), -EINVAL);
	assert_int_equal(fleet_creds_apply(e, &(struct fleet_creds){ .cacert = "/nonexistent/ca.pem" }, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "--cacert /nonexistent/ca.pem"));
	/* the password file: nobody else may read it; its first line */
	snprintf(c.password_file, sizeof(c.password_file), "%s", pw);
	assert_int_equal(test_write(dir, "pw", "s3cret\nignored\n"), 0);
	assert_int_equal(chmod(pw, 0640), 0);
	assert_int_equal(fleet_creds_apply(e, &c, &err), -EPERM);
	assert_non_null(strstr(err.msg, "readable by group or others"));
	assert_int_equal(chmod(pw, 0600), 0);
	assert_int_equal(fleet_creds_apply(e, &c, &err), -EINVAL);          /* a login over http:// */
	assert_non_null(strstr(err.msg, "etcd http://127.0.0.1:1: a login over plain http"));
	c.insecure_plaintext = true;
	assert_int_equal(fleet_creds_apply(e, &c, &err), 0);
	assert_int_equal(test_write(dir, "pw", "\nsecond\n"), 0);
	assert_int_equal(fleet_creds_apply(e, &c, &err), -EINVAL);          /* an empty first line */
	/* no credentials at all: plaintext as before */
	assert_int_equal(fleet_creds_apply(e, NULL, &err), 0);
	etcd_close(e);
	test_rmrf(dir);
}

/* The TLS files: a client key others can read, a CA or certificate others
 * can write, are refused before anything is sent, naming the option and
 * the file; the same files 0600 / 0644 are taken. */
static void test_tls_files(void **state)
{
	char dir[64], ca[128], key[128];
	struct nt_err err = { 0 };
	struct etcd *e = etcd_open("https://127.0.0.1:1", &err);
	struct fleet_creds c = { 0 };

	(void)state;
	assert_non_null(e);
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(key, sizeof(key), "%s/client-key.pem", dir);
	assert_int_equal(test_write(dir, "ca.pem", "not parsed here\n"), 0);
	assert_int_equal(test_write(dir, "client.pem", "not parsed here\n"), 0);
	assert_int_equal(test_write(dir, "client-key.pem", "not parsed here\n"), 0);
	snprintf(c.cacert, sizeof(c.cacert), "%s", ca);
	snprintf(c.cert, sizeof(c.cert), "%s/client.pem", dir);
	snprintf(c.key, sizeof(c.key), "%s", key);
	assert_int_equal(chmod(ca, 0644), 0);
	assert_int_equal(chmod(key, 0644), 0);
	assert_int_equal(fleet_creds_apply(e, &c, &err), -EPERM);
	assert_non_null(strstr(err.msg, "--key "));
	assert_non_null(strstr(err.msg, key));
	assert_non_null(strstr(err.msg, "readable by group or others"));
	assert_int_equal(chmod(key, 0600), 0);
	assert_int_equal(chmod(ca, 0666), 0);
	assert_int_equal(fleet_creds_apply(e, &c, &err), -EPERM);
	assert_non_null(strstr(err.msg, "--cacert "));
	assert_non_null(strstr(err.msg, "writable by group or others"));
	assert_int_equal(chmod(ca, 0644), 0);
	assert_int_equal(fleet_creds_apply(e, &c, &err), 0);
	if (geteuid() == 0) {                       /* another owner (nobody) */
		assert_int_equal(chown(key, 65534, 65534), 0);
		assert_int_equal(fleet_creds_apply(e, &c, &err), -EPERM);
		assert_non_null(strstr(err.msg, "owned by uid 65534"));
	}
	etcd_close(e);
	test_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_tls_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
