/* SPDX-License-Identifier: MIT */
/* fleet_creds.c — see fleet_creds.h.
 *
 * Divisions: fleet.conf's lines; the files' owners and modes; giving a
 * client the credentials.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/userfile.h"
#include "fleet/etcd.h"
#include "fleet/fleet_creds.h"
#include "fleet/fleet_creds_test.h"

#define CONF_MAX 65536
#define PASSWORD_MAX 1024

/* ---- fleet.conf -------------------------------------------------------- */

enum conf_kind { CK_NAME, CK_PATH, CK_FLAG, CK_URLS };

static const struct {
	const char *key;
	size_t offset, size;
	enum conf_kind kind;
} conf_keys[] = {
	{ "endpoints", offsetof(struct fleet_creds, endpoints), FLEET_ENDPOINTS_MAX, CK_URLS },
	{ "cacert", offsetof(struct fleet_creds, cacert), PATH_MAX, CK_PATH },
	{ "cert", offsetof(struct fleet_creds, cert), PATH_MAX, CK_PATH },
	{ "key", offsetof(struct fleet_creds, key), PATH_MAX, CK_PATH },
	{ "user", offsetof(struct fleet_creds, user), FLEET_USER_MAX, CK_NAME },
	{ "password-file", offsetof(struct fleet_creds, password_file), PATH_MAX, CK_PATH },
	{ "insecure-plaintext", offsetof(struct fleet_creds, insecure_plaintext), sizeof(bool), CK_FLAG },
	{ "fleet-id", offsetof(struct fleet_creds, fleet_id), sizeof(((struct fleet_creds *)0)->fleet_id), CK_NAME },
};
#define N_KEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))

/* s[0..n) without blanks at either end */
static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r'))
		(*n)--;
}

/* A flag's value, "yes" or "no", into *ret. */
static int conf_flag(const char *v, size_t vn, const char *path, unsigned line, const char *key, bool *ret,
		     struct nt_err *err)
{
	if (vn == 3 && !memcmp(v, "yes", 3))
		*ret = true;
	else if (vn == 2 && !memcmp(v, "no", 2))
		*ret = false;
	else
		return err_set(err, -EINVAL, "%s:%u: %s: yes or no", path, line, key);
	return 0;
}

/* v[0..vn) is URL[,URL...], each http:// or https:// and something,
 * without blanks or quotes (etcd_open parses them further) */
static bool conf_urls(const char *v, size_t vn)
{
	for (size_t at = 0; at <= vn;) {
		const char *u = v + at, *comma = memchr(u, ',', vn - at);
		size_t n = comma ? (size_t)(comma - u) : vn - at;

		if (!((n > 7 && !strncmp(u, "http://", 7)) || (n > 8 && !strncmp(u, "https://", 8))))
			return false;
		for (size_t i = 0; i < n; i++)
			if (u[i] <= ' ' || u[i] == '\'' || u[i] == '"' || u[i] == 0x7f)
				return false;
		at += n + 1;
	}
	return true;
}

/* One "key = value" line into c; seen marks the keys given. */
static int conf_line(const char *p, size_t n, const char *path, unsigned line, struct fleet_creds *c,
		     bool seen[N_KEYS], struct nt_err *err)
{
	const char *eq = memchr(p, '=', n), *v;
	size_t kn, vn;

	if (!eq)
		return err_set(err, -EINVAL, "%s:%u: not 'key = value'", path, line);
	kn = (size_t)(eq - p);
	v = eq + 1;
	vn = n - kn - 1;
	trim(&p, &kn);
	trim(&v, &vn);
	for (size_t k = 0; k < N_KEYS; k++) {
		if (strlen(conf_keys[k].key) != kn || memcmp(conf_keys[k].key, p, kn))
			continue;
		if (seen[k])
			return err_set(err, -EINVAL, "%s:%u: %s given twice", path, line, conf_keys[k].key);
		seen[k] = true;
		if (conf_keys[k].kind == CK_FLAG)
			return conf_flag(v, vn, path, line, conf_keys[k].key, (bool *)((char *)c + conf_keys[k].offset),
					 err);
		if (vn == 0 || vn >= conf_keys[k].size || memchr(v, '\0', vn))
			return err_set(err, -EINVAL, "%s:%u: %s: an empty or too long value", path, line,
				       conf_keys[k].key);
		if (conf_keys[k].kind == CK_PATH && v[0] != '/')
			return err_set(err, -EINVAL, "%s:%u: %s: not an absolute path", path, line, conf_keys[k].key);
		if (conf_keys[k].kind == CK_URLS && !conf_urls(v, vn))
			return err_set(err, -EINVAL, "%s:%u: %s: not http:// or https:// URLs, comma-separated", path,
				       line, conf_keys[k].key);
		if (conf_keys[k].kind == CK_NAME && memchr(v, ':', vn))
			return err_set(err, -EINVAL, "%s:%u: %s: a name without ':'", path, line, conf_keys[k].key);
		memcpy((char *)c + conf_keys[k].offset, v, vn);
		((char *)c + conf_keys[k].offset)[vn] = '\0';
		return 0;
	}
	return err_set(err, -EINVAL, "%s:%u: unknown key '%.*s' (endpoints, cacert, cert, key, user, password-file, "
		       "insecure-plaintext, fleet-id)", path,
		       line, (int)(kn > 64 ? 64 : kn), p);
}

int fleet_creds_parse(const char *buf, size_t len, const char *path, struct fleet_creds *ret, struct nt_err *err)
{
	struct fleet_creds c = { 0 };
	bool seen[N_KEYS] = { false };
	unsigned line = 0;

	for (size_t at = 0; at < len;) {
		const char *p = buf + at, *nl = memchr(p, '\n', len - at);
		size_t n = nl ? (size_t)(nl - p) : len - at;
		int r;

		at += n + 1;
		line++;
		trim(&p, &n);
		if (n == 0 || p[0] == '#')
			continue;
		if ((r = conf_line(p, n, path, line, &c, seen, err)) < 0)
			return r;
	}
	*ret = c;
	return 0;
}

/* ---- owners and modes -------------------------------------------------- */

/* fleet.conf: root's (or the caller's), nobody else may write it */
static int conf_check(const struct stat *st, char *why, size_t size)
{
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(why, size, "owned by uid %u, not root", (unsigned)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & 022) {
		snprintf(why, size, "writable by group or others (mode %04o)", (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* a password file: as fleet.conf, and nobody else may read it */
static int secret_check(const struct stat *st, char *why, size_t size)
{
	int r = conf_check(st, why, size);

	if (r == 0 && (st->st_mode & 077)) {
		snprintf(why, size, "readable by group or others (mode %04o; chmod 0600)", (unsigned)(st->st_mode & 07777));
		r = -EPERM;
	}
	return r;
}

int fleet_creds_load(const char *path, bool must_exist, struct fleet_creds *ret, struct nt_err *err)
{
	char why[256], *buf;
	size_t len;
	int r;

	if (!must_exist && access(path, F_OK) < 0 && errno == ENOENT) {
		memset(ret, 0, sizeof(*ret));
		return 0;
	}
	r = userfile_read(path, CONF_MAX, "a fleet configuration", conf_check, &buf, &len, why, sizeof(why));
	if (r < 0)
		return err_set(err, r, "%s: %s", path, why);
	r = fleet_creds_parse(buf, len, path, ret, err);
	free(buf);
	return r;
}

void fleet_creds_merge(struct fleet_creds *base, const struct fleet_creds *over)
{
	for (size_t k = 0; k < N_KEYS; k++) {
		const char *v = (const char *)over + conf_keys[k].offset;

		if (conf_keys[k].kind == CK_FLAG ? *(const bool *)v : *v != '\0')
			memcpy((char *)base + conf_keys[k].offset, v, conf_keys[k].size);
	}
}

bool fleet_creds_any(const struct fleet_creds *c)
{
	return c->cacert[0] || c->cert[0] || c->key[0] || c->user[0] || c->password_file[0];
}

/* ---- giving a client the credentials ----------------------------------- */

int fleet_creds_read_password(const char *path, char **ret, struct nt_err *err)
{
	char why[256], *buf;
	size_t len;
	int r = userfile_read(path, PASSWORD_MAX, "a password file", secret_check, &buf, &len, why, sizeof(why));

	if (r < 0)       /* -EACCES is the store's refusal; a file we cannot read is -EPERM */
		return err_set(err, r == -EACCES ? -EPERM : r, "--password-file %s: %s", path, why);
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!buf[0]) {
		explicit_bzero(buf, len);
		free(buf);
		return err_set(err, -EINVAL, "--password-file %s: the first line is empty", path);
	}
	*ret = buf;
	return 0;
}

static const char *opt(const char *s)
{
	return *s ? s : NULL;
}

/* The TLS files: the CA and the certificate as fleet.conf (root's or the
 * caller's, nobody else may write them: whoever may swaps whom we trust),
 * the key as the password file.  A file that is missing or that we cannot
 * read is left to etcd_set_tls. */
static int tls_files_check(const struct fleet_creds *c, struct nt_err *err)
{
	const struct {
		const char *what, *path;
		int (*check)(const struct stat *st, char *why, size_t size);
	} files[] = {
		{ "--cacert", c->cacert, conf_check },
		{ "--cert", c->cert, conf_check },
		{ "--key", c->key, secret_check },
	};
	char why[256];
	struct stat st;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (!files[i].path[0] || stat(files[i].path, &st) < 0)
			continue;
		if (files[i].check(&st, why, sizeof(why)) < 0)
			return err_set(err, -EPERM, "%s %s: %s", files[i].what, files[i].path, why);
	}
	return 0;
}

int fleet_creds_apply(struct etcd *e, const struct fleet_creds *c, struct nt_err *err)
{
	char *password = NULL;
	int r;

	if (!c || !fleet_creds_any(c))
		return 0;
	if (!c->user[0] != !c->password_file[0])
		return err_set(err, -EINVAL, "--user and --password-file go together");
	if ((r = tls_files_check(c, err)) < 0)
		return r;
	r = etcd_set_tls(e, opt(c->cacert), opt(c->cert), opt(c->key), err);
	if (r < 0 || !c->user[0])
		return r;
	if (c->insecure_plaintext)
		etcd_allow_plaintext_login(e);
	if ((r = fleet_creds_read_password(c->password_file, &password, err)) < 0)
		return r;
	r = etcd_set_login(e, c->user, password, err);
	explicit_bzero(password, strlen(password));
	free(password);
	return r;
}
